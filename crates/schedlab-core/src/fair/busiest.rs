//! Finding the busiest group and runqueue and sizing the imbalance
//! (kernel/sched/fair.c): `sched_balance_find_src_group`
//! (`find_busiest_group`) with its decision matrix, `calculate_imbalance`
//! with `sibling_imbalance` and the NUMA allowance, and
//! `sched_balance_find_src_rq` (`find_busiest_queue`). Pure functions of
//! `&Sim` and the [`LbEnv`].
//!
//! Decision matrix of the kernel (busiest \\ local):
//!
//! ```text
//!               has_spare fully_busy misfit asym imbalanced overloaded
//! has_spare     nr_idle   balanced   N/A    N/A  balanced   balanced
//! fully_busy    nr_idle   nr_idle    N/A    N/A  balanced   balanced
//! misfit_task   force     N/A        N/A    N/A  N/A        N/A
//! asym_packing  force     force      N/A    N/A  force      force
//! imbalanced    force     force      N/A    N/A  force      force
//! overloaded    force     force      N/A    N/A  force      avg_load
//! ```

use super::balance::{CpuIdleType, LbEnv, MigrationType};
use super::capacity::{capacity_greater, SCHED_CAPACITY_SCALE};
use super::lb_stats::{adjust_numa_imbalance, smt_vs_nonsmt_groups, GroupRef, GroupType, SdLbStats};
use crate::engine::Sim;
use crate::ids::CpuId;
use crate::topology::domains::{Domains, SchedDomain, SdId, SD_ASYM_CPUCAPACITY, SD_NUMA, SD_SHARE_LLC};

impl Sim {
    /// `sibling_imbalance`: tasks to move so both groups run the same number
    /// of tasks per core.
    fn sibling_imbalance(&self, env: &LbEnv, sds: &SdLbStats) -> i64 {
        let (busiest, local) = (&sds.busiest_stat, &sds.local_stat);
        if env.idle == CpuIdleType::NotIdle || busiest.sum_nr_running == 0 {
            return 0;
        }
        let nb = sds.busiest.map_or(1, |g| g.cores) as i64;
        let nl = sds.local.map_or(1, |g| g.cores) as i64;
        if nb == nl {
            return (busiest.sum_nr_running as i64 - local.sum_nr_running as i64).max(0);
        }
        let mut imb = (nl * busiest.sum_nr_running as i64 - nb * local.sum_nr_running as i64).max(0);
        // Normalise with rounding.
        imb = (2 * imb + nl + nb) / (nl + nb);
        if imb <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
            imb = 2;
        }
        imb
    }

    /// `sd->imb_numa_nr` (set in `build_sched_domains`): tasks a NUMA domain
    /// tolerates as imbalance ([`imb_numa_nr_of`]), computed once per
    /// domain when the fair state is built, as the kernel does.
    #[inline]
    pub fn imb_numa_nr(&self, sd: SdId) -> i64 {
        self.fair.imb_numa_nr[sd.0 as usize]
    }

    /// `calculate_imbalance`: how much to move and how it is measured.
    fn calculate_imbalance(&self, env: &mut LbEnv, sds: &mut SdLbStats) {
        let sd = self.chain_sd(env.sd);
        let local = sds.local_stat;
        let busiest = sds.busiest_stat;
        match busiest.group_type {
            GroupType::MisfitTask => {
                if sd.has(SD_ASYM_CPUCAPACITY) {
                    env.migration_type = MigrationType::Misfit;
                    env.imbalance = 1;
                } else {
                    env.migration_type = MigrationType::Load;
                    env.imbalance = busiest.group_misfit_task_load as i64;
                }
                return;
            }
            GroupType::AsymPacking => {
                env.migration_type = MigrationType::Task;
                env.imbalance = busiest.sum_h_nr_running as i64;
                return;
            }
            GroupType::SmtBalance | GroupType::Imbalanced => {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
                return;
            }
            _ => {}
        }
        if local.group_type == GroupType::HasSpare {
            if busiest.group_type > GroupType::FullyBusy && !sd.has(SD_SHARE_LLC) {
                // Fill the local group's spare capacity.
                env.migration_type = MigrationType::Util;
                env.imbalance = (local.group_capacity.max(local.group_util) - local.group_util) as i64;
                if env.idle != CpuIdleType::NotIdle && env.imbalance == 0 {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            if busiest.group_weight == 1 || sds.prefer_sibling {
                env.imbalance = self.sibling_imbalance(env, sds);
            } else {
                env.imbalance = (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0);
            }
            if sd.has(SD_NUMA) {
                env.imbalance =
                    adjust_numa_imbalance(env.imbalance, local.sum_nr_running as i64 + 1, self.imb_numa_nr(env.sd));
            }
            env.imbalance >>= 1;
            return;
        }
        if local.group_type < GroupType::Overloaded {
            // Local becomes overloaded: avg_load is finally needed.
            sds.local_stat.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity.max(1);
            if sds.local_stat.avg_load >= busiest.avg_load {
                env.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity.max(1);
            if sds.local_stat.avg_load >= sds.avg_load {
                env.imbalance = 0;
                return;
            }
        }
        let (l, a) = (sds.local_stat.avg_load as i64, sds.avg_load as i64);
        env.migration_type = MigrationType::Load;
        env.imbalance = ((busiest.avg_load as i64 - a) * busiest.group_capacity as i64)
            .min((a - l) * local.group_capacity as i64)
            / SCHED_CAPACITY_SCALE as i64;
    }

    /// `sched_balance_find_src_group` (`find_busiest_group`): the busiest
    /// group if there is an imbalance worth fixing (borrowed from the
    /// domain's group descriptions, not copied with its mask), with
    /// `env.imbalance` and `env.migration_type` set. Also returns what the
    /// caller applies of the domain statistics: `sg_overloaded` and
    /// `sum_util` (the whole `SdLbStats` is not moved out).
    pub fn sched_balance_find_src_group(&self, env: &mut LbEnv) -> (Option<&GroupRef>, bool, u64) {
        let mut sds = self.update_sd_lb_stats(env);
        let found = self.find_src_group_decide(env, &mut sds);
        if !found {
            env.imbalance = 0;
            return (None, sds.sg_overloaded, sds.sum_util);
        }
        (if env.imbalance != 0 { sds.busiest } else { None }, sds.sg_overloaded, sds.sum_util)
    }

    /// The decision matrix of `sched_balance_find_src_group`: `false` =
    /// balanced (`out_balanced`), `true` = `calculate_imbalance` was run.
    fn find_src_group_decide(&self, env: &mut LbEnv, sds: &mut SdLbStats) -> bool {
        let sd = self.chain_sd(env.sd);
        if sds.busiest.is_none() {
            return false;
        }
        let busiest = sds.busiest_stat;
        let local = sds.local_stat;
        // XXX: EAS's "not overutilized and a perf domain exists" skip is not
        // modelled here (EAS is a separate seed idea).
        let force =
            matches!(busiest.group_type, GroupType::MisfitTask | GroupType::AsymPacking | GroupType::Imbalanced);
        if !force {
            if local.group_type > busiest.group_type {
                return false;
            }
            if local.group_type == GroupType::Overloaded {
                if local.avg_load >= busiest.avg_load {
                    return false;
                }
                sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity.max(1);
                if local.avg_load >= sds.avg_load {
                    return false;
                }
                if 100 * busiest.avg_load <= sd.imbalance_pct as u64 * local.avg_load {
                    return false;
                }
            }
            let sibling =
                sds.prefer_sibling && local.group_type == GroupType::HasSpare && self.sibling_imbalance(env, sds) > 1;
            if !sibling && busiest.group_type != GroupType::Overloaded {
                if env.idle == CpuIdleType::NotIdle {
                    return false;
                }
                let smt_force =
                    busiest.group_type == GroupType::SmtBalance && smt_vs_nonsmt_groups(sds.local, sds.busiest);
                if !smt_force {
                    if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                        return false;
                    }
                    if busiest.sum_h_nr_running == 1 {
                        return false;
                    }
                }
            }
        }
        self.calculate_imbalance(env, sds);
        true
    }

    /// `sched_balance_find_src_rq` (`find_busiest_queue`): the busiest
    /// runqueue of `group` for the migration type.
    pub fn sched_balance_find_src_rq(&self, env: &LbEnv, group: &GroupRef) -> Option<CpuId> {
        if group.wholly_considered(env, &self.chain_sd(env.sd).span) {
            // Every CPU of the group, in span order: its list, not a mask
            // walk over the machine's words (16 at 1024 CPUs).
            let cpus = group.cpus(&self.fair.sg_cpus);
            if env.migration_type == MigrationType::Task
                && !self.rqs.any_changed()
                && !self.chain_sd(env.sd).has(SD_ASYM_CPUCAPACITY)
            {
                // The sums are up to date (nothing changed since the pass's
                // sync): when the group's CPUs with a fair task hold one
                // each, the loop below keeps the first of them (a later CPU
                // must hold more to replace it), so the walk stops there.
                // A newly-idle pass at the NUMA level usually gets here
                // with a node of single-task CPUs.
                let s = self.fair.sg_sums.group(group.slot);
                if s.h_nr_running() == s.nr_queued_cpus() {
                    let first = cpus.iter().copied().find(|c| self.rqs[c.idx()].cfs.h_nr_runnable != 0);
                    debug_assert_eq!(first, self.find_src_rq_among(env, cpus.iter().copied()));
                    return first;
                }
            }
            self.find_src_rq_among(env, cpus.iter().copied())
        } else {
            self.find_src_rq_among(env, group.span.and(self.lb_cpus(env)).iter())
        }
    }

    /// `sched_balance_find_src_rq`'s loop over `cpus`. Always inlined into
    /// its two callers, so the loop's body is too (as a closure called per
    /// CPU it was not: about 600,000 calls per standard bench). The
    /// migration type and the domain's asymmetry are the same for every
    /// CPU: one loop for each (`MT` is a [`MigrationType`] as `u8`, `ASYM`
    /// whether the domain is asymmetric), so that the loop does not test
    /// them per CPU.
    #[inline(always)]
    fn find_src_rq_among(&self, env: &LbEnv, cpus: impl Iterator<Item = CpuId>) -> Option<CpuId> {
        const LOAD: u8 = MigrationType::Load as u8;
        const UTIL: u8 = MigrationType::Util as u8;
        const TASK: u8 = MigrationType::Task as u8;
        const MISFIT: u8 = MigrationType::Misfit as u8;
        let asym = self.chain_sd(env.sd).has(SD_ASYM_CPUCAPACITY);
        match (env.migration_type, asym) {
            (MigrationType::Load, false) => self.find_src_rq_typed::<LOAD, false>(env, cpus),
            (MigrationType::Util, false) => self.find_src_rq_typed::<UTIL, false>(env, cpus),
            (MigrationType::Task, false) => self.find_src_rq_typed::<TASK, false>(env, cpus),
            (MigrationType::Misfit, false) => self.find_src_rq_typed::<MISFIT, false>(env, cpus),
            (MigrationType::Load, true) => self.find_src_rq_typed::<LOAD, true>(env, cpus),
            (MigrationType::Util, true) => self.find_src_rq_typed::<UTIL, true>(env, cpus),
            (MigrationType::Task, true) => self.find_src_rq_typed::<TASK, true>(env, cpus),
            (MigrationType::Misfit, true) => self.find_src_rq_typed::<MISFIT, true>(env, cpus),
        }
    }

    /// [`Sim::find_src_rq_among`] for one migration type and asymmetry.
    #[inline(always)]
    fn find_src_rq_typed<const MT: u8, const ASYM: bool>(
        &self,
        env: &LbEnv,
        cpus: impl Iterator<Item = CpuId>,
    ) -> Option<CpuId> {
        let sd = self.chain_sd(env.sd);
        debug_assert_eq!(env.migration_type as u8, MT);
        debug_assert_eq!(sd.has(SD_ASYM_CPUCAPACITY), ASYM);
        // The busiest CPU's id, `NONE` while there is none: a plain integer
        // kept in a register, not an `Option` (a tag and a value) per update.
        const NONE: u32 = u32::MAX;
        let mut busiest = NONE;
        let (mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) = (0u64, 0u64, 1u64, 0u32);
        for i in cpus {
            let rq = &self.rqs[i.idx()];
            let nr_running = rq.cfs.h_nr_runnable;
            if nr_running == 0 {
                continue;
            }
            let capacity = self.capacity_of(i);
            if ASYM && !capacity_greater(self.capacity_of(env.dst_cpu), capacity) && nr_running == 1 {
                continue;
            }
            match MT {
                x if x == MigrationType::Load as u8 => {
                    let load = rq.cpu_load();
                    if nr_running == 1 && load as i64 > env.imbalance && !self.check_cpu_capacity(i, sd) {
                        continue;
                    }
                    // max(load_i / capacity_i), cross-multiplied.
                    if load * busiest_capacity > busiest_load * capacity {
                        busiest_load = load;
                        busiest_capacity = capacity;
                        busiest = i.0;
                    }
                }
                x if x == MigrationType::Util as u8 => {
                    let util = self.cpu_util_cfs_boost(i);
                    if nr_running <= 1 {
                        continue;
                    }
                    if busiest_util < util {
                        busiest_util = util;
                        busiest = i.0;
                    }
                }
                x if x == MigrationType::Task as u8 => {
                    if busiest_nr < nr_running {
                        busiest_nr = nr_running;
                        busiest = i.0;
                    }
                }
                _ => {
                    debug_assert_eq!(MT, MigrationType::Misfit as u8);
                    let m = self.misfit_task_load(i);
                    if m > busiest_load {
                        busiest_load = m;
                        busiest = i.0;
                    }
                }
            }
        }
        (busiest != NONE).then_some(CpuId(busiest))
    }
}

/// `sd->imb_numa_nr` (set in `build_sched_domains`): tasks a NUMA domain
/// tolerates as imbalance: the number of LLCs under the first domain
/// above the LLC (an eighth of its span with one LLC), scaled by span
/// for higher levels.
pub fn imb_numa_nr_of(domains: &Domains, sd: &SchedDomain) -> i64 {
    let chain = domains.chain(sd.span.first().unwrap_or(CpuId(0)));
    let mut imb = 1i64;
    let mut imb_span = sd.span_weight as i64;
    for &id in chain {
        let d = domains.sd(id);
        let child = d.child.map(|c| domains.sd(c));
        if !d.has(SD_SHARE_LLC) && child.is_some_and(|c| c.has(SD_SHARE_LLC)) {
            let nr_llcs = (d.span_weight / child.map_or(1, |c| c.span_weight)) as i64;
            imb = if nr_llcs == 1 { (d.span_weight >> 3) as i64 } else { nr_llcs }.max(1);
            let mut top = d.parent;
            while let Some(t) = top {
                if domains.sd(t).has(SD_NUMA) {
                    break;
                }
                top = domains.sd(t).parent;
            }
            imb_span = top.map_or(d.span_weight, |t| domains.sd(t).span_weight) as i64;
            if d.span == sd.span {
                return imb;
            }
        } else if d.span == sd.span {
            return imb * (d.span_weight as i64 / imb_span.max(1)).max(1);
        }
    }
    imb
}
