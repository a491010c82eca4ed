//! The RT scheduling class (SCHED_FIFO and SCHED_RR): its per-CPU runqueue,
//! the machine-wide CPU priority index, throttling, and the placement
//! decisions of kernel/sched/rt.c and kernel/sched/cpupri.c, as plain data
//! structures and pure functions. The engine owns the state, calls these
//! functions and applies what they decide (moving tasks, rescheduling).
//!
//! # What the class keeps
//!
//! - Per CPU, an [`RtRq`] (`struct rt_rq`): a priority array (one FIFO list
//!   per level plus a bitmap of non-empty levels), `rt_nr_running`,
//!   `rr_nr_running`, `highest_prio.{curr,next}`, the pushable tasks ordered
//!   by priority, and `overloaded`.
//! - Per root domain (schedlab has one), an [`RtRootDomain`]: the
//!   [`CpuPri`] index (which CPUs run at which RT level) and the RT overload
//!   mask (`rd->rto_mask`, `rd->rto_count`).
//! - Per CPU, throttling state ([`RtThrottle`]: `rt_time`, `rt_throttled`,
//!   `rt_runtime`) against one [`RtBandwidth`] (runtime per period).
//!
//! # Files and the kernel functions they model
//!
//! - `prio.rs`: priority conventions (`MAX_RT_PRIO`, `rt_prio()`, the
//!   `p->prio = MAX_RT_PRIO - 1 - rt_priority` mapping) and [`RtParams`].
//! - `prio_array.rs`: `struct rt_prio_array` (also used for the pushable
//!   plist), `sched_find_first_bit`.
//! - `rt_rq.rs`: `enqueue_task_rt`/`dequeue_task_rt` (through
//!   `__enqueue_rt_entity`, `__delist_rt_entity`, `inc_rt_prio`,
//!   `dec_rt_prio`), `requeue_task_rt`, `yield_task_rt`,
//!   `pick_next_rt_entity`, `set_next_task_rt`, `put_prev_task_rt`,
//!   `enqueue_pushable_task`/`dequeue_pushable_task`,
//!   `pick_next_pushable_task`, `pick_highest_pushable_task`.
//! - `cpupri.rs`: `convert_prio`, `cpupri_set`, `cpupri_find`,
//!   `cpupri_find_fitness`; `rt_set_overload`/`rt_clear_overload`.
//! - `bandwidth.rs`: `update_curr_rt` (accounting part),
//!   `sched_rt_runtime_exceeded`, `do_sched_rt_period_timer`,
//!   `rt_bandwidth_enabled`, `hrtimer_forward`.
//! - `lowest.rs`: `find_lowest_rq`, `cpumask_any_and_distribute`,
//!   `find_lock_lowest_rq`.
//! - `decide.rs`: `select_task_rq_rt`, `push_rt_task`, `pull_rt_task`,
//!   `need_pull_rt_task`, `task_woken_rt`, `wakeup_preempt_rt`
//!   (with `check_preempt_equal_prio`).
//! - `hooks.rs`: `prio_changed_rt`, `switched_from_rt`, `switched_to_rt`
//!   (which queue a push or a pull).
//! - `push_ipi.rs`: the RT_PUSH_IPI chain (`tell_cpu_to_push`,
//!   `rto_next_cpu`).
//!
//! # Kernel read
//!
//! `kernel/sched/rt.c` from linux-next as mirrored in `ColinIanKing/linux-next`
//! (blob 551990ac, a v6.14/v6.15-era tree: `rq->donor`, `hrtimer_setup`,
//! `CONFIG_SMP` still present); `kernel/sched/cpupri.c` and `cpupri.h` from
//! `torvalds/linux` (the v5.11+ layout: `CPUPRI_NORMAL` = 0 for both idle and
//! fair CPUs, `CPUPRI_HIGHER` = 100 set by the deadline class,
//! `CPUPRI_NR_PRIORITIES` = 101); `struct rt_rq` from `sched.h`. For
//! throttling of the root runqueue, which that linux-next no longer has, an
//! older `torvalds/linux` `rt.c` (with `def_rt_bandwidth`) and the tip commit
//! 5f6bd380c7bd "sched/rt: Remove default bandwidth control" (merged for
//! v6.12, together with the fair deadline server). See `bandwidth.rs`.
//!
//! Everything here is schedlab's own code; no kernel text was copied.
//!
//! # Not modelled
//!
//! RT group scheduling (`CONFIG_RT_GROUP_SCHED`: nested `rt_rq`s, boosting,
//! `rt_nr_boosted`), runtime borrowing (`RT_RUNTIME_SHARE`, off by default
//! since v5.10), migrate-disable (`is_migration_disabled`, `push_cpu_stop`),
//! proxy execution (`rq->donor` differing from `rq->curr`: callers pass one
//! value for both), CPU hotplug (every rq online), and lock races (the
//! `RT_MAX_TRIES` retry loop of `find_lock_lowest_rq` runs once, as nothing
//! can change between the search and the move in a sequential simulation).

mod bandwidth;
pub mod class;
mod cpupri;
mod decide;
mod hooks;
mod lowest;
mod prio;
mod prio_array;
mod push_ipi;
mod rt_rq;

pub use bandwidth::{hrtimer_forward, PeriodTimerOutcome, RtBandwidth, RtThrottle, RUNTIME_INF};
pub use cpupri::{
    convert_prio, CpuPri, RtRootDomain, CPUPRI_HIGHER, CPUPRI_INVALID, CPUPRI_NORMAL, CPUPRI_NR_PRIORITIES,
};
pub use decide::{
    need_pull_rt_task, pull_rt_task, push_rt_task, select_task_rq_rt, task_woken_rt, wakeup_preempt_rt, Pull,
    PullOutcome, PushDecision, RtCurr, RtEnv, WakeupPreempt,
};
pub use hooks::{prio_changed_rt, switched_from_rt, switched_to_rt, HookAction};
pub use lowest::{
    cpumask_any_and_distribute, find_lock_lowest_rq, find_lowest_rq, lowest_mask_for_task, AnyDistribute,
};
pub use prio::{
    prio_to_rt_priority, rt_prio, rt_priority_to_prio, RtParams, RtPolicy, DEFAULT_PRIO, MAX_PRIO, MAX_RT_PRIO,
    RT_MAX_TRIES,
};
pub use prio_array::PrioArray;
pub use push_ipi::RtoPushState;
pub use rt_rq::{RtRq, RtRqChange, TaskAffinity};

#[cfg(test)]
mod decide_tests;

#[cfg(test)]
mod class_tests;
