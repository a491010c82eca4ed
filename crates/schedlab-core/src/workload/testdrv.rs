//! Test-only helpers: a hand-built machine, and a tiny driver that executes
//! workload programs with infinitely many CPUs (no scheduler: every runnable
//! task runs at once), so program logic can be checked without the engine.

use super::{Action, MarkKind, ProgCtx, Workload};
use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns, TaskId};
use crate::sim::Rng;
use crate::topology::machine::{CoreType, CostParams, CpuInfo, FreqDomain, Machine};
use std::collections::{BTreeMap, VecDeque};

/// A flat machine of `n` CPUs: one core each, one LLC, one node.
pub(crate) fn test_machine(n: usize) -> Machine {
    let cpus = (0..n)
        .map(|i| CpuInfo {
            id: CpuId(i as u32),
            core: i as u32,
            cluster: 0,
            llc: 0,
            node: 0,
            package: 0,
            core_type: 0,
            freq_domain: 0,
        })
        .collect();
    let all = CpuMask::first_n(n);
    Machine {
        name: format!("test{n}"),
        description: "test machine".into(),
        cpus,
        core_types: vec![CoreType {
            name: "test".into(),
            capacity: 1024,
            opps: vec![],
            nominal_freq_khz: 3_000_000,
            smt_speed_pct: 100,
            idle_states: vec![],
        }],
        freq_domains: vec![FreqDomain { span: all }],
        cpufreq: Default::default(),
        cpuidle: Default::default(),
        numa_distance: vec![vec![10]],
        cost: CostParams {
            refill_ns_per_kib: [0; 6],
            ipi_ns: 0,
            scan_ns_per_cpu: 0,
            balance_ns_per_cpu: 0,
            balance_ns_base: 0,
            context_switch_ns: 0,
            wakeup_ns: 0,
            ipi_send_ns: 0,
            ttwu_queue_ns: None,
            // The families' former fixed defaults, so their tests see the same work.
            pipe_write_ns: 1500,
            pipe_read_ns: 1000,
            l2_kib: 512,
            llc_kib: 16384,
        },
        hz: 250,
        nr_cores: n as u32,
        nr_clusters: 1,
        nr_llcs: 1,
        nr_nodes: 1,
        nr_packages: 1,
        has_clusters: false,
        core_cpus: (0..n).map(|i| CpuMask::from_cpus([CpuId(i as u32)])).collect(),
        cluster_cpus: vec![all],
        llc_cpus: vec![all],
        node_cpus: vec![all],
        package_cpus: vec![all],
    }
}

/// Why a task is not runnable.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Block {
    Recv(u32),
    Send(u32, u64, bool),
    Wait,
    Barrier(u32),
    Cond(u32),
    Sem(u32),
}

/// A task due to be stepped: (task, message received, when it was woken).
type Ready = (usize, Option<u64>, Option<Ns>);

/// What a driver run observed.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Time of the last event, ns.
    pub end_ns: Ns,
    /// Tasks that exited.
    pub exited: usize,
    /// Tasks still blocked when nothing was left to run (a deadlock if the
    /// run was not cut by the time limit).
    pub blocked: usize,
    /// Whether the time limit stopped the run.
    pub timed_out: bool,
    /// Messages sent / received, per channel.
    pub sent: Vec<u64>,
    /// Messages received, per channel.
    pub received: Vec<u64>,
    /// Marks in order: (time, task, kind, value).
    pub marks: Vec<(Ns, TaskId, MarkKind, u64)>,
    /// Messages received by each task, in order.
    pub inbox: Vec<Vec<u64>>,
    /// Steps taken by each task.
    pub steps: Vec<u64>,
}

/// Runs `w` with infinite CPUs until every task exits, nothing can run, or
/// `limit_ns` passes. Deterministic: ties run in (time, sequence) order.
pub(crate) fn run(w: &Workload, seed: u64, limit_ns: Ns) -> Outcome {
    let n = w.tasks.len();
    let mut progs: Vec<_> = w.tasks.iter().map(|t| t.program.clone()).collect();
    let mut rngs: Vec<Rng> = (0..n).map(|i| Rng::named(seed, "task", i as u64)).collect();
    let mut queue: BTreeMap<(Ns, u64), Ready> = BTreeMap::new();
    let mut seq = 0u64;
    let mut push = |q: &mut BTreeMap<_, _>, t: Ns, task: usize, msg: Option<u64>, woken: Option<Ns>| {
        q.insert((t, seq), (task, msg, woken));
        seq += 1;
    };
    let nchan = w.chans.len();
    let mut bufs: Vec<VecDeque<u64>> = vec![VecDeque::new(); nchan];
    let mut readers: Vec<VecDeque<usize>> = vec![VecDeque::new(); nchan];
    let mut writers: Vec<VecDeque<(usize, u64)>> = vec![VecDeque::new(); nchan];
    let mut pending_wakes = vec![0u64; n];
    let mut barrier_waiting: Vec<Vec<usize>> = vec![Vec::new(); w.barriers.len()];
    let mut cond_waiting: Vec<VecDeque<usize>> = vec![VecDeque::new(); w.conds as usize];
    let mut sem_waiting: Vec<VecDeque<usize>> = vec![VecDeque::new(); w.sems.len()];
    let mut sem_count: Vec<u64> = w.sems.clone();
    let mut state: Vec<Option<Block>> = vec![None; n];
    let mut out = Outcome {
        sent: vec![0; nchan],
        received: vec![0; nchan],
        inbox: vec![Vec::new(); n],
        steps: vec![0; n],
        ..Default::default()
    };
    for (i, t) in w.tasks.iter().enumerate() {
        push(&mut queue, t.start_ns, i, None, None);
    }
    while let Some(((now, _), (task, msg, woken_at))) = queue.pop_first() {
        if now > limit_ns {
            out.timed_out = true;
            break;
        }
        out.end_ns = now;
        out.steps[task] += 1;
        if let Some(m) = msg {
            out.inbox[task].push(m);
        }
        let ctx = ProgCtx { now, task: TaskId(task as u32), msg, woken_at };
        match progs[task].step(&ctx, &mut rngs[task]) {
            Action::Compute(d) | Action::Sleep(d) | Action::IoSleep(d) => push(&mut queue, now + d, task, None, None),
            Action::SleepUntil(t) => push(&mut queue, t.max(now), task, None, None),
            Action::Mark { kind, value } => {
                out.marks.push((now, ctx.task, kind, value));
                push(&mut queue, now, task, None, None);
            }
            Action::Send { chan, msg, sync } => {
                let c = chan.0 as usize;
                if (bufs[c].len() as u64) < w.chans[c].capacity() {
                    out.sent[c] += 1;
                    if let Some(r) = readers[c].pop_front() {
                        state[r] = None;
                        out.received[c] += 1;
                        push(&mut queue, now, r, Some(msg), Some(now));
                    } else {
                        bufs[c].push_back(msg);
                    }
                    push(&mut queue, now, task, None, None);
                } else {
                    state[task] = Some(Block::Send(chan.0, msg, sync));
                    writers[c].push_back((task, msg));
                }
            }
            Action::Recv { chan } => {
                let c = chan.0 as usize;
                if let Some(m) = bufs[c].pop_front() {
                    out.received[c] += 1;
                    push(&mut queue, now, task, Some(m), None);
                    // A slot freed: the first blocked writer completes its send.
                    if let Some((wt, wm)) = writers[c].pop_front() {
                        bufs[c].push_back(wm);
                        out.sent[c] += 1;
                        state[wt] = None;
                        push(&mut queue, now, wt, None, Some(now));
                    }
                } else {
                    state[task] = Some(Block::Recv(chan.0));
                    readers[c].push_back(task);
                }
            }
            Action::Wait => {
                if pending_wakes[task] > 0 {
                    pending_wakes[task] -= 1;
                    push(&mut queue, now, task, None, None);
                } else {
                    state[task] = Some(Block::Wait);
                }
            }
            Action::Wake { task: t, .. } => {
                let t = t.idx();
                if state[t] == Some(Block::Wait) {
                    state[t] = None;
                    push(&mut queue, now, t, None, Some(now));
                } else {
                    pending_wakes[t] += 1;
                }
                push(&mut queue, now, task, None, None);
            }
            Action::Barrier { id, .. } => {
                let b = id.0 as usize;
                barrier_waiting[b].push(task);
                if barrier_waiting[b].len() as u32 == w.barriers[b].parties {
                    for t in std::mem::take(&mut barrier_waiting[b]) {
                        state[t] = None;
                        push(&mut queue, now, t, None, Some(now));
                    }
                } else {
                    state[task] = Some(Block::Barrier(id.0));
                }
            }
            Action::Yield | Action::SetAffinity { .. } | Action::SetScheduler { .. } | Action::Spawn { .. } => {
                push(&mut queue, now, task, None, None)
            }
            Action::SemWait { sem, .. } => {
                let s = sem.0 as usize;
                if sem_count[s] > 0 {
                    sem_count[s] -= 1;
                    push(&mut queue, now, task, None, None);
                } else {
                    state[task] = Some(Block::Sem(sem.0));
                    sem_waiting[s].push_back(task);
                }
            }
            Action::SemPost { sem } => {
                let s = sem.0 as usize;
                match sem_waiting[s].pop_front() {
                    Some(t) => {
                        state[t] = None;
                        push(&mut queue, now, t, None, Some(now));
                    }
                    None => sem_count[s] += 1,
                }
                push(&mut queue, now, task, None, None);
            }
            Action::CondWait { cond } => {
                state[task] = Some(Block::Cond(cond.0));
                cond_waiting[cond.0 as usize].push_back(task);
            }
            Action::CondSignal { cond, all } => {
                while let Some(t) = cond_waiting[cond.0 as usize].pop_front() {
                    state[t] = None;
                    push(&mut queue, now, t, None, Some(now));
                    if !all {
                        break;
                    }
                }
                push(&mut queue, now, task, None, None);
            }
            Action::Exit => out.exited += 1,
        }
    }
    out.blocked = state.iter().filter(|s| s.is_some()).count();
    out
}
