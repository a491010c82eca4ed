//! `periodic`: `count` threads, each running `runtime` of work every
//! `period` (released at absolute times with `clock_nanosleep`, as rt-app
//! and cyclictest do) for `duration`; SCHED_FIFO at `priority` when given
//! (needs CAP_SYS_NICE). Threads `wl-per<N>`. Metrics: the worst lateness of
//! a release (how late a period's work started) and the periods whose work
//! ended after the next release.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::args::{spawn, Spec, WlError};
use crate::clock::{mono_ns, sleep_until_ns, spin_ns};

pub(crate) const SUMMARY: &str = "threads running runtime every period (optionally SCHED_FIFO): lateness and misses";

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let count = s.count("count", 1, 1, 10_000)?;
    let period = s.duration("period", 10_000_000, 1_000_000)?.max(1_000);
    let runtime = s.duration("runtime", 1_000_000, 1_000_000)?;
    let duration = s.duration("duration", 1_000_000_000, 1_000_000_000)?;
    let priority = s.count("priority", 0, 0, 99)?;
    s.ignore(&["policy", "cpus"]);
    s.finish()?;
    if runtime >= period {
        return Err(WlError::Bad("periodic: runtime must be shorter than period".into()));
    }
    let worst = Arc::new(AtomicU64::new(0));
    let misses = Arc::new(AtomicU64::new(0));
    let start = mono_ns() + 10_000_000;
    let mut hs = Vec::new();
    for t in 0..count {
        let (worst, misses) = (Arc::clone(&worst), Arc::clone(&misses));
        hs.push(spawn(format!("wl-per{t}"), move || {
            if priority > 0 {
                let param = libc::sched_param { sched_priority: priority as i32 };
                // SAFETY: setting this thread's own policy with a valid param.
                unsafe {
                    libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
                }
            }
            let mut release = start;
            while release < start + duration && !crate::stopping() {
                sleep_until_ns(release);
                let began = mono_ns();
                worst.fetch_max(began.saturating_sub(release), Ordering::Relaxed);
                spin_ns(runtime);
                release += period;
                if mono_ns() > release {
                    misses.fetch_add(1, Ordering::Relaxed);
                }
            }
        })?);
    }
    for h in hs {
        let _ = h.join();
    }
    Ok(json!({
        "family": "periodic",
        "count": count,
        "max_lateness_us": worst.load(Ordering::Relaxed) as f64 / 1e3,
        "deadline_misses": misses.load(Ordering::Relaxed),
    }))
}
