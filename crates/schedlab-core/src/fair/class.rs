//! The fair class's hooks in the class table (`fair_sched_class` in
//! kernel/sched/fair.c): what `enqueue_task_fair`, `dequeue_task_fair`,
//! `pick_next_task_fair`, `put_prev_task_fair`, `set_next_task_fair`,
//! `task_tick_fair`, `check_preempt_wakeup_fair`, `update_curr_fair`,
//! `task_fork_fair` and `migrate_task_rq_fair` do around the EEVDF runqueue
//! (`eevdf.rs`) and PELT (`pelt.rs`). The engine reaches them only through
//! `class::hooks`.
//!
//! The peer classes (`policies`) keep the fair runqueue's PELT inputs so that
//! utilisation-driven code and the metrics see the same signals; they call
//! [`Sim::update_load_avg`] and the util_est helpers from here.

use crate::engine::Sim;
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags, Pick, SchedEntity};
use crate::fair::wakeup_policy::WakeupPolicies;
use crate::fair::weight::{WEIGHT_IDLEPRIO, WMULT_IDLEPRIO};
use crate::ids::{CpuId, TaskId};
use crate::pelt;
use crate::sched_feat;
use crate::workload::SchedPolicy;

/// `update_load_avg` option `DO_ATTACH` (kernel/sched/fair.c): called from
/// `enqueue_entity`, attach a task whose `last_update_time` is 0.
pub(crate) const DO_ATTACH: u32 = 0x4;

impl Sim {
    /// `update_load_avg(cfs_rq, se, 0)`: bring the fair runqueue's averages,
    /// and the task's if given, to now. Must run before any change of the
    /// runqueue. Calls the cpufreq hook only when the runqueue's averages
    /// `decayed` (see [`Sim::update_load_avg_flags`]).
    #[inline(always)]
    pub fn update_load_avg(&mut self, cpu: CpuId, p: Option<TaskId>) {
        self.update_load_avg_flags(cpu, p, 0);
    }

    /// `update_load_avg(cfs_rq, se, flags)` (kernel/sched/fair.c, the same
    /// in v6.12.y and linux-next 6.19-rc5): age the task, then the runqueue
    /// (`update_cfs_rq_load_avg`, which says whether it `decayed`: a PELT
    /// period boundary was crossed or removed load was folded in). With
    /// [`DO_ATTACH`] a task whose `last_update_time` is 0 (new, or passed
    /// through `migrate_task_rq_fair`) joins the runqueue's averages
    /// (`attach_entity_load_avg`, which itself calls `cfs_rq_util_change`);
    /// otherwise `cfs_rq_util_change` runs only when the runqueue decayed.
    /// An update inside the same 1024 us period changes nothing schedutil
    /// reads but `util_est`, whose callers order it before this update.
    ///
    /// DEVIATION(kernel): no `DO_DETACH`. The kernel detaches a task that a
    /// load balance moves in `dequeue_entity` (`task_on_rq_migrating`), at
    /// once and with a hook; schedlab removes its averages lazily
    /// (`migrate_task_rq_fair` -> `remove_entity_load_avg`), as for a
    /// wakeup migration, so the source runqueue's hook comes at its next
    /// update, where the folded removal makes it `decayed`. No task groups:
    /// `propagate_entity_load_avg` is 0 for a task, `UPDATE_TG` has nothing
    /// to update, and the runqueue is always the root one.
    #[inline(always)]
    pub(crate) fn update_load_avg_flags(&mut self, cpu: CpuId, p: Option<TaskId>, flags: u32) {
        self.update_rq_clock(cpu);
        self.update_load_avg_clocked(cpu, p, flags);
    }

    /// `update_load_avg_flags` where the caller has just updated the clock
    /// (an `update_curr` of the running fair task, or an update of the
    /// averages) with no switch since: the update's test would only return.
    #[inline(always)]
    pub(crate) fn update_load_avg_clocked(&mut self, cpu: CpuId, p: Option<TaskId>, flags: u32) {
        debug_assert!(
            self.rqs[cpu.idx()].clock == self.now
                && self.rqs[cpu.idx()].clock_running == self.rqs[cpu.idx()].curr.is_some(),
            "clock not updated"
        );
        if let Some(p) = p {
            let rq = &self.rqs[cpu.idx()];
            let now = rq.clock_pelt.rq_clock_pelt();
            let running = rq.cfs.curr == Some(p) && rq.curr == Some(p);
            let se = &self.fair.ses[p.idx()];
            let t = &mut self.tasks[p.idx()];
            if t.avg.last_update_time != 0 {
                pelt::update_load_avg_se(&mut t.avg, now, se.weight, se.on_rq, running);
            }
        }
        let decayed = self.update_cfs_rq_load_avg(cpu);
        if let Some(p) = p {
            if flags & DO_ATTACH != 0 && self.tasks[p.idx()].avg.last_update_time == 0 {
                let w = self.fair.ses[p.idx()].weight;
                let rq = &mut self.rqs[cpu.idx()];
                let t = &mut self.tasks[p.idx()];
                pelt::attach_entity_load_avg(&mut rq.cfs_avg, &mut t.avg, w);
                if t.avg.last_update_time == 0 {
                    // A runqueue never updated yet: keep "attached" visible.
                    t.avg.last_update_time = 1;
                }
                self.cfs_rq_util_change(cpu);
                return;
            }
        }
        if decayed {
            self.cfs_rq_util_change(cpu);
        }
    }

    /// `update_cfs_rq_load_avg(now, cfs_rq)` on `cpu`'s fair runqueue at its
    /// PELT clock (the caller updated the rq clock): fold removed load in
    /// and advance the averages. Returns `decayed`.
    #[inline(always)]
    pub(crate) fn update_cfs_rq_load_avg(&mut self, cpu: CpuId) -> bool {
        let rq = &mut self.rqs[cpu.idx()];
        let now = rq.clock_pelt.rq_clock_pelt();
        let fair_running = rq.cfs.curr.is_some() && rq.curr.is_some();
        pelt::update_cfs_rq_load_avg(
            &mut rq.cfs_avg,
            &mut rq.removed,
            now,
            rq.cfs.load_weight,
            rq.cfs.h_nr_runnable as u64,
            fair_running,
        )
    }

    /// `cfs_rq_util_change(cfs_rq, 0)`: the root runqueue's utilisation
    /// changed, tell cpufreq (`cpufreq_update_util(rq, 0)`). schedlab has
    /// only root runqueues.
    #[inline]
    pub(crate) fn cfs_rq_util_change(&mut self, cpu: CpuId) {
        self.cpufreq_update_util(cpu);
    }

    /// The PELT part of `enqueue_task_fair` shared with the peer classes, in
    /// the kernel's order: `util_est_enqueue` ("before we update
    /// schedutil"), the explicit `SCHED_CPUFREQ_IOWAIT` hook of a task back
    /// from an I/O wait, then `enqueue_entity`'s `update_load_avg(UPDATE_TG
    /// | DO_ATTACH)`, which attaches a migrated or new task.
    #[inline(always)]
    pub(crate) fn enqueue_pelt_fair(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        // A delayed task moving with its queue keeps its util_est where it
        // is; every other enqueue adds it.
        let delayed_move = self.fair.ses[p.idx()].sched_delayed && flags.has(EnqueueFlags::MIGRATED);
        if !delayed_move {
            let rq = &mut self.rqs[cpu.idx()];
            pelt::util_est_enqueue(&mut rq.cfs_avg, &self.tasks[p.idx()].avg, &self.features);
        }
        // enqueue_task_fair: "If in_iowait is set, the code below may not
        // trigger any cpufreq utilization updates, so do it here explicitly
        // with the IOWAIT flag passed." The peer classes (sched_ext, BMQ) do
        // not.
        if self.tasks[p.idx()].in_iowait && self.normal_class == crate::class::SchedClass::Fair {
            self.cpufreq_update_util_flags(cpu, crate::cpufreq::iowait::SCHED_CPUFREQ_IOWAIT);
        }
        self.update_load_avg_flags(cpu, Some(p), DO_ATTACH);
    }

    /// The PELT part of `dequeue_task_fair` shared with the peer classes:
    /// `util_est_dequeue` first (so that a hook of the update sees the
    /// runqueue without the task), then `dequeue_entity`'s
    /// `update_load_avg`, then `util_est_update`.
    ///
    /// DEVIATION(kernel): the trees read (v6.12.67, linux-next 6.19-rc5)
    /// run `util_est_update` before `dequeue_entities`, so it reads the
    /// task's util_avg as of its previous update; here it reads it after
    /// this update, the order before the DELAY_DEQUEUE rework (v6.11 and
    /// older, as the rework's patches describe it; not checked in a tree).
    /// Changing it moves util_est, hence runs without a governor.
    #[inline(always)]
    pub(crate) fn dequeue_pelt_fair(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) {
        // A delayed task left util_est when it was delayed.
        if !self.fair.ses[p.idx()].sched_delayed {
            let rq = &mut self.rqs[cpu.idx()];
            pelt::util_est_dequeue(&mut rq.cfs_avg, &self.tasks[p.idx()].avg, &self.features);
        }
        self.update_load_avg(cpu, Some(p));
        pelt::util_est_update(&mut self.tasks[p.idx()].avg, flags.has(DequeueFlags::SLEEP), &self.features);
    }

    /// What a peer class's enqueue shares with the fair runqueue
    /// (`account_entity_enqueue` with the `h_nr_runnable` count of
    /// `enqueue_task_fair`): `p`'s weight and one more queued, runnable
    /// entity, so the runqueue's PELT inputs are the fair class's; the entity
    /// is marked queued for `update_load_avg`. Called from `peer_enqueue`.
    pub(crate) fn account_peer_enqueue(&mut self, cpu: CpuId, p: TaskId) {
        let w = self.fair.ses[p.idx()].weight;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.load_weight += w;
        cfs.nr_queued += 1;
        cfs.h_nr_runnable += 1;
        self.fair.ses[p.idx()].on_rq = true;
    }

    /// The inverse of [`Sim::account_peer_enqueue`] (`account_entity_dequeue`).
    /// Called from `peer_dequeue`.
    pub(crate) fn account_peer_dequeue(&mut self, cpu: CpuId, p: TaskId) {
        let w = self.fair.ses[p.idx()].weight;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.load_weight -= w;
        cfs.nr_queued -= 1;
        cfs.h_nr_runnable -= 1;
        self.fair.ses[p.idx()].on_rq = false;
    }

    /// `enqueue_task_fair`.
    pub(crate) fn enqueue_task_fair(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        self.enqueue_pelt_fair(cpu, p, flags);
        let now = self.rq_clock_task_updated(cpu);
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.enqueue_entity(&mut self.fair.ses, p, now, flags, &self.features);
        if self.tasks[p.idx()].policy == SchedPolicy::Idle {
            cfs.h_nr_idle += 1;
        }
        if sched_feat!(self.features, HRTICK) {
            self.hrtick_update(cpu);
        }
    }

    /// The part of `enqueue_task_fair` that runs after the core counted the
    /// task (`add_nr_running`): the overutilized check, for wakeups only (not
    /// for new or moved tasks).
    pub(crate) fn enqueue_task_fair_done(&mut self, cpu: CpuId, flags: EnqueueFlags) {
        if flags.has(EnqueueFlags::WAKEUP) {
            self.check_update_overutilized_status(cpu);
        }
    }

    /// `dequeue_task_fair`; `false` when DELAY_DEQUEUE keeps it queued.
    pub(crate) fn dequeue_task_fair(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        self.dequeue_pelt_fair(cpu, p, flags);
        let now = self.rq_clock_task_updated(cpu);
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        let done = cfs.dequeue_entity(&mut self.fair.ses, p, now, flags, &self.features);
        // A delayed entity stays counted until its dequeue completes, as
        // dequeue_entities returns before `h_nr_idle -= ...` for it.
        if done && self.tasks[p.idx()].policy == SchedPolicy::Idle {
            cfs.h_nr_idle -= 1;
        }
        done
    }

    /// `ttwu_runnable` for a delayed fair entity: requeue it in place.
    pub(crate) fn requeue_delayed_fair(&mut self, cpu: CpuId, p: TaskId) {
        // enqueue_task_fair adds util_est before requeue_delayed_entity's
        // update_load_avg.
        let rq = &mut self.rqs[cpu.idx()];
        pelt::util_est_enqueue(&mut rq.cfs_avg, &self.tasks[p.idx()].avg, &self.features);
        self.update_load_avg(cpu, Some(p));
        let rq = &mut self.rqs[cpu.idx()];
        rq.cfs.requeue_delayed_entity(&mut self.fair.ses, p, &self.features);
    }

    /// `task_dead_fair`: the exited task's load leaves the runqueue.
    pub(crate) fn task_dead_fair(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &mut self.rqs[cpu.idx()];
        pelt::remove_entity_load_avg(&mut rq.removed, &self.tasks[p.idx()].avg);
    }

    /// `task_fork_fair` + `init_entity_runnable_average`: a fresh entity; a
    /// new task starts with its full weight as load so fork balancing sees it.
    pub(crate) fn task_fork_fair(&mut self, p: TaskId) {
        let nice = self.tasks[p.idx()].nice;
        self.fair.ses[p.idx()] = SchedEntity::new(nice, self.fair.base_slice_ns);
        if self.tasks[p.idx()].policy == SchedPolicy::Idle {
            // set_load_weight: SCHED_IDLE has the idle weight whatever its nice.
            let se = &mut self.fair.ses[p.idx()];
            (se.weight, se.inv_weight) = (WEIGHT_IDLEPRIO, WMULT_IDLEPRIO);
        }
        let w = self.fair.ses[p.idx()].weight;
        self.tasks[p.idx()].avg = pelt::SchedAvg { load_avg: w, ..Default::default() };
    }

    /// `post_init_entity_util_avg`: a new task's util starts at its share of
    /// the runqueue's util, capped at half the CPU's spare capacity.
    pub(crate) fn post_init_entity_util_avg(&mut self, p: TaskId, cpu: CpuId) {
        let cap = self.machine.capacity_orig(cpu) as u64;
        let rq = &self.rqs[cpu.idx()];
        let cfs = &rq.cfs_avg;
        let cap_left = cap.saturating_sub(cfs.util_avg) / 2;
        let w = self.fair.ses[p.idx()].weight;
        let t = &mut self.tasks[p.idx()];
        if cap_left > 0 {
            let util = if cfs.util_avg != 0 { (cfs.util_avg * w / (cfs.load_avg + 1)).min(cap_left) } else { cap_left };
            t.avg.util_avg = util;
        }
        t.avg.runnable_avg = t.avg.util_avg;
    }

    /// `migrate_task_rq_fair`: the task's load leaves the old runqueue
    /// (`remove_entity_load_avg`, folded in at that runqueue's next update);
    /// at a wakeup (not `migrating`) from an idle CPU, `migrate_se_pelt_lag`
    /// then decays the task over the idle time that CPU's clock missed.
    pub(crate) fn migrate_task_rq_fair(&mut self, p: TaskId, old: CpuId, migrating: bool) {
        // CFS: a waking task's vruntime leaves relative to the old min_vruntime.
        self.rqs[old.idx()].cfs.migrate_task_rq_fair(&mut self.fair.ses, p, &self.features);
        let w = self.fair.ses[p.idx()].weight;
        let rq = &mut self.rqs[old.idx()];
        let t = &mut self.tasks[p.idx()];
        if t.avg.last_update_time != 0 {
            // sync_entity_load_avg: decay the task to the old rq's last update.
            pelt::update_load_avg_blocked_se(&mut t.avg, rq.cfs_avg.last_update_time, w);
            pelt::remove_entity_load_avg(&mut rq.removed, &t.avg);
            if !migrating && sched_feat!(self.features, migrate_se_pelt_lag) {
                migrate_se_pelt_lag(&mut t.avg, rq, self.now, w);
            }
        }
        t.avg.last_update_time = 0;
        self.fair.ses[p.idx()].exec_start = 0;
    }

    /// `check_preempt_wakeup_fair`: whether waking fair task `p` preempts
    /// `cpu`'s running fair task.
    pub(crate) fn wakeup_preempt_fair(&mut self, cpu: CpuId, p: TaskId) -> bool {
        let now = self.rq_clock_task(cpu);
        let fork = self.tasks[p.idx()].avg.last_update_time != 0 && !self.tasks[p.idx()].has_run;
        let woken = self.tasks[p.idx()].policy;
        let curr = self.rqs[cpu.idx()].curr.map(|c| self.tasks[c.idx()].policy);
        let pol = WakeupPolicies {
            curr_idle: curr == Some(SchedPolicy::Idle),
            woken_idle: woken == SchedPolicy::Idle,
            woken_batch: woken == SchedPolicy::Batch,
        };
        let rq = &mut self.rqs[cpu.idx()];
        rq.cfs.wakeup_preempt_fair(&mut self.fair.ses, p, now, (fork, pol), &self.features)
    }

    /// `update_curr_fair`; returns whether the slice ran out.
    pub(crate) fn update_curr_fair(&mut self, cpu: CpuId) -> bool {
        let now = self.rq_clock_task(cpu);
        // update_curr moves the current entity's runtime, vruntime and
        // deadline, the queue's zero_vruntime and its next buddy: nothing
        // the balance statistics' group sums read (`h_nr_runnable`, the
        // PELT averages), so the CPU is not noted changed for it.
        self.rqs.untracked_mut(cpu.idx()).cfs.update_curr(&mut self.fair.ses, now).resched
    }

    /// `yield_task_fair`: nothing when `p` is alone on the CPU; else clear
    /// its buddies and charge its runtime; under EEVDF an eligible `p` then
    /// forfeits the rest of its request (`vruntime = deadline`, a new
    /// deadline one slice later: fair.c as of late 2025; v6.6-v6.17 only
    /// pushed the deadline), under CFS it becomes the skip buddy.
    pub(crate) fn yield_task_fair(&mut self, cpu: CpuId, p: TaskId) {
        if self.rqs[cpu.idx()].nr_running == 1 {
            return;
        }
        let now = self.rq_clock_task(cpu);
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.update_curr(&mut self.fair.ses, now);
        // clear_buddies(cfs_rq, se)
        if cfs.next == Some(p) {
            cfs.next = None;
        }
        if cfs.last == Some(p) {
            cfs.last = None;
        }
        if !sched_feat!(cfs.features, EEVDF) {
            cfs.skip = Some(p);
        } else if cfs.entity_eligible(&self.fair.ses, p) {
            let se = &mut self.fair.ses[p.idx()];
            se.vruntime = se.deadline;
            se.deadline += super::weight::calc_delta_fair(se.slice, se);
        }
    }

    /// `task_tick_fair`: PELT, the overutilized check; reschedule when the
    /// slice ran out and another fair task waits.
    pub(crate) fn task_tick_fair(&mut self, cpu: CpuId, curr: TaskId, resched: bool) -> bool {
        // `sched_tick`, the only caller, ran `update_curr` (the clock) first.
        self.update_load_avg_clocked(cpu, Some(curr), 0);
        self.update_misfit_status(Some(curr), cpu);
        self.check_update_overutilized_status(cpu);
        resched && self.rqs[cpu.idx()].cfs.h_nr_runnable > 1
    }

    /// `put_prev_task_fair`: PELT of the leaving task, and `put_prev_entity`
    /// (also for a task that just blocked: it clears `cfs.curr` and requeues
    /// a delayed entity).
    pub(crate) fn put_prev_task_fair(&mut self, cpu: CpuId, prev: TaskId) {
        // Every caller updated the clock just before: `__schedule`'s and
        // the active balance's `update_curr` of `prev`, a policy change's
        // dequeue. `put_prev_entity` updates the averages only of an
        // entity still queued ("in !on_rq case, update occurred at
        // dequeue", kernel/sched/fair.c, unchanged in the trees read from
        // v4.x to v6.x): a task that just blocked was brought to this
        // instant by its dequeue (69,887 of the standard bench's 75,556
        // calls, each an update of under 1,024 ns that changed nothing).
        // Load removed from this runqueue in between (a task woken onto
        // another CPU) is folded in at the runqueue's next update, as in
        // the kernel, not here.
        //
        // The usual case (prev blocked) is kept lean: `put_prev_entity` of
        // an entity not queued only clears curr, so the queued case's PELT
        // update and `update_curr` are out of line, and the callers do not
        // save registers for them at every switch.
        if self.fair.ses[prev.idx()].on_rq {
            return self.put_prev_task_fair_queued(cpu, prev);
        }
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        if cfs.curr == Some(prev) {
            cfs.curr = None;
        }
    }

    /// [`Sim::put_prev_task_fair`] of an entity still queued (preempted,
    /// or a policy change's), out of line.
    #[inline(never)]
    fn put_prev_task_fair_queued(&mut self, cpu: CpuId, prev: TaskId) {
        self.update_load_avg_clocked(cpu, Some(prev), 0);
        if self.rqs[cpu.idx()].cfs.curr == Some(prev) {
            let now = self.rq_clock_task_updated(cpu);
            self.rqs[cpu.idx()].cfs.put_prev_entity(&mut self.fair.ses, now);
        }
    }

    /// `pick_next_task_fair`: the next entity (finishing the dequeue of
    /// delayed ones it meets), or newly-idle balancing when there is none.
    pub(crate) fn pick_next_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        loop {
            match self.pick_task_fair(cpu) {
                Some(t) => return Some(t),
                None => {
                    if self.sched_balance_newidle(cpu) > 0 {
                        continue;
                    }
                    self.update_misfit_status(None, cpu);
                    // The rq is about to be idle: an always-running rq's
                    // PELT clock lag is lost idle time, not time to give back.
                    let rq = self.rqs.untracked_mut(cpu.idx());
                    let (cfs, rt) = (rq.cfs_avg.util_sum, rq.rt_avg.util_sum);
                    rq.clock_pelt.update_idle_rq_clock_pelt(cfs, rt, 0);
                    return None;
                }
            }
        }
    }

    /// `pick_task_fair`: the entity EEVDF picks, finishing the dequeue of
    /// delayed entities on the way.
    #[inline(always)]
    pub(crate) fn pick_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        loop {
            match self.rqs[cpu.idx()].cfs.pick_next_entity(&self.fair.ses, &self.features) {
                Pick::Task(t) => return Some(t),
                Pick::Delayed(t) => self.finish_delayed_dequeue(cpu, t),
                Pick::Idle => return None,
            }
        }
    }

    /// `set_next_task_fair`: PELT of the incoming task and `set_next_entity`;
    /// `first` when it takes the CPU from another task (`__set_next_task_fair`
    /// then starts the slice timer).
    pub(crate) fn set_next_task_fair(&mut self, cpu: CpuId, next: TaskId, first: bool) {
        self.update_load_avg(cpu, Some(next));
        let now = self.rq_clock_task_updated(cpu);
        self.rqs[cpu.idx()].cfs.set_next_entity(&mut self.fair.ses, next, now, &self.features);
        if first && sched_feat!(self.features, HRTICK) {
            self.hrtick_start_fair(cpu, next);
        }
        self.update_misfit_status(Some(next), cpu);
    }

    /// `set_load_weight` for a task whose policy or nice changed while off
    /// its runqueue (`reweight_entity` for a dequeued entity): the new
    /// weight, and `vlag` rescaled so that its lag in time is kept.
    pub(crate) fn set_load_weight_fair(&mut self, p: TaskId) {
        let t = &self.tasks[p.idx()];
        let (w, inv) = if t.policy == SchedPolicy::Idle {
            (WEIGHT_IDLEPRIO, WMULT_IDLEPRIO)
        } else {
            let w = crate::fair::weight::nice_to_weight(t.nice);
            (w, crate::fair::weight::inv_weight(w))
        };
        let se = &mut self.fair.ses[p.idx()];
        if se.weight != w {
            se.vlag = (se.vlag as i128 * se.weight as i128 / w as i128) as i64;
            (se.weight, se.inv_weight) = (w, inv);
        }
    }

    /// `switched_from_fair` (`detach_task_cfs_rq`): the task's load and util
    /// leave the runqueue's averages; it attaches afresh if it comes back.
    pub(crate) fn switched_from_fair(&mut self, cpu: CpuId, p: TaskId) {
        self.update_load_avg(cpu, Some(p));
        let rq = &mut self.rqs[cpu.idx()];
        let t = &mut self.tasks[p.idx()];
        pelt::remove_entity_load_avg(&mut rq.removed, &t.avg);
        t.avg.last_update_time = 0;
    }

    /// `switched_to_fair`: the task joined the fair class (its averages were
    /// attached by the enqueue); running, it reschedules so the pick decides.
    pub(crate) fn switched_to_fair(&mut self, cpu: CpuId, p: TaskId) -> bool {
        self.tasks[p.idx()].on_rq && self.rqs[cpu.idx()].curr == Some(p)
    }

    /// `prio_changed_fair`: a running task whose priority dropped (nice
    /// went up) reschedules, unless it is alone on its runqueue.
    pub(crate) fn prio_changed_fair(&mut self, cpu: CpuId, p: TaskId, oldprio: i32) -> bool {
        let rq = &self.rqs[cpu.idx()];
        if !self.tasks[p.idx()].on_rq || rq.cfs.nr_queued == 1 {
            return false;
        }
        rq.curr == Some(p) && self.tasks[p.idx()].prio > oldprio
    }
}

/// `migrate_se_pelt_lag` (v6.0, `CONFIG_NO_HZ_COMMON`): a task leaving an
/// idle CPU at wakeup was synced to that CPU's last cfs_rq update, which
/// can be long past (an idle CPU's clock is not updated). Estimate now as
/// the CPU's PELT clock when its clock was last updated while idle plus
/// the time since then, or the cfs_rq's update if that is later (the
/// kernel's own choice when the estimate would go backwards), and decay
/// the task's averages to it. Skipped when the task has fully decayed or
/// the CPU is running something (its clock is fresh then). Bandwidth
/// throttling, which the kernel subtracts, is not modelled.
fn migrate_se_pelt_lag(sa: &mut pelt::SchedAvg, rq: &crate::engine::rq::Rq, now: crate::ids::Ns, weight: u64) {
    if pelt::load_avg_is_decayed(sa) || rq.curr.is_some() {
        return;
    }
    let lut = rq.cfs_avg.last_update_time;
    let mut est = rq.clock_pelt.clock_pelt_idle;
    if est < lut {
        est = lut;
    } else {
        est += now.saturating_sub(rq.clock_pelt.clock_idle);
    }
    pelt::update_load_avg_blocked_se(sa, est, weight);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rq::Rq;
    use crate::fair::eevdf::EevdfParams;

    const MS: u64 = 1_000_000;
    const W: u64 = 1024;

    /// A task that ran 8 ms alone and slept at 10 ms, on an idle CPU whose
    /// cfs_rq was last updated then; the CPU's clock was last updated while
    /// idle at `stamp`.
    fn slept(stamp: u64) -> (SchedAvg, Rq) {
        let mut sa = SchedAvg::default();
        pelt::update_load_avg_se(&mut sa, 2 * MS, W, true, true);
        pelt::update_load_avg_se(&mut sa, 10 * MS, W, true, true);
        let mut rq = Rq::new(1024, Vec::new(), EevdfParams::new(1, 250));
        rq.cfs_avg.last_update_time = sa.last_update_time;
        rq.clock_pelt.clock_idle = stamp;
        rq.clock_pelt.clock_pelt_idle = stamp;
        (sa, rq)
    }

    fn decayed_to(mut sa: SchedAvg, t: u64) -> SchedAvg {
        pelt::update_load_avg_blocked_se(&mut sa, t, W);
        sa
    }

    use crate::pelt::SchedAvg;

    #[test]
    fn a_wakeup_from_an_idle_cpu_decays_over_the_missed_idle_time() {
        // Stamped at 30 ms while idle, woken at 50 ms: now is estimated as
        // 30 + (50 - 30) = 50 ms, so the task decays over its whole 40 ms sleep.
        let (mut sa, rq) = slept(30 * MS);
        let before = sa;
        migrate_se_pelt_lag(&mut sa, &rq, 50 * MS, W);
        assert_eq!(sa, decayed_to(before, 50 * MS));
        assert!(sa.util_avg < before.util_avg / 2, "{} -> {}", before.util_avg, sa.util_avg);
    }

    #[test]
    fn a_stamp_older_than_the_cfs_update_gives_the_cfs_update() {
        // Last stamped before the task slept: the estimate would go back in
        // time, so the kernel keeps the cfs_rq's last update (no decay here).
        let (mut sa, rq) = slept(5 * MS);
        let before = sa;
        migrate_se_pelt_lag(&mut sa, &rq, 50 * MS, W);
        assert_eq!(sa, decayed_to(before, rq.cfs_avg.last_update_time));
        assert_eq!(sa.util_avg, before.util_avg);
    }

    #[test]
    fn no_estimate_from_a_busy_cpu_or_for_a_decayed_task() {
        let (mut sa, mut rq) = slept(30 * MS);
        rq.curr = Some(TaskId(7));
        let before = sa;
        migrate_se_pelt_lag(&mut sa, &rq, 50 * MS, W);
        assert_eq!(sa, before, "a running CPU's clock is fresh");
        let (_, rq) = slept(30 * MS);
        let mut zero = SchedAvg { last_update_time: 10 * MS, ..SchedAvg::default() };
        migrate_se_pelt_lag(&mut zero, &rq, 50 * MS, W);
        assert_eq!(zero.last_update_time, 10 * MS, "load_avg_is_decayed: nothing to do");
    }
}
