//! The `irq` family: an interrupt source on a set of CPUs, as an
//! [`IrqSpec`] in `Workload.irqs` and no tasks. The engine turns it into IRQ
//! time (hardirq, then softirq on interrupt exit, the excess deferred to
//! `ksoftirqd/N`); this file only describes arrivals and handler costs.
//!
//! `preset=pingflood` is the receive side of `ping -f -l 10000 -s 10` (SEEDS
//! idea 5's ping flood on CPUs 0-2): see [`PINGFLOOD`] for its figures.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{Dist, IrqSpec, PrimaryMetric, Workload};
use crate::cpumask::CpuMask;
use crate::error::Result;
use crate::ids::{CpuId, Ns, NSEC_PER_SEC};

const NS_PER_US: Ns = 1_000;
const NS_PER_MS: Ns = 1_000_000;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "no tasks: interrupts on each CPU of `cpus` (Poisson at `rate` or any `interval` distribution), \
each taking `hardirq` then `softirq` time; softirq work past the kernel's limits goes to ksoftirqd/N.";

/// What it was modelled on.
pub(crate) const SOURCE: &str =
    "kernel/softirq.c (__do_softirq, MAX_SOFTIRQ_TIME, MAX_SOFTIRQ_RESTART); net/core/dev.c (napi_poll); SEEDS idea 5";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "noise: interrupts on `cpus` (default CPU 0), each stealing `hardirq` then \
     `softirq` time; preset=pingflood is the receive side of ping -f -l 10000 -s 10 (SEEDS idea 5). No tasks";

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "preset",
        kind: Kind::Choice(&["none", "pingflood"]),
        default: "none",
        unit: "none|pingflood",
        doc: "a named source whose figures fill every key not given. pingflood: NIC receive interrupts of \
              an ICMP echo flood, about 10000 interrupts/s per CPU (NAPI-coalesced), hardirq uniform:1us-3us, \
              softirq exp:25us (about 12 packets x 2 us per poll); about 27% of each CPU. Estimates, see irq.rs.",
    },
    ParamDef {
        name: "rate",
        kind: Kind::Count { min: 1, max: 10_000_000 },
        default: AUTO,
        unit: "1/s",
        doc: "interrupts per second on each CPU, as Poisson arrivals (interval exp:1/rate). Give rate or \
              interval, not both. Default: the preset's, else 1000/s.",
    },
    ParamDef {
        name: "interval",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 10_000 * NS_PER_MS },
        default: AUTO,
        unit: "us",
        doc: "time between two interrupts on one CPU: a duration (periodic), exp:MEAN or uniform:LO-HI. \
              Default: from rate.",
    },
    ParamDef {
        name: "hardirq",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 10 * NS_PER_MS },
        default: AUTO,
        unit: "us",
        doc: "hard-interrupt handler time per interrupt (a duration, exp:MEAN or uniform:LO-HI). Default: \
              the preset's, else 2us (ack the device, schedule NAPI or a tasklet).",
    },
    ParamDef {
        name: "softirq",
        kind: Kind::Dist { default_unit_ns: NS_PER_US, max_ns: 100 * NS_PER_MS },
        default: AUTO,
        unit: "us",
        doc: "softirq (bottom-half) time raised by each interrupt. Default: the preset's, else 10us.",
    },
];

/// Figures of a named interrupt source.
struct IrqPreset {
    /// Name shown in traces.
    name: &'static str,
    /// Interrupts per second per CPU.
    rate_per_s: u64,
    hardirq: Dist,
    softirq: Dist,
}

/// A generic device interrupt: 1000/s, 2 us hardirq, 10 us softirq (1.2% of
/// a CPU). Round figures to start from, not a measured device.
const GENERIC: IrqPreset = IrqPreset {
    name: "irq",
    rate_per_s: 1_000,
    hardirq: Dist::Fixed(2 * NS_PER_US),
    softirq: Dist::Fixed(10 * NS_PER_US),
};

/// The receive side of `ping -f -l 10000 -s 10` on one CPU's NIC queue.
///
/// ESTIMATES, not measurements; each with its plausible range:
///
/// * Packet rate. `-l 10000` preloads 10000 echo requests, then `-f` sends one
///   more per reply (or every 10 ms): the flood runs at the sender's and the
///   path's pace, typically 100k-300k packets/s for one ping process on a
///   LAN; we take ~120k packets/s reaching each flooded CPU.
/// * Interrupts. NAPI keeps a busy queue in polling mode and interrupt
///   moderation (ixgbe/e1000e adaptive ITR: roughly 4k-20k interrupts/s under
///   load) caps interrupts; we take 10000/s per CPU, Poisson arrivals
///   (`exp:100us`), so each interrupt's poll handles about 12 packets.
/// * hardirq: ack the device and `napi_schedule`, 1-3 us (uniform).
/// * softirq: NET_RX per packet: driver receive, IP and ICMP input, building
///   and sending the echo reply (`icmp_echo` -> `icmp_reply`), 1-3 us per
///   small packet on current x86; ~12 packets x ~2 us = exp with mean 25 us.
///
/// Total about (2 + 25) us x 10000/s = 27% of each flooded CPU (plausible
/// range 10-40%), enough to bring `capacity_of` below CAS's 80% threshold, as
/// the seed's CAS-with-ping results imply it was.
const PINGFLOOD: IrqPreset = IrqPreset {
    name: "eth0-rx",
    rate_per_s: 10_000,
    hardirq: Dist::Uniform { lo: NS_PER_US, hi: 3 * NS_PER_US },
    softirq: Dist::Exp { mean: 25 * NS_PER_US },
};

/// Builds the interrupt source. `cpus` (default CPU 0: one device queue's
/// interrupt line, steered to one CPU) are the CPUs it fires on, each with
/// its own arrival stream.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let preset = match p.choice("preset")? {
        "pingflood" => &PINGFLOOD,
        _ => &GENERIC,
    };
    if p.is_given("rate") && p.is_given("interval") {
        return Err(p.invalid("rate", "either rate or interval, not both"));
    }
    // The key given is the one named; the other stays `auto` in the
    // normalised name, so that the name rebuilds the same source.
    let interval = if p.is_given("interval") {
        p.dist_or("interval", None)?
    } else {
        let rate = p.count_or("rate", preset.rate_per_s)?;
        Dist::Exp { mean: (NSEC_PER_SEC / rate).max(1) }
    };
    if interval.mean() == 0 {
        return Err(p.invalid("interval", "a mean interval above 0"));
    }
    let hardirq = p.dist_or("hardirq", Some(preset.hardirq))?;
    let softirq = p.dist_or("softirq", Some(preset.softirq))?;
    let cpus = p.cpus.unwrap_or_else(|| CpuMask::from_cpus([CpuId(0)]));
    Ok(Workload {
        irqs: vec![IrqSpec {
            name: preset.name.to_string(),
            cpus,
            interval,
            hardirq,
            softirq,
            accounted: true,
            busy_cpus: 0,
        }],
        ..Workload::of(Vec::new(), PrimaryMetric::CompletionTime)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SchedlabError;
    use crate::workload::build_workload;
    use crate::workload::testdrv::test_machine;

    fn build(spec: &str) -> Result<Workload> {
        build_workload(spec, "spec", "cli", &test_machine(8))
    }

    #[test]
    fn pingflood_preset() {
        let w = build("irq:preset=pingflood,cpus=0-2").unwrap();
        assert!(w.tasks.is_empty());
        let i = &w.irqs[0];
        assert_eq!((i.name.as_str(), i.cpus.to_list_string().as_str()), ("eth0-rx", "0-2"));
        assert_eq!(i.interval, Dist::Exp { mean: 100_000 });
        assert_eq!(i.hardirq, Dist::Uniform { lo: 1_000, hi: 3_000 });
        assert_eq!(i.softirq, Dist::Exp { mean: 25_000 });
        assert_eq!(
            w.name,
            "irq:preset=pingflood,rate=10000,interval=auto,hardirq=uniform:1us-3us,softirq=exp:25us,cpus=0-2"
        );
        assert_eq!(build(&w.name).unwrap().irqs[0].interval, i.interval);
    }

    #[test]
    fn keys_override_and_default() {
        let w = build("irq").unwrap();
        let i = &w.irqs[0];
        assert_eq!(i.cpus.to_list_string(), "0");
        assert_eq!((i.interval, i.hardirq), (Dist::Exp { mean: 1_000_000 }, Dist::Fixed(2_000)));
        let w = build("irq:interval=250us,hardirq=exp:3us,softirq=uniform:5us-15us").unwrap();
        let i = &w.irqs[0];
        assert_eq!(i.interval, Dist::Fixed(250_000));
        assert_eq!(i.hardirq, Dist::Exp { mean: 3_000 });
        assert_eq!(i.softirq, Dist::Uniform { lo: 5_000, hi: 15_000 });
        assert_eq!(build(&w.name).unwrap().name, w.name);
        let w = build("irq:preset=pingflood,rate=20000").unwrap();
        assert_eq!(w.irqs[0].interval, Dist::Exp { mean: 50_000 });
    }

    #[test]
    fn bad_input_names_the_key() {
        for (spec, k) in [
            ("irq:rate=1000,interval=1ms", "workload.rate"),
            ("irq:rate=0", "workload.rate"),
            ("irq:hardirq=normal:2us", "workload.hardirq"),
            ("irq:softirq=uniform:9us-3us", "workload.softirq"),
            ("irq:interval=0", "workload.interval"),
            ("irq:preset=smurf", "workload.preset"),
            ("irq:policy=fifo", "workload.policy"),
        ] {
            match build(spec) {
                Err(SchedlabError::Spec { key, expected, .. }) => {
                    assert_eq!(key, k, "{spec}: {expected}");
                    assert!(expected.starts_with("expected"), "{spec}: {expected}");
                }
                other => panic!("{spec}: {other:?}"),
            }
        }
    }
}
