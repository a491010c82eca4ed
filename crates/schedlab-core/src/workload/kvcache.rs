//! A multi-threaded in-memory key-value server (memcached-like: `threads`
//! worker threads, each running an epoll loop over the connections assigned
//! to it round-robin) under a pipelined load generator (memtier_benchmark-
//! like: `clients` threads, each with `conns` connections keeping `pipeline`
//! requests outstanding, a new one sent as each reply arrives). Requests and
//! replies are socket messages; each write wakes the reader with WF_SYNC
//! (`sock_def_readable`). Metrics: ops/s (requests_per_s) and the latency of
//! each request from its send to its reply. See README.md.

use super::spec::{Kind, ParamDef, Params};
use super::{forked_task, Action, ChanId, ChanSpec, MarkKind, PrimaryMetric, ProgCtx, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;
use crate::sim::Rng;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "`threads` server threads, each reading the requests of its connections \
     (epoll, one socket inbox per thread), serving each (get or set work) and writing the reply; `clients` \
     load-generator threads with `conns` connections each, spread round-robin over the server threads, each \
     connection keeping `pipeline` requests in flight: every reply is timed and answered with a new request \
     on the same connection, until `time`.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "memcached (worker threads with libevent loops, connections dispatched \
     round-robin) and memtier_benchmark (--threads, --clients, --pipeline, --ratio, --test-time); \
     SEEDS.md idea 2 (a key-value cache under a pipelined load generator)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "kv-cache: a multi-threaded key-value server under a pipelined load \
     generator over sockets; requests_per_s = ops/s, request latency p50/p99";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        kind: Kind::Threads { max: 10_000 },
        default: "4",
        unit: "count|N%",
        doc: "server worker threads (memcached -t, default 4).",
    },
    ParamDef {
        name: "clients",
        kind: Kind::Threads { max: 10_000 },
        default: "4",
        unit: "count|N%",
        doc: "load-generator threads (memtier --threads, default 4).",
    },
    ParamDef {
        name: "conns",
        kind: Kind::Count { min: 1, max: 10_000 },
        default: "50",
        unit: "count",
        doc: "connections per load-generator thread (memtier --clients, default 50).",
    },
    ParamDef {
        name: "pipeline",
        kind: Kind::Count { min: 1, max: 10_000 },
        default: "1",
        unit: "count",
        doc: "requests in flight per connection (memtier --pipeline, default 1).",
    },
    ParamDef {
        name: "set_pct",
        kind: Kind::Count { min: 0, max: 100 },
        default: "9",
        unit: "%",
        doc: "share of sets among requests: memtier's default ratio 1:10 sets:gets is 9%.",
    },
    ParamDef {
        name: "get",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "2us",
        unit: "us",
        doc: "server work per get (parse, hash lookup, copy the value, the socket read and write); estimate.",
    },
    ParamDef {
        name: "set",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "3us",
        unit: "us",
        doc: "server work per set (allocating and linking the item as well); estimate.",
    },
    ParamDef {
        name: "client_work",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "2us",
        unit: "us",
        doc: "load-generator work per reply (parse it, build and write the next request); estimate.",
    },
    ParamDef {
        name: "time",
        kind: Kind::Duration { default_unit_ns: 1_000_000_000, min_ns: 1_000_000, max_ns: 86_400_000_000_000 },
        default: "1s",
        unit: "s",
        doc: "test time (memtier --test-time); 1 s keeps simulations short.",
    },
];

/// Bits of a message holding the connection; the rest is the send time (ns).
const CONN_BITS: u32 = 24;

/// Builds the server and the load generator.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let threads = p.threads("threads")?;
    let clients = p.threads("clients")?;
    let conns = p.count("conns")? as u32;
    let pipeline = p.count("pipeline")? as u32;
    let set_pct = p.count("set_pct")? as u32;
    let get_ns = p.duration("get")?;
    let set_ns = p.duration("set")?;
    let client_work = p.duration("client_work")?;
    let time = p.duration("time")?;
    if (clients as u64) * (conns as u64) >= 1 << CONN_BITS {
        return Err(p.invalid("conns", "fewer than 16M connections in all"));
    }
    // Channels: 0..threads server inboxes; then one inbox per client thread.
    let first_client_chan = threads;
    let mut tasks = Vec::new();
    for i in 0..threads {
        let s = Server { inbox: ChanId(i), first_client_chan, conns, get_ns, set_ns, set_pct, phase: SPhase::Recv };
        tasks.push(forked_task(&format!("mc-worker-{i}"), Program::KvServer(s), 256));
    }
    for c in 0..clients {
        let cl = Client {
            first_conn: c * conns,
            conns,
            servers: threads,
            server_base: 0,
            inbox: ChanId(first_client_chan + c),
            client_work,
            burst_left: conns * pipeline,
            next_conn: 0,
            phase: CPhase::Burst,
        };
        tasks.push(forked_task(&format!("memtier-{c}"), Program::KvClient(cl), 64));
    }
    // An inbox holds every request its connections can have in flight.
    let per_server = (clients * conns).div_ceil(threads) * pipeline + 1;
    let mut chans = vec![ChanSpec::queue(per_server); threads as usize];
    chans.extend((0..clients).map(|_| ChanSpec::queue(conns * pipeline + 1)));
    Ok(Workload { chans, duration_ns: Some(time), ..Workload::of(tasks, PrimaryMetric::Throughput) })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SPhase {
    Recv,
    Serve,
    Reply(u64),
}

/// A server worker thread: read a request from any of its connections,
/// serve it, write the reply to that connection's client.
#[derive(Clone, Debug)]
pub struct Server {
    inbox: ChanId,
    first_client_chan: u32,
    conns: u32,
    get_ns: Ns,
    set_ns: Ns,
    set_pct: u32,
    phase: SPhase,
}

impl Server {
    /// Shifts its channel ids (composition; see `compose.rs`).
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        self.inbox = off.chan(self.inbox);
        self.first_client_chan += off.chan;
    }

    pub(crate) fn step(&mut self, ctx: &ProgCtx, rng: &mut Rng) -> Action {
        loop {
            match self.phase {
                SPhase::Recv => {
                    self.phase = SPhase::Serve;
                    return Action::Recv { chan: self.inbox };
                }
                SPhase::Serve => {
                    let Some(msg) = ctx.msg else {
                        self.phase = SPhase::Recv;
                        continue;
                    };
                    self.phase = SPhase::Reply(msg);
                    let set = rng.below(100) < self.set_pct;
                    return Action::Compute(if set { self.set_ns } else { self.get_ns });
                }
                SPhase::Reply(msg) => {
                    self.phase = SPhase::Recv;
                    let conn = (msg & ((1 << CONN_BITS) - 1)) as u32;
                    let chan = ChanId(self.first_client_chan + conn / self.conns);
                    return Action::Send { chan, msg, sync: true };
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CPhase {
    Burst,
    Recv,
    Got,
    Work(u32),
    Send(u32),
}

/// A load-generator thread: fill every connection's pipeline, then answer
/// each reply with a new request on its connection.
#[derive(Clone, Debug)]
pub struct Client {
    first_conn: u32,
    conns: u32,
    servers: u32,
    /// Channel of server thread 0 (the part's first channel).
    server_base: u32,
    inbox: ChanId,
    client_work: Ns,
    burst_left: u32,
    next_conn: u32,
    phase: CPhase,
}

impl Client {
    /// Shifts its channel ids (composition; see `compose.rs`). Server
    /// inboxes are the part's first channels.
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        self.inbox = off.chan(self.inbox);
        self.server_base += off.chan;
    }

    fn request(&self, conn: u32, now: Ns) -> Action {
        let server = ChanId(self.server_base + conn % self.servers);
        Action::Send { chan: server, msg: (now << CONN_BITS) | conn as u64, sync: true }
    }

    pub(crate) fn step(&mut self, ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        loop {
            match self.phase {
                CPhase::Burst => {
                    if self.burst_left == 0 {
                        self.phase = CPhase::Recv;
                        continue;
                    }
                    self.burst_left -= 1;
                    let conn = self.first_conn + self.next_conn;
                    self.next_conn = (self.next_conn + 1) % self.conns;
                    return self.request(conn, ctx.now);
                }
                CPhase::Recv => {
                    self.phase = CPhase::Got;
                    return Action::Recv { chan: self.inbox };
                }
                CPhase::Got => {
                    let Some(msg) = ctx.msg else {
                        self.phase = CPhase::Recv;
                        continue;
                    };
                    self.phase = CPhase::Work((msg & ((1 << CONN_BITS) - 1)) as u32);
                    return Action::Mark { kind: MarkKind::RequestDone, value: msg >> CONN_BITS };
                }
                CPhase::Work(conn) => {
                    // Parse the reply and build the next request.
                    self.phase = CPhase::Send(conn);
                    if self.client_work > 0 {
                        return Action::Compute(self.client_work);
                    }
                }
                CPhase::Send(conn) => {
                    self.phase = CPhase::Recv;
                    return self.request(conn, ctx.now);
                }
            }
        }
    }
}
