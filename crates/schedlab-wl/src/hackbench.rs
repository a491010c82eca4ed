//! `hackbench`: groups of `fds` senders and `fds` receivers; each sender
//! writes `loops` messages of `datasize` bytes to every receiver of its
//! group, round-robin, and each receiver reads `loops * fds` messages
//! (rt-tests hackbench.c, `perf bench sched messaging`). Unix stream sockets
//! by default, pipes with `ipc=pipe`. Threads `wl-hb-s<G>.<N>` and
//! `wl-hb-r<G>.<N>`. As hackbench, every thread waits at a start gate and the
//! clock starts when all are ready. Metric: completion time.
//!
//! The gate is hackbench.c's `ready()`: a thread writes one byte to a ready
//! pipe and `poll()`s a wake pipe; the main thread reads one byte per thread,
//! starts the clock and writes one byte to the wake pipe, whose single
//! `pipe_write` wakes every poller (poll's wait-queue entries are not
//! exclusive). An earlier version waited on `std::sync::Barrier` (a mutex and
//! a condition variable): `notify_all` wakes every waiter, but each must then
//! take the mutex, and the waiters that found it held were released one
//! `futex_wake` at a time, each waiting for a CPU before it could release the
//! next. On the 2-vCPU host that hand-off chain spread the threads' starts
//! over 40-90 ms of a 70-134 ms run (docs/validation.md), which the simulated
//! family (every thread released at once) does not have.

use std::sync::Arc;

use serde_json::json;

use crate::args::{channel, close, read_exact, spawn, sys, write_all, Spec, WlError};

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
    let gate = Arc::new(Gate::new()?);
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
    gate.wait_ready(n)?;
    // hackbench.c reads the clock before it writes the start byte.
    let t0 = std::time::Instant::now();
    gate.release()?;
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

/// hackbench.c's start gate: a ready pipe the threads report on and a wake
/// pipe they poll; closed when the last holder drops it.
struct Gate {
    ready: (libc::c_int, libc::c_int),
    wake: (libc::c_int, libc::c_int),
}

impl Gate {
    fn new() -> Result<Self, WlError> {
        Ok(Gate { ready: channel(false)?, wake: channel(false)? })
    }

    /// `ready()`: report ready, then block in `poll()` until the wake pipe is
    /// readable. The byte stays in the pipe, so every poller sees it.
    fn wait(&self) {
        if !write_all(self.ready.1, b"R") {
            return;
        }
        let mut pfd = libc::pollfd { fd: self.wake.0, events: libc::POLLIN, revents: 0 };
        loop {
            // SAFETY: `pfd` is one valid pollfd for the duration of the call.
            let rc = unsafe { libc::poll(&mut pfd, 1, -1) };
            if rc == 1 || (rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted) {
                return;
            }
        }
    }

    /// The main thread: wait until `parties` threads reported ready
    /// (hackbench.c's loop reading `readyfds[0]`).
    fn wait_ready(&self, parties: usize) -> Result<(), WlError> {
        let mut byte = [0u8; 1];
        for _ in 0..parties {
            if !read_exact(self.ready.0, &mut byte) {
                return Err(sys("hackbench: reading the ready pipe"));
            }
        }
        Ok(())
    }

    /// The main thread: release every waiter with one write
    /// (hackbench.c's `write(wakefds[1], &dummy, 1)`).
    fn release(&self) -> Result<(), WlError> {
        if !write_all(self.wake.1, b"G") {
            return Err(sys("hackbench: writing the wake pipe"));
        }
        Ok(())
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        for fd in [self.ready.0, self.ready.1, self.wake.0, self.wake.1] {
            close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One write releases every waiter: none is left behind a hand-off.
    #[test]
    fn one_write_releases_every_waiter() {
        let gate = Arc::new(Gate::new().unwrap());
        let passed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (g, p) = (Arc::clone(&gate), Arc::clone(&passed));
                std::thread::spawn(move || {
                    g.wait();
                    p.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        gate.wait_ready(8).unwrap();
        assert_eq!(passed.load(std::sync::atomic::Ordering::SeqCst), 0, "nobody passes before the start byte");
        gate.release().unwrap();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(passed.load(std::sync::atomic::Ordering::SeqCst), 8);
        // The wake byte is still there for a late poller.
        let mut pfd = libc::pollfd { fd: gate.wake.0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; a zero timeout does not block.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 1);
    }
}
