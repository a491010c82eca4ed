//! The menu governor, after drivers/cpuidle/governors/menu.c as stored in
//! ColinIanKing/linux-next at 40cc016b (2025: no iowait multiplier, no
//! performance multiplier; `RESIDENCY_THRESHOLD_NS` from gov.h).
//!
//! Prediction: the time to the next timer (`tick_nohz_get_sleep_length`)
//! times the correction factor of its magnitude's bucket, capped by the
//! typical interval of the last 8 idle periods when they agree. No polling
//! state is modelled (a machine's states have no `CPUIDLE_FLAG_POLLING`), so
//! the polling branches of `menu_select` never apply.

use super::{Selection, SleepLength, RESIDENCY_THRESHOLD_NS};
use crate::ids::{Ns, NSEC_PER_USEC};
use crate::topology::IdleState;

/// `BUCKETS`: correction factors, one per decade of the next-timer distance.
pub const BUCKETS: usize = 6;
/// `INTERVAL_SHIFT`: log2 of the recent intervals kept.
pub const INTERVAL_SHIFT: u32 = 3;
/// `INTERVALS`: recent idle intervals kept for `get_typical_interval`.
pub const INTERVALS: usize = 1 << INTERVAL_SHIFT;
/// `RESOLUTION`: fixed-point unit of a correction factor.
pub const RESOLUTION: u64 = 1024;
/// `DECAY`: a correction factor is a running average with weight 1/DECAY.
pub const DECAY: u64 = 8;
/// `MAX_INTERESTING`: idle periods at least this long (50 ms) count as a
/// perfect prediction.
pub const MAX_INTERESTING: Ns = 50_000 * NSEC_PER_USEC;

/// `struct menu_device` (`needs_update` and `tick_wakeup` live in the
/// shared [`super::CpuidleDevice`]).
#[derive(Clone, Debug)]
pub struct MenuDevice {
    /// `next_timer_ns` at the last selection (`Ns::MAX`: not looked up).
    pub next_timer_ns: Ns,
    /// `bucket` of that selection.
    pub bucket: usize,
    /// `correction_factor[]`, units of `RESOLUTION * DECAY` (8192 = 1.0).
    pub correction_factor: [u32; BUCKETS],
    /// `intervals[]`: the last idle durations, us.
    pub intervals: [u32; INTERVALS],
    /// `interval_ptr`: next slot of `intervals`.
    pub interval_ptr: usize,
}

impl Default for MenuDevice {
    /// `menu_enable_device`: zeroed, every factor at unity.
    fn default() -> Self {
        MenuDevice {
            next_timer_ns: 0,
            bucket: 0,
            correction_factor: [(RESOLUTION * DECAY) as u32; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
        }
    }
}

/// `which_bucket`: the decade of `duration_ns` (below 10 us, 100 us, 1 ms,
/// 10 ms, 100 ms, beyond).
pub fn which_bucket(duration_ns: Ns) -> usize {
    let us = NSEC_PER_USEC;
    [10 * us, 100 * us, 1000 * us, 10_000 * us, 100_000 * us].iter().take_while(|&&b| duration_ns >= b).count()
}

/// `menu_update_intervals`: remember one idle duration, us.
fn menu_update_intervals(data: &mut MenuDevice, interval_us: u32) {
    data.intervals[data.interval_ptr] = interval_us;
    data.interval_ptr = (data.interval_ptr + 1) % INTERVALS;
}

/// `get_typical_interval`: the mean of the recent intervals when their spread
/// is small (stddev <= 20 us, or the mean above 6 stddev with at least 3/4 of
/// the samples left), dropping the farthest outlier and retrying otherwise;
/// `u32::MAX` (no opinion) when nothing qualifies, us.
pub fn get_typical_interval(data: &MenuDevice) -> u32 {
    let (mut min_thresh, mut max_thresh) = (-1i64, u32::MAX as i64);
    loop {
        let (mut max, mut min) = (0u64, u32::MAX as u64);
        let (mut sum, mut sq, mut n) = (0u64, 0u64, 0u64);
        for &v in &data.intervals {
            let v = v as i64;
            if v <= min_thresh || v >= max_thresh {
                continue;
            }
            let v = v as u64;
            n += 1;
            sum += v;
            sq += v * v;
            max = max.max(v);
            min = min.min(v);
        }
        if max == 0 {
            return u32::MAX;
        }
        let avg = sum / n;
        // E[x^2] - E[x]^2, each term truncated as the kernel's do_div does.
        let variance = (sq / n).wrapping_sub(avg * avg);
        if variance <= u64::MAX / 36
            && ((avg * avg > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400)
        {
            return avg as u32;
        }
        if n * 4 <= INTERVALS as u64 * 3 {
            return u32::MAX;
        }
        // Drop the side farther from the mean and look again.
        if avg - min > max - avg {
            min_thresh = min as i64;
        } else {
            max_thresh = max as i64;
        }
    }
}

/// `menu_select`: fold in the last idle period (`last`: state, residency,
/// tick wakeup), predict the coming one, pick the deepest state whose target
/// residency fits it (and whose exit latency fits the latency limit), and
/// decide whether the tick stops.
pub fn menu_select(
    data: &mut MenuDevice,
    states: &[IdleState],
    s: &SleepLength,
    last: Option<(usize, Ns, bool)>,
) -> Selection {
    if let Some((idx, residency, tick_wakeup)) = last {
        menu_update(data, states, idx, residency, tick_wakeup, s.tick_ns);
    }
    let tick = s.tick_ns;
    let mut predicted_ns = get_typical_interval(data) as Ns * NSEC_PER_USEC;
    let delta_tick;
    if predicted_ns > RESIDENCY_THRESHOLD_NS {
        data.next_timer_ns = s.sleep_length_ns;
        delta_tick = s.delta_tick_ns;
        data.bucket = which_bucket(data.next_timer_ns);
        // Round to the nearest microsecond: next_timer x factor / (RESOLUTION x DECAY).
        let unit = (RESOLUTION * DECAY * NSEC_PER_USEC) as u128;
        let cf = data.correction_factor[data.bucket] as u128;
        let timer_us = (unit / 2 + data.next_timer_ns as u128 * cf) / unit;
        let timer_ns = (timer_us * NSEC_PER_USEC as u128).min(Ns::MAX as u128) as Ns;
        predicted_ns = predicted_ns.min(timer_ns);
    } else {
        // The recent past says "very short": skip the timer lookup, assume no
        // timer soon and the tick half a period away.
        data.next_timer_ns = Ns::MAX;
        delta_tick = tick / 2;
        data.bucket = BUCKETS - 1;
    }
    let latency_req = s.latency_req_ns;
    if states.len() <= 1
        || latency_req == 0
        || data.next_timer_ns < states[1].target_residency_ns
        || latency_req < states[1].exit_latency_ns
    {
        // State 0 whatever the prediction; it is not a polling state, so the
        // tick may stop.
        return Selection { idx: 0, stop_tick: true };
    }
    if s.tick_stopped && predicted_ns < tick {
        // A shallow state with the tick stopped could be stuck for long:
        // trust the known timer instead.
        predicted_ns = data.next_timer_ns;
    }
    let mut idx = 0;
    for (i, st) in states.iter().enumerate() {
        if st.exit_latency_ns > latency_req {
            break;
        }
        if st.target_residency_ns <= predicted_ns {
            idx = i;
            continue;
        }
        if predicted_ns < tick {
            break;
        }
        if !s.tick_stopped {
            // Keep the tick and run the governor again after it: waking
            // early from a shallow state costs little.
            predicted_ns = states[idx].target_residency_ns;
            break;
        }
        if states[idx].target_residency_ns < tick && st.target_residency_ns <= delta_tick {
            idx = i;
        }
        return Selection { idx, stop_tick: true };
    }
    if predicted_ns < tick && !s.tick_stopped {
        // The tick keeps running: the state must pay off before it fires.
        if idx > 0 && states[idx].target_residency_ns > delta_tick {
            for i in (0..idx).rev() {
                idx = i;
                if states[i].target_residency_ns <= delta_tick {
                    break;
                }
            }
        }
        return Selection { idx, stop_tick: false };
    }
    Selection { idx, stop_tick: true }
}

/// `menu_update`: how long the CPU really stayed idle in state `last_idx`
/// against the timer it expected: fold the ratio into the bucket's
/// correction factor and the duration into the recent intervals.
pub fn menu_update(
    data: &mut MenuDevice,
    states: &[IdleState],
    last_idx: usize,
    last_residency_ns: Ns,
    tick_wakeup: bool,
    tick_ns: Ns,
) {
    let exit_latency = states.get(last_idx).map_or(0, |st| st.exit_latency_ns);
    let mut measured_ns = if tick_wakeup && data.next_timer_ns > tick_ns {
        // The tick, not the expected timer, ended the period: the CPU could
        // have stayed idle long (but not forever).
        9 * MAX_INTERESTING / 10
    } else if last_residency_ns > 2 * exit_latency {
        // The wakeup began an exit latency before the CPU ran again.
        last_residency_ns - exit_latency
    } else {
        last_residency_ns / 2
    };
    // Never a correction above unity.
    measured_ns = measured_ns.min(data.next_timer_ns);
    let mut new_factor = data.correction_factor[data.bucket] as u64;
    new_factor -= new_factor / DECAY;
    if data.next_timer_ns > 0 && measured_ns < MAX_INTERESTING {
        new_factor += RESOLUTION * measured_ns / data.next_timer_ns;
    } else {
        new_factor += RESOLUTION;
    }
    data.correction_factor[data.bucket] = new_factor as u32;
    menu_update_intervals(data, (measured_ns / NSEC_PER_USEC).min(u32::MAX as Ns) as u32);
}
