//! HRTICK: the fair class's high-resolution slice timer (`hrtick_start_fair`,
//! `hrtick_update`, `task_tick_fair` with `queued`), as v7.1 has it after the
//! 2026 `sched/hrtick` series (558c18d3fbb6 "sched/eevdf: Fix HRTICK
//! duration", 97015376642f "sched/fair: Simplify hrtick_update()",
//! 5d88e424ec1b "sched/fair: Make hrtick resched hard") and default-enabled
//! by 9213aa4784cf where hrtimer rearming is deferred (x86).
//!
//! Without it a fair task whose request ran out is only noticed at the next
//! `update_curr` (the tick, a wakeup, a block); with it a timer fires at the
//! task's virtual deadline and reschedules at once, so CPU-bound tasks
//! sharing a CPU switch at their slice ends instead of at tick boundaries.
//!
//! The engine keeps the timer as one event-queue key per CPU
//! (`Sim::hrtick_start`), cancelled when the CPU goes idle
//! (`hrtick_schedule_exit`); otherwise it stays armed across a switch to a
//! task that does not re-arm it, as in the kernel.

use crate::engine::Sim;
use crate::ids::{CpuId, TaskId};
use crate::pelt::NICE_0_LOAD;

impl Sim {
    /// `hrtick_start_fair(rq, p)`: with more than one task queued, arm the
    /// slice timer for the time `p` needs to reach its virtual deadline
    /// (`(deadline - vruntime) * weight / NICE_0_LOAD` ns), stretched by
    /// the share of the CPU interrupts take (`cpu_util_irq`); a task past
    /// its deadline is rescheduled at once if it runs.
    ///
    /// A lone task arms nothing: that test is inlined at the callers.
    #[inline]
    pub(crate) fn hrtick_start_fair(&mut self, cpu: CpuId, p: TaskId) {
        if self.rqs[cpu.idx()].cfs.nr_queued > 1 {
            self.hrtick_start_fair_queued(cpu, p);
        }
    }

    /// `hrtick_start_fair` with more than one task queued.
    #[inline(never)]
    fn hrtick_start_fair_queued(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &self.rqs[cpu.idx()];
        let se = &self.fair.ses[p.idx()];
        let vdelta = se.deadline.wrapping_sub(se.vruntime) as i64;
        if vdelta < 0 {
            if rq.curr == Some(p) {
                self.resched_curr(cpu, cpu);
            }
            return;
        }
        let delta = se.weight * vdelta as u64 / NICE_0_LOAD;
        self.hrtick_start(cpu, hrtick_irq_scaled(delta, rq.irq_avg.util_avg));
    }

    /// `hrtick_update(rq)`, at the end of `enqueue_task_fair`: start the
    /// running fair task's timer when the queue grows past one task and no
    /// timer is armed.
    pub(crate) fn hrtick_update(&mut self, cpu: CpuId) {
        let Some(curr) = self.rqs[cpu.idx()].curr else { return };
        if self.task_class(curr) != crate::class::SchedClass::Fair || self.hrtick_active(cpu) {
            return;
        }
        self.hrtick_start_fair(cpu, curr);
    }

    /// `task_tick_fair(rq, curr, 1)`: `entity_tick` with `queued`
    /// (`update_curr`, the load average) and a hard reschedule: "queued
    /// ticks are scheduled to match the slice". Returns true (reschedule).
    pub(crate) fn task_tick_fair_queued(&mut self, cpu: CpuId, curr: TaskId) -> bool {
        self.update_curr(cpu);
        self.update_load_avg(cpu, Some(curr));
        true
    }
}

/// The "correct for instantaneous load of other classes" step of
/// `hrtick_start_fair`: `delta * 1024 / (1024 - util_irq)` for an IRQ
/// utilisation strictly between 0 and 1024, else `delta`.
fn hrtick_irq_scaled(delta: u64, util_irq: u64) -> u64 {
    let mut scale = 1024;
    if util_irq > 0 && util_irq < 1024 {
        scale = scale * 1024 / (1024 - util_irq);
    }
    scale * delta / 1024
}

#[cfg(test)]
#[path = "hrtick_tests.rs"]
mod tests;
