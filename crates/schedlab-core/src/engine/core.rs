//! The core scheduler paths (kernel/sched/core.c): `try_to_wake_up`,
//! `wake_up_new_task`, `enqueue_task`/`dequeue_task`, `set_task_cpu` and
//! `__schedule`. The fair class's decisions are called from here at the same
//! points the kernel calls them.

use super::task::TaskState;
use super::{key_timer, Ev, Sim};
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::fair::wakeup::WakeCtx;
use crate::ids::{CpuId, Ns, TaskId};
use crate::pelt;
use crate::sched_feat;
use crate::trace::{Event, MigrateReason, PlacePath, PrevState};
use crate::tunables::update_avg;
use crate::workload::StartKind;

/// Wake flag: the waker is about to sleep (`WF_SYNC`).
pub const WF_SYNC: u32 = 0x10;
/// Wake flag: a fork (`WF_FORK`).
pub const WF_FORK: u32 = 0x02;
/// Wake flag: an ordinary wakeup (`WF_TTWU`).
pub const WF_TTWU: u32 = 0x08;
/// Wake flag: an exec (`WF_EXEC`).
pub const WF_EXEC: u32 = 0x01;

/// The end of `update_rq_clock` (both of [`Sim::update_rq_clock_to_now`]'s
/// paths): the clock's stamp, whether a task ran, and the PELT clock moved
/// on to the new task clock `clock_task`.
#[inline(always)]
fn advance_rq_clock_pelt(rq: &mut super::rq::Rq, now: Ns, clock_task: Ns, cap: u64, freq: u64) {
    let running = rq.curr.is_some();
    rq.clock_running = running;
    let clock = rq.clock;
    // At time 0 every call updates (the clock starts there).
    rq.clock_stamp = if now != 0 { now } else { Ns::MAX };
    rq.clock_pelt.update_rq_clock_pelt(clock_task, clock, running, cap, freq);
}

impl Sim {
    /// Bring the PELT clock of `cpu` to now (`update_rq_clock`).
    #[inline]
    pub fn update_rq_clock(&mut self, cpu: CpuId) {
        // Already brought to now with the same task state: nothing elapsed,
        // nothing to account (the classes' hooks ask for `rq_clock_task`
        // several times per event, so this test is inlined at each and the
        // update is not). A CPU that just went idle still syncs its PELT
        // clock, as the kernel's idle path does at delta 0.
        let rq = &self.rqs[cpu.idx()];
        if rq.clock_stamp == self.now {
            debug_assert!(rq.clock == self.now && self.now != 0 && rq.clock_running == rq.curr.is_some());
            return;
        }
        self.update_rq_clock_to_now(cpu);
    }

    /// `update_rq_clock`'s work when time passed or the task state changed.
    #[inline(never)]
    fn update_rq_clock_to_now(&mut self, cpu: CpuId) {
        debug_assert_eq!(self.rqs[cpu.idx()].capacity_orig, self.machine.capacity_orig(cpu));
        if self.rqs[cpu.idx()].irq_time != self.rqs[cpu.idx()].prev_irq_time {
            self.update_rq_clock_irq(cpu);
            return;
        }
        // No IRQ time ran since the last update (most CPUs take no
        // interrupt): `update_rq_clock_task`'s IRQ delta is 0, all the
        // elapsed time is task time and the IRQ average is not updated, as
        // in [`Sim::update_rq_clock_irq`] with a zero delta. Apart, so that
        // this path keeps few values live (with the IRQ part inline, every
        // call saved and restored five or six registers).
        let freq = self.freq_capacity(cpu) as u64;
        let now = self.now;
        // The clocks are not in the balance statistics' group sums
        // (capacity_of is `cpu_capacity`, set by update_cpu_capacity): the
        // CPU is not noted changed for them.
        let rq = self.rqs.untracked_mut(cpu.idx());
        let cap = rq.capacity_orig as u64;
        let delta = now.saturating_sub(rq.clock);
        rq.clock = rq.clock.max(now);
        let clock_task = rq.clock_pelt.clock_task + delta;
        advance_rq_clock_pelt(rq, now, clock_task, cap, freq);
    }

    /// [`Sim::update_rq_clock_to_now`] of a CPU that spent IRQ time since
    /// its last update.
    #[cold]
    #[inline(never)]
    fn update_rq_clock_irq(&mut self, cpu: CpuId) {
        let freq = self.freq_capacity(cpu) as u64;
        let now = self.now;
        let nontask = sched_feat!(self.features, NONTASK_CAPACITY);
        // The IRQ average is in no group sum either (as the clocks).
        let rq = self.rqs.untracked_mut(cpu.idx());
        let cap = rq.capacity_orig as u64;
        // update_rq_clock_task: IRQ time that ran since the last update is
        // not task time (at most the elapsed time is taken each update).
        let delta = now.saturating_sub(rq.clock);
        rq.clock = rq.clock.max(now);
        let irq_delta = (rq.irq_time - rq.prev_irq_time).min(delta);
        rq.prev_irq_time += irq_delta;
        let clock_task = rq.clock_pelt.clock_task + (delta - irq_delta);
        if irq_delta > 0 && nontask {
            pelt::update_irq_load_avg(&mut rq.irq_avg, now, irq_delta, cap, freq);
        }
        advance_rq_clock_pelt(rq, now, clock_task, cap, freq);
    }

    /// `rq_clock_task(rq)` after `update_rq_clock`: the CPU's time minus the
    /// IRQ time it spent, ns. Class runtimes are measured on it.
    pub fn rq_clock_task(&mut self, cpu: CpuId) -> Ns {
        self.update_rq_clock(cpu);
        self.rqs[cpu.idx()].clock_pelt.clock_task
    }

    /// `rq_clock_task(rq)` right after the caller updated the clock (the
    /// fair hooks' `update_load_avg` starts with `update_rq_clock`) with
    /// no switch since: a second update would stop at its test (or, at
    /// time 0, redo the same update), so this reads the clock only.
    #[inline]
    pub(crate) fn rq_clock_task_updated(&self, cpu: CpuId) -> Ns {
        let rq = &self.rqs[cpu.idx()];
        debug_assert!(rq.clock == self.now && rq.clock_running == rq.curr.is_some(), "clock not updated");
        rq.clock_pelt.clock_task
    }

    /// `update_other_load_avgs`: decay the RT and IRQ averages of `cpu` to
    /// now (the blocked-averages update does this for every runqueue).
    /// Returns whether one of them decayed (crossed a PELT period).
    pub fn update_other_load_avgs(&mut self, cpu: CpuId) -> bool {
        self.update_rq_clock(cpu);
        let now = self.now;
        let rt_running = self.rqs[cpu.idx()].curr.is_some_and(|c| self.task_class(c) == crate::class::SchedClass::Rt);
        // The RT and IRQ averages are in no group sum (`update_cpu_capacity`
        // notes the CPU when the capacity they give changes).
        let rq = self.rqs.untracked_mut(cpu.idx());
        let pelt_now = rq.clock_pelt.rq_clock_pelt();
        let rt = pelt::update_rt_rq_load_avg(&mut rq.rt_avg, pelt_now, rt_running);
        rt | pelt::update_irq_load_avg(&mut rq.irq_avg, now, 0, 1024, 1024)
    }

    /// `enqueue_task` (core.c): the class queues `p` on `cpu`, then the core
    /// counts it (`add_nr_running`, which also sets the root domain
    /// overloaded) and samples the idle period it ends. Always inlined at
    /// its seven callers (round 19: -2.6 M on the standard bench; round 12
    /// measured +13.0 M, before the class hooks and the run loop changed).
    #[inline(always)]
    pub fn enqueue_task(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        // uclamp_rq_inc: before the class since 2025, so that the frequency
        // request of its enqueue sees the task's clamps; after it before.
        let uclamp_before = sched_feat!(self.features, uclamp_inc_before_enqueue);
        if uclamp_before {
            self.uclamp_rq_inc(cpu, p, flags.has(EnqueueFlags::DELAYED));
        }
        self.class_enqueue_task(cpu, p, flags);
        if !uclamp_before {
            self.uclamp_rq_inc(cpu, p, flags.has(EnqueueFlags::DELAYED));
        }
        self.tasks[p.idx()].on_rq = true;
        let rq = &mut self.rqs[cpu.idx()];
        rq.nr_running += 1;
        if rq.nr_running >= 2 {
            self.rd_overloaded = true;
        }
        if sched_feat!(self.features, avg_idle_on_enqueue) {
            self.update_avg_idle_on_enqueue(cpu);
        }
        self.class_enqueue_done(cpu, p, flags);
    }

    /// `dequeue_task` (core.c): take `p` off its runqueue. Returns `false`
    /// when the class keeps it queued (DELAY_DEQUEUE).
    pub fn dequeue_task(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        // Before the class, which may keep the task queued as delayed: a
        // delayed task leaves the clamps when it sleeps.
        self.uclamp_rq_dec(cpu, p);
        let done = self.class_dequeue_task(cpu, p, flags);
        if done {
            self.tasks[p.idx()].on_rq = false;
            self.rqs[cpu.idx()].nr_running -= 1;
        }
        done
    }

    /// Finish dequeuing a delayed entity picked by `pick_next_entity`.
    pub(crate) fn finish_delayed_dequeue(&mut self, cpu: CpuId, p: TaskId) {
        let ok = self.dequeue_task(cpu, p, DequeueFlags::SLEEP | DequeueFlags::DELAYED);
        debug_assert!(ok, "delayed dequeue must complete");
    }

    /// `set_task_cpu`: move a task that is not queued anywhere to `new_cpu`;
    /// its class lets go of the old CPU first (`migrate_task_rq`).
    pub fn set_task_cpu(&mut self, p: TaskId, new_cpu: CpuId, reason: MigrateReason) {
        let old = self.tasks[p.idx()].cpu;
        if old == new_cpu {
            return;
        }
        self.class_migrate_task_rq(p, old, reason == MigrateReason::Balance);
        self.tasks[p.idx()].cpu = new_cpu;
        self.emit(Event::Migrate { task: p, orig: old, dest: new_cpu, reason });
    }

    /// `select_task_rq` (core.c): a task allowed on one CPU goes there; else
    /// ask the class for a CPU, then make sure it is allowed (`select_fallback_rq`).
    /// Returns the CPU, the rule that chose it, and the CPUs scanned.
    #[inline(always)]
    pub fn select_task_rq(
        &mut self,
        p: TaskId,
        prev_cpu: CpuId,
        wake_flags: u32,
        this_cpu: CpuId,
    ) -> (CpuId, PlacePath, u32) {
        let t = &self.tasks[p.idx()];
        if t.nr_cpus_allowed == 1 {
            let cpu = t.allowed.first().unwrap_or(prev_cpu);
            return (cpu, PlacePath::Forced, 0);
        }
        let mut ctx = WakeCtx { this_cpu, path: PlacePath::Fallback, scanned: 0 };
        let cpu = self.class_select_task_rq(p, prev_cpu, wake_flags, &mut ctx);
        let t = &self.tasks[p.idx()];
        if !t.allowed.test(cpu) {
            // select_fallback_rq: any allowed CPU, preferring prev's node.
            let node = self.machine.node_cpus[self.machine.cpus[prev_cpu.idx()].node as usize];
            let cpu = t.allowed.and(&node).first().or(t.allowed.first()).unwrap_or(prev_cpu);
            return (cpu, PlacePath::Forced, ctx.scanned);
        }
        (cpu, ctx.path, ctx.scanned)
    }

    /// A workload task comes into existence.
    pub(super) fn task_start(&mut self, p: TaskId) -> crate::Result<()> {
        match self.workload_start[p.idx()] {
            StartKind::Fork { parent_cpu } => self.wake_up_new_task(p, CpuId(parent_cpu)),
            // Created by Action::Spawn, never from the start queue.
            StartKind::Spawned => Ok(()),
            StartKind::Wake { prev_cpu } => {
                self.tasks[p.idx()].cpu = CpuId(prev_cpu);
                self.tasks[p.idx()].state = TaskState::Blocked;
                if self.ksoftirqd_sleeps_from_boot(p) {
                    return Ok(());
                }
                self.try_to_wake_up(p, 0, CpuId(prev_cpu), None)
            }
        }
    }

    /// `wake_up_new_task`: place a new task with the fork path and enqueue it.
    pub fn wake_up_new_task(&mut self, p: TaskId, parent_cpu: CpuId) -> crate::Result<()> {
        self.class_task_fork(p);
        self.tasks[p.idx()].cpu = parent_cpu;
        let (cpu, path, scanned) = self.select_task_rq(p, parent_cpu, WF_FORK, parent_cpu);
        let capacity = self.capacity_of(cpu) as u16;
        self.emit(Event::Place { task: p, prev: parent_cpu, waker_cpu: parent_cpu, cpu, path, scanned, capacity });
        self.tasks[p.idx()].cpu = cpu;
        if cpu != parent_cpu {
            self.emit(Event::Migrate { task: p, orig: parent_cpu, dest: cpu, reason: MigrateReason::Fork });
        }
        self.class_post_init(p, cpu);
        self.tasks[p.idx()].state = TaskState::Runnable;
        self.tasks[p.idx()].runnable_since = self.now;
        self.enqueue_task(cpu, p, EnqueueFlags::INITIAL);
        self.emit(Event::Wakeup { task: p, cpu, new: true });
        self.wakeup_preempt(cpu, p, parent_cpu);
        self.class_task_woken(cpu, p);
        Ok(())
    }

    /// `try_to_wake_up(p, wake_flags)` issued on `waker_cpu` (by task `waker`,
    /// or by a timer interrupt when `None`).
    pub fn try_to_wake_up(
        &mut self,
        p: TaskId,
        wake_flags: u32,
        waker_cpu: CpuId,
        waker: Option<TaskId>,
    ) -> crate::Result<()> {
        if self.tasks[p.idx()].state != TaskState::Blocked {
            return Ok(());
        }
        self.emit(Event::Waking { task: p, cpu: waker_cpu });
        let now = self.now;
        {
            let t = &mut self.tasks[p.idx()];
            t.woken_at = Some(now);
            t.timer_gen += 1; // a pending timeout is void now
            self.queue.cancel_key(key_timer(self.rqs.len(), p));
            t.state = TaskState::Runnable;
            t.runnable_since = now;
        }
        self.timers.del(p);
        // The wakeup runs on the waker's CPU (in a task or an interrupt).
        // Where the machine prices a queued remote wakeup apart, the waker
        // pays wakeup_ns only when it does the enqueue itself (below).
        let queue_cost = self.machine.cost.ttwu_queue_ns;
        if queue_cost.is_none() {
            self.charge(waker_cpu, self.machine.cost.wakeup_ns);
        }
        // ttwu_runnable: still queued (a delayed entity) on its old CPU.
        if self.tasks[p.idx()].on_rq {
            self.ttwu_runnable(p, waker_cpu, queue_cost.is_some());
            return Ok(());
        }
        if let Some(w) = waker {
            self.record_wakee(w, p);
        }
        let prev = self.tasks[p.idx()].cpu;
        let (cpu, path, scanned) = self.select_task_rq(p, prev, wake_flags | WF_TTWU, waker_cpu);
        let capacity = self.capacity_of(cpu) as u16;
        self.emit(Event::Place { task: p, prev, waker_cpu, cpu, path, scanned, capacity });
        if scanned > 0 {
            self.charge(waker_cpu, scanned as Ns * self.machine.cost.scan_ns_per_cpu);
        }
        if cpu != prev {
            self.set_task_cpu(p, cpu, MigrateReason::Wakeup);
        }
        if sched_feat!(self.features, TTWU_QUEUE) && self.ttwu_queue_cond(waker_cpu, cpu) {
            self.rqs[cpu.idx()].ttwu_pending += 1;
            // __smp_call_single_queue: the waker sends the IPI.
            self.charge(waker_cpu, queue_cost.unwrap_or(self.machine.cost.ipi_send_ns));
            let t = self.now + self.machine.cost.ipi_ns;
            self.at_in(super::LANE_IPI, t, Ev::TtwuArrive { task: p, cpu, migrated: cpu != prev });
        } else {
            if queue_cost.is_some() {
                self.charge(waker_cpu, self.machine.cost.wakeup_ns);
            }
            self.ttwu_do_activate(p, cpu, waker_cpu, cpu != prev);
        }
        Ok(())
    }

    /// `ttwu_runnable`: the woken `p` is still queued (a delayed entity) on
    /// its CPU; the class requeues it there. Out of line: the usual wakeup
    /// finds its task dequeued (128 of 71,182 on the standard bench did
    /// not), and this carried its own copy of `wakeup_preempt`.
    #[inline(never)]
    fn ttwu_runnable(&mut self, p: TaskId, waker_cpu: CpuId, priced_apart: bool) {
        if priced_apart {
            self.charge(waker_cpu, self.machine.cost.wakeup_ns);
        }
        let cpu = self.tasks[p.idx()].cpu;
        // `enqueue_task(rq, p, ENQUEUE_DELAYED)`: the task rejoins its
        // runqueue's clamps, before or after the class requeues it.
        let before = sched_feat!(self.features, uclamp_inc_before_enqueue);
        if before {
            self.uclamp_rq_inc(cpu, p, true);
        }
        self.class_ttwu_runnable(cpu, p);
        if !before {
            self.uclamp_rq_inc(cpu, p, true);
        }
        self.emit(Event::Wakeup { task: p, cpu, new: false });
        self.wakeup_preempt(cpu, p, waker_cpu);
    }

    /// `ttwu_queue_cond`: whether the wakeup goes through the target CPU's
    /// wake list (an IPI) instead of being enqueued by the waker directly.
    fn ttwu_queue_cond(&self, this_cpu: CpuId, cpu: CpuId) -> bool {
        // `cpus_share_cache` from the CPUs' engine records (the machine's
        // LLC ids, without the CPU table's bounds tests).
        if self.cpu_rec[this_cpu.idx()].llc != self.cpu_rec[cpu.idx()].llc {
            return true;
        }
        if cpu == this_cpu {
            return false;
        }
        // An idle target does the activation itself.
        self.rqs[cpu.idx()].nr_running == 0
    }

    /// `sched_ttwu_pending`: the target CPU handles its wake list (the IPI
    /// arrived) and activates the queued task.
    pub(super) fn sched_ttwu_pending(&mut self, p: TaskId, cpu: CpuId, migrated: bool) -> crate::Result<()> {
        let rq = &mut self.rqs[cpu.idx()];
        rq.ttwu_pending -= 1;
        self.ttwu_do_activate(p, cpu, cpu, migrated);
        Ok(())
    }

    /// `ttwu_do_activate`: enqueue the woken task, account the idle period
    /// that ends (`avg_idle`), and preempt or wake the CPU.
    #[inline(always)]
    fn ttwu_do_activate(&mut self, p: TaskId, cpu: CpuId, waker_cpu: CpuId, migrated: bool) {
        let flags = if migrated { EnqueueFlags::WAKEUP | EnqueueFlags::MIGRATED } else { EnqueueFlags::WAKEUP };
        // The waker activates: its CPU is `smp_processor_id()` for cpufreq.
        self.cpufreq.this_cpu = Some(waker_cpu);
        self.enqueue_task(cpu, p, flags);
        self.emit(Event::Wakeup { task: p, cpu, new: false });
        if !sched_feat!(self.features, avg_idle_put_prev) {
            self.update_avg_idle_on_wakeup(cpu);
        }
        self.wakeup_preempt(cpu, p, waker_cpu);
        self.class_task_woken(cpu, p);
        self.cpufreq.this_cpu = None;
    }

    /// `update_avg(&rq->avg_idle, delta)` with the cap of `ttwu_do_activate`:
    /// a wakeup ends the idle period that began at `idle_stamp`.
    fn update_avg_idle_on_wakeup(&mut self, cpu: CpuId) {
        self.update_rq_avg_idle(cpu);
    }

    /// Seed idea 3 (`avg_idle_on_enqueue`): any enqueue onto an idle CPU
    /// (fork, migration, wakeup) ends its idle period, so sample it here.
    /// Without the feature only wakeups sample, and a fork or migration onto
    /// an idle CPU leaves `idle_stamp` set: the next wakeup then samples a
    /// "idle period" that includes the busy time since (the drift the patch
    /// fixes). With the feature, newly-idle balance holds the stamp back
    /// while it pulls, so a set `idle_stamp` means the CPU is idle and the
    /// first enqueue after it is the one that ends the idle period.
    fn update_avg_idle_on_enqueue(&mut self, cpu: CpuId) {
        self.update_rq_avg_idle(cpu);
    }

    /// `put_prev_task_idle`: `cpu` stops running its idle task. Since v7.0
    /// (`avg_idle_put_prev`) this, not the wakeup, ends the idle period in
    /// `avg_idle`, whatever brought the task (wakeup, fork, migration, pull).
    /// Until the Sept 2026 fix (`avg_idle_stamp_guard`) the helper had no
    /// guard: without a stamp (the CPU went idle without newidle balance
    /// taking one, e.g. its early return on a pending wakeup) it sampled
    /// `rq_clock - 0`, the time since boot, which one `update_avg` step
    /// pushes past the cap: `avg_idle` saturates at `2 * max_idle_balance_cost`.
    fn put_prev_task_idle(&mut self, cpu: CpuId) {
        if !sched_feat!(self.features, avg_idle_put_prev) {
            return;
        }
        let rq = self.rqs.untracked_mut(cpu.idx());
        if rq.idle_stamp == 0 && !sched_feat!(self.features, avg_idle_stamp_guard) {
            // update_avg(avg, uptime) = avg + (uptime - avg) / 8 exceeds the
            // cap for any uptime above 8 x 2 x max_idle_balance_cost (a few
            // ms): every real machine has been up longer.
            rq.avg_idle = 2 * rq.max_idle_balance_cost;
            return;
        }
        self.update_rq_avg_idle(cpu);
    }

    /// `update_rq_avg_idle` (the kernel's later name of the helper): fold
    /// the idle period since `idle_stamp` into `avg_idle`, capped at
    /// `2 * max_idle_balance_cost`, and clear the stamp. Nothing without a
    /// stamp (the CPU did not go idle through newly-idle balance).
    ///
    /// It also restarts SIS_PROP's budget as v5.12..v5.19 did in
    /// `ttwu_do_wakeup`: `wake_avg_idle = avg_idle / 2`, stamped with the
    /// current jiffy (`sis_prop_budget` halves it per jiffy since).
    #[inline(always)]
    pub(crate) fn update_rq_avg_idle(&mut self, cpu: CpuId) {
        let now = self.now;
        let jiffies = now / self.tick_ns;
        let rq = self.rqs.untracked_mut(cpu.idx());
        if rq.idle_stamp != 0 {
            let delta = now.saturating_sub(rq.idle_stamp);
            let max = 2 * rq.max_idle_balance_cost;
            rq.avg_idle = update_avg(rq.avg_idle, delta).min(max);
            rq.idle_stamp = 0;
            rq.wake_stamp = jiffies;
            rq.wake_avg_idle = rq.avg_idle / 2;
        }
    }

    /// `wakeup_preempt`: after `p` was queued on `cpu`, wake the CPU if idle,
    /// or preempt its current task if the classes say so.
    #[inline(always)]
    pub fn wakeup_preempt(&mut self, cpu: CpuId, p: TaskId, waker_cpu: CpuId) {
        let rq = &self.rqs[cpu.idx()];
        if rq.curr.is_none() {
            self.resched_curr(cpu, waker_cpu);
            return;
        }
        let Some(curr) = rq.curr else { return };
        if curr == p || rq.need_resched {
            return;
        }
        if self.class_wakeup_preempt(cpu, curr, p) {
            self.resched_curr(cpu, waker_cpu);
        }
    }

    /// `resched_curr`: ask `cpu` to reschedule. Locally this takes effect at
    /// the next preemption point; remotely after an IPI.
    #[inline(always)]
    pub fn resched_curr(&mut self, cpu: CpuId, from_cpu: CpuId) {
        let rq = self.rqs.untracked_mut(cpu.idx());
        if rq.need_resched {
            return;
        }
        rq.need_resched = true;
        if cpu == from_cpu {
            let at = self.preemption_point(cpu);
            if at == self.now {
                self.at_in(super::LANE_NOW, at, Ev::Resched(cpu));
            } else {
                self.at(at, Ev::Resched(cpu));
            }
        } else {
            // smp_send_reschedule: the sender pays the IPI's send.
            self.charge(from_cpu, self.machine.cost.ipi_send_ns);
            self.at_in(super::LANE_IPI, self.now + self.machine.cost.ipi_ns, Ev::Resched(cpu));
        }
    }

    /// The preemption point of a reschedule on `cpu`: while it still owes
    /// kernel work charged to it (`ready_at` ahead: the waker's
    /// `try_to_wake_up`, its idle-CPU scan, an interrupt), the task running
    /// there keeps the CPU until that work is done, and the switch happens
    /// then, as the kernel's does at the end of the non-preemptible section
    /// or at the return to user. Without it the next task would start behind
    /// the waker's own work and be charged for it in its vruntime. `now` on
    /// an idle CPU and on a vCPU its host holds (`HELD_READY`).
    #[inline(always)]
    pub(super) fn preemption_point(&self, cpu: CpuId) -> Ns {
        let rq = &self.rqs[cpu.idx()];
        if rq.curr.is_some() && rq.ready_at > self.now && rq.ready_at < super::host::HELD_READY {
            rq.ready_at
        } else {
            self.now
        }
    }

    /// `scheduler_ipi`: a reschedule request reaches `cpu`.
    pub(super) fn scheduler_ipi(&mut self, cpu: CpuId) -> crate::Result<()> {
        if !self.rqs[cpu.idx()].need_resched {
            return Ok(());
        }
        // An idle CPU leaves idle in context_switch, if it finds work.
        self.schedule(cpu)
    }

    /// `update_curr` of `cpu`'s running task, by its class; returns whether
    /// its slice ran out.
    pub fn update_curr(&mut self, cpu: CpuId) -> bool {
        match self.rqs[cpu.idx()].curr {
            Some(curr) => self.class_update_curr(cpu, curr),
            None => false,
        }
    }

    /// `__schedule(cpu)`: account the current task (it may have blocked),
    /// pick the next through the class stack, switch.
    pub fn schedule(&mut self, cpu: CpuId) -> crate::Result<()> {
        let rq = self.rqs.untracked_mut(cpu.idx());
        rq.need_resched = false;
        let prev = rq.curr;
        if prev.is_some() {
            self.sync_segment(cpu);
            self.update_curr(cpu);
        }
        let next = self.pick_next_task(cpu, prev);
        self.context_switch(cpu, prev, next)
    }

    /// Switch `cpu` from `prev` to `next` and start running `next`.
    fn context_switch(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) -> crate::Result<()> {
        if prev == next {
            if next.is_some() {
                self.start_segment(cpu)?;
            }
            return Ok(());
        }
        let now = self.now;
        if let Some(pp) = prev {
            let t = &self.tasks[pp.idx()];
            let prev_state = match t.state {
                TaskState::Runnable => PrevState::Runnable,
                TaskState::Dead => PrevState::Dead,
                _ => PrevState::Sleeping,
            };
            self.leave_cpu(pp, cpu);
            self.emit(Event::Switch { cpu, prev, prev_state, next });
        } else {
            if next.is_some() {
                // The idle loop is left (and traced as left) before the switch.
                self.put_prev_task_idle(cpu);
                self.exit_idle(cpu);
                self.nr_busy += 1;
                self.vcpu_busy(cpu);
            }
            self.emit(Event::Switch { cpu, prev: None, prev_state: PrevState::Runnable, next });
        }
        // One borrow for the three writes (`rt_note_curr` reads none of them).
        let rq = &mut self.rqs[cpu.idx()];
        rq.curr = next;
        if prev.is_some() != next.is_some() {
            rq.clock_stamp = Ns::MAX;
        }
        rq.seg_active = false;
        rq.run_gen += 1;
        self.rt_note_curr(cpu, next);
        match next {
            Some(n) => {
                let (refill, kib) = self.refill_work_ns(n, cpu);
                self.arrive_on_cpu(n, cpu, kib);
                let t = &mut self.tasks[n.idx()];
                t.work_left_wu += refill * super::cost::WU_PER_NS;
                let cs = self.machine.cost.context_switch_ns;
                let rq = self.rqs.untracked_mut(cpu.idx());
                rq.ready_at = rq.ready_at.max(now) + cs;
                // The old segment's end is replaced: with the switch's cost
                // ahead, `start_segment` queues the new end under the same
                // key, which moves a pending one in place (one sift instead
                // of a removal and an insert); else it may queue none.
                if rq.ready_at <= now {
                    self.queue.cancel_key(self.key_run_done(cpu));
                }
                if prev.is_none() {
                    self.smt_speed_changed(cpu);
                }
                self.start_segment(cpu)
            }
            None => {
                self.queue.cancel_key(self.key_run_done(cpu));
                // prev is a task here (prev == next returned above).
                self.nr_busy -= 1;
                self.vcpu_halt(cpu);
                self.enter_idle(cpu);
                self.smt_speed_changed(cpu);
                Ok(())
            }
        }
    }

    /// Cache bookkeeping when `p` starts running on `cpu` and brings `kib`
    /// of its footprint into the caches.
    fn arrive_on_cpu(&mut self, p: TaskId, cpu: CpuId, kib: u64) {
        let info = &self.cpu_rec[cpu.idx()];
        let (core, llc) = (info.core as usize, info.llc as usize);
        self.core_pressure[core] += kib;
        self.llc_pressure[llc] += kib;
        let t = &mut self.tasks[p.idx()];
        t.cache_cpu = cpu;
        t.has_run = true;
    }

    /// Bookkeeping when `p` stops running on `cpu`.
    #[inline]
    fn leave_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let info = &self.cpu_rec[cpu.idx()];
        let (core, llc) = (info.core as usize, info.llc as usize);
        let now = self.now;
        let t = &mut self.tasks[p.idx()];
        t.core_pressure_at_leave = self.core_pressure[core];
        t.llc_pressure_at_leave = self.llc_pressure[llc];
        t.last_ran_ns = now;
        if t.state == TaskState::Runnable {
            t.runnable_since = now;
        }
    }

    /// Put a task to sleep: it blocked in an action, or exited.
    pub fn block_task(&mut self, cpu: CpuId, p: TaskId, dead: bool) {
        self.tasks[p.idx()].state = if dead { TaskState::Dead } else { TaskState::Blocked };
        self.update_curr(cpu);
        if !self.dequeue_task(cpu, p, DequeueFlags::SLEEP) && dead {
            self.finish_delayed_dequeue(cpu, p);
        }
        if dead {
            self.class_task_dead(cpu, p);
        }
    }
}

impl Sim {
    /// `detach_task` + `attach_task`: move the queued, not running task `p`
    /// from `src` to `dst`, the move done by a CPU of `src` (active balance's
    /// stopper, an RT push).
    pub fn move_queued_task(&mut self, p: TaskId, src: CpuId, dst: CpuId) {
        self.detach_task(p, src, dst);
        self.attach_task(p, dst, src);
    }

    /// `detach_task`: take the queued, not running task `p` off `src` (a
    /// migration dequeue: lag and relative deadline stay) and give it `dst`.
    pub fn detach_task(&mut self, p: TaskId, src: CpuId, dst: CpuId) {
        debug_assert_ne!(self.rqs[src.idx()].curr, Some(p), "cannot move a running task");
        debug_assert_eq!(self.tasks[p.idx()].cpu, src);
        let ok = self.dequeue_task(src, p, DequeueFlags::default());
        debug_assert!(ok);
        self.set_task_cpu(p, dst, MigrateReason::Balance);
    }

    /// `attach_task`: enqueue a detached task on `dst` and let it preempt;
    /// `by_cpu` is the CPU doing it (a remote preemption costs an IPI).
    pub fn attach_task(&mut self, p: TaskId, dst: CpuId, by_cpu: CpuId) {
        self.enqueue_task(dst, p, EnqueueFlags::MIGRATED);
        self.wakeup_preempt(dst, p, by_cpu);
    }

    /// Active balance (`active_load_balance_cpu_stop`): stop the task running
    /// on `src` and move it to `dst`. Returns whether it moved.
    pub fn active_move_running_task(&mut self, src: CpuId, dst: CpuId) -> crate::Result<bool> {
        let Some(p) = self.rqs[src.idx()].curr else { return Ok(false) };
        if !self.tasks[p.idx()].allowed.test(dst) {
            return Ok(false);
        }
        // The stopper preempts p; p goes back on the queue, then moves.
        self.sync_segment(src);
        self.update_curr(src);
        self.class_put_prev_task(src, p);
        self.leave_cpu_for_migration(p, src);
        self.rqs[src.idx()].curr = None;
        self.rqs[src.idx()].clock_stamp = Ns::MAX;
        self.nr_busy -= 1;
        self.vcpu_halt(src);
        self.rqs[src.idx()].seg_active = false;
        self.rqs[src.idx()].run_gen += 1;
        self.queue.cancel_key(self.key_run_done(src));
        self.emit(Event::Switch { cpu: src, prev: Some(p), prev_state: PrevState::Runnable, next: None });
        self.move_queued_task(p, src, dst);
        // src picks what is left (possibly nothing), without a newly-idle pass.
        let next = self.pick_next_task_after_stop(src);
        self.context_switch(src, None, next)?;
        if next.is_none() {
            // context_switch(None, None) does nothing: enter idle explicitly.
            self.enter_idle(src);
            self.smt_speed_changed(src);
        }
        Ok(true)
    }

    fn leave_cpu_for_migration(&mut self, p: TaskId, cpu: CpuId) {
        self.leave_cpu(p, cpu);
    }
}
