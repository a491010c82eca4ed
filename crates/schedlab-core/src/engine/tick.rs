//! The scheduler tick (`sched_tick`) of a busy CPU; idle entry and exit and
//! the idle tick are in `idle.rs`.

use super::{Ev, Sim};
use crate::ids::CpuId;

/// `hrtick_start`'s floor: "Don't schedule slices shorter than 10000ns,
/// that just doesn't make sense and can cause timer DoS" (core.c).
const HRTICK_MIN_NS: u64 = 10_000;

impl Sim {
    /// The next tick boundary after now: ticks of all CPUs are aligned, as
    /// with the kernel's default `sched_skew_tick=0`.
    pub(super) fn next_tick_time(&self) -> u64 {
        (self.now / self.tick_ns + 1) * self.tick_ns
    }

    /// Queue `cpu`'s next tick at the next tick boundary under its current
    /// `tick_gen`, in place of any pending one (the tick's queue key).
    #[inline(always)]
    pub(super) fn arm_tick(&mut self, cpu: CpuId) {
        let t = self.next_tick_time();
        let gen = self.rqs[cpu.idx()].tick_gen;
        self.queue.push_key_in(super::LANE_TICK, self.key_tick(cpu), t, Ev::Tick { cpu, gen });
    }

    /// `hrtick_start(rq, delay)`: (re)arm `cpu`'s high-resolution slice
    /// timer `delay` ns from now, at least 10 us (shorter is "timer DoS").
    pub(crate) fn hrtick_start(&mut self, cpu: CpuId, delay: u64) {
        let t = self.now + delay.max(HRTICK_MIN_NS);
        self.queue.push_key(self.key_hrtick(cpu), t, Ev::HrTick(cpu));
    }

    /// When `cpu`'s slice timer fires, if armed.
    #[cfg(test)]
    pub(crate) fn hrtick_expires(&self, cpu: CpuId) -> Option<u64> {
        self.queue.key_time(self.key_hrtick(cpu))
    }

    /// `hrtick_active(rq)`: the slice timer of `cpu` is armed.
    #[inline]
    pub(crate) fn hrtick_active(&self, cpu: CpuId) -> bool {
        self.queue.key_queued(self.key_hrtick(cpu))
    }

    /// `hrtick()`: the slice timer fired; the running task's class ticks
    /// with `queued` set (`task_tick(rq, donor, 1)`).
    pub(super) fn hrtick(&mut self, cpu: CpuId) -> crate::Result<()> {
        let Some(p) = self.rqs[cpu.idx()].curr else { return Ok(()) };
        self.sync_segment(cpu);
        if self.class_hrtick(cpu, p) {
            self.resched_curr(cpu, cpu);
        }
        Ok(())
    }

    /// `sched_tick` on `cpu`.
    pub(super) fn sched_tick(&mut self, cpu: CpuId) -> crate::Result<()> {
        let Some(p) = self.rqs[cpu.idx()].curr else {
            return self.sched_tick_idle(cpu);
        };
        self.sync_segment(cpu);
        // llc_idle_mask: a busy CPU leaves its LLC's idle mask only here.
        self.update_idle_cpumask(cpu, false);
        let resched = self.update_curr(cpu);
        if self.class_task_tick(cpu, p, resched) {
            self.resched_curr(cpu, cpu);
        }
        self.arm_tick(cpu);
        // sched_balance_trigger and the NOHZ kick belong to the fair class;
        // a peer replacing it has its own balancing.
        if self.normal_class != crate::class::SchedClass::Fair {
            return Ok(());
        }
        self.sched_balance_trigger(cpu)?;
        self.nohz_balancer_kick(cpu)
    }
}
