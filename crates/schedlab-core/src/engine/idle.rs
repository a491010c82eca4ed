//! The idle loop of a CPU (kernel/sched/idle.c `do_idle`/`cpuidle_idle_call`):
//! the governor (`cpuidle/`) picks a state and says whether the tick stops;
//! a stopped tick puts the CPU in the NOHZ idle mask
//! (`tick_nohz_idle_stop_tick` -> `nohz_balance_enter_idle`), a retained
//! one fires on the idle CPU (`sched_tick_idle`), ends the state, runs the
//! idle CPU's periodic balance and lets the governor choose again.
//!
//! Wakeup sources the governor sees: the tick, and the sleep timers armed on
//! the CPU (`engine/timers.rs`).
//! DEVIATION(kernel): a CPU idle since the start of the run has entered no
//! state until it first runs something (it draws its shallowest state's
//! power and its first wakeup pays no exit latency); entering the governor's
//! state at the start was tried and moved start-up transients of short runs
//! (hackbench on hikey960 pays a 1.6-2.9 ms cluster-sleep exit per CPU).
//! DEVIATION(kernel): a timer or interrupt that brings no task to an idle
//! CPU does not end its idle period here (the kernel wakes the CPU, which
//! re-enters the idle loop and runs the governor again); the next wakeup
//! that does is measured from the state's entry.

use super::Sim;
use crate::cpuidle::{avg_idle_select, cpuidle_reflect, cpuidle_select, IdleGovernor, Selection, SleepLength};
use crate::ids::CpuId;
use crate::topology::IdleLevel;
use crate::trace::Event;

impl Sim {
    /// `tick_nohz_get_sleep_length` and the tick state of `cpu`, now.
    fn sleep_length(&self, cpu: CpuId) -> SleepLength {
        let now = self.now;
        let next_timer = self.timers.next_expiry(cpu).map_or(u64::MAX, |t| t.saturating_sub(now));
        let tick_stopped = self.rqs[cpu.idx()].tick_stopped;
        let next_tick = self.next_tick_time() - now;
        SleepLength {
            sleep_length_ns: next_timer,
            delta_tick_ns: if tick_stopped { next_timer } else { next_timer.min(next_tick) },
            tick_stopped,
            tick_ns: self.tick_ns,
            latency_req_ns: self.machine.cpuidle.latency_req_ns,
            avg_idle_ns: self.rqs[cpu.idx()].avg_idle,
        }
    }

    /// `cpuidle_idle_call`: select a state for idle `cpu`, enter it, and stop
    /// the tick if the governor says so (else it keeps running).
    pub(super) fn cpuidle_idle_call(&mut self, cpu: CpuId) {
        let gov = self.machine.cpuidle.governor;
        let states = &self.machine.core_types[self.cpu_rec[cpu.idx()].core_type as usize].idle_states;
        if states.is_empty() {
            // No cpuidle driver: default_idle_call, and the tick stops.
            self.turbo_note_state(cpu, Some(0));
            self.tick_nohz_idle_stop_tick(cpu);
            return;
        }
        let (Selection { idx, stop_tick }, cluster) = if gov == IdleGovernor::AvgIdle {
            // avg_idle reads the CPU's avg_idle and the latency limit only,
            // and keeps no history: no sleep length, no device bookkeeping.
            let sel = avg_idle_select(states, self.rqs[cpu.idx()].avg_idle, self.machine.cpuidle.latency_req_ns);
            (sel, states[sel.idx].level == IdleLevel::Cluster)
        } else {
            self.governor_select(cpu)
        };
        let state = idx as u8;
        // A state chosen again without a wakeup in between, or a cluster
        // state: the cluster's requests (out of line, as the governors'
        // selection: with them inline every entry saved six registers).
        if cluster || self.rqs[cpu.idx()].idle_state.is_some() {
            self.cluster_request(cpu, idx);
        }
        // The kernel traces the requested state (`cpuidle_enter_state`).
        self.emit(Event::CpuIdle { cpu, state: Some(state) });
        if gov != IdleGovernor::AvgIdle {
            self.idle_devs[cpu.idx()].entered_at = self.now;
        }
        self.rqs.untracked_mut(cpu.idx()).idle_state = Some(state);
        self.turbo_note_state(cpu, Some(state));
        if stop_tick {
            self.tick_nohz_idle_stop_tick(cpu);
        }
    }

    /// `cpuidle_select` of a governor with history (menu, teo), for
    /// [`Sim::cpuidle_idle_call`].
    /// Also whether the state chosen is a cluster state.
    #[inline(never)]
    fn governor_select(&mut self, cpu: CpuId) -> (Selection, bool) {
        let gov = self.machine.cpuidle.governor;
        let states = &self.machine.core_type(cpu).idle_states;
        let s = self.sleep_length(cpu);
        let sel = cpuidle_select(gov, &mut self.idle_devs[cpu.idx()], states, &s);
        (sel, states[sel.idx].level == IdleLevel::Cluster)
    }

    /// The cluster's requests when idle `cpu` enters state `idx`
    /// ([`Sim::cpuidle_idle_call`]).
    #[inline(never)]
    fn cluster_request(&mut self, cpu: CpuId, idx: usize) {
        let states = &self.machine.core_type(cpu).idle_states;
        let cl = self.machine.cpus[cpu.idx()].cluster as usize;
        // A state chosen again without a wakeup in between replaces the
        // CPU's request (the cluster's count holds one request per CPU).
        if let Some(old) = self.rqs[cpu.idx()].idle_state {
            if states.get(old as usize).is_some_and(|st| st.level == IdleLevel::Cluster) {
                self.cluster_idle[cl].cpu_exit(old as usize);
            }
        }
        if states[idx].level == IdleLevel::Cluster {
            // A cluster state is a request: the cluster goes down with its
            // last CPU (`cpuidle/cluster.rs`).
            self.cluster_idle[cl].cpu_enter(idx);
        }
    }

    /// `tick_nohz_idle_stop_tick`: cancel the pending tick, and
    /// `nohz_balance_enter_idle`: the CPU joins the NOHZ idle mask and stops
    /// counting as busy in its LLC (`set_cpu_sd_state_idle`).
    fn tick_nohz_idle_stop_tick(&mut self, cpu: CpuId) {
        self.queue.cancel_key(self.key_tick(cpu));
        let rq = self.rqs.untracked_mut(cpu.idx());
        rq.tick_gen += 1;
        let was_busy = !std::mem::replace(&mut rq.tick_stopped, true);
        self.nohz_balance_enter_idle(cpu, was_busy);
    }

    /// The CPU leaves the state it is in at `now` (`cpuidle_reflect`);
    /// `tick` when its tick woke it. Returns the state's exit latency.
    #[inline(always)]
    fn cpuidle_exit_state(&mut self, cpu: CpuId, tick: bool) -> u64 {
        let Some(s) = self.rqs.untracked_mut(cpu.idx()).idle_state.take() else { return 0 };
        let states = &self.machine.core_types[self.cpu_rec[cpu.idx()].core_type as usize].idle_states;
        let exit = match states.get(s as usize) {
            Some(st) if st.level == IdleLevel::Cluster => {
                let cl = self.machine.cpus[cpu.idx()].cluster as usize;
                self.cluster_idle[cl].wake(states, s as usize, self.now)
            }
            // The delay a wakeup takes (the declared latency unless the
            // machine measured another: `actual_exit_latency_us`).
            Some(st) => st.actual_exit_latency_ns,
            None => 0,
        };
        // DEVIATION(kernel): the kernel traces the exit once the state's
        // exit latency has passed; here it is traced when the wakeup
        // reaches the CPU, and the latency delays the task's first run
        // (`ready_at`) instead. The same ordering puts the wakee's
        // sched_switch an exit latency early (README, "Not yet").
        self.emit(Event::CpuIdle { cpu, state: None });
        if self.machine.cpuidle.governor == IdleGovernor::AvgIdle {
            return exit;
        }
        let dev = &mut self.idle_devs[cpu.idx()];
        // The residency `cpuidle_enter_state` measures ends when the CPU
        // runs again: the exit latency after the wakeup.
        let residency = self.now - dev.entered_at + exit;
        cpuidle_reflect(dev, s, residency, tick);
        exit
    }

    /// `cpu` switches to the idle task: the governor picks a state (and the
    /// tick's fate), the LLC's shared state learns it is idle.
    #[inline(always)]
    pub(super) fn enter_idle(&mut self, cpu: CpuId) {
        // hrtick_schedule_exit: an idle rq's slice timer is cancelled.
        let key = self.key_hrtick(cpu);
        self.queue.cancel_key(key);
        self.counters_set_c0(cpu, false);
        self.cpuidle_idle_call(cpu);
        self.update_idle_cpumask(cpu, true);
        self.update_idle_core(cpu);
    }

    /// `cpu` leaves idle to run a task: pay the idle state's exit latency and
    /// restart the tick (if it was stopped: `nohz_balance_exit_idle`).
    pub(super) fn exit_idle(&mut self, cpu: CpuId) {
        let now = self.now;
        let exit = self.cpuidle_exit_state(cpu, false);
        self.counters_set_c0(cpu, true);
        self.turbo_note_state(cpu, None);
        let rq = self.rqs.untracked_mut(cpu.idx());
        rq.ready_at = rq.ready_at.max(now) + exit;
        rq.tick_gen += 1;
        let was_stopped = std::mem::replace(&mut rq.tick_stopped, false);
        self.arm_tick(cpu);
        self.nohz_balance_exit_idle(cpu, was_stopped);
    }

    /// The tick of an idle CPU whose governor kept it: it wakes the CPU from
    /// its state (a tick wakeup for the governor), runs `sched_tick`'s idle
    /// part (`sched_balance_trigger` with `rq->idle_balance`; an idle CPU
    /// kicks no NOHZ balance), and unless that found work, the idle loop
    /// selects again.
    pub(super) fn sched_tick_idle(&mut self, cpu: CpuId) -> crate::Result<()> {
        self.cpuidle_exit_state(cpu, true);
        self.arm_tick(cpu);
        if self.normal_class == crate::class::SchedClass::Fair {
            self.sched_balance_trigger(cpu)?;
        }
        let rq = &self.rqs[cpu.idx()];
        if rq.curr.is_none() && rq.idle_cpu() && !rq.need_resched {
            self.cpuidle_idle_call(cpu);
        }
        Ok(())
    }
}
