//! Per-task state of the engine: the program, its scheduling state, its PELT
//! averages and the bookkeeping placement decisions read (`wakee_flips`,
//! `recent_used_cpu`, cache warmth). The fair entity (`p->se`) is the fair
//! class's, in its own table (`fair::state::FairState`), so the runqueue
//! code can borrow it alongside tasks; `on_rq` here is the task-level
//! `p->on_rq` the core keeps and every class (the peers too) reads.

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns, TaskId};
use crate::pelt::SchedAvg;
use crate::sim::Rng;
use crate::workload::{Action, Program};

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Not started yet.
    New,
    /// On a runqueue (queued or running), or on its way to one (a queued
    /// remote wakeup: `ttwu_pending`).
    Runnable,
    /// Blocked in an action it retries when woken.
    Blocked,
    /// Exited.
    Dead,
}

/// One task.
#[derive(Clone, Debug)]
pub struct Task {
    /// Id.
    pub id: TaskId,
    /// `comm`.
    pub name: String,
    /// Behaviour.
    pub program: Program,
    /// Its random stream.
    pub rng: Rng,
    /// Life state.
    pub state: TaskState,
    /// `task_cpu(p)`: the runqueue it is on, or was last on.
    pub cpu: CpuId,
    /// `p->cpus_ptr`.
    pub allowed: CpuMask,
    /// Soft affinity (`cpus_preferred`), a non-empty subset of `allowed`.
    pub preferred: Option<CpuMask>,
    /// `p->nr_cpus_allowed`.
    pub nr_cpus_allowed: u32,
    /// `p->max_allowed_capacity`: the largest original capacity among the
    /// allowed CPUs.
    pub max_allowed_capacity: u32,
    /// `is_per_cpu_kthread(p)`.
    pub kthread: bool,
    /// Nice value.
    pub nice: i32,
    /// `p->policy`.
    pub policy: crate::workload::SchedPolicy,
    /// `p->rt_priority` (1..=99 for RT policies, 0 otherwise).
    pub rt_priority: u32,
    /// `p->prio`: 0..=98 for RT tasks (99 - rt_priority), 100..=139 for
    /// the others (120 + nice).
    pub prio: i32,
    /// `p->sched_class`.
    pub class: crate::class::SchedClass,
    /// `p->on_rq`: queued on a runqueue of its class (running included;
    /// a delayed fair entity too).
    pub on_rq: bool,
    /// Background noise: does not keep the run alive.
    pub noise: bool,
    /// PELT averages of the entity (`p->se.avg`).
    pub avg: SchedAvg,
    /// `p->wakee_flips`.
    pub wakee_flips: u32,
    /// `p->wakee_flip_decay_ts`, ns.
    pub wakee_flip_decay_ts: Ns,
    /// `p->last_wakee`.
    pub last_wakee: Option<TaskId>,
    /// `p->recent_used_cpu`.
    pub recent_used_cpu: CpuId,
    /// Work left in the current action, in work units (ns of work x 1024 at
    /// speed 1024): see `cost.rs`.
    pub work_left_wu: u64,
    /// An action to retry when the task next runs (it blocked in it), or to
    /// start (a compute that has not begun).
    pub pending: Option<Action>,
    /// The action in progress is a barrier spin on this barrier.
    pub spinning_on: Option<u32>,
    /// Message received by the last `Recv`.
    pub msg: Option<u64>,
    /// When the last wakeup of this task was issued.
    pub woken_at: Option<Ns>,
    /// Pending futex-style wakes (`Action::Wake` before `Action::Wait`).
    pub wake_tokens: u32,
    /// The task waited for room in its pending channel write (`pipe_write`'s
    /// `wake_next_writer` once it has written).
    pub chan_waited: bool,
    /// `p->in_iowait`: the task blocked in an I/O wait (`Action::IoSleep`,
    /// `io_schedule`) and has not run since; its enqueue asks schedutil for
    /// an iowait boost.
    pub in_iowait: bool,
    /// Timer generation: a `Timer` event with an older generation is stale.
    pub timer_gen: u64,
    /// Cache footprint, KiB.
    pub footprint_kib: u32,
    /// CPU whose caches hold the task's footprint (where it last ran).
    pub cache_cpu: CpuId,
    /// Core-cache pressure counter of `cache_cpu`'s core when the task left it.
    pub core_pressure_at_leave: u64,
    /// LLC pressure counter of `cache_cpu`'s LLC when the task left it.
    pub llc_pressure_at_leave: u64,
    /// Whether it has run at all (cold start pays a full refill from memory).
    pub has_run: bool,
    /// When it last stopped running (`se.exec_start` at switch-out), for `task_hot`.
    pub last_ran_ns: Ns,
    /// When it became runnable-waiting (for wasted-idle bookkeeping), ns.
    pub runnable_since: Ns,
    /// `p->uclamp_req[]` and `p->uclamp[]` (`engine::uclamp`).
    pub uclamp: super::uclamp::TaskUclamp,
}

impl Task {
    /// The task's `util_avg`.
    #[inline]
    pub fn util(&self) -> u64 {
        self.avg.util_avg
    }
}
