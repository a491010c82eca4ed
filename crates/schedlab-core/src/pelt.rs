//! Per-Entity Load Tracking (PELT), after `kernel/sched/pelt.c` and `pelt.h`.
//!
//! Runnable/running history is a geometric series over periods of 1024 "us"
//! (1024 ns units, as the kernel does with `delta >>= 10`): the contribution
//! of the period `n` periods ago is weighted by `y^n`, with `y^32 = 0.5`, so
//! what happened 32 ms ago counts half as much as the current period:
//!
//! ```text
//!   sum = u_0 + u_1*y + u_2*y^2 + ...        (u_i: fraction of period i)
//!   avg = sum / divider,  divider = LOAD_AVG_MAX - 1024 + period_contrib
//! ```
//!
//! All math is the kernel's integer math. Frequency and CPU invariance are
//! modelled the kernel's way: the PELT clock ([`RqClockPelt`]) runs slower
//! on a slower CPU while it runs, and catches up with the task clock when the
//! CPU idles. State goes in as arguments; nothing here knows about tasks or
//! CPUs (house rule 2).

use crate::ids::Ns;

/// Fixed-point shift of CPU capacity (`SCHED_CAPACITY_SHIFT`).
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// Capacity of the biggest CPU at its highest frequency (`SCHED_CAPACITY_SCALE`).
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// Weight of a nice-0 task, after `scale_load_down()` (kernel `NICE_0_LOAD`
/// is `1024 << 10` on 64-bit; schedlab keeps weights unscaled everywhere).
pub const NICE_0_LOAD: u64 = 1024;
/// Half-life of the series in periods: `y^LOAD_AVG_PERIOD = 0.5`.
pub const LOAD_AVG_PERIOD: u32 = 32;
/// Maximum of the series `1024 * sum(y^n)` in the kernel's integer math
/// (`LOAD_AVG_MAX`); a test re-derives it from [`decay_load`].
pub const LOAD_AVG_MAX: u64 = 47742;
/// Smallest PELT divider, at the start of a period (`PELT_MIN_DIVIDER`).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// util_est EWMA weight of a new sample: 1/4 (`UTIL_EST_WEIGHT_SHIFT`).
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// util_est skips updates within ~1% of capacity (`UTIL_EST_MARGIN`).
pub const UTIL_EST_MARGIN: u32 = (SCHED_CAPACITY_SCALE / 100) as u32;

/// `y^n` in 2^-32 fixed point for `n < 32`, times `(2^32 - 1)` like the
/// kernel's generator (`Documentation/scheduler/sched-pelt.c`).
///
/// Derivation, all in integers: find `Y`, the largest Q64 number with
/// `Y^32 <= 0.5` (binary search; `Y^32` by five truncating squarings in
/// u128), then multiply powers of `Y` up and scale each to 32 bits. The
/// truncation error (< 2^-58 relative) is far below one unit of the result.
pub const RUNNABLE_AVG_YN_INV: [u32; LOAD_AVG_PERIOD as usize] = yn_inv_table();

const fn q64_pow32(y: u128) -> u128 {
    let mut s = y;
    let mut i = 0;
    while i < 5 {
        s = (s * s) >> 64;
        i += 1;
    }
    s
}

const fn yn_inv_table() -> [u32; LOAD_AVG_PERIOD as usize] {
    // Binary search Y in [2^63, 2^64): y = 2^(-1/32) ~ 0.9786 lies there.
    let half: u128 = 1u128 << 63;
    let (mut lo, mut hi): (u128, u128) = (1u128 << 63, (1u128 << 64) - 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if q64_pow32(mid) <= half {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let y = lo;
    let mut table = [0u32; LOAD_AVG_PERIOD as usize];
    let mut yi: u128 = 1u128 << 64; // y^0 = 1 in Q64
    let mut n = 0;
    while n < LOAD_AVG_PERIOD as usize {
        table[n] = ((0xffff_ffffu128 * yi) >> 64) as u32;
        yi = (yi * y) >> 64;
        n += 1;
    }
    table
}

/// `val * y^n` (kernel `decay_load`): `y^n = 2^-(n/32) * y^(n%32)`, so a
/// shift for whole half-lives and one table multiply for the rest.
pub fn decay_load(val: u64, n: u64) -> u64 {
    Decay::new(n).apply(val)
}

/// `decay_load(·, n)` for one `n` and several values (`accumulate_sum`
/// decays three sums and `LOAD_AVG_MAX` by the same periods): the shift and
/// the table entry found once. Past `LOAD_AVG_PERIOD * 63` periods the
/// kernel returns 0, which a zero multiplier gives.
#[derive(Clone, Copy, Debug)]
struct Decay {
    /// Whole half-lives, `n / LOAD_AVG_PERIOD` (at most 63).
    shift: u32,
    /// `RUNNABLE_AVG_YN_INV[n % LOAD_AVG_PERIOD]`, or 0 when all decays.
    inv: u64,
}

impl Decay {
    #[inline]
    fn new(n: u64) -> Self {
        if n > LOAD_AVG_PERIOD as u64 * 63 {
            return Decay { shift: 0, inv: 0 };
        }
        let period = LOAD_AVG_PERIOD as u64;
        Decay { shift: (n / period) as u32, inv: RUNNABLE_AVG_YN_INV[(n % period) as usize] as u64 }
    }

    /// `mul_u64_u32_shr(val >> shift, inv, 32)`.
    #[inline]
    fn apply(self, val: u64) -> u64 {
        (((val >> self.shift) as u128 * self.inv as u128) >> 32) as u64
    }
}

/// `cap_scale(v, c) = v * c >> SCHED_CAPACITY_SHIFT`.
#[inline]
pub fn cap_scale(v: u64, cap: u64) -> u64 {
    ((v as u128 * cap as u128) >> SCHED_CAPACITY_SHIFT) as u64
}

/// Estimated utilisation of a task at its last dequeue (kernel
/// `sched_avg::util_est`, a u32 whose top bit is `UTIL_AVG_UNCHANGED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UtilEst {
    /// EWMA of util_avg sampled at dequeue (without the flag bit).
    pub ewma: u32,
    /// `UTIL_AVG_UNCHANGED`: set when util_est was last written, cleared the
    /// next time util_avg changes; while set, a new sample would be stale.
    pub util_avg_unchanged: bool,
}

/// One PELT signal set (kernel `struct sched_avg`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// PELT-clock time of the last update, ns; 0 means "not attached yet"
    /// (after a migration, like the kernel).
    pub last_update_time: u64,
    /// Runnable time series; for an entity unweighted, for a cfs_rq weighted.
    pub load_sum: u64,
    /// Runnable series scaled by `SCHED_CAPACITY_SCALE` (and by nr runnable for a rq).
    pub runnable_sum: u64,
    /// Running series scaled by `SCHED_CAPACITY_SCALE`.
    pub util_sum: u64,
    /// Part of the current period already accounted, in 1024 ns units.
    pub period_contrib: u32,
    /// `weight * load_sum / divider`.
    pub load_avg: u64,
    /// `runnable_sum / divider`.
    pub runnable_avg: u64,
    /// `util_sum / divider`, at most ~1024.
    pub util_avg: u64,
    /// util_est (tasks) or the sum of enqueued tasks' util_est (cfs_rq, in `ewma`).
    pub util_est: UtilEst,
}

/// `get_pelt_divider`: the maximum a `*_sum` can have at this point of the period.
#[inline]
pub fn get_pelt_divider(sa: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + sa.period_contrib as u64
}

/// `__accumulate_pelt_segments`: d1 (rest of the old period) decayed by p,
/// the full periods in between (`1024 * sum_{n=1}^{p-1} y^n`), d3 undecayed.
/// `decay` is `decay_load(·, periods)`.
#[inline]
fn accumulate_pelt_segments(decay: Decay, d1: u32, d3: u32) -> u32 {
    let c1 = decay.apply(d1 as u64) as u32;
    let c2 = (LOAD_AVG_MAX - decay.apply(LOAD_AVG_MAX) - 1024) as u32;
    c1 + c2 + d3
}

/// `accumulate_sum`: decay the sums over crossed period boundaries, then add
/// this update's contribution. `delta` is in 1024 ns units. Returns the
/// number of periods crossed.
///
/// Always inlined (`__always_inline` in the kernel too): out of line, each
/// of its 344,038 calls on the standard bench saved and restored five
/// registers (round 19: -2.7 M inlined; round 12 had measured +6.3 M).
#[inline(always)]
pub fn accumulate_sum(delta: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> u64 {
    let mut contrib = delta as u32; // p == 0 -> delta < 1024
    let mut delta = delta + sa.period_contrib as u64;
    let periods = delta / 1024;
    if periods > 0 {
        let decay = Decay::new(periods);
        sa.load_sum = decay.apply(sa.load_sum);
        sa.runnable_sum = decay.apply(sa.runnable_sum);
        sa.util_sum = decay.apply(sa.util_sum);
        delta %= 1024;
        if load != 0 {
            // Only needed when something accrues (runnable/running imply load).
            contrib = accumulate_pelt_segments(decay, 1024 - sa.period_contrib, delta as u32);
        }
    }
    sa.period_contrib = delta as u32;
    if load != 0 {
        sa.load_sum += load * contrib as u64;
    }
    if runnable != 0 {
        sa.runnable_sum += (runnable * contrib as u64) << SCHED_CAPACITY_SHIFT;
    }
    if running {
        sa.util_sum += (contrib as u64) << SCHED_CAPACITY_SHIFT;
    }
    periods
}

/// `___update_load_sum`'s clock: the whole microseconds (1024 ns units)
/// from the last update to `now`, the clock moved on by them; None when
/// there are none, or when time went backwards (the kernel tolerates it at
/// clock init and resyncs), where the kernel returns without an update.
#[inline(always)]
fn advance_pelt_clock(sa: &mut SchedAvg, now: u64) -> Option<u64> {
    if now < sa.last_update_time {
        sa.last_update_time = now;
        return None;
    }
    let delta = (now - sa.last_update_time) >> 10;
    if delta == 0 {
        return None;
    }
    sa.last_update_time += delta << 10;
    Some(delta)
}

/// `___update_load_sum`: advance the sums to `now` (PELT clock, ns). Returns
/// true when a period boundary was crossed and the averages need recomputing.
/// Always inlined, as the kernel's (`__always_inline`): with `accumulate_sum`
/// inlined into it, the compiler kept it out of line, 717,179 calls on the
/// standard bench (round 19: -5.5 M inlined).
#[inline(always)]
pub fn update_load_sum(sa: &mut SchedAvg, now: u64, load: u64, runnable: u64, running: bool) -> bool {
    let Some(delta) = advance_pelt_clock(sa, now) else {
        return false;
    };
    // running and runnable are subsets of load (see the kernel comment on
    // a dequeued curr).
    let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
    accumulate_sum(delta, sa, load, runnable, running) != 0
}

/// `___update_load_avg`: turn the sums into averages; `load` is the entity
/// weight (1 for a cfs_rq, whose `load_sum` is already weighted).
pub fn update_load_avg_from_sums(sa: &mut SchedAvg, load: u64) {
    let divider = get_pelt_divider(sa);
    sa.load_avg = load * sa.load_sum / divider;
    sa.runnable_avg = sa.runnable_sum / divider;
    sa.util_avg = sa.util_sum / divider;
}

/// `__update_load_avg_blocked_se`: decay a sleeping entity to `now`.
pub fn update_load_avg_blocked_se(sa: &mut SchedAvg, now: u64, weight: u64) -> bool {
    if update_load_sum(sa, now, 0, 0, false) {
        update_load_avg_from_sums(sa, weight);
        return true;
    }
    false
}

/// `load_avg_is_decayed`: every sum has decayed to 0.
#[inline]
pub fn load_avg_is_decayed(sa: &SchedAvg) -> bool {
    sa.load_sum == 0 && sa.util_sum == 0 && sa.runnable_sum == 0
}

/// `__update_load_avg_se` for a task entity: load and runnable are `on_rq`,
/// running is "is cfs_rq->curr". Clears `UTIL_AVG_UNCHANGED`
/// (`cfs_se_util_change`) when util_avg was recomputed.
#[inline(always)]
pub fn update_load_avg_se(sa: &mut SchedAvg, now: u64, weight: u64, on_rq: bool, running: bool) -> bool {
    if update_load_sum(sa, now, on_rq as u64, on_rq as u64, running) {
        update_load_avg_from_sums(sa, weight);
        // DEVIATION(kernel): the kernel skips this under NO_UTIL_EST; the
        // flag is only read by util_est_update, which checks UTIL_EST itself.
        sa.util_est.util_avg_unchanged = false;
        return true;
    }
    false
}

/// `__update_load_avg_cfs_rq`: `load_weight` is the cfs_rq's
/// `load.weight` (scaled down), `h_nr_runnable` its runnable task count.
pub fn update_load_avg_cfs_rq(
    sa: &mut SchedAvg,
    now: u64,
    load_weight: u64,
    h_nr_runnable: u64,
    curr_running: bool,
) -> bool {
    if update_load_sum(sa, now, load_weight, h_nr_runnable, curr_running) {
        update_load_avg_from_sums(sa, 1);
        return true;
    }
    false
}

/// `___update_load_sum` then `___update_load_avg` with no load on a signal
/// whose sums are all 0 (the RT or IRQ average of a CPU that has run neither
/// for long): `accumulate_sum` would decay zeros to zeros and add nothing,
/// so only the clock and the position in the period move, exactly as there,
/// and the averages it recomputes on crossing a period are 0. Saves the
/// decay's multiplies and the three divisions where nothing can change;
/// returns what the full update returns (whether a period was crossed:
/// `decayed`, which still calls the cpufreq hook).
#[inline(always)]
fn update_zero_signal(sa: &mut SchedAvg, now: u64) -> bool {
    debug_assert!(load_avg_is_decayed(sa));
    let Some(delta) = advance_pelt_clock(sa, now) else {
        return false;
    };
    let contrib = delta + sa.period_contrib as u64;
    sa.period_contrib = (contrib % 1024) as u32;
    if contrib < 1024 {
        return false;
    }
    // What `update_load_avg_from_sums` gives for zero sums.
    sa.load_avg = 0;
    sa.runnable_avg = 0;
    sa.util_avg = 0;
    true
}

/// `update_rt_rq_load_avg` (also the shape of `update_dl_rq_load_avg`):
/// util of the RT class, from whether an RT task runs.
#[inline(always)]
pub fn update_rt_rq_load_avg(sa: &mut SchedAvg, now: u64, running: bool) -> bool {
    if !running && load_avg_is_decayed(sa) {
        return update_zero_signal(sa, now);
    }
    let r = running as u64;
    if update_load_sum(sa, now, r, r, running) {
        update_load_avg_from_sums(sa, 1);
        return true;
    }
    false
}

/// `update_irq_load_avg`: `clock_ns` is the rq clock (not the PELT clock:
/// IRQ time is not in clock_task), `running_ns` the IRQ time since the last
/// update. The running time is scaled for invariance and, pessimistically,
/// assumed to have happened just before `clock_ns`.
#[inline(always)]
pub fn update_irq_load_avg(
    sa: &mut SchedAvg,
    clock_ns: u64,
    running_ns: u64,
    cpu_capacity: u64,
    freq_capacity: u64,
) -> bool {
    if running_ns == 0 && load_avg_is_decayed(sa) {
        // The second update below is then at most 1023 ns on and returns
        // at once: its delta is 0.
        return update_zero_signal(sa, clock_ns);
    }
    let running = cap_scale(cap_scale(running_ns, freq_capacity), cpu_capacity);
    let mut ret = update_load_sum(sa, clock_ns.saturating_sub(running), 0, 0, false);
    ret |= update_load_sum(sa, clock_ns, 1, 1, true);
    if ret {
        update_load_avg_from_sums(sa, 1);
    }
    ret
}

/// `sub_positive`: subtract, clamping at zero.
#[inline]
fn sub_positive(v: &mut u64, d: u64) {
    *v = v.saturating_sub(d);
}

/// `enqueue_load_avg`: add an entity's load to its cfs_rq.
pub fn enqueue_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    cfs.load_avg += se.load_avg;
    cfs.load_sum += se_weight * se.load_sum;
}

/// `dequeue_load_avg`: remove an entity's load from its cfs_rq.
pub fn dequeue_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    sub_positive(&mut cfs.load_avg, se.load_avg);
    sub_positive(&mut cfs.load_sum, se_weight * se.load_sum);
    // Rounding can leave load_sum below what load_avg implies; keep them consistent.
    cfs.load_sum = cfs.load_sum.max(cfs.load_avg * PELT_MIN_DIVIDER);
}

/// `attach_entity_load_avg`: join a cfs_rq (which must be updated to now).
/// The entity adopts the cfs_rq's position in the period and its sums are
/// recomputed from its averages for that position.
pub fn attach_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, se_weight: u64) {
    let divider = get_pelt_divider(cfs);
    se.last_update_time = cfs.last_update_time;
    se.period_contrib = cfs.period_contrib;
    se.util_sum = se.util_avg * divider;
    se.runnable_sum = se.runnable_avg * divider;
    se.load_sum = se.load_avg * divider;
    se.load_sum = if se_weight < se.load_sum { se.load_sum / se_weight } else { 1 };
    enqueue_load_avg(cfs, se, se_weight);
    cfs.util_avg += se.util_avg;
    cfs.util_sum += se.util_sum;
    cfs.runnable_avg += se.runnable_avg;
    cfs.runnable_sum += se.runnable_sum;
}

/// `detach_entity_load_avg`: leave a cfs_rq (which must be updated to now).
pub fn detach_entity_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    dequeue_load_avg(cfs, se, se_weight);
    sub_positive(&mut cfs.util_avg, se.util_avg);
    sub_positive(&mut cfs.util_sum, se.util_sum);
    cfs.util_sum = cfs.util_sum.max(cfs.util_avg * PELT_MIN_DIVIDER);
    sub_positive(&mut cfs.runnable_avg, se.runnable_avg);
    sub_positive(&mut cfs.runnable_sum, se.runnable_sum);
    cfs.runnable_sum = cfs.runnable_sum.max(cfs.runnable_avg * PELT_MIN_DIVIDER);
}

/// Load of entities that left a cfs_rq without its lock (kernel
/// `cfs_rq->removed`), folded in at the cfs_rq's next update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemovedLoad {
    /// Number of entities removed since the last fold.
    pub nr: u32,
    /// Sum of their load_avg.
    pub load_avg: u64,
    /// Sum of their util_avg.
    pub util_avg: u64,
    /// Sum of their runnable_avg.
    pub runnable_avg: u64,
}

/// `remove_entity_load_avg`: record a (migrating or dying) entity's averages
/// for later removal. The caller first syncs the entity to the cfs_rq's
/// `last_update_time` with [`update_load_avg_blocked_se`] (`sync_entity_load_avg`).
pub fn remove_entity_load_avg(removed: &mut RemovedLoad, se: &SchedAvg) {
    removed.nr += 1;
    removed.load_avg += se.load_avg;
    removed.util_avg += se.util_avg;
    removed.runnable_avg += se.runnable_avg;
}

/// `update_cfs_rq_load_avg`: fold removed load in, then advance the cfs_rq.
/// Returns true when the averages changed ("decayed").
pub fn update_cfs_rq_load_avg(
    cfs: &mut SchedAvg,
    removed: &mut RemovedLoad,
    now: u64,
    load_weight: u64,
    h_nr_runnable: u64,
    curr_running: bool,
) -> bool {
    let mut decayed = false;
    if removed.nr > 0 {
        let r = std::mem::take(removed);
        let divider = get_pelt_divider(cfs);
        sub_positive(&mut cfs.load_avg, r.load_avg);
        sub_positive(&mut cfs.load_sum, r.load_avg * divider);
        cfs.load_sum = cfs.load_sum.max(cfs.load_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut cfs.util_avg, r.util_avg);
        sub_positive(&mut cfs.util_sum, r.util_avg * divider);
        cfs.util_sum = cfs.util_sum.max(cfs.util_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut cfs.runnable_avg, r.runnable_avg);
        sub_positive(&mut cfs.runnable_sum, r.runnable_avg * divider);
        cfs.runnable_sum = cfs.runnable_sum.max(cfs.runnable_avg * PELT_MIN_DIVIDER);
        decayed = true;
    }
    decayed |= update_load_avg_cfs_rq(cfs, now, load_weight, h_nr_runnable, curr_running);
    decayed
}

/// The rq's PELT clock (kernel `rq->clock_pelt`, `rq->lost_idle_time`).
///
/// While the CPU runs, the clock advances by the elapsed task-clock time
/// scaled by `arch_scale_cpu_capacity` and `arch_scale_freq_capacity`: the
/// work a capacity-1024 CPU at full speed would have done. When the CPU
/// idles, it jumps to `clock_task`, so the time "stolen" by running slowly
/// is given back as idle time. A CPU that was saturated had no idle time to
/// give back; that time is recorded as lost (`update_idle_rq_clock_pelt`).
///
/// ```text
/// absolute time   | 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|16
/// @ max capacity  ------******---------------******---------------
/// @ half capacity ------************---------************---------
/// clock pelt      | 1| 2|    3|    4| 7| 8| 9|   10|   11|14|15|16
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqClockPelt {
    /// Task clock (ns): time minus IRQ/steal time; schedlab has neither, so
    /// it is the simulated time the caller passes.
    pub clock_task: Ns,
    /// Invariant clock (ns).
    pub clock_pelt: Ns,
    /// Idle time lost to saturation, subtracted in [`Self::rq_clock_pelt`].
    pub lost_idle_time: Ns,
    /// `rq->clock_idle`: the rq clock at the last update while idle.
    pub clock_idle: Ns,
    /// `rq->clock_pelt_idle`: `rq_clock_pelt` at that update.
    pub clock_pelt_idle: Ns,
}

impl RqClockPelt {
    /// `update_rq_clock_pelt`: advance to `now_ns` (the task clock; `rq_clock`
    /// is the rq's own); `rq_running` says whether a task (not idle) ran
    /// during the elapsed interval. Capacities are in `SCHED_CAPACITY_SCALE`
    /// units.
    pub fn update_rq_clock_pelt(
        &mut self,
        now_ns: Ns,
        rq_clock: Ns,
        rq_running: bool,
        cpu_capacity: u64,
        freq_capacity: u64,
    ) {
        let delta = now_ns.saturating_sub(self.clock_task);
        self.clock_task = self.clock_task.max(now_ns);
        if !rq_running {
            // _update_idle_rq_clock_pelt: catch up with clock_task, and stamp
            // the rq clock and the PELT clock of this idle update, which
            // migrate_se_pelt_lag estimates "now" from.
            self.clock_pelt = self.clock_task;
            self.clock_idle = rq_clock;
            self.clock_pelt_idle = self.rq_clock_pelt();
            return;
        }
        self.clock_pelt += cap_scale(cap_scale(delta, cpu_capacity), freq_capacity);
    }

    /// `update_idle_rq_clock_pelt`: call when the rq goes idle, with the
    /// util_sums of its cfs, rt and dl signals. If they are at their maximum
    /// the rq was always running and the time clock_pelt lags behind
    /// clock_task is lost idle time rather than idle time to give back.
    pub fn update_idle_rq_clock_pelt(&mut self, cfs_util_sum: u64, rt_util_sum: u64, dl_util_sum: u64) {
        let divider = ((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX;
        if cfs_util_sum + rt_util_sum + dl_util_sum >= divider {
            self.lost_idle_time += self.clock_task.saturating_sub(self.clock_pelt);
        }
    }

    /// `rq_clock_pelt`: the time to pass to the update functions.
    pub fn rq_clock_pelt(&self) -> Ns {
        self.clock_pelt - self.lost_idle_time
    }
}

/// `_task_util_est`: the task's util_est value.
#[inline]
pub fn task_util_est_raw(sa: &SchedAvg) -> u64 {
    sa.util_est.ewma as u64
}

/// `task_util_est`: `max(util_avg, util_est)`.
#[inline]
pub fn task_util_est(sa: &SchedAvg) -> u64 {
    sa.util_avg.max(task_util_est_raw(sa))
}

/// `util_est_enqueue`: add the task's util_est to the cfs_rq's sum
/// (`cfs.util_est.ewma`).
pub fn util_est_enqueue(cfs: &mut SchedAvg, task: &SchedAvg, f: &crate::features::Features) {
    if !crate::sched_feat!(f, UTIL_EST) {
        return;
    }
    cfs.util_est.ewma = cfs.util_est.ewma.saturating_add(task.util_est.ewma);
}

/// `util_est_dequeue`: remove the task's util_est from the cfs_rq's sum.
pub fn util_est_dequeue(cfs: &mut SchedAvg, task: &SchedAvg, f: &crate::features::Features) {
    if !crate::sched_feat!(f, UTIL_EST) {
        return;
    }
    cfs.util_est.ewma -= cfs.util_est.ewma.min(task.util_est.ewma);
}

/// `util_est_update`: at dequeue, fold the task's util_avg into its EWMA.
///
/// Skipped unless the task goes to sleep (a migration is not the end of an
/// activation) or when util_avg has not changed since the last update.
/// Increases are taken at once; decreases go in with weight 1/4, unless they
/// are within `UTIL_EST_MARGIN` or the task was starved (runnable well above
/// util), where the old estimate is kept.
pub fn util_est_update(task: &mut SchedAvg, task_sleep: bool, f: &crate::features::Features) {
    if !crate::sched_feat!(f, UTIL_EST) || !task_sleep || task.util_est.util_avg_unchanged {
        return;
    }
    let mut ewma = task.util_est.ewma;
    let dequeued = task.util_avg.min(u32::MAX as u64) as u32;
    let keep_old = if ewma <= dequeued {
        ewma = dequeued;
        true
    } else {
        let last_ewma_diff = ewma - dequeued;
        if last_ewma_diff < UTIL_EST_MARGIN || (dequeued as u64 + UTIL_EST_MARGIN as u64) < task.runnable_avg {
            true
        } else {
            // ewma = w * util + (1 - w) * ewma, w = 1/4, in integers.
            ewma = ((ewma << UTIL_EST_WEIGHT_SHIFT) - last_ewma_diff) >> UTIL_EST_WEIGHT_SHIFT;
            true
        }
    };
    debug_assert!(keep_old);
    task.util_est = UtilEst { ewma, util_avg_unchanged: true };
}

#[cfg(test)]
#[path = "pelt_tests.rs"]
mod tests;
