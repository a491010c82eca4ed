//! RT throttling: at most `sched_rt_runtime_us` of RT execution per
//! `sched_rt_period_us` on each CPU (defaults 950000 per 1000000 µs, 95%).
//!
//! # Which kernels throttle
//!
//! Up to v6.11 every CPU's root `rt_rq` is throttled against
//! `def_rt_bandwidth`. From v6.12 (tip commit 5f6bd380c7bd, "sched/rt:
//! Remove default bandwidth control") the root `rt_rq` is throttled only
//! with `CONFIG_RT_GROUP_SCHED` (the root task group's bandwidth, the same
//! sysctls); without it, RT tasks are never throttled and fair tasks are
//! protected instead by the fair deadline server (50 ms per 1 s), which this
//! module does not model. The linux-next read for this module is of the
//! second kind. The engine decides whether to throttle; this module
//! computes what throttling does when it applies.
//!
//! # Runtime borrowing
//!
//! With `RT_RUNTIME_SHARE` a throttled CPU borrows unused runtime from the
//! other CPUs of its root domain (`do_balance_runtime`) and can run RT tasks
//! for up to the whole period. The feature has defaulted to off since v5.10
//! (commit 2586af1ac187, "sched/rt: Disable RT_RUNTIME_SHARE by default"),
//! so this module models the default: each CPU has exactly its own runtime,
//! reset to the bandwidth's at every period (`do_sched_rt_period_timer`).
//!
//! # Timeline
//!
//! `update_curr_rt` adds the running RT task's execution time to the
//! CPU's `rt_time`; once `rt_time` exceeds the runtime, the `rt_rq` is
//! throttled: its tasks stay queued but leave `rq->nr_running`
//! (`sched_rt_rq_dequeue`), so the CPU runs fair tasks or idles. The period
//! timer (one hrtimer for all CPUs, started on RT activity) subtracts
//! `overrun × runtime` from each CPU's `rt_time` and unthrottles a CPU
//! whose `rt_time` has fallen below the runtime. A CPU-bound RT task thus
//! runs `runtime` (plus the accounting granularity) per period and is
//! throttled for the rest.

use crate::ids::Ns;
use crate::rt::prio::RtParams;

/// Unlimited runtime (`RUNTIME_INF`, `(u64)~0ULL`).
pub const RUNTIME_INF: u64 = u64::MAX;

/// Runtime per period (`struct rt_bandwidth`: `rt_runtime`, `rt_period`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtBandwidth {
    /// Period length, ns (`rt_period`).
    pub rt_period_ns: Ns,
    /// RT time allowed per period, ns, or [`RUNTIME_INF`] (`rt_runtime`).
    pub rt_runtime_ns: u64,
}

impl RtBandwidth {
    /// The bandwidth the sysctls describe (`global_rt_period()`,
    /// `global_rt_runtime()`).
    pub fn from_params(p: &RtParams) -> Self {
        RtBandwidth { rt_period_ns: p.rt_period_ns(), rt_runtime_ns: p.rt_runtime_ns().unwrap_or(RUNTIME_INF) }
    }

    /// `rt_bandwidth_enabled()`: `sched_rt_runtime_us` is not -1.
    #[inline]
    pub fn rt_bandwidth_enabled(&self) -> bool {
        self.rt_runtime_ns != RUNTIME_INF
    }
}

/// The throttling fields of one CPU's `rt_rq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtThrottle {
    /// RT execution time charged in the current period, ns (`rt_time`).
    pub rt_time_ns: u64,
    /// The `rt_rq` is throttled: its tasks may not run (`rt_throttled`).
    pub rt_throttled: bool,
    /// This CPU's runtime, ns (`rt_rq->rt_runtime`); with runtime sharing
    /// off it is always the bandwidth's.
    pub rt_runtime_ns: u64,
}

/// What one period-timer pass did to one CPU (`do_sched_rt_period_timer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodTimerOutcome {
    /// `sched_rt_rq_enqueue`: the RT tasks count in `nr_running` again and
    /// the CPU reschedules (after an unthrottle, or when RT tasks wait with no
    /// time charged).
    pub enqueue: bool,
    /// The CPU still has RT time charged or RT tasks queued: the timer must
    /// keep running (the kernel's `idle = 0`).
    pub busy: bool,
    /// The CPU is still throttled after the pass.
    pub throttled: bool,
}

impl RtThrottle {
    /// A CPU with nothing charged and the bandwidth's runtime.
    pub fn new(b: &RtBandwidth) -> Self {
        RtThrottle { rt_time_ns: 0, rt_throttled: false, rt_runtime_ns: b.rt_runtime_ns }
    }

    /// `sched_rt_runtime_exceeded`: whether the `rt_rq` is (now) throttled.
    /// Throttles when `rt_time` is strictly above the runtime. A runtime
    /// equal to the period, or unlimited, never throttles; a runtime of 0
    /// drops the charged time instead of throttling (the kernel cannot
    /// refill it).
    pub fn sched_rt_runtime_exceeded(&mut self, b: &RtBandwidth) -> bool {
        if self.rt_throttled {
            return true;
        }
        let runtime = self.rt_runtime_ns;
        if runtime == RUNTIME_INF || runtime >= b.rt_period_ns {
            return false;
        }
        // balance_runtime() would borrow here with RT_RUNTIME_SHARE (off).
        if self.rt_time_ns > runtime {
            if b.rt_runtime_ns != 0 {
                self.rt_throttled = true;
            } else {
                self.rt_time_ns = 0;
            }
            return self.rt_throttled;
        }
        false
    }

    /// The bandwidth part of `update_curr_rt`: charge `delta_exec_ns` of RT
    /// execution and check the runtime. Returns true when the `rt_rq` is
    /// throttled: the caller reschedules the CPU, takes the RT tasks out of
    /// `nr_running` (`sched_rt_rq_dequeue`) and starts the period timer.
    pub fn update_curr_rt(&mut self, b: &RtBandwidth, delta_exec_ns: u64) -> bool {
        if !b.rt_bandwidth_enabled() || self.rt_runtime_ns == RUNTIME_INF {
            return false;
        }
        self.rt_time_ns = self.rt_time_ns.saturating_add(delta_exec_ns);
        self.sched_rt_runtime_exceeded(b)
    }

    /// One CPU's share of `do_sched_rt_period_timer` for `overrun` elapsed
    /// periods: refill the runtime, pay back `overrun × runtime` of the
    /// charged time, unthrottle once the debt is below one runtime.
    /// `rt_nr_running` is the CPU's queued RT task count.
    pub fn do_sched_rt_period_timer(
        &mut self,
        b: &RtBandwidth,
        overrun: u64,
        rt_nr_running: u32,
    ) -> PeriodTimerOutcome {
        if self.rt_runtime_ns != RUNTIME_INF {
            self.rt_runtime_ns = b.rt_runtime_ns;
        }
        if self.rt_time_ns == 0 && rt_nr_running == 0 {
            return PeriodTimerOutcome { throttled: self.rt_throttled, ..Default::default() };
        }
        let mut out = PeriodTimerOutcome::default();
        if self.rt_time_ns != 0 {
            let runtime = self.rt_runtime_ns;
            self.rt_time_ns -= self.rt_time_ns.min(overrun.saturating_mul(runtime));
            if self.rt_throttled && self.rt_time_ns < runtime {
                self.rt_throttled = false;
                out.enqueue = true;
            }
            out.busy = self.rt_time_ns != 0 || rt_nr_running != 0;
        } else {
            out.busy = true;
            out.enqueue = !self.rt_throttled;
        }
        out.throttled = self.rt_throttled;
        out
    }
}

/// `hrtimer_forward(timer, now, interval)`: move a timer that expired at
/// `expires_ns` past `now_ns` by whole intervals. Returns the number of
/// intervals skipped (0 if it has not expired yet) and the new expiry.
/// The period timer calls it in a loop, passing each nonzero result to
/// `do_sched_rt_period_timer`.
pub fn hrtimer_forward(expires_ns: Ns, now_ns: Ns, interval_ns: Ns) -> (u64, Ns) {
    debug_assert!(interval_ns > 0);
    if now_ns < expires_ns {
        return (0, expires_ns);
    }
    let delta = now_ns - expires_ns;
    let mut expires = expires_ns;
    let mut orun = 1;
    if delta >= interval_ns {
        orun = delta / interval_ns;
        expires += orun * interval_ns;
        if expires > now_ns {
            return (orun, expires);
        }
        orun += 1;
    }
    (orun, expires + interval_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NSEC_PER_MSEC;

    const MS: u64 = NSEC_PER_MSEC;

    /// An RT hog on one CPU, accounted every `step` for `periods` periods
    /// with the period timer firing at each period boundary. Returns the
    /// time it ran and the time the CPU was throttled, ns.
    fn hog(b: &RtBandwidth, periods: u64, step: u64) -> (u64, u64) {
        let mut t = RtThrottle::new(b);
        let (mut ran, mut throttled) = (0, 0);
        let steps_per_period = b.rt_period_ns / step;
        for _ in 0..periods {
            for _ in 0..steps_per_period {
                if t.rt_throttled {
                    throttled += step;
                } else {
                    ran += step;
                    let _ = t.update_curr_rt(b, step);
                }
            }
            let _ = t.do_sched_rt_period_timer(b, 1, 1);
        }
        (ran, throttled)
    }

    #[test]
    fn hog_is_throttled_about_five_percent() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let (ran, throttled) = hog(&b, 10, MS);
        assert_eq!(ran + throttled, 10_000 * MS);
        // Period 1: throttled once rt_time = 951 ms > 950 ms, so 49 ms off;
        // the 1 ms excess carries over, so each later period runs 950 ms.
        assert_eq!(throttled, 49 * MS + 9 * 50 * MS);
        let pct = throttled as f64 * 100.0 / (ran + throttled) as f64;
        assert!((pct - 5.0).abs() < 0.1, "throttled {pct}%");
    }

    #[test]
    fn hog_gets_at_most_runtime_plus_one_step_per_period() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let (ran, _) = hog(&b, 10, MS);
        assert!(ran <= 10 * 950 * MS + MS);
    }

    #[test]
    fn unlimited_runtime_never_throttles() {
        let b = RtBandwidth::from_params(&RtParams { sched_rt_runtime_us: -1, ..RtParams::default() });
        assert!(!b.rt_bandwidth_enabled());
        let (_, throttled) = hog(&b, 3, MS);
        assert_eq!(throttled, 0);
    }

    #[test]
    fn runtime_equal_to_period_never_throttles() {
        let b = RtBandwidth::from_params(&RtParams { sched_rt_runtime_us: 1_000_000, ..RtParams::default() });
        let (_, throttled) = hog(&b, 3, MS);
        assert_eq!(throttled, 0);
    }

    #[test]
    fn throttles_only_strictly_above_runtime() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let mut t = RtThrottle::new(&b);
        assert!(!t.update_curr_rt(&b, 950 * MS));
        assert!(t.update_curr_rt(&b, 1));
    }

    #[test]
    fn timer_unthrottles_and_reports_enqueue() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let mut t = RtThrottle::new(&b);
        let _ = t.update_curr_rt(&b, 960 * MS);
        let out = t.do_sched_rt_period_timer(&b, 1, 1);
        assert_eq!(out, PeriodTimerOutcome { enqueue: true, busy: true, throttled: false });
        assert_eq!(t.rt_time_ns, 10 * MS);
    }

    #[test]
    fn idle_cpu_lets_the_timer_stop() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let mut t = RtThrottle::new(&b);
        let _ = t.update_curr_rt(&b, 100 * MS);
        let out = t.do_sched_rt_period_timer(&b, 1, 0);
        assert!(!out.busy);
        assert_eq!(t.rt_time_ns, 0);
    }

    #[test]
    fn overrun_pays_back_several_periods() {
        let b = RtBandwidth::from_params(&RtParams::default());
        let mut t = RtThrottle { rt_time_ns: 2_000 * MS, rt_throttled: true, rt_runtime_ns: b.rt_runtime_ns };
        let out = t.do_sched_rt_period_timer(&b, 2, 1);
        assert!(out.enqueue);
        assert_eq!(t.rt_time_ns, 100 * MS);
    }

    #[test]
    fn hrtimer_forward_counts_overruns() {
        assert_eq!(hrtimer_forward(1_000, 999, 1_000), (0, 1_000));
        assert_eq!(hrtimer_forward(1_000, 1_000, 1_000), (1, 2_000));
        assert_eq!(hrtimer_forward(1_000, 3_500, 1_000), (3, 4_000));
        assert_eq!(hrtimer_forward(1_000, 3_000, 1_000), (3, 4_000));
    }
}
