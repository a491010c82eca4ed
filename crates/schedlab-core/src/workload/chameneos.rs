//! Chameneos-redux with a broker (the benchmarks game's "chameneos-redux",
//! in its message-passing form): `creatures` threads each go to the meeting
//! place by writing their name to the broker's pipe and reading the answer
//! from their own; the broker pairs arrivals two by two, answers both (each
//! learns its mate's colour) and counts a meeting; once `meetings` meetings
//! happened it answers every arrival with "stop". Every meeting wakes two
//! creatures from one task: a pure wakeup-placement benchmark. Metric:
//! completion time. See README.md.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::workqueue::{Worker, STOP};
use super::{forked_task, Action, ChanId, ChanSpec, PrimaryMetric, ProgCtx, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;
use crate::sim::Rng;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "one broker, `creatures` creatures. A creature writes its name to the broker's pipe and reads \
the answer from its own pipe; the broker pairs arrivals two by two and answers both with the mate's name, counting a \
meeting; after `meetings` it answers STOP.";

/// What it was modelled on.
pub(crate) const SOURCE: &str =
    "the Computer Language Benchmarks Game, chameneos-redux (message-passing versions with a broker)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str =
    "chameneos-redux with a broker: `creatures` threads meet in pairs through a broker over pipes, \
     `meetings` meetings; completion time";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "creatures",
        kind: Kind::Count { min: 2, max: 100_000 },
        default: "10",
        unit: "count",
        doc: "creature threads; the benchmarks game plays one game of 3 and one of 10.",
    },
    ParamDef {
        name: "meetings",
        kind: Kind::Count { min: 1, max: 1_000_000_000 },
        default: "600000",
        unit: "count",
        doc: "meetings before the broker stops the game; the game's 6,000,000 divided by 10 to keep a run \
              to a few simulated seconds.",
    },
    ParamDef {
        name: "mutate",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: "200ns",
        unit: "us",
        doc: "a creature's work after a meeting (its colour change and bookkeeping); a few hundred \
              instructions.",
    },
    ParamDef {
        name: "write",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one small pipe write, as hackbench's pipe write. \
              auto: the machine's cost.pipe_write_ns (1500ns by default; `schedlab calibrate` measures it).",
    },
    ParamDef {
        name: "read",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000 * NS_PER_US },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one small pipe read. \
              auto: the machine's cost.pipe_read_ns (1us by default; `schedlab calibrate` measures it).",
    },
];

/// Builds the broker and the creatures.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let creatures = p.count("creatures")? as u32;
    let meetings = p.count("meetings")?;
    let mutate = p.duration("mutate")?;
    let write_ns = p.duration_or("write", Some(p.machine.cost.pipe_write_ns))?;
    let read_ns = p.duration_or("read", Some(p.machine.cost.pipe_read_ns))?;
    // Channel 0: the broker's pipe; 1 + i: creature i's.
    let broker = Broker {
        req: ChanId(0),
        first_reply: 1,
        waiting: None,
        meetings_left: meetings,
        live: creatures,
        read_ns,
        write_ns,
        phase: Phase::Recv,
    };
    let mut tasks = vec![forked_task("broker", Program::ChameneosBroker(broker), 16)];
    for i in 0..creatures {
        let c = Worker::new(ChanId(0), ChanId(1 + i), i as u64, write_ns, read_ns, mutate);
        tasks.push(forked_task(&format!("creature-{i}"), Program::WorkqueueWorker(c), 8));
    }
    // Default pipes (16 pages) carrying a creature's name as a u64 (8 bytes;
    // an estimate, there is no native program). One message in flight per
    // creature: none fills.
    let mut chans = vec![ChanSpec::pipe(16, 8)];
    chans.extend((0..creatures).map(|_| ChanSpec::pipe(16, 8)));
    Ok(Workload { chans, ..Workload::of(tasks, PrimaryMetric::CompletionTime) })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Recv,
    Handle,
    /// Write (the syscall work) the answer `msg` to creature .0, then answer .1 if any.
    Write(u64, Option<u64>, u64),
    /// Send it.
    Send(u64, Option<u64>, u64),
}

/// The meeting place: pairs arrivals in order; after the last meeting,
/// answers every arrival (and the one left waiting) with [`STOP`].
#[derive(Clone, Debug)]
pub struct Broker {
    req: ChanId,
    first_reply: u32,
    waiting: Option<u64>,
    meetings_left: u64,
    live: u32,
    read_ns: Ns,
    write_ns: Ns,
    phase: Phase,
}

impl Broker {
    /// Shifts its channel ids (composition; see `compose.rs`).
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        self.req = off.chan(self.req);
        self.first_reply += off.chan;
    }

    fn reply(&self, creature: u64, msg: u64) -> Action {
        Action::Send { chan: ChanId(self.first_reply + creature as u32), msg, sync: true }
    }

    pub(crate) fn step(&mut self, ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        loop {
            match self.phase {
                Phase::Recv => {
                    if self.live == 0 {
                        return Action::Exit;
                    }
                    self.phase = Phase::Handle;
                    return Action::Recv { chan: self.req };
                }
                Phase::Handle => {
                    let Some(c) = ctx.msg else {
                        self.phase = Phase::Recv;
                        continue;
                    };
                    if self.meetings_left == 0 {
                        // The game is over: stop this one and the one left waiting.
                        let other = self.waiting.take();
                        self.live -= 1 + other.is_some() as u32;
                        self.phase = Phase::Write(c, other, STOP);
                    } else if let Some(first) = self.waiting.take() {
                        self.meetings_left -= 1;
                        // Each learns the other's name (its colour, in the game).
                        self.phase = Phase::Write(first, Some(c), c);
                    } else {
                        self.waiting = Some(c);
                        self.phase = Phase::Recv;
                    }
                    if self.read_ns > 0 {
                        return Action::Compute(self.read_ns);
                    }
                }
                Phase::Write(a, b, msg) => {
                    self.phase = Phase::Send(a, b, msg);
                    if self.write_ns > 0 {
                        return Action::Compute(self.write_ns);
                    }
                }
                Phase::Send(a, b, msg) => {
                    self.phase = match b {
                        // The mate learns the first one's name; a stop is a stop.
                        Some(b) => Phase::Write(b, None, if msg == STOP { STOP } else { a }),
                        None => Phase::Recv,
                    };
                    return self.reply(a, msg);
                }
            }
        }
    }
}
