//! Priority conventions of the RT class and its tunables.
//!
//! Two scales meet here. User space gives an RT task an `rt_priority` in
//! 1..=99 where larger runs first. Inside the kernel every task has a `prio`
//! where *smaller* runs first: RT tasks use 0..=98 (`MAX_RT_PRIO - 1 -
//! rt_priority`), fair tasks 100..=139 (120 at nice 0), and the idle task 140.
//! The deadline class uses -1. Everything in `rt/` uses the kernel `prio`,
//! as an `i32` like the kernel's `int prio`.

use crate::ids::{Ns, NSEC_PER_MSEC, NSEC_PER_USEC};

/// Number of RT priority levels, and the first non-RT `prio`
/// (`MAX_RT_PRIO`, include/linux/sched/prio.h).
pub const MAX_RT_PRIO: i32 = 100;
/// One past the lowest fair `prio`; the idle task's `prio` (`MAX_PRIO`).
pub const MAX_PRIO: i32 = 140;
/// `prio` of a nice-0 fair task (`DEFAULT_PRIO`).
pub const DEFAULT_PRIO: i32 = 120;
/// How many times `find_lock_lowest_rq` retries after losing a lock race
/// (`RT_MAX_TRIES`, rt.c). Kept for reference: the simulation never races.
pub const RT_MAX_TRIES: u32 = 3;

/// `rt_prio(prio)`: whether a kernel `prio` belongs to the RT range (or the
/// deadline class's -1, which the kernel's test also accepts). This is the
/// kernel's `rt_task(p)` applied to `p->prio`.
#[inline]
pub fn rt_prio(prio: i32) -> bool {
    prio < MAX_RT_PRIO
}

/// Kernel `prio` of an RT task with user `rt_priority` 1..=99
/// (`__normal_prio`: `MAX_RT_PRIO - 1 - rt_priority`): 99 gives 0, 1 gives 98.
#[inline]
pub fn rt_priority_to_prio(rt_priority: u32) -> i32 {
    debug_assert!((1..=99).contains(&rt_priority), "rt_priority {rt_priority} outside 1..=99");
    MAX_RT_PRIO - 1 - rt_priority as i32
}

/// User `rt_priority` of an RT kernel `prio` 0..=98 (the inverse of
/// [`rt_priority_to_prio`]).
#[inline]
pub fn prio_to_rt_priority(prio: i32) -> u32 {
    debug_assert!((0..MAX_RT_PRIO - 1).contains(&prio), "prio {prio} is not an RT task prio");
    (MAX_RT_PRIO - 1 - prio) as u32
}

/// The two RT policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtPolicy {
    /// SCHED_FIFO: no time slice; runs until it blocks, yields or is preempted.
    Fifo,
    /// SCHED_RR: FIFO plus a time slice; at slice end it goes to the tail of
    /// its level (`task_tick_rt`).
    Rr,
}

/// Tunables of the RT class. Defaults are the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtParams {
    /// SCHED_RR time slice, ms (`sched_rr_timeslice_ms`). Default 100: the
    /// kernel's `RR_TIMESLICE` is `100 * HZ / 1000` jiffies
    /// (include/linux/sched/rt.h) and the sysctl shows it in ms (rt.c). The
    /// kernel counts the slice in ticks (`task_tick_rt` decrements
    /// `p->rt.time_slice` once per tick): see [`RtParams::rr_timeslice_ticks`].
    pub sched_rr_timeslice_ms: u32,
    /// Length of the RT bandwidth period, µs (`sched_rt_period_us`,
    /// `sysctl_sched_rt_period` in rt.c). Default 1000000 (1 s).
    pub sched_rt_period_us: u64,
    /// RT time allowed per period, µs (`sched_rt_runtime_us`,
    /// `sysctl_sched_rt_runtime` in rt.c); -1 means unlimited
    /// (`RUNTIME_INF`, `rt_bandwidth_enabled()` is false). Default 950000
    /// (0.95 s): RT tasks may use 95% of each CPU. Must not exceed the period
    /// (`sched_rt_global_validate`).
    pub sched_rt_runtime_us: i64,
}

impl Default for RtParams {
    fn default() -> Self {
        RtParams { sched_rr_timeslice_ms: 100, sched_rt_period_us: 1_000_000, sched_rt_runtime_us: 950_000 }
    }
}

impl RtParams {
    /// The RR slice in ticks at `hz` ticks per second (`msecs_to_jiffies`,
    /// rounding up as it does; at least one tick).
    pub fn rr_timeslice_ticks(&self, hz: u32) -> u32 {
        let ticks = (self.sched_rr_timeslice_ms as u64 * hz as u64).div_ceil(1000);
        ticks.max(1) as u32
    }

    /// The period in [`Ns`].
    pub fn rt_period_ns(&self) -> Ns {
        self.sched_rt_period_us * NSEC_PER_USEC
    }

    /// The runtime in [`Ns`], or `None` when unlimited (`RUNTIME_INF`).
    pub fn rt_runtime_ns(&self) -> Option<Ns> {
        (self.sched_rt_runtime_us >= 0).then(|| self.sched_rt_runtime_us as u64 * NSEC_PER_USEC)
    }

    /// Check the pair as `sched_rt_global_validate` does: a positive period,
    /// and a runtime of -1 or at most the period.
    pub fn validate(&self) -> Result<(), String> {
        if self.sched_rt_period_us == 0 {
            return Err("sched_rt_period_us must be at least 1".into());
        }
        if self.sched_rt_runtime_us < -1 {
            return Err(format!("sched_rt_runtime_us {} is below -1", self.sched_rt_runtime_us));
        }
        if self.sched_rt_runtime_us >= 0 && self.sched_rt_runtime_us as u64 > self.sched_rt_period_us {
            return Err(format!(
                "sched_rt_runtime_us {} exceeds sched_rt_period_us {}",
                self.sched_rt_runtime_us, self.sched_rt_period_us
            ));
        }
        Ok(())
    }

    /// The RR slice in [`Ns`] (for reports; the engine counts ticks).
    pub fn rr_timeslice_ns(&self) -> Ns {
        self.sched_rr_timeslice_ms as u64 * NSEC_PER_MSEC
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_priority_99_is_kernel_prio_0() {
        assert_eq!(rt_priority_to_prio(99), 0);
    }

    #[test]
    fn rt_priority_1_is_kernel_prio_98() {
        assert_eq!(rt_priority_to_prio(1), 98);
    }

    #[test]
    fn prio_round_trips() {
        for r in 1..=99 {
            assert_eq!(prio_to_rt_priority(rt_priority_to_prio(r)), r);
        }
    }

    #[test]
    fn fair_prio_is_not_rt() {
        assert!(!rt_prio(DEFAULT_PRIO));
        assert!(rt_prio(98));
        assert!(rt_prio(-1), "deadline prio counts as rt_task() in the kernel");
    }

    #[test]
    fn rr_slice_is_25_ticks_at_hz_250() {
        assert_eq!(RtParams::default().rr_timeslice_ticks(250), 25);
        assert_eq!(RtParams::default().rr_timeslice_ticks(1000), 100);
    }

    #[test]
    fn defaults_validate_and_unlimited_is_none() {
        let p = RtParams::default();
        assert!(p.validate().is_ok());
        assert_eq!(p.rt_runtime_ns(), Some(950_000_000));
        let inf = RtParams { sched_rt_runtime_us: -1, ..p };
        assert!(inf.validate().is_ok());
        assert_eq!(inf.rt_runtime_ns(), None);
        assert!(RtParams { sched_rt_runtime_us: 1_000_001, ..p }.validate().is_err());
    }
}
