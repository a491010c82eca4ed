//! Sched domains, built from a [`Machine`] the way the kernel's
//! `build_sched_domains()` builds them (kernel/sched/topology.c): one level per
//! entry of the default topology table (SMT, CLS, MC, PKG) plus NUMA levels by
//! distance, degenerate levels dropped, flags and tunables set in one
//! `sd_init()`.
//!
//! Each distinct domain (a level and a span) is stored once in
//! [`Domains::sds`]; `cpu_sd[cpu]` lists the domains of `cpu` bottom-up, as
//! the kernel's per-CPU `rq->sd` chain does. Per-CPU balancing state
//! (`balance_interval`, `nr_balance_failed`, `max_newidle_lb_cost`) lives in
//! the engine, indexed by (cpu, level).

use crate::cpumask::CpuMask;
use crate::topology::machine::Machine;

/// Index into [`Domains::sds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SdId(pub u32);

/// The level a domain was built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SdLevel {
    /// SMT siblings of one core.
    Smt,
    /// A cluster (cores sharing an L2 or an L3 tag).
    Cls,
    /// The last-level cache.
    Mc,
    /// The package (socket), or the whole machine on single-node systems.
    Pkg,
    /// A NUMA level; the number is the level's order, from 0.
    Numa(u8),
}

impl SdLevel {
    /// The kernel's name for the level (`SMT`, `CLS`, `MC`, `PKG`, `NUMA`).
    pub fn name(self) -> String {
        match self {
            SdLevel::Smt => "SMT".into(),
            SdLevel::Cls => "CLS".into(),
            SdLevel::Mc => "MC".into(),
            SdLevel::Pkg => "PKG".into(),
            SdLevel::Numa(n) => format!("NUMA{n}"),
        }
    }
}

// Sched domain flags, as in include/linux/sched/sd_flags.h. Behaviour is
// mapped from them in `sd_init`, never from the level.
/// Balance when about to become idle.
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
/// Balance on exec.
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
/// Balance on fork, clone.
pub const SD_BALANCE_FORK: u32 = 1 << 2;
/// Balance on wakeup (off in mainline defaults).
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
/// Consider waking the task on the waking CPU.
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
/// Domain members have different CPU capacities.
pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
/// Domain members have different capacities and every capacity is present.
pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
/// Members share CPU capacity (SMT).
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
/// Members share a cluster resource (L2, L3 tag).
pub const SD_CLUSTER: u32 = 1 << 8;
/// Members share the last-level cache.
pub const SD_SHARE_LLC: u32 = 1 << 9;
/// Only one load-balancing instance at a time (NUMA levels).
pub const SD_SERIALIZE: u32 = 1 << 10;
/// Place busy tasks earlier in the domain (asymmetric packing).
pub const SD_ASYM_PACKING: u32 = 1 << 11;
/// Place busy siblings in the sibling domain.
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
/// Groups of this domain overlap (NUMA).
pub const SD_OVERLAP: u32 = 1 << 13;
/// Cross-node balancing.
pub const SD_NUMA: u32 = 1 << 14;

/// Names of the flags, in bit order, for `topo show`.
pub const SD_FLAG_NAMES: [&str; 15] = [
    "SD_BALANCE_NEWIDLE",
    "SD_BALANCE_EXEC",
    "SD_BALANCE_FORK",
    "SD_BALANCE_WAKE",
    "SD_WAKE_AFFINE",
    "SD_ASYM_CPUCAPACITY",
    "SD_ASYM_CPUCAPACITY_FULL",
    "SD_SHARE_CPUCAPACITY",
    "SD_CLUSTER",
    "SD_SHARE_LLC",
    "SD_SERIALIZE",
    "SD_ASYM_PACKING",
    "SD_PREFER_SIBLING",
    "SD_OVERLAP",
    "SD_NUMA",
];

/// One sched domain.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedDomain {
    /// The level.
    pub level: SdLevel,
    /// Position in every CPU's chain (0 = lowest surviving level).
    pub depth: u32,
    /// CPUs of the domain (`sched_domain_span`).
    pub span: CpuMask,
    /// `span.weight()`.
    pub span_weight: u32,
    /// The groups, ascending by first CPU. For non-NUMA levels they partition
    /// the span (each is a child domain's span); NUMA groups may overlap.
    pub groups: Vec<CpuMask>,
    /// `SD_*` flags.
    pub flags: u32,
    /// Imbalance threshold in percent (110 SMT, 117 LLC, 125 above; sd_init).
    pub imbalance_pct: u32,
    /// Initial and minimum balance interval, ms (`min_interval` = span weight).
    pub min_interval_ms: u32,
    /// Maximum balance interval, ms (`max_interval` = 2 x span weight).
    pub max_interval_ms: u32,
    /// Interval multiplier while the CPU is busy (`busy_factor`, 16).
    pub busy_factor: u32,
    /// `cache_nice_tries` (1 for levels that share the LLC... see sd_init).
    pub cache_nice_tries: u32,
    /// The domain above in the chain of the CPUs of this span, if any.
    pub parent: Option<SdId>,
    /// The domain below, if any.
    pub child: Option<SdId>,
}

impl SchedDomain {
    /// Whether the domain has `flag`.
    #[inline]
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

/// Every domain of a machine and each CPU's chain.
#[derive(Clone, Debug, PartialEq)]
pub struct Domains {
    /// Distinct domains.
    pub sds: Vec<SchedDomain>,
    /// Per CPU, its domains bottom-up (`for_each_domain`).
    pub cpu_sd: Vec<Vec<SdId>>,
    /// Per CPU, its highest domain with `SD_SHARE_LLC` (`sd_llc`), if any.
    pub sd_llc: Vec<Option<SdId>>,
    /// Per CPU, its lowest domain with `SD_ASYM_CPUCAPACITY` (`sd_asym_cpucapacity`).
    pub sd_asym_cpucapacity: Vec<Option<SdId>>,
    /// Per CPU, its lowest domain with `SD_NUMA` (`sd_numa`).
    pub sd_numa: Vec<Option<SdId>>,
    /// Number of levels that survived degeneration (the length of the longest chain).
    pub nr_levels: u32,
}

impl Domains {
    /// The domain with id `id`.
    #[inline]
    pub fn sd(&self, id: SdId) -> &SchedDomain {
        &self.sds[id.0 as usize]
    }

    /// `cpu`'s domains bottom-up.
    #[inline]
    pub fn chain(&self, cpu: crate::ids::CpuId) -> &[SdId] {
        &self.cpu_sd[cpu.idx()]
    }
}

/// Build the sched domains of `machine` (`build_sched_domains`), and check
/// them as `sched_domain_debug_one()` does: groups cover the span, each group
/// lies within the span, and a parent's span contains its child's.
pub fn build_sched_domains(machine: &Machine) -> crate::error::Result<Domains> {
    let _ = machine;
    todo!("topology helper implements this")
}

/// `CpuMask` helper re-exported for domain users.
pub type Span = CpuMask;
