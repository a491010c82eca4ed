//! `refillcost`: a probe, not a workload (no simulated counterpart). It
//! times what a task's cache footprint costs to refill after the task moves
//! to another CPU, and after the caches lost it: what the machine's
//! `cost.refill_ns_per_kib` prices per KiB of footprint and distance moved.
//!
//! One thread (`wl-refillcost`) owns a buffer of `kib` KiB and touches one
//! 8-byte word per 64-byte line in a fixed shuffled order (a seeded
//! permutation, so that no prefetcher streams it). A timed pass reads, and
//! its loads do not depend on each other, so the core keeps several misses
//! in flight, as a task refilling its working set after a move does. Each
//! round:
//! 1. on CPU `from`, a pass that writes every line (its copies in other
//!    CPUs' caches are invalidated: the footprint is this CPU's, dirty), then
//!    a timed read pass: *warm*;
//! 2. it moves to CPU `to` (`sched_setaffinity`, which returns on the new
//!    CPU) and times one read pass there: *moved*, the footprint fetched from
//!    wherever `to` finds it (the shared cache, or `from`'s caches); then a
//!    second timed pass there, *warm there* (on a machine whose CPUs differ
//!    in speed, the move's refill is what *moved* takes beyond it);
//! 3. back on `from`, after a write pass, it reads `evict` KiB of another
//!    buffer and times a read pass: *evicted*, what that pushed out refilled
//!    (from memory when `evict` exceeds the LLC).
//!
//! Metric: p10, p50 and p90 over rounds of each pass's ns, and per KiB the
//! medians over rounds of (moved - warm there) / kib and (evicted - warm) / kib,
//! which `schedlab calibrate` writes as the refill cost at `from`-`to`'s
//! distance and as memory's.

use serde_json::json;

use crate::args::{allowed_cpus, pin_to, Spec, WlError};
use crate::clock::mono_ns;
use crate::pipecost::{percentiles, quantile};

pub(crate) const SUMMARY: &str =
    "probe: ns to refill a task's footprint after a move between two CPUs and after eviction (schedlab calibrate)";

/// Words per 64-byte line.
const LINE_WORDS: usize = 8;

/// The lines of a buffer of `lines` lines in a fixed shuffled order
/// (Fisher-Yates over a xorshift stream with a fixed seed: the same order on
/// every run).
fn shuffled(lines: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// Reads one word of every line in `order`; the loads are independent.
fn read_pass(buf: &[u64], order: &[u32]) -> u64 {
    let mut sum = 0u64;
    for &l in order {
        sum = sum.wrapping_add(buf[l as usize * LINE_WORDS]);
    }
    std::hint::black_box(sum)
}

/// Writes one word of every line in `order` (the lines become this CPU's, dirty).
fn write_pass(buf: &mut [u64], order: &[u32]) {
    for &l in order {
        let w = &mut buf[l as usize * LINE_WORDS];
        *w = w.wrapping_add(1);
    }
    std::hint::black_box(&buf);
}

/// ns of one timed read pass.
fn timed(buf: &[u64], order: &[u32]) -> u64 {
    let t0 = mono_ns();
    read_pass(std::hint::black_box(buf), order);
    mono_ns() - t0
}

fn summary(mut v: Vec<u64>) -> serde_json::Value {
    v.sort_unstable();
    percentiles(&v)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let allowed = allowed_cpus()?;
    let kib = s.count("kib", 256, 4, 1 << 20)? as usize;
    let evict_kib = s.count("evict", 128 * 1024, 4, 1 << 24)? as usize;
    let rounds = s.count("rounds", 100, 1, 100_000)?;
    let from = s.count("from", allowed.first().copied().unwrap_or(0) as u64, 0, 65_535)? as usize;
    let to = s.count("to", allowed.get(1).copied().unwrap_or(from) as u64, 0, 65_535)? as usize;
    s.finish()?;
    if from == to {
        return Err(WlError::Bad(format!(
            "refillcost: to: expected a CPU other than from ({from}); this process may use CPUs {allowed:?}"
        )));
    }
    for (key, cpu) in [("from", from), ("to", to)] {
        if !allowed.contains(&cpu) {
            return Err(WlError::Bad(format!(
                "refillcost: {key}: expected a CPU this process may use ({allowed:?}), got {cpu}"
            )));
        }
    }
    let probe = move || -> Result<[Vec<u64>; 4], WlError> {
        let order = shuffled(kib * 1024 / 64);
        let mut buf = vec![0u64; kib * 1024 / 8];
        let evict_order: Vec<u32> = (0..(evict_kib * 1024 / 64) as u32).collect();
        let evict = vec![1u64; evict_kib * 1024 / 8];
        let [mut warm, mut moved, mut warm_to, mut evicted] = [(); 4].map(|_| Vec::new());
        for _ in 0..rounds {
            if crate::stopping() {
                break;
            }
            pin_to(from)?;
            write_pass(&mut buf, &order);
            warm.push(timed(&buf, &order));
            pin_to(to)?;
            moved.push(timed(&buf, &order));
            warm_to.push(timed(&buf, &order));
            pin_to(from)?;
            write_pass(&mut buf, &order);
            read_pass(&evict, &evict_order);
            evicted.push(timed(&buf, &order));
        }
        Ok([warm, moved, warm_to, evicted])
    };
    let joined = std::thread::Builder::new()
        .name("wl-refillcost".into())
        .spawn(probe)
        .map_err(|e| WlError::Sys(format!("thread wl-refillcost: {e}")))?
        .join();
    let [warm, moved, warm_to, evicted] =
        joined.map_err(|_| WlError::Sys("refillcost: the probe thread panicked".into()))??;
    if warm.is_empty() {
        return Err(WlError::Sys("refillcost: stopped before the first round".into()));
    }
    let per_kib = |v: &[u64], base: &[u64]| {
        median(v.iter().zip(base).map(|(&a, &w)| (a as f64 - w as f64) / kib as f64).collect())
    };
    Ok(json!({
        "family": "refillcost",
        "kib": kib,
        "evict_kib": evict_kib,
        "from": from,
        "to": to,
        "rounds": warm.len(),
        "moved_ns_per_kib": per_kib(&moved, &warm_to),
        "evicted_ns_per_kib": per_kib(&evicted, &warm),
        "warm": summary(warm),
        "moved": summary(moved),
        "warm_there": summary(warm_to),
        "evicted": summary(evicted),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_fixed_permutation() {
        let o = shuffled(1000);
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
        assert_eq!(o, shuffled(1000));
        // Shuffled: few lines keep their place.
        assert!(o.iter().enumerate().filter(|(i, &l)| *i as u32 == l).count() < 20);
    }

    #[test]
    fn a_small_probe_times_four_passes() {
        let cpus = allowed_cpus().unwrap();
        if cpus.len() < 2 {
            eprintln!("skipped: the probe needs two CPUs, this test may use {cpus:?}");
            return;
        }
        let doc = run(&crate::args::parse("refillcost:kib=64,evict=1024,rounds=5").unwrap()).unwrap();
        assert_eq!((doc["rounds"].as_u64(), doc["kib"].as_u64()), (Some(5), Some(64)));
        for k in ["warm", "moved", "warm_there", "evicted"] {
            let p50 = doc[k]["p50_ns"].as_u64().unwrap();
            assert!(p50 > 0 && p50 < 100_000_000, "{k}: {p50} ns");
        }
        assert!(doc["moved_ns_per_kib"].is_f64() && doc["evicted_ns_per_kib"].is_f64());
    }

    #[test]
    fn one_cpu_twice_is_refused() {
        let cpu = allowed_cpus().unwrap()[0];
        let e = run(&crate::args::parse(&format!("refillcost:from={cpu},to={cpu}")).unwrap()).unwrap_err();
        assert!(matches!(e, WlError::Bad(ref m) if m.starts_with("refillcost: to: expected a CPU other than from")));
        let e = run(&crate::args::parse("refillcost:from=0,to=65535").unwrap()).unwrap_err();
        assert!(matches!(e, WlError::Bad(ref m) if m.contains("to: expected a CPU this process may use")), "{e:?}");
    }
}
