//! The balancer's group descriptions, built once with the domains
//! (`FairState::new`): every domain's groups as [`GroupRef`]s with their CPU
//! lists and sum slots (`group_refs`), and the slot whose CPUs are a
//! domain's span (`span_slots`). Build-time only; the balance passes read
//! what they produce (`lb_stats.rs`).

use super::lb_stats::GroupRef;
use crate::cpumask::CpuMask;
use crate::ids::CpuId;

/// `FairState::sd_span_slot`: per domain, the group slot whose CPUs are the
/// domain's span, when the domain's groups lie within it and do not
/// overlap (their CPU counts add up to the span's), so that the sums of
/// its groups are the sums of that slot; `u32::MAX` where there is none
/// (a top level, whose span is no group's, or overlapping NUMA groups).
pub fn span_slots(domains: &crate::topology::Domains, refs: &[Vec<GroupRef>]) -> Vec<u32> {
    let mut by_span: std::collections::HashMap<CpuMask, u32, crate::topology::FixedHasher> =
        std::collections::HashMap::default();
    for g in refs.iter().flatten() {
        by_span.entry(g.span).or_insert(g.slot);
    }
    domains
        .sds
        .iter()
        .zip(refs)
        .map(|(sd, groups)| {
            let divides =
                groups.iter().all(|g| g.within_sd) && groups.iter().map(|g| g.nr_cpus).sum::<u32>() == sd.span.weight();
            if divides {
                by_span.get(&sd.span).copied().unwrap_or(u32::MAX)
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// The groups of every domain as [`GroupRef`]s, in `SchedDomain::groups`
/// order, indexed by `SdId`: the static part of `struct sched_group`
/// (`sg->flags` is the child domain's flags, `sg->cores` its core count).
pub fn group_refs(
    domains: &crate::topology::Domains,
    machine: &crate::topology::Machine,
) -> (Vec<Vec<GroupRef>>, Vec<CpuId>) {
    let mut cpus = Vec::new();
    // Build-time only: the slot of each distinct (CPUs, imbalance_pct). A
    // fixed-key hasher (`DefaultHasher::new`), not the randomly seeded one,
    // so that a build costs the same instructions every time (callgrind
    // figures repeat exactly); the map is only looked up, never iterated.
    let mut slots: std::collections::HashMap<(CpuMask, u32), u32, crate::topology::FixedHasher> =
        std::collections::HashMap::default();
    let refs = domains
        .sds
        .iter()
        .map(|sd| {
            let flags = sd.child.map_or(0, |c| domains.sd(c).flags);
            sd.groups
                .iter()
                .enumerate()
                .map(|(index, &span)| {
                    let cores = span.iter().filter(|&c| machine.smt_mask(c).and(&span).first() == Some(c)).count();
                    let cpus_at = cpus.len() as u32;
                    cpus.extend(span.iter());
                    let nr_cpus = cpus.len() as u32 - cpus_at;
                    let next = slots.len() as u32;
                    let slot = *slots.entry((span, sd.imbalance_pct)).or_insert(next);
                    let first = span.first().unwrap_or(CpuId(0));
                    let within_sd = span.is_subset(&sd.span);
                    GroupRef { index, span, flags, cores: cores as u32, cpus_at, nr_cpus, slot, first, within_sd }
                })
                .collect()
        })
        .collect();
    (refs, cpus)
}
