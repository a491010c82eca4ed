//! The scheduler tick (`sched_tick`), idle entry and exit, and NOHZ
//! bookkeeping (`nr_busy_cpus`, the tick-stopped idle mask).

use super::{Ev, Sim};
use crate::ids::CpuId;
use crate::trace::Event;

impl Sim {
    /// The next tick boundary after now: ticks of all CPUs are aligned, as
    /// with the kernel's default `sched_skew_tick=0`.
    fn next_tick_time(&self) -> u64 {
        (self.now / self.tick_ns + 1) * self.tick_ns
    }

    /// `sched_tick` on `cpu`.
    pub(super) fn sched_tick(&mut self, cpu: CpuId) -> crate::Result<()> {
        let Some(p) = self.rqs[cpu.idx()].curr else {
            return Ok(());
        };
        self.sync_segment(cpu);
        // llc_idle_mask: a busy CPU leaves the LLC's idle mask only here, so
        // at most once per tick per CPU (the proposal's rate limit).
        let llc = self.llc_of(cpu);
        self.llc[llc].idle_mask.clear(cpu);
        let resched = self.update_curr(cpu);
        if self.class_task_tick(cpu, p, resched) {
            self.resched_curr(cpu, cpu);
        }
        let t = self.next_tick_time();
        let gen = self.rqs[cpu.idx()].tick_gen;
        let t = t.max(self.now);
        self.queue.push_key(self.key_tick(cpu), t, Ev::Tick { cpu, gen });
        // sched_balance_trigger and the NOHZ kick belong to the fair class;
        // a peer replacing it has its own balancing.
        if self.normal_class != crate::class::SchedClass::Fair {
            return Ok(());
        }
        self.sched_balance_trigger(cpu)?;
        self.nohz_balancer_kick(cpu)
    }

    /// `cpu` switches to the idle task: pick an idle state, stop the tick,
    /// update the LLC's shared state.
    pub(super) fn enter_idle(&mut self, cpu: CpuId) {
        let now = self.now;
        let state = self.idle_select(cpu);
        if !self.machine.core_type(cpu).idle_states.is_empty() {
            self.emit_trace_only(Event::CpuIdle { cpu, state: Some(state) });
        }
        let rq = &mut self.rqs[cpu.idx()];
        rq.idle_since = now;
        rq.idle_state = Some(state);
        rq.tick_gen += 1;
        self.queue.cancel_key(self.key_tick(cpu));
        let rq = &mut self.rqs[cpu.idx()];
        // nr_busy_cpus counts CPUs whose tick runs (set_cpu_sd_state_idle).
        let was_busy = !std::mem::replace(&mut rq.tick_stopped, true);
        self.nohz_idle.set(cpu);
        let llc = self.llc_of(cpu);
        if was_busy {
            self.llc[llc].nr_busy_cpus = self.llc[llc].nr_busy_cpus.saturating_sub(1);
        }
        self.llc[llc].idle_mask.set(cpu);
        self.update_idle_core(cpu);
    }

    /// `cpu` leaves idle to run a task: pay the idle state's exit latency and
    /// restart the tick.
    pub(super) fn exit_idle(&mut self, cpu: CpuId) {
        let now = self.now;
        let exit = match self.rqs[cpu.idx()].idle_state {
            Some(s) => self.machine.core_type(cpu).idle_states.get(s as usize).map_or(0, |st| st.exit_latency_ns),
            None => 0,
        };
        // A state entered (and traced) is left; CPUs idle from the start entered none.
        if self.rqs[cpu.idx()].idle_state.is_some() && !self.machine.core_type(cpu).idle_states.is_empty() {
            // DEVIATION(kernel): the kernel traces the exit once the state's
            // exit latency has passed; here it is traced when the wakeup
            // reaches the CPU, and the latency delays the task's first run
            // (`ready_at`) instead. The same ordering puts the wakee's
            // sched_switch an exit latency early (README, "Not yet").
            self.emit_trace_only(Event::CpuIdle { cpu, state: None });
        }
        let t = self.next_tick_time();
        let rq = &mut self.rqs[cpu.idx()];
        rq.idle_state = None;
        rq.ready_at = rq.ready_at.max(now) + exit;
        rq.tick_gen += 1;
        let was_busy = !std::mem::replace(&mut rq.tick_stopped, false);
        let gen = rq.tick_gen;
        let t = t.max(self.now);
        self.queue.push_key(self.key_tick(cpu), t, Ev::Tick { cpu, gen });
        self.nohz_idle.clear(cpu);
        if !was_busy {
            let llc = self.llc_of(cpu);
            self.llc[llc].nr_busy_cpus += 1;
        }
    }

    /// The idle governor: the deepest state whose target residency fits in
    /// the predicted idle time (`avg_idle`), like menu/teo without timers.
    fn idle_select(&self, cpu: CpuId) -> u8 {
        let predicted = self.rqs[cpu.idx()].avg_idle;
        let states = &self.machine.core_type(cpu).idle_states;
        let mut pick = 0u8;
        for (i, s) in states.iter().enumerate() {
            if s.target_residency_ns <= predicted {
                pick = i as u8;
            }
        }
        pick
    }

    /// `__update_idle_core`: when every SMT sibling of `cpu` is idle, the LLC
    /// has an idle core.
    pub fn update_idle_core(&mut self, cpu: CpuId) {
        if !self.machine.has_smt() {
            return;
        }
        let all_idle = self.smt_siblings[cpu.idx()].iter().all(|s| self.rqs[s.idx()].idle_cpu());
        if all_idle {
            let llc = self.llc_of(cpu);
            self.llc[llc].has_idle_cores = true;
        }
    }
}
