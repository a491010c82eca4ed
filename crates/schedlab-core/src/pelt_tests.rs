//! PELT's unit tests: the kernel's integer math and its convergence.

use super::*;
use crate::features::Features;

/// One PELT period, in ns.
const PERIOD_NS: u64 = 1024 * 1024;

#[test]
fn yn_table_derivation() {
    // Values computed independently with float math: 0xffffffff * y^n.
    assert_eq!(RUNNABLE_AVG_YN_INV[0], 0xffff_ffff);
    assert_eq!(RUNNABLE_AVG_YN_INV[1], 0xfa83_b2da);
    assert_eq!(RUNNABLE_AVG_YN_INV[2], 0xf525_7d14);
    assert_eq!(RUNNABLE_AVG_YN_INV[31], 0x82cd_8698);
    assert!(RUNNABLE_AVG_YN_INV.windows(2).all(|w| w[0] > w[1]));
    // y^31 * y ~ 0.5 in 2^-32 fixed point.
    let y32 = (RUNNABLE_AVG_YN_INV[31] as u64 * RUNNABLE_AVG_YN_INV[1] as u64) >> 32;
    assert!((y32 as i64 - (1i64 << 31)).abs() < 4, "{y32:#x}");
}

#[test]
fn load_avg_max_is_the_series_limit() {
    // The kernel generator: max = max*y + 1024 until it stops changing.
    let mut m = 1024u64;
    loop {
        let n = decay_load(m, 1) + 1024;
        if n == m {
            break;
        }
        m = n;
    }
    assert_eq!(m, LOAD_AVG_MAX);
}

#[test]
fn decay_load_halves_every_32_periods() {
    // Exact to 1 for values up to 2^33 (the table's 1 is 1 - 2^-32).
    for x in [1u64 << 20, 1024, 47742, 123_456_789, 1 << 33] {
        let h = decay_load(x, 32) as i64;
        assert!((h - (x / 2) as i64).abs() <= 1, "{x}: {h}");
        assert!((decay_load(x, 64) as i64 - (x / 4) as i64).abs() <= 1);
    }
    assert_eq!(decay_load(1 << 40, 32 * 64), 0);
}

#[test]
fn decay_load_is_the_kernels_step_by_step_form() {
    // decay_load as pelt.c writes it: 0 past 63 half-lives, else shift
    // by the whole half-lives, then one table multiply. Decay (one shift
    // and entry for several values) must give exactly this.
    fn kernel(val: u64, n: u64) -> u64 {
        if n > LOAD_AVG_PERIOD as u64 * 63 {
            return 0;
        }
        let (mut val, mut local_n) = (val, n as u32);
        if local_n >= LOAD_AVG_PERIOD {
            val >>= local_n / LOAD_AVG_PERIOD;
            local_n %= LOAD_AVG_PERIOD;
        }
        ((val as u128 * RUNNABLE_AVG_YN_INV[local_n as usize] as u128) >> 32) as u64
    }
    for n in (0..2100).chain([4000, u32::MAX as u64, u64::MAX]) {
        for val in [0, 1, 1023, 47742, 123_456_789, 1 << 40, u64::MAX >> 1, u64::MAX] {
            assert_eq!(decay_load(val, n), kernel(val, n), "decay_load({val}, {n})");
        }
    }
}

/// One task alone on a CPU: runs the first `run_ns` of every `period_ns`
/// and sleeps the rest. Updates every `step` as the tick and
/// enqueue/dequeue would. Returns the task's avg and the mean util_avg
/// over the last `tail_ns`.
fn drive(cap: u64, freq: u64, run_ns: u64, period_ns: u64, total_ns: u64, tail_ns: u64) -> (SchedAvg, u64) {
    let step = 250_000; // divides every run/period used below
    let mut rq = RqClockPelt::default();
    let mut se = SchedAvg::default();
    let (mut acc, mut n) = (0u64, 0u64);
    let mut t = 0;
    while t < total_ns {
        let running = t % period_ns < run_ns;
        rq.update_rq_clock_pelt(t + step, t + step, running, cap, freq);
        update_load_avg_se(&mut se, rq.rq_clock_pelt(), NICE_0_LOAD, running, running);
        let next_running = (t + step) % period_ns < run_ns;
        if running && !next_running {
            rq.update_idle_rq_clock_pelt(se.util_sum, 0, 0);
        }
        t += step;
        if t > total_ns - tail_ns {
            acc += se.util_avg;
            n += 1;
        }
    }
    (se, acc / n)
}

fn within_pct(v: u64, want: u64, pct: u64) -> bool {
    v * 100 >= want * (100 - pct) && v * 100 <= want * (100 + pct)
}

#[test]
fn always_running_converges_to_full_util_and_weight() {
    let (se, _) = drive(1024, 1024, 10_000_000, 10_000_000, 500_000_000, 1);
    assert!(within_pct(se.util_avg, 1024, 2), "util {}", se.util_avg);
    assert!(within_pct(se.load_avg, NICE_0_LOAD, 2), "load {}", se.load_avg);
    assert!(se.util_avg <= 1024);
}

#[test]
fn half_duty_cycle_converges_to_half() {
    let (_, mean) = drive(1024, 1024, 5_000_000, 10_000_000, 1_000_000_000, 100_000_000);
    assert!(within_pct(mean, 512, 2), "mean util {mean}");
}

#[test]
fn invariance_same_work_same_util() {
    // 25% of the time on a big CPU and 50% on a half-capacity CPU is the
    // same work: invariant util is ~256 on both.
    // Compare at the same point of the cycle (its end): in PELT time
    // the three histories are the same.
    let (big, big_mean) = drive(1024, 1024, 2_500_000, 10_000_000, 1_000_000_000, 100_000_000);
    let (little, _) = drive(512, 1024, 5_000_000, 10_000_000, 1_000_000_000, 100_000_000);
    let (slow, _) = drive(1024, 512, 5_000_000, 10_000_000, 1_000_000_000, 100_000_000);
    assert!(within_pct(big_mean, 256, 2), "{big_mean}");
    for v in [little.util_avg, slow.util_avg] {
        assert!((v as i64 - big.util_avg as i64).abs() <= 2, "{} vs {v}", big.util_avg);
    }
}

#[test]
fn saturated_small_cpu_reaches_full_util() {
    // Kernel behaviour: a capacity-512 CPU busy all the time has no idle
    // time to give back, so util_avg still tends to 1024 (lost idle time).
    let (se, _) = drive(512, 1024, 10_000_000, 10_000_000, 1_000_000_000, 1);
    assert!(within_pct(se.util_avg, 1024, 2), "util {}", se.util_avg);
}

#[test]
fn blocked_entity_decays_by_half_in_32_periods() {
    let (mut se, _) = drive(1024, 1024, 10_000_000, 10_000_000, 400 * PERIOD_NS, 1);
    let before = se.util_avg;
    let now = se.last_update_time + 32 * PERIOD_NS;
    assert!(update_load_avg_blocked_se(&mut se, now, NICE_0_LOAD));
    assert!(within_pct(se.util_avg * 2, before, 2), "{before} -> {}", se.util_avg);
    assert!(within_pct(se.load_avg * 2, NICE_0_LOAD, 3), "load {}", se.load_avg);
}

#[test]
fn attach_then_detach_restores_cfs_rq() {
    let (se0, _) = drive(1024, 1024, 5_000_000, 10_000_000, 200_000_000, 1);
    let mut cfs = SchedAvg { last_update_time: se0.last_update_time, period_contrib: 300, ..Default::default() };
    let before = cfs;
    let mut se = se0;
    attach_entity_load_avg(&mut cfs, &mut se, NICE_0_LOAD);
    assert_eq!(cfs.util_avg, se.util_avg);
    assert_eq!(se.period_contrib, 300);
    detach_entity_load_avg(&mut cfs, &se, NICE_0_LOAD);
    assert_eq!((cfs.util_avg, cfs.load_avg, cfs.runnable_avg), (0, 0, 0));
    assert_eq!(cfs.util_sum, before.util_sum);
    // Removal via the removed-load path ends at the same place.
    let mut removed = RemovedLoad::default();
    attach_entity_load_avg(&mut cfs, &mut se, NICE_0_LOAD);
    remove_entity_load_avg(&mut removed, &se);
    let now = cfs.last_update_time;
    assert!(update_cfs_rq_load_avg(&mut cfs, &mut removed, now, 0, 0, false));
    assert_eq!((cfs.util_avg, cfs.load_avg, removed.nr), (0, 0, 0));
}

#[test]
fn util_est_ewma() {
    let f = Features::mainline();
    let mut t = SchedAvg { util_avg: 400, runnable_avg: 400, ..Default::default() };
    util_est_update(&mut t, true, &f);
    assert_eq!(t.util_est, UtilEst { ewma: 400, util_avg_unchanged: true });
    // Unchanged util_avg: no second sample.
    t.util_avg = 200;
    util_est_update(&mut t, true, &f);
    assert_eq!(t.util_est.ewma, 400);
    // After a PELT update the flag is clear: decrease by 1/4 of the gap.
    t.util_est.util_avg_unchanged = false;
    t.runnable_avg = 200;
    util_est_update(&mut t, true, &f);
    assert_eq!(t.util_est.ewma, 350);
    assert_eq!(task_util_est(&t), 350);
    // Within the margin: kept.
    t.util_est.util_avg_unchanged = false;
    t.util_avg = 345;
    t.runnable_avg = 345;
    util_est_update(&mut t, true, &f);
    assert_eq!(t.util_est.ewma, 350);
    // Migration (not a sleep): no update.
    t.util_est.util_avg_unchanged = false;
    t.util_avg = 10;
    util_est_update(&mut t, false, &f);
    assert_eq!(t.util_est.ewma, 350);
    let mut cfs = SchedAvg::default();
    util_est_enqueue(&mut cfs, &t, &f);
    util_est_enqueue(&mut cfs, &t, &f);
    util_est_dequeue(&mut cfs, &t, &f);
    assert_eq!(cfs.util_est.ewma, 350);
}

#[test]
fn zero_signal_updates_are_the_full_updates() {
    // An RT or IRQ average whose sums are 0 and that gets no load takes the
    // short path (update_zero_signal); it must leave the signal, and return,
    // exactly what ___update_load_sum and ___update_load_avg give, from
    // every position in the period, across 0, 1 and many periods, with
    // stale non-zero averages, and with time going backwards.
    fn full_rt(sa: &mut SchedAvg, now: u64) -> bool {
        if update_load_sum(sa, now, 0, 0, false) {
            update_load_avg_from_sums(sa, 1);
            return true;
        }
        false
    }
    fn full_irq(sa: &mut SchedAvg, now: u64) -> bool {
        let mut ret = update_load_sum(sa, now, 0, 0, false);
        ret |= update_load_sum(sa, now, 1, 1, true);
        if ret {
            update_load_avg_from_sums(sa, 1);
        }
        ret
    }
    let steps = [0, 1, 1023, 1024, 5_000, PERIOD_NS - 1, PERIOD_NS, 3 * PERIOD_NS + 777, 70 * PERIOD_NS];
    for start in [0u64, 1, 1000, 123_456_789] {
        for contrib in [0u32, 1, 512, 1023] {
            for avg in [0u64, 7] {
                let init = SchedAvg {
                    last_update_time: start,
                    period_contrib: contrib,
                    load_avg: avg,
                    util_avg: avg,
                    runnable_avg: avg,
                    ..Default::default()
                };
                let (mut rt, mut rt_full, mut irq, mut irq_full) = (init, init, init, init);
                let mut now = start;
                for (i, &step) in steps.iter().cycle().take(40).enumerate() {
                    // Now and then a step back (the kernel's clock-init case).
                    now = if i % 13 == 12 { now.saturating_sub(3000) } else { now + step };
                    assert_eq!(update_rt_rq_load_avg(&mut rt, now, false), full_rt(&mut rt_full, now));
                    assert_eq!(rt, rt_full, "rt at {now}");
                    assert_eq!(update_irq_load_avg(&mut irq, now, 0, 1024, 1024), full_irq(&mut irq_full, now));
                    assert_eq!(irq, irq_full, "irq at {now}");
                }
            }
        }
    }
}
