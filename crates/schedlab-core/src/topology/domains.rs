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
use crate::error::{Result, SchedlabError};
use crate::ids::CpuId;
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
    /// Imbalance threshold in percent: 110 at SMT, 117 everywhere else
    /// (current `sd_init` initialises 117; the old 125 default is gone).
    pub imbalance_pct: u32,
    /// Initial and minimum balance interval, ms (`min_interval` = span weight).
    pub min_interval_ms: u32,
    /// Maximum balance interval, ms (`max_interval` = 2 x span weight).
    pub max_interval_ms: u32,
    /// Interval multiplier while the CPU is busy (`busy_factor`, 16).
    pub busy_factor: u32,
    /// `cache_nice_tries`: 0 at SMT, 1 at LLC and PKG levels, 2 at NUMA levels.
    pub cache_nice_tries: u32,
    /// The domain above in the chain of the CPUs of this span, if any.
    pub parent: Option<SdId>,
    /// The domain below, if any. A domain is shared by the CPUs of its span
    /// while each CPU has its own child; this is the child in the chain of
    /// the lowest-numbered CPU holding the domain (use [`Domains::chain`]
    /// for a given CPU's child).
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
    /// Per CPU, its lowest domain with `SD_ASYM_CPUCAPACITY_FULL`
    /// (`sd_asym_cpucapacity`, as `update_top_cache_domain` sets it).
    pub sd_asym_cpucapacity: Vec<Option<SdId>>,
    /// Some CPU has an `sd_asym_cpucapacity` (`sched_asym_cpucap_active()`,
    /// a static key in the kernel): computed once, read on every wakeup.
    pub asym_cpucap_active: bool,
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

/// `node_reclaim_distance` default (`RECLAIM_DISTANCE`, include/linux/topology.h):
/// NUMA levels farther than this lose fork/exec balancing and wake_affine.
pub const RECLAIM_DISTANCE: u32 = 30;

/// Flags that need two or more groups to mean anything (`SDF_NEEDS_GROUPS`
/// in sd_flags.h, gathered as `SD_DEGENERATE_GROUPS_MASK`): every flag but
/// `SD_WAKE_AFFINE`.
const SD_DEGENERATE_GROUPS_MASK: u32 = ((1 << SD_FLAG_NAMES.len()) - 1) & !SD_WAKE_AFFINE;

/// A level of the topology table (`sched_domain_topology_level`): the
/// default table (SMT, CLS, MC, PKG) followed by what `sched_init_numa` adds
/// (NODE at the local distance, then one NUMA level per larger distance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tl {
    Smt,
    Cls,
    Mc,
    Pkg,
    Node,
    /// Index into the sorted distinct distances (from 1).
    Numa(usize),
}

/// A per-CPU domain before degeneration (the kernel's per-CPU `sd`, whose
/// child is the same CPU's domain one table level down).
#[derive(Clone)]
struct PreSd {
    tl: Tl,
    span: CpuMask,
    flags: u32,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    groups: Vec<CpuMask>,
}

/// The topology-level mask of `cpu` (`tl->mask(tl, cpu)`).
fn tl_mask(m: &Machine, tl: Tl, cpu: CpuId, numa_masks: &[Vec<CpuMask>]) -> CpuMask {
    let node = m.cpus[cpu.idx()].node as usize;
    match tl {
        Tl::Smt => *m.smt_mask(cpu),
        // CLS is the cluster where the machine has one; otherwise it is the
        // SMT mask (as arm64's cpu_clustergroup_mask and x86's L2 mask give),
        // so the level degenerates.
        Tl::Cls if m.has_clusters => *m.cluster_mask(cpu),
        Tl::Cls => *m.smt_mask(cpu),
        Tl::Mc => *m.llc_mask(cpu),
        // tl_pkg_mask is cpu_node_mask: PKG never crosses a NUMA node.
        Tl::Pkg | Tl::Node => m.node_cpus[node],
        Tl::Numa(j) => numa_masks[j][node],
    }
}

/// `asym_cpu_capacity_classify`: ASYM when the span sees two or more
/// capacity values, plus FULL when it sees every value of the machine.
fn asym_cpu_capacity_classify(span: &CpuMask, classes: &[CpuMask]) -> u32 {
    let count = classes.iter().filter(|c| c.intersects(span)).count();
    let miss = classes.len() - count;
    match (count, miss) {
        (0..=1, _) => 0,
        (_, 0) => SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL,
        _ => SD_ASYM_CPUCAPACITY,
    }
}

/// `sd_init`: the one place where topology flags become behaviour.
fn sd_init(tl: Tl, span: CpuMask, classes: &[CpuMask], distances: &[u32]) -> PreSd {
    let tl_flags = match tl {
        Tl::Smt => SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
        Tl::Cls => SD_CLUSTER | SD_SHARE_LLC,
        Tl::Mc => SD_SHARE_LLC,
        Tl::Pkg | Tl::Node => 0,
        Tl::Numa(_) => SD_NUMA,
    };
    let mut flags = SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_BALANCE_FORK
        | SD_WAKE_AFFINE
        | SD_PREFER_SIBLING
        | tl_flags
        | asym_cpu_capacity_classify(&span, classes);
    let (mut imbalance_pct, mut cache_nice_tries) = (117, 0);
    if flags & SD_SHARE_CPUCAPACITY != 0 {
        imbalance_pct = 110;
    } else if flags & SD_SHARE_LLC != 0 {
        cache_nice_tries = 1;
    } else if flags & SD_NUMA != 0 {
        cache_nice_tries = 2;
        flags &= !SD_PREFER_SIBLING;
        // Current kernels build overlapping groups for every SD_NUMA domain;
        // SD_OVERLAP records that here.
        flags |= SD_SERIALIZE | SD_OVERLAP;
        if let Tl::Numa(j) = tl {
            if distances[j] > RECLAIM_DISTANCE {
                flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
            }
        }
    } else {
        cache_nice_tries = 1;
    }
    PreSd { tl, span, flags, imbalance_pct, cache_nice_tries, groups: Vec::new() }
}

/// `sd_degenerate`.
fn sd_degenerate(sd: &PreSd, flags: u32) -> bool {
    if sd.span.weight() == 1 {
        return true;
    }
    if flags & SD_DEGENERATE_GROUPS_MASK != 0 && sd.groups.len() > 1 {
        return false;
    }
    flags & SD_WAKE_AFFINE == 0
}

/// `sd_parent_degenerate`: the parent adds nothing to its child.
fn sd_parent_degenerate(sd: &PreSd, cflags: u32, parent: &PreSd, pflags: u32) -> bool {
    if sd_degenerate(parent, pflags) {
        return true;
    }
    if sd.span != parent.span {
        return false;
    }
    let mut pflags = pflags;
    if parent.groups.len() == 1 {
        pflags &= !SD_DEGENERATE_GROUPS_MASK;
    }
    !cflags & pflags == 0
}

fn mask_cmp(a: &CpuMask, b: &CpuMask) -> std::cmp::Ordering {
    a.iter().map(|c| c.0).cmp(b.iter().map(|c| c.0))
}

fn bug(msg: String) -> SchedlabError {
    SchedlabError::Runtime(format!("sched domain build: {msg}"))
}

/// Build the sched domains of `machine` as the kernel's
/// `build_sched_domains()` does for one root domain spanning every CPU:
/// per CPU, one domain per topology level bottom-up until a level spans the
/// machine (`sd_init`, `build_sched_domain`); groups (`build_sched_groups`,
/// or `build_overlap_sched_groups` with `find_descended_sibling` at NUMA
/// levels); then each CPU's chain drops degenerate levels as
/// `cpu_attach_domain` does. The result is checked as
/// `sched_domain_debug_one()` checks it; a failure is our bug (`Runtime`).
pub fn build_sched_domains(machine: &Machine) -> Result<Domains> {
    let m = machine;
    let n = m.nr_cpus();
    if n == 0 {
        return Err(bug("machine has no CPUs".into()));
    }
    let all = m.all_cpus();
    // asym_cpu_capacity_scan: one mask per distinct capacity; a single
    // capacity means a symmetric machine and an empty list.
    let mut caps: Vec<u32> = (0..n).map(|c| m.capacity_orig(CpuId(c as u32))).collect();
    caps.sort_unstable();
    caps.dedup();
    let classes: Vec<CpuMask> = if caps.len() < 2 {
        Vec::new()
    } else {
        caps.iter()
            .map(|&cap| CpuMask::from_cpus((0..n as u32).map(CpuId).filter(|&c| m.capacity_orig(c) == cap)))
            .collect()
    };
    // sched_init_numa: distinct distances ascending; per level and node the
    // CPUs of nodes within that distance.
    let mut distances: Vec<u32> = m.numa_distance.iter().flatten().copied().collect();
    distances.sort_unstable();
    distances.dedup();
    let numa_masks: Vec<Vec<CpuMask>> = distances
        .iter()
        .map(|&d| {
            (0..m.nr_nodes as usize)
                .map(|a| {
                    (0..m.nr_nodes as usize)
                        .filter(|&b| m.numa_distance[a][b] <= d)
                        .fold(CpuMask::new(), |acc, b| acc.or(&m.node_cpus[b]))
                })
                .collect()
        })
        .collect();
    let mut tls = vec![Tl::Smt, Tl::Cls, Tl::Mc, Tl::Pkg];
    if distances.len() > 1 {
        tls.push(Tl::Node);
        tls.extend((1..distances.len()).map(Tl::Numa));
    }

    // Per-CPU domains, bottom-up, stopping at the first that spans all.
    let mut pre: Vec<Vec<PreSd>> = Vec::with_capacity(n);
    for cpu in 0..n {
        let id = CpuId(cpu as u32);
        let mut chain: Vec<PreSd> = Vec::new();
        for &tl in &tls {
            let mut span = tl_mask(m, tl, id, &numa_masks).and(&all);
            if let Some(child) = chain.last() {
                // build_sched_domain's fixup for a broken arch topology.
                span = span.or(&child.span);
            }
            let sd = sd_init(tl, span, &classes, &distances);
            if sd.flags & SD_ASYM_CPUCAPACITY != 0 {
                if let Some(child) = chain.last_mut() {
                    // Don't attempt to spread across CPUs of different capacities.
                    child.flags &= !SD_PREFER_SIBLING;
                }
            }
            let done = sd.span == all;
            chain.push(sd);
            if done {
                break;
            }
        }
        pre.push(chain);
    }

    // Groups, on the pre-degeneration domains as the kernel builds them.
    for cpu in 0..n {
        for l in 0..pre[cpu].len() {
            let span = pre[cpu][l].span;
            let mut groups = Vec::new();
            let numa = pre[cpu][l].flags & SD_NUMA != 0;
            // The span's CPUs from `cpu` upward, wrapping, skipping those a
            // group already covers: `rest` holds the CPUs neither visited nor
            // covered, so each step is a bit search, not a walk of the span
            // (at 1024 CPUs the walk was most of building the domains).
            // Every CPU at or above `cpu` leaves `rest` before the search
            // wraps, so the first CPU left is then the next one in order.
            let mut rest = span;
            let mut from = cpu;
            while let Some(j) = rest.next_from(from).or_else(|| rest.first()) {
                from = j.idx();
                rest.clear(j);
                let sib_chain = &pre[j.idx()];
                let g = if numa {
                    // build_overlap_sched_groups
                    match sib_chain.get(l) {
                        Some(sib) if sib.span.test(j) => {}
                        _ => continue,
                    }
                    let mut s = l;
                    if s > 0 && !sib_chain[s - 1].span.is_subset(&span) {
                        // find_descended_sibling
                        while s > 0 && !sib_chain[s - 1].span.is_subset(&span) {
                            s -= 1;
                        }
                        while s > 0 && sib_chain[s - 1].span == sib_chain[s].span {
                            s -= 1;
                        }
                    }
                    if s > 0 {
                        sib_chain[s - 1].span
                    } else {
                        sib_chain[s].span
                    }
                } else if l == 0 {
                    CpuMask::from_cpus([j])
                } else {
                    match sib_chain.get(l - 1) {
                        Some(child) => child.span,
                        None => return Err(bug(format!("CPU {j} has no level {} domain", l - 1))),
                    }
                };
                rest = rest.andnot(&g);
                groups.push(g);
            }
            groups.sort_by(mask_cmp);
            pre[cpu][l].groups = groups;
        }
    }

    // cpu_attach_domain: drop degenerate parents, then a degenerate base.
    let mut chains: Vec<Vec<(usize, u32)>> = Vec::with_capacity(n);
    for chain_pre in &pre {
        let mut ch: Vec<(usize, u32)> = chain_pre.iter().enumerate().map(|(l, sd)| (l, sd.flags)).collect();
        let mut i = 0;
        while i + 1 < ch.len() {
            let (c, cf) = ch[i];
            let (p, pf) = ch[i + 1];
            if sd_parent_degenerate(&chain_pre[c], cf, &chain_pre[p], pf) {
                // The spans match, so SD_PREFER_SIBLING transfers down.
                ch[i].1 |= pf & SD_PREFER_SIBLING;
                ch.remove(i + 1);
            } else {
                i += 1;
            }
        }
        if let Some(&(b, bf)) = ch.first() {
            if sd_degenerate(&chain_pre[b], bf) {
                ch.remove(0);
            }
        }
        chains.push(ch);
    }

    // Store each distinct domain once, top-down so parents get ids first.
    let mut d = Domains {
        sds: Vec::new(),
        cpu_sd: vec![Vec::new(); n],
        sd_llc: vec![None; n],
        sd_asym_cpucapacity: vec![None; n],
        asym_cpucap_active: false,
        sd_numa: vec![None; n],
        nr_levels: 0,
    };
    type Key = (SdLevel, CpuMask, u32, Vec<CpuMask>, u32, Option<SdId>);
    // Looked up, never iterated; a fixed-key hasher keeps a build's
    // instruction count the same from run to run.
    let mut seen: std::collections::HashMap<Key, SdId, super::FixedHasher> = std::collections::HashMap::default();
    for cpu in 0..n {
        let ch = &chains[cpu];
        let mut ids = vec![SdId(0); ch.len()];
        let mut parent: Option<SdId> = None;
        for (depth, &(l, flags)) in ch.iter().enumerate().rev() {
            let sd = &pre[cpu][l];
            let level = match sd.tl {
                Tl::Smt => SdLevel::Smt,
                Tl::Cls => SdLevel::Cls,
                Tl::Mc => SdLevel::Mc,
                Tl::Pkg => SdLevel::Pkg,
                Tl::Numa(j) => SdLevel::Numa((j - 1) as u8),
                Tl::Node => return Err(bug(format!("NODE level survived on CPU {cpu}"))),
            };
            let key: Key = (level, sd.span, flags, sd.groups.clone(), depth as u32, parent);
            let id = *seen.entry(key).or_insert_with(|| {
                d.sds.push(SchedDomain {
                    level,
                    depth: depth as u32,
                    span: sd.span,
                    span_weight: sd.span.weight(),
                    groups: sd.groups.clone(),
                    flags,
                    imbalance_pct: sd.imbalance_pct,
                    min_interval_ms: sd.span.weight(),
                    max_interval_ms: 2 * sd.span.weight(),
                    busy_factor: 16,
                    cache_nice_tries: sd.cache_nice_tries,
                    parent,
                    child: None,
                });
                SdId((d.sds.len() - 1) as u32)
            });
            if let Some(p) = parent {
                d.sds[p.0 as usize].child.get_or_insert(id);
            }
            ids[depth] = id;
            parent = Some(id);
        }
        let has = |id: &SdId, f: u32| d.sds[id.0 as usize].flags & f != 0;
        d.sd_llc[cpu] = ids.iter().take_while(|id| has(id, SD_SHARE_LLC)).last().copied();
        d.sd_numa[cpu] = ids.iter().find(|id| has(id, SD_NUMA)).copied();
        d.sd_asym_cpucapacity[cpu] = ids.iter().find(|id| has(id, SD_ASYM_CPUCAPACITY_FULL)).copied();
        d.nr_levels = d.nr_levels.max(ids.len() as u32);
        d.cpu_sd[cpu] = ids;
    }
    d.asym_cpucap_active = d.sd_asym_cpucapacity.iter().any(|s| s.is_some());
    validate(&d)?;
    Ok(d)
}

/// The checks of `sched_domain_debug_one()`, on every CPU's chain.
pub fn validate(d: &Domains) -> Result<()> {
    for (cpu, chain) in d.cpu_sd.iter().enumerate() {
        let c = CpuId(cpu as u32);
        for (i, id) in chain.iter().enumerate() {
            let sd = d.sd(*id);
            // Formatted only for an error: 3,072 spans at 1024 CPUs cost more than the checks.
            let name = || format!("CPU {cpu} {} (span {})", sd.level.name(), sd.span.to_list_string());
            if !sd.span.test(c) {
                return Err(bug(format!("{}: domain->span does not contain the CPU", name())));
            }
            if !sd.groups.iter().any(|g| g.test(c)) {
                return Err(bug(format!("{}: domain->groups does not contain the CPU", name())));
            }
            let mut covered = CpuMask::new();
            for g in &sd.groups {
                if g.is_empty() {
                    return Err(bug(format!("{}: empty group", name())));
                }
                if sd.flags & SD_OVERLAP == 0 && covered.intersects(g) {
                    return Err(bug(format!("{}: repeated CPUs in groups", name())));
                }
                if !g.is_subset(&sd.span) {
                    return Err(bug(format!("{}: group {} outside the span", name(), g.to_list_string())));
                }
                covered = covered.or(g);
            }
            if covered != sd.span {
                return Err(bug(format!("{}: groups don't span domain->span", name())));
            }
            if i > 0 {
                let child = d.sd(chain[i - 1]);
                if !sd.groups.contains(&child.span) {
                    return Err(bug(format!("{}: domain->groups does not match domain->child", name())));
                }
            }
            if let Some(&p) = chain.get(i + 1) {
                if !sd.span.is_subset(&d.sd(p).span) {
                    return Err(bug(format!("{}: parent span is not a superset of domain->span", name())));
                }
                if sd.parent != Some(p) {
                    return Err(bug(format!("{}: parent link differs from the chain", name())));
                }
            } else if sd.parent.is_some() {
                return Err(bug(format!("{}: top domain has a parent", name())));
            }
        }
    }
    Ok(())
}
/// `CpuMask` helper re-exported for domain users.
pub type Span = CpuMask;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::parse_machine;
    use proptest::prelude::*;

    fn machine(topo: &str, extra: &str) -> Machine {
        let t = format!(
            "[machine]\nname = \"t\"\n[topology]\n{topo}\n[[core_type]]\nname = \"x\"\ncores = \"all\"\n\
             capacity = 1024\nnominal_freq_mhz = 1000\n{extra}"
        );
        parse_machine(&t, "toml", "t").unwrap()
    }

    #[test]
    fn single_cpu_has_no_domains() {
        let d = build_sched_domains(&machine("cores_per_cluster = 1", "")).unwrap();
        assert_eq!(d.nr_levels, 0);
        assert!(d.chain(CpuId(0)).is_empty());
        assert_eq!(d.sd_llc[0], None);
    }

    #[test]
    fn far_numa_level_drops_affine_and_fork() {
        // A ring of 4 nodes (0-1-2-3-0): neighbours at 20, opposite nodes
        // at 40, which exceeds RECLAIM_DISTANCE (30).
        let m = machine(
            "packages = 4\ncores_per_cluster = 2\nnuma_distance = [[10,20,40,20],[20,10,20,40],[40,20,10,20],[20,40,20,10]]",
            "",
        );
        let d = build_sched_domains(&m).unwrap();
        let ch: Vec<&SchedDomain> = d.chain(CpuId(0)).iter().map(|&id| d.sd(id)).collect();
        let levels: Vec<String> = ch.iter().map(|s| s.level.name()).collect();
        assert_eq!(levels, ["MC", "NUMA0", "NUMA1"]);
        assert_eq!(ch[1].span.to_list_string(), "0-3,6-7");
        assert!(ch[1].has(SD_WAKE_AFFINE) && ch[1].has(SD_BALANCE_EXEC));
        assert!(!ch[2].has(SD_WAKE_AFFINE) && !ch[2].has(SD_BALANCE_FORK) && !ch[2].has(SD_BALANCE_EXEC));
        // Overlapping groups at the top: node 0's {0,1,3} and node 2's {1,2,3}.
        let g: Vec<String> = ch[2].groups.iter().map(|g| g.to_list_string()).collect();
        assert_eq!(g, ["0-3,6-7", "2-7"]);
        assert!(ch[2].has(SD_OVERLAP));
    }

    #[test]
    fn partial_asymmetry_is_not_full() {
        // Three capacities, one per LLC: an LLC-pair sees two of three.
        let t = "[machine]\nname = \"a\"\n[topology]\nllcs_per_node = 3\ncores_per_cluster = 2\n\
                 [[core_type]]\nname = \"s\"\ncores = \"0-1\"\ncapacity = 300\nnominal_freq_mhz = 1000\n\
                 [[core_type]]\nname = \"m\"\ncores = \"2-3\"\ncapacity = 600\nnominal_freq_mhz = 1000\n\
                 [[core_type]]\nname = \"b\"\ncores = \"4-5\"\ncapacity = 1024\nnominal_freq_mhz = 1000\n";
        let m = parse_machine(t, "toml", "a").unwrap();
        let classes = [
            CpuMask::parse_list("0-1").unwrap(),
            CpuMask::parse_list("2-3").unwrap(),
            CpuMask::parse_list("4-5").unwrap(),
        ];
        assert_eq!(asym_cpu_capacity_classify(&CpuMask::parse_list("0-3").unwrap(), &classes), SD_ASYM_CPUCAPACITY);
        assert_eq!(asym_cpu_capacity_classify(&CpuMask::parse_list("0-1").unwrap(), &classes), 0);
        let d = build_sched_domains(&m).unwrap();
        let top = d.sd(*d.chain(CpuId(0)).last().unwrap());
        assert!(top.has(SD_ASYM_CPUCAPACITY_FULL));
        assert_eq!(d.sd_asym_cpucapacity[0], Some(*d.chain(CpuId(0)).last().unwrap()));
    }

    #[test]
    fn validate_catches_broken_groups() {
        let m = machine("llcs_per_node = 2\ncores_per_cluster = 2", "");
        let mut d = build_sched_domains(&m).unwrap();
        let top = *d.chain(CpuId(0)).last().unwrap();
        d.sds[top.0 as usize].groups.pop();
        assert!(matches!(validate(&d), Err(SchedlabError::Runtime(_))));
    }

    fn arb_machine() -> impl Strategy<Value = String> {
        (
            1u32..=2,
            1u32..=2,
            1u32..=3,
            1u32..=3,
            1u32..=3,
            1u32..=2,
            any::<bool>(),
            proptest::collection::vec(11u32..=40, 6),
        )
            .prop_map(|(pk, np, llc, cl, co, th, split, dist)| {
                let n = (pk * np) as usize;
                // A symmetric random distance table over the nodes.
                let rows: Vec<Vec<u32>> = (0..n)
                    .map(|i| {
                        (0..n).map(|j| if i == j { 10 } else { dist[(i.min(j) * n + i.max(j)) % dist.len()] }).collect()
                    })
                    .collect();
                let rows: Vec<String> = rows
                    .iter()
                    .map(|r| format!("[{}]", r.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")))
                    .collect();
                format!(
                    "packages = {pk}\nnodes_per_package = {np}\nllcs_per_node = {llc}\nclusters_per_llc = {cl}\n\
                     cores_per_cluster = {co}\nthreads_per_core = {th}\nsmt_numbering = \"{}\"\nnuma_distance = [{}]",
                    if split { "split" } else { "adjacent" },
                    rows.join(",")
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn random_topologies_build_valid_domains(topo in arb_machine()) {
            let m = machine(&topo, "");
            let d = build_sched_domains(&m).map_err(|e| TestCaseError::fail(format!("{topo}\n{e}")))?;
            for cpu in 0..m.nr_cpus() {
                let ch = d.chain(CpuId(cpu as u32));
                if let Some(&top) = ch.last() {
                    prop_assert_eq!(d.sd(top).span, m.all_cpus());
                }
                if let Some(llc) = d.sd_llc[cpu] {
                    prop_assert_eq!(&d.sd(llc).span, m.llc_mask(CpuId(cpu as u32)));
                }
            }
        }
    }
}
