//! `pipe`: two threads ping-ponging one byte over two pipes, as
//! `perf bench sched pipe` does (tools/perf/bench/sched-pipe.c: each side
//! writes to its peer's pipe, then blocks reading its own). Threads
//! `wl-pipe-a` and `wl-pipe-b`. Metric: microseconds per round trip
//! (`usecs/op` in perf's output) and the completion time.

use serde_json::json;

use crate::args::{channel, close, read_exact, spawn, write_all, Spec, WlError};
use crate::clock::secs_since;

pub(crate) const SUMMARY: &str = "two threads ping-ponging over two pipes (perf bench sched pipe): us per op";

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let loops = s.count("loops", 1_000_000, 1, 1_000_000_000)?;
    // The simulated family's spelling (thread|process) and the older one
    // this program first took (threads|processes).
    let mode = s.choice("mode", &["thread", "threads", "process", "processes"])?;
    // The ring of the simulated family, natively only its classic 2.
    s.count("tasks", 2, 2, 2)?;
    // The simulation's own cost and footprint keys describe what a real run
    // simply has.
    s.ignore(&["write", "read", "footprint"]);
    s.finish()?;
    if mode.starts_with("process") {
        return Err(WlError::Bad("pipe: mode=process is not available natively yet; use mode=thread".into()));
    }
    let (a_read, b_write) = channel(false)?;
    let (b_read, a_write) = channel(false)?;
    let t0 = std::time::Instant::now();
    let b = spawn("wl-pipe-b".into(), move || {
        let mut byte = [0u8; 1];
        for _ in 0..loops {
            if !read_exact(b_read, &mut byte) || !write_all(b_write, &byte) {
                break;
            }
        }
    })?;
    let a = spawn("wl-pipe-a".into(), move || {
        let mut byte = [0u8; 1];
        for i in 0..loops {
            if (i & 1023) == 0 && crate::stopping() {
                break;
            }
            if !write_all(a_write, &byte) || !read_exact(a_read, &mut byte) {
                break;
            }
        }
        // Unblock b if we stopped early.
        close(a_write);
    })?;
    let _ = a.join();
    let _ = b.join();
    let secs = secs_since(t0);
    for fd in [a_read, b_write, b_read] {
        close(fd);
    }
    Ok(json!({
        "family": "pipe",
        "loops": loops,
        "completion_time_s": secs,
        "usecs_per_op": secs * 1e6 / loops as f64,
    }))
}
