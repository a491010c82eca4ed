//! The interface between task programs and the engine.
//!
//! A task's behaviour is a small state machine ([`Program`]) that the engine
//! steps whenever the task has finished its previous [`Action`]. Programs are
//! an enum, not trait objects, so stepping one is a `match`, not a virtual call
//! (the engine's inner loop must not dispatch dynamically).

use crate::ids::{Ns, TaskId};

/// A channel (pipe, socket, message queue) between tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChanId(pub u32);

/// A barrier shared by a team of tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BarrierId(pub u32);

/// A condition variable (`pthread_cond_t`): waiters queue on it until signalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CondId(pub u32);

/// A counting semaphore (a flag threads busy-wait on, or a `sem_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SemId(pub u32);

/// What a task asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Compute: `work_ns` nanoseconds of work as measured on a capacity-1024
    /// CPU at its maximum frequency with its SMT sibling idle. The engine
    /// turns it into wall time with the CPU's speed and adds cache refill work.
    Compute(Ns),
    /// Sleep (nanosleep / a timer) for a duration.
    Sleep(Ns),
    /// Sleep until an absolute time (a periodic timer).
    SleepUntil(Ns),
    /// Block in an I/O wait for a duration (the device's service time):
    /// `io_schedule`, so the task is `in_iowait` until it runs again and its
    /// wakeup asks schedutil for an iowait boost (`cpufreq/iowait.rs`).
    IoSleep(Ns),
    /// Write one message to a channel. Blocks while the channel is full. Wakes
    /// a reader blocked on it; `sync` marks the wakeup WF_SYNC (the writer is
    /// about to block, as in a pipe write followed by a read).
    Send {
        /// The channel.
        chan: ChanId,
        /// Payload, delivered to the reader in [`ProgCtx::msg`].
        msg: u64,
        /// Wake the reader with WF_SYNC.
        sync: bool,
    },
    /// Read one message from a channel. Blocks while it is empty.
    Recv {
        /// The channel.
        chan: ChanId,
    },
    /// Block until another task wakes this one with [`Action::Wake`]
    /// (futex wait on a private word). A wake that came earlier is not lost:
    /// each task has a count of pending wakes, like a semaphore.
    Wait,
    /// Wake `task` (futex wake of one waiter). Does not block.
    Wake {
        /// The task to wake.
        task: TaskId,
        /// Wake with WF_SYNC.
        sync: bool,
    },
    /// Arrive at a barrier: the last arrival releases everyone; the others
    /// spin (compute) for up to `spin_ns` of work, then block (OpenMP style).
    Barrier {
        /// The barrier.
        id: BarrierId,
        /// Spin budget before blocking, ns of work.
        spin_ns: Ns,
    },
    /// Block on a condition variable until [`Action::CondSignal`] wakes this
    /// task (`pthread_cond_wait`, the futex wait inside it). Unlike
    /// [`Action::Wait`], a signal sent while nobody waits is lost, as with
    /// pthreads. The mutex a `pthread_cond_wait` releases and retakes is the
    /// program's business (a channel of capacity 1, see the ops programs).
    CondWait {
        /// The condition variable.
        cond: CondId,
    },
    /// Wake the first waiter of a condition variable (`pthread_cond_signal`),
    /// or every waiter (`pthread_cond_broadcast`). Does not block.
    CondSignal {
        /// The condition variable.
        cond: CondId,
        /// Wake all waiters.
        all: bool,
    },
    /// Take a post of a semaphore; while there is none, spin up to
    /// `spin_ns` of work (busy-waiting on the flag), then sleep until a post.
    SemWait {
        /// The semaphore.
        sem: SemId,
        /// Spin budget, ns of work (a busy-wait that never sleeps: very large).
        spin_ns: Ns,
    },
    /// Post a semaphore: release its first waiter (stop its spin or wake it),
    /// or keep the post for the next wait. Does not block.
    SemPost {
        /// The semaphore.
        sem: SemId,
    },
    /// Fork `task` (a task of the workload whose start is
    /// [`super::StartKind::Spawned`]): it is placed by the fork path from
    /// this CPU and inherits this task's `wakee_flips`. Does not block.
    Spawn {
        /// The task created.
        task: TaskId,
    },
    /// `sched_setaffinity` on itself: the task may run only on
    /// `Workload::masks[mask]` (intersected with the machine and the run's
    /// cpuset; an empty result is refused as the kernel does, EINVAL, and
    /// the task keeps its mask). If its CPU is no longer allowed, it is
    /// moved at once to an allowed one, as the stopper does.
    SetAffinity {
        /// Index into `Workload::masks`.
        mask: u32,
    },
    /// `sched_yield`: the class's `yield_task`, then `schedule()`; the task
    /// stays runnable and may be picked again at once.
    Yield,
    /// `sched_setattr` on itself: a new policy with `priority`, the RT
    /// priority (1..=99) for SCHED_FIFO/RR and the nice value (-20..=19)
    /// otherwise. The task may change class (fair <-> RT); the classes see
    /// it through `switched_from`/`switched_to` or `prio_changed`.
    SetScheduler {
        /// The new policy.
        policy: super::SchedPolicy,
        /// RT priority or nice, as above.
        priority: i32,
    },
    /// Record a workload-level event for metrics (request start/end ...).
    Mark {
        /// What happened.
        kind: MarkKind,
        /// A value (request id, latency origin ...).
        value: u64,
    },
    /// Terminate.
    Exit,
}

/// Workload-level events that workload metrics are computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum MarkKind {
    /// A request started; `value` is its start time (ns).
    RequestStart,
    /// A request finished; `value` is its start time (ns), so latency = now - value.
    RequestDone,
    /// A unit of work (a chunk, a loop) finished; `value` counts units.
    WorkDone,
    /// A task came back from a wait on which the benchmark measures its own
    /// wakeup latency; `value` is the benchmark's start timestamp (ns), taken
    /// by whichever task the benchmark takes it in (schbench: the waker, once
    /// per wake batch), so latency = now - value.
    WakeDone,
}

/// What the engine tells a program when stepping it.
#[derive(Clone, Copy, Debug)]
pub struct ProgCtx {
    /// Current simulated time.
    pub now: Ns,
    /// The task being stepped.
    pub task: TaskId,
    /// The message received by the previous `Recv`, if the previous action was one.
    pub msg: Option<u64>,
    /// Time the previous `Wait` or `Recv` was satisfied (the waker's `ttwu`), if it blocked.
    pub woken_at: Option<Ns>,
}
