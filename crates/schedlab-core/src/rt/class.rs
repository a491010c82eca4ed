//! The RT class's hooks in the class table (`rt_sched_class`): the engine
//! calls these through `class::hooks`; they keep the class's state
//! ([`RtState`]), call the pure decisions of this module and apply them
//! (queue, move, reschedule).
//!
//! RT time is measured on `rq_clock_task` (IRQ time excluded) and feeds the
//! runqueue's `avg_rt` PELT signal, which `scale_rt_capacity` subtracts from
//! the capacity the fair class sees (`capacity_of`).

use super::{
    need_pull_rt_task, pull_rt_task, push_rt_task, select_task_rq_rt, task_woken_rt, wakeup_preempt_rt, AnyDistribute,
    Pull, PullOutcome, PushDecision, RtBandwidth, RtCurr, RtEnv, RtParams, RtPolicy, RtRootDomain, RtRq, RtThrottle,
    RtoPushState, TaskAffinity, WakeupPreempt,
};
use crate::cpumask::CpuMask;
use crate::engine::task::Task;
use crate::engine::uclamp::{UCLAMP_MAX, UCLAMP_MIN};
use crate::engine::{Ev, Sim};
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, Ns, TaskId};
use crate::pelt;
use crate::sched_feat;
use crate::workload::SchedPolicy;

impl TaskAffinity for [Task] {
    fn cpus_allowed(&self, p: TaskId) -> &CpuMask {
        &self[p.idx()].allowed
    }
}

/// The RT class's state: per-CPU `rt_rq`s and throttling, the root domain's
/// cpupri and overload mask, and per-task RR slices.
pub struct RtState {
    /// Tunables (RR slice, bandwidth period and runtime).
    pub params: RtParams,
    /// `def_rt_bandwidth`.
    pub bw: RtBandwidth,
    /// Per CPU `rq->rt`.
    pub rqs: Vec<RtRq>,
    /// Per CPU throttling state of `rq->rt`.
    pub throttle: Vec<RtThrottle>,
    /// Per CPU `rt_rq->curr->se.exec_start` (clock_task), for `update_curr_rt`.
    pub exec_start: Vec<Ns>,
    /// Per CPU, the running task as the RT decisions see it.
    pub curr: Vec<RtCurr>,
    /// `rd->cpupri`, `rd->rto_mask`.
    pub rd: RtRootDomain,
    /// The RT_PUSH_IPI chain.
    pub push_ipi: RtoPushState,
    /// Per CPU `cpumask_any_and_distribute` memory.
    pub cursor: Vec<AnyDistribute>,
    /// Per task `p->rt.time_slice`, ticks (SCHED_RR).
    pub time_slice: Vec<u32>,
    /// The RR slice in ticks at the machine's HZ.
    pub rr_ticks: u32,
    /// The bandwidth period timer is armed.
    pub period_timer_armed: bool,
    /// When it fires next.
    pub period_expires: Ns,
    /// Scratch for `pull_rt_task`.
    pub pulls: Vec<Pull>,
    /// Some task was ever enqueued in the RT class (`enqueue_task_rt`, the
    /// only way into an `rt_rq`). Until then every CPU's `rt_nr_running`
    /// is 0, and `rt_runnable`, asked at every pick, answers without
    /// reading the CPU's `rt_rq`.
    pub used: bool,
}

impl RtState {
    /// Fresh state for `nr_cpus` CPUs and `nr_tasks` tasks at `hz`.
    pub fn new(nr_cpus: usize, nr_tasks: usize, hz: u32, params: RtParams) -> Self {
        let bw = RtBandwidth::from_params(&params);
        let rr_ticks = params.rr_timeslice_ticks(hz);
        RtState {
            params,
            bw,
            rqs: (0..nr_cpus).map(|c| RtRq::new(CpuId(c as u32))).collect(),
            throttle: vec![RtThrottle::new(&bw); nr_cpus],
            exec_start: vec![0; nr_cpus],
            curr: vec![RtCurr::IDLE; nr_cpus],
            rd: RtRootDomain::new(nr_cpus),
            push_ipi: RtoPushState::default(),
            cursor: vec![AnyDistribute::default(); nr_cpus],
            time_slice: vec![rr_ticks; nr_tasks],
            rr_ticks,
            period_timer_armed: false,
            period_expires: 0,
            pulls: Vec::new(),
            used: false,
        }
    }
}

/// The kernel's `p->prio` for a task of `policy`, RT priority and nice.
pub fn task_prio(policy: SchedPolicy, rt_priority: u32, nice: i32) -> i32 {
    if policy.is_rt() {
        super::rt_priority_to_prio(rt_priority)
    } else {
        super::DEFAULT_PRIO + nice
    }
}

fn rt_policy(p: SchedPolicy) -> RtPolicy {
    if p == SchedPolicy::Rr {
        RtPolicy::Rr
    } else {
        RtPolicy::Fifo
    }
}

impl Sim {
    /// The RT decisions' view of the machine.
    fn rt_env(&self) -> RtEnv<'_, [Task]> {
        RtEnv {
            rt_rqs: &self.rt.rqs,
            curr: &self.rt.curr,
            rd: &self.rt.rd,
            domains: &self.domains,
            tasks: &self.tasks,
            fits: None,
        }
    }

    /// `rt_task_fits_capacity(p, cpu)` on asymmetric machines: the CPU's
    /// original capacity reaches the task's clamps (`min(uclamp_min,
    /// uclamp_max)`). An RT task's `uclamp_min` defaults to 1024
    /// (`sysctl_sched_uclamp_util_min_rt_default`), so unless it asked for
    /// less only CPUs of full capacity fit. Without UCLAMP_TASK the clamps
    /// read as 0..1024 (`uclamp_eff_value` is `uclamp_none`): every CPU fits.
    fn rt_fits(&self, p: TaskId, cpu: CpuId) -> bool {
        if self.domains.sd_asym_cpucapacity[cpu.idx()].is_none() || !sched_feat!(self.features, UCLAMP_TASK) {
            return true;
        }
        let (min, max) = (self.uclamp_eff_value(p, UCLAMP_MIN), self.uclamp_eff_value(p, UCLAMP_MAX));
        self.machine.capacity_orig(cpu) as u64 >= min.min(max)
    }

    /// `rt_rq_is_runnable(&rq->rt)`: RT tasks are queued on `cpu` and its
    /// `rt_rq` is not throttled. A `sugov:N` thread does not count: it
    /// stands for the kernel's SCHED_DEADLINE one (`SCHED_FLAG_SUGOV`).
    #[inline]
    pub fn rt_rq_is_runnable(&self, cpu: CpuId) -> bool {
        let n = self.rt.rqs[cpu.idx()].rt_nr_running();
        if n == 0 || self.rt.throttle[cpu.idx()].rt_throttled {
            return false;
        }
        n > self.sugov_queued_on(cpu) as u32
    }

    /// Record what `cpu` now runs, for the RT decisions (`rq->curr->prio`).
    /// Called by the core at every context switch.
    pub(crate) fn rt_note_curr(&mut self, cpu: CpuId, next: Option<TaskId>) {
        self.rt.curr[cpu.idx()] = match next {
            Some(n) => RtCurr { prio: self.tasks[n.idx()].prio, nr_cpus_allowed: self.tasks[n.idx()].nr_cpus_allowed },
            None => RtCurr::IDLE,
        };
    }

    /// `enqueue_task_rt`.
    pub(crate) fn enqueue_task_rt(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        let t = &self.tasks[p.idx()];
        let (prio, policy, nr) = (t.prio, rt_policy(t.policy), t.nr_cpus_allowed);
        let is_current = self.rqs[cpu.idx()].curr == Some(p);
        let head = flags.has(EnqueueFlags::HEAD);
        self.rt.used = true;
        let change = self.rt.rqs[cpu.idx()].enqueue_task_rt(p, prio, policy, head, is_current, nr);
        self.rt.rd.apply(cpu, change);
        self.start_rt_bandwidth();
        self.enqueue_top_rt_rq_kick(cpu, p);
    }

    /// The cpufreq kick at the end of `enqueue_top_rt_rq` ("Kick cpufreq
    /// (see the comment in kernel/sched/sched.h)"), which every RT enqueue
    /// and dequeue reaches (`dequeue_rt_stack` takes the top runqueue off,
    /// `enqueue_top_rt_rq` puts it back) unless the RT runqueue is
    /// throttled, so schedutil sees an RT task (`rt_rq_is_runnable`: the
    /// top frequency) when it arrives, not at the next tick. Since v4.16
    /// (`cpufreq/schedutil: Rewrite CPUFREQ_RT support`); before it
    /// `update_curr_rt` called the hook (DEVIATION: the `v4.14` profile
    /// kicks here too). A `sugov:N` thread (`p`) does not kick: it stands
    /// for the kernel's SCHED_DEADLINE one, whose special entity skips
    /// `add_running_bw`/`sub_running_bw` and so their cpufreq kicks
    /// (`dl_entity_is_special`).
    fn enqueue_top_rt_rq_kick(&mut self, cpu: CpuId, p: TaskId) {
        if !self.rt.throttle[cpu.idx()].rt_throttled && self.sugov_domain_of(p).is_none() {
            self.cpufreq_update_util(cpu);
        }
    }

    /// `dequeue_task_rt`: account the running task first.
    pub(crate) fn dequeue_task_rt(&mut self, cpu: CpuId, p: TaskId, _flags: DequeueFlags) -> bool {
        if self.rqs[cpu.idx()].curr == Some(p) {
            self.update_curr_rt(cpu, p);
        }
        let t = &self.tasks[p.idx()];
        let change = self.rt.rqs[cpu.idx()].dequeue_task_rt(p, t.prio, rt_policy(t.policy));
        self.rt.rd.apply(cpu, change);
        self.enqueue_top_rt_rq_kick(cpu, p);
        true
    }

    /// `select_task_rq_rt`.
    pub(crate) fn select_task_rq_rt(&mut self, p: TaskId, prev: CpuId, _wake_flags: u32, this_cpu: CpuId) -> CpuId {
        let prio = self.tasks[p.idx()].prio;
        let mut cursor = self.rt.cursor[this_cpu.idx()];
        let asym = self.domains.asym_cpucap_active;
        let fits = |t: TaskId, c: CpuId| self.rt_fits(t, c);
        let mut env = self.rt_env();
        if asym {
            env.fits = Some(&fits);
        }
        let cpu = select_task_rq_rt(&env, p, prio, prev, true, this_cpu, &mut cursor);
        self.rt.cursor[this_cpu.idx()] = cursor;
        cpu
    }

    /// `task_fork_rt`: a new RR task starts with a full slice.
    pub(crate) fn task_fork_rt(&mut self, p: TaskId) {
        self.rt.time_slice[p.idx()] = self.rt.rr_ticks;
    }

    /// `task_woken_rt`: a woken RT task that will not run here soon is
    /// pushed at once (by the waking CPU).
    pub(crate) fn task_woken_rt(&mut self, cpu: CpuId, p: TaskId) {
        let t = &self.tasks[p.idx()];
        let on_cpu = self.rqs[cpu.idx()].curr == Some(p);
        let rq = &self.rqs[cpu.idx()];
        if task_woken_rt(on_cpu, t.prio, t.nr_cpus_allowed, self.rt.curr[cpu.idx()], rq.need_resched) {
            self.push_rt_tasks(cpu, cpu);
        }
    }

    /// `wakeup_preempt_rt` (with `check_preempt_equal_prio`).
    pub(crate) fn wakeup_preempt_rt(&mut self, cpu: CpuId, curr: TaskId, p: TaskId) -> bool {
        let (pt, ct) = (&self.tasks[p.idx()], &self.tasks[curr.idx()]);
        let rc = RtCurr { prio: ct.prio, nr_cpus_allowed: ct.nr_cpus_allowed };
        let need = self.rqs[cpu.idx()].need_resched;
        match wakeup_preempt_rt(&self.rt.rd, pt.prio, &pt.allowed, rc, &ct.allowed, need) {
            WakeupPreempt::None => false,
            WakeupPreempt::Resched => true,
            WakeupPreempt::RequeueHeadAndResched => {
                let prio = pt.prio;
                self.rt.rqs[cpu.idx()].requeue_task_rt(p, prio, true);
                true
            }
        }
    }

    /// `update_curr_rt`: charge the running RT task's time since it was last
    /// accounted to the CPU's RT bandwidth. Returns whether the CPU's RT
    /// class is now throttled (it must reschedule).
    pub(crate) fn update_curr_rt(&mut self, cpu: CpuId, _curr: TaskId) -> bool {
        let now = self.rq_clock_task(cpu);
        let delta = now.saturating_sub(self.rt.exec_start[cpu.idx()]);
        self.rt.exec_start[cpu.idx()] = now;
        if !self.rt_bandwidth_active() {
            return false;
        }
        let bw = self.rt.bw;
        let exceeded = self.rt.throttle[cpu.idx()].update_curr_rt(&bw, delta);
        if exceeded && !self.rt_throttle_applies(cpu) {
            // fair_server: no fair task waits here, so RT keeps the CPU;
            // the period's budget stays spent for when one arrives.
            let th = &mut self.rt.throttle[cpu.idx()];
            th.rt_throttled = false;
            th.rt_time_ns = th.rt_time_ns.min(th.rt_runtime_ns);
            return false;
        }
        if exceeded {
            // sched_rt_runtime_exceeded -> sched_rt_rq_dequeue: the
            // throttled RT runqueue leaves, and cpufreq is kicked.
            self.cpufreq_update_util(cpu);
        }
        exceeded
    }

    /// RT time is limited on this run: root throttling (`rt_bandwidth`,
    /// kernels before v6.12) or the fair deadline server (`fair_server`).
    fn rt_bandwidth_active(&self) -> bool {
        self.rt.bw.rt_bandwidth_enabled()
            && (sched_feat!(self.features, rt_bandwidth) || sched_feat!(self.features, fair_server))
    }

    /// Whether an exhausted RT budget stops RT tasks on `cpu` now: always
    /// with root throttling; with the fair server only while fair tasks wait.
    // DEVIATION(kernel): the fair deadline server (v6.12+) is a
    // SCHED_DEADLINE entity that runs fair tasks for 50 ms per 1 s once they
    // have starved (deferred server); schedlab gives them the same share by
    // throttling RT on that CPU for the rest of the period, only when fair
    // tasks are queued there.
    fn rt_throttle_applies(&self, cpu: CpuId) -> bool {
        sched_feat!(self.features, rt_bandwidth) || self.rqs[cpu.idx()].cfs.h_nr_runnable > 0
    }

    /// `start_rt_bandwidth`: arm the period timer if RT time is limited.
    fn start_rt_bandwidth(&mut self) {
        if self.rt.period_timer_armed || !self.rt_bandwidth_active() {
            return;
        }
        self.rt.period_timer_armed = true;
        self.rt.period_expires = self.now + self.rt.bw.rt_period_ns;
        self.at(self.rt.period_expires, Ev::RtPeriodTimer);
    }

    /// `sched_rt_period_timer` / `do_sched_rt_period_timer`: refill every
    /// CPU's RT budget; unthrottled CPUs with RT work reschedule. Re-armed
    /// while any CPU still has RT time or tasks.
    pub(crate) fn sched_rt_period_timer(&mut self) -> crate::Result<()> {
        let (overrun, next) = super::hrtimer_forward(self.rt.period_expires, self.now, self.rt.bw.rt_period_ns);
        let bw = self.rt.bw;
        let mut busy = false;
        for c in 0..self.rt.rqs.len() {
            let nr = self.rt.rqs[c].rt_nr_running();
            let out = self.rt.throttle[c].do_sched_rt_period_timer(&bw, overrun.max(1), nr);
            busy |= out.busy;
            if out.enqueue && nr > 0 {
                let cpu = CpuId(c as u32);
                // sched_rt_rq_enqueue -> enqueue_top_rt_rq: unthrottled,
                // the RT runqueue is back, and cpufreq is kicked.
                if !self.rt.throttle[c].rt_throttled {
                    self.cpufreq_update_util(cpu);
                }
                self.resched_curr(cpu, cpu);
            }
        }
        if busy {
            self.rt.period_expires = next;
            self.at(next, Ev::RtPeriodTimer);
        } else {
            self.rt.period_timer_armed = false;
        }
        Ok(())
    }

    /// `task_tick_rt`: PELT of the RT class, the bandwidth, and the SCHED_RR
    /// slice (in ticks): at its end the task goes behind its equals.
    pub(crate) fn task_tick_rt(&mut self, cpu: CpuId, curr: TaskId, throttled: bool) -> bool {
        self.update_rt_rq_load_avg(cpu, true);
        if throttled {
            return true;
        }
        let t = &self.tasks[curr.idx()];
        if t.policy != SchedPolicy::Rr {
            return false;
        }
        let prio = t.prio;
        let s = &mut self.rt.time_slice[curr.idx()];
        *s = s.saturating_sub(1);
        if *s > 0 {
            return false;
        }
        *s = self.rt.rr_ticks;
        self.rt.rqs[cpu.idx()].rr_slice_expired(curr, prio)
    }

    /// `update_rt_rq_load_avg(rq_clock_pelt, rq, running)`.
    fn update_rt_rq_load_avg(&mut self, cpu: CpuId, running: bool) {
        self.update_rq_clock(cpu);
        let rq = &mut self.rqs[cpu.idx()];
        let now = rq.clock_pelt.rq_clock_pelt();
        // No cpufreq kick here, as in the kernel: the RT class kicks it
        // from its enqueues and dequeues (`enqueue_top_rt_rq_kick`), and its
        // PELT reaches schedutil at the next kick of any class.
        pelt::update_rt_rq_load_avg(&mut rq.rt_avg, now, running);
    }

    /// `put_prev_task_rt`: account, PELT, and a still-queued task that may
    /// move becomes pushable again.
    pub(crate) fn put_prev_task_rt(&mut self, cpu: CpuId, prev: TaskId) {
        self.update_curr_rt(cpu, prev);
        self.update_rt_rq_load_avg(cpu, true);
        let t = &self.tasks[prev.idx()];
        let queued = t.on_rq && t.cpu == cpu;
        let change = self.rt.rqs[cpu.idx()].put_prev_task_rt(prev, t.prio, queued, t.nr_cpus_allowed);
        self.rt.rd.apply(cpu, change);
    }

    /// `balance_rt`: `prev` (an RT task) left the CPU; if the best RT level
    /// here dropped below it, pull RT work from overloaded CPUs.
    pub(crate) fn balance_rt(&mut self, cpu: CpuId, prev: TaskId) {
        let t = &self.tasks[prev.idx()];
        let still_queued = t.on_rq && t.cpu == cpu;
        if still_queued || !need_pull_rt_task(&self.rt.rqs[cpu.idx()], t.prio) {
            return;
        }
        self.pull_rt_task(cpu);
    }

    /// `pull_rt_task`: with RT_PUSH_IPI, ask the overloaded CPUs to push
    /// (an IPI chain over `rto_mask`: each hop is an IPI, `cost.ipi_ns`
    /// later); else take their tasks directly, now.
    fn pull_rt_task(&mut self, cpu: CpuId) {
        let mut pulls = std::mem::take(&mut self.rt.pulls);
        let ipi = sched_feat!(self.features, RT_PUSH_IPI);
        let outcome = pull_rt_task(&self.rt_env(), cpu, ipi, &mut pulls);
        match outcome {
            PullOutcome::Nothing => {}
            PullOutcome::PushIpi => {
                if let Some(first) = self.rt.push_ipi.tell_cpu_to_push(&self.rt.rd.rto_mask) {
                    self.at(self.now + self.machine.cost.ipi_ns, Ev::RtPushIpi(first));
                }
            }
            PullOutcome::Pulled(_) => {
                for pl in &pulls {
                    self.move_queued_task(pl.task, pl.src, cpu);
                }
            }
        }
        self.rt.pulls = pulls;
    }

    /// `rto_push_irq_work_func` on `cpu`: the push IPI arrived; push what
    /// this CPU can, then pass the IPI on to the next overloaded CPU.
    pub(crate) fn rt_push_ipi(&mut self, cpu: CpuId) -> crate::Result<()> {
        if self.rt.rqs[cpu.idx()].overloaded() {
            self.push_rt_tasks(cpu, cpu);
        }
        if let Some(next) = self.rt.push_ipi.rto_next_cpu(&self.rt.rd.rto_mask) {
            self.at(self.now + self.machine.cost.ipi_ns, Ev::RtPushIpi(next));
        }
        Ok(())
    }

    /// `push_rt_tasks(rq)` of `src`, run on `this_cpu`: push the best
    /// pushable task to a CPU running below it until none can go.
    fn push_rt_tasks(&mut self, src: CpuId, this_cpu: CpuId) {
        for _ in 0..self.rt.rqs.len() * 4 {
            let mut cursor = self.rt.cursor[this_cpu.idx()];
            let d = push_rt_task(&self.rt_env(), src, this_cpu, &mut cursor);
            self.rt.cursor[this_cpu.idx()] = cursor;
            match d {
                PushDecision::Nothing => return,
                PushDecision::ReschedCurr => {
                    self.resched_curr(src, this_cpu);
                    return;
                }
                PushDecision::Push { task, dst, .. } => self.move_queued_task(task, src, dst),
            }
        }
    }

    /// `sched_rt_runnable`: RT tasks queued and the class not throttled.
    #[inline]
    pub(crate) fn rt_runnable(&self, cpu: CpuId) -> bool {
        debug_assert!(self.rt.used || self.rt.rqs[cpu.idx()].rt_nr_running() == 0);
        self.rt.used && self.rt.rqs[cpu.idx()].rt_nr_running() > 0 && !self.rt.throttle[cpu.idx()].rt_throttled
    }

    /// `pick_task_rt`.
    pub(crate) fn pick_task_rt(&mut self, cpu: CpuId) -> Option<TaskId> {
        if !self.rt_runnable(cpu) {
            return None;
        }
        self.rt.rqs[cpu.idx()].pick_next_rt_entity().map(|(p, _)| p)
    }

    /// `set_next_task_rt`: start the runtime clock; the task is no longer
    /// pushable; coming from another class, close that stretch of `avg_rt`
    /// and push what waits here (`rt_queue_push_tasks`).
    pub(crate) fn set_next_task_rt(&mut self, cpu: CpuId, next: TaskId, first: bool) {
        let now = self.rq_clock_task(cpu);
        self.rt.exec_start[cpu.idx()] = now;
        let prio = self.tasks[next.idx()].prio;
        let change = self.rt.rqs[cpu.idx()].set_next_task_rt(next, prio);
        self.rt.rd.apply(cpu, change);
        if first {
            self.update_rt_rq_load_avg(cpu, false);
        }
        if self.rt.rqs[cpu.idx()].has_pushable_tasks() {
            self.rt_note_curr(cpu, Some(next));
            self.push_rt_tasks(cpu, cpu);
        }
    }

    /// `switched_from_rt`: `p` left the RT class; with no RT task left on
    /// `cpu`, pull RT work from overloaded CPUs (`rt_queue_pull_task`).
    /// Returns whether that gave `cpu` something to reschedule for.
    pub(crate) fn switched_from_rt(&mut self, cpu: CpuId, p: TaskId) -> bool {
        if !self.tasks[p.idx()].on_rq || self.rt.rqs[cpu.idx()].rt_nr_running() > 0 {
            return false;
        }
        self.pull_rt_task(cpu);
        self.rt_runnable(cpu)
    }

    /// `switched_to_rt` for the running task: its RR slice starts full if it
    /// never had one (`__sched_fork` sets it for every task), and `avg_rt`
    /// starts counting (`update_rt_rq_load_avg`). It keeps the CPU.
    pub(crate) fn switched_to_rt(&mut self, cpu: CpuId, p: TaskId) -> bool {
        if self.rt.time_slice[p.idx()] == 0 {
            self.rt.time_slice[p.idx()] = self.rt.rr_ticks;
        }
        self.update_rt_rq_load_avg(cpu, false);
        false
    }

    /// `prio_changed_rt` for the running task: a lowered priority pulls
    /// higher RT work from elsewhere, and reschedules when a queued RT task
    /// now outranks it.
    pub(crate) fn prio_changed_rt(&mut self, cpu: CpuId, p: TaskId, oldprio: i32) -> bool {
        let prio = self.tasks[p.idx()].prio;
        if oldprio < prio {
            self.pull_rt_task(cpu);
        }
        prio > self.rt.rqs[cpu.idx()].highest_prio_curr()
    }
}
