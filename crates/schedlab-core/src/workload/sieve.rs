//! The "prime sieve, 20 threads" case of SEEDS.md idea 2: independent
//! CPU-bound threads, each sieving a static share of the range, no IPC.
//! Judged by completion time. See README.md.

use super::spec::{Kind, ParamDef, Params};
use super::{forked_task, Action, MarkKind, PrimaryMetric, ProgCtx, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;
use crate::sim::Rng;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "`threads` independent threads, each computing an equal share of the work once, then exiting; no \
communication.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "SEEDS.md idea 2 (prime sieve, 20 threads)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str =
    "`threads` independent CPU-bound threads sharing a fixed amount of work statically (SEEDS idea 2); completion time";

const NS_PER_S: Ns = 1_000_000_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        kind: Kind::Threads { max: 1_000_000 },
        default: "20",
        unit: "count|N%",
        doc: "sieving threads, a count or a percentage of the hardware threads. Default 20 as in SEEDS.",
    },
    ParamDef {
        name: "work",
        kind: Kind::Duration { default_unit_ns: NS_PER_S, min_ns: 1_000, max_ns: 1_000_000 * NS_PER_S },
        default: "20s",
        unit: "s",
        doc: "CPU work of the whole range, split evenly: 20 s is 1 s per thread at the default. A segmented \
              sieve does about the same work per segment, so equal shares are equal work.",
    },
    ParamDef {
        name: "footprint",
        kind: Kind::Count { min: 0, max: 1 << 30 },
        default: "256",
        unit: "KiB",
        doc: "cache footprint of each thread: a segmented sieve sizes its segment to the L2, 256 KiB here.",
    },
];

/// Builds the workload from its parameters.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let threads = p.threads("threads")?;
    let work_ns = p.duration("work")?;
    let footprint = p.count("footprint")?;
    if work_ns < threads as u64 {
        return Err(p.invalid("work", "at least 1 ns of work per thread"));
    }
    let footprint_kib = u32::try_from(footprint).map_err(|_| p.invalid("footprint", "a smaller footprint"))?;
    let (share, rest) = (work_ns / threads as u64, work_ns % threads as u64);
    let tasks = (0..threads as u64)
        .map(|i| {
            let prog = Sieve { work_ns: share + u64::from(i < rest), phase: 0 };
            forked_task("sieve", Program::Sieve(prog), footprint_kib)
        })
        .collect();
    Ok(Workload { ..Workload::of(tasks, PrimaryMetric::CompletionTime) })
}

/// One sieving thread: compute its share, mark it done, exit.
#[derive(Clone, Debug)]
pub struct Sieve {
    work_ns: Ns,
    phase: u8,
}

impl Sieve {
    pub(crate) fn step(&mut self, _ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        self.phase += 1;
        match self.phase {
            1 => Action::Compute(self.work_ns),
            2 => Action::Mark { kind: MarkKind::WorkDone, value: 1 },
            _ => Action::Exit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::spec::build_workload;
    use crate::workload::testdrv::{run, test_machine};

    #[test]
    fn static_shares_add_up() {
        let w = build_workload("sieve:threads=3,work=10us", "spec", "t", &test_machine(4)).unwrap();
        assert_eq!(w.name, "sieve:threads=3,work=10us,footprint=256");
        let shares: Vec<Ns> = w
            .tasks
            .iter()
            .map(|t| match &t.program {
                Program::Sieve(s) => s.work_ns,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(shares, vec![3334, 3333, 3333]);
        let w = build_workload("sieve", "spec", "t", &test_machine(64)).unwrap();
        let out = run(&w, 1, Ns::MAX);
        assert_eq!(out.exited, 20);
        assert_eq!(out.end_ns, NS_PER_S);
        assert_eq!(out.marks.len(), 20);
    }
}
