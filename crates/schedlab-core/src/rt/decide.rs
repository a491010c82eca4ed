//! RT placement and balancing decisions (rt.c), each a pure function named
//! after the kernel function it models. State goes in through [`RtEnv`]
//! (per-CPU `rt_rq`s and running tasks, the root domain, the topology, task
//! affinities); a decision comes out; the engine moves tasks and sends
//! reschedules.
//!
//! # When the engine calls what (the kernel's triggers)
//!
//! - Wakeup and fork placement: [`select_task_rq_rt`].
//! - After enqueueing a woken RT task that does not preempt:
//!   [`task_woken_rt`] says whether to run `push_rt_tasks` at once.
//! - When a CPU switches in an RT task from another class or idle
//!   (`set_next_task_rt` with `first`), and when a task switches to RT while
//!   queued on an overloaded rq (`switched_to_rt`): a push callback runs
//!   after the switch (`rt_queue_push_tasks`, if the rq has pushable
//!   tasks): call [`push_rt_task`] until it stops returning `Push`.
//! - Before picking, when the previous task was RT (or DL) and is no longer
//!   queued and the rq's best RT level is now below it (`balance_rt` with
//!   [`need_pull_rt_task`]), and after a running task's priority drops
//!   (`prio_changed_rt`) or the last RT task leaves the class
//!   (`switched_from_rt`): [`pull_rt_task`].
//! - On wakeup preemption checks: [`wakeup_preempt_rt`].

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, TaskId};
use crate::rt::cpupri::RtRootDomain;
use crate::rt::lowest::{find_lock_lowest_rq, find_lowest_rq, lowest_mask_for_task, AnyDistribute};
use crate::rt::prio::{rt_prio, MAX_PRIO};
use crate::rt::rt_rq::{RtRq, TaskAffinity};
use crate::topology::domains::Domains;

/// What the RT class needs to know of the task running on a CPU
/// (`rq->curr` / `rq->donor`; schedlab has no proxy execution, so they are
/// one task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtCurr {
    /// Its kernel `prio`: 0..=98 RT, 100..=139 fair, [`MAX_PRIO`] idle.
    pub prio: i32,
    /// How many CPUs it may run on (`nr_cpus_allowed`).
    pub nr_cpus_allowed: u32,
}

impl RtCurr {
    /// The idle task (pinned, lowest priority).
    pub const IDLE: RtCurr = RtCurr { prio: MAX_PRIO, nr_cpus_allowed: 1 };
}

/// The state RT decisions read. Slices are indexed by CPU.
pub struct RtEnv<'a, T: TaskAffinity + ?Sized> {
    /// Each CPU's RT runqueue.
    pub rt_rqs: &'a [RtRq],
    /// Each CPU's running task.
    pub curr: &'a [RtCurr],
    /// cpupri and the overload mask.
    pub rd: &'a RtRootDomain,
    /// The sched domains (for `find_lowest_rq`).
    pub domains: &'a Domains,
    /// Task affinities.
    pub tasks: &'a T,
    /// `rt_task_fits_capacity(p, cpu)`, given only when
    /// `sched_asym_cpucap_active()` (asymmetric CPU capacities); `None`
    /// means every CPU fits.
    pub fits: Option<&'a dyn Fn(TaskId, CpuId) -> bool>,
}

impl<T: TaskAffinity + ?Sized> RtEnv<'_, T> {
    fn task_fits(&self, p: TaskId, cpu: CpuId) -> bool {
        self.fits.is_none_or(|f| f(p, cpu))
    }

    /// The kernel's `find_lowest_rq(p)` for task `p` of `prio` whose CPU is
    /// `task_cpu`, decided on `this_cpu`.
    pub fn find_lowest_rq_of(
        &self,
        p: TaskId,
        prio: i32,
        task_cpu: CpuId,
        this_cpu: CpuId,
        cursor: &mut AnyDistribute,
    ) -> Option<CpuId> {
        let fits = self.fits.map(|f| move |c: CpuId| f(p, c));
        let fits_dyn = fits.as_ref().map(|f| f as &dyn Fn(CpuId) -> bool);
        let mask = lowest_mask_for_task(&self.rd.cpupri, prio, self.tasks.cpus_allowed(p), fits_dyn)?;
        find_lowest_rq(&mask, task_cpu, this_cpu, self.domains, cursor)
    }
}

/// `select_task_rq_rt`: where waking (or forked) RT task `p` of kernel
/// `prio` goes; `cpu` is its previous CPU. It stays there unless that CPU
/// runs an RT task that is pinned or of equal or higher priority, or `p`
/// does not fit the CPU's capacity; then it goes to `find_lowest_rq`'s
/// choice if that CPU's best RT level is below `p`. A capacity-only move is
/// dropped when the found CPU does not fit either. Other kinds of
/// placement (exec, migration) keep `cpu`.
pub fn select_task_rq_rt<T: TaskAffinity + ?Sized>(
    env: &RtEnv<'_, T>,
    p: TaskId,
    prio: i32,
    cpu: CpuId,
    wakeup_or_fork: bool,
    this_cpu: CpuId,
    cursor: &mut AnyDistribute,
) -> CpuId {
    if !wakeup_or_fork {
        return cpu;
    }
    let curr = env.curr[cpu.idx()];
    let test = rt_prio(curr.prio) && (curr.nr_cpus_allowed < 2 || curr.prio <= prio);
    if !test && env.task_fits(p, cpu) {
        return cpu;
    }
    let target = env.find_lowest_rq_of(p, prio, cpu, this_cpu, cursor);
    match target {
        Some(t) if !test && !env.task_fits(p, t) => cpu,
        Some(t) if prio < env.rt_rqs[t.idx()].highest_prio_curr() => t,
        _ => cpu,
    }
}

/// What `push_rt_task` does on one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushDecision {
    /// Nothing to push (not overloaded, no pushable task, or no CPU runs
    /// below the task). `push_rt_tasks` stops.
    Nothing,
    /// The best pushable task outranks the running one: reschedule this CPU
    /// instead of pushing (`resched_curr(rq)`). `push_rt_tasks` stops.
    ReschedCurr,
    /// Move `task` (of kernel `prio`) from `src` to `dst` and reschedule
    /// `dst` (`move_queued_task_locked`, `resched_curr(lowest_rq)`);
    /// `push_rt_tasks` calls again.
    Push {
        /// The pushed task.
        task: TaskId,
        /// Its kernel `prio`.
        prio: i32,
        /// The overloaded CPU.
        src: CpuId,
        /// The CPU running at the lowest level.
        dst: CpuId,
    },
}

/// `push_rt_task(rq, false)` on CPU `src`, run by `this_cpu` (the CPU
/// executing the push: `src` itself for balance callbacks and push IPIs,
/// the waker for `task_woken_rt`). Takes the best pushable task and moves
/// it to the lowest-priority CPU whose best RT level is below it.
/// Migrate-disabled tasks are not modelled (the `pull` argument only
/// matters for them).
pub fn push_rt_task<T: TaskAffinity + ?Sized>(
    env: &RtEnv<'_, T>,
    src: CpuId,
    this_cpu: CpuId,
    cursor: &mut AnyDistribute,
) -> PushDecision {
    let rq = &env.rt_rqs[src.idx()];
    if !rq.overloaded() {
        return PushDecision::Nothing;
    }
    let Some((task, prio)) = rq.pick_next_pushable_task() else {
        return PushDecision::Nothing;
    };
    if prio < env.curr[src.idx()].prio {
        return PushDecision::ReschedCurr;
    }
    let fits = env.fits.map(|f| move |c: CpuId| f(task, c));
    let fits_dyn = fits.as_ref().map(|f| f as &dyn Fn(CpuId) -> bool);
    let allowed = env.tasks.cpus_allowed(task);
    match find_lock_lowest_rq(&env.rd.cpupri, env.rt_rqs, prio, allowed, src, this_cpu, env.domains, fits_dyn, cursor) {
        Some(dst) => PushDecision::Push { task, prio, src, dst },
        None => PushDecision::Nothing,
    }
}

/// One task `pull_rt_task` moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pull {
    /// The overloaded CPU it comes from.
    pub src: CpuId,
    /// The task.
    pub task: TaskId,
    /// Its kernel `prio`.
    pub prio: i32,
}

/// How `pull_rt_task` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullOutcome {
    /// No other CPU is overloaded, or none has a task to give.
    Nothing,
    /// With `RT_PUSH_IPI`: instead of pulling, start the push IPI chain over
    /// the overloaded CPUs (`tell_cpu_to_push`); each one runs
    /// `push_rt_task` until it stops, then passes the IPI to the next CPU of
    /// `rto_mask` after it (`rto_next_cpu`).
    PushIpi,
    /// Tasks to move, in order, into the caller's buffer; after moving them
    /// the CPU reschedules.
    Pulled(u32),
}

/// `pull_rt_task` for `this_cpu`, whose best RT level just dropped. Visits
/// the overloaded CPUs in ascending order; from each whose best pushable
/// level beats this CPU's current best, takes the best pushable task
/// allowed here, unless it outranks the task running on its own CPU (it is
/// about to run there). Each pull raises this CPU's best level, so a later
/// source must beat the task just pulled. Pulls are written to `out`
/// (cleared first) in the order the kernel moves them.
pub fn pull_rt_task<T: TaskAffinity + ?Sized>(
    env: &RtEnv<'_, T>,
    this_cpu: CpuId,
    rt_push_ipi: bool,
    out: &mut Vec<Pull>,
) -> PullOutcome {
    out.clear();
    let count = env.rd.rt_overloaded();
    if count == 0 || (count == 1 && env.rd.rto_mask.test(this_cpu)) {
        return PullOutcome::Nothing;
    }
    if rt_push_ipi {
        return PullOutcome::PushIpi;
    }
    let mut this_curr = env.rt_rqs[this_cpu.idx()].highest_prio_curr();
    for cpu in env.rd.rto_mask.iter() {
        if cpu == this_cpu {
            continue;
        }
        let src = &env.rt_rqs[cpu.idx()];
        if src.highest_prio_next() >= this_curr {
            continue;
        }
        let Some((task, prio)) = src.pick_highest_pushable_task(this_cpu, env.tasks) else {
            continue;
        };
        if prio >= this_curr || prio < env.curr[cpu.idx()].prio {
            continue;
        }
        out.push(Pull { src: cpu, task, prio });
        this_curr = prio;
    }
    if out.is_empty() {
        PullOutcome::Nothing
    } else {
        PullOutcome::Pulled(out.len() as u32)
    }
}

/// `need_pull_rt_task(rq, prev)`: this CPU's best queued RT level is now
/// below the previous task's `prio`, so another CPU may have better work.
#[inline]
pub fn need_pull_rt_task(rt_rq: &RtRq, prev_prio: i32) -> bool {
    rt_rq.highest_prio_curr() > prev_prio
}

/// `task_woken_rt`: after queueing woken task `p` (kernel `prio`, allowed
/// on `nr_cpus_allowed` CPUs) on a CPU running `curr`, whether to push
/// right away. True when `p` is not running, no reschedule is pending, `p`
/// can move, and the CPU runs an RT/DL task that is pinned or not below
/// `p`, so `p` will not run here soon.
pub fn task_woken_rt(p_on_cpu: bool, prio: i32, nr_cpus_allowed: u32, curr: RtCurr, curr_need_resched: bool) -> bool {
    !p_on_cpu
        && !curr_need_resched
        && nr_cpus_allowed > 1
        && rt_prio(curr.prio)
        && (curr.nr_cpus_allowed < 2 || curr.prio <= prio)
}

/// What `wakeup_preempt_rt` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupPreempt {
    /// Leave the running task alone.
    None,
    /// Reschedule: the woken task has the better `prio`.
    Resched,
    /// `check_preempt_equal_prio`: requeue the woken task at the head of its
    /// level and reschedule, so the running (migratable) task gets pushed
    /// away and the woken one, which has nowhere else to go, runs here.
    RequeueHeadAndResched,
}

/// `wakeup_preempt_rt` for woken task `p` (kernel `prio`, `p_allowed`) on a
/// CPU running `curr` (allowed on `curr_allowed`). Equal priorities only
/// preempt when the running task could run elsewhere and `p` could not.
pub fn wakeup_preempt_rt(
    rd: &RtRootDomain,
    prio: i32,
    p_allowed: &CpuMask,
    curr: RtCurr,
    curr_allowed: &CpuMask,
    curr_need_resched: bool,
) -> WakeupPreempt {
    if prio < curr.prio {
        return WakeupPreempt::Resched;
    }
    if prio != curr.prio || curr_need_resched {
        return WakeupPreempt::None;
    }
    if curr.nr_cpus_allowed == 1 || rd.cpupri.cpupri_find(curr.prio, curr_allowed).is_none() {
        return WakeupPreempt::None;
    }
    if p_allowed.weight() != 1 && rd.cpupri.cpupri_find(prio, p_allowed).is_some() {
        return WakeupPreempt::None;
    }
    WakeupPreempt::RequeueHeadAndResched
}
