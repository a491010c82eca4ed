//! Time and CPU-bound work measured in time, as the simulated families
//! express it (`chunk=5ms` is 5 ms of running, not of sleeping).

use std::time::Instant;

/// The longest step between two clock reads of [`spin_ns`] that counts as
/// running, ns. One read of `CLOCK_MONOTONIC` (vDSO) takes tens of ns on
/// this development VM and well under a microsecond in a TCG guest; a longer
/// step means the thread was not running in between: another task ran (a
/// context switch alone is a couple of microseconds here, and the other
/// task's run comes on top), or the host descheduled the vCPU (the guests'
/// stalls last milliseconds: docs/validation.md), or an interrupt handler ran.
/// 20 us sits above the reads and below every such gap of interest; handlers
/// and switches shorter than it are counted as running, which the simulated
/// chunk does not do (a few microseconds per preemption, against chunks of
/// hundreds of microseconds to milliseconds).
pub const RUN_STEP_MAX_NS: u64 = 20_000;

/// Run on the CPU for `ns` of running time: spin on the clock and count only
/// the steps during which this thread ran (at most [`RUN_STEP_MAX_NS`]
/// each), so that a CPU shared with other work, or a vCPU the host
/// deschedules, stretches the spin as it stretches compute: `chunk=1ms` is
/// 1 ms of running, as the simulated families define it. (Spinning until the
/// wall clock had moved by `ns` did not: a preempted or stalled spin ended on
/// time with less work done, while the simulated chunk waited.)
pub fn spin_ns(ns: u64) {
    let mut ran = 0u64;
    let mut last = mono_ns();
    while ran < ns {
        std::hint::spin_loop();
        let now = mono_ns();
        ran += running_step(last, now);
        last = now;
    }
}

/// What a clock step from `last` to `now` adds to a spin's running time.
fn running_step(last: u64, now: u64) -> u64 {
    let step = now.saturating_sub(last);
    if step <= RUN_STEP_MAX_NS {
        step
    } else {
        0
    }
}

/// Seconds since `t0`.
pub fn secs_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// `CLOCK_MONOTONIC` now, ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until `CLOCK_MONOTONIC` reads `at_ns` (`clock_nanosleep` with
/// `TIMER_ABSTIME`, as rt-app and cyclictest do).
pub fn sleep_until_ns(at_ns: u64) {
    let ts = libc::timespec { tv_sec: (at_ns / 1_000_000_000) as libc::time_t, tv_nsec: (at_ns % 1_000_000_000) as _ };
    loop {
        // SAFETY: `ts` is a valid absolute time; the remainder is unused with TIMER_ABSTIME.
        let rc =
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR || crate::stopping() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_steps_count_as_running() {
        assert_eq!(running_step(1_000, 1_050), 50);
        assert_eq!(running_step(1_000, 1_000 + RUN_STEP_MAX_NS), RUN_STEP_MAX_NS);
        assert_eq!(running_step(1_000, 1_001 + RUN_STEP_MAX_NS), 0);
        assert_eq!(running_step(2_000, 1_000), 0);
    }

    #[test]
    fn two_spins_sharing_one_cpu_take_twice_as_long_as_one() {
        // Both threads pinned to one CPU: the kernel time-shares it, so each
        // 30 ms spin needs about 60 ms of wall time (a wall-clock spin ended
        // both after 30 ms).
        let cpu = crate::args::allowed_cpus().unwrap()[0];
        let t0 = Instant::now();
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    crate::args::pin_to(cpu).unwrap();
                    spin_ns(30_000_000);
                })
            })
            .collect();
        for s in spinners {
            s.join().unwrap();
        }
        let wall = t0.elapsed().as_nanos() as u64;
        assert!(wall >= 54_000_000, "two 30 ms spins on one CPU ended after {wall} ns");
    }
}
