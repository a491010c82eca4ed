//! `workqueue`: a manager hands `chunks` CPU-bound chunks of `chunk` each to
//! `threads` workers; a worker asks for a chunk over a shared request pipe,
//! gets it on its own reply pipe, computes it, and asks again (SEEDS idea 2's
//! program, the simulated `workqueue` family). Threads `wl-wq-mgr` and
//! `wl-wq-w<N>`. Metric: completion time. `pin=split` puts the manager on
//! CPU 0 and worker N on CPU 1 + N (every wakeup crosses CPUs); `pin=same`
//! puts everyone on CPU 0 (every wakeup stays on one CPU): the probes of
//! `schedlab calibrate`. The default, `none`, leaves placement to the kernel.
//! Under `pin=split` the manager also times each reply `write()`, which
//! wakes a worker blocked on another, idle CPU (the worker asked, then read:
//! it has blocked long before the manager, woken across CPUs by the request,
//! answers): `reply_write_ns`, the waker's side of a wakeup with its IPI, the
//! in-situ cost `calibrate` reads for `cost.wakeup_ns`. `pin=busy` is
//! `split` with a `SCHED_IDLE` spinner (`wl-wq-spin`) on the workers' CPU,
//! so every reply wakes a worker on a busy CPU, which the wakee preempts at
//! once (a normal task always preempts a `SCHED_IDLE` one): the wakeup's
//! flight to a running CPU, with no idle exit, for `calibrate`'s `ipi_ns`.

use serde_json::json;

use crate::args::{channel, close, read_exact, spawn, write_all, Spec, WlError};
use crate::clock::{mono_ns, spin_ns};

pub(crate) const SUMMARY: &str =
    "a manager handing chunks of CPU-bound work to worker threads over pipes: completion time";

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let threads = s.count("threads", 4, 1, 100_000)?;
    let chunks = s.count("chunks", 10_000, 1, 1_000_000_000)?;
    let chunk_ns = s.duration("chunk", 5_000_000, 1_000_000)?;
    let pin = s.choice("pin", &["none", "split", "same", "busy"])?;
    s.ignore(&["jitter", "write", "read", "footprint"]);
    s.finish()?;
    // Pinning uses the CPUs this process may run on: the manager the first,
    // the workers the others (split) or the first too (same).
    let cpus = crate::args::allowed_cpus()?;
    if (pin == "split" || pin == "busy") && cpus.len() < 2 {
        return Err(WlError::Bad(format!("workqueue: pin={pin} needs at least 2 CPUs")));
    }
    let cpu_of_worker = |w: u64| -> Option<usize> {
        match pin.as_str() {
            "split" => Some(cpus[1 + (w as usize) % (cpus.len() - 1)]),
            "busy" => Some(cpus[1]),
            "same" => Some(cpus[0]),
            _ => None,
        }
    };
    let mgr_cpu = (pin != "none").then_some(cpus[0]);
    let time_replies = pin == "split";
    let (times_tx, times_rx) = std::sync::mpsc::channel::<Vec<u64>>();
    let stop_spin = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = if pin == "busy" {
        let (stop, cpu) = (stop_spin.clone(), cpus[1]);
        Some(spawn("wl-wq-spin".into(), move || {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: policy change of the calling thread with a valid param.
            let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
            if !idle || crate::args::pin_to(cpu).is_err() {
                return;
            }
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })?)
    } else {
        None
    };
    let (req_rd, req_wr) = channel(false)?;
    let mut replies = Vec::with_capacity(threads as usize);
    let mut workers = Vec::with_capacity(threads as usize);
    let t0 = std::time::Instant::now();
    for w in 0..threads {
        let (rd, wr) = channel(false)?;
        replies.push(wr);
        let cpu = cpu_of_worker(w);
        workers.push(spawn(format!("wl-wq-w{w}"), move || {
            if let Some(c) = cpu {
                if crate::args::pin_to(c).is_err() {
                    return;
                }
            }
            let id = (w as u32).to_le_bytes();
            let mut reply = [0u8; 8];
            loop {
                if !write_all(req_wr, &id) || !read_exact(rd, &mut reply) {
                    break;
                }
                if u64::from_le_bytes(reply) == u64::MAX {
                    break;
                }
                spin_ns(chunk_ns);
            }
            close(rd);
        })?);
    }
    let mgr = spawn("wl-wq-mgr".into(), move || {
        if let Some(c) = mgr_cpu {
            if crate::args::pin_to(c).is_err() {
                return;
            }
        }
        let (mut given, mut done) = (0u64, 0u64);
        let mut id = [0u8; 4];
        let mut reply_ns = Vec::with_capacity(if time_replies { (chunks + threads) as usize } else { 0 });
        while done < threads {
            if !read_exact(req_rd, &mut id) {
                break;
            }
            let w = u32::from_le_bytes(id) as usize;
            let msg = if given < chunks && !crate::stopping() {
                given += 1;
                given - 1
            } else {
                done += 1;
                u64::MAX
            };
            let t0 = if time_replies { mono_ns() } else { 0 };
            if !write_all(replies[w], &msg.to_le_bytes()) {
                break;
            }
            if time_replies {
                reply_ns.push(mono_ns().saturating_sub(t0));
            }
        }
        for r in replies {
            close(r);
        }
        let _ = times_tx.send(reply_ns);
    })?;
    let _ = mgr.join();
    for w in workers {
        let _ = w.join();
    }
    stop_spin.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(sp) = spinner {
        let _ = sp.join();
    }
    let secs = t0.elapsed().as_secs_f64();
    close(req_rd);
    close(req_wr);
    let mut doc = json!({ "family": "workqueue", "threads": threads, "chunks": chunks, "completion_time_s": secs });
    if let Some(mut ns) = times_rx.try_recv().ok().filter(|v| !v.is_empty()) {
        ns.sort_unstable();
        let mut reply = crate::pipecost::percentiles(&ns);
        reply["n"] = json!(ns.len());
        doc["reply_write_ns"] = reply;
    }
    Ok(doc)
}
