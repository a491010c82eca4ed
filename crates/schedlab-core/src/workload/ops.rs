//! Programs written as a list of operations: the primitives that user
//! programs (TOML, `program.rs` of this folder's README), rt-app files
//! (`rtapp.rs`) and the simpler built-in families (pipe, barrier, chameneos,
//! nas) are compiled to.
//!
//! An [`Ops`] program is a flat array of [`Op`]s with a program counter;
//! loops are a backward jump ([`Op::LoopEnd`]) with a counter slot, timers
//! keep their next expiry in a slot. Everything a program needs is sized when
//! it is built, so stepping one allocates nothing. Operations that take more
//! than one engine action (a condition wait releases and retakes its mutex)
//! keep their place in `sub`.
//!
//! Mutexes are channels of capacity 1: `lock` writes the one slot (blocking
//! while another task holds it, as a contended `pthread_mutex_lock` sleeps on
//! its futex) and `unlock` reads it back, which wakes the first blocked
//! locker (FUTEX_WAKE of one waiter, no WF_SYNC). The woken locker retries
//! and may lose the race to a task that came in meanwhile, as with pthreads.

use super::{Action, BarrierId, ChanId, CondId, Dist, MarkKind, ProgCtx, SemId};
use crate::ids::{Ns, TaskId};
use crate::sim::Rng;

/// Work of one iteration of rt-app's `runtime` loop: it calls `loadwait(32)`
/// (32 us of calibrated work) until the wall-clock duration has passed
/// (rt-app `run_event`, `rtapp_runtime`), so the event overshoots by up to one
/// chunk, as the real one does.
pub const RUNTIME_CHUNK_NS: Ns = 32_000;

/// Steps a program may take without an engine action (loop ends, timers
/// already expired) before it is stopped as a busy loop doing nothing; the
/// engine then reports it (a program must compute, sleep or block).
const MAX_SILENT_STEPS: u32 = 100_000;

/// One operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Work, sampled from a distribution (ns of work on a capacity-1024 CPU at
    /// its maximum frequency; see [`Action::Compute`]).
    Compute(Dist),
    /// Busy-run for a wall-clock duration whatever the CPU's speed (rt-app's
    /// `runtime` event): chunks of [`RUNTIME_CHUNK_NS`] of work until the
    /// time since the event began reaches it.
    RunFor(Ns),
    /// Sleep for a sampled duration (`nanosleep`).
    Sleep(Dist),
    /// Block in an I/O wait for a sampled duration (`Action::IoSleep`).
    IoSleep(Dist),
    /// Anchor the program's timers `delay` from now and sleep until then
    /// (rt-app's thread start: `t_first` = start + `delay`, which every
    /// timer's first period counts from).
    Start {
        /// Initial delay, ns.
        delay: Ns,
    },
    /// A periodic timer (rt-app's `timer`): its first expiry is one period
    /// after the anchor ([`Op::Start`], else its own first use); each use
    /// adds `period` and sleeps until then. When that time has
    /// already passed, the program goes on at once and, in relative mode,
    /// the timer re-anchors at now; in absolute mode it keeps its phase.
    Timer {
        /// Index of the timer's state in the program.
        slot: u16,
        /// Period, ns.
        period: Ns,
        /// Absolute mode.
        absolute: bool,
    },
    /// Write one message to a channel (pipe or socket write).
    Send {
        /// The channel.
        chan: ChanId,
        /// Wake the reader with WF_SYNC (a pipe write followed by a read).
        sync: bool,
    },
    /// Read one message from a channel, blocking while it is empty.
    Recv {
        /// The channel.
        chan: ChanId,
    },
    /// Take a mutex (a capacity-1 channel; see the module doc).
    Lock(ChanId),
    /// Release a mutex.
    Unlock(ChanId),
    /// `pthread_cond_wait`: release `mutex` (when given), block until
    /// signalled, take `mutex` again.
    CondWait {
        /// The condition variable.
        cond: CondId,
        /// The mutex held around the wait.
        mutex: Option<ChanId>,
    },
    /// `pthread_cond_signal` (`all` = broadcast).
    Signal {
        /// The condition variable.
        cond: CondId,
        /// Wake every waiter.
        all: bool,
    },
    /// Wait on a semaphore, spinning up to `spin` ns of work first.
    SemWait {
        /// The semaphore.
        sem: SemId,
        /// Spin budget, ns of work.
        spin: Ns,
    },
    /// Post a semaphore.
    SemPost(SemId),
    /// `sched_yield` ([`Action::Yield`]).
    Yield,
    /// `sched_setaffinity` to `Workload::masks[i]` ([`Action::SetAffinity`]).
    SetAffinity(u32),
    /// `sched_setattr` on itself ([`Action::SetScheduler`]).
    SetScheduler {
        /// The new policy.
        policy: super::SchedPolicy,
        /// RT priority (SCHED_FIFO/RR) or nice (the others).
        priority: i32,
    },
    /// Fork the next of `count` pre-made tasks `first`, `first + 1`, ...
    /// (each execution creates the next; past `count`, nothing).
    Spawn {
        /// The first task this op creates.
        first: TaskId,
        /// How many it may create.
        count: u32,
        /// Index of its counter (a loop slot).
        slot: u16,
    },
    /// Futex wait on the task's own word ([`Action::Wait`]).
    Wait,
    /// Futex wake of a task ([`Action::Wake`]).
    Wake {
        /// The task.
        task: TaskId,
        /// WF_SYNC.
        sync: bool,
    },
    /// Arrive at a barrier, spinning up to `spin` ns of work before blocking.
    Barrier {
        /// The barrier.
        id: BarrierId,
        /// Spin budget, ns of work.
        spin: Ns,
    },
    /// A workload mark: `RequestStart` records now as the request's start,
    /// `RequestDone` carries that start, `WorkDone` counts one unit,
    /// `WakeDone` carries the time the task was last woken.
    Mark(MarkKind),
    /// End of a loop body: jump back to `start` until the body has run
    /// `count` times (0 = forever).
    LoopEnd {
        /// Index of the body's first operation.
        start: u32,
        /// Times the body runs; 0 = forever.
        count: u64,
        /// Index of the loop's counter in the program.
        slot: u16,
    },
    /// Terminate.
    Exit,
}

/// A task program made of [`Op`]s.
#[derive(Clone, Debug)]
pub struct Ops {
    code: Box<[Op]>,
    pc: u32,
    /// Progress inside a multi-action operation.
    sub: u8,
    /// Iterations done, per loop slot.
    loops: Box<[u64]>,
    /// Next expiry, per timer slot (`None` before its first use).
    timers: Box<[Option<Ns>]>,
    /// When the current `RunFor` began.
    since: Ns,
    /// Where timers start counting from ([`Op::Start`]).
    anchor: Option<Ns>,
    /// Start time of the current request (`Mark(RequestStart)`).
    request_start: Ns,
    /// Time of the last wakeup the program saw.
    woken_at: Ns,
}

impl Ops {
    /// A program running `code`; its loop and timer slots are sized from it.
    pub fn new(code: Vec<Op>) -> Self {
        let mut nr_loops = 0;
        let mut nr_timers = 0;
        for op in &code {
            match *op {
                Op::LoopEnd { slot, .. } | Op::Spawn { slot, .. } => nr_loops = nr_loops.max(slot as usize + 1),
                Op::Timer { slot, .. } => nr_timers = nr_timers.max(slot as usize + 1),
                _ => {}
            }
        }
        Ops {
            code: code.into_boxed_slice(),
            pc: 0,
            sub: 0,
            loops: vec![0; nr_loops].into_boxed_slice(),
            timers: vec![None; nr_timers].into_boxed_slice(),
            since: 0,
            anchor: None,
            request_start: 0,
            woken_at: 0,
        }
    }

    /// Points every [`Op::Spawn`] at its tasks: `first` holds a request
    /// number until then, which `target` maps to the first task's id.
    pub(crate) fn set_spawn_targets(&mut self, target: impl Fn(u32) -> u32) {
        for op in self.code.iter_mut() {
            if let Op::Spawn { first, .. } = op {
                first.0 = target(first.0);
            }
        }
    }

    /// The operations.
    pub fn code(&self) -> &[Op] {
        &self.code
    }

    /// Shifts the ids the program names (see [`super::IdOffset`]).
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        for op in self.code.iter_mut() {
            match op {
                Op::Send { chan, .. } | Op::Recv { chan } | Op::Lock(chan) | Op::Unlock(chan) => {
                    *chan = off.chan(*chan)
                }
                Op::CondWait { cond, mutex } => {
                    *cond = off.cond(*cond);
                    *mutex = mutex.map(|m| off.chan(m));
                }
                Op::Signal { cond, .. } => *cond = off.cond(*cond),
                Op::SemWait { sem, .. } | Op::SemPost(sem) => *sem = off.sem(*sem),
                Op::SetAffinity(mask) => *mask += off.mask,
                Op::Spawn { first, .. } => *first = off.task(*first),
                Op::Wake { task, .. } => *task = off.task(*task),
                Op::Barrier { id, .. } => *id = off.barrier(*id),
                _ => {}
            }
        }
    }

    /// The next action.
    pub fn step(&mut self, ctx: &ProgCtx, rng: &mut Rng) -> Action {
        if let Some(t) = ctx.woken_at {
            self.woken_at = t;
        }
        for _ in 0..MAX_SILENT_STEPS {
            let Some(&op) = self.code.get(self.pc as usize) else { return Action::Exit };
            match op {
                Op::Compute(d) => {
                    self.pc += 1;
                    return Action::Compute(d.sample(rng));
                }
                Op::RunFor(d) => {
                    if self.sub == 0 {
                        self.sub = 1;
                        self.since = ctx.now;
                        return Action::Compute(RUNTIME_CHUNK_NS);
                    }
                    if ctx.now.saturating_sub(self.since) < d {
                        return Action::Compute(RUNTIME_CHUNK_NS);
                    }
                    self.sub = 0;
                    self.pc += 1;
                }
                Op::Sleep(d) => {
                    self.pc += 1;
                    return Action::Sleep(d.sample(rng));
                }
                Op::IoSleep(d) => {
                    self.pc += 1;
                    return Action::IoSleep(d.sample(rng));
                }
                Op::Start { delay } => {
                    self.pc += 1;
                    let at = ctx.now.saturating_add(delay);
                    self.anchor = Some(at);
                    if delay > 0 {
                        return Action::SleepUntil(at);
                    }
                }
                Op::Timer { slot, period, absolute } => {
                    self.pc += 1;
                    let t = &mut self.timers[slot as usize];
                    let next = t.or(self.anchor).unwrap_or(ctx.now).saturating_add(period);
                    *t = Some(next);
                    if ctx.now < next {
                        return Action::SleepUntil(next);
                    }
                    if !absolute {
                        *t = Some(ctx.now);
                    }
                }
                Op::Send { chan, sync } => {
                    self.pc += 1;
                    return Action::Send { chan, msg: 0, sync };
                }
                Op::Recv { chan } => {
                    self.pc += 1;
                    return Action::Recv { chan };
                }
                Op::Lock(m) => {
                    self.pc += 1;
                    return Action::Send { chan: m, msg: 0, sync: false };
                }
                Op::Unlock(m) => {
                    self.pc += 1;
                    return Action::Recv { chan: m };
                }
                Op::CondWait { cond, mutex } => match (self.sub, mutex) {
                    (0, Some(m)) => {
                        self.sub = 1;
                        return Action::Recv { chan: m };
                    }
                    (0 | 1, _) => {
                        self.sub = 2;
                        return Action::CondWait { cond };
                    }
                    (_, m) => {
                        self.sub = 0;
                        self.pc += 1;
                        if let Some(m) = m {
                            return Action::Send { chan: m, msg: 0, sync: false };
                        }
                    }
                },
                Op::Signal { cond, all } => {
                    self.pc += 1;
                    return Action::CondSignal { cond, all };
                }
                Op::SemWait { sem, spin } => {
                    self.pc += 1;
                    return Action::SemWait { sem, spin_ns: spin };
                }
                Op::SemPost(sem) => {
                    self.pc += 1;
                    return Action::SemPost { sem };
                }
                Op::Wait => {
                    self.pc += 1;
                    return Action::Wait;
                }
                Op::Yield => {
                    self.pc += 1;
                    return Action::Yield;
                }
                Op::SetAffinity(mask) => {
                    self.pc += 1;
                    return Action::SetAffinity { mask };
                }
                Op::SetScheduler { policy, priority } => {
                    self.pc += 1;
                    return Action::SetScheduler { policy, priority };
                }
                Op::Spawn { first, count, slot } => {
                    self.pc += 1;
                    let n = &mut self.loops[slot as usize];
                    if *n < count as u64 {
                        *n += 1;
                        return Action::Spawn { task: TaskId(first.0 + *n as u32 - 1) };
                    }
                }
                Op::Wake { task, sync } => {
                    self.pc += 1;
                    return Action::Wake { task, sync };
                }
                Op::Barrier { id, spin } => {
                    self.pc += 1;
                    return Action::Barrier { id, spin_ns: spin };
                }
                Op::Mark(kind) => {
                    self.pc += 1;
                    let value = match kind {
                        MarkKind::RequestStart => {
                            self.request_start = ctx.now;
                            ctx.now
                        }
                        MarkKind::RequestDone => self.request_start,
                        MarkKind::WorkDone => 1,
                        MarkKind::WakeDone => self.woken_at,
                    };
                    return Action::Mark { kind, value };
                }
                Op::LoopEnd { start, count, slot } => {
                    let n = &mut self.loops[slot as usize];
                    *n += 1;
                    if count == 0 || *n < count {
                        self.pc = start;
                    } else {
                        *n = 0;
                        self.pc += 1;
                    }
                }
                Op::Exit => return Action::Exit,
            }
        }
        // A loop that neither computes nor blocks: hand the engine an
        // instant action so its own limit reports the task.
        Action::Compute(0)
    }
}

/// Builds [`Op`] lists with nested loops: `begin_loop` / `end_loop` pairs
/// become a backward [`Op::LoopEnd`] with its own counter slot.
#[derive(Debug, Default)]
pub struct OpsBuilder {
    code: Vec<Op>,
    open: Vec<(u32, u64)>,
    nr_loops: u16,
    nr_timers: u16,
}

impl OpsBuilder {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one operation.
    pub fn push(&mut self, op: Op) -> &mut Self {
        self.code.push(op);
        self
    }

    /// A new counter slot, for [`Op::Spawn`].
    pub fn counter_slot(&mut self) -> u16 {
        self.nr_loops += 1;
        self.nr_loops - 1
    }

    /// A new timer slot, for [`Op::Timer`].
    pub fn timer_slot(&mut self) -> u16 {
        self.nr_timers += 1;
        self.nr_timers - 1
    }

    /// Opens a loop whose body runs `count` times, at least once (a body to
    /// run zero times is simply not built).
    pub fn begin_loop(&mut self, count: u64) -> &mut Self {
        assert!(count > 0, "begin_loop(0): skip the body, or use begin_forever");
        self.open.push((self.code.len() as u32, count));
        self
    }

    /// Opens a loop whose body runs until the task is stopped (a duration).
    pub fn begin_forever(&mut self) -> &mut Self {
        self.open.push((self.code.len() as u32, 0));
        self
    }

    /// Closes the innermost open loop. A body that is empty is dropped; one
    /// that runs once needs no jump.
    pub fn end_loop(&mut self) -> &mut Self {
        let (start, count) = self.open.pop().expect("end_loop without begin_loop");
        if self.code.len() as u32 == start || count == 1 {
            return self;
        }
        let slot = self.nr_loops;
        self.nr_loops += 1;
        self.code.push(Op::LoopEnd { start, count, slot });
        self
    }

    /// Whether the ops since `from` can take time or block (a loop body
    /// without any would spin without end in zero time).
    pub fn takes_time_since(&self, from: usize) -> bool {
        self.code[from..].iter().any(|op| {
            !matches!(
                op,
                Op::Mark(_)
                    | Op::LoopEnd { .. }
                    | Op::Signal { .. }
                    | Op::Wake { .. }
                    | Op::Unlock(_)
                    | Op::SemPost(_)
                    | Op::Yield
                    | Op::SetAffinity(_)
                    | Op::SetScheduler { .. }
                    | Op::Spawn { .. }
            ) && !matches!(op, Op::Compute(Dist::Fixed(0)) | Op::Sleep(Dist::Fixed(0)) | Op::IoSleep(Dist::Fixed(0)))
        })
    }

    /// The operations so far.
    pub fn ops(&self) -> &[Op] {
        &self.code
    }

    /// Number of operations so far.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether no operation was added.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }

    /// The program.
    pub fn build(self) -> Ops {
        assert!(self.open.is_empty(), "unclosed loop");
        Ops::new(self.code)
    }
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
