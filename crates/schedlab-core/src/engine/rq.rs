//! Per-CPU runqueue state (`struct rq` and the parts of `struct cfs_rq` the
//! placement code reads), per-domain balancing state, and the LLC's shared
//! state (`struct sched_domain_shared`).

use crate::fair::eevdf::{CfsRq, EevdfParams};
use crate::ids::{Ns, TaskId, NSEC_PER_MSEC};
use crate::pelt::{RemovedLoad, RqClockPelt, SchedAvg};

pub use crate::tunables::SYSCTL_SCHED_MIGRATION_COST_NS;

/// Balancing state of one CPU at one domain level (the kernel keeps these in
/// each CPU's copy of `struct sched_domain`).
#[derive(Clone, Debug)]
pub struct SdRuntime {
    /// Current `balance_interval`, ms (grows when balanced, reset on
    /// imbalance). Written only through `Sim::set_balance_interval_ms`,
    /// which keeps `interval_ns` in step.
    pub balance_interval_ms: u32,
    /// `get_sd_balance_interval(sd, cpu_busy)` in ns for `balance_interval_ms`,
    /// not busy (`[0]`) and busy (`[1]`): computed when the interval changes
    /// (a few thousand times a run) instead of at every read (in every
    /// periodic and newly-idle pass, for every level: about 270,000 reads on
    /// the standard bench).
    pub interval_ns: [Ns; 2],
    /// `last_balance`, ns.
    pub last_balance: Ns,
    /// `nr_balance_failed`.
    pub nr_balance_failed: u32,
    /// `max_newidle_lb_cost`, ns.
    pub max_newidle_lb_cost: Ns,
    /// `last_decay_max_lb_cost`, ns.
    pub last_decay_max_lb_cost: Ns,
    /// NI_RANDOM: `newidle_call` counter.
    pub newidle_call: u32,
    /// NI_RANDOM: `newidle_success` counter.
    pub newidle_success: u32,
    /// NI_RANDOM: `newidle_ratio`, out of 1024.
    pub newidle_ratio: u32,
    /// NI_RATE: `newidle_stamp`, when `newidle_ratio` was last recomputed, ns.
    pub newidle_stamp: Ns,
}

impl SdRuntime {
    /// Fresh state for a domain whose `min_interval` is `min_interval_ms`.
    pub fn new(min_interval_ms: u32) -> Self {
        SdRuntime {
            balance_interval_ms: min_interval_ms,
            // Set by `Sim::build` once the tick and the domains are known.
            interval_ns: [0; 2],
            last_balance: 0,
            nr_balance_failed: 0,
            max_newidle_lb_cost: 0,
            last_decay_max_lb_cost: 0,
            // Initial NI_RANDOM counters as in sd_init (KERNEL.md): calls 512,
            // successes 256, ratio 512.
            newidle_call: 512,
            newidle_success: 256,
            newidle_ratio: 512,
            newidle_stamp: 0,
        }
    }
}

/// One CPU's runqueue.
#[derive(Clone, Debug)]
pub struct Rq {
    /// The fair runqueue (EEVDF).
    pub cfs: CfsRq,
    /// `cfs_rq->avg`: PELT of the whole fair runqueue, blocked load included.
    pub cfs_avg: SchedAvg,
    /// `cfs_rq->removed`: load of tasks that left, folded in at the next update.
    pub removed: RemovedLoad,
    /// `rq->avg_rt`: RT pressure (no RT class yet: stays 0).
    pub rt_avg: SchedAvg,
    /// `rq->avg_irq`: IRQ pressure (not modelled yet: stays 0).
    pub irq_avg: SchedAvg,
    /// The PELT clock.
    pub clock_pelt: RqClockPelt,
    /// `rq->clock`: when the clocks were last updated, ns.
    pub clock: Ns,
    /// Whether a task was running at that update.
    pub clock_running: bool,
    /// `clock` when it is the current time (not 0) with `clock_running`
    /// still matching `curr`, else `Ns::MAX`: `update_rq_clock`'s test is
    /// one comparison with now (about 1.2 million a standard bench).
    /// `update_rq_clock` sets it; a switch between a task and idle (or
    /// any write of `curr` that changes `curr.is_some()`) resets it.
    pub clock_stamp: Ns,
    /// IRQ time spent on this CPU (`cpu_irqtime`), ns: handlers add to it
    /// when they return.
    pub irq_time: Ns,
    /// `rq->prev_irq_time`: the part of `irq_time` already taken out of
    /// `clock_task`, ns.
    pub prev_irq_time: Ns,
    /// `rq->curr` (`None` = the idle task).
    pub curr: Option<TaskId>,
    /// `rq->nr_running`: tasks queued here in every class, curr and delayed
    /// fair entities included, as the kernel counts them (readers that want
    /// runnable tasks subtract the delayed ones, `cfs_h_nr_delayed`).
    pub nr_running: u32,
    /// `rq->ttwu_pending`: queued remote wakeups not yet enqueued.
    pub ttwu_pending: u32,
    /// `rq->misfit_task_load`, set by `update_misfit_status`.
    pub misfit_task_load: u64,
    /// `rq->cpu_capacity` (`capacity_of`), refreshed by `update_cpu_capacity`.
    pub cpu_capacity: u32,
    /// `arch_scale_cpu_capacity(cpu)` (`Machine::capacity_orig`, constant
    /// once the machine is built), copied here for `update_rq_clock`, which
    /// scales every PELT clock step by it: one field of the runqueue it
    /// already holds instead of two table lookups (about 237,000 updates a
    /// standard bench).
    pub capacity_orig: u32,
    /// `rq->idle_stamp`: when the CPU went newly idle (0 = not idle).
    pub idle_stamp: Ns,
    /// `rq->avg_idle`: EWMA (1/8) of idle durations, ns.
    pub avg_idle: Ns,
    /// `rq->max_idle_balance_cost`, ns.
    pub max_idle_balance_cost: Ns,
    /// SIS_PROP (v5.12..v5.19): the jiffy `wake_avg_idle` was last set or halved.
    pub wake_stamp: u64,
    /// SIS_PROP: the idle time the wakeups of this CPU may still spend
    /// scanning, ns (half of `avg_idle` at a wakeup, halved every jiffy,
    /// reduced by each scan's cost).
    pub wake_avg_idle: Ns,
    /// SIS_PROP: `sd_llc->avg_scan_cost` as seen by this CPU, ns.
    pub avg_scan_cost: Ns,
    /// `rq->next_balance`, ns.
    pub next_balance: Ns,
    /// Per domain level of this CPU, bottom-up: balancing state.
    pub sd: Vec<SdRuntime>,
    /// NOHZ: the tick is stopped (idle).
    pub tick_stopped: bool,
    /// `need_resched` is set.
    pub need_resched: bool,
    /// The idle state entered (index into the core type's states), while idle.
    pub idle_state: Option<u8>,
    /// The CPU cannot run anything before this time (exit latency), ns.
    pub ready_at: Ns,
    /// Generation of the current run segment; a stale `RunDone` is ignored.
    pub run_gen: u64,
    /// Generation of the tick; a stale `Tick` is ignored.
    pub tick_gen: u64,
    /// Start of the current run segment, ns.
    pub seg_start: Ns,
    /// Speed of the current segment, work units per ns (1024 = full speed).
    pub seg_speed: u64,
    /// A run segment is in progress (a `RunDone` for its end is queued).
    pub seg_active: bool,
    /// `rq->uclamp[]` and `rq->uclamp_flags` (`engine::uclamp`).
    pub uclamp: super::uclamp::RqUclamp,
    /// In `Rqs`'s list of CPUs changed since the last take (`engine::rqs`,
    /// the only writer). Kept here, not in a vector of flags beside the
    /// runqueues, so that noting a mutable access tests a byte of the
    /// runqueue just indexed: no second vector's pointer, length and bounds
    /// check on each of the ~3 million tracked accesses of the standard bench.
    pub(super) noted_changed: bool,
}

impl Rq {
    /// An idle runqueue for a CPU of capacity `capacity` with `levels` domain levels.
    pub fn new(capacity: u32, sd: Vec<SdRuntime>, params: EevdfParams) -> Self {
        Rq {
            cfs: CfsRq::new(params),
            cfs_avg: SchedAvg::default(),
            removed: RemovedLoad::default(),
            rt_avg: SchedAvg::default(),
            irq_avg: SchedAvg::default(),
            clock_pelt: RqClockPelt::default(),
            clock: 0,
            clock_running: false,
            clock_stamp: Ns::MAX,
            irq_time: 0,
            prev_irq_time: 0,
            curr: None,
            nr_running: 0,
            ttwu_pending: 0,
            misfit_task_load: 0,
            cpu_capacity: capacity,
            capacity_orig: capacity,
            idle_stamp: 0,
            // The kernel starts avg_idle at 2 * sysctl_sched_migration_cost.
            avg_idle: 2 * SYSCTL_SCHED_MIGRATION_COST_NS,
            max_idle_balance_cost: SYSCTL_SCHED_MIGRATION_COST_NS,
            wake_stamp: 0,
            wake_avg_idle: 2 * SYSCTL_SCHED_MIGRATION_COST_NS,
            avg_scan_cost: 0,
            next_balance: 0,
            sd,
            tick_stopped: true,
            need_resched: false,
            idle_state: None,
            ready_at: 0,
            run_gen: 0,
            tick_gen: 0,
            seg_start: 0,
            seg_speed: 1024,
            seg_active: false,
            uclamp: super::uclamp::RqUclamp::default(),
            noted_changed: false,
        }
    }

    /// `idle_cpu()`: running the idle task, nothing queued, no wakeup pending.
    #[inline]
    pub fn idle_cpu(&self) -> bool {
        self.curr.is_none() && self.nr_running == 0 && self.ttwu_pending == 0
    }

    /// `cpu_load()`: the fair runqueue's `load_avg` (blocked load included).
    #[inline]
    pub fn cpu_load(&self) -> u64 {
        self.cfs_avg.load_avg
    }

    /// `cpu_runnable()`.
    #[inline]
    pub fn cpu_runnable(&self) -> u64 {
        self.cfs_avg.runnable_avg
    }
}

/// One millisecond, for balance intervals.
pub const MSEC: Ns = NSEC_PER_MSEC;
