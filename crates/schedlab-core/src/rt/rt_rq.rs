//! `struct rt_rq`, the RT part of one CPU's runqueue, and the rt.c
//! operations that change it.
//!
//! As in the kernel, the task running on the CPU stays queued in the
//! priority array while it runs; only the pushable list leaves it out
//! (`set_next_task_rt` removes it, `put_prev_task_rt` puts it back).
//!
//! Operations that change `highest_prio.curr` or the overload state return
//! an [`RtRqChange`]: what the kernel would do next to the root domain
//! (`cpupri_set` from `inc_rt_prio_smp`/`dec_rt_prio_smp`,
//! `rt_set_overload`/`rt_clear_overload`). The caller applies it with
//! [`crate::rt::RtRootDomain::apply`]; the runqueue itself never sees other
//! CPUs.
//!
//! Callers pass a task's `prio` and policy with each call, as the kernel
//! reads `p->prio` and `p->policy`; a task's `prio` must not change while it
//! is queued (dequeue, change, enqueue: what `__sched_setscheduler` does with
//! DEQUEUE_SAVE/ENQUEUE_RESTORE).

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, TaskId};
use crate::rt::prio::{RtPolicy, MAX_RT_PRIO};
use crate::rt::prio_array::PrioArray;

/// Where to find a task's allowed CPUs (`p->cpus_ptr`). The engine
/// implements it on its task table; a slice of masks indexed by task works
/// for tests.
pub trait TaskAffinity {
    /// The CPUs task `p` may run on.
    fn cpus_allowed(&self, p: TaskId) -> &CpuMask;
}

impl TaskAffinity for [CpuMask] {
    fn cpus_allowed(&self, p: TaskId) -> &CpuMask {
        &self[p.idx()]
    }
}

impl TaskAffinity for Vec<CpuMask> {
    fn cpus_allowed(&self, p: TaskId) -> &CpuMask {
        &self[p.idx()]
    }
}

/// Root-domain updates an `rt_rq` operation calls for.
#[must_use = "apply it to the RtRootDomain (cpupri and the overload mask)"]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtRqChange {
    /// `cpupri_set(cpu, prio)` with this `prio` (in the task `prio`
    /// convention: `MAX_RT_PRIO - 1` for "no RT task").
    pub cpupri: Option<i32>,
    /// `Some(true)`: `rt_set_overload`; `Some(false)`: `rt_clear_overload`.
    pub overload: Option<bool>,
}

impl RtRqChange {
    /// Both changes, the later one winning where both set the same field.
    pub fn then(self, later: RtRqChange) -> RtRqChange {
        RtRqChange { cpupri: later.cpupri.or(self.cpupri), overload: later.overload.or(self.overload) }
    }
}

/// The RT runqueue of one CPU.
#[derive(Clone, Debug)]
pub struct RtRq {
    /// The CPU (`rq->cpu`).
    pub cpu: CpuId,
    /// The queued tasks (`rt_rq->active`), the running one included.
    active: PrioArray,
    /// RT tasks queued, the running one included (`rt_nr_running`).
    rt_nr_running: u32,
    /// Of those, SCHED_RR tasks (`rr_nr_running`; the tick-stop test uses it).
    rr_nr_running: u32,
    /// `highest_prio.curr`: the best queued `prio`, `MAX_RT_PRIO - 1` when empty.
    highest_prio_curr: i32,
    /// `highest_prio.next`: the best pushable `prio`, `MAX_RT_PRIO - 1` when none.
    highest_prio_next: i32,
    /// Queued tasks that are not running and may run elsewhere
    /// (`pushable_tasks`), by priority then insertion order.
    pushable: PrioArray,
    /// `rt_rq->overloaded`: the CPU is in the root domain's overload mask.
    overloaded: bool,
}

impl RtRq {
    /// An empty RT runqueue for `cpu` (`init_rt_rq`).
    pub fn new(cpu: CpuId) -> Self {
        RtRq {
            cpu,
            active: PrioArray::new(),
            rt_nr_running: 0,
            rr_nr_running: 0,
            highest_prio_curr: MAX_RT_PRIO - 1,
            highest_prio_next: MAX_RT_PRIO - 1,
            pushable: PrioArray::new(),
            overloaded: false,
        }
    }

    /// `rt_nr_running`.
    #[inline]
    pub fn rt_nr_running(&self) -> u32 {
        self.rt_nr_running
    }

    /// `rr_nr_running`.
    #[inline]
    pub fn rr_nr_running(&self) -> u32 {
        self.rr_nr_running
    }

    /// `highest_prio.curr`: best queued `prio` (`MAX_RT_PRIO - 1` if none).
    #[inline]
    pub fn highest_prio_curr(&self) -> i32 {
        self.highest_prio_curr
    }

    /// `highest_prio.next`: best pushable `prio` (`MAX_RT_PRIO - 1` if none).
    #[inline]
    pub fn highest_prio_next(&self) -> i32 {
        self.highest_prio_next
    }

    /// RT overload as the kernel defines it since v6.7: the runqueue has a
    /// pushable task (`enqueue_pushable_task` sets `overloaded`,
    /// `dequeue_pushable_task` clears it when the list empties). Older
    /// kernels used `rt_nr_migratory && rt_nr_total > 1`.
    #[inline]
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// `has_pushable_tasks`.
    #[inline]
    pub fn has_pushable_tasks(&self) -> bool {
        !self.pushable.is_empty()
    }

    /// Whether `p` is queued at `prio` (`on_rt_rq`). O(k) in the level.
    pub fn on_rt_rq(&self, p: TaskId, prio: i32) -> bool {
        self.active.level_tasks(prio).any(|t| t == p)
    }

    /// The priority array (read-only).
    pub fn active(&self) -> &PrioArray {
        &self.active
    }

    /// The pushable tasks (read-only), in `plist` order.
    pub fn pushable(&self) -> &PrioArray {
        &self.pushable
    }

    /// `__enqueue_rt_entity` + `inc_rt_tasks`: queue `p` at the tail of its
    /// level, or the head with ENQUEUE_HEAD. Raises `highest_prio.curr` and
    /// asks for `cpupri_set` when it does (`inc_rt_prio_smp`).
    pub fn enqueue_rt_entity(&mut self, p: TaskId, prio: i32, policy: RtPolicy, head: bool) -> RtRqChange {
        self.active.push(p, prio, head);
        self.rt_nr_running += 1;
        if policy == RtPolicy::Rr {
            self.rr_nr_running += 1;
        }
        let prev = self.highest_prio_curr;
        if prio < prev {
            self.highest_prio_curr = prio;
            return RtRqChange { cpupri: Some(prio), overload: None };
        }
        RtRqChange::default()
    }

    /// `__dequeue_rt_entity` + `dec_rt_tasks`: unqueue `p`, recompute
    /// `highest_prio.curr` from the bitmap if `p` held it, and ask for
    /// `cpupri_set` when it changed (`dec_rt_prio_smp`).
    pub fn dequeue_rt_entity(&mut self, p: TaskId, prio: i32, policy: RtPolicy) -> RtRqChange {
        let was = self.active.remove(p, prio);
        debug_assert!(was, "task {p} not queued at prio {prio} on cpu {}", self.cpu);
        if !was {
            return RtRqChange::default();
        }
        self.rt_nr_running -= 1;
        if policy == RtPolicy::Rr {
            self.rr_nr_running -= 1;
        }
        let prev = self.highest_prio_curr;
        self.highest_prio_curr = if self.rt_nr_running == 0 {
            MAX_RT_PRIO - 1
        } else if prio == prev {
            self.active.first_prio().unwrap_or(MAX_RT_PRIO - 1)
        } else {
            prev
        };
        if self.highest_prio_curr != prev {
            return RtRqChange { cpupri: Some(self.highest_prio_curr), overload: None };
        }
        RtRqChange::default()
    }

    /// `enqueue_pushable_task`: (re)insert `p` in the pushable list, lower
    /// `highest_prio.next` if `p` beats it, and mark the runqueue overloaded.
    pub fn enqueue_pushable_task(&mut self, p: TaskId, prio: i32) -> RtRqChange {
        // plist_del then plist_add: a task already on the list moves to the
        // end of its priority's run.
        self.pushable.remove(p, prio);
        self.pushable.push(p, prio, false);
        if prio < self.highest_prio_next {
            self.highest_prio_next = prio;
        }
        if !self.overloaded {
            self.overloaded = true;
            return RtRqChange { cpupri: None, overload: Some(true) };
        }
        RtRqChange::default()
    }

    /// `dequeue_pushable_task`: drop `p` from the pushable list (a no-op if
    /// absent), reset `highest_prio.next`, and clear overload when the list
    /// empties.
    pub fn dequeue_pushable_task(&mut self, p: TaskId, prio: i32) -> RtRqChange {
        self.pushable.remove(p, prio);
        if let Some(next) = self.pushable.first_prio() {
            self.highest_prio_next = next;
            return RtRqChange::default();
        }
        self.highest_prio_next = MAX_RT_PRIO - 1;
        if self.overloaded {
            self.overloaded = false;
            return RtRqChange { cpupri: None, overload: Some(false) };
        }
        RtRqChange::default()
    }

    /// `enqueue_task_rt`: queue `p`; if it is not the running task and may
    /// run on more than one CPU, it also becomes pushable.
    pub fn enqueue_task_rt(
        &mut self,
        p: TaskId,
        prio: i32,
        policy: RtPolicy,
        head: bool,
        is_current: bool,
        nr_cpus_allowed: u32,
    ) -> RtRqChange {
        let c = self.enqueue_rt_entity(p, prio, policy, head);
        if !is_current && nr_cpus_allowed > 1 {
            return c.then(self.enqueue_pushable_task(p, prio));
        }
        c
    }

    /// `dequeue_task_rt`: unqueue `p` and drop it from the pushable list.
    /// The caller charges the running task's time first (`update_curr_rt`).
    pub fn dequeue_task_rt(&mut self, p: TaskId, prio: i32, policy: RtPolicy) -> RtRqChange {
        let c = self.dequeue_rt_entity(p, prio, policy);
        c.then(self.dequeue_pushable_task(p, prio))
    }

    /// `requeue_task_rt`: move a queued `p` to the tail of its level, or the
    /// head. Returns whether `p` was queued.
    pub fn requeue_task_rt(&mut self, p: TaskId, prio: i32, head: bool) -> bool {
        self.active.requeue(p, prio, head)
    }

    /// `yield_task_rt`: the running task goes behind its equals.
    pub fn yield_task_rt(&mut self, curr: TaskId, prio: i32) -> bool {
        self.requeue_task_rt(curr, prio, false)
    }

    /// The RR part of `task_tick_rt` once `p`'s slice has run out (the
    /// caller refills `time_slice`): if other tasks share `p`'s level, `p`
    /// goes to the tail and the CPU must reschedule (returns true); a task
    /// alone on its level keeps running.
    pub fn rr_slice_expired(&mut self, p: TaskId, prio: i32) -> bool {
        let alone = {
            let mut level = self.active.level_tasks(prio);
            level.next().is_some() && level.next().is_none()
        };
        if alone {
            return false;
        }
        self.requeue_task_rt(p, prio, false)
    }

    /// `pick_next_rt_entity`: the first task of the best non-empty level.
    /// The caller checks throttling first (`sched_rt_runnable`).
    #[inline]
    pub fn pick_next_rt_entity(&self) -> Option<(TaskId, i32)> {
        self.active.first()
    }

    /// `set_next_task_rt`: `p` starts running, so it is no longer pushable.
    /// When `first` (switching in from another class or idle), the kernel
    /// then queues a push (`rt_queue_push_tasks`): see
    /// [`crate::rt::push_rt_task`].
    pub fn set_next_task_rt(&mut self, p: TaskId, prio: i32) -> RtRqChange {
        self.dequeue_pushable_task(p, prio)
    }

    /// `put_prev_task_rt`: `p` stops running; if still queued and allowed on
    /// more than one CPU it becomes pushable again.
    pub fn put_prev_task_rt(&mut self, p: TaskId, prio: i32, still_queued: bool, nr_cpus_allowed: u32) -> RtRqChange {
        if still_queued && nr_cpus_allowed > 1 {
            return self.enqueue_pushable_task(p, prio);
        }
        RtRqChange::default()
    }

    /// `pick_next_pushable_task`: the best pushable task and its `prio`.
    #[inline]
    pub fn pick_next_pushable_task(&self) -> Option<(TaskId, i32)> {
        self.pushable.first()
    }

    /// `pick_highest_pushable_task(rq, cpu)`: the first pushable task, in
    /// priority order, allowed on `cpu` (`task_is_pushable`; pushable tasks
    /// are never running, so only affinity is checked).
    pub fn pick_highest_pushable_task(
        &self,
        cpu: CpuId,
        tasks: &(impl TaskAffinity + ?Sized),
    ) -> Option<(TaskId, i32)> {
        self.pushable.iter().find(|&(p, _)| tasks.cpus_allowed(p).test(cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TaskId = TaskId(0);
    const B: TaskId = TaskId(1);
    const C: TaskId = TaskId(2);
    const FIFO: RtPolicy = RtPolicy::Fifo;

    fn rq() -> RtRq {
        RtRq::new(CpuId(0))
    }

    #[test]
    fn empty_rq_has_no_rt_level() {
        let r = rq();
        assert_eq!(r.highest_prio_curr(), MAX_RT_PRIO - 1);
        assert_eq!(r.highest_prio_next(), MAX_RT_PRIO - 1);
        assert!(!r.overloaded());
    }

    #[test]
    fn highest_priority_runs_first() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 40, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 10, FIFO, false);
        assert_eq!(r.pick_next_rt_entity(), Some((B, 10)));
    }

    #[test]
    fn fifo_within_a_level() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 10, FIFO, false);
        assert_eq!(r.pick_next_rt_entity(), Some((A, 10)));
    }

    #[test]
    fn enqueue_head_goes_before_equals() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 10, FIFO, true);
        assert_eq!(r.pick_next_rt_entity(), Some((B, 10)));
    }

    #[test]
    fn rr_slice_end_moves_task_to_tail() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, RtPolicy::Rr, false);
        let _ = r.enqueue_rt_entity(B, 10, RtPolicy::Rr, false);
        assert!(r.rr_slice_expired(A, 10));
        assert_eq!(r.pick_next_rt_entity(), Some((B, 10)));
    }

    #[test]
    fn rr_slice_end_alone_on_level_keeps_running() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, RtPolicy::Rr, false);
        let _ = r.enqueue_rt_entity(B, 20, RtPolicy::Rr, false);
        assert!(!r.rr_slice_expired(A, 10));
        assert_eq!(r.pick_next_rt_entity(), Some((A, 10)));
    }

    #[test]
    fn yield_goes_behind_equals() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 10, FIFO, false);
        assert!(r.yield_task_rt(A, 10));
        assert_eq!(r.pick_next_rt_entity(), Some((B, 10)));
    }

    #[test]
    fn counts_follow_enqueue_and_dequeue() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 10, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 10, RtPolicy::Rr, false);
        assert_eq!((r.rt_nr_running(), r.rr_nr_running()), (2, 1));
        let _ = r.dequeue_rt_entity(B, 10, RtPolicy::Rr);
        assert_eq!((r.rt_nr_running(), r.rr_nr_running()), (1, 0));
    }

    #[test]
    fn enqueue_of_better_prio_asks_for_cpupri_set() {
        let mut r = rq();
        assert_eq!(r.enqueue_rt_entity(A, 40, FIFO, false).cpupri, Some(40));
        assert_eq!(r.enqueue_rt_entity(B, 50, FIFO, false).cpupri, None);
        assert_eq!(r.enqueue_rt_entity(C, 30, FIFO, false).cpupri, Some(30));
        assert_eq!(r.highest_prio_curr(), 30);
    }

    #[test]
    fn dequeue_of_best_recomputes_from_bitmap() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 40, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 30, FIFO, false);
        assert_eq!(r.dequeue_rt_entity(B, 30, FIFO).cpupri, Some(40));
        assert_eq!(r.highest_prio_curr(), 40);
    }

    #[test]
    fn dequeue_of_last_task_resets_to_normal() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 40, FIFO, false);
        assert_eq!(r.dequeue_rt_entity(A, 40, FIFO).cpupri, Some(MAX_RT_PRIO - 1));
        assert_eq!(r.pick_next_rt_entity(), None);
    }

    #[test]
    fn dequeue_of_non_best_changes_nothing() {
        let mut r = rq();
        let _ = r.enqueue_rt_entity(A, 40, FIFO, false);
        let _ = r.enqueue_rt_entity(B, 30, FIFO, false);
        assert_eq!(r.dequeue_rt_entity(A, 40, FIFO), RtRqChange::default());
    }

    #[test]
    fn queued_migratable_non_running_task_is_pushable_and_overloads() {
        let mut r = rq();
        let c = r.enqueue_task_rt(A, 40, FIFO, false, false, 4);
        assert_eq!(c, RtRqChange { cpupri: Some(40), overload: Some(true) });
        assert!(r.overloaded());
        assert_eq!(r.highest_prio_next(), 40);
    }

    #[test]
    fn running_task_is_not_pushable() {
        let mut r = rq();
        let c = r.enqueue_task_rt(A, 40, FIFO, false, true, 4);
        assert_eq!(c.overload, None);
        assert!(!r.has_pushable_tasks());
    }

    #[test]
    fn pinned_task_is_not_pushable() {
        let mut r = rq();
        let _ = r.enqueue_task_rt(A, 40, FIFO, false, false, 1);
        assert!(!r.overloaded());
    }

    #[test]
    fn set_next_removes_from_pushable_and_clears_overload() {
        let mut r = rq();
        let _ = r.enqueue_task_rt(A, 40, FIFO, false, false, 4);
        let c = r.set_next_task_rt(A, 40);
        assert_eq!(c.overload, Some(false));
        assert_eq!(r.highest_prio_next(), MAX_RT_PRIO - 1);
    }

    #[test]
    fn put_prev_makes_preempted_task_pushable() {
        let mut r = rq();
        let _ = r.enqueue_task_rt(A, 40, FIFO, false, true, 4);
        let c = r.put_prev_task_rt(A, 40, true, 4);
        assert_eq!(c.overload, Some(true));
        assert_eq!(r.pick_next_pushable_task(), Some((A, 40)));
    }

    #[test]
    fn pushable_order_is_priority_then_fifo() {
        let mut r = rq();
        let _ = r.enqueue_task_rt(A, 50, FIFO, false, false, 4);
        let _ = r.enqueue_task_rt(B, 20, FIFO, false, false, 4);
        let _ = r.enqueue_task_rt(C, 20, FIFO, false, false, 4);
        assert_eq!(r.pick_next_pushable_task(), Some((B, 20)));
        assert_eq!(r.highest_prio_next(), 20);
        let _ = r.dequeue_task_rt(B, 20, FIFO);
        assert_eq!(r.pick_next_pushable_task(), Some((C, 20)));
    }

    #[test]
    fn highest_pushable_respects_affinity() {
        let mut r = rq();
        let _ = r.enqueue_task_rt(A, 20, FIFO, false, false, 2);
        let _ = r.enqueue_task_rt(B, 30, FIFO, false, false, 2);
        let masks = vec![CpuMask::from_cpus([CpuId(0), CpuId(1)]), CpuMask::from_cpus([CpuId(0), CpuId(2)])];
        assert_eq!(r.pick_highest_pushable_task(CpuId(2), &masks), Some((B, 30)));
        assert_eq!(r.pick_highest_pushable_task(CpuId(1), &masks), Some((A, 20)));
        assert_eq!(r.pick_highest_pushable_task(CpuId(3), &masks), None);
    }

    #[test]
    fn then_keeps_latest() {
        let a = RtRqChange { cpupri: Some(3), overload: Some(true) };
        let b = RtRqChange { cpupri: None, overload: Some(false) };
        assert_eq!(a.then(b), RtRqChange { cpupri: Some(3), overload: Some(false) });
    }
    proptest::proptest! {
        /// Random enqueue/dequeue/requeue sequences against a plain list
        /// model: pick order, highest_prio.curr and the counts agree.
        #[test]
        fn matches_list_model(ops in proptest::collection::vec((0u32..6, 0i32..4, 0u8..4), 1..80)) {
            let mut r = rq();
            // Model: (task, prio) in queue order; pick = min prio, first in order.
            let mut model: Vec<(TaskId, i32)> = Vec::new();
            for (t, level, op) in ops {
                let p = TaskId(t);
                let prio = 10 * level;
                let queued = model.iter().position(|&(q, _)| q == p);
                match (op, queued) {
                    (0 | 1, None) => {
                        let _ = r.enqueue_rt_entity(p, prio, FIFO, op == 1);
                        if op == 1 {
                            let at = model.iter().position(|&(_, qp)| qp == prio).unwrap_or(model.len());
                            model.insert(at, (p, prio));
                        } else {
                            model.push((p, prio));
                        }
                    }
                    (2, Some(i)) => {
                        let (_, qp) = model.remove(i);
                        let _ = r.dequeue_rt_entity(p, qp, FIFO);
                    }
                    (3, Some(i)) => {
                        let e = model.remove(i);
                        model.push(e);
                        proptest::prop_assert!(r.requeue_task_rt(p, e.1, false));
                    }
                    _ => {}
                }
                let best = model.iter().map(|&(_, qp)| qp).min();
                let expect = best.map(|b| *model.iter().find(|&&(_, qp)| qp == b).unwrap());
                proptest::prop_assert_eq!(r.pick_next_rt_entity(), expect);
                proptest::prop_assert_eq!(r.highest_prio_curr(), best.unwrap_or(MAX_RT_PRIO - 1));
                proptest::prop_assert_eq!(r.rt_nr_running() as usize, model.len());
            }
        }
    }
}
