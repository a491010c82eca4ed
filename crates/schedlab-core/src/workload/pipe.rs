//! `perf bench sched pipe` (tools/perf/bench/sched-pipe.c): `tasks` workers
//! (2 by default, `-p`) in a ring of pipes, each reading from its own pipe
//! and writing to the next worker's, `loops` times. Worker 0 reads first,
//! the others write first, so with 2 workers one token bounces between them
//! (Ingo Molnar's pipe-test-1m). perf prints the total time, usecs/op =
//! total / loops and ops/sec = loops / total. See README.md.

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{forked_task, ChanId, ChanSpec, Dist, MarkKind, PrimaryMetric, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "`tasks` workers in a ring: worker i reads pipe i and writes pipe i+1. Worker 0 reads first, the \
others write first, `loops` times each. Pipe writes wake the reader with WF_SYNC. Worker 0 times each of its \
read-write rounds as a request.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "tools/perf/bench/sched-pipe.c (worker_thread, LOOPS_DEFAULT); fs/pipe.c";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "perf bench sched pipe: workers bouncing a token around a ring of pipes \
     (2 by default), `loops` round trips; requests_per_s = perf's ops/sec (usecs/op = 1e6 / it)";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "loops",
        kind: Kind::Count { min: 1, max: 1_000_000_000 },
        default: "1000000",
        unit: "count",
        doc: "reads and writes per worker (-l); perf's default 1,000,000. Sets the simulated time: about 4 \
              engine events per worker per loop.",
    },
    ParamDef {
        name: "tasks",
        kind: Kind::Count { min: 2, max: 100_000 },
        default: "2",
        unit: "count",
        doc: "workers in the ring (-p, newer perf); 2 is the classic ping-pong. With more, every worker but \
              the first starts by writing, so tasks-1 tokens circulate.",
    },
    ParamDef {
        name: "mode",
        kind: Kind::Choice(&["process", "thread"]),
        default: "process",
        unit: "process|thread",
        doc: "processes (perf's default) or threads (-T); only the default footprint differs (the engine \
              does not price an mm switch).",
    },
    ParamDef {
        name: "write",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one 4-byte pipe write excluding the wakeup (syscall entry and exit, pipe lock, \
              copy); the same estimate as hackbench's pipe write. \
              auto: the machine's cost.pipe_write_ns (1500ns by default; `schedlab calibrate` measures it).",
    },
    ParamDef {
        name: "read",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one 4-byte pipe read after the data arrived. \
              auto: the machine's cost.pipe_read_ns (1us by default; `schedlab calibrate` measures it).",
    },
    ParamDef {
        name: "footprint",
        kind: Kind::Count { min: 0, max: 1 << 30 },
        default: AUTO,
        unit: "KiB",
        doc: "cache footprint of each worker. auto: 16 KiB for processes (stack, the pipe's page, page \
              tables), 8 KiB for threads (shared mm).",
    },
];

/// Builds the ring from its parameters.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let loops = p.count("loops")?;
    let n = p.count("tasks")? as u32;
    let mode = p.choice("mode")?;
    let write_ns = p.duration_or("write", Some(p.machine.cost.pipe_write_ns))?;
    let read_ns = p.duration_or("read", Some(p.machine.cost.pipe_read_ns))?;
    let footprint = p.count_or("footprint", if mode == "thread" { 8 } else { 16 })?;
    let footprint_kib = u32::try_from(footprint).map_err(|_| p.invalid("footprint", "a smaller footprint"))?;
    let mut tasks = Vec::with_capacity(n as usize);
    for i in 0..n {
        // Worker i reads pipe i and writes pipe i+1 (mod n).
        let (rd, wr) = (ChanId(i), ChanId((i + 1) % n));
        let write = [Op::Compute(Dist::Fixed(write_ns)), Op::Send { chan: wr, sync: true }];
        let read = [Op::Recv { chan: rd }, Op::Compute(Dist::Fixed(read_ns))];
        let mut b = OpsBuilder::new();
        b.begin_loop(loops);
        // Worker 0 times each round trip of its token as one request.
        if i == 0 {
            b.push(Op::Mark(MarkKind::RequestStart));
        }
        let (first, second) = if i == 0 { (read, write) } else { (write, read) };
        for op in first.into_iter().chain(second) {
            b.push(op);
        }
        if i == 0 {
            b.push(Op::Mark(MarkKind::RequestDone));
        }
        b.end_loop();
        tasks.push(forked_task(&format!("sched-pipe-{i}"), Program::Ops(b.build()), footprint_kib));
    }
    Ok(Workload {
        // A pipe holds 16 pages; 4-byte writes never fill it here.
        // A 4-byte token in a default pipe (16 pages); one token per pipe
        // never fills it.
        chans: vec![ChanSpec::pipe(16, 4); n as usize],
        ..Workload::of(tasks, PrimaryMetric::Throughput)
    })
}

#[cfg(test)]
mod tests {
    use crate::workload::spec::build_workload;
    use crate::workload::testdrv::test_machine;

    #[test]
    fn syscall_costs_default_to_the_machines() {
        // test_machine carries the former fixed defaults (1500 ns, 1 us).
        let w = build_workload("pipe:loops=10", "spec", "t", &test_machine(2)).unwrap();
        assert!(w.name.contains(",write=1500ns,read=1us,"), "{}", w.name);
        // A calibrated machine's measured costs become the defaults; a spec's own values win.
        let mut m = test_machine(2);
        (m.cost.pipe_write_ns, m.cost.pipe_read_ns) = (437, 441);
        let w = build_workload("pipe:loops=10", "spec", "t", &m).unwrap();
        assert!(w.name.contains(",write=437ns,read=441ns,"), "{}", w.name);
        let w = build_workload("pipe:loops=10,write=2us", "spec", "t", &m).unwrap();
        assert!(w.name.contains(",write=2us,read=441ns,"), "{}", w.name);
    }
}
