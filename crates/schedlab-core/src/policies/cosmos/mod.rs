//! scx_cosmos (sched-ext/scx `scheds/rust/scx_cosmos`) as a scheduling class:
//! `cosmos_select_cpu`, `cosmos_enqueue`, `cosmos_dispatch`, `cosmos_tick`,
//! `cosmos_runnable`/`running`/`stopping`, and the parts of the sched_ext core
//! they rely on (local DSQs, slice accounting, `balance_one`). See README.md.

use std::collections::{BTreeSet, VecDeque};

use super::scx_idle::{ScxIdle, SelectCtx};
use crate::engine::core::{WF_SYNC, WF_TTWU};
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::error::{Result, SchedlabError};
use crate::fair::eevdf::EnqueueFlags;
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_MSEC};
use crate::topology::Machine;

/// Options of the `cosmos` policy (`cosmos:key=value,...`). Defaults are the
/// seed benchmark's command line `-m all -s 1250 -l 50000 -c 0 -p 0 -d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CosmosParams {
    /// `-s`: time slice, ns (`slice_ns`; the tool's default is 10 us, the
    /// seed ran 1250 us).
    pub slice_ns: Ns,
    /// `-l`: most runtime since the last sleep charged to a task, and the
    /// vtime credit a sleeper may keep, ns (`slice_lag`; seed 50 ms).
    pub slice_lag_ns: Ns,
    /// `-c`: CPU busy threshold, percent. With `-p 0` (no polling) the
    /// measured `cpu_util` stays 0, so the system counts as busy (deadline
    /// mode, shared DSQ) exactly when this is 0, as in the seed.
    pub busy_pct: u32,
    /// Deferred wakeups (off with `-d`). Accepted for completeness: every
    /// dispatch in this model lands on the task's own runqueue, whose idle
    /// CPU the core wakes at once, so it changes nothing here.
    pub deferred_wakeup: bool,
}

impl Default for CosmosParams {
    fn default() -> Self {
        CosmosParams { slice_ns: 1_250_000, slice_lag_ns: 50 * NSEC_PER_MSEC, busy_pct: 0, deferred_wakeup: false }
    }
}

/// Option keys of `cosmos`, each with its meaning.
pub const KEYS: &[(&str, &str)] = &[
    ("slice", "time slice (-s), e.g. 1250us"),
    ("slice_lag", "max runtime charged since the last sleep (-l), e.g. 50ms"),
    ("busy", "CPU busy threshold percent (-c); 0 = always deadline mode"),
    ("deferred_wakeup", "deferred idle-CPU kicks (true/false; -d = false)"),
];

impl CosmosParams {
    /// Set option `key` to `value`.
    pub fn set(&mut self, policy: &str, key: &str, value: &str) -> Result<()> {
        match key {
            "slice" => self.slice_ns = super::parse_duration_ns(policy, key, value)?,
            "slice_lag" => self.slice_lag_ns = super::parse_duration_ns(policy, key, value)?,
            "busy" => self.busy_pct = super::parse_u32(policy, key, value, 100)?,
            "deferred_wakeup" => self.deferred_wakeup = super::parse_bool(policy, key, value)?,
            _ => {
                return Err(SchedlabError::UnknownName {
                    kind: "cosmos option".into(),
                    name: key.into(),
                    valid: KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
                })
            }
        }
        if self.slice_ns == 0 {
            return Err(SchedlabError::spec("policy", format!("{policy}: slice"), "a slice above 0"));
        }
        Ok(())
    }
}

/// `CGROUP_WEIGHT_DFL`: sched_ext task weights are on a 1..10000 scale with
/// 100 for nice 0.
const SCX_WEIGHT_DFL: u64 = 100;

/// Per-task context (`struct task_ctx` plus the `p->scx` fields used).
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskCtx {
    /// `p->scx.dsq_vtime`.
    pub dsq_vtime: u64,
    /// Runtime since the last sleep, ns (capped at `slice_lag`).
    pub exec_runtime: Ns,
    /// Wakeups per 100 ms, EWMA (capped at 1024).
    pub wakeup_freq: u64,
    /// Last wakeup, ns.
    pub last_woke_at: Ns,
    /// When it last started running, ns.
    pub last_run_at: Ns,
    /// `p->scx.slice`: slice left, ns.
    pub slice_ns: Ns,
    /// `p->scx.weight` (100 = nice 0).
    pub weight: u64,
    /// `ops.select_cpu` dispatched it directly to a local DSQ.
    pub direct: bool,
    /// `ops.enable` ran (vtime initialised).
    pub enabled: bool,
}

/// The runtime state of scx_cosmos.
pub struct CosmosState {
    /// Options.
    pub params: CosmosParams,
    /// `is_system_busy()` (constant: see `CosmosParams::busy_pct`).
    pub busy: bool,
    /// Per task.
    pub tasks: Vec<TaskCtx>,
    /// Local DSQ of each CPU (FIFO).
    pub local: Vec<VecDeque<TaskId>>,
    /// Shared DSQ(s), ordered by (deadline, insertion): one per node when
    /// NUMA optimisations are on (more than one node), else one.
    pub shared: Vec<BTreeSet<(u64, u64, TaskId)>>,
    /// Where each task sits in `shared`, if it does (dsq index and key).
    pub in_shared: Vec<Option<(usize, u64, u64)>>,
    /// Insertion counter (FIFO among equal deadlines).
    pub seq: u64,
    /// `vtime_now`: the largest vtime that started running.
    pub vtime_now: u64,
    /// The built-in idle state.
    pub idle: ScxIdle,
    /// The task each CPU last called `ops.running` for (until `stopping`).
    pub running: Vec<Option<TaskId>>,
    /// Last slice accounting per CPU (`se.exec_start`), ns.
    pub exec_start: Vec<Ns>,
    /// Shared DSQ index of each CPU.
    pub dsq_of_cpu: Vec<usize>,
}

impl CosmosState {
    /// Fresh state.
    pub fn new(params: CosmosParams, m: &Machine, nr_tasks: usize) -> Self {
        let nr = m.nr_cpus();
        let numa = m.nr_nodes > 1;
        let ndsq = if numa { m.nr_nodes as usize } else { 1 };
        CosmosState {
            params,
            busy: params.busy_pct == 0,
            tasks: vec![TaskCtx::default(); nr_tasks],
            local: vec![VecDeque::new(); nr],
            shared: vec![BTreeSet::new(); ndsq],
            in_shared: vec![None; nr_tasks],
            seq: 0,
            vtime_now: 0,
            idle: ScxIdle::new(m),
            running: vec![None; nr],
            exec_start: vec![0; nr],
            dsq_of_cpu: (0..nr).map(|c| if numa { m.cpus[c].node as usize } else { 0 }).collect(),
        }
    }

    /// `task_slice(p)`: the slice scaled by the task's weight.
    pub fn task_slice(&self, p: TaskId) -> Ns {
        self.params.slice_ns * self.tasks[p.idx()].weight / SCX_WEIGHT_DFL
    }

    /// `task_dl(p)`: the virtual deadline, clamping the vtime a sleeper may
    /// keep to `slice_lag * max(wakeup_freq, 1)` (weight-scaled) behind
    /// `vtime_now`. Time comparisons are the kernel's wrapping `time_before`.
    pub fn task_dl(&mut self, p: TaskId) -> u64 {
        let vtime_now = self.vtime_now;
        let lag = self.params.slice_lag_ns;
        let t = &mut self.tasks[p.idx()];
        let lag_scale = t.wakeup_freq.max(1);
        let vsleep_max = lag.wrapping_mul(lag_scale).wrapping_mul(t.weight) / SCX_WEIGHT_DFL;
        let vtime_min = vtime_now.wrapping_sub(vsleep_max);
        if (t.dsq_vtime.wrapping_sub(vtime_min) as i64) < 0 {
            t.dsq_vtime = vtime_min;
        }
        t.dsq_vtime.wrapping_add(t.exec_runtime * SCX_WEIGHT_DFL / t.weight)
    }

    /// `scx_bpf_dsq_insert_vtime(p, shared_dsq(cpu), slice, task_dl(p))`:
    /// the insertion also sets `dsq_vtime` to the deadline.
    pub fn insert_shared(&mut self, p: TaskId, cpu: CpuId) {
        let dl = self.task_dl(p);
        let slice = self.task_slice(p);
        let t = &mut self.tasks[p.idx()];
        t.dsq_vtime = dl;
        t.slice_ns = slice;
        let d = self.dsq_of_cpu[cpu.idx()];
        self.seq += 1;
        self.shared[d].insert((dl, self.seq, p));
        self.in_shared[p.idx()] = Some((d, dl, self.seq));
    }

    /// Insert into `cpu`'s local DSQ with a fresh slice.
    pub fn insert_local(&mut self, p: TaskId, cpu: CpuId) {
        self.tasks[p.idx()].slice_ns = self.task_slice(p);
        self.local[cpu.idx()].push_back(p);
    }

    /// Take `p` out of whatever DSQ holds it.
    pub fn remove(&mut self, p: TaskId, cpu: CpuId) {
        if let Some((d, dl, seq)) = self.in_shared[p.idx()].take() {
            self.shared[d].remove(&(dl, seq, p));
        }
        let q = &mut self.local[cpu.idx()];
        if let Some(i) = q.iter().position(|&t| t == p) {
            q.remove(i);
        }
    }

    /// `ops.runnable`: reset the runtime since the last sleep and update
    /// the wakeup frequency (`update_freq`, EWMA 3/4 old + 1/4 new).
    pub fn runnable(&mut self, p: TaskId, now: Ns) {
        let t = &mut self.tasks[p.idx()];
        t.exec_runtime = 0;
        let delta = now.saturating_sub(t.last_woke_at);
        // BPF division by zero yields 0.
        let new_freq = (100 * NSEC_PER_MSEC).checked_div(delta).unwrap_or(0);
        let avg = (t.wakeup_freq - (t.wakeup_freq >> 2)) + (new_freq >> 2);
        t.wakeup_freq = avg.min(1024);
        t.last_woke_at = now;
    }

    /// `ops.running`.
    pub fn running_hook(&mut self, p: TaskId, cpu: CpuId, now: Ns) {
        let t = &mut self.tasks[p.idx()];
        t.last_run_at = now;
        if (self.vtime_now.wrapping_sub(t.dsq_vtime) as i64) < 0 {
            self.vtime_now = t.dsq_vtime;
        }
        self.running[cpu.idx()] = Some(p);
        self.exec_start[cpu.idx()] = now;
    }

    /// `ops.stopping`: charge the used slice (at most one slice) to vtime and
    /// to the runtime since the last sleep.
    pub fn stopping(&mut self, p: TaskId, cpu: CpuId, now: Ns) {
        let (slice_ns, lag) = (self.params.slice_ns, self.params.slice_lag_ns);
        let t = &mut self.tasks[p.idx()];
        let used = now.saturating_sub(t.last_run_at).min(slice_ns);
        t.dsq_vtime = t.dsq_vtime.wrapping_add(used * SCX_WEIGHT_DFL / t.weight);
        t.exec_runtime = (t.exec_runtime + used).min(lag);
        self.running[cpu.idx()] = None;
    }
}

fn scx_weight(nice: i32) -> u64 {
    // sched_weight_to_cgroup(scale_load_down(weight)), rounded to closest.
    let w = crate::fair::eevdf::nice_to_weight(nice);
    ((w * SCX_WEIGHT_DFL + 512) / 1024).max(1)
}

impl Sim {
    fn cosmos(&mut self) -> &mut CosmosState {
        match &mut self.peer {
            super::PeerState::Cosmos(s) => s,
            _ => unreachable!("cosmos hook under another class"),
        }
    }

    /// `cosmos_select_cpu`: the built-in idle pick; an idle hit (or any pick
    /// when the system is not busy) is dispatched straight to that CPU's
    /// local DSQ. Returns the CPU.
    pub fn cosmos_select_cpu(&mut self, p: TaskId, prev_cpu: CpuId, wake_flags: u32, this_cpu: CpuId) -> CpuId {
        let allowed = self.tasks[p.idx()].allowed;
        let this_allowed = allowed.test(this_cpu);
        let mut prev = prev_cpu;
        if !allowed.test(prev) {
            prev = if this_allowed { this_cpu } else { allowed.first().unwrap_or(prev_cpu) };
        }
        let Sim { peer, machine, .. } = self;
        let super::PeerState::Cosmos(st) = peer else { return prev };
        // pick_idle_cpu: a wakeup from a faster CPU pulls the wakee closer.
        let mut target = prev;
        let mut cpu = None;
        if wake_flags & WF_TTWU != 0 && this_allowed && machine.capacity_orig(this_cpu) > machine.capacity_orig(prev) {
            let sib = machine.smt_mask(prev).iter().find(|&s| s != prev).unwrap_or(prev);
            let contended = st.idle.smt_active && !st.idle.cpu.test(sib) && !st.idle.cpu.is_empty();
            if machine.cpus_share_cache(this_cpu, prev) && !contended && st.idle.test_and_clear_cpu(machine, prev) {
                cpu = Some(prev);
            } else {
                target = this_cpu;
            }
        }
        if cpu.is_none() {
            let ctx = SelectCtx {
                allowed,
                prev: target,
                this_cpu,
                sync: wake_flags & WF_SYNC != 0,
                waker_local_empty: st.local[this_cpu.idx()].is_empty(),
            };
            cpu = st.idle.scx_select_cpu_dfl(machine, &ctx);
        }
        st.tasks[p.idx()].direct = cpu.is_some() || !st.busy;
        cpu.unwrap_or(prev)
    }

    /// `ops.enable` + `ops.runnable` on a real wakeup, then `cosmos_enqueue`.
    pub fn cosmos_enqueue(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags) {
        let (now, nice, single) = (self.now, self.tasks[p.idx()].nice, self.tasks[p.idx()].nr_cpus_allowed == 1);
        let Sim { peer, machine, .. } = self;
        let super::PeerState::Cosmos(st) = peer else { return };
        if flags.has(EnqueueFlags::MIGRATED) && !flags.has(EnqueueFlags::WAKEUP) {
            return; // pulled by a dispatch: the caller runs it
        }
        let t = &mut st.tasks[p.idx()];
        if !t.enabled {
            t.enabled = true;
            t.weight = scx_weight(nice);
            t.dsq_vtime = st.vtime_now;
        }
        st.runnable(p, now);
        if std::mem::replace(&mut st.tasks[p.idx()].direct, false) {
            st.insert_local(p, cpu);
            return;
        }
        // ops.select_cpu was skipped (a per-CPU task): take prev if idle.
        if single && st.idle.test_and_clear_cpu(machine, cpu) {
            st.insert_local(p, cpu);
            return;
        }
        if !st.busy {
            st.insert_local(p, cpu);
            return;
        }
        st.insert_shared(p, cpu);
    }

    /// `dequeue_task_scx`: out of any DSQ; `ops.stopping` if it was running.
    pub fn cosmos_dequeue(&mut self, cpu: CpuId, p: TaskId) {
        let now = self.now;
        let st = self.cosmos();
        st.remove(p, cpu);
        if st.running[cpu.idx()] == Some(p) {
            st.stopping(p, cpu, now);
        }
    }

    /// `update_curr_scx`: the running task's slice shrinks by its runtime.
    pub fn cosmos_update_curr(&mut self, cpu: CpuId) -> bool {
        let now = self.now;
        let curr = self.rqs[cpu.idx()].curr;
        let st = self.cosmos();
        let Some(p) = curr.filter(|&p| st.running[cpu.idx()] == Some(p)) else { return false };
        let delta = now.saturating_sub(st.exec_start[cpu.idx()]);
        st.exec_start[cpu.idx()] = now;
        let t = &mut st.tasks[p.idx()];
        t.slice_ns -= t.slice_ns.min(delta);
        t.slice_ns == 0
    }

    /// `cosmos_tick` (after the core's slice accounting): a task past its
    /// slice is preempted when the system is busy and tasks wait for this
    /// CPU; the core reschedules when the slice is 0.
    pub fn cosmos_tick(&mut self, cpu: CpuId) -> bool {
        let now = self.now;
        let Some(p) = self.rqs[cpu.idx()].curr else { return false };
        let st = self.cosmos();
        let slice = st.task_slice(p);
        let d = st.dsq_of_cpu[cpu.idx()];
        let waiting = !st.local[cpu.idx()].is_empty() || !st.shared[d].is_empty();
        let t = &mut st.tasks[p.idx()];
        if now.saturating_sub(t.last_run_at) > slice && st.busy && waiting {
            t.slice_ns = 0;
        }
        t.slice_ns == 0
    }

    /// `put_prev_task_scx` when a higher class preempts `prev`: `ops.stopping`,
    /// and a still-runnable task goes back to a DSQ as `cosmos_enqueue`
    /// would put it (the local DSQ when the system is not busy).
    pub fn cosmos_put_prev_task(&mut self, cpu: CpuId, prev: TaskId, runnable: bool) {
        let now = self.now;
        let st = self.cosmos();
        if st.running[cpu.idx()] == Some(prev) {
            st.stopping(prev, cpu, now);
        }
        if runnable {
            if st.busy {
                st.insert_shared(prev, cpu);
            } else {
                st.insert_local(prev, cpu);
            }
        }
    }

    /// `balance_one` + `cosmos_dispatch` + `put_prev_task_scx`: keep `prev`
    /// while it has slice; else the local DSQ head; else pull the shared
    /// DSQ's earliest deadline this CPU may run; else keep `prev` with a
    /// fresh slice; else idle. A `prev` that loses the CPU goes back through
    /// `cosmos_enqueue` (the shared DSQ when busy).
    pub fn cosmos_pick_next_task(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let now = self.now;
        let prev_rq = prev.filter(|&pp| {
            self.tasks[pp.idx()].state == TaskState::Runnable
                && self.tasks[pp.idx()].on_rq
                && self.tasks[pp.idx()].cpu == cpu
        });
        let st = self.cosmos();
        if let Some(pp) = prev_rq {
            if st.tasks[pp.idx()].slice_ns > 0 {
                return Some(pp);
            }
        }
        let mut next = st.local[cpu.idx()].pop_front();
        if next.is_none() {
            let Sim { peer, tasks, .. } = &mut *self;
            let super::PeerState::Cosmos(st) = peer else { return None };
            let d = st.dsq_of_cpu[cpu.idx()];
            // The dispatch skips tasks that may not run on this CPU.
            let found = st.shared[d].iter().copied().find(|&(_, _, t)| tasks[t.idx()].allowed.test(cpu));
            if let Some(key) = found {
                st.shared[d].remove(&key);
                st.in_shared[key.2.idx()] = None;
                let n = key.2;
                let src = self.tasks[n.idx()].cpu;
                if src != cpu {
                    self.peer_migrate_queued(n, src, cpu);
                }
                next = Some(n);
            } else if let Some(pp) = prev_rq {
                // cosmos_dispatch: nobody else wants this CPU, run another slice.
                let s = st.task_slice(pp);
                st.tasks[pp.idx()].slice_ns = s;
                return Some(pp);
            }
        }
        let Sim { peer, machine, .. } = self;
        let super::PeerState::Cosmos(st) = peer else { return None };
        if let Some(pp) = prev_rq {
            st.stopping(pp, cpu, now);
            if !st.busy {
                st.insert_local(pp, cpu);
            } else {
                st.insert_shared(pp, cpu);
            }
        }
        match next {
            Some(n) => {
                st.running_hook(n, cpu, now);
                if prev.is_none() || st.idle.cpu.test(cpu) {
                    st.idle.update_builtin_idle(machine, cpu, false);
                }
            }
            None => st.idle.update_builtin_idle(machine, cpu, true),
        }
        next
    }
}

#[cfg(test)]
mod tests;
