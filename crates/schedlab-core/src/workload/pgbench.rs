//! pgbench against PostgreSQL: `clients` client connections, each served by
//! its own backend process (PostgreSQL forks one per connection). A
//! transaction of the built-in script is a sequence of statements, each a
//! round trip over a unix socket: the client writes the query and sleeps on
//! the socket, the backend wakes (WF_SYNC, `sock_def_readable`), executes,
//! writes the result (waking the client the same way) and sleeps again; the
//! commit also waits for its WAL flush. Metric: transactions per second
//! (requests_per_s), latency per transaction. See README.md.

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params};
use super::{forked_task, ChanId, ChanSpec, Dist, MarkKind, PrimaryMetric, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "`clients` pgbench client threads, each with its own backend process; per \
     transaction, for each statement of the script the client writes it to its socket and waits; the backend \
     executes it and answers (WF_SYNC wakeups both ways); the commit also sleeps for the WAL flush; `think` \
     between transactions.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "PostgreSQL pgbench (built-in tpcb-like and select-only scripts, -c/-j/-T), \
     one backend per connection (postmaster fork); net/unix/af_unix.c (sock_def_readable)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "pgbench: client threads and one backend process each, statement round trips \
     over unix sockets, commits waiting for the WAL flush; requests_per_s = tps";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "clients",
        kind: Kind::Threads { max: 100_000 },
        default: "8",
        unit: "count|N%",
        doc: "client connections (-c), each with one pgbench thread (-j = -c) and one backend.",
    },
    ParamDef {
        name: "script",
        kind: Kind::Choice(&["tpcb-like", "select-only"]),
        default: "tpcb-like",
        unit: "tpcb-like|select-only",
        doc: "built-in script: tpcb-like is BEGIN, 3 UPDATEs, SELECT, INSERT, END (7 round trips, a \
              commit); select-only (-S) one SELECT, no commit wait.",
    },
    ParamDef {
        name: "time",
        kind: Kind::Duration { default_unit_ns: 1_000_000_000, min_ns: 1_000_000, max_ns: 86_400_000_000_000 },
        default: "2s",
        unit: "s",
        doc: "run time (-T); pgbench runs are usually 60 s or more, 2 s keeps simulations short.",
    },
    ParamDef {
        name: "statement",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "20us",
        unit: "us",
        doc: "backend CPU work per statement (parse, plan, execute on cached pages, a small scale \
              factor); estimate, 10-50 us on current servers.",
    },
    ParamDef {
        name: "commit",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "50us",
        unit: "us",
        doc: "sleep of the commit waiting for its WAL flush (an NVMe fsync, 20-100 us); 0 as with \
              synchronous_commit = off.",
    },
    ParamDef {
        name: "client_work",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "5us",
        unit: "us",
        doc: "client CPU work per statement (building the query, the socket write and read, libpq).",
    },
    ParamDef {
        name: "think",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "0",
        unit: "us",
        doc: "client sleep between transactions (a \\sleep in a custom script); pgbench's default is none.",
    },
];

/// Builds clients and backends.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let clients = p.threads("clients")?;
    let script = p.choice("script")?;
    let time = p.duration("time")?;
    let stmt = p.duration("statement")?;
    let commit = p.duration("commit")?;
    let client_work = p.duration("client_work")?;
    let think = p.duration("think")?;
    let statements = if script == "select-only" { 1 } else { 7 };
    let mut tasks = Vec::with_capacity(2 * clients as usize);
    let mut chans = Vec::with_capacity(2 * clients as usize);
    for c in 0..clients {
        // Channel 2c: client -> backend; 2c + 1: backend -> client.
        let (to_backend, to_client) = (ChanId(2 * c), ChanId(2 * c + 1));
        chans.extend([ChanSpec::queue(64), ChanSpec::queue(64)]);
        let mut cl = OpsBuilder::new();
        cl.push(Op::Mark(MarkKind::RequestStart));
        let mut be = OpsBuilder::new();
        for s in 0..statements {
            cl.push(Op::Compute(Dist::Fixed(client_work)))
                .push(Op::Send { chan: to_backend, sync: true })
                .push(Op::Recv { chan: to_client });
            be.push(Op::Recv { chan: to_backend }).push(Op::Compute(Dist::Fixed(stmt)));
            // END commits: the backend sleeps until its WAL record is flushed.
            if statements > 1 && s == statements - 1 && commit > 0 {
                be.push(Op::Sleep(Dist::Fixed(commit)));
            }
            be.push(Op::Send { chan: to_client, sync: true });
        }
        cl.push(Op::Mark(MarkKind::RequestDone));
        if think > 0 {
            cl.push(Op::Sleep(Dist::Fixed(think)));
        }
        let wrap = |b: OpsBuilder| {
            let mut w = OpsBuilder::new();
            w.begin_forever();
            for op in b.ops() {
                w.push(*op);
            }
            w.end_loop();
            w.build()
        };
        tasks.push(forked_task(&format!("pgbench-{c}"), Program::Ops(wrap(cl)), 64));
        tasks.push(forked_task("postgres", Program::Ops(wrap(be)), 512));
    }
    Ok(Workload { chans, duration_ns: Some(time), ..Workload::of(tasks, PrimaryMetric::Throughput) })
}
