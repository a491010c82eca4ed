//! What the collector needs to know about the machine and the tasks, copied
//! once so the per-event path reads only small arrays.

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns};
use crate::topology::machine::{Distance, Machine};
use crate::workload::{PrimaryMetric, SchedPolicy, Workload};

/// `task_part` value of a task that belongs to no measured part (noise).
pub const NO_PART: u32 = u32::MAX;

/// A part of the workload whose workload metrics are reported on their own
/// (see `workload/compose.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasuredPart {
    /// Prefix of its metric names: `""` for the main part, `wN.` for others.
    pub prefix: String,
}

/// Where one CPU sits: the ids [`Machine::distance`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CpuTopo {
    /// Global core index.
    pub core: u32,
    /// Global cluster index.
    pub cluster: u32,
    /// Global LLC index.
    pub llc: u32,
    /// NUMA node.
    pub node: u32,
}

/// Inputs of a [`crate::metrics::Collector`].
#[derive(Clone, Debug)]
pub struct MetricsContext {
    /// Number of CPUs (a real trace may reveal more; the collector grows).
    pub nr_cpus: usize,
    /// Topology of each CPU, indexed by `CpuId`.
    pub topo: Vec<CpuTopo>,
    /// Whether clusters are a real level (see `Machine::has_clusters`).
    pub has_clusters: bool,
    /// Affinity of each task, indexed by `TaskId`. Tasks beyond the end (a
    /// real trace discovers them as it goes) may run anywhere until
    /// [`crate::metrics::Collector::set_allowed`] says otherwise.
    pub allowed: Vec<CpuMask>,
    /// Events before this time update state but are not counted, ns.
    pub warmup_ns: Ns,
    /// The workload's primary metric.
    pub primary: PrimaryMetric,
    /// Whether every CPU is idle at time 0 (a simulation). When false (a real
    /// trace), the measured window starts at the first event, and each CPU's
    /// state before its first `sched_switch` is taken from that switch's
    /// previous task.
    pub cpus_start_idle: bool,
    /// Scheduling policy of each task, indexed by `TaskId`; `None` when
    /// unknown (a real trace), and then `rt_pct` is not reported.
    pub policy: Option<Vec<SchedPolicy>>,
    /// Measured part of each task, an index into `parts`, or [`NO_PART`]
    /// (noise: its marks and exits count for no workload metric). Empty: every
    /// task is in part 0 (a real trace, a single workload without noise).
    pub task_part: Vec<u32>,
    /// The measured parts; the first is the main one (unprefixed names).
    /// Never empty.
    pub parts: Vec<MeasuredPart>,
    /// When each task starts, ns (empty for real traces: all at 0).
    pub task_start_ns: Vec<Ns>,
    /// Tasks the scheduler metrics are about (`analyze --comm/--pid`):
    /// wakeups, migrations, placement fractions and context switches count
    /// only these. Empty: every task.
    pub selection: Vec<bool>,
    /// The energy model, when the run has a governor (`energy_j` & co.).
    pub energy: Option<super::energy::EnergyCtx>,
    /// The machine's idle states, for `idle_residency.<state>` (absent for
    /// a trace read without one).
    pub idle_states: Option<super::idle_states::IdleStatesCtx>,
}

impl MetricsContext {
    /// Context of a simulated run of `workload` on `machine`: each task's
    /// policy, and one measured part holding every task that is not noise
    /// (a composition refines the parts with [`MetricsContext::set_parts`]).
    pub fn from_machine(machine: &Machine, allowed: Vec<CpuMask>, workload: &Workload) -> Self {
        let topo = machine
            .cpus
            .iter()
            .map(|c| CpuTopo { core: c.core, cluster: c.cluster, llc: c.llc, node: c.node })
            .collect();
        Self {
            nr_cpus: machine.nr_cpus(),
            topo,
            has_clusters: machine.has_clusters,
            allowed,
            warmup_ns: workload.warmup_ns,
            primary: workload.primary,
            cpus_start_idle: true,
            policy: Some(workload.tasks.iter().map(|t| t.policy).collect()),
            task_part: workload.tasks.iter().map(|t| if t.noise { NO_PART } else { 0 }).collect(),
            parts: vec![MeasuredPart { prefix: String::new() }],
            task_start_ns: workload.tasks.iter().map(|t| t.start_ns).collect(),
            selection: Vec::new(),
            energy: machine
                .cpufreq
                .governor
                .map(|_| super::energy::EnergyCtx::from_machine(machine, crate::cpufreq::start_khz(machine))),
            idle_states: Some(super::idle_states::IdleStatesCtx::from_machine(machine)),
        }
    }

    /// Context of a real trace with no machine description: every CPU its own
    /// core in one LLC (so every migration counts as `migrations_llc`), tasks
    /// unrestricted, no warm-up, CPU states unknown until their first switch.
    pub fn flat(nr_cpus: usize) -> Self {
        let topo = (0..nr_cpus as u32).map(|i| CpuTopo { core: i, cluster: i, ..Default::default() }).collect();
        Self {
            nr_cpus,
            topo,
            has_clusters: false,
            allowed: Vec::new(),
            warmup_ns: 0,
            primary: PrimaryMetric::CompletionTime,
            cpus_start_idle: false,
            policy: None,
            task_part: Vec::new(),
            parts: vec![MeasuredPart { prefix: String::new() }],
            task_start_ns: Vec::new(),
            selection: Vec::new(),
            energy: None,
            idle_states: None,
        }
    }

    /// Context of a real trace taken on `machine`: [`MetricsContext::flat`]
    /// with the machine's topology, so migrations and placement fractions
    /// know SMT siblings, LLCs and nodes.
    pub fn for_trace_on(machine: &Machine) -> Self {
        let mut c = Self::flat(machine.nr_cpus());
        c.topo = machine
            .cpus
            .iter()
            .map(|c| CpuTopo { core: c.core, cluster: c.cluster, llc: c.llc, node: c.node })
            .collect();
        c.has_clusters = machine.has_clusters;
        c
    }

    /// Whether a selection restricts the scheduler metrics.
    #[inline]
    pub fn has_selection(&self) -> bool {
        !self.selection.is_empty()
    }

    /// Whether `task` counts for the scheduler metrics.
    #[inline]
    pub fn selected(&self, task: usize) -> bool {
        self.selection.is_empty() || self.selection.get(task).copied().unwrap_or(false)
    }

    /// Where a wakeup put a task relative to the CPU it last ran on: 0 the
    /// same CPU, 1 an SMT sibling, 2 another core of the LLC, 3 another LLC
    /// of the node, 4 another node.
    #[inline]
    pub fn wake_distance(&self, last: CpuId, to: CpuId) -> usize {
        match self.distance(last, to) {
            Distance::Same => 0,
            Distance::Smt => 1,
            Distance::Cluster | Distance::Llc => 2,
            Distance::Package => 3,
            Distance::Node => 4,
        }
    }

    /// Attributes tasks to the parts of a composed workload: `task_part[t]`
    /// indexes `part_prefixes` (`None` = a noise part, measured by no
    /// workload metric). Tasks flagged noise stay unmeasured. The first
    /// measured part must have the empty prefix.
    pub fn set_parts(&mut self, task_part: &[u32], part_prefixes: &[Option<String>]) {
        let mut index = vec![NO_PART; part_prefixes.len()];
        self.parts.clear();
        for (i, p) in part_prefixes.iter().enumerate() {
            if let Some(prefix) = p {
                index[i] = self.parts.len() as u32;
                self.parts.push(MeasuredPart { prefix: prefix.clone() });
            }
        }
        debug_assert!(self.parts.first().is_some_and(|p| p.prefix.is_empty()), "the main part comes first");
        let noise: Vec<bool> = (0..task_part.len()).map(|t| self.task_part.get(t) == Some(&NO_PART)).collect();
        self.task_part =
            task_part.iter().zip(noise).map(|(&p, n)| if n { NO_PART } else { index[p as usize] }).collect();
    }

    /// Measured part of `task` ([`NO_PART`] for noise).
    #[inline]
    pub fn part_of(&self, task: usize) -> u32 {
        if self.task_part.is_empty() {
            0
        } else {
            self.task_part.get(task).copied().unwrap_or(NO_PART)
        }
    }

    /// When measured part `k` starts: its earliest task start (0 when
    /// unknown, as for a real trace).
    pub fn part_start_ns(&self, k: usize) -> Ns {
        (0..self.task_start_ns.len())
            .filter(|&t| self.part_of(t) as usize == k)
            .map(|t| self.task_start_ns[t])
            .min()
            .unwrap_or(0)
    }

    /// Whether `task` is noise (it does not keep a run alive).
    #[inline]
    pub fn is_noise(&self, task: usize) -> bool {
        self.part_of(task) == NO_PART
    }

    /// `task` changed its policy mid-run (known policies only: a real
    /// trace's context has none).
    pub fn set_policy(&mut self, task: usize, policy: SchedPolicy) {
        if let Some(p) = self.policy.as_mut().and_then(|p| p.get_mut(task)) {
            *p = policy;
        }
    }

    /// Whether `task` runs in the RT class (`false` when policies are unknown).
    #[inline]
    pub fn is_rt(&self, task: usize) -> bool {
        self.policy.as_ref().and_then(|p| p.get(task)).is_some_and(|p| p.is_rt())
    }

    /// How far apart `a` and `b` are, as [`Machine::distance`] decides.
    /// A CPU without topology (beyond `topo`) counts as another core of the
    /// same LLC.
    #[inline]
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        if a == b {
            return Distance::Same;
        }
        let (Some(x), Some(y)) = (self.topo.get(a.idx()), self.topo.get(b.idx())) else {
            return Distance::Llc;
        };
        if x.core == y.core {
            Distance::Smt
        } else if x.cluster == y.cluster && self.has_clusters {
            Distance::Cluster
        } else if x.llc == y.llc {
            Distance::Llc
        } else if x.node == y.node {
            Distance::Package
        } else {
            Distance::Node
        }
    }

    /// Registry name of the primary metric.
    pub fn primary_metric_name(&self) -> &'static str {
        match self.primary {
            PrimaryMetric::CompletionTime => "completion_time_s",
            PrimaryMetric::Throughput => "requests_per_s",
        }
    }
}
