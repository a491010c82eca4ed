//! Peer schedulers: scheduling classes that replace the fair class for the
//! whole workload (comparison policies). Each keeps its own runqueues; the
//! engine calls them at the points it calls the fair class
//! (`select_task_rq`, enqueue, dequeue, pick/put, tick, wakeup preemption)
//! through a `match` on [`PeerState`], never a trait object.
//!
//! What every peer shares with the fair class, so that PELT, metrics and the
//! invariant checker work unchanged: a runnable task (queued or running) is
//! counted in its CPU's `nr_running` (the core's) and, through the fair
//! class's `account_peer_enqueue`/`account_peer_dequeue`, in the fair
//! runqueue's `load_weight`/`h_nr_runnable` (the PELT inputs); the running
//! task is `cfs.curr`. The peer's own queues hold only the waiting tasks.
//! Whether a task is queued, a peer reads from the task (`p->on_rq`, set by
//! the core's `enqueue_task`), never from the fair entity.
//!
//! - [`cosmos`]: scx_cosmos (sched_ext) with the built-in idle pick
//!   ([`scx_idle`]).
//! - [`bmq`]: Project C BMQ.

pub mod bmq;
pub mod cosmos;
pub mod scx_idle;

use crate::engine::Sim;
use crate::error::{Result, SchedlabError};
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, Ns, TaskId};
use crate::policy::ClassKind;
use crate::topology::Machine;

/// Runtime state of the peer class in use (none under the fair class).
pub enum PeerState {
    /// The fair class runs the workload.
    None,
    /// scx_cosmos.
    Cosmos(Box<cosmos::CosmosState>),
    /// BMQ.
    Bmq(Box<bmq::BmqState>),
}

impl PeerState {
    /// Fresh state for `class` on `m` with `nr_tasks` tasks.
    pub fn new(class: &ClassKind, m: &Machine, nr_tasks: usize) -> Self {
        match class {
            ClassKind::Fair => PeerState::None,
            ClassKind::Cosmos(p) => PeerState::Cosmos(Box::new(cosmos::CosmosState::new(*p, m, nr_tasks))),
            ClassKind::Bmq(p) => PeerState::Bmq(Box::new(bmq::BmqState::new(*p, m, nr_tasks))),
        }
    }
}

/// Parse a duration option value: an integer with a unit `ns`, `us`, `ms`
/// or `s` (a bare integer is ns).
pub fn parse_duration_ns(policy: &str, key: &str, value: &str) -> Result<Ns> {
    let v = value.trim();
    let (num, mult) = if let Some(n) = v.strip_suffix("ns") {
        (n, 1)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, 1_000)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1_000_000_000)
    } else {
        (v, 1)
    };
    num.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(|| {
        SchedlabError::spec("policy", format!("{policy}: {key}"), "a duration such as 1250us, 50ms or 4000000ns")
    })
}

/// Parse a boolean option value (`true`/`false`, `1`/`0`, `on`/`off`).
pub fn parse_bool(policy: &str, key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err(SchedlabError::spec("policy", format!("{policy}: {key}"), "true or false")),
    }
}

/// Parse an unsigned integer option value.
pub fn parse_u32(policy: &str, key: &str, value: &str, max: u32) -> Result<u32> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|&v| v <= max)
        .ok_or_else(|| SchedlabError::spec("policy", format!("{policy}: {key}"), format!("an integer from 0 to {max}")))
}

impl Sim {
    /// The peer class's `select_task_rq` hook (`ops.select_cpu` for
    /// sched_ext, `select_task_rq` for BMQ). The core's `select_task_rq`
    /// handles single-CPU tasks and the affinity fallback around it.
    pub fn peer_select_cpu(&mut self, p: TaskId, prev_cpu: CpuId, wake_flags: u32, this_cpu: CpuId) -> CpuId {
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_select_cpu(p, prev_cpu, wake_flags, this_cpu),
            PeerState::Bmq(_) => self.bmq_select_task_rq(p),
            PeerState::None => prev_cpu,
        }
    }

    /// The accounting every peer enqueue shares with the fair class (PELT
    /// inputs), then the class's own enqueue.
    pub fn peer_enqueue(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        self.enqueue_pelt_fair(cpu, p, flags);
        self.account_peer_enqueue(cpu, p);
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_enqueue(cpu, p, flags),
            PeerState::Bmq(_) => self.bmq_enqueue(cpu, p, flags),
            PeerState::None => {}
        }
    }

    /// The class's dequeue, then the shared accounting. Always completes
    /// (peers have no delayed dequeue).
    pub fn peer_dequeue(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        self.dequeue_pelt_fair(cpu, p, flags);
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_dequeue(cpu, p),
            PeerState::Bmq(_) => self.bmq_dequeue(cpu, p, flags),
            PeerState::None => {}
        }
        self.account_peer_dequeue(cpu, p);
        true
    }

    /// `update_curr` of the peer class; returns whether the slice ran out.
    pub fn peer_update_curr(&mut self, cpu: CpuId) -> bool {
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_update_curr(cpu),
            PeerState::Bmq(_) => self.bmq_update_curr(cpu),
            PeerState::None => false,
        }
    }

    /// `pick_next_task` of the peer class, with `prev` put back as the class
    /// does and its own balancing (pulls) when the CPU would go idle. Sets
    /// `cfs.curr` to the pick for PELT.
    pub fn peer_pick_next_task(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let next = match self.peer {
            PeerState::Cosmos(_) => self.cosmos_pick_next_task(cpu, prev),
            PeerState::Bmq(_) => self.bmq_pick_next_task(cpu, prev),
            PeerState::None => None,
        };
        self.rqs[cpu.idx()].cfs.curr = next;
        next
    }

    /// `put_prev_task` of the peer class when a higher class (RT) takes the
    /// CPU from its running task `prev`: the task goes back to the peer's
    /// queues as a preempted task (sched_ext: `ops.stopping` and a requeue;
    /// BMQ: back at the head of its level). In the peer's own schedule the
    /// put happens inside its pick.
    pub fn peer_put_prev_task(&mut self, cpu: CpuId, prev: TaskId) {
        let runnable = self.tasks[prev.idx()].state == crate::engine::task::TaskState::Runnable
            && self.tasks[prev.idx()].on_rq
            && self.tasks[prev.idx()].cpu == cpu;
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_put_prev_task(cpu, prev, runnable),
            PeerState::Bmq(_) => self.bmq_put_prev_task(cpu, prev, runnable),
            PeerState::None => {}
        }
        self.rqs[cpu.idx()].cfs.curr = None;
    }

    /// The tick of the peer class on a busy CPU, after `update_curr`
    /// (`resched` = the slice ran out): whether to reschedule.
    pub fn peer_task_tick(&mut self, cpu: CpuId, resched: bool) -> bool {
        match self.peer {
            PeerState::Cosmos(_) => self.cosmos_tick(cpu),
            PeerState::Bmq(_) => resched,
            PeerState::None => false,
        }
    }

    /// Wakeup preemption of the peer class: `p` was queued on busy `cpu`.
    pub fn peer_wakeup_preempt(&mut self, cpu: CpuId, _p: TaskId) -> bool {
        match self.peer {
            PeerState::Cosmos(_) => false,
            PeerState::Bmq(_) => self.bmq_wakeup_preempt(cpu),
            PeerState::None => false,
        }
    }

    /// Move the queued, not running task `p` (already out of the class's
    /// queues) from `src` to `dst`: a migration as load balancing does it.
    /// The enqueue on `dst` carries `MIGRATED`, so the class knows the caller
    /// places it.
    pub fn peer_migrate_queued(&mut self, p: TaskId, src: CpuId, dst: CpuId) {
        self.dequeue_task(src, p, DequeueFlags::default());
        self.set_task_cpu(p, dst, crate::trace::MigrateReason::Balance);
        self.enqueue_task(dst, p, EnqueueFlags::MIGRATED);
    }
}

#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
pub(crate) mod test_util;
