//! What the collector needs to know about the machine and the tasks, copied
//! once so the per-event path reads only small arrays.

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns};
use crate::topology::machine::{Distance, Machine};
use crate::workload::PrimaryMetric;

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
}

impl MetricsContext {
    /// Context of a simulated run on `machine`.
    pub fn from_machine(machine: &Machine, allowed: Vec<CpuMask>, warmup_ns: Ns, primary: PrimaryMetric) -> Self {
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
            warmup_ns,
            primary,
            cpus_start_idle: true,
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
        }
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
