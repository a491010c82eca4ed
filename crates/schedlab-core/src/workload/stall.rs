//! The `stall` family: a CPU that stops executing while its clock goes on,
//! as a virtual machine's vCPU does when the host deschedules it and the
//! guest has no steal-time accounting (a QEMU TCG guest; a KVM guest without
//! `CONFIG_PARAVIRT_TIME_ACCOUNTING`). No tasks; an [`IrqSpec`] whose time
//! is not kept out of the task clock (`accounted: false`): the running task
//! makes no progress during a stall and `update_curr` charges it the stall,
//! which is what the guest kernel does. The engine's interrupt path carries
//! it (`engine/irq.rs`), so traces show a stall as an interrupt named
//! `stall` and, as there, ticks, timers and IPIs to the CPU wait for its end.
//! With `busy=K` a source acts only while K CPUs run tasks (this one among
//! them): a guest's calibration measures stalls at each count of spinning
//! vCPUs and gives one source per count.
//!
//! `schedlab validate` names, per recording, the share of the recorded
//! threads' CPU time that such stalls left (`_stalls.py`), which bounds a
//! guest's stalls from below.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{Dist, IrqSpec, PrimaryMetric, Workload};
use crate::cpumask::CpuMask;
use crate::error::Result;
use crate::ids::Ns;

const NS_PER_US: Ns = 1_000;
const NS_PER_MS: Ns = 1_000_000;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "no tasks: on each CPU of `cpus`, stalls at `interval` lasting `duration`, \
during which the CPU runs nothing and its running task is charged the time; with `busy=K`, only while the CPU \
runs a task and K CPUs of the machine do.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "kernel/sched/core.c (update_rq_clock_task: only IRQ time and paravirt steal \
time are kept out of clock_task); QEMU TCG vCPU threads descheduled by the host";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "noise: vCPU stalls on `cpus` (default all): the CPU stops, its clock runs, \
the running task is charged (a VM without steal time, e.g. a TCG guest). No tasks";

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "busy",
        kind: Kind::Count { min: 0, max: crate::cpumask::MAX_CPUS as u64 },
        default: "0",
        unit: "count",
        doc: "stall a CPU only while it runs a task and exactly this many CPUs of the machine do \
              (0: always, idle or not). A guest's calibration measures its stalls with 1, 2, ... \
              N vCPUs spinning and gives one source per count: an overcommitted host deschedules \
              a vCPU more often the more of them are busy, and a halted vCPU does not run.",
    },
    ParamDef {
        name: "interval",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 10_000 * NS_PER_MS },
        default: AUTO,
        unit: "us",
        doc: "time from one stall's start to the next on one CPU: a duration (periodic), exp:MEAN or \
              uniform:LO-HI. Default exp:100ms (with the default duration about 1% of each CPU: a host \
              with a little to do besides the guest; a guest's own figures come from its recordings).",
    },
    ParamDef {
        name: "duration",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 1_000 * NS_PER_MS },
        default: AUTO,
        unit: "us",
        doc: "length of one stall (a duration, exp:MEAN or uniform:LO-HI). Default exp:1ms, about one \
              slice of the host's own scheduler.",
    },
];

/// Builds the stall source on `cpus` (default: every CPU).
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let interval = p.dist_or("interval", Some(Dist::Exp { mean: 100 * NS_PER_MS }))?;
    if interval.mean() == 0 {
        return Err(p.invalid("interval", "a mean interval above 0"));
    }
    let duration = p.dist_or("duration", Some(Dist::Exp { mean: NS_PER_MS }))?;
    let busy = p.count("busy")? as u32;
    let cpus = p.cpus.unwrap_or_else(|| CpuMask::first_n(p.machine.nr_cpus()));
    Ok(Workload {
        irqs: vec![IrqSpec {
            name: "stall".into(),
            cpus,
            interval,
            hardirq: duration,
            softirq: Dist::Fixed(0),
            accounted: false,
            busy_cpus: busy,
        }],
        ..Workload::of(Vec::new(), PrimaryMetric::CompletionTime)
    })
}

#[cfg(test)]
mod tests {
    use crate::workload::build_workload;
    use crate::workload::testdrv::test_machine;

    #[test]
    fn a_stall_source_is_an_unaccounted_interrupt_on_every_cpu() {
        let w = build_workload("stall:interval=exp:16ms,duration=exp:2ms", "spec", "cli", &test_machine(8)).unwrap();
        assert!(w.tasks.is_empty());
        let s = &w.irqs[0];
        assert_eq!(s.name, "stall");
        assert!(!s.accounted);
        assert!(s.cpus.test(crate::ids::CpuId(0)) && s.cpus.test(crate::ids::CpuId(7)));
        assert_eq!(s.hardirq.mean(), 2_000_000);
    }

    #[test]
    fn a_stall_defaults_to_one_percent_and_refuses_a_zero_interval() {
        let m = test_machine(8);
        let w = build_workload("stall", "spec", "cli", &m).unwrap();
        assert_eq!((w.irqs[0].interval.mean(), w.irqs[0].hardirq.mean()), (100_000_000, 1_000_000));
        let e = build_workload("stall:interval=0", "spec", "cli", &m).unwrap_err().to_string();
        assert!(e.contains("workload.interval"), "{e}");
    }
}
