//! `wakecost`: a probe, not a workload (no simulated counterpart). It times
//! the waker's side of a local wakeup: a `write()` that wakes a reader
//! blocked on the same CPU, with no IPI and no preemption. The reader
//! (`wl-wakecost-rd`) is `SCHED_IDLE`, which a normal task's wakeup of it
//! never preempts (`check_preempt_wakeup_fair` returns early for an idle-policy
//! wakee), and both threads are pinned to the first CPU this process may use,
//! so `try_to_wake_up` takes its local path and the writer (`wl-wakecost`)
//! reads the clock again before anything else runs. The median write time,
//! minus the clock read and `pipecost`'s write, is what `calibrate` writes as
//! `cost.wakeup_ns`: the rest of `try_to_wake_up` (enqueue, the preemption
//! check), which the engine charges the waker per wakeup.
//!
//! After each timed write the writer sleeps `gap` so the reader runs, reads
//! and blocks again; before the next it checks in `/proc` that the reader
//! sleeps (state `S`), and a round where it does not is skipped and counted.
//! Metric: p10, p50 and p90 of the timed writes in ns, and the median cost of
//! one clock read (`clock_ns`), which the timed figure includes.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::args::{channel, close, read_exact, sys, write_all, Spec, WlError};
use crate::clock::{mono_ns, sleep_until_ns};
use crate::pipecost::{percentiles, quantile};

pub(crate) const SUMMARY: &str =
    "probe: ns of a pipe write that wakes a SCHED_IDLE reader on the same CPU (schedlab calibrate)";

/// The scheduler state letter of thread `tid` of this process
/// (`/proc/self/task/TID/stat`, the field after the parenthesised name).
fn thread_state(tid: i32) -> Option<u8> {
    let stat = std::fs::read(format!("/proc/self/task/{tid}/stat")).ok()?;
    let close_paren = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close_paren + 2).copied()
}

/// Median ns of one `CLOCK_MONOTONIC` read, from back-to-back pairs.
fn clock_read_ns() -> u64 {
    let mut v: Vec<u64> = (0..1001)
        .map(|_| {
            let a = mono_ns();
            mono_ns() - a
        })
        .collect();
    v.sort_unstable();
    quantile(&v, 0.5)
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let count = s.count("count", 2_000, 1, 10_000_000)?;
    let gap_ns = s.duration_within("gap", 200_000, 1_000, (10_000, 1_000_000_000))?;
    s.finish()?;
    let cpu = *crate::args::allowed_cpus()?.first().ok_or_else(|| sys("wakecost: no CPU allowed"))?;
    let (rd, wr) = channel(false)?;
    let reader_tid = Arc::new(AtomicI32::new(0));
    let tid = reader_tid.clone();
    let reader = std::thread::Builder::new()
        .name("wl-wakecost-rd".into())
        .spawn(move || -> Result<(), WlError> {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: policy change of the calling thread with a valid param.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
                return Err(sys("wakecost: sched_setscheduler(SCHED_IDLE)"));
            }
            crate::args::pin_to(cpu)?;
            // SAFETY: gettid has no arguments and cannot fail.
            tid.store(unsafe { libc::gettid() }, Ordering::Release);
            let mut buf = [0u8; 4];
            // The writer closes its end at the end: read fails, the loop ends.
            while read_exact(rd, &mut buf) {}
            Ok(())
        })
        .map_err(|e| WlError::Sys(format!("thread wl-wakecost-rd: {e}")))?;
    let probe = move || -> Result<(Vec<u64>, u64, u64), WlError> {
        crate::args::pin_to(cpu)?;
        let buf = [0u8; 4];
        let (mut times, mut skipped) = (Vec::with_capacity(count as usize), 0);
        let mut next = mono_ns() + gap_ns;
        let clock = clock_read_ns();
        while (times.len() as u64) < count && !crate::stopping() {
            sleep_until_ns(next);
            next = mono_ns() + gap_ns;
            let tid = reader_tid.load(Ordering::Acquire);
            if tid == 0 || thread_state(tid) != Some(b'S') {
                skipped += 1;
                if skipped > count.max(100) {
                    return Err(WlError::Sys(
                        "wakecost: the SCHED_IDLE reader never got the CPU back to sleep (a busy machine? calibrate needs a quiet one)".into(),
                    ));
                }
                continue;
            }
            let t0 = mono_ns();
            if !write_all(wr, &buf) {
                return Err(sys("wakecost: write"));
            }
            times.push(mono_ns() - t0);
        }
        Ok((times, skipped, clock))
    };
    let joined = std::thread::Builder::new()
        .name("wl-wakecost".into())
        .spawn(probe)
        .map_err(|e| WlError::Sys(format!("thread wl-wakecost: {e}")))?
        .join();
    close(wr);
    let read_end = reader.join();
    close(rd);
    let (mut times, skipped, clock) =
        joined.map_err(|_| WlError::Sys("wakecost: the probe thread panicked".into()))??;
    read_end.map_err(|_| WlError::Sys("wakecost: the reader panicked".into()))??;
    if times.is_empty() {
        return Err(WlError::Sys("wakecost: stopped before the first wakeup".into()));
    }
    times.sort_unstable();
    Ok(json!({
        "family": "wakecost",
        "count": times.len(),
        "skipped": skipped,
        "cpu": cpu,
        "clock_ns": clock,
        "wake_write": percentiles(&times),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_of_a_sleeping_thread_is_read() {
        // SAFETY: gettid has no arguments and cannot fail.
        let me = unsafe { libc::gettid() };
        assert_eq!(thread_state(me), Some(b'R'));
        assert_eq!(thread_state(-1), None);
    }

    #[test]
    fn a_small_probe_times_waking_writes() {
        // The SCHED_IDLE reader gets the CPU only when nothing else wants
        // it; with the test suite's other threads on that CPU it may not,
        // and the probe says so instead of timing writes that wake no one.
        match run(&crate::args::parse("wakecost:count=20,gap=300us").unwrap()) {
            Ok(doc) => {
                assert_eq!(doc["count"].as_u64(), Some(20));
                let p10 = doc["wake_write"]["p10_ns"].as_u64().unwrap();
                let p50 = doc["wake_write"]["p50_ns"].as_u64().unwrap();
                assert!(p10 > 0 && p10 <= p50 && p50 < 10_000_000, "{doc}");
            }
            Err(WlError::Sys(msg)) => assert!(msg.contains("a busy machine?"), "{msg}"),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn bad_arguments_are_refused() {
        for spec in ["wakecost:count=0", "wakecost:gap=1us", "wakecost:gap=soon", "wakecost:cpus=2"] {
            let bad = run(&crate::args::parse(spec).unwrap()).unwrap_err();
            assert!(matches!(bad, WlError::Bad(_)), "{spec}: {bad:?}");
        }
    }
}
