//! The `overcommit` family: the machine's CPUs are vCPU threads that a host
//! with fewer CPUs time-shares, as a QEMU TCG guest with more vCPUs than its
//! host has CPUs (or any overcommitted VM without steal-time accounting).
//!
//! Where the `stall` family stalls each CPU on its own (a rate and a
//! duration), this one keeps the host's state: at most `host_cpus` vCPUs
//! execute at once, a vCPU that runs a guest task is a runnable host thread,
//! an idle one halts and gives its host CPU up, and one that has run a host
//! `slice` while others wait goes to the back of the host's queue. So one
//! vCPU stalls because another runs, and a guest whose tasks wait on a
//! stalled vCPU sees the others go on. The engine carries it
//! (`engine/host.rs`); a stalled vCPU's running task is charged the time, as
//! in the `stall` family, and its ticks, timers and IPIs wait for it.
//!
//! The host's own threads (the emulator's main loop and its global lock, the
//! host's daemons) take `other_share` of the host's CPUs, which may depend
//! on how many vCPUs are busy (an emulator's own work grows with the vCPUs it
//! runs): runs of `other_run` arriving as a Poisson stream, each taking a
//! host CPU from the vCPUs.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{Dist, PrimaryMetric, Workload};
use crate::error::Result;
use crate::ids::Ns;

const NS_PER_US: Ns = 1_000;
const NS_PER_MS: Ns = 1_000_000;

/// The host a machine's vCPUs are time-shared by.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpec {
    /// Host CPUs the vCPU threads share.
    pub host_cpus: u32,
    /// How long a vCPU runs on a host CPU before the host gives the CPU to a
    /// waiting vCPU.
    pub slice: Dist,
    /// Host CPUs the host's other threads ask for while K vCPUs are busy:
    /// entry K - 1 (the first also for none busy, the last for more); empty:
    /// none.
    pub other_share: Vec<f64>,
    /// Length of one run of the host's other threads.
    pub other_run: Dist,
    /// Percent of the wakeups of a halted vCPU while every host CPU is
    /// taken in which it preempts the vCPU that has run longest (the host's
    /// wakeup preemption of a thread that slept); in the others it waits at
    /// the back of the host's queue.
    pub wake_preempt_pct: u32,
}

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "no tasks: the machine's CPUs are vCPUs time-shared by `host_cpus` host CPUs; \
a vCPU running a task needs a host CPU, an idle one halts; after `slice` on a host CPU with others waiting a vCPU \
stalls at the back of the host's queue; a halted vCPU that wakes with none free preempts the longest-running one \
in `wake_preempt` percent of wakeups and waits its turn in the others; the host's other threads take `other_share` of the host's CPUs (per count of busy vCPUs) in runs of `other_run`.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "kernel/sched/core.c (update_rq_clock_task: no steal time without paravirt); a host \
scheduler time-sharing QEMU TCG vCPU threads (one thread per vCPU, halted in HLT when the guest idles)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "noise: the CPUs are vCPUs time-shared by a host with `host_cpus` CPUs (a TCG or \
overcommitted guest without steal time); a stalled vCPU's task is charged. No tasks";

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "host_cpus",
        kind: Kind::Count { min: 1, max: crate::cpumask::MAX_CPUS as u64 },
        default: AUTO,
        unit: "count",
        doc: "host CPUs the vCPU threads share. Default: half the machine's CPUs, rounded up (a guest \
              overcommitted two to one).",
    },
    ParamDef {
        name: "other_run",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 1_000 * NS_PER_MS },
        default: "exp:1ms",
        unit: "us",
        doc: "length of one run of the host's other threads, which takes a host CPU (a free one, else one \
              a vCPU ran on: that vCPU stalls).",
    },
    ParamDef {
        name: "other_share",
        kind: Kind::Shares { max: crate::cpumask::MAX_CPUS as f64, max_len: crate::cpumask::MAX_CPUS },
        default: "0",
        unit: "host CPUs",
        doc: "host CPUs the host's own threads ask for, one figure per count of busy vCPUs separated by ';' \
              (1;2;...; the last for more, 0: none): runs of `other_run` arriving as a Poisson stream at \
              that rate. `validate` measures it per count from a guest's stall probes (what that many \
              spinning vCPUs did not get); an emulator's own work grows with the vCPUs it runs.",
    },
    ParamDef {
        name: "slice",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 1_000 * NS_PER_MS },
        default: "4ms",
        unit: "us",
        doc: "how long a vCPU runs on a host CPU before the host gives it to a waiting vCPU. Default 4 ms: \
              a host kernel preempts a CPU-bound thread at the first tick past its slice, and at HZ=250 \
              (Debian's) ticks are 4 ms apart; a guest's calibration measures it (the stall probe's mean \
              run between gaps).",
    },
    ParamDef {
        name: "wake_preempt",
        kind: Kind::Count { min: 0, max: 100 },
        default: "35",
        unit: "pct",
        doc: "percent of the wakeups of a halted vCPU, while every host CPU is taken, in which it preempts \
              the vCPU that has held its host CPU longest; in the others it waits at the back of the \
              host's queue. Default 35: measured in a 4-vCPU TCG guest on a 2-CPU host with two vCPUs \
              spinning, where 34.6% of cross-CPU wakeups ran within 100 us and the rest after a median \
              3.6 ms (39 us with the host free); a guest's calibration measures it (docs/validation.md).",
    },
];

/// Builds the host (no tasks).
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let half = (p.machine.nr_cpus() as u64).div_ceil(2).max(1);
    let host_cpus = p.count_or("host_cpus", half)? as u32;
    let other_run = p.dist_or("other_run", None)?;
    let mut other_share = p.shares("other_share")?;
    if other_share.iter().all(|&s| s == 0.0) {
        other_share.clear();
    }
    let slice = p.dist_or("slice", None)?;
    if slice.mean() == 0 {
        return Err(p.invalid("slice", "a slice above 0"));
    }
    if !other_share.is_empty() && other_run.mean() == 0 {
        return Err(p.invalid("other_run", "a run above 0 when other_share is given"));
    }
    let wake_preempt_pct = p.count("wake_preempt")? as u32;
    Ok(Workload {
        host: Some(HostSpec { host_cpus, slice, other_share, other_run, wake_preempt_pct }),
        ..Workload::of(Vec::new(), PrimaryMetric::CompletionTime)
    })
}

#[cfg(test)]
mod tests {
    use crate::workload::build_workload;
    use crate::workload::testdrv::test_machine;
    use crate::workload::Dist;

    #[test]
    fn overcommit_builds_a_host_and_no_tasks() {
        let m = test_machine(8);
        let w = build_workload("overcommit", "spec", "cli", &m).unwrap();
        let h = w.host.unwrap();
        assert!(w.tasks.is_empty() && w.irqs.is_empty());
        assert_eq!((h.host_cpus, h.slice, h.other_share.len(), h.wake_preempt_pct), (4, Dist::Fixed(4_000_000), 0, 35));
        let w = build_workload("overcommit:host_cpus=2,slice=exp:3ms,wake_preempt=0", "spec", "cli", &m).unwrap();
        let h = w.host.unwrap();
        assert_eq!((h.host_cpus, h.slice, h.wake_preempt_pct), (2, Dist::Exp { mean: 3_000_000 }, 0));
    }

    #[test]
    fn overcommit_refuses_a_zero_slice_and_a_zero_host() {
        let m = test_machine(8);
        let e = build_workload("overcommit:slice=0", "spec", "cli", &m).unwrap_err().to_string();
        assert!(e.contains("workload.slice"), "{e}");
        let e = build_workload("overcommit:host_cpus=0", "spec", "cli", &m).unwrap_err().to_string();
        assert!(e.contains("workload.host_cpus"), "{e}");
        let w = build_workload("overcommit:other_share=0.4;0.6", "spec", "cli", &m).unwrap();
        assert_eq!(w.host.unwrap().other_share, vec![0.4, 0.6]);
        for bad in ["x", "0.4;;0.6", "-1", "inf"] {
            let e =
                build_workload(&format!("overcommit:other_share={bad}"), "spec", "cli", &m).unwrap_err().to_string();
            assert!(e.contains("workload.other_share") && e.contains("separated by ';'"), "{bad}: {e}");
        }
    }
}
