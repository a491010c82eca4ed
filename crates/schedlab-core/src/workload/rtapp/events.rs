//! Compiling an rt-app phase's events to ops, as rt-app's `run_event`
//! performs them (see the table in `mod.rs`).

use super::json::JVal;
use super::{intern, Builder, IO_WRITE_NS, MEM_BYTES_PER_US, NS_PER_US};
use crate::error::Result;
use crate::ids::Ns;
use crate::workload::ops::{Op, OpsBuilder};
use crate::workload::Dist;

impl Builder<'_> {
    /// The `ref` and `mutex` strings of a `wait`/`sync` object.
    fn cond_and_mutex(&mut self, path: &str, v: &JVal) -> Result<(u32, u32)> {
        let JVal::Obj(items) = v else { return Err(self.e(path, "an object {\"ref\": cond, \"mutex\": mutex}")) };
        let (mut r, mut m) = (None, None);
        for (k, x) in items {
            match k.as_str() {
                "ref" => r = Some(self.string(&format!("{path}.ref"), x)?.to_string()),
                "mutex" => m = Some(self.string(&format!("{path}.mutex"), x)?.to_string()),
                _ => return Err(self.e(&format!("{path}.{k}"), "only ref and mutex")),
            }
        }
        match (r, m) {
            (Some(r), Some(m)) => Ok((intern(&mut self.conds, r), intern(&mut self.mutexes, m))),
            _ => Err(self.e(path, "both ref and mutex")),
        }
    }

    /// The events of one phase, in file order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn events(
        &mut self,
        at: &str,
        thread: &str,
        events: &[(String, JVal)],
        ops: &mut OpsBuilder,
        timers: &mut Vec<(String, u16)>,
        instances: u32,
    ) -> Result<()> {
        use crate::workload::{BarrierId, ChanId, CondId};
        for (k, v) in events {
            let path = format!("{at}.{k}");
            // rt-app matches events by prefix (run0, sleep1 ...), `runtime`
            // before `run`, as its parser table does.
            let kind = EVENTS.iter().find(|e| k.starts_with(*e)).copied().ok_or_else(|| {
                self.e(&path, format!("an rt-app event ({}) or a thread/phase key", EVENTS.join(", ")))
            })?;
            let us = |b: &Self| b.count(&path, v, 0, u64::MAX / NS_PER_US).map(|n| n * NS_PER_US);
            match kind {
                "runtime" => {
                    ops.push(Op::RunFor(us(self)?));
                }
                "run" => {
                    let ns = us(self)?;
                    ops.push(Op::Compute(Dist::Fixed(ns * self.calib_capacity / 1024)));
                }
                "sleep" => {
                    ops.push(Op::Sleep(Dist::Fixed(us(self)?)));
                }
                "mem" => {
                    let bytes = self.count(&path, v, 0, u64::MAX / 1000)?;
                    ops.push(Op::Compute(Dist::Fixed(bytes * 1000 / MEM_BYTES_PER_US)));
                }
                "iorun" => {
                    let bytes = self.count(&path, v, 0, u64::MAX / 2)?;
                    ops.push(Op::Compute(Dist::Fixed(bytes.div_ceil(self.mem_buffer) * IO_WRITE_NS)));
                }
                "lock" | "unlock" => {
                    let name = self.string(&path, v)?;
                    let m = ChanId(intern(&mut self.mutexes, name.to_string()));
                    ops.push(if kind == "lock" { Op::Lock(m) } else { Op::Unlock(m) });
                }
                "signal" | "broad" => {
                    let name = self.string(&path, v)?;
                    let c = CondId(intern(&mut self.conds, name.to_string()));
                    ops.push(Op::Signal { cond: c, all: kind == "broad" });
                }
                "wait" => {
                    let (c, m) = self.cond_and_mutex(&path, v)?;
                    ops.push(Op::CondWait { cond: CondId(c), mutex: Some(ChanId(m)) });
                }
                "sync" => {
                    let (c, m) = self.cond_and_mutex(&path, v)?;
                    ops.push(Op::Signal { cond: CondId(c), all: false });
                    ops.push(Op::CondWait { cond: CondId(c), mutex: Some(ChanId(m)) });
                }
                "suspend" | "resume" => {
                    // An empty name is the thread's own (workgen fills it in).
                    let s = self.string(&path, v)?;
                    let r = if s.is_empty() { thread } else { s };
                    let (c, m) = (
                        CondId(intern(&mut self.conds, r.to_string())),
                        ChanId(intern(&mut self.mutexes, r.to_string())),
                    );
                    ops.push(Op::Lock(m));
                    ops.push(if kind == "suspend" {
                        Op::CondWait { cond: c, mutex: Some(m) }
                    } else {
                        Op::Signal { cond: c, all: true }
                    });
                    ops.push(Op::Unlock(m));
                }
                "barrier" => {
                    let name = self.string(&path, v)?;
                    let b = intern(&mut self.barriers, name.to_string()) as usize;
                    if self.barrier_users.len() <= b {
                        self.barrier_users.resize(b + 1, 0);
                    }
                    // Each thread counts once however often it names the barrier.
                    if !ops.ops().iter().any(|op| matches!(op, Op::Barrier { id, .. } if id.0 as usize == b)) {
                        self.barrier_users[b] += instances;
                    }
                    ops.push(Op::Barrier { id: BarrierId(b as u32), spin: 0 });
                }
                "timer" => {
                    let (name, period, absolute) = self.timer(&path, v)?;
                    let slot = match timers.iter().find(|(n, _)| *n == name) {
                        Some(&(_, s)) => s,
                        None => {
                            let s = ops.timer_slot();
                            timers.push((name.clone(), s));
                            self.use_timer(&name, thread, instances);
                            s
                        }
                    };
                    ops.push(Op::Timer { slot, period, absolute });
                }
                "yield" => {
                    ops.push(Op::Yield);
                }
                "fork" => {
                    // rt-app stops a thread that forks more than 1024 times
                    // (FORKS_LIMIT) with a failure.
                    let n = self.mult.ok_or_else(|| {
                        self.e(&path, "a fork in a thread with a finite loop count: this one forks without bound")
                    })?;
                    if n > 1024 {
                        return Err(self.e(&path, format!("at most 1024 forks (rt-app's FORKS_LIMIT), got {n}")));
                    }
                    let template = self.string(&path, v)?.to_string();
                    let req = self.forks.len() as u32;
                    self.forks.push((template, path.clone(), n));
                    let slot = ops.counter_slot();
                    // `first` is the request's index until the tasks are laid out.
                    ops.push(Op::Spawn { first: crate::ids::TaskId(req), count: n as u32, slot });
                }
                _ => unreachable!("every EVENTS entry is handled"),
            }
        }
        Ok(())
    }

    fn timer(&self, path: &str, v: &JVal) -> Result<(String, Ns, bool)> {
        let JVal::Obj(items) = v else {
            return Err(self.e(path, "an object {\"ref\": name, \"period\": us, \"mode\": relative|absolute}"));
        };
        let (mut name, mut period, mut absolute) = (None, None, false);
        for (k, x) in items {
            let kp = format!("{path}.{k}");
            match k.as_str() {
                "ref" => name = Some(self.string(&kp, x)?.to_string()),
                "period" => period = Some(self.count(&kp, x, 1, u64::MAX / NS_PER_US)? * NS_PER_US),
                "mode" => {
                    absolute = match self.string(&kp, x)? {
                        "relative" => false,
                        "absolute" => true,
                        other => return Err(self.e(&kp, format!("relative or absolute, got '{other}'"))),
                    }
                }
                _ => return Err(self.e(&kp, "only ref, period and mode")),
            }
        }
        match (name, period) {
            (Some(n), Some(p)) => Ok((n, p, absolute)),
            _ => Err(self.e(path, "both ref and period")),
        }
    }

    fn use_timer(&mut self, name: &str, thread: &str, instances: u32) {
        match self.timer_users.iter_mut().find(|(n, _)| n == name) {
            Some((_, users)) => users.push((thread.to_string(), instances)),
            None => self.timer_users.push((name.to_string(), vec![(thread.to_string(), instances)])),
        }
    }

    /// rt-app shares a timer whose name does not start with `unique` among
    /// every thread that names it, each use advancing the one timer; that
    /// sharing is not modelled (each thread here has its own).
    pub(super) fn check_timers(&self) -> Result<()> {
        for (name, users) in &self.timer_users {
            let threads: u32 = users.iter().map(|(_, n)| *n).sum();
            if !name.starts_with("unique") && threads > 1 {
                return Err(self.e(
                    &format!("tasks.{}", users[0].0),
                    format!(
                        "timers of one thread each: timer '{name}' is shared by {threads} threads in rt-app, which \
                         is not modelled; name it 'unique...' for one timer per thread"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// rt-app's events, in the order its parser matches their prefixes.
pub(super) const EVENTS: [&str; 17] = [
    "runtime", "run", "sleep", "mem", "iorun", "lock", "unlock", "signal", "broad", "wait", "sync", "barrier", "timer",
    "resume", "suspend", "yield", "fork",
];
