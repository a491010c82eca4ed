//! One dispatch function per `struct sched_class` hook. Each is called from
//! exactly one place in the engine (listed in `README.md`), and each is a
//! `match` on the class: the engine never reads a class's state itself.

use super::SchedClass;
use crate::engine::Sim;
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::fair::wakeup::WakeCtx;
use crate::ids::{CpuId, TaskId};
use crate::trace::PlacePath;

impl Sim {
    /// The class of task `p`.
    #[inline]
    pub fn task_class(&self, p: TaskId) -> SchedClass {
        if self.nr_off_normal == 0 {
            debug_assert_eq!(self.tasks[p.idx()].class, self.normal_class);
            return self.normal_class;
        }
        self.tasks[p.idx()].class
    }

    /// `class->enqueue_task`: put `p` on the class's runqueue of `cpu`.
    /// Called from `enqueue_task` (core).
    pub(crate) fn class_enqueue_task(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        match self.task_class(p) {
            SchedClass::Fair => self.enqueue_task_fair(cpu, p, flags),
            class => self.enqueue_task_other(class, cpu, p, flags),
        }
    }

    /// [`Sim::class_enqueue_task`] outside the fair class, out of line. The
    /// four hottest hooks (enqueue, dequeue, update_curr, put_prev) keep
    /// only the fair class's call inline: with the RT and peer hooks inline
    /// beside it their callers saved more registers at every call. The
    /// helpers do not name the fair hook (`unreachable!`), which keeps it a
    /// function of one call site that the compiler inlines.
    #[inline(never)]
    fn enqueue_task_other(&mut self, class: SchedClass, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        match class {
            SchedClass::Rt => self.enqueue_task_rt(cpu, p, flags),
            SchedClass::Fair => unreachable!("the fair class is handled inline"),
            SchedClass::Ext | SchedClass::Bmq => self.peer_enqueue(cpu, p, flags),
        }
    }

    /// What the class does after the core counted the enqueued task: the
    /// fair class's overutilized check. Called from `enqueue_task`.
    pub(crate) fn class_enqueue_done(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        if self.task_class(p) == SchedClass::Fair {
            self.enqueue_task_fair_done(cpu, flags);
        }
    }

    /// `class->yield_task`: the running `p` gives way (`sched_yield`).
    /// Called from the `Yield` action, before `schedule()`. Peer policies
    /// model no yield of their own: the CPU just reschedules.
    pub(crate) fn class_yield_task(&mut self, cpu: CpuId, p: TaskId) {
        match self.task_class(p) {
            SchedClass::Rt => {
                let prio = self.tasks[p.idx()].prio;
                self.rt.rqs[cpu.idx()].yield_task_rt(p, prio);
            }
            SchedClass::Fair => self.yield_task_fair(cpu, p),
            SchedClass::Ext | SchedClass::Bmq => {}
        }
    }

    /// `class->task_dead`: `p` exited on `cpu` (the fair class removes its
    /// load from the runqueue). Called from `block_task`.
    pub(crate) fn class_task_dead(&mut self, cpu: CpuId, p: TaskId) {
        match self.task_class(p) {
            SchedClass::Rt => {}
            SchedClass::Fair | SchedClass::Ext | SchedClass::Bmq => self.task_dead_fair(cpu, p),
        }
    }

    /// `class->dequeue_task`: take `p` off; `false` when the class keeps it
    /// queued (the fair class's delayed dequeue). Called from `dequeue_task`.
    pub(crate) fn class_dequeue_task(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        match self.task_class(p) {
            SchedClass::Fair => self.dequeue_task_fair(cpu, p, flags),
            class => self.dequeue_task_other(class, cpu, p, flags),
        }
    }

    /// [`Sim::class_dequeue_task`] outside the fair class, out of line.
    #[inline(never)]
    fn dequeue_task_other(&mut self, class: SchedClass, cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        match class {
            SchedClass::Rt => self.dequeue_task_rt(cpu, p, flags),
            SchedClass::Fair => unreachable!("the fair class is handled inline"),
            SchedClass::Ext | SchedClass::Bmq => self.peer_dequeue(cpu, p, flags),
        }
    }

    /// `class->select_task_rq`: a CPU for `p` waking (or forked) on
    /// `ctx.this_cpu`. Called from `select_task_rq` (core), which handles
    /// single-CPU tasks and the affinity fallback around it. Always inlined
    /// into that one caller (round 19, with `asym_fits_cpu`: -2.0 M).
    #[inline(always)]
    pub(crate) fn class_select_task_rq(&mut self, p: TaskId, prev: CpuId, wake_flags: u32, ctx: &mut WakeCtx) -> CpuId {
        match self.task_class(p) {
            SchedClass::Rt => {
                ctx.path = PlacePath::Policy;
                self.select_task_rq_rt(p, prev, wake_flags, ctx.this_cpu)
            }
            SchedClass::Fair => self.select_task_rq_fair(p, prev, wake_flags, ctx),
            SchedClass::Ext | SchedClass::Bmq => {
                ctx.path = PlacePath::Policy;
                self.peer_select_cpu(p, prev, wake_flags, ctx.this_cpu)
            }
        }
    }

    /// `class->task_fork` with `init_entity_runnable_average`: set up a new
    /// task's class state before its first placement. Called from
    /// `wake_up_new_task`.
    pub(crate) fn class_task_fork(&mut self, p: TaskId) {
        match self.task_class(p) {
            SchedClass::Rt => self.task_fork_rt(p),
            SchedClass::Fair | SchedClass::Ext | SchedClass::Bmq => self.task_fork_fair(p),
        }
    }

    /// `post_init_entity_util_avg` with the class's part of
    /// `wake_up_new_task`, once the new task's CPU is known.
    pub(crate) fn class_post_init(&mut self, p: TaskId, cpu: CpuId) {
        match self.task_class(p) {
            SchedClass::Rt => {}
            SchedClass::Fair | SchedClass::Ext | SchedClass::Bmq => self.post_init_entity_util_avg(p, cpu),
        }
    }

    /// `class->migrate_task_rq`: `p` (not queued) moves to another CPU;
    /// `migrating` when load balancing dequeued it for the move
    /// (`task_on_rq_migrating`), not a wakeup. Called from `set_task_cpu`.
    pub(crate) fn class_migrate_task_rq(&mut self, p: TaskId, old: CpuId, migrating: bool) {
        match self.task_class(p) {
            SchedClass::Rt => {}
            SchedClass::Fair | SchedClass::Ext | SchedClass::Bmq => self.migrate_task_rq_fair(p, old, migrating),
        }
    }

    /// `p->se.sched_delayed`, as core.c reads it (`uclamp_rq_inc`): the
    /// class keeps `p` queued although it sleeps. Called from `uclamp_rq_inc`.
    pub(crate) fn class_task_delayed(&self, p: TaskId) -> bool {
        match self.task_class(p) {
            SchedClass::Fair => self.task_delayed_fair(p),
            SchedClass::Rt | SchedClass::Ext | SchedClass::Bmq => false,
        }
    }

    /// `ttwu_runnable`: `p` is still queued (a delayed fair entity) when its
    /// wakeup comes: the class requeues it in place. Called from
    /// `try_to_wake_up`.
    pub(crate) fn class_ttwu_runnable(&mut self, cpu: CpuId, p: TaskId) {
        match self.task_class(p) {
            SchedClass::Fair => self.requeue_delayed_fair(cpu, p),
            SchedClass::Rt | SchedClass::Ext | SchedClass::Bmq => {}
        }
    }

    /// `class->task_woken`: after `p` was enqueued by a wakeup on `cpu` and
    /// did not preempt (the RT class pushes from an overloaded runqueue).
    /// Called from `ttwu_do_activate` and `wake_up_new_task`, as core.c does.
    #[inline]
    pub(crate) fn class_task_woken(&mut self, cpu: CpuId, p: TaskId) {
        if self.task_class(p) == SchedClass::Rt {
            self.task_woken_rt(cpu, p);
        }
    }

    /// `wakeup_preempt` (core.c): `p` was queued on busy `cpu`. Same class:
    /// the class decides; a higher class preempts at once; a lower one never.
    /// Returns whether `cpu` must reschedule. Called from `wakeup_preempt`.
    pub(crate) fn class_wakeup_preempt(&mut self, cpu: CpuId, curr: TaskId, p: TaskId) -> bool {
        let (pc, cc) = (self.task_class(p), self.task_class(curr));
        if pc != cc {
            return pc.above(cc);
        }
        match pc {
            SchedClass::Rt => self.wakeup_preempt_rt(cpu, curr, p),
            SchedClass::Fair => self.wakeup_preempt_fair(cpu, p),
            SchedClass::Ext | SchedClass::Bmq => self.peer_wakeup_preempt(cpu, p),
        }
    }

    /// `class->update_curr` of `cpu`'s running task; returns whether its
    /// slice ran out. Called from `update_curr` (core).
    pub(crate) fn class_update_curr(&mut self, cpu: CpuId, curr: TaskId) -> bool {
        match self.task_class(curr) {
            SchedClass::Fair => self.update_curr_fair(cpu),
            class => self.update_curr_other(class, cpu, curr),
        }
    }

    /// [`Sim::class_update_curr`] outside the fair class, out of line.
    #[inline(never)]
    fn update_curr_other(&mut self, class: SchedClass, cpu: CpuId, curr: TaskId) -> bool {
        match class {
            SchedClass::Rt => self.update_curr_rt(cpu, curr),
            SchedClass::Fair => unreachable!("the fair class is handled inline"),
            SchedClass::Ext | SchedClass::Bmq => self.peer_update_curr(cpu),
        }
    }

    /// `class->task_tick` on a busy CPU (after `update_curr`; `resched` = the
    /// slice ran out): whether to reschedule. Called from `sched_tick`.
    pub(crate) fn class_task_tick(&mut self, cpu: CpuId, curr: TaskId, resched: bool) -> bool {
        match self.task_class(curr) {
            SchedClass::Fair => self.task_tick_fair(cpu, curr, resched),
            class => self.task_tick_other(class, cpu, curr, resched),
        }
    }

    /// [`Sim::class_task_tick`] outside the fair class, out of line (as
    /// [`Sim::class_enqueue_task`]'s).
    #[inline(never)]
    fn task_tick_other(&mut self, class: SchedClass, cpu: CpuId, curr: TaskId, resched: bool) -> bool {
        match class {
            SchedClass::Rt => self.task_tick_rt(cpu, curr, resched),
            SchedClass::Fair => unreachable!("the fair class is handled inline"),
            SchedClass::Ext | SchedClass::Bmq => {
                self.update_load_avg(cpu, Some(curr));
                self.peer_task_tick(cpu, resched)
            }
        }
    }

    /// `class->task_tick` with `queued` set: `curr`'s slice timer fired
    /// (`hrtick()`). Returns whether `cpu` must reschedule. Called from
    /// `hrtick`. Only the fair class arms it (HRTICK_DL is not modelled:
    /// there is no deadline class); a timer left armed when another class
    /// took the CPU does nothing here.
    pub(crate) fn class_hrtick(&mut self, cpu: CpuId, curr: TaskId) -> bool {
        match self.task_class(curr) {
            SchedClass::Fair => self.task_tick_fair_queued(cpu, curr),
            SchedClass::Rt | SchedClass::Ext | SchedClass::Bmq => false,
        }
    }

    /// `class->put_prev_task`: `prev` stops running on `cpu` (it blocked,
    /// was preempted, or yields). Peers put prev back inside their pick
    /// (`balance_one` in sched_ext), unless a higher class takes the CPU.
    /// Called from `pick_next_task`.
    pub(crate) fn class_put_prev_task(&mut self, cpu: CpuId, prev: TaskId) {
        match self.task_class(prev) {
            SchedClass::Fair => self.put_prev_task_fair(cpu, prev),
            class => self.put_prev_task_other(class, cpu, prev),
        }
    }

    /// [`Sim::class_put_prev_task`] outside the fair class, out of line.
    #[inline(never)]
    fn put_prev_task_other(&mut self, class: SchedClass, cpu: CpuId, prev: TaskId) {
        match class {
            SchedClass::Rt => self.put_prev_task_rt(cpu, prev),
            SchedClass::Fair => unreachable!("the fair class is handled inline"),
            SchedClass::Ext | SchedClass::Bmq => {
                self.update_load_avg(cpu, Some(prev));
            }
        }
    }

    /// `class->set_next_task` (not `first`): `p`, already running, becomes
    /// its class's current again after a change of policy. Called from
    /// `sched_setscheduler`. (The pick sets the task it picked itself.)
    pub(crate) fn class_set_next_task(&mut self, cpu: CpuId, p: TaskId) {
        match self.task_class(p) {
            SchedClass::Rt => self.set_next_task_rt(cpu, p, false),
            SchedClass::Fair => self.set_next_task_fair(cpu, p, false),
            SchedClass::Ext | SchedClass::Bmq => {}
        }
    }

    /// `prev->switched_from`: `p` left class `prev` (its new class is set).
    /// Returns whether `cpu` must reschedule. Called from
    /// `check_class_changed`.
    pub(crate) fn class_switched_from(&mut self, cpu: CpuId, p: TaskId, prev: SchedClass) -> bool {
        match prev {
            SchedClass::Rt => self.switched_from_rt(cpu, p),
            SchedClass::Fair => {
                self.switched_from_fair(cpu, p);
                false
            }
            SchedClass::Ext | SchedClass::Bmq => false,
        }
    }

    /// `class->switched_to`: `p` joined its class. Returns whether `cpu`
    /// must reschedule. Called from `check_class_changed`.
    pub(crate) fn class_switched_to(&mut self, cpu: CpuId, p: TaskId) -> bool {
        match self.task_class(p) {
            SchedClass::Rt => self.switched_to_rt(cpu, p),
            SchedClass::Fair => self.switched_to_fair(cpu, p),
            SchedClass::Ext | SchedClass::Bmq => false,
        }
    }

    /// `class->prio_changed`: `p`'s priority changed within its class.
    /// Returns whether `cpu` must reschedule. Called from
    /// `check_class_changed`.
    pub(crate) fn class_prio_changed(&mut self, cpu: CpuId, p: TaskId, oldprio: i32) -> bool {
        match self.task_class(p) {
            SchedClass::Rt => self.prio_changed_rt(cpu, p, oldprio),
            SchedClass::Fair => self.prio_changed_fair(cpu, p, oldprio),
            SchedClass::Ext | SchedClass::Bmq => false,
        }
    }

    /// `__pick_next_task`: put `prev` back, let the classes balance
    /// (`put_prev_task_balance`), and walk the class stack from the top; the
    /// first class with a task gives the next task, which it then sets as
    /// its current (`set_next_task`). `None` = the idle task.
    pub(crate) fn pick_next_task(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let prev_class = prev.map(|pp| self.task_class(pp));
        if let Some(pp) = prev {
            self.class_put_prev_task(cpu, pp);
        }
        // balance_rt: a CPU whose RT priority dropped pulls waiting RT tasks.
        if let (Some(pp), Some(SchedClass::Rt)) = (prev, prev_class) {
            self.balance_rt(cpu, pp);
        }
        if self.rt_runnable(cpu) {
            if let Some(n) = self.pick_next_task_rt_first(cpu, prev, prev_class) {
                return Some(n);
            }
        }
        let normal = self.normal_class;
        match normal {
            SchedClass::Fair => {
                let next = self.pick_next_task_fair(cpu);
                if let Some(n) = next {
                    // The kernel puts prev and sets next only when they
                    // differ (put_prev_set_next_task).
                    self.set_next_task_fair(cpu, n, Some(n) != prev);
                }
                next
            }
            SchedClass::Ext | SchedClass::Bmq => {
                let normal_prev = prev.filter(|_| prev_class == Some(normal));
                self.pick_next_task_peer(cpu, normal_prev)
            }
            SchedClass::Rt => None,
        }
    }

    /// [`Sim::pick_next_task`]'s RT class, when an RT task is runnable on
    /// `cpu`. Out of line (as the peers' pick): most runs have no RT task,
    /// and the fair pick beside them saved fewer registers.
    #[inline(never)]
    fn pick_next_task_rt_first(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        prev_class: Option<SchedClass>,
    ) -> Option<TaskId> {
        if let (Some(pp), Some(pc)) = (prev, prev_class) {
            if pc.is_peer() {
                self.peer_put_prev_task(cpu, pp);
            }
        }
        let next = self.pick_task_rt(cpu);
        if let Some(n) = next {
            self.set_next_task_rt(cpu, n, prev_class != Some(SchedClass::Rt));
        }
        next
    }

    /// [`Sim::pick_next_task`] of a peer class (the normal class's pick).
    #[inline(never)]
    fn pick_next_task_peer(&mut self, cpu: CpuId, normal_prev: Option<TaskId>) -> Option<TaskId> {
        let next = self.peer_pick_next_task(cpu, normal_prev);
        if let Some(n) = next {
            self.update_load_avg(cpu, Some(n));
        }
        next
    }

    /// What `cpu` runs after the stopper moved its task away (active
    /// balance): the class stack's pick, without a newly-idle pass.
    pub(crate) fn pick_next_task_after_stop(&mut self, cpu: CpuId) -> Option<TaskId> {
        if self.rt_runnable(cpu) {
            if let Some(n) = self.pick_task_rt(cpu) {
                self.set_next_task_rt(cpu, n, true);
                return Some(n);
            }
        }
        let next = self.pick_task_fair(cpu);
        if let Some(n) = next {
            self.set_next_task_fair(cpu, n, true);
        }
        next
    }
}
