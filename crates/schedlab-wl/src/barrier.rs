//! `barrier`: `threads` threads each run `delay` of work per iteration and
//! then meet at a barrier, `iterations` times (EPCC syncbench's barrier
//! test). The barrier is libgomp's shape: an arrival counter and a
//! generation word; the last thread in bumps the generation and wakes the
//! others with `FUTEX_WAKE`; the others spin on the generation for `spin`
//! (GOMP_SPINCOUNT's role) and then sleep in `FUTEX_WAIT`; with
//! `wait_policy=active` they only spin (OMP_WAIT_POLICY=active). Threads
//! `wl-bar<N>`. Metric: iterations per second.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::args::{futex, spawn, Spec, WlError};
use crate::clock::spin_ns;

pub(crate) const SUMMARY: &str =
    "threads running a small work loop and meeting at an OpenMP-style barrier (spin, then futex): iterations/s";

struct Gate {
    arrived: AtomicU32,
    generation: AtomicU32,
    parties: u32,
}

impl Gate {
    fn wait(&self, spin: Duration, active: bool) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(gen.wrapping_add(1), Ordering::Release);
            futex(&self.generation, libc::FUTEX_WAKE, i32::MAX as u32);
            return;
        }
        let until = Instant::now() + spin;
        while self.generation.load(Ordering::Acquire) == gen {
            if !active && Instant::now() >= until {
                futex(&self.generation, libc::FUTEX_WAIT, gen);
            } else {
                std::hint::spin_loop();
            }
            if crate::stopping() {
                return;
            }
        }
    }
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let threads = s.count("threads", 4, 1, 10_000)? as u32;
    let iterations = s.count("iterations", 10_000, 1, 1_000_000_000)?;
    let delay_ns = s.duration("delay", 10_000, 1_000)?;
    let spin = Duration::from_nanos(s.duration("spin", 100_000, 1_000)?);
    let active = s.choice("wait_policy", &["passive", "active"])? == "active";
    s.finish()?;
    let gate = Arc::new(Gate { arrived: AtomicU32::new(0), generation: AtomicU32::new(0), parties: threads });
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for t in 0..threads {
        let gate = Arc::clone(&gate);
        hs.push(spawn(format!("wl-bar{t}"), move || {
            for _ in 0..iterations {
                if crate::stopping() {
                    // Let the others out of the barrier.
                    gate.generation.fetch_add(1, Ordering::AcqRel);
                    futex(&gate.generation, libc::FUTEX_WAKE, i32::MAX as u32);
                    return;
                }
                spin_ns(delay_ns);
                gate.wait(spin, active);
            }
        })?);
    }
    for h in hs {
        let _ = h.join();
    }
    let secs = t0.elapsed().as_secs_f64();
    Ok(json!({
        "family": "barrier",
        "threads": threads,
        "iterations": iterations,
        "completion_time_s": secs,
        "iterations_per_s": iterations as f64 / secs,
    }))
}
