//! The CFS discipline of the fair runqueue (kernel/sched/fair.c, v2.6.23 ..
//! v6.5), selected by `NO_EEVDF` (the `v5.9` and `v4.14` profiles). It
//! shares [`CfsRq`] and [`SchedEntity`] with EEVDF; the public methods in
//! `eevdf.rs` hand over to the functions here.
//!
//! ## The discipline
//! Every entity accrues virtual runtime `v += delta * NICE_0_LOAD / w`. The
//! runqueue runs the *leftmost* entity (minimum `v`), unless a buddy (next:
//! a woken task that preempted or was marked; last: the task it preempted)
//! is within `wakeup_gran` of it. A running task is rescheduled at the tick
//! once it ran its share of the period (`sched_slice`:
//! `period * w / W`, period = `sched_latency`, stretched to
//! `nr * min_granularity` beyond `sched_nr_latency` tasks), or, after at
//! least `min_granularity`, once it is more than that share ahead of the
//! leftmost. A wakeup preempts when curr's `v` exceeds the woken one's by
//! more than the woken entity's weighted `wakeup_granularity`.
//!
//! `min_vruntime` is a monotonic floor of the queue's vruntimes (curr and
//! the leftmost). Placement is relative to it: a waking sleeper at
//! `max(v, min_vruntime - sched_latency / 2)` (GENTLE_FAIR_SLEEPERS; the full
//! latency without it), a new task at `min_vruntime + sched_vslice`
//! (START_DEBIT). An entity leaving a queue without sleeping (a migration)
//! keeps `v - min_vruntime` and is re-based on the next queue.
//!
//! ## Kernel read
//! The functions follow v5.9 (`update_curr`, `update_min_vruntime`,
//! `__sched_period`, `sched_slice`, `sched_vslice`, `place_entity`,
//! `enqueue_entity`, `dequeue_entity`, `check_preempt_tick`,
//! `pick_next_entity`, `set_next_entity`, `check_preempt_wakeup`,
//! `wakeup_preempt_entity`, `wakeup_gran`, `task_fork_fair`,
//! `migrate_task_rq_fair`, `update_sysctl`). The tree read was a v5.16 ..
//! v6.1-era `kernel/sched/fair.c` (stored in the code index, with
//! `se_is_idle` and the ALT_PERIOD / BASE_SLICE features of v5.13); what it
//! adds over v5.9 is left out: BASE_SLICE's `max(slice, min_granularity)`,
//! ALT_PERIOD, and the SCHED_IDLE sleeper threshold. v4.14 does the same in
//! every function modelled here.
//!
//! The EEVDF-only features (PLACE_LAG, PLACE_DEADLINE_INITIAL,
//! PLACE_REL_DEADLINE, RUN_TO_PARITY, PREEMPT_SHORT, PICK_BUDDY,
//! DELAY_DEQUEUE, DELAY_ZERO) are never read here: nothing is delayed, so
//! the engine never sees [`Pick::Delayed`].

use super::eevdf::{get_update_sysctl_factor, CfsRq, CurrUpdate, DequeueFlags, EnqueueFlags, Pick, SchedEntity};
use super::entities::Entities;
use super::weight::{calc_delta, calc_delta_fair, inv_weight};
use crate::features::Features;
use crate::ids::{Ns, TaskId};
use crate::sched_feat;

/// `normalized_sysctl_sched_latency`: 6 ms, the period in which every
/// runnable task should run once, before CPU scaling.
pub const NORMALIZED_SYSCTL_SCHED_LATENCY_NS: Ns = 6_000_000;
/// `normalized_sysctl_sched_min_granularity`: 0.75 ms, the shortest run a
/// task gets before the tick may preempt it, before CPU scaling.
pub const NORMALIZED_SYSCTL_SCHED_MIN_GRANULARITY_NS: Ns = 750_000;
/// `normalized_sysctl_sched_wakeup_granularity`: 1 ms of (nice-0) vruntime
/// a woken task must be behind curr to preempt it, before CPU scaling.
pub const NORMALIZED_SYSCTL_SCHED_WAKEUP_GRANULARITY_NS: Ns = 1_000_000;
/// `init_cfs_rq`: `min_vruntime` starts at `-(1 << 20)`, just below the
/// wrap, so that the wrapping comparisons are exercised from the start.
pub const INIT_MIN_VRUNTIME: u64 = (-(1i64 << 20)) as u64;

/// CFS tunables of one runqueue (`update_sysctl` with the default
/// SCHED_TUNABLESCALING_LOG: each normalised value times
/// `1 + ilog2(min(ncpus, 8))`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsParams {
    /// `sysctl_sched_latency` (ns): the scheduling period for up to
    /// `sched_nr_latency` runnable tasks; half of it is a sleeper's credit.
    pub sched_latency_ns: Ns,
    /// `sysctl_sched_min_granularity` (ns): minimum run before tick
    /// preemption by vruntime distance; the per-task period share beyond
    /// `sched_nr_latency` tasks.
    pub sched_min_granularity_ns: Ns,
    /// `sysctl_sched_wakeup_granularity` (ns, of nice-0 vruntime): how far
    /// curr must be ahead of a woken task (or the leftmost ahead of a buddy)
    /// before it loses the CPU. Larger = fewer wakeup preemptions.
    pub sched_wakeup_granularity_ns: Ns,
    /// `sched_nr_latency`: `ceil(sched_latency / min_granularity)` = 8; more
    /// runnable tasks stretch the period, and enable the buddies.
    pub sched_nr_latency: u64,
}

impl CfsParams {
    /// The tunables for `nr_cpus` online CPUs (`sched_init_granularity`).
    pub fn new(nr_cpus: usize) -> Self {
        let factor = get_update_sysctl_factor(nr_cpus);
        let latency = NORMALIZED_SYSCTL_SCHED_LATENCY_NS * factor;
        let min_gran = NORMALIZED_SYSCTL_SCHED_MIN_GRANULARITY_NS * factor;
        CfsParams {
            sched_latency_ns: latency,
            sched_min_granularity_ns: min_gran,
            sched_wakeup_granularity_ns: NORMALIZED_SYSCTL_SCHED_WAKEUP_GRANULARITY_NS * factor,
            sched_nr_latency: latency.div_ceil(min_gran),
        }
    }
}

/// `entity_before` (CFS): smaller vruntime, wrapping.
#[inline]
fn entity_before(a: &SchedEntity, b: &SchedEntity) -> bool {
    (a.vruntime.wrapping_sub(b.vruntime) as i64) < 0
}

/// `max_vruntime`: the later of two vruntimes, wrapping.
#[inline]
fn max_vruntime(a: u64, b: u64) -> u64 {
    if (b.wrapping_sub(a) as i64) > 0 {
        b
    } else {
        a
    }
}

/// `min_vruntime` (the helper): the earlier of two vruntimes, wrapping.
#[inline]
fn min_vruntime(a: u64, b: u64) -> u64 {
    if (b.wrapping_sub(a) as i64) < 0 {
        b
    } else {
        a
    }
}

impl CfsRq {
    /// `__sched_period`: `sched_latency`, or `nr_running * min_granularity`
    /// when more than `sched_nr_latency` tasks share it.
    pub fn sched_period_ns(&self, nr_running: u64) -> Ns {
        let c = &self.params.cfs;
        if nr_running > c.sched_nr_latency {
            nr_running * c.sched_min_granularity_ns
        } else {
            c.sched_latency_ns
        }
    }

    /// `sched_slice`: `id`'s wall-time share of the period, `period * w / W`,
    /// counting `id` in `W` (and in the task count) even when not queued.
    pub fn sched_slice(&self, ses: &Entities, id: TaskId) -> Ns {
        let se = &ses[id.idx()];
        let (mut nr, mut load) = (self.nr_queued as u64, self.load_weight);
        if !se.on_rq {
            nr += 1;
            load += se.weight;
        }
        calc_delta(self.sched_period_ns(nr), se.weight, inv_weight(load))
    }

    /// `sched_vslice`: [`Self::sched_slice`] in `id`'s virtual time.
    pub fn sched_vslice(&self, ses: &Entities, id: TaskId) -> u64 {
        calc_delta_fair(self.sched_slice(ses, id), &ses[id.idx()])
    }

    /// `wakeup_gran`: `sched_wakeup_granularity` in the virtual time of
    /// `se` (the entity that would get the CPU): a light task must be
    /// further behind, a heavy one less.
    pub fn wakeup_gran(&self, se: &SchedEntity) -> u64 {
        calc_delta_fair(self.params.cfs.sched_wakeup_granularity_ns, se)
    }

    /// `wakeup_preempt_entity(curr, se)`: -1 if `se` is not behind `curr`,
    /// 1 if it is behind by more than `wakeup_gran(se)`, else 0.
    pub fn wakeup_preempt_entity(&self, curr: &SchedEntity, se: &SchedEntity) -> i32 {
        let vdiff = curr.vruntime.wrapping_sub(se.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        if vdiff > self.wakeup_gran(se) as i64 {
            1
        } else {
            0
        }
    }

    /// `__pick_first_entity`: the queued entity (curr excluded) with the
    /// smallest vruntime; ties go to the earliest queued, as the rbtree
    /// inserts equal keys to the right.
    pub fn pick_first_entity(&self, ses: &Entities) -> Option<TaskId> {
        let mut best: Option<TaskId> = None;
        for &t in &self.queue {
            if best.is_none_or(|b| entity_before(&ses[t.idx()], &ses[b.idx()])) {
                best = Some(t);
            }
        }
        best
    }

    /// `update_min_vruntime`: the smaller of curr's (if queued) and the
    /// leftmost's vruntime, never moving backwards.
    fn update_min_vruntime(&mut self, ses: &Entities) {
        let curr = self.curr_on_rq(ses).map(|c| c.vruntime);
        let left = self.pick_first_entity(ses).map(|t| ses[t.idx()].vruntime);
        let v = match (curr, left) {
            (Some(c), Some(l)) => min_vruntime(c, l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => self.min_vruntime,
        };
        self.min_vruntime = max_vruntime(self.min_vruntime, v);
    }

    /// `clear_buddies`: `id` is no longer anyone's buddy.
    fn clear_buddies(&mut self, id: TaskId) {
        if self.next == Some(id) {
            self.next = None;
        }
        if self.last == Some(id) {
            self.last = None;
        }
        if self.skip == Some(id) {
            self.skip = None;
        }
    }

    /// `update_curr` (CFS): charge curr, advance `min_vruntime`, and report
    /// `check_preempt_tick` in `resched` when others are queued
    /// (`entity_tick` checks only with `nr_running > 1`). Only the tick acts
    /// on `resched`, so the check has no side effect here.
    pub(super) fn update_curr_cfs(&mut self, ses: &mut Entities, now: Ns) -> CurrUpdate {
        let Some(c) = self.curr else {
            return CurrUpdate::default();
        };
        let Some(delta_exec) = super::eevdf::update_se(&mut ses[c.idx()], now) else {
            return CurrUpdate::default();
        };
        self.update_min_vruntime(ses);
        let resched = self.nr_queued > 1 && ses[c.idx()].on_rq && self.check_preempt_tick(ses, c);
        CurrUpdate { delta_exec, resched }
    }

    /// `check_preempt_tick`: curr ran longer than its `sched_slice`, or,
    /// after `min_granularity`, is more than a slice of vruntime ahead of
    /// the leftmost. (The kernel compares that vruntime distance with the
    /// wall-time slice; so does this.)
    // DEVIATION(kernel): no `clear_buddies(curr)` when the slice ran out.
    // This runs in every update_curr (the engine's tick cannot be told
    // apart), and clearing there would drop the last buddy that a wakeup
    // preemption has just set to curr before the switch picks. The kernel's
    // tick only finds curr a buddy in that same window, so nothing else is lost.
    fn check_preempt_tick(&self, ses: &Entities, c: TaskId) -> bool {
        let ideal_runtime = self.sched_slice(ses, c);
        let curr = &ses[c.idx()];
        let delta_exec = curr.sum_exec_runtime - curr.prev_sum_exec_runtime;
        if delta_exec > ideal_runtime {
            return true;
        }
        if delta_exec < self.params.cfs.sched_min_granularity_ns {
            return false;
        }
        let Some(left) = self.pick_first_entity(ses) else { return false };
        let delta = curr.vruntime.wrapping_sub(ses[left.idx()].vruntime) as i64;
        delta > ideal_runtime as i64
    }

    /// `place_entity` (CFS): a new task (`initial`) one vslice after
    /// `min_vruntime` with START_DEBIT; a waking sleeper at most
    /// `sched_latency` (halved with GENTLE_FAIR_SLEEPERS) before it. Never
    /// earlier than the entity's own vruntime: sleeping gains at most that.
    pub fn place_entity_cfs(&self, ses: &mut Entities, id: TaskId, initial: bool, f: &Features) {
        let mut vruntime = self.min_vruntime;
        if initial && sched_feat!(f, START_DEBIT) {
            vruntime = vruntime.wrapping_add(self.sched_vslice(ses, id));
        }
        if !initial {
            let mut thresh = self.params.cfs.sched_latency_ns;
            if sched_feat!(f, GENTLE_FAIR_SLEEPERS) {
                thresh >>= 1;
            }
            vruntime = vruntime.wrapping_sub(thresh);
        }
        let se = &mut ses[id.idx()];
        se.vruntime = max_vruntime(se.vruntime, vruntime);
    }

    /// `migrate_task_rq_fair` (CFS part): a waking task leaves this runqueue
    /// for another; keep its vruntime relative to this `min_vruntime`.
    /// For the engine's `set_task_cpu`; without it, [`Self::enqueue_entity`]
    /// falls back on the `min_vruntime` saved when the task went to sleep.
    pub fn migrate_task_rq_fair(&self, ses: &mut Entities, id: TaskId, f: &Features) {
        let se = &mut ses[id.idx()];
        if sched_feat!(f, EEVDF) || se.on_rq || se.vruntime_normalized {
            return;
        }
        se.vruntime = se.vruntime.wrapping_sub(self.min_vruntime);
        se.vruntime_normalized = true;
        se.exec_start = 0; // no longer cache hot
    }

    /// `enqueue_entity` (CFS, + `task_fork_fair` for INITIAL): re-base a
    /// normalised vruntime on this queue, place new and waking entities.
    pub(super) fn enqueue_entity_cfs(
        &mut self,
        ses: &mut Entities,
        id: TaskId,
        now: Ns,
        flags: EnqueueFlags,
        f: &Features,
    ) -> CurrUpdate {
        let wakeup = flags.has(EnqueueFlags::WAKEUP);
        let initial = flags.has(EnqueueFlags::INITIAL) && !wakeup;
        {
            let se = &mut ses[id.idx()];
            // A wakeup on another CPU (set_task_cpu cleared exec_start)
            // that migrate_task_rq_fair did not normalise.
            // DEVIATION(kernel): relative to the old queue's min_vruntime
            // when the task slept, not when it woke: the engine does not
            // report the wakeup migration to the old queue, so a migrating
            // sleeper gets less sleeper credit than in v5.9.
            let moved = flags.has(EnqueueFlags::MIGRATED) || se.exec_start == 0;
            if wakeup && moved && !se.vruntime_normalized {
                se.vruntime = se.vruntime.wrapping_sub(se.sleep_min_vruntime);
                se.vruntime_normalized = true;
            }
        }
        let is_curr = self.curr == Some(id);
        // curr is re-based before update_curr, others after it, so they are
        // placed at the present moment rather than in the past.
        if is_curr && ses[id.idx()].vruntime_normalized {
            self.renormalise(ses, id);
        }
        let upd = self.update_curr_cfs(ses, now);
        if initial {
            // DEVIATION(kernel): task_fork_fair starts the child at the
            // parent's vruntime and takes the vslice on the parent's queue;
            // the destination queue does not know the parent, so the child
            // starts from this min_vruntime and this queue's vslice.
            ses[id.idx()].vruntime = self.min_vruntime;
            ses[id.idx()].vruntime_normalized = false;
            self.place_entity_cfs(ses, id, true, f);
        } else if ses[id.idx()].vruntime_normalized {
            self.renormalise(ses, id);
        }
        self.load_weight += ses[id.idx()].weight;
        self.nr_queued += 1;
        self.h_nr_runnable += 1;
        if wakeup {
            self.place_entity_cfs(ses, id, false, f);
        }
        if flags.has(EnqueueFlags::MIGRATED) {
            ses[id.idx()].exec_start = 0; // no longer cache hot
        }
        if !is_curr {
            self.enqueue_tree(ses, id);
        }
        ses[id.idx()].on_rq = true;
        upd
    }

    /// Add this queue's `min_vruntime` to a normalised vruntime.
    fn renormalise(&self, ses: &mut Entities, id: TaskId) {
        let se = &mut ses[id.idx()];
        se.vruntime = se.vruntime.wrapping_add(self.min_vruntime);
        se.vruntime_normalized = false;
    }

    /// `dequeue_entity` (CFS): always completes. Without SLEEP (a
    /// migration, or SAVE) the vruntime becomes relative to `min_vruntime`;
    /// a sleeper keeps its absolute vruntime and notes `min_vruntime`.
    pub(super) fn dequeue_entity_cfs(&mut self, ses: &mut Entities, id: TaskId, now: Ns, flags: DequeueFlags) -> bool {
        self.update_curr_cfs(ses, now);
        self.clear_buddies(id);
        if self.curr != Some(id) {
            self.dequeue_tree(ses, id);
        }
        let sleep = flags.has(DequeueFlags::SLEEP);
        let min = self.min_vruntime;
        let se = &mut ses[id.idx()];
        se.on_rq = false;
        se.sched_delayed = false;
        self.load_weight -= se.weight;
        self.nr_queued -= 1;
        self.h_nr_runnable -= 1;
        // After update_curr (which moved min_vruntime if se held it back),
        // before update_min_vruntime (which forgets se).
        if !sleep {
            se.vruntime = se.vruntime.wrapping_sub(min);
            se.vruntime_normalized = true;
        }
        // SAVE without MOVE comes straight back: do not let min_vruntime
        // run past it, or it would be placed later than it left.
        if flags.0 & (DequeueFlags::SAVE.0 | DequeueFlags::MOVE.0) != DequeueFlags::SAVE.0 {
            self.update_min_vruntime(ses);
        }
        if sleep {
            ses[id.idx()].sleep_min_vruntime = self.min_vruntime;
        }
        true
    }

    /// `pick_next_entity` (CFS): the leftmost of the queue and curr, but
    /// the one after it when the leftmost is the skip buddy (`sched_yield`),
    /// the last buddy, and above it the next buddy, each when within
    /// `wakeup_gran` of the leftmost.
    pub(super) fn pick_next_entity_cfs(&self, ses: &Entities) -> Pick {
        let curr = self.curr.filter(|c| ses[c.idx()].on_rq);
        let mut left = self.pick_first_entity(ses);
        if let Some(c) = curr {
            if left.is_none_or(|l| entity_before(&ses[c.idx()], &ses[l.idx()])) {
                left = Some(c);
            }
        }
        let Some(left) = left else { return Pick::Idle };
        let mut se = left;
        let fair_enough = |b: TaskId| self.wakeup_preempt_entity(&ses[b.idx()], &ses[left.idx()]) < 1;
        if self.skip == Some(se) {
            let second = if Some(se) == curr {
                self.pick_first_entity(ses)
            } else {
                // __pick_next_entity: the next in vruntime order, or curr before it.
                let next = self
                    .queue
                    .iter()
                    .copied()
                    .filter(|&t| t != se && !entity_before(&ses[t.idx()], &ses[se.idx()]))
                    .reduce(|a, b| if entity_before(&ses[b.idx()], &ses[a.idx()]) { b } else { a });
                match (next, curr) {
                    (Some(n), Some(c)) if entity_before(&ses[c.idx()], &ses[n.idx()]) => Some(c),
                    (None, c) => c,
                    (n, _) => n,
                }
            };
            if let Some(s2) = second.filter(|&s2| fair_enough(s2)) {
                se = s2;
            }
        }
        if let Some(l) = self.last.filter(|&l| fair_enough(l)) {
            se = l;
        }
        if let Some(n) = self.next.filter(|&n| fair_enough(n)) {
            se = n;
        }
        Pick::Task(se)
    }

    /// `set_next_entity` (CFS): the picked entity stops being a buddy
    /// (v5.9 clears them in `pick_next_entity`; the engine always sets what
    /// it picked) and becomes curr.
    pub(super) fn set_next_entity_cfs(&mut self, ses: &mut Entities, id: TaskId, now: Ns) {
        self.clear_buddies(id);
        if ses[id.idx()].on_rq {
            self.dequeue_tree(ses, id);
        }
        debug_assert!(self.curr.is_none());
        self.curr = Some(id);
        let se = &mut ses[id.idx()];
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `check_preempt_wakeup`: preempt curr when it is more than
    /// `wakeup_gran(woken)` of vruntime ahead of the woken task; the woken
    /// task becomes the next buddy and, with LAST_BUDDY and at least
    /// `sched_nr_latency` queued, curr the last buddy. NEXT_BUDDY marks every
    /// woken (not forked) task at that load. A fork goes through here too
    /// (`wake_up_new_task` -> `check_preempt_curr(WF_FORK)`); START_DEBIT
    /// usually keeps it from preempting. A SCHED_IDLE curr is preempted by
    /// any other wakee; a SCHED_BATCH or SCHED_IDLE wakee preempts nothing
    /// (their preemption is the tick's).
    pub(super) fn check_preempt_wakeup(
        &mut self,
        ses: &mut Entities,
        woken: TaskId,
        now: Ns,
        (fork, pol): (bool, super::wakeup_policy::WakeupPolicies),
        f: &Features,
    ) -> bool {
        let Some(c) = self.curr else { return true };
        if c == woken {
            return false;
        }
        let scale = self.nr_queued as u64 >= self.params.cfs.sched_nr_latency;
        let mut next_buddy_marked = false;
        if sched_feat!(f, NEXT_BUDDY) && scale && !fork && ses[woken.idx()].on_rq {
            self.next = Some(woken);
            next_buddy_marked = true;
        }
        let preempt = if pol.curr_idle && !pol.woken_idle {
            true
        } else if pol.woken_idle || pol.woken_batch || !sched_feat!(f, WAKEUP_PREEMPTION) {
            false
        } else {
            self.update_curr_cfs(ses, now);
            if self.wakeup_preempt_entity(&ses[c.idx()], &ses[woken.idx()]) != 1 {
                return false;
            }
            if !next_buddy_marked && ses[woken.idx()].on_rq {
                self.next = Some(woken);
            }
            true
        };
        if preempt && ses[c.idx()].on_rq && sched_feat!(f, LAST_BUDDY) && scale {
            self.last = Some(c);
        }
        preempt
    }
}
