//! The machine as data: CPUs and the hardware they share, and the cost
//! parameters that turn a placement into time. Read-only once built
//! (house rule 7). Parsing lives in `spec.rs`; sched domains in `domains.rs`.

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns};

/// How far apart two CPUs are, from closest to farthest. Used to price a
/// migration's cache refill and to count migrations by distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Distance {
    /// The same CPU.
    Same,
    /// SMT siblings of one core (share L1/L2).
    Smt,
    /// Different cores of one cluster (share an L2 or an L3 tag).
    Cluster,
    /// Different clusters of one LLC.
    Llc,
    /// Different LLCs of one NUMA node.
    Package,
    /// Different NUMA nodes.
    Node,
}

impl Distance {
    /// Every distance but `Same`, closest first.
    pub const MIGRATION: [Distance; 5] =
        [Distance::Smt, Distance::Cluster, Distance::Llc, Distance::Package, Distance::Node];

    /// Lower-case name used in metrics and specs.
    pub fn name(self) -> &'static str {
        match self {
            Distance::Same => "same",
            Distance::Smt => "smt",
            Distance::Cluster => "cluster",
            Distance::Llc => "llc",
            Distance::Package => "package",
            Distance::Node => "node",
        }
    }
}

/// One CPU and where it sits.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuInfo {
    /// Its id (its index in `Machine::cpus`).
    pub id: CpuId,
    /// Global core index.
    pub core: u32,
    /// Global cluster index (a cluster is the whole LLC when the LLC has one cluster).
    pub cluster: u32,
    /// Global LLC index.
    pub llc: u32,
    /// NUMA node.
    pub node: u32,
    /// Package (socket).
    pub package: u32,
    /// Index into `Machine::core_types`.
    pub core_type: u16,
    /// Index into `Machine::freq_domains`.
    pub freq_domain: u32,
}

/// An operating performance point of a core type.
#[derive(Clone, Debug, PartialEq)]
pub struct Opp {
    /// Frequency in kHz.
    pub freq_khz: u32,
    /// Active power of one CPU at this OPP, in milliwatts.
    pub power_mw: u32,
}

/// An idle state (C-state / WFI / cluster-off).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleState {
    /// Name, e.g. "C1", "C6", "WFI".
    pub name: String,
    /// Time from an interrupt to the CPU running code again, in ns, as the
    /// cpuidle driver declares it: what the governors read.
    pub exit_latency_ns: Ns,
    /// The delay a wakeup from this state actually takes, in ns, when it
    /// differs from the declared one (`actual_exit_latency_us`, e.g. a VM's
    /// halt, which the host must reschedule the vCPU to leave; `schedlab
    /// calibrate` measures it); equal to `exit_latency_ns` otherwise. Only
    /// CPU-level states have one.
    pub actual_exit_latency_ns: Ns,
    /// Shortest idle period for which entering the state pays off, in ns.
    pub target_residency_ns: Ns,
    /// Power of one CPU while in the state, in milliwatts (for a cluster
    /// state: while the cluster is down; see `level`).
    pub power_mw: u32,
    /// What the state powers down: the CPU alone, or its whole cluster.
    pub level: IdleLevel,
    /// For a cluster state: the exit latency of a CPU that requested it
    /// while its cluster stayed up (the state's CPU part alone), ns; `None`:
    /// the deepest CPU state's.
    pub cpu_exit_latency_ns: Option<Ns>,
}

/// The power level an idle state reaches (the PSCI power level of its
/// `arm,psci-suspend-param`: 0 = core, 1 = cluster).
///
/// A cluster state is requested per CPU (PSCI platform-coordinated mode) but
/// takes effect only once every CPU of the cluster has requested one: until
/// then the requesting CPU sits in its deepest CPU-level state
/// (`cpuidle/cluster.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdleLevel {
    /// The CPU (core) alone: WFI, C-states, CPU power-down.
    #[default]
    Cpu,
    /// The CPU's cluster (`Machine::cluster_cpus`): cluster/L2 power-down.
    Cluster,
}

impl IdleLevel {
    /// The name the machine file uses.
    pub fn name(self) -> &'static str {
        match self {
            IdleLevel::Cpu => "cpu",
            IdleLevel::Cluster => "cluster",
        }
    }
}

/// A kind of core (all cores of a symmetric machine share one).
#[derive(Clone, Debug, PartialEq)]
pub struct CoreType {
    /// Name, e.g. "zen2", "A73".
    pub name: String,
    /// `capacity_orig` (`arch_scale_cpu_capacity`): performance at the highest
    /// OPP relative to the biggest core type of the machine, which is 1024.
    pub capacity: u32,
    /// Operating points, ascending frequency. The last one is the maximum.
    pub opps: Vec<Opp>,
    /// Frequency the CPUs run at when the machine has no governor (no
    /// cpufreq model), in kHz.
    pub nominal_freq_khz: u32,
    /// Speed of one hardware thread while its SMT sibling is busy, in percent
    /// of its speed alone.
    pub smt_speed_pct: u32,
    /// Idle states, shallowest first.
    pub idle_states: Vec<IdleState>,
}

/// The cpufreq governor of every frequency domain (`scaling_governor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    /// `performance`: the highest OPP, always.
    Performance,
    /// `powersave`: the lowest OPP, always.
    Powersave,
    /// `schedutil`: the scheduler's utilisation picks the OPP
    /// (kernel/sched/cpufreq_schedutil.c).
    Schedutil,
    /// `ondemand`: a per-CPU kworker samples the busy fraction every
    /// `sampling_rate` and requests a frequency from it
    /// (drivers/cpufreq/cpufreq_ondemand.c, cpufreq_governor.c; `cpufreq/ondemand.rs`).
    Ondemand,
    /// intel_pstate in active mode with its `powersave` policy, no HWP: the
    /// driver samples APERF/MPERF every 10 ms from the scheduler's hook and
    /// requests a P-state per CPU (drivers/cpufreq/intel_pstate.c;
    /// `cpufreq/intel_pstate.rs`).
    IntelPstate,
}

impl Governor {
    /// The name as `scaling_governor` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Governor::Performance => "performance",
            Governor::Powersave => "powersave",
            Governor::Schedutil => "schedutil",
            Governor::Ondemand => "ondemand",
            Governor::IntelPstate => "intel_pstate",
        }
    }

    /// Parse a governor name.
    pub fn parse(s: &str) -> Option<Governor> {
        match s {
            "performance" => Some(Governor::Performance),
            "powersave" => Some(Governor::Powersave),
            "schedutil" => Some(Governor::Schedutil),
            "ondemand" => Some(Governor::Ondemand),
            "intel_pstate" => Some(Governor::IntelPstate),
            _ => None,
        }
    }
}

/// The frequency model of a machine (`[freq_domain]` keys besides `per`).
#[derive(Clone, Debug, PartialEq)]
pub struct CpufreqParams {
    /// The governor; `None` keeps every CPU at its core type's
    /// `nominal_freq_khz` with no cpufreq model at all (no frequency events,
    /// no energy metrics): the behaviour of schedlab before DVFS.
    pub governor: Option<Governor>,
    /// `cpuinfo.transition_latency`: time from a frequency request to the
    /// new frequency being in effect, ns.
    pub transition_latency_ns: Ns,
    /// schedutil's `rate_limit_us` (`freq_update_delay_ns`): the shortest
    /// time between two frequency decisions of one policy, ns.
    pub rate_limit_ns: Ns,
    /// Whether the driver switches from the scheduler's context
    /// (`fast_switch_enabled`): the new frequency applies at once. Without
    /// it, schedutil's per-policy `sugov:N` thread switches, taking
    /// `sugov_work_ns` of CPU time and `transition_latency_ns` of waiting.
    pub fast_switch: bool,
    /// CPU time of one slow-path switch (`sugov_work`), ns.
    pub sugov_work_ns: Ns,
    /// Turbo: the highest frequency a core of a package may run at, kHz,
    /// by the number of active cores of that package (entry `n - 1` for
    /// `n` active cores). Empty: no turbo, every frequency is an OPP.
    pub turbo_khz: Vec<u32>,
    /// Index of the shallowest idle state whose CPUs do not count as active
    /// for turbo (a core is active while one of its CPUs runs or idles in
    /// a shallower state).
    pub turbo_inactive_state: u8,
    /// The P-state unit of the intel drivers (`pstate.scaling`), kHz:
    /// requests of `intel_pstate` are multiples of it.
    pub pstate_scaling_khz: u32,
    /// CPU time of one ondemand sample in its kworker (`dbs_work_handler`), ns.
    pub dbs_work_ns: Ns,
}

impl CpufreqParams {
    /// The turbo ceiling of a package with `active` active cores, kHz
    /// (`u32::MAX` without turbo). No active core reads the one-core entry.
    #[inline]
    pub fn turbo_cap_khz(&self, active: u32) -> u32 {
        match self.turbo_khz.len() {
            0 => u32::MAX,
            n => self.turbo_khz[(active.max(1) as usize).min(n) - 1],
        }
    }
}

impl Default for CpufreqParams {
    /// No governor; the defaults `spec.rs` documents for the other keys (a
    /// driver with no transition latency: fast switch, 1000 us rate limit).
    fn default() -> Self {
        CpufreqParams {
            governor: None,
            transition_latency_ns: 0,
            rate_limit_ns: 1000 * crate::ids::NSEC_PER_USEC,
            fast_switch: true,
            sugov_work_ns: 20 * crate::ids::NSEC_PER_USEC,
            turbo_khz: Vec::new(),
            turbo_inactive_state: u8::MAX,
            pstate_scaling_khz: crate::cpufreq::intel_pstate::DEFAULT_PSTATE_SCALING_KHZ,
            dbs_work_ns: crate::cpufreq::ondemand::DEFAULT_DBS_WORK_NS,
        }
    }
}

/// A frequency domain: CPUs that always run at the same frequency.
#[derive(Clone, Debug, PartialEq)]
pub struct FreqDomain {
    /// The CPUs.
    pub span: CpuMask,
}

/// Cost parameters: what placement decisions cost in time. Each is documented
/// where it is parsed (`spec.rs`) with its default and the reasoning behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct CostParams {
    /// Cache refill cost after a migration, in ns of work per KiB of the
    /// task's footprint, indexed by [`Distance`] (`Same` is 0).
    pub refill_ns_per_kib: [Ns; 6],
    /// Latency from `ttwu` on one CPU to the task being queued on another (IPI), ns.
    pub ipi_ns: Ns,
    /// Cost to the waker of examining one CPU in the idle-CPU search, ns.
    pub scan_ns_per_cpu: Ns,
    /// Cost to the balancing CPU of one `sched_balance_rq` pass, per CPU of
    /// the domain's span, ns.
    pub balance_ns_per_cpu: Ns,
    /// Fixed cost of one `sched_balance_rq` pass, ns.
    pub balance_ns_base: Ns,
    /// Cost of a context switch to the CPU that switches, ns.
    pub context_switch_ns: Ns,
    /// Cost of a wakeup (`try_to_wake_up`) to the waker, ns.
    pub wakeup_ns: Ns,
    /// Extra cost to a CPU of sending an IPI (a wakeup through the target's
    /// wake list, a remote `resched_curr`), ns: on bare metal a few hundred
    /// cycles, inside `wakeup_ns` (default 0); in a VM the send is a VM exit
    /// (`schedlab calibrate` measures it).
    pub ipi_send_ns: Ns,
    /// The waker's whole cost of a wakeup it queues on another CPU's wake
    /// list (TTWU_QUEUE: `select_task_rq`, the list add and the IPI; the
    /// enqueue runs on the target, inside the IPI's latency), ns, in place of
    /// `wakeup_ns + ipi_send_ns`. `None` (the default): those two, the waker
    /// paying for the enqueue as in a local wakeup. `schedlab calibrate` sets
    /// it where it can time such a wakeup's write; under TCG a local wakeup
    /// costs the waker 3-4 times a queued one.
    pub ttwu_queue_ns: Option<Ns>,
    /// CPU work of one small pipe `write()` that wakes nobody (syscall entry
    /// and exit, the pipe mutex, the copy into the page), ns: what the
    /// pipe-based workload families (pipe, workqueue, hackbench with pipes,
    /// chameneos) charge per write when their `write` is `auto`. A wakeup the
    /// write causes is priced by the engine on top (`wakeup_ns`).
    pub pipe_write_ns: Ns,
    /// CPU work of one small pipe `read()` that finds its data, ns: those
    /// families' `read` when `auto`.
    pub pipe_read_ns: Ns,
    /// Size of the private cache (L2) of one core, KiB.
    pub l2_kib: u32,
    /// Size of one LLC, KiB.
    pub llc_kib: u32,
}

/// A machine description, validated and sealed.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Preset or file name.
    pub name: String,
    /// One line saying what it is.
    pub description: String,
    /// Every CPU, indexed by `CpuId`.
    pub cpus: Vec<CpuInfo>,
    /// Kinds of cores.
    pub core_types: Vec<CoreType>,
    /// Frequency domains.
    pub freq_domains: Vec<FreqDomain>,
    /// The frequency model (governor and driver timings).
    pub cpufreq: CpufreqParams,
    /// The idle model (`[cpuidle]`: governor, latency limit).
    pub cpuidle: crate::cpuidle::CpuidleParams,
    /// NUMA distance matrix (`node_distance`), `nr_nodes x nr_nodes`, local = 10.
    pub numa_distance: Vec<Vec<u32>>,
    /// Cost parameters.
    pub cost: CostParams,
    /// Tick rate (`CONFIG_HZ`).
    pub hz: u32,
    /// Number of cores.
    pub nr_cores: u32,
    /// Number of clusters.
    pub nr_clusters: u32,
    /// Number of LLCs.
    pub nr_llcs: u32,
    /// Number of NUMA nodes.
    pub nr_nodes: u32,
    /// Number of packages.
    pub nr_packages: u32,
    /// Whether clusters are a real level (more than one cluster in some LLC).
    pub has_clusters: bool,
    /// SMT siblings of each core, indexed by core.
    pub core_cpus: Vec<CpuMask>,
    /// CPUs of each cluster.
    pub cluster_cpus: Vec<CpuMask>,
    /// CPUs of each LLC.
    pub llc_cpus: Vec<CpuMask>,
    /// CPUs of each node.
    pub node_cpus: Vec<CpuMask>,
    /// CPUs of each package.
    pub package_cpus: Vec<CpuMask>,
}

impl Machine {
    /// Number of CPUs.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// All CPUs.
    pub fn all_cpus(&self) -> CpuMask {
        CpuMask::first_n(self.cpus.len())
    }

    /// How far apart `a` and `b` are.
    #[inline]
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        let (x, y) = (&self.cpus[a.idx()], &self.cpus[b.idx()]);
        if a == b {
            Distance::Same
        } else if x.core == y.core {
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

    /// SMT siblings of `cpu`, itself included (`cpu_smt_mask`).
    #[inline]
    pub fn smt_mask(&self, cpu: CpuId) -> &CpuMask {
        &self.core_cpus[self.cpus[cpu.idx()].core as usize]
    }

    /// CPUs sharing `cpu`'s LLC (`sched_domain_span(sd_llc)`).
    #[inline]
    pub fn llc_mask(&self, cpu: CpuId) -> &CpuMask {
        &self.llc_cpus[self.cpus[cpu.idx()].llc as usize]
    }

    /// CPUs of `cpu`'s cluster (`cpu_clustergroup_mask`).
    #[inline]
    pub fn cluster_mask(&self, cpu: CpuId) -> &CpuMask {
        &self.cluster_cpus[self.cpus[cpu.idx()].cluster as usize]
    }

    /// Whether two CPUs share an LLC (`cpus_share_cache`).
    #[inline]
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.cpus[a.idx()].llc == self.cpus[b.idx()].llc
    }

    /// `arch_scale_cpu_capacity(cpu)`: capacity at the highest OPP.
    #[inline]
    pub fn capacity_orig(&self, cpu: CpuId) -> u32 {
        self.core_types[self.cpus[cpu.idx()].core_type as usize].capacity
    }

    /// The core type of `cpu`.
    #[inline(always)]
    pub fn core_type(&self, cpu: CpuId) -> &CoreType {
        &self.core_types[self.cpus[cpu.idx()].core_type as usize]
    }

    /// Whether SMT is present (some core has more than one thread): more
    /// CPUs than cores, since every core has at least one. Constant time: the
    /// tick and the wakeup path ask.
    #[inline]
    pub fn has_smt(&self) -> bool {
        self.cpus.len() > self.nr_cores as usize
    }

    /// Whether CPU capacities differ (`sched_asym_cpucap_active`).
    pub fn asym_capacity(&self) -> bool {
        let first = self.capacity_orig(CpuId(0));
        (0..self.cpus.len()).any(|c| self.capacity_orig(CpuId(c as u32)) != first)
    }
}
