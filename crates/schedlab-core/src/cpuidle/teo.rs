//! The teo (timer events oriented) governor, after
//! drivers/cpuidle/governors/teo.c of the 2025 rework (the version with
//! `short_idles`, `total_tick` and `tick_intercepts`, without the recent
//! intercepts window and the util-awareness of v6.3..v6.13; read from a
//! linux-next copy).
//!
//! Each state has a bin from its target residency to the next state's.
//! After every wakeup the bin of the measured idle duration gets a "hit"
//! (same bin as the sleep length: the timer woke the CPU) or an
//! "intercept" (an earlier bin: something else did); all metrics decay by
//! 1/8 per update. Selection starts from the deepest state and goes
//! shallower while intercepts below dominate, then caps by the sleep length.

use super::{Selection, SleepLength, CPUIDLE_STATE_MAX, RESIDENCY_THRESHOLD_NS};
use crate::ids::Ns;
use crate::topology::IdleState;

/// `PULSE`: what one event adds to a metric.
pub const PULSE: u32 = 1024;
/// `DECAY_SHIFT`: each update keeps 7/8 of every metric.
pub const DECAY_SHIFT: u32 = 3;
/// `LATENCY_THRESHOLD_NS`: a latency limit below this forces shallow
/// states, so the sleep length need not be looked up.
pub const LATENCY_THRESHOLD_NS: Ns = RESIDENCY_THRESHOLD_NS / 2;

/// `struct teo_bin`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeoBin {
    /// `intercepts`: wakeups earlier than the sleep length's bin, into this one.
    pub intercepts: u32,
    /// `hits`: wakeups in the same bin as the sleep length.
    pub hits: u32,
}

/// `struct teo_cpu`.
#[derive(Clone, Debug)]
pub struct TeoCpu {
    /// `sleep_length_ns` at the last selection (`Ns::MAX`: not looked up).
    pub sleep_length_ns: Ns,
    /// `state_bins[]`.
    pub state_bins: [TeoBin; CPUIDLE_STATE_MAX],
    /// `total`: all hits and intercepts.
    pub total: u32,
    /// `total_tick`: wakeups by the tick.
    pub total_tick: u32,
    /// `tick_intercepts`: intercepts shorter than a tick.
    pub tick_intercepts: u32,
    /// `short_idles`: wakeups after less than `RESIDENCY_THRESHOLD_NS`.
    pub short_idles: u32,
}

impl Default for TeoCpu {
    /// `teo_enable_device`: all zero.
    fn default() -> Self {
        TeoCpu {
            sleep_length_ns: 0,
            state_bins: [TeoBin::default(); CPUIDLE_STATE_MAX],
            total: 0,
            total_tick: 0,
            tick_intercepts: 0,
            short_idles: 0,
        }
    }
}

/// `teo_decay`: keep 7/8, and drop to 0 once the eighth rounds to nothing.
fn teo_decay(metric: &mut u32) {
    let delta = *metric >> DECAY_SHIFT;
    *metric = if delta > 0 { *metric - delta } else { 0 };
}

/// `teo_update`: classify the last wakeup (state `last_idx`, residency with
/// exit latency, woken by the tick or not) as a hit or an intercept.
pub fn teo_update(
    cpu_data: &mut TeoCpu,
    states: &[IdleState],
    last_idx: usize,
    last_residency_ns: Ns,
    tick_wakeup: bool,
    tick_ns: Ns,
) {
    teo_decay(&mut cpu_data.short_idles);
    let lat_ns = states.get(last_idx).map_or(0, |st| st.exit_latency_ns);
    let mut measured_ns = last_residency_ns;
    // Half the exit latency: a rough mean of the wakeup-to-running delay.
    if measured_ns >= lat_ns {
        measured_ns -= lat_ns / 2;
        if measured_ns < RESIDENCY_THRESHOLD_NS {
            cpu_data.short_idles += PULSE;
        }
    } else {
        measured_ns /= 2;
        cpu_data.short_idles += PULSE;
    }
    let (mut idx_timer, mut idx_duration, mut total) = (0, 0, 0u32);
    for (i, st) in states.iter().enumerate() {
        let bin = &mut cpu_data.state_bins[i];
        teo_decay(&mut bin.hits);
        total = total.wrapping_add(bin.hits);
        teo_decay(&mut bin.intercepts);
        total = total.wrapping_add(bin.intercepts);
        if st.target_residency_ns <= cpu_data.sleep_length_ns {
            idx_timer = i;
            if st.target_residency_ns <= measured_ns {
                idx_duration = i;
            }
        }
    }
    cpu_data.total = total.wrapping_add(PULSE);
    teo_decay(&mut cpu_data.tick_intercepts);
    teo_decay(&mut cpu_data.total_tick);
    if tick_wakeup {
        cpu_data.total_tick += PULSE;
        // Mostly woken by the tick: count a hit on the deepest state, so the
        // tick gets a chance to stop.
        if 3 * cpu_data.total_tick as u64 > 2 * cpu_data.total as u64 {
            cpu_data.state_bins[states.len().saturating_sub(1)].hits += PULSE;
            return;
        }
    }
    if idx_timer == idx_duration {
        cpu_data.state_bins[idx_timer].hits += PULSE;
    } else {
        cpu_data.state_bins[idx_duration].intercepts += PULSE;
        if measured_ns <= tick_ns {
            cpu_data.tick_intercepts += PULSE;
        }
    }
}

/// `teo_find_shallower_state`: the deepest state below `state_idx` whose
/// target residency fits `duration_ns` (state 0 if none does).
pub fn teo_find_shallower_state(states: &[IdleState], state_idx: usize, duration_ns: Ns) -> usize {
    let mut idx = state_idx;
    for i in (0..state_idx).rev() {
        idx = i;
        if states[i].target_residency_ns <= duration_ns {
            break;
        }
    }
    idx
}

/// `teo_select`: fold in the last wakeup, then pick a state and decide
/// whether the tick stops. No state is disabled and none polls.
pub fn teo_select(
    cpu_data: &mut TeoCpu,
    states: &[IdleState],
    s: &SleepLength,
    last: Option<(usize, Ns, bool)>,
) -> Selection {
    let tick = s.tick_ns;
    if let Some((idx, residency, tick_wakeup)) = last {
        teo_update(cpu_data, states, idx, residency, tick_wakeup, tick);
    }
    // Unknown until looked up below: the wakeup then counts as an intercept.
    cpu_data.sleep_length_ns = Ns::MAX;
    let keep_tick = |idx| Selection { idx, stop_tick: false };
    if states.len() < 2 {
        return keep_tick(0);
    }
    let (mut intercept_sum, mut hit_sum) = (0u32, 0u32);
    let (mut idx_intercept_sum, mut idx_hit_sum) = (0u32, 0u32);
    let (mut constraint_idx, idx0) = (0, 0);
    let mut idx = 0;
    for (i, st) in states.iter().enumerate().skip(1) {
        let prev_bin = cpu_data.state_bins[i - 1];
        intercept_sum = intercept_sum.wrapping_add(prev_bin.intercepts);
        hit_sum = hit_sum.wrapping_add(prev_bin.hits);
        idx = i;
        if st.exit_latency_ns <= s.latency_req_ns {
            constraint_idx = i;
        }
        idx_intercept_sum = intercept_sum;
        idx_hit_sum = hit_sum;
    }
    // Intercepts below the candidate outweigh everything at or above it:
    // go down to the deepest state that covers more than half of them.
    if 2 * idx_intercept_sum as u64 > cpu_data.total.wrapping_sub(idx_hit_sum) as u64 {
        let mut min_idx = idx0;
        if s.tick_stopped {
            while min_idx < idx && states[min_idx].target_residency_ns < tick {
                min_idx += 1;
            }
        }
        let top = idx;
        let mut sum = 0u32;
        for i in (min_idx..top).rev() {
            sum = sum.wrapping_add(cpu_data.state_bins[i].intercepts);
            idx = i;
            if 2 * sum as u64 > idx_intercept_sum as u64 {
                break;
            }
        }
    }
    idx = idx.min(constraint_idx);
    // Shallow anyway and short idles dominate (or the latency limit forces
    // shallow states): no need for the sleep length.
    if (idx == 0 || states[idx].target_residency_ns < RESIDENCY_THRESHOLD_NS)
        && (2 * cpu_data.short_idles as u64 >= cpu_data.total as u64 || s.latency_req_ns < LATENCY_THRESHOLD_NS)
    {
        return keep_tick(idx);
    }
    let mut duration_ns = s.sleep_length_ns;
    cpu_data.sleep_length_ns = duration_ns;
    if idx == 0 {
        return keep_tick(0);
    }
    if states[idx].target_residency_ns > duration_ns {
        idx = teo_find_shallower_state(states, idx, duration_ns);
    }
    // Intercepts within a tick dominate: do not stop the tick for a state
    // shallower than a tick.
    let total = cpu_data.total;
    if states[idx].target_residency_ns < tick && cpu_data.tick_intercepts > total / 2 + total / 8 {
        duration_ns = tick / 2;
    }
    if duration_ns >= tick || s.tick_stopped {
        return Selection { idx, stop_tick: true };
    }
    // The tick runs on: the state must pay off before the next event.
    if idx > idx0 && states[idx].target_residency_ns > s.delta_tick_ns {
        idx = teo_find_shallower_state(states, idx, s.delta_tick_ns);
    }
    keep_tick(idx)
}
