//! `stalls`: a probe, not a workload. One thread per allowed CPU, pinned,
//! reads `CLOCK_MONOTONIC` in a loop for `duration` and records every gap
//! between two reads longer than `threshold`: time its CPU did not run it.
//! On a real CPU those are interrupts and the odd kernel thread (tens of us);
//! in a virtual machine without steal time they are also the host
//! descheduling the vCPU (milliseconds under QEMU TCG on a busy host), which
//! the guest kernel charges to whatever task ran. With every CPU busy, as in
//! a saturated benchmark, the figures are what `schedlab calibrate` turns
//! into the `stall` noise family's `interval` and `duration`.
//!
//! Metric: per CPU and in all, the gaps' count, total and mean (ns), and
//! the rate (gaps per second of the probe's run on that CPU).

use serde_json::json;

use crate::args::{Spec, WlError};
use crate::clock::mono_ns;

pub(crate) const SUMMARY: &str =
    "probe: gaps in a spinning thread's clock on each CPU, the CPU's stalls (schedlab calibrate)";

/// One CPU's gaps: (count, total ns, longest ns).
fn spin(cpu: usize, duration_ns: u64, threshold_ns: u64) -> Result<(u64, u64, u64), WlError> {
    crate::args::pin_to(cpu)?;
    let (mut n, mut total, mut longest) = (0u64, 0u64, 0u64);
    let start = mono_ns();
    let mut last = start;
    while last - start < duration_ns && !crate::stopping() {
        let now = mono_ns();
        let gap = now - last;
        if gap > threshold_ns {
            n += 1;
            total += gap;
            longest = longest.max(gap);
        }
        last = now;
    }
    Ok((n, total, longest))
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let duration_ns = s.duration_within("duration", 2_000_000_000, 1_000_000, (10_000_000, 600_000_000_000))?;
    let threshold_ns = s.duration_within("threshold", 500_000, 1_000, (1_000, 1_000_000_000))?;
    s.finish()?;
    let cpus = crate::args::allowed_cpus()?;
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            std::thread::Builder::new()
                .name(format!("wl-stalls-{cpu}"))
                .spawn(move || spin(cpu, duration_ns, threshold_ns))
                .map_err(|e| WlError::Sys(format!("thread wl-stalls-{cpu}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let mut per_cpu = Vec::new();
    let (mut n, mut total, mut longest) = (0u64, 0u64, 0u64);
    for (h, &cpu) in handles.into_iter().zip(&cpus) {
        let (c, t, l) = h.join().map_err(|_| WlError::Sys("stalls: a probe thread panicked".into()))??;
        per_cpu.push(json!({"cpu": cpu, "gaps": c, "total_ns": t, "longest_ns": l}));
        n += c;
        total += t;
        longest = longest.max(l);
    }
    let cpu_s = duration_ns as f64 / 1e9 * cpus.len() as f64;
    Ok(json!({
        "family": "stalls",
        "duration_ns": duration_ns,
        "threshold_ns": threshold_ns,
        "cpus": cpus.len(),
        "gaps": n,
        "total_ns": total,
        "mean_ns": total.checked_div(n).unwrap_or(0),
        "longest_ns": longest,
        "per_s": n as f64 / cpu_s,
        "stalled_fraction": total as f64 / (cpu_s * 1e9),
        "per_cpu": per_cpu,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_probe_reports_every_allowed_cpu() {
        let doc = crate::run("stalls:duration=20ms,threshold=1s").unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["family"], "stalls");
        let cpus = crate::args::allowed_cpus().unwrap().len() as u64;
        assert_eq!(v["cpus"].as_u64(), Some(cpus));
        assert_eq!(v["per_cpu"].as_array().unwrap().len() as u64, cpus);
        // A 1 s threshold over a 20 ms run: no gap can qualify.
        assert_eq!(v["gaps"].as_u64(), Some(0));
        assert_eq!(v["stalled_fraction"].as_f64(), Some(0.0));
    }

    #[test]
    fn bad_keys_are_refused() {
        for spec in ["stalls:duration=1ms", "stalls:threshold=0", "stalls:nope=1"] {
            assert!(matches!(crate::run(spec), Err(WlError::Bad(_))), "{spec}");
        }
    }
}
