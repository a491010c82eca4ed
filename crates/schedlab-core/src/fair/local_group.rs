//! A CPU's own group in each of its domains (the kernel's `sd->groups` of
//! that CPU's copy of a domain starts there): found once, when the group
//! descriptions are built, so that a balance pass (`lb_env`,
//! `update_sd_lb_stats`) does not test the spans of the groups before it.

use super::lb_stats::GroupRef;
use crate::engine::Sim;
use crate::ids::CpuId;
use crate::topology::domains::SdId;

/// Where a CPU's own group is in its domain's group list (the kernel's
/// `sd->groups` of that CPU's copy of the domain starts there): the first
/// group whose span holds the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalGroup {
    /// Index of the first group holding the CPU (0 when none does).
    pub index: u32,
    /// Some group holds the CPU.
    pub found: bool,
    /// Exactly one group holds it (overlapping NUMA groups may hold it
    /// twice), so the local group is the first and no other is.
    pub only: bool,
    /// Every group of the domain lies within its span (all but overlapping
    /// NUMA domains' groups), so a pass that excludes no CPU considers
    /// every CPU of every group (`GroupRef::within_sd` of each).
    pub all_within: bool,
}

impl LocalGroup {
    /// The direct computation: test every group's span.
    pub fn scan(refs: &[GroupRef], cpu: CpuId) -> Self {
        let mut lg = LocalGroup::default();
        let mut holders = 0;
        for (i, g) in refs.iter().enumerate() {
            if g.span.test(cpu) {
                if holders == 0 {
                    lg.index = i as u32;
                    lg.found = true;
                }
                holders += 1;
            }
        }
        lg.only = holders == 1;
        lg.all_within = refs.iter().all(|g| g.within_sd);
        lg
    }
}

/// Per CPU, per level of its chain: its [`LocalGroup`] in that domain, so
/// that a balance pass (`lb_env`, `update_sd_lb_stats`) finds it without
/// testing the spans of the groups before it (built once, with `group_refs`).
pub fn local_groups(domains: &crate::topology::Domains, refs: &[Vec<GroupRef>]) -> Vec<Vec<LocalGroup>> {
    domains
        .cpu_sd
        .iter()
        .enumerate()
        .map(|(c, chain)| chain.iter().map(|sd| LocalGroup::scan(&refs[sd.0 as usize], CpuId(c as u32))).collect())
        .collect()
}

impl Sim {
    /// Where `cpu`'s own group is among the groups of domain `sd`: from the
    /// table built with the groups when `sd` is in `cpu`'s chain (always, on
    /// the balance paths), else found by testing every group's span.
    pub(crate) fn local_group(&self, sd: SdId, cpu: CpuId) -> LocalGroup {
        self.local_group_at(sd, self.domains.sd(sd).depth as usize, cpu)
    }

    /// [`Sim::local_group`] when `sd` is the domain at `level` of some
    /// CPU's chain (its depth), as a balance pass's `env.level` says.
    #[inline(always)]
    pub(crate) fn local_group_at(&self, sd: SdId, level: usize, cpu: CpuId) -> LocalGroup {
        let chain = self.sd_chain(cpu);
        let lg = if level < chain.len() && chain[level] == sd {
            self.fair.sg_local[cpu.idx()][level]
        } else {
            LocalGroup::scan(&self.fair.sg_refs[sd.0 as usize], cpu)
        };
        debug_assert_eq!(lg, LocalGroup::scan(&self.fair.sg_refs[sd.0 as usize], cpu));
        lg
    }
}
