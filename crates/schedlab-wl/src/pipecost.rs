//! `pipecost`: a probe, not a workload (no simulated counterpart). One
//! thread times `count` small pipe writes and as many reads on a pipe of
//! its own, so that no write wakes a reader and no read waits: the CPU cost
//! of the syscalls alone, what the machine's `cost.pipe_write_ns` and
//! `cost.pipe_read_ns` price (the engine adds the wakeups). Writes and reads
//! alternate in batches of `batch` (the batch's bytes stay well inside the
//! pipe's 16 pages, so a write never blocks); each batch is timed as a
//! whole, which keeps the clock reads out of the per-call figure. Thread
//! `wl-pipecost`. Metric: the median, p10 and p90 over batches of the mean
//! ns per write and per read.

use serde_json::json;

use crate::args::{channel, close, read_exact, sys, write_all, Spec, WlError};
use crate::clock::mono_ns;

pub(crate) const SUMMARY: &str =
    "probe: ns per small pipe write and per read on one thread, nobody woken (schedlab calibrate)";

/// Quantile `q` (0..=1) of sorted `v`, nearest rank (the probes' figures).
pub(crate) fn quantile<T: Copy>(v: &[T], q: f64) -> T {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The probes' summary of sorted `v`: `p10_ns`, `p50_ns` and `p90_ns`.
pub(crate) fn percentiles<T: Copy + Into<serde_json::Value>>(v: &[T]) -> serde_json::Value {
    let q = |f: f64| -> serde_json::Value { quantile(v, f).into() };
    json!({"p10_ns": q(0.1), "p50_ns": q(0.5), "p90_ns": q(0.9)})
}

fn summary(mut per_op: Vec<f64>) -> serde_json::Value {
    per_op.sort_by(f64::total_cmp);
    let mut doc = percentiles(&per_op);
    doc["batches"] = json!(per_op.len());
    doc
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let count = s.count("count", 100_000, 1, 1_000_000_000)?;
    let size = s.count("size", 4, 1, 4096)? as usize;
    let batch = s.count("batch", 256, 1, 100_000)?;
    s.finish()?;
    // 16 pages of 4 KiB: a batch must fit or the writer would block on itself.
    if size as u64 * batch > 32 * 1024 {
        return Err(WlError::Bad("pipecost: batch: expected size*batch of at most 32768 bytes".into()));
    }
    let (rd, wr) = channel(false)?;
    let probe = move || -> Result<(Vec<f64>, Vec<f64>, u64), WlError> {
        let mut buf = vec![0u8; size];
        let (mut writes, mut reads) = (Vec::new(), Vec::new());
        let mut done = 0;
        while done < count && !crate::stopping() {
            let n = batch.min(count - done);
            let t0 = mono_ns();
            for _ in 0..n {
                if !write_all(wr, &buf) {
                    return Err(sys("pipecost: write"));
                }
            }
            let t1 = mono_ns();
            for _ in 0..n {
                if !read_exact(rd, &mut buf) {
                    return Err(sys("pipecost: read"));
                }
            }
            let t2 = mono_ns();
            writes.push((t1 - t0) as f64 / n as f64);
            reads.push((t2 - t1) as f64 / n as f64);
            done += n;
        }
        Ok((writes, reads, done))
    };
    let joined = std::thread::Builder::new()
        .name("wl-pipecost".into())
        .spawn(probe)
        .map_err(|e| WlError::Sys(format!("thread wl-pipecost: {e}")))?
        .join();
    close(rd);
    close(wr);
    let (writes, reads, done) = joined.map_err(|_| WlError::Sys("pipecost: the probe thread panicked".into()))??;
    if writes.is_empty() {
        return Err(WlError::Sys("pipecost: stopped before the first batch".into()));
    }
    Ok(json!({
        "family": "pipecost",
        "count": done,
        "size": size,
        "batch": batch,
        "write": summary(writes),
        "read": summary(reads),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!((quantile(&v, 0.1), quantile(&v, 0.5), quantile(&v, 0.9)), (1.0, 5.0, 9.0));
        assert_eq!(quantile(&[4.0], 0.9), 4.0);
    }

    #[test]
    fn a_small_probe_times_both_calls() {
        let doc = run(&crate::args::parse("pipecost:count=600,batch=100").unwrap()).unwrap();
        assert_eq!((doc["count"].as_u64(), doc["write"]["batches"].as_u64()), (Some(600), Some(6)));
        for k in ["write", "read"] {
            let p50 = doc[k]["p50_ns"].as_f64().unwrap();
            assert!(p50 > 0.0 && p50 < 1e6, "{k}: {p50} ns");
        }
        let bad = run(&crate::args::parse("pipecost:size=4096,batch=100").unwrap()).unwrap_err();
        assert_eq!(bad, WlError::Bad("pipecost: batch: expected size*batch of at most 32768 bytes".into()));
    }
}
