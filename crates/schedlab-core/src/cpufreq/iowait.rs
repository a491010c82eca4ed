//! schedutil's iowait boost (kernel/sched/cpufreq_schedutil.c,
//! `sugov_iowait_boost`, `sugov_iowait_reset`, `sugov_iowait_apply`; read in
//! torvalds/linux at 00d6a8a7, with the v6.8 form in which
//! `sugov_iowait_apply` returns the boost and `sugov_get_util` takes
//! `max(util, boost)` before `sugov_effective_cpu_perf`).
//!
//! A task that slept in an I/O wait (`p->in_iowait`, set by `io_schedule`)
//! is enqueued with `cpufreq_update_util(rq, SCHED_CPUFREQ_IOWAIT)`
//! (`enqueue_task_fair`, right after `util_est_enqueue`). Such a task runs
//! little, so its own utilisation would keep the CPU slow between its I/Os;
//! the boost lifts the CPU's utilisation instead: `IOWAIT_BOOST_MIN` (1/8 of
//! the capacity) at the first iowait wakeup, doubled at each further one (at
//! most one doubling per frequency decision, up to the full capacity),
//! halved at each decision without one, and dropped once under the minimum
//! or once the CPU has had no update for more than a tick.

use crate::ids::Ns;
use crate::pelt::SCHED_CAPACITY_SCALE;

/// `SCHED_CPUFREQ_IOWAIT` (include/linux/sched/cpufreq.h, `1U << 0`): the
/// update comes from the enqueue of a task that waited for I/O.
pub const SCHED_CPUFREQ_IOWAIT: u32 = 1;

/// `IOWAIT_BOOST_MIN`: `SCHED_CAPACITY_SCALE / 8`, the first boost, in the
/// 1024 scale of `iowait_boost`.
pub const IOWAIT_BOOST_MIN: u32 = (SCHED_CAPACITY_SCALE / 8) as u32;

/// The iowait part of one CPU's `struct sugov_cpu`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SugovCpu {
    /// `iowait_boost`: 0, or `IOWAIT_BOOST_MIN` ..= 1024.
    pub iowait_boost: u32,
    /// `iowait_boost_pending`: a boost request not yet consumed by a
    /// frequency decision.
    pub iowait_boost_pending: bool,
    /// `last_update`: the CPU's last `cpufreq_update_util`, ns.
    pub last_update: Ns,
    /// The boost `sugov_iowait_apply` returned at the policy's last
    /// decision, in capacity units (read by `sugov_next_freq_khz`).
    pub boost_util: u64,
}

/// `sugov_iowait_reset`: more than a tick since the CPU's last update ends
/// the boost (restarted at the minimum when this update asks for one).
/// True when it reset.
pub fn sugov_iowait_reset(sg: &mut SugovCpu, time: Ns, set_iowait_boost: bool, tick_ns: Ns) -> bool {
    if time.saturating_sub(sg.last_update) <= tick_ns {
        return false;
    }
    sg.iowait_boost = if set_iowait_boost { IOWAIT_BOOST_MIN } else { 0 };
    sg.iowait_boost_pending = set_iowait_boost;
    true
}

/// `sugov_iowait_boost`: an update with `flags`; an iowait wakeup starts the
/// boost at the minimum or doubles it (once per pending request).
pub fn sugov_iowait_boost(sg: &mut SugovCpu, time: Ns, flags: u32, tick_ns: Ns) {
    let set = flags & SCHED_CPUFREQ_IOWAIT != 0;
    if sg.iowait_boost != 0 && sugov_iowait_reset(sg, time, set, tick_ns) {
        return;
    }
    if !set || sg.iowait_boost_pending {
        return;
    }
    sg.iowait_boost_pending = true;
    sg.iowait_boost =
        if sg.iowait_boost != 0 { (sg.iowait_boost << 1).min(SCHED_CAPACITY_SCALE as u32) } else { IOWAIT_BOOST_MIN };
}

/// `sugov_iowait_apply`: the boost for a frequency decision at `time`, in
/// the units of `max_cap` (the CPU's capacity); a decision without a
/// pending request halves it first (and drops it under the minimum).
pub fn sugov_iowait_apply(sg: &mut SugovCpu, time: Ns, max_cap: u64, tick_ns: Ns) -> u64 {
    if sg.iowait_boost == 0 || sugov_iowait_reset(sg, time, false, tick_ns) {
        return 0;
    }
    if !sg.iowait_boost_pending {
        sg.iowait_boost >>= 1;
        if sg.iowait_boost < IOWAIT_BOOST_MIN {
            sg.iowait_boost = 0;
            return 0;
        }
    }
    sg.iowait_boost_pending = false;
    (sg.iowait_boost as u64 * max_cap) >> 10
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NSEC_PER_MSEC;

    const TICK: Ns = 4 * NSEC_PER_MSEC;

    /// A request then a decision `dt` later; returns the applied boost.
    fn wake_and_decide(sg: &mut SugovCpu, t: Ns, cap: u64) -> u64 {
        sugov_iowait_boost(sg, t, SCHED_CPUFREQ_IOWAIT, TICK);
        sg.last_update = t;
        sugov_iowait_apply(sg, t, cap, TICK)
    }

    #[test]
    fn the_boost_starts_at_an_eighth_and_doubles_per_iowait_wakeup() {
        let mut sg = SugovCpu::default();
        let ms = NSEC_PER_MSEC;
        // Capacity 462 (a little CPU): 128/1024, 256, 512, 1024 of it.
        assert_eq!(wake_and_decide(&mut sg, 10 * ms, 462), 128 * 462 / 1024);
        assert_eq!(wake_and_decide(&mut sg, 11 * ms, 462), 256 * 462 / 1024);
        assert_eq!(wake_and_decide(&mut sg, 12 * ms, 462), 512 * 462 / 1024);
        assert_eq!(wake_and_decide(&mut sg, 13 * ms, 462), 462);
        assert_eq!(wake_and_decide(&mut sg, 14 * ms, 462), 462, "capped at the capacity");
        // Two requests before one decision double it once.
        let mut sg = SugovCpu::default();
        sugov_iowait_boost(&mut sg, 0, SCHED_CPUFREQ_IOWAIT, TICK);
        sugov_iowait_boost(&mut sg, 0, SCHED_CPUFREQ_IOWAIT, TICK);
        assert_eq!(sg.iowait_boost, IOWAIT_BOOST_MIN);
    }

    #[test]
    fn the_boost_halves_at_each_decision_without_a_request_and_resets_after_a_tick() {
        let ms = NSEC_PER_MSEC;
        let mut sg = SugovCpu { iowait_boost: 1024, last_update: 0, ..SugovCpu::default() };
        let mut decide = |t: Ns| {
            sugov_iowait_boost(&mut sg, t, 0, TICK);
            sg.last_update = t;
            sugov_iowait_apply(&mut sg, t, 1024, TICK)
        };
        assert_eq!(decide(ms), 512);
        assert_eq!(decide(2 * ms), 256);
        assert_eq!(decide(3 * ms), 128);
        assert_eq!(decide(4 * ms), 0, "64 is under IOWAIT_BOOST_MIN: dropped");
        // A CPU quiet for more than a tick loses its boost at once.
        let mut sg = SugovCpu { iowait_boost: 1024, iowait_boost_pending: true, last_update: 0, boost_util: 0 };
        assert_eq!(sugov_iowait_apply(&mut sg, TICK + 1, 1024, TICK), 0);
        assert_eq!(sg.iowait_boost, 0);
        // ... and an iowait wakeup after such a pause restarts at the minimum.
        let mut sg = SugovCpu { iowait_boost: 512, iowait_boost_pending: false, last_update: 0, boost_util: 0 };
        sugov_iowait_boost(&mut sg, 2 * TICK, SCHED_CPUFREQ_IOWAIT, TICK);
        assert_eq!((sg.iowait_boost, sg.iowait_boost_pending), (IOWAIT_BOOST_MIN, true));
    }
}
