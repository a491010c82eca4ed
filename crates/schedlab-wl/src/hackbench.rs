//! `hackbench`: groups of `fds` senders and `fds` receivers; each sender
//! writes `loops` messages of `datasize` bytes to every receiver of its
//! group, round-robin, and each receiver reads `loops * fds` messages
//! (rt-tests hackbench.c, `perf bench sched messaging`). Unix stream sockets
//! by default, pipes with `ipc=pipe`. Threads `wl-hb-s<G>.<N>` and
//! `wl-hb-r<G>.<N>`. As hackbench, every thread waits at a start gate and the
//! clock starts when all are ready. Metric: completion time.

use std::sync::{Arc, Barrier};

use serde_json::json;

use crate::args::{channel, close, read_exact, spawn, write_all, Spec, WlError};

pub(crate) const SUMMARY: &str =
    "groups of fds senders writing loops messages to each of fds receivers (pipes or sockets): completion time";

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let groups = s.count("groups", 10, 1, 10_000)?;
    let fds = s.count("fds", 20, 1, 1_000)?;
    let loops = s.count("loops", 100, 1, 100_000_000)?;
    let ipc = s.choice("ipc", &["socket", "pipe"])?;
    let mode = s.choice("mode", &["thread", "process"])?;
    let datasize = s.count("datasize", 100, 1, 4096)? as usize;
    // The simulation's own cost and footprint keys describe what a real run
    // simply has.
    s.ignore(&["buf", "write", "read", "footprint"]);
    s.finish()?;
    if mode == "process" {
        return Err(WlError::Bad("hackbench: mode=process is not available natively yet; use mode=thread".into()));
    }
    let n = (groups * fds * 2) as usize;
    let gate = Arc::new(Barrier::new(n + 1));
    let mut handles = Vec::with_capacity(n);
    let mut to_close = Vec::new();
    for g in 0..groups {
        let mut writers = Vec::with_capacity(fds as usize);
        for r in 0..fds {
            let (rd, wr) = channel(ipc == "socket")?;
            writers.push(wr);
            to_close.push(wr);
            let gate = Arc::clone(&gate);
            let msgs = loops * fds;
            handles.push(spawn(format!("wl-hb-r{g}.{r}"), move || {
                let mut buf = vec![0u8; datasize];
                gate.wait();
                for _ in 0..msgs {
                    if !read_exact(rd, &mut buf) {
                        break;
                    }
                }
                close(rd);
            })?);
        }
        let writers = Arc::new(writers);
        for sdr in 0..fds {
            let gate = Arc::clone(&gate);
            let writers = Arc::clone(&writers);
            handles.push(spawn(format!("wl-hb-s{g}.{sdr}"), move || {
                let buf = vec![0u8; datasize];
                gate.wait();
                'out: for i in 0..loops {
                    if (i & 63) == 0 && crate::stopping() {
                        break;
                    }
                    for &w in writers.iter() {
                        if !write_all(w, &buf) {
                            break 'out;
                        }
                    }
                }
            })?);
        }
    }
    gate.wait();
    let t0 = std::time::Instant::now();
    let mut stopped = false;
    for (i, h) in handles.into_iter().enumerate() {
        // Once stopping, closing the write ends lets receivers see EOF.
        if crate::stopping() && !stopped {
            stopped = true;
            for &w in &to_close {
                close(w);
            }
        }
        let _ = (i, h.join());
    }
    let secs = t0.elapsed().as_secs_f64();
    if !stopped {
        for w in to_close {
            close(w);
        }
    }
    Ok(json!({ "family": "hackbench", "groups": groups, "fds": fds, "loops": loops, "completion_time_s": secs }))
}
