//! The scheduler tick (`sched_tick`) of a busy CPU; idle entry and exit and
//! the idle tick are in `idle.rs`.

use super::{Ev, Sim};
use crate::ids::CpuId;

impl Sim {
    /// The next tick boundary after now: ticks of all CPUs are aligned, as
    /// with the kernel's default `sched_skew_tick=0`.
    pub(super) fn next_tick_time(&self) -> u64 {
        (self.now / self.tick_ns + 1) * self.tick_ns
    }

    /// Queue `cpu`'s next tick at the next tick boundary under its current
    /// `tick_gen`, in place of any pending one (the tick's queue key).
    pub(super) fn arm_tick(&mut self, cpu: CpuId) {
        let t = self.next_tick_time();
        let gen = self.rqs[cpu.idx()].tick_gen;
        self.queue.push_key(self.key_tick(cpu), t, Ev::Tick { cpu, gen });
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
