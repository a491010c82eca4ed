//! The OpenMP barrier micro-benchmark (EPCC syncbench's BARRIER test): a team
//! of `threads` threads, each iteration a small delay loop then
//! `#pragma omp barrier`; libgomp's barrier spins then sleeps (see `omp.rs`).
//! The benchmark reports the barrier overhead; schedlab reports iterations
//! per second (thread 0 marks each iteration as a request). See README.md.

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params};
use super::{forked_task, BarrierId, BarrierSpec, Dist, MarkKind, PrimaryMetric, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "`threads` OpenMP threads; each iteration: `work`, then a team barrier. A thread that \
arrives early spins up to spincount x pause, then sleeps on a futex; the last arrival releases all.";

/// What it was modelled on.
pub(crate) const SOURCE: &str =
    "EPCC OpenMP micro-benchmarks syncbench (BARRIER); libgomp config.c / wait.h (GOMP_SPINCOUNT, OMP_WAIT_POLICY)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "OpenMP barrier micro-benchmark (EPCC syncbench BARRIER): `threads` threads, \
     each iteration `work` then a spin-then-sleep barrier; requests_per_s = iterations per second";

/// Parameters, in normalised-name order (the OpenMP wait keys last).
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        kind: Kind::Threads { max: 100_000 },
        default: "100%",
        unit: "count|N%",
        doc: "OpenMP threads (OMP_NUM_THREADS); default one per hardware thread, as OpenMP does.",
    },
    ParamDef {
        name: "iterations",
        kind: Kind::Count { min: 1, max: 1_000_000_000 },
        default: "10000",
        unit: "count",
        doc: "barrier iterations (syncbench's outer x inner repetitions).",
    },
    ParamDef {
        name: "work",
        kind: Kind::Duration { default_unit_ns: 1_000, min_ns: 0, max_ns: 1_000_000_000 },
        default: "1us",
        unit: "us",
        doc: "the delay loop before each barrier (syncbench's delaylength, about 0.1-1 us by default).",
    },
    super::omp::PARAMS[0],
    super::omp::PARAMS[1],
    super::omp::PARAMS[2],
];

/// Builds the team.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let threads = p.threads("threads")?;
    let iterations = p.count("iterations")?;
    let work: Ns = p.duration("work")?;
    let cpus = p.cpus.map_or(p.machine.nr_cpus(), |m| m.weight() as usize) as u32;
    let spin = super::omp::spin_ns(p, threads, cpus)?;
    let tasks = (0..threads)
        .map(|i| {
            let mut b = OpsBuilder::new();
            b.begin_loop(iterations);
            if i == 0 {
                b.push(Op::Mark(MarkKind::RequestStart));
            }
            b.push(Op::Compute(Dist::Fixed(work))).push(Op::Barrier { id: BarrierId(0), spin });
            if i == 0 {
                b.push(Op::Mark(MarkKind::RequestDone));
            }
            b.end_loop();
            forked_task(&format!("omp-{i}"), Program::Ops(b.build()), 16)
        })
        .collect();
    Ok(Workload { barriers: vec![BarrierSpec { parties: threads }], ..Workload::of(tasks, PrimaryMetric::Throughput) })
}
