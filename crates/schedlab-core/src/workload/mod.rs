//! Workloads: sets of task programs built from a spec, independent of any
//! policy (a workload never names a policy).
//!
//! A spec is `family:key=value,...` (`hackbench:groups=4,fds=20`) or a TOML
//! table with `family = "..."`; `build_workload` turns it into a [`Workload`].
//! Each family (see README.md in this directory) is a file of task programs.

pub mod android;
pub mod chameneos;
pub mod compose;
pub mod dbquery;
pub mod dist;
pub mod hackbench;
pub mod irq;
pub mod ksoftirqd;
pub mod kvcache;
pub mod nas;
pub mod noise;
pub(crate) mod omp;
pub mod ompbarrier;
pub mod ops;
pub mod overcommit;
pub mod pgbench;
pub mod pipe;
pub mod program;
pub mod rtapp;
pub mod schbench;
pub(crate) mod sched_keys;
pub mod sieve;
pub mod spec;
pub mod stall;
#[cfg(test)]
pub(crate) mod testdrv;
pub mod usertoml;
pub mod video;
pub(crate) mod wakee_flips;
pub mod workqueue;

use crate::cpumask::CpuMask;
use crate::ids::Ns;
use crate::sim::Rng;
pub use compose::{build_workloads, compose, Composed, IdOffset, WorkloadPart};
pub use dist::Dist;
pub use program::{Action, BarrierId, ChanId, CondId, MarkKind, ProgCtx, SemId};
pub use spec::{build_workload, workload_families, FamilyDoc, ParamDoc};

/// The index of `x` in `list`, added at the end if absent: named
/// resources (mutexes, conditions, barriers) and CPU masks by first use.
pub(crate) fn intern<T: PartialEq>(list: &mut Vec<T>, x: T) -> u32 {
    match list.iter().position(|y| *y == x) {
        Some(i) => i as u32,
        None => {
            list.push(x);
            list.len() as u32 - 1
        }
    }
}

/// A task program. One variant per program kind; stepping is a `match`.
#[derive(Clone, Debug)]
pub enum Program {
    /// Runs a fixed list of actions once, then exits. For tests and hand-built scenarios.
    Script(Script),
    /// A hackbench sender.
    HackbenchSender(hackbench::Sender),
    /// A hackbench receiver.
    HackbenchReceiver(hackbench::Receiver),
    /// A schbench message thread.
    SchbenchMessage(schbench::Message),
    /// A schbench worker thread.
    SchbenchWorker(schbench::Worker),
    /// The work-queue manager.
    WorkqueueManager(workqueue::Manager),
    /// A work-queue worker.
    WorkqueueWorker(workqueue::Worker),
    /// A sieve thread.
    Sieve(sieve::Sieve),
    /// `ksoftirqd/N`, created by the engine for CPUs that take interrupts.
    Ksoftirqd(ksoftirqd::Ksoftirqd),
    /// A periodic noise task (rt-periodic, kworkers).
    Periodic(noise::Periodic),
    /// A kv-cache server thread.
    KvServer(kvcache::Server),
    /// A kv-cache load-generator thread.
    KvClient(kvcache::Client),
    /// The chameneos broker.
    ChameneosBroker(chameneos::Broker),
    /// A program of operations (user programs, rt-app files, families
    /// written in the primitives).
    Ops(ops::Ops),
}

impl Program {
    /// The next action of the task.
    #[inline]
    pub fn step(&mut self, ctx: &ProgCtx, rng: &mut Rng) -> Action {
        match self {
            Program::Script(s) => s.step(ctx, rng),
            Program::HackbenchSender(p) => p.step(ctx, rng),
            Program::HackbenchReceiver(p) => p.step(ctx, rng),
            Program::SchbenchMessage(p) => p.step(ctx, rng),
            Program::SchbenchWorker(p) => p.step(ctx, rng),
            Program::WorkqueueManager(p) => p.step(ctx, rng),
            Program::WorkqueueWorker(p) => p.step(ctx, rng),
            Program::Sieve(p) => p.step(ctx, rng),
            Program::Ksoftirqd(p) => p.step(ctx, rng),
            Program::Periodic(p) => p.step(ctx, rng),
            Program::Ops(p) => p.step(ctx, rng),
            Program::ChameneosBroker(p) => p.step(ctx, rng),
            Program::KvServer(p) => p.step(ctx, rng),
            Program::KvClient(p) => p.step(ctx, rng),
        }
    }
}

/// A fixed sequence of actions, optionally repeated.
#[derive(Clone, Debug)]
pub struct Script {
    /// The actions.
    pub actions: Vec<Action>,
    /// How many times to run the sequence (0 = forever).
    pub repeat: u64,
    pc: usize,
    done: u64,
}

impl Script {
    /// A script running `actions` `repeat` times (0 = forever), then exiting.
    pub fn new(actions: Vec<Action>, repeat: u64) -> Self {
        Script { actions, repeat, pc: 0, done: 0 }
    }

    fn step(&mut self, _ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        if self.actions.is_empty() || (self.repeat != 0 && self.done >= self.repeat) {
            return Action::Exit;
        }
        let a = self.actions[self.pc];
        self.pc += 1;
        if self.pc == self.actions.len() {
            self.pc = 0;
            self.done += 1;
        }
        a
    }
}

/// How a task comes into existence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartKind {
    /// Forked at `start_ns` by a parent running on `parent_cpu`: placed by the
    /// fork path (`select_task_rq` with WF_FORK), woken with `wake_up_new_task`.
    Fork {
        /// CPU the parent runs on.
        parent_cpu: u32,
    },
    /// Already exists and is woken at `start_ns` on a given previous CPU (a
    /// long-lived daemon, a kthread bound to a CPU).
    Wake {
        /// `task_cpu(p)` before the first wakeup.
        prev_cpu: u32,
    },
    /// Created during the run by another task's [`Action::Spawn`] (a fork
    /// or `pthread_create` at a point of its program), from the CPU that
    /// task runs on; until then it does not exist (`start_ns` is unused).
    Spawned,
}

/// One task of a workload.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    /// `comm`, as shown in traces (at most 15 characters are kept by the kernel).
    pub name: String,
    /// Its behaviour.
    pub program: Program,
    /// Nice value, -20..=19.
    pub nice: i32,
    /// CPUs it may run on (`cpus_ptr`); `None` = all.
    pub allowed: Option<CpuMask>,
    /// Soft affinity (`cpus_preferred`): CPUs it should run on while one of
    /// them is idle, a subset of `allowed`; `None` = no preference. Read
    /// only with the `soft_affinity` feature.
    pub preferred: Option<CpuMask>,
    /// Cache footprint, KiB: what must be refilled after a migration.
    pub footprint_kib: u32,
    /// When it starts, ns.
    pub start_ns: Ns,
    /// How it starts.
    pub start: StartKind,
    /// Whether it is a per-CPU kernel thread (`is_per_cpu_kthread`).
    pub kthread: bool,
    /// Scheduling policy (`sched_setscheduler`): decides the task's class.
    pub policy: SchedPolicy,
    /// RT priority 1..=99 for `Fifo`/`Rr` (higher runs first), 0 otherwise.
    pub rt_priority: u32,
    /// Background activity (noise: kworkers, RT daemons): it never ends by
    /// itself, does not keep the run alive, and has no metric of its own.
    pub noise: bool,
    /// `p->wakee_flips` at birth. A forked task inherits its parent's
    /// (`dup_task_struct` copies the task and `__sched_fork` leaves
    /// `wakee_flips` alone), so every thread of a benchmark starts with its
    /// launcher's count, and a task that never wakes anyone keeps it. That
    /// count decides `wake_wide()` for its wakeups; see the `parent_wakee_flips`
    /// key (one count for all, or one per task: `wakee_flips.rs`). 0 for
    /// tasks not forked by a workload's parent.
    pub wakee_flips: u32,
    /// `sched_setattr`'s utilisation clamps, when asked for (`uclamp_min=`,
    /// `uclamp_max=`, rt-app's `util_min`/`util_max`).
    pub uclamp: UclampReq,
}

/// A task's requested utilisation clamps (`sched_attr.sched_util_min/max`),
/// 0..=1024; `None` = not asked for (the default applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UclampReq {
    /// `sched_util_min`.
    pub min: Option<u32>,
    /// `sched_util_max`.
    pub max: Option<u32>,
}

impl UclampReq {
    /// Whether any clamp was asked for.
    pub fn is_set(&self) -> bool {
        self.min.is_some() || self.max.is_some()
    }
}

/// A task's scheduling policy, as `sched_setscheduler` names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum SchedPolicy {
    /// SCHED_OTHER (SCHED_NORMAL): the fair class (or the peer replacing it).
    #[default]
    Normal,
    /// SCHED_BATCH: fair class, never preempts on wakeup.
    Batch,
    /// SCHED_IDLE: fair class with the minimum weight.
    Idle,
    /// SCHED_FIFO: the RT class, runs until it blocks or a higher priority preempts.
    Fifo,
    /// SCHED_RR: the RT class with a round-robin time slice.
    Rr,
}

impl SchedPolicy {
    /// Runs in the RT class.
    #[inline]
    pub fn is_rt(self) -> bool {
        matches!(self, SchedPolicy::Fifo | SchedPolicy::Rr)
    }
}

/// A source of interrupts on a set of CPUs (a NIC queue, a timer, a storage
/// controller). Each CPU of `cpus` takes its own stream of interrupts; each
/// interrupt steals `hardirq` then `softirq` time from whatever runs there,
/// accounted as IRQ time (IRQ_TIME_ACCOUNTING) and, past the kernel's softirq
/// limits, deferred to that CPU's `ksoftirqd`.
#[derive(Clone, Debug)]
pub struct IrqSpec {
    /// Name shown in traces (`eth0-rx`).
    pub name: String,
    /// CPUs it fires on, each independently.
    pub cpus: CpuMask,
    /// Time between two interrupts on one CPU.
    pub interval: Dist,
    /// Hard-interrupt handler time.
    pub hardirq: Dist,
    /// Softirq (bottom-half) time raised by each interrupt.
    pub softirq: Dist,
    /// Whether its time is IRQ time, kept out of the task clock
    /// (CONFIG_IRQ_TIME_ACCOUNTING), or charged to the interrupted task (a
    /// `stall`: a vCPU the host descheduled, with no steal time).
    pub accounted: bool,
    /// Fires only while exactly this many CPUs of the machine run a task,
    /// this one among them (0: always). A `stall` source per count of busy
    /// vCPUs: an overcommitted host stalls a guest's vCPUs more the more of
    /// them are busy, and a halted vCPU is not descheduled but halted.
    pub busy_cpus: u32,
}

/// A benchmark task forked at t=0 by a parent on CPU 0 (the benchmark's main
/// thread), so the kernel's fork placement spreads the tasks; nice 0, any CPU.
pub(crate) fn forked_task(name: &str, program: Program, footprint_kib: u32) -> TaskSpec {
    TaskSpec {
        name: name.to_string(),
        program,
        nice: 0,
        allowed: None,
        preferred: None,
        footprint_kib,
        start_ns: 0,
        start: StartKind::Fork { parent_cpu: 0 },
        kthread: false,
        policy: SchedPolicy::Normal,
        rt_priority: 0,
        noise: false,
        wakee_flips: 0,
        uclamp: Default::default(),
    }
}

/// A per-CPU kernel thread bound to `cpu` (`kthread_create_on_cpu`:
/// kworkers, ksoftirqd): SCHED_OTHER at nice 0, marked per-CPU kthread for
/// `select_idle_sibling`, background noise, woken first on its CPU at t=0.
pub(crate) fn per_cpu_kthread(name: String, program: Program, cpu: crate::ids::CpuId, footprint_kib: u32) -> TaskSpec {
    TaskSpec {
        name,
        program,
        nice: 0,
        allowed: Some(CpuMask::from_cpus([cpu])),
        preferred: None,
        footprint_kib,
        start_ns: 0,
        start: StartKind::Wake { prev_cpu: cpu.0 },
        kthread: true,
        policy: SchedPolicy::Normal,
        rt_priority: 0,
        noise: true,
        wakee_flips: 0,
        uclamp: Default::default(),
    }
}

/// What a channel is: when its writer blocks and whom a read wakes (see
/// `engine/ipc.rs` and the engine README, "Channels").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanKind {
    /// A plain bounded queue (futex-backed queues, sockets schedlab does not
    /// model, user-sized buffers): a writer blocks when it holds `capacity`
    /// messages, and each read wakes one blocked writer without WF_SYNC.
    Queue {
        /// Messages it holds before a writer blocks.
        capacity: u32,
    },
    /// A pipe (fs/pipe.c): a ring of `max_usage` pages (`PIPE_DEF_BUFFERS`
    /// = 16 by default) into which writes of `msg_bytes` merge while the
    /// last page has room; full by slots (`pipe_full`).
    Pipe {
        /// Ring slots (`pipe->max_usage`).
        max_usage: u32,
        /// Bytes of one write, 1 ..= `PAGE_SIZE`.
        msg_bytes: u32,
    },
    /// The sending side of a unix stream socket (net/unix/af_unix.c): a
    /// writer blocks while the queued skbs' truesize reaches `sndbuf`, and is
    /// woken, with every other blocked writer, once they drain to a quarter
    /// of it (`unix_writable`).
    UnixStream {
        /// `sk->sk_sndbuf`, bytes.
        sndbuf: u32,
        /// `skb->truesize` of one message, bytes (at least 1).
        truesize: u32,
    },
}

impl Default for ChanKind {
    fn default() -> Self {
        ChanKind::Queue { capacity: 1 }
    }
}

/// A channel the workload declares.
#[derive(Clone, Debug)]
pub struct ChanSpec {
    /// What it is.
    pub kind: ChanKind,
}

impl ChanSpec {
    /// A plain bounded queue of `capacity` messages.
    pub fn queue(capacity: u32) -> Self {
        ChanSpec { kind: ChanKind::Queue { capacity } }
    }

    /// A pipe of `max_usage` pages written `msg_bytes` at a time (clamped to
    /// 1 ..= `PAGE_SIZE`; larger writes span pages, which is not modelled).
    pub fn pipe(max_usage: u32, msg_bytes: u32) -> Self {
        let msg_bytes = msg_bytes.clamp(1, crate::engine::ipc::PAGE_SIZE);
        ChanSpec { kind: ChanKind::Pipe { max_usage: max_usage.max(1), msg_bytes } }
    }

    /// A unix stream socket with send buffer `sndbuf` and skbs of `truesize`.
    pub fn unix_stream(sndbuf: u32, truesize: u32) -> Self {
        ChanSpec { kind: ChanKind::UnixStream { sndbuf, truesize: truesize.max(1) } }
    }

    /// Messages it holds before a writer blocks: a pipe's pages times the
    /// writes merged into each, a socket's writes until its queued truesize
    /// reaches the send buffer (the write that crosses it still goes).
    pub fn capacity(&self) -> u64 {
        match self.kind {
            ChanKind::Queue { capacity } => capacity as u64,
            ChanKind::Pipe { max_usage, msg_bytes } => {
                max_usage as u64 * (crate::engine::ipc::PAGE_SIZE / msg_bytes).max(1) as u64
            }
            ChanKind::UnixStream { sndbuf, truesize } => (sndbuf as u64).div_ceil(truesize as u64).max(1),
        }
    }
}

/// A barrier.
#[derive(Clone, Debug)]
pub struct BarrierSpec {
    /// Tasks that must arrive to release it.
    pub parties: u32,
}

impl Workload {
    /// A workload of `tasks` judged by `primary`, with no shared objects,
    /// no interrupts, no duration (it ends when its tasks exit) and no
    /// warm-up; builders set what they need on top (`..Workload::of(..)`).
    pub fn of(tasks: Vec<TaskSpec>, primary: PrimaryMetric) -> Self {
        Workload {
            name: String::new(),
            tasks,
            chans: Vec::new(),
            barriers: Vec::new(),
            conds: 0,
            sems: Vec::new(),
            masks: Vec::new(),
            irqs: Vec::new(),
            host: None,
            duration_ns: None,
            warmup_ns: 0,
            primary,
        }
    }
}

/// The metric a workload is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PrimaryMetric {
    /// Time until every task has exited, seconds; lower is better.
    CompletionTime,
    /// Requests completed per second; higher is better.
    Throughput,
}

/// A built workload: tasks, the objects they share, and how to judge it.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Spec string it was built from (normalised).
    pub name: String,
    /// The tasks, indexed by `TaskId`.
    pub tasks: Vec<TaskSpec>,
    /// Channels, indexed by `ChanId`.
    pub chans: Vec<ChanSpec>,
    /// Barriers, indexed by `BarrierId`.
    pub barriers: Vec<BarrierSpec>,
    /// Number of condition variables (`CondId` 0..conds).
    pub conds: u32,
    /// Semaphores (`SemId` i), by their initial count.
    pub sems: Vec<u64>,
    /// CPU masks that [`Action::SetAffinity`] names by index.
    pub masks: Vec<CpuMask>,
    /// Interrupt sources.
    pub irqs: Vec<IrqSpec>,
    /// The host that time-shares the machine's CPUs as vCPUs (the
    /// `overcommit` family), if any.
    pub host: Option<overcommit::HostSpec>,
    /// Stop the run at this time (a benchmark's runtime); `None` = when all
    /// tasks have exited.
    pub duration_ns: Option<Ns>,
    /// Time after which metrics count (warm-up excluded), ns.
    pub warmup_ns: Ns,
    /// The primary metric.
    pub primary: PrimaryMetric,
}
