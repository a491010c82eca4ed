//! The invariant checker (on in tests, optional in runs): after every event,
//! the state must be one the kernel could be in.

use super::task::TaskState;
use super::Sim;
use crate::ids::CpuId;

impl Sim {
    /// Check the invariants; the first violation is returned as text.
    ///
    /// - every runnable task is queued on exactly one runqueue, its own CPU's
    ///   (or is in flight to it: a queued remote wakeup);
    /// - a running task is its CPU's `curr`, runnable, and allowed there;
    /// - blocked and dead tasks are not queued, except delayed entities;
    /// - `nr_running` matches the queued entities;
    /// - PELT utilisation of a task stays within the capacity scale, and a
    ///   runqueue's within what the tasks homed on it can contribute (blocked
    ///   and departed tasks' share decays, so one extra 1024 of slack);
    /// - `nr_busy` counts the CPUs that run a task;
    /// - with an `overcommit` host, each host CPU runs one vCPU, one other
    ///   thread or nothing, and no vCPU waits while one is free;
    /// - with clamps in use, each runqueue's clamp buckets count exactly its
    ///   queued tasks that count (`engine::uclamp`);
    /// - the fair class's own invariants (`Sim::check_fair`: its entities
    ///   and the balance statistics' group sums).
    pub fn check(&self) -> Result<(), String> {
        self.check_uclamp()?;
        let nr = self.rqs.len();
        let busy = (0..nr).filter(|&c| self.rqs[c].curr.is_some()).count() as u32;
        if busy != self.nr_busy {
            return Err(format!("nr_busy {} but {busy} CPUs run a task", self.nr_busy));
        }
        if let Some(h) = &self.host {
            h.check()?;
        }
        let mut queued = vec![0u32; nr];
        let mut in_flight = vec![0u32; nr];
        let mut homed = vec![0u64; nr];
        for t in &self.tasks {
            if t.state != TaskState::New && t.state != TaskState::Dead {
                homed[t.cpu.idx()] += 1;
            }
            match t.state {
                TaskState::Runnable => {
                    if t.on_rq {
                        queued[t.cpu.idx()] += 1;
                    } else {
                        in_flight[t.cpu.idx()] += 1;
                    }
                }
                TaskState::Blocked | TaskState::Dead => {
                    if t.on_rq {
                        if !self.class_task_delayed(t.id) {
                            return Err(format!("task {} is {:?} but queued and not delayed", t.id, t.state));
                        }
                        queued[t.cpu.idx()] += 1;
                    }
                }
                TaskState::New => {
                    if t.on_rq {
                        return Err(format!("task {} is queued before it started", t.id));
                    }
                }
            }
            if t.avg.util_avg > 1024 + 16 {
                return Err(format!("task {} util_avg {} exceeds the capacity scale", t.id, t.avg.util_avg));
            }
        }
        for (c, rq) in self.rqs.iter().enumerate() {
            let cpu = CpuId(c as u32);
            if rq.nr_running != queued[c] {
                return Err(format!("cpu {c}: nr_running {} but {} entities queued", rq.nr_running, queued[c]));
            }
            if rq.ttwu_pending != in_flight[c] {
                return Err(format!(
                    "cpu {c}: ttwu_pending {} but {} wakeups in flight",
                    rq.ttwu_pending, in_flight[c]
                ));
            }
            if let Some(p) = rq.curr {
                let t = &self.tasks[p.idx()];
                if t.cpu != cpu {
                    return Err(format!("cpu {c} runs task {p} whose task_cpu is {}", t.cpu));
                }
                if !t.allowed.test(cpu) {
                    return Err(format!("cpu {c} runs task {p} that is not allowed there"));
                }
                if t.state != TaskState::Runnable {
                    return Err(format!("cpu {c} runs task {p} in state {:?}", t.state));
                }
            }
            // A runqueue's util may exceed its capacity for a while (tasks that
            // migrate in bring theirs, as the kernel's cpu_util() comment
            // says), but never the sum of what its tasks can bring.
            // Tasks that left have their share in `removed` until the next update.
            let util = rq.cfs_avg.util_avg.saturating_sub(rq.removed.util_avg);
            let bound = 1024 * homed[c].max(1) + 1024;
            if util > bound {
                return Err(format!("cpu {c}: cfs util_avg {util} above {bound} for {} tasks", homed[c]));
            }
        }
        self.check_fair()
    }
}
