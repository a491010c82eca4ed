//! Project C BMQ (kernel/sched/alt_core.c, bmq.h, alt_topology.c) as a
//! scheduling class: per-CPU bitmap of 64 FIFO priority lists, boost on sleep,
//! deboost on slice renewal, `select_task_rq` by idle core / idle CPU /
//! lower-priority CPU with `best_mask_cpu`, wakeup preemption when the queue
//! head changes, and `take_other_rq_tasks` when a CPU would go idle.

use std::collections::VecDeque;

use crate::cpumask::CpuMask;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::error::{Result, SchedlabError};
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, Ns, TaskId};
use crate::topology::Machine;

/// Options of the `bmq` policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BmqParams {
    /// `sysctl_sched_base_slice`: `4 << 20` ns ("4 msec") in alt_core.c.
    pub slice_ns: Ns,
}

impl Default for BmqParams {
    fn default() -> Self {
        BmqParams { slice_ns: 4 << 20 }
    }
}

/// Option keys of `bmq`.
pub const KEYS: &[(&str, &str)] = &[("slice", "time slice (sysctl_sched_base_slice), e.g. 4ms")];

impl BmqParams {
    /// Set option `key` to `value`.
    pub fn set(&mut self, policy: &str, key: &str, value: &str) -> Result<()> {
        match key {
            "slice" => self.slice_ns = super::parse_duration_ns(policy, key, value)?,
            _ => {
                return Err(SchedlabError::UnknownName {
                    kind: "bmq option".into(),
                    name: key.into(),
                    valid: KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
                })
            }
        }
        if self.slice_ns <= RESCHED_NS {
            return Err(SchedlabError::spec("policy", format!("{policy}: slice"), "a slice above 100us"));
        }
        Ok(())
    }
}

/// `MIN_SCHED_NORMAL_PRIO`: first queue level of normal tasks.
pub const MIN_SCHED_NORMAL_PRIO: i32 = 32;
/// `MAX_PRIORITY_ADJ` (BMQ): boost range either side of the base priority.
pub const MAX_PRIORITY_ADJ: i32 = 12;
/// `MIN_NORMAL_PRIO` (alt prio.h).
pub const MIN_NORMAL_PRIO: i32 = 128;
/// `DEFAULT_PRIO` = `MAX_PRIO - MAX_PRIORITY_ADJ - NICE_WIDTH / 2` = 160.
pub const DEFAULT_PRIO: i32 = 128 + 64 - MAX_PRIORITY_ADJ - 20;
/// `IDLE_TASK_SCHED_PRIO`: the level of an idle runqueue.
pub const IDLE_TASK_SCHED_PRIO: u8 = 64;
/// `RESCHED_NS`: a slice with less than this left counts as expired.
pub const RESCHED_NS: Ns = 100 << 10;
/// `sysctl_sched_nr_migrate` (`SCHED_NR_MIGRATE_BREAK`, non-RT).
pub const SCHED_NR_MIGRATE: u32 = 32;

/// Per-task BMQ state.
#[derive(Clone, Copy, Debug, Default)]
pub struct BmqTask {
    /// `p->boost_prio`, -12..=12 (lower = higher priority).
    pub boost_prio: i32,
    /// `p->time_slice` left, ns (signed: update_curr may overshoot).
    pub time_slice: i64,
    /// `p->last_ran`: start of the not yet accounted runtime, ns.
    pub last_ran: Ns,
    /// Initialised at its first enqueue (`sched_fork`).
    pub inited: bool,
    /// Queue level while queued.
    pub queued_at: Option<u8>,
}

/// One CPU's `struct sched_queue` (the running task is kept outside).
#[derive(Clone, Debug)]
pub struct SchedQueue {
    /// Bit i set = list i non-empty.
    pub bitmap: u64,
    /// FIFO lists by level.
    pub heads: Vec<VecDeque<TaskId>>,
}

/// Runtime state of BMQ.
pub struct BmqState {
    /// Options.
    pub params: BmqParams,
    /// Per task.
    pub tasks: Vec<BmqTask>,
    /// Per CPU.
    pub queues: Vec<SchedQueue>,
    /// Per CPU: topology rings nearest first (SMT, cluster, LLC, package,
    /// all), each without the CPU itself and the rings before it
    /// (`sched_cpu_topo_masks`).
    pub topo: Vec<[CpuMask; 5]>,
    /// `p1_idle_select_func`: every CPU has an SMT sibling, so wholly idle
    /// cores are preferred.
    pub all_smt: bool,
}

/// `task_sched_prio` of a normal task: its queue level, 32..63.
pub fn task_sched_prio(nice: i32, boost_prio: i32) -> u8 {
    let prio = DEFAULT_PRIO + nice.clamp(-20, 19);
    (MIN_SCHED_NORMAL_PRIO + (prio + boost_prio - MIN_NORMAL_PRIO) / 2) as u8
}

impl BmqState {
    /// Fresh state.
    pub fn new(params: BmqParams, m: &Machine, nr_tasks: usize) -> Self {
        let nr = m.nr_cpus();
        let topo = (0..nr)
            .map(|c| {
                let cpu = CpuId(c as u32);
                let info = &m.cpus[c];
                let levels = [
                    *m.smt_mask(cpu),
                    m.cluster_cpus[info.cluster as usize],
                    *m.llc_mask(cpu),
                    m.package_cpus[info.package as usize],
                    m.all_cpus(),
                ];
                let mut seen = CpuMask::from_cpus([cpu]);
                let mut rings = [CpuMask::new(); 5];
                for (i, l) in levels.iter().enumerate() {
                    rings[i] = l.andnot(&seen);
                    seen = seen.or(l);
                }
                rings
            })
            .collect();
        let all_smt = m.has_smt() && (0..nr).all(|c| m.smt_mask(CpuId(c as u32)).weight() > 1);
        BmqState {
            params,
            tasks: vec![BmqTask::default(); nr_tasks],
            queues: vec![SchedQueue { bitmap: 0, heads: vec![VecDeque::new(); 64] }; nr],
            topo,
            all_smt,
        }
    }

    /// `best_mask_cpu(cpu, mask)`: the lowest-numbered CPU of `mask` in the
    /// nearest ring of `cpu`; else the first of `mask`.
    pub fn best_mask_cpu(&self, cpu: CpuId, mask: &CpuMask) -> Option<CpuId> {
        self.topo[cpu.idx()].iter().find_map(|ring| mask.and(ring).first()).or_else(|| mask.first())
    }

    /// Lowest queued level of `cpu`, if any.
    pub fn first_level(&self, cpu: CpuId) -> Option<u8> {
        let b = self.queues[cpu.idx()].bitmap;
        (b != 0).then(|| b.trailing_zeros() as u8)
    }

    /// Queue `p` at `level`, at the tail or the head.
    pub fn push(&mut self, cpu: CpuId, p: TaskId, level: u8, head: bool) {
        let q = &mut self.queues[cpu.idx()];
        if head {
            q.heads[level as usize].push_front(p);
        } else {
            q.heads[level as usize].push_back(p);
        }
        q.bitmap |= 1 << level;
        self.tasks[p.idx()].queued_at = Some(level);
    }

    /// Take `p` off `cpu`'s lists if it is there.
    pub fn remove(&mut self, cpu: CpuId, p: TaskId) {
        let Some(level) = self.tasks[p.idx()].queued_at.take() else { return };
        let q = &mut self.queues[cpu.idx()];
        let list = &mut q.heads[level as usize];
        if let Some(i) = list.iter().position(|&t| t == p) {
            list.remove(i);
        }
        if list.is_empty() {
            q.bitmap &= !(1 << level);
        }
    }

    /// Pop the first task (`sched_rq_first_task`).
    pub fn pop_first(&mut self, cpu: CpuId) -> Option<TaskId> {
        let level = self.first_level(cpu)?;
        let q = &mut self.queues[cpu.idx()];
        let p = q.heads[level as usize].pop_front();
        if q.heads[level as usize].is_empty() {
            q.bitmap &= !(1 << level);
        }
        if let Some(p) = p {
            self.tasks[p.idx()].queued_at = None;
        }
        p
    }

    /// `boost_task(p, n)`: raise priority by `n` levels, to at most -12.
    pub fn boost_task(&mut self, p: TaskId, n: i32) {
        let t = &mut self.tasks[p.idx()];
        t.boost_prio = (t.boost_prio - n).max(-MAX_PRIORITY_ADJ);
    }

    /// `deboost_task(p)`: one level lower, to at most +12.
    pub fn deboost_task(&mut self, p: TaskId) {
        let t = &mut self.tasks[p.idx()];
        if t.boost_prio < MAX_PRIORITY_ADJ {
            t.boost_prio += 1;
        }
    }
}

impl Sim {
    fn bmq(&mut self) -> &mut BmqState {
        match &mut self.peer {
            super::PeerState::Bmq(s) => s,
            _ => unreachable!("bmq hook under another class"),
        }
    }

    fn bmq_prio(&self, st: &BmqState, p: TaskId) -> u8 {
        task_sched_prio(self.tasks[p.idx()].nice, st.tasks[p.idx()].boost_prio)
    }

    /// `rq->prio`: the best level on `cpu`, its running task included.
    fn bmq_rq_prio(&self, st: &BmqState, cpu: CpuId) -> u8 {
        let curr = self.rqs[cpu.idx()].curr.filter(|&c| self.tasks[c.idx()].on_rq).map(|c| self.bmq_prio(st, c));
        let q = st.first_level(cpu);
        match (curr, q) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(IDLE_TASK_SCHED_PRIO),
        }
    }

    /// `select_task_rq`: wholly idle cores (when every CPU has a sibling),
    /// else idle CPUs, else CPUs running lower-priority work, else every
    /// allowed CPU; `best_mask_cpu` from the task's CPU.
    // DEVIATION(kernel): sched_task_ttwu's boost is `(clock > last_ran) >> 22`
    // in the source read (a comparison, not a difference), i.e. always 0; it
    // is left out.
    pub fn bmq_select_task_rq(&mut self, p: TaskId) -> CpuId {
        let t = &self.tasks[p.idx()];
        let (allowed, task_cpu) = (t.allowed, t.cpu);
        let super::PeerState::Bmq(st) = &self.peer else { return task_cpu };
        let idle = CpuMask::from_cpus(allowed.iter().filter(|c| self.rqs[c.idx()].nr_running == 0));
        let mut mask = CpuMask::new();
        if st.all_smt {
            mask = CpuMask::from_cpus(
                idle.iter().filter(|&c| self.machine.smt_mask(c).iter().all(|s| self.rqs[s.idx()].nr_running == 0)),
            );
        }
        if mask.is_empty() {
            mask = idle;
        }
        if mask.is_empty() {
            let prio = self.bmq_prio(st, p);
            mask = CpuMask::from_cpus(allowed.iter().filter(|&c| prio < self.bmq_rq_prio(st, c)));
        }
        if mask.is_empty() {
            mask = allowed;
        }
        st.best_mask_cpu(task_cpu, &mask).unwrap_or(task_cpu)
    }

    /// `enqueue_task`: the tail of the task's level (fork initialises it as
    /// `sched_fork` does for a parent without boost credit).
    pub fn bmq_enqueue(&mut self, cpu: CpuId, p: TaskId, _flags: EnqueueFlags) {
        let slice = self.bmq().params.slice_ns as i64;
        let st = self.bmq();
        let t = &mut st.tasks[p.idx()];
        if !t.inited {
            t.inited = true;
            t.boost_prio = MAX_PRIORITY_ADJ;
            t.time_slice = slice;
        }
        let super::PeerState::Bmq(st) = &self.peer else { return };
        let level = self.bmq_prio(st, p);
        self.bmq().push(cpu, p, level, false);
    }

    /// `sched_task_deactivate` (boost by one on sleep) and dequeue.
    pub fn bmq_dequeue(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags) {
        let st = self.bmq();
        if flags.has(DequeueFlags::SLEEP) {
            st.boost_task(p, 1);
        }
        st.remove(cpu, p);
    }

    /// `update_curr`: charge the runtime to the slice; expired when less
    /// than `RESCHED_NS` is left.
    pub fn bmq_update_curr(&mut self, cpu: CpuId) -> bool {
        let now = self.now;
        let Some(p) = self.rqs[cpu.idx()].curr else { return false };
        let t = &mut self.bmq().tasks[p.idx()];
        t.time_slice -= now.saturating_sub(t.last_ran) as i64;
        t.last_ran = now;
        t.time_slice < RESCHED_NS as i64
    }

    /// `wakeup_preempt`: reschedule when the queue head is no longer curr.
    pub fn bmq_wakeup_preempt(&mut self, cpu: CpuId) -> bool {
        let Some(curr) = self.rqs[cpu.idx()].curr else { return true };
        let super::PeerState::Bmq(st) = &self.peer else { return false };
        let cl = self.bmq_prio(st, curr);
        st.first_level(cpu).is_some_and(|l| l < cl)
    }

    /// A higher class preempts `prev`: account its slice and put it back at
    /// the head of its level (it did not use up its turn).
    pub fn bmq_put_prev_task(&mut self, cpu: CpuId, prev: TaskId, runnable: bool) {
        self.bmq_update_curr(cpu);
        if runnable {
            let super::PeerState::Bmq(st) = &self.peer else { return };
            let level = self.bmq_prio(st, prev);
            self.bmq().push(cpu, prev, level, true);
        }
    }

    /// `check_curr` + `choose_next_task`: renew an expired slice (deboost,
    /// requeue at the tail), put a runnable prev back, take the first task,
    /// or pull from other CPUs (`take_other_rq_tasks`) before going idle.
    pub fn bmq_pick_next_task(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let now = self.now;
        if let Some(pp) = prev {
            let slice = self.bmq().params.slice_ns as i64;
            self.bmq_update_curr(cpu);
            let st = self.bmq();
            let mut expired = false;
            if st.tasks[pp.idx()].time_slice < RESCHED_NS as i64 {
                st.tasks[pp.idx()].time_slice = slice;
                st.deboost_task(pp);
                expired = true;
            }
            let runnable = self.tasks[pp.idx()].state == TaskState::Runnable
                && self.tasks[pp.idx()].on_rq
                && self.tasks[pp.idx()].cpu == cpu;
            if runnable {
                let super::PeerState::Bmq(st) = &self.peer else { return None };
                let level = self.bmq_prio(st, pp);
                // Curr never left its place at the head unless requeued.
                self.bmq().push(cpu, pp, level, !expired);
            }
        }
        let mut next = self.bmq().pop_first(cpu);
        if next.is_none() && self.take_other_rq_tasks(cpu) {
            next = self.bmq().pop_first(cpu);
        }
        if let Some(n) = next {
            self.bmq().tasks[n.idx()].last_ran = now;
        }
        next
    }

    /// `take_other_rq_tasks`: from the nearest ring outwards, the first CPU
    /// (wrapping from this one) with more than one runnable task gives some.
    pub fn take_other_rq_tasks(&mut self, cpu: CpuId) -> bool {
        let pending =
            CpuMask::from_cpus((0..self.rqs.len()).filter(|&c| self.rqs[c].nr_running > 1).map(|c| CpuId(c as u32)));
        if pending.is_empty() {
            return false;
        }
        for level in 0..5 {
            let chk = pending.and(&self.bmq().topo[cpu.idx()][level]);
            for src in chk.iter_wrap(cpu) {
                if self.migrate_pending_tasks(src, cpu) > 0 {
                    return true;
                }
            }
        }
        false
    }

    /// `migrate_pending_tasks(src, dst)`: walking src's queue from its running
    /// task, every other task allowed on dst moves, at most
    /// `min(nr_running / 2, 32)` looked at.
    // DEVIATION(kernel): the walk starts at src's first queued task, not
    // strictly after curr's place (they differ only while curr is about to be
    // preempted by a better-priority task).
    pub fn migrate_pending_tasks(&mut self, src: CpuId, dst: CpuId) -> u32 {
        let Some(curr) = self.rqs[src.idx()].curr else { return 0 };
        if !self.tasks[curr.idx()].on_rq {
            return 0;
        }
        let mut tries = (self.rqs[src.idx()].nr_running / 2).min(SCHED_NR_MIGRATE);
        // The queue in order; positions 0, 2, 4, ... are the candidates.
        let mut cands = [TaskId(0); SCHED_NR_MIGRATE as usize];
        let mut n = 0usize;
        {
            let q = &self.bmq().queues[src.idx()];
            let mut pos = 0usize;
            'walk: for level in 0..64 {
                if q.bitmap & (1 << level) == 0 {
                    continue;
                }
                for &t in &q.heads[level] {
                    if tries == 0 {
                        break 'walk;
                    }
                    if pos.is_multiple_of(2) {
                        cands[n] = t;
                        n += 1;
                        tries -= 1;
                    }
                    pos += 1;
                }
            }
        }
        let mut moved = 0;
        for &p in &cands[..n] {
            if self.tasks[p.idx()].allowed.test(dst) {
                self.bmq().remove(src, p);
                self.peer_migrate_queued(p, src, dst);
                moved += 1;
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests;
