//! What OpenMP threads do while they wait (libgomp): spin on the shared word
//! for `GOMP_SPINCOUNT` iterations, then sleep on a futex. Shared by the
//! OpenMP families (`barrier`, `nas`).
//!
//! libgomp's defaults (libgomp manual, `GOMP_SPINCOUNT`): 300,000 spins when
//! `OMP_WAIT_POLICY` is unset, 30 billion with `ACTIVE`, 0 with `PASSIVE`;
//! when there are more OpenMP threads than CPUs available, 100 (unset) and
//! 1,000 (`ACTIVE`). Each spin is one test of the word and a `cpu_relax()`
//! (`pause` on x86), whose latency is 10 cycles on older Intel cores, about
//! 140 on Skylake-SP and later, about 65 on AMD Zen: the `pause` parameter.

use super::spec::{Kind, ParamDef, Params, AUTO};
use crate::error::Result;
use crate::ids::Ns;

/// The wait parameters of an OpenMP family, in normalised-name order.
pub(crate) const PARAMS: [ParamDef; 3] = [
    ParamDef {
        name: "wait_policy",
        kind: Kind::Choice(&["unset", "active", "passive"]),
        default: "unset",
        unit: "unset|active|passive",
        doc: "OMP_WAIT_POLICY: unset (spin GOMP_SPINCOUNT's default, then sleep), active (spin almost \
              forever), passive (sleep at once).",
    },
    ParamDef {
        name: "spincount",
        kind: Kind::Count { min: 0, max: 100_000_000_000 },
        default: AUTO,
        unit: "count",
        doc: "GOMP_SPINCOUNT. auto: libgomp's default for the wait policy: 300000 (unset), 30000000000 \
              (active), 0 (passive); with more threads than CPUs 100 (unset) or 1000 (active).",
    },
    ParamDef {
        name: "pause",
        kind: Kind::Duration { default_unit_ns: 1, min_ns: 1, max_ns: 1_000 },
        default: "10ns",
        unit: "ns",
        doc: "work of one spin iteration (the word test and a pause instruction). 10 ns is about 40 \
              cycles at 4 GHz, between older Intel cores (10 cycles) and Skylake-SP or later (140); \
              300000 spins are then 3 ms of spinning.",
    },
];

/// Spin budget, ns of work, before an OpenMP wait sleeps on its futex, for
/// `threads` threads on a machine of `cpus` CPUs.
pub(crate) fn spin_ns(p: &mut Params, threads: u32, cpus: u32) -> Result<Ns> {
    let policy = p.choice("wait_policy")?;
    let oversubscribed = threads > cpus;
    let default = match (policy, oversubscribed) {
        ("passive", _) => 0,
        ("active", false) => 30_000_000_000,
        ("active", true) => 1_000,
        (_, false) => 300_000,
        (_, true) => 100,
    };
    let spins = p.count_or("spincount", default)?;
    let pause = p.duration("pause")?;
    Ok(spins.saturating_mul(pause))
}
