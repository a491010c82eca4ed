//! A parallel query (PostgreSQL's parallel sequential scan under a Gather):
//! a coordinator hands chunks of a large table to `workers` worker processes
//! as they ask, each worker scans its chunk and sends its partial result
//! back with its next request, and the coordinator merges every result.
//! The structure is the work queue's (a manager and workers over IPC), with
//! a merge per chunk on the coordinator. Metric: completion time.

use super::spec::{Kind, ParamDef, Params};
use super::workqueue::{Manager, Worker};
use super::{forked_task, ChanId, ChanSpec, PrimaryMetric, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "one coordinator (the leader) and `workers` parallel workers; a worker asks \
     for the next chunk of blocks, scans it, and sends its partial result with its next request; the \
     coordinator answers in request order and merges each result; the query ends when every chunk is merged.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "PostgreSQL parallel sequential scan (table_block_parallelscan_nextpage's \
     chunked block allocation, Gather with shm_mq tuple queues); SEEDS.md idea 2 (a database query)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str =
    "a parallel query: a coordinator hands table chunks to worker processes and merges their results; completion time";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "workers",
        kind: Kind::Threads { max: 100_000 },
        default: "8",
        unit: "count|N%",
        doc: "parallel workers (max_parallel_workers_per_gather; PostgreSQL's default is 2, analytics \
              setups raise it to the core count).",
    },
    ParamDef {
        name: "chunks",
        kind: Kind::Count { min: 1, max: 100_000_000 },
        default: "1024",
        unit: "count",
        doc: "chunks of the table: a 1 GiB table is 131072 blocks of 8 KiB, handed out 128 blocks at a time.",
    },
    ParamDef {
        name: "chunk",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 1_000, max_ns: 60_000_000_000 },
        default: "1280us",
        unit: "us",
        doc: "scan work per chunk: 128 cached blocks at about 10 us each (tuple deforming and a simple \
              predicate); estimate.",
    },
    ParamDef {
        name: "merge",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "20us",
        unit: "us",
        doc: "coordinator work to merge one partial result (an aggregate's combine step); estimate.",
    },
    ParamDef {
        name: "ipc",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "2us",
        unit: "us",
        doc: "CPU work of one queue message on each side (shm_mq send or receive and the latch set).",
    },
];

/// Builds the coordinator and its workers.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let workers = p.threads("workers")?;
    let chunks = p.count("chunks")?;
    let chunk = p.duration("chunk")?;
    let merge = p.duration("merge")?;
    let ipc = p.duration("ipc")?;
    let coordinator = Manager::new(ChanId(0), 1, chunks, workers, 2 * ipc + merge);
    let mut tasks = vec![forked_task("postgres-leader", Program::WorkqueueManager(coordinator), 256)];
    for i in 0..workers {
        let w = Worker::new(ChanId(0), ChanId(1 + i), i as u64, ipc, ipc, chunk);
        tasks.push(forked_task("parallel-worker", Program::WorkqueueWorker(w), 256));
    }
    let mut chans = vec![ChanSpec::queue(workers)];
    chans.extend((0..workers).map(|_| ChanSpec::queue(1)));
    Ok(Workload { chans, ..Workload::of(tasks, PrimaryMetric::CompletionTime) })
}
