//! Time and CPU-bound work measured in time, as the simulated families
//! express it (`chunk=5ms` is 5 ms of running, not of sleeping).

use std::time::{Duration, Instant};

/// Run on the CPU for `ns` of wall time (spinning on the clock, so a CPU
/// shared with other work stretches it, as compute does).
pub fn spin_ns(ns: u64) {
    let end = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < end {
        std::hint::spin_loop();
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
