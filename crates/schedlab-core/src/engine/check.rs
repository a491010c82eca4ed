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
    /// - PELT utilisation stays within the CPU's capacity (with the kernel's
    ///   rounding slack) and loads are finite.
    pub fn check(&self) -> Result<(), String> {
        let nr = self.rqs.len();
        let mut queued = vec![0u32; nr];
        let mut in_flight = vec![0u32; nr];
        for t in &self.tasks {
            let se = &self.ses[t.id.idx()];
            match t.state {
                TaskState::Runnable => {
                    if se.on_rq {
                        queued[t.cpu.idx()] += 1;
                    } else {
                        in_flight[t.cpu.idx()] += 1;
                    }
                }
                TaskState::Blocked | TaskState::Dead => {
                    if se.on_rq {
                        if !se.sched_delayed {
                            return Err(format!("task {} is {:?} but queued and not delayed", t.id, t.state));
                        }
                        queued[t.cpu.idx()] += 1;
                    }
                }
                TaskState::New => {
                    if se.on_rq {
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
                return Err(format!("cpu {c}: ttwu_pending {} but {} wakeups in flight", rq.ttwu_pending, in_flight[c]));
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
            let cap = self.machine.capacity_orig(cpu) as u64;
            if rq.cfs_avg.util_avg > cap + cap / 8 + 16 {
                return Err(format!("cpu {c}: cfs util_avg {} far above capacity {cap}", rq.cfs_avg.util_avg));
            }
        }
        Ok(())
    }
}
