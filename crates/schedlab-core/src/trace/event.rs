//! The event stream: kernel-named scheduler events plus schedlab's own
//! placement-decision events. The engine emits these; the ftrace reader
//! produces the same type from a real trace; metrics consume them, so one code
//! path measures both (DESIGN.md, "Events and metrics").

use crate::ids::{CpuId, Ns, TaskId};
use crate::workload::MarkKind;

/// State of the task switched out, as in `sched_switch`'s `prev_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PrevState {
    /// Still runnable (preempted): `R`.
    Runnable,
    /// Blocked: `S`.
    Sleeping,
    /// Exited: `X`.
    Dead,
}

/// Why a task migrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MigrateReason {
    /// Placed on another CPU at wakeup.
    Wakeup,
    /// Placed at fork.
    Fork,
    /// Pulled by load balancing.
    Balance,
}

/// Which rule of the wakeup path chose the CPU (schedlab's own event; the
/// kernel has no tracepoint for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum PlacePath {
    /// `select_idle_sibling`: the target was idle.
    Target,
    /// `select_idle_sibling`: prev was idle and shares the LLC.
    Prev,
    /// The per-CPU kthread wakee stacking rule.
    KthreadStack,
    /// `recent_used_cpu` was idle.
    Recent,
    /// `select_idle_capacity` (asymmetric capacity).
    Capacity,
    /// `select_idle_smt`.
    IdleSmt,
    /// `select_idle_core` found a whole idle core.
    IdleCore,
    /// `select_idle_cpu` found an idle CPU.
    IdleCpu,
    /// Nothing idle: the target.
    Fallback,
    /// Slow path (`sched_balance_find_dst_cpu`).
    Slow,
    /// A peer policy's own pick.
    Policy,
    /// Only one CPU was allowed.
    Forced,
}

impl PlacePath {
    /// Every path, in reporting order.
    pub const ALL: [PlacePath; 12] = [
        PlacePath::Target,
        PlacePath::Prev,
        PlacePath::KthreadStack,
        PlacePath::Recent,
        PlacePath::Capacity,
        PlacePath::IdleSmt,
        PlacePath::IdleCore,
        PlacePath::IdleCpu,
        PlacePath::Fallback,
        PlacePath::Slow,
        PlacePath::Policy,
        PlacePath::Forced,
    ];

    /// Lower-case name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            PlacePath::Target => "target",
            PlacePath::Prev => "prev",
            PlacePath::KthreadStack => "kthread_stack",
            PlacePath::Recent => "recent",
            PlacePath::Capacity => "idle_capacity",
            PlacePath::IdleSmt => "idle_smt",
            PlacePath::IdleCore => "idle_core",
            PlacePath::IdleCpu => "idle_cpu",
            PlacePath::Fallback => "fallback",
            PlacePath::Slow => "slow_path",
            PlacePath::Policy => "policy",
            PlacePath::Forced => "forced",
        }
    }
}

/// Kind of a load-balance pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BalanceKind {
    /// `sched_balance_newidle`.
    NewIdle,
    /// Periodic, from the tick.
    Periodic,
    /// NOHZ idle balance on behalf of tick-stopped CPUs.
    NohzIdle,
    /// Active balance (pushing a running task).
    Active,
}

/// The interrupt number with which a vCPU's wait for its host (the
/// `overcommit` family) is traced, as `irq_handler_entry`/`exit` named
/// `host`: no workload has that many interrupt sources. Not counted as
/// interrupt time (`irq_pct`).
pub const HOST_IRQ: u16 = u16::MAX;

/// One event. Keep it small: the engine emits tens of millions.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Event {
    /// `sched_switch`.
    Switch {
        /// CPU.
        cpu: CpuId,
        /// Task switched out (`None` = idle).
        prev: Option<TaskId>,
        /// Its state.
        prev_state: PrevState,
        /// Task switched in (`None` = idle).
        next: Option<TaskId>,
    },
    /// `sched_waking`: `ttwu` started, on the waker's CPU.
    Waking {
        /// Wakee.
        task: TaskId,
        /// CPU doing the wakeup.
        cpu: CpuId,
    },
    /// `sched_wakeup` / `sched_wakeup_new`: the task is on `cpu`'s runqueue.
    Wakeup {
        /// Wakee.
        task: TaskId,
        /// Its runqueue.
        cpu: CpuId,
        /// Whether this was `wake_up_new_task`.
        new: bool,
    },
    /// `sched_migrate_task`.
    Migrate {
        /// Task.
        task: TaskId,
        /// From.
        orig: CpuId,
        /// To.
        dest: CpuId,
        /// Why.
        reason: MigrateReason,
    },
    /// schedlab: a wakeup placement decision.
    Place {
        /// Wakee.
        task: TaskId,
        /// `prev_cpu`.
        prev: CpuId,
        /// The waker's CPU.
        waker_cpu: CpuId,
        /// Chosen CPU.
        cpu: CpuId,
        /// Rule that chose it.
        path: PlacePath,
        /// CPUs examined by the idle search.
        scanned: u32,
        /// `capacity_of(cpu)` of the chosen CPU when it was chosen (0 = not
        /// recorded, as in traces written before this field existed).
        capacity: u16,
    },
    /// schedlab: a load-balance pass finished.
    Balance {
        /// Balancing CPU.
        cpu: CpuId,
        /// Domain depth.
        depth: u8,
        /// Kind.
        kind: BalanceKind,
        /// Tasks moved.
        pulled: u32,
    },
    /// schedlab: `cpu` is newly idle and reads `rq->avg_idle`, its expected
    /// idle time, to decide how much newly-idle balancing it can afford
    /// (emitted once per `sched_balance_newidle` that looks at it).
    AvgIdle {
        /// CPU.
        cpu: CpuId,
        /// `rq->avg_idle`, ns.
        avg_idle_ns: Ns,
        /// Its cap at this moment, `2 * rq->max_idle_balance_cost`, ns.
        max_ns: Ns,
    },
    /// schedlab: a workload mark.
    Mark {
        /// Task.
        task: TaskId,
        /// Kind.
        kind: MarkKind,
        /// Value.
        value: u64,
    },
    /// `irq_handler_entry` / `irq_handler_exit`.
    Irq {
        /// CPU.
        cpu: CpuId,
        /// Interrupt number (schedlab: the source's index in the workload;
        /// [`HOST_IRQ`]: the vCPU waits for its host, `overcommit`).
        irq: u16,
        /// Entry (`true`) or exit.
        entry: bool,
    },
    /// `softirq_entry` / `softirq_exit` (run inline at interrupt exit).
    Softirq {
        /// CPU.
        cpu: CpuId,
        /// Entry (`true`) or exit.
        entry: bool,
    },
    /// `cpu_frequency`: the CPU's frequency changed (one event per CPU of
    /// the policy, as `cpufreq_notify_transition` writes them).
    CpuFrequency {
        /// CPU.
        cpu: CpuId,
        /// The new frequency, kHz (`state=`).
        khz: u32,
    },
    /// `cpu_idle`: the CPU entered idle state `state` (an index into its
    /// core type's idle states), or left idle (`None`, the kernel's
    /// `PWR_EVENT_EXIT`, written as 4294967295).
    CpuIdle {
        /// CPU.
        cpu: CpuId,
        /// The state entered, or `None` on exit.
        state: Option<u8>,
    },
    /// schedlab: `task` set its own policy (`sched_setattr`); `prio` is its
    /// new `p->prio`, which later sched_switch/sched_wakeup lines carry.
    SetScheduler {
        /// Task.
        task: TaskId,
        /// New policy.
        policy: crate::workload::SchedPolicy,
        /// New `p->prio`.
        prio: i32,
    },
    /// `sched_process_exit`.
    Exit {
        /// Task.
        task: TaskId,
    },
}

/// An event with its time.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TimedEvent {
    /// When, ns.
    pub time: Ns,
    /// What.
    pub ev: Event,
}
