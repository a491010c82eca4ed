//! Running tasks: run segments (a stretch of work at one speed, ended by a
//! `RunDone` event that is recomputed when the speed changes) and stepping
//! task programs through their actions.

use super::cost::WU_PER_NS;
use super::task::TaskState;
use super::{Ev, Sim};
use crate::ids::{CpuId, TaskId};
use crate::trace::Event;
use crate::workload::{Action, ProgCtx};

/// Zero-time actions a program may take in a row before the engine calls it
/// a livelock (a program that never computes, sleeps or blocks).
const MAX_INSTANT_ACTIONS: u32 = 100_000;

/// How a program step ended.
pub(super) enum Stepped {
    /// It has work to do (`work_left_wu > 0`) or a delay to pay.
    Busy,
    /// It blocked, exited, or must be preempted: call `schedule`.
    Reschedule,
    /// It was moved to another CPU, which this one has already rescheduled
    /// after: nothing more to do here.
    Moved,
}

impl Sim {
    /// Account the work the running task of `cpu` did since its segment began.
    pub fn sync_segment(&mut self, cpu: CpuId) {
        let now = self.now;
        let rq = self.rqs.untracked_mut(cpu.idx());
        if !rq.seg_active || now <= rq.seg_start {
            return;
        }
        let Some(p) = rq.curr else { return };
        let done = (now - rq.seg_start) * rq.seg_speed;
        rq.seg_start = now;
        let t = &mut self.tasks[p.idx()];
        t.work_left_wu = t.work_left_wu.saturating_sub(done);
    }

    /// End the current segment and start a new one at the current speed.
    pub fn restart_segment(&mut self, cpu: CpuId) {
        self.sync_segment(cpu);
        self.rqs.untracked_mut(cpu.idx()).seg_active = false;
        self.schedule_segment_end(cpu);
    }

    /// The SMT siblings of `cpu` changed speed because `cpu` went busy or idle.
    #[inline(always)]
    pub fn smt_speed_changed(&mut self, cpu: CpuId) {
        // The list is read again after each restart (which borrows `self`):
        // `get` is the loop's test and the bounds test in one.
        let mut k = 0;
        while let Some(&s) = self.cpu_rec[cpu.idx()].siblings.get(k) {
            k += 1;
            if self.rqs[s.idx()].seg_active {
                self.restart_segment(s);
            }
        }
    }

    /// Queue the `RunDone` that ends the current work of `cpu`'s task.
    #[inline(always)]
    fn schedule_segment_end(&mut self, cpu: CpuId) {
        let speed = self.cpu_speed(cpu);
        let now = self.now;
        let rq = self.rqs.untracked_mut(cpu.idx());
        let Some(p) = rq.curr else { return };
        let start = rq.ready_at.max(now);
        let left = self.tasks[p.idx()].work_left_wu;
        rq.run_gen += 1;
        rq.seg_start = start;
        rq.seg_speed = speed;
        rq.seg_active = left > 0;
        let end = start + left.div_ceil(speed);
        let gen = rq.run_gen;
        self.queue.push_key(self.key_run_done(cpu), end, Ev::RunDone { cpu, gen });
    }

    /// Run `cpu`'s current task: step its program until it has work, blocks
    /// or exits, then queue the end of its work. Always inlined (round 19:
    /// 279,133 calls on the standard bench, each paying the prologue and
    /// epilogue of a large function; -5.4 M inlined at its few callers).
    #[inline(always)]
    pub fn start_segment(&mut self, cpu: CpuId) -> crate::Result<()> {
        let Some(p) = self.rqs[cpu.idx()].curr else { return Ok(()) };
        if self.rqs[cpu.idx()].ready_at > self.now || self.tasks[p.idx()].work_left_wu > 0 {
            self.schedule_segment_end(cpu);
            return Ok(());
        }
        match self.step_program(cpu, p)? {
            Stepped::Busy => {
                self.schedule_segment_end(cpu);
                Ok(())
            }
            Stepped::Reschedule => self.schedule(cpu),
            Stepped::Moved => Ok(()),
        }
    }

    /// The `RunDone` event: the task's work (or the CPU's delay) is over.
    pub(super) fn run_done(&mut self, cpu: CpuId) -> crate::Result<()> {
        self.sync_segment(cpu);
        self.rqs.untracked_mut(cpu.idx()).seg_active = false;
        let Some(p) = self.rqs[cpu.idx()].curr else { return Ok(()) };
        if self.tasks[p.idx()].work_left_wu == 0 {
            if let Some(b) = self.tasks[p.idx()].spinning_on {
                // The spin budget ran out before the barrier opened: block.
                let _ = b;
                self.block_task(cpu, p, false);
                return self.schedule(cpu);
            }
            if self.rqs[cpu.idx()].need_resched {
                return self.schedule(cpu);
            }
        }
        self.start_segment(cpu)
    }

    /// Step `p`'s program on `cpu` until it has work to do or must leave the CPU.
    fn step_program(&mut self, cpu: CpuId, p: TaskId) -> crate::Result<Stepped> {
        for _ in 0..MAX_INSTANT_ACTIONS {
            // The CPU's kernel work charged so far (a wakeup this task just
            // did, its scan) is the task's: a reschedule it asked for takes
            // effect after that work, at the preemption point.
            if self.rqs[cpu.idx()].ready_at > self.now {
                return Ok(Stepped::Busy);
            }
            if self.rqs[cpu.idx()].need_resched {
                return Ok(Stepped::Reschedule);
            }
            let t = &mut self.tasks[p.idx()];
            // io_schedule_finish: the task runs again after its I/O wait.
            t.in_iowait = false;
            let action = match t.pending.take() {
                Some(a) => a,
                None => {
                    let ctx = ProgCtx { now: self.now, task: p, msg: t.msg.take(), woken_at: t.woken_at.take() };
                    t.program.step(&ctx, &mut t.rng)
                }
            };
            match self.do_action(cpu, p, action)? {
                None => continue,
                Some(s) => return Ok(s),
            }
        }
        Err(crate::SchedlabError::Runtime(format!(
            "task {} ({}) took {MAX_INSTANT_ACTIONS} actions without computing, sleeping or blocking",
            p,
            self.tasks[p.idx()].name
        )))
    }

    /// The task a program of `p` names (a `Wake` or `Spawn` target, from the
    /// workload) is one of the run's: the tasks are indexed without bounds
    /// tests (`IdTable::get`), so an id from outside is checked here, once.
    #[inline]
    fn check_task_named(&self, p: TaskId, task: TaskId) -> crate::Result<()> {
        if task.idx() < self.tasks.len() {
            return Ok(());
        }
        Err(crate::SchedlabError::Runtime(format!(
            "task {p} ({}) names task {task}, but the run has {} tasks",
            self.tasks[p.idx()].name,
            self.tasks.len()
        )))
    }

    /// Perform one action; `None` means it completed instantly. Inlined
    /// into `step_program`'s loop; the actions most programs never take
    /// (`Wait`, barriers, semaphores, affinity, spawn, policy changes) are
    /// handled out of line (`#[inline(never)]`), so that their code and
    /// locals do not weigh on the loop's registers and frame at every step.
    fn do_action(&mut self, cpu: CpuId, p: TaskId, action: Action) -> crate::Result<Option<Stepped>> {
        match action {
            Action::Compute(ns) => {
                if ns == 0 {
                    return Ok(None);
                }
                self.tasks[p.idx()].work_left_wu += ns * WU_PER_NS;
                Ok(Some(Stepped::Busy))
            }
            Action::Sleep(ns) => self.sleep_until(cpu, p, self.now.saturating_add(ns)),
            Action::IoSleep(ns) => {
                // io_schedule_prepare: current->in_iowait = 1.
                self.tasks[p.idx()].in_iowait = true;
                self.sleep_until(cpu, p, self.now.saturating_add(ns))
            }
            Action::SleepUntil(t) => {
                if t <= self.now {
                    return Ok(None);
                }
                self.sleep_until(cpu, p, t)
            }
            Action::Send { chan, msg, sync } => self.chan_send(cpu, p, chan.0 as usize, msg, sync, action),
            Action::Recv { chan } => self.chan_recv(cpu, p, chan.0 as usize, action),
            Action::Wait => Ok(self.wait_action(cpu, p)),
            Action::Wake { task, sync } => {
                self.check_task_named(p, task)?;
                let w = &mut self.tasks[task.idx()];
                w.wake_tokens += 1;
                if w.state == TaskState::Blocked && w.pending == Some(Action::Wait) {
                    let flags = if sync { super::core::WF_SYNC } else { 0 };
                    self.try_to_wake_up(task, flags, cpu, Some(p))?;
                }
                Ok(None)
            }
            Action::Barrier { id, spin_ns } => self.barrier_arrive(cpu, p, id.0, spin_ns),
            Action::SetAffinity { mask } => self.set_cpus_allowed_ptr(cpu, p, mask),
            Action::Spawn { task } => {
                self.check_task_named(p, task)?;
                self.kernel_clone(cpu, p, task)
            }
            Action::SetScheduler { policy, priority } => {
                let resched = self.sched_setscheduler(cpu, p, policy, priority)?;
                Ok(resched.then_some(Stepped::Reschedule))
            }
            Action::Yield => {
                // do_sched_yield: yield_task of the class, then schedule().
                self.class_yield_task(cpu, p);
                Ok(Some(Stepped::Reschedule))
            }
            Action::SemWait { sem, spin_ns } => self.sem_wait(cpu, p, sem.0, spin_ns),
            Action::SemPost { sem } => self.sem_post(cpu, p, sem.0),
            Action::CondWait { cond } => {
                // Woken by a signal only; the program goes on from its next
                // step (nothing to retry, unlike a read).
                self.conds[cond.0 as usize].waiters.push_back(p);
                self.block_task(cpu, p, false);
                Ok(Some(Stepped::Reschedule))
            }
            Action::CondSignal { cond, all } => {
                // `futex_wake` from `pthread_cond_signal`/`broadcast`: not a sync wakeup.
                while let Some(w) = self.conds[cond.0 as usize].waiters.pop_front() {
                    self.try_to_wake_up(w, 0, cpu, Some(p))?;
                    if !all {
                        break;
                    }
                }
                Ok(None)
            }
            Action::Mark { kind, value } => {
                self.emit(Event::Mark { task: p, kind, value });
                Ok(None)
            }
            Action::Exit => {
                self.block_task(cpu, p, true);
                if !self.tasks[p.idx()].noise {
                    self.alive -= 1;
                    self.attention |= self.alive == 0;
                }
                self.emit(Event::Exit { task: p });
                Ok(Some(Stepped::Reschedule))
            }
        }
    }

    /// The `Wait` action: take a wake token, or block until a `Wake`.
    #[inline(never)]
    fn wait_action(&mut self, cpu: CpuId, p: TaskId) -> Option<Stepped> {
        if let Some(fd) = self.sugov_domain_of(p) {
            self.sugov_thread_waits(fd);
        }
        if let Some(c) = self.dbs_cpu_of(p) {
            self.dbs_work_handler(c);
        }
        let t = &mut self.tasks[p.idx()];
        if t.wake_tokens > 0 {
            t.wake_tokens -= 1;
            return None;
        }
        t.pending = Some(Action::Wait);
        self.block_task(cpu, p, false);
        Some(Stepped::Reschedule)
    }

    fn sleep_until(&mut self, cpu: CpuId, p: TaskId, t: u64) -> crate::Result<Option<Stepped>> {
        let task = &mut self.tasks[p.idx()];
        task.timer_gen += 1;
        let gen = task.timer_gen;
        self.block_task(cpu, p, false);
        self.timers.add(cpu, p, t);
        let t = t.max(self.now);
        self.queue.push_key(self.key_timer(p), t, Ev::Timer { task: p, gen });
        Ok(Some(Stepped::Reschedule))
    }

    /// `__set_cpus_allowed_ptr` for the running `p` on `cpu`: a new mask
    /// (kthreads keep the cpuset out, as at build); if `cpu` is no longer
    /// allowed, `affine_move_task` moves `p` at once to
    /// `cpumask_any_and_distribute(mask)`, the next allowed CPU after the last
    /// one this chose.
    #[inline(never)]
    fn set_cpus_allowed_ptr(&mut self, cpu: CpuId, p: TaskId, mask: u32) -> crate::Result<Option<Stepped>> {
        let m = self.affinity_masks[mask as usize];
        if m.is_empty() || m == self.tasks[p.idx()].allowed {
            // EINVAL (no CPU left), or nothing changes.
            return Ok(None);
        }
        let max_cap = m.iter().map(|c| self.machine.capacity_orig(c)).max().unwrap_or(0);
        let t = &mut self.tasks[p.idx()];
        t.allowed = m;
        t.nr_cpus_allowed = m.weight();
        t.max_allowed_capacity = max_cap;
        t.preferred = t.preferred.map(|pm| pm.and(&m)).filter(|pm| !pm.is_empty());
        if m.test(cpu) {
            return Ok(None);
        }
        let nr = self.machine.nr_cpus();
        let dst = (1..=nr)
            .map(|k| CpuId(((self.distribute_prev as usize + k) % nr) as u32))
            .find(|c| m.test(*c))
            .expect("a non-empty mask");
        self.distribute_prev = dst.0;
        self.active_move_running_task(cpu, dst)?;
        Ok(Some(Stepped::Moved))
    }

    /// `kernel_clone` from `parent` on `cpu`: the pre-made `child` exists
    /// from now, with the parent's wakee_flips (`dup_task_struct`), and is
    /// placed by `wake_up_new_task`. A child already created is left alone.
    #[inline(never)]
    fn kernel_clone(&mut self, cpu: CpuId, parent: TaskId, child: TaskId) -> crate::Result<Option<Stepped>> {
        let c = &self.tasks[child.idx()];
        if c.state != TaskState::New || self.workload_start[child.idx()] != crate::workload::StartKind::Spawned {
            return Ok(None);
        }
        let flips = self.tasks[parent.idx()].wakee_flips;
        let now = self.now;
        let c = &mut self.tasks[child.idx()];
        c.wakee_flips = flips;
        c.wakee_flip_decay_ts = now;
        if !c.noise {
            self.alive += 1;
        }
        self.wake_up_new_task(child, cpu)?;
        Ok(None)
    }

    /// Let `w`, waiting on a barrier or a semaphore, go on: a spinner stops
    /// spinning at once, a sleeper is woken (by `waker` on `cpu`).
    fn release_spinner(&mut self, w: TaskId, cpu: CpuId, waker: TaskId) -> crate::Result<()> {
        let t = &mut self.tasks[w.idx()];
        t.spinning_on = None;
        match t.state {
            TaskState::Blocked => self.try_to_wake_up(w, 0, cpu, Some(waker))?,
            TaskState::Runnable => {
                // Still spinning: stop now.
                let wc = t.cpu;
                if self.rqs[wc.idx()].curr == Some(w) {
                    self.sync_segment(wc);
                    self.tasks[w.idx()].work_left_wu = 0;
                    self.restart_segment(wc);
                } else {
                    t.work_left_wu = 0;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Wait on semaphore `s`: take a post if there is one; else spin up to
    /// `spin_ns` of work, then sleep until a post releases this task.
    #[inline(never)]
    fn sem_wait(&mut self, cpu: CpuId, p: TaskId, s: u32, spin_ns: u64) -> crate::Result<Option<Stepped>> {
        let sem = &mut self.sems[s as usize];
        if sem.count > 0 {
            sem.count -= 1;
            return Ok(None);
        }
        sem.waiters.push_back(p);
        let t = &mut self.tasks[p.idx()];
        t.spinning_on = Some(s);
        if spin_ns > 0 {
            t.work_left_wu = t.work_left_wu.saturating_add(spin_ns.saturating_mul(WU_PER_NS));
            return Ok(Some(Stepped::Busy));
        }
        self.block_task(cpu, p, false);
        Ok(Some(Stepped::Reschedule))
    }

    /// Post semaphore `s`: release its first waiter, or keep the post.
    #[inline(never)]
    fn sem_post(&mut self, cpu: CpuId, p: TaskId, s: u32) -> crate::Result<Option<Stepped>> {
        match self.sems[s as usize].waiters.pop_front() {
            Some(w) => self.release_spinner(w, cpu, p)?,
            None => self.sems[s as usize].count += 1,
        }
        Ok(None)
    }

    /// Arrive at barrier `b`. The last arrival releases the others: spinners
    /// stop spinning at once, blocked ones are woken.
    #[inline(never)]
    fn barrier_arrive(&mut self, cpu: CpuId, p: TaskId, b: u32, spin_ns: u64) -> crate::Result<Option<Stepped>> {
        let bar = &mut self.barriers[b as usize];
        bar.arrived += 1;
        if bar.arrived < bar.parties {
            bar.waiters.push(p);
            let t = &mut self.tasks[p.idx()];
            t.spinning_on = Some(b);
            if spin_ns > 0 {
                t.work_left_wu += spin_ns * WU_PER_NS;
                return Ok(Some(Stepped::Busy));
            }
            self.block_task(cpu, p, false);
            return Ok(Some(Stepped::Reschedule));
        }
        bar.arrived = 0;
        bar.generation += 1;
        let waiters = std::mem::take(&mut bar.waiters);
        for &w in &waiters {
            self.release_spinner(w, cpu, p)?;
        }
        // Give the buffer back to the barrier to keep its capacity.
        let bar = &mut self.barriers[b as usize];
        bar.waiters = waiters;
        bar.waiters.clear();
        Ok(None)
    }
}
