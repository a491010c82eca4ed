//! Load-balance statistics (kernel/sched/fair.c, "Helpers for
//! sched_balance_find_src_group"): `struct sg_lb_stats` / `sd_lb_stats`,
//! `group_classify`, `update_sg_lb_stats`, `update_sd_pick_busiest`,
//! `update_sd_lb_stats`, `calculate_imbalance`,
//! `sched_balance_find_src_group` (`find_busiest_group`) and
//! `sched_balance_find_src_rq` (`find_busiest_queue`). Everything here is a
//! pure function of `&Sim` and the [`LbEnv`]; side effects (root-domain
//! overload, SIS_UTIL scan depth) are returned and applied by the caller.

use super::balance::{CpuIdleType, LbEnv};
use super::capacity::{capacity_greater, SCHED_CAPACITY_SCALE};
use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::CpuId;
use crate::topology::domains::{SdId, SD_ASYM_CPUCAPACITY, SD_PREFER_SIBLING, SD_SHARE_CPUCAPACITY};

pub use super::group_refs::{group_refs, span_slots};

/// `enum group_type`, ordered from least to most busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum GroupType {
    /// Spare capacity that can run more tasks.
    #[default]
    HasSpare,
    /// Fully used; tasks do not compete for more cycles.
    FullyBusy,
    /// A task does not fit its CPU's capacity.
    MisfitTask,
    /// A busy SMT core whose task could move to an idle core.
    SmtBalance,
    /// SD_ASYM_PACKING: a preferred CPU is available (not modelled: never set).
    AsymPacking,
    /// Affinity prevented balancing at the level below.
    Imbalanced,
    /// More tasks than the group can serve.
    Overloaded,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// Average load over the group's capacity (only set when overloaded or fully busy in the slow path).
    pub avg_load: u64,
    /// Sum of `cpu_load`.
    pub group_load: u64,
    /// Sum of `capacity_of`.
    pub group_capacity: u64,
    /// Sum of `cpu_util_cfs`.
    pub group_util: u64,
    /// Sum of `cpu_runnable`.
    pub group_runnable: u64,
    /// Sum of `nr_running`.
    pub sum_nr_running: u32,
    /// Sum of fair `h_nr_runnable`.
    pub sum_h_nr_running: u32,
    /// Idle CPUs.
    pub idle_cpus: u32,
    /// CPUs in the group.
    pub group_weight: u32,
    /// Classification.
    pub group_type: GroupType,
    /// `group_smt_balance`.
    pub group_smt_balance: bool,
    /// Load of the biggest misfit task (or reduced-capacity task).
    pub group_misfit_task_load: u64,
}

impl SgLbStats {
    /// The statistics the group sums hold: the per-CPU loop's sums, nothing
    /// it classifies.
    #[inline(always)]
    pub fn from_sums(s: &super::sg_sums::GroupSums) -> Self {
        SgLbStats {
            group_capacity: s.capacity(),
            group_load: s.load(),
            group_util: s.util(),
            group_runnable: s.runnable(),
            sum_h_nr_running: s.h_nr_running(),
            sum_nr_running: s.nr_running(),
            idle_cpus: s.idle_cpus(),
            ..SgLbStats::default()
        }
    }
}

/// One group as the statistics see it: its span, the flags of the child
/// domain it stands for (`sg->flags`), its core count and capacity extremes.
#[derive(Clone, Copy, Debug)]
pub struct GroupRef {
    /// Index in `SchedDomain::groups`.
    pub index: usize,
    /// `sched_group_span`.
    pub span: CpuMask,
    /// `sg->flags`: the child domain's flags (0 for single-CPU groups).
    pub flags: u32,
    /// `sg->cores`: cores in the group.
    pub cores: u32,
    /// Where the group's CPUs start in `Sim::sg_cpus` (ascending ids, the
    /// order the span iterates): the statistics loop walks this list, not a
    /// machine-wide mask (16 words for a 2-CPU SMT group at 1024 CPUs).
    pub cpus_at: u32,
    /// Number of CPUs in the group.
    pub nr_cpus: u32,
    /// Its sums in `Sim::sg_sums` (`fair::sg_sums`), numbered in
    /// `group_refs` order. Groups of the same CPUs in domains of the same
    /// `imbalance_pct` (the NUMA levels' overlapping domains, one per node,
    /// repeat their groups) share a slot, since their sums are the same:
    /// a CPU's change then moves one sum per distinct group, not one per
    /// domain that repeats it.
    pub slot: u32,
    /// Its first CPU (`group_balance_cpu`'s stand-in for `sgc` lookups).
    pub first: CpuId,
    /// The span lies within its domain's span, so a balance pass that
    /// excludes no CPU of the domain considers all of the group's.
    pub within_sd: bool,
}

impl GroupRef {
    /// The group's CPUs, ascending (its run of `Sim::sg_cpus`).
    #[inline]
    pub fn cpus<'a>(&self, sg_cpus: &'a [CpuId]) -> &'a [CpuId] {
        &sg_cpus[self.cpus_at as usize..(self.cpus_at + self.nr_cpus) as usize]
    }

    /// Whether a pass over `env` (whose domain spans `sd_span`) considers
    /// every CPU of the group, so that its CPU list (not a walk of `span &
    /// env->cpus`) is what to visit.
    #[inline]
    pub fn wholly_considered(&self, env: &LbEnv, sd_span: &CpuMask) -> bool {
        match &env.cpus {
            None => self.within_sd || self.span.is_subset(sd_span),
            Some(cpus) => self.span.is_subset(cpus),
        }
    }
}

/// `struct sd_lb_stats`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SdLbStats<'a> {
    /// Busiest group, if any (borrowed: a `GroupRef` carries a whole mask,
    /// too much to copy for every group a pass looks at).
    pub busiest: Option<&'a GroupRef>,
    /// Local group (the one containing the destination CPU).
    pub local: Option<&'a GroupRef>,
    /// Sum of the groups' loads.
    pub total_load: u64,
    /// Sum of the groups' capacities.
    pub total_capacity: u64,
    /// Domain average load.
    pub avg_load: u64,
    /// Tasks should go to a sibling group first.
    pub prefer_sibling: bool,
    /// Statistics of the busiest group.
    pub busiest_stat: SgLbStats,
    /// Statistics of the local group.
    pub local_stat: SgLbStats,
    /// Sum of the groups' utilisation (for SIS_UTIL).
    pub sum_util: u64,
    /// Some CPU of the domain has more than one task (read, and exact, only
    /// at the root: the usual pass computes it at every level).
    pub sg_overloaded: bool,
}

/// `group_has_capacity`.
pub fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = imbalance_pct as u64;
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity * pct < sgs.group_runnable * 100 {
        return false;
    }
    sgs.group_capacity * 100 > sgs.group_util * pct
}

/// `group_is_overloaded`.
pub fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = imbalance_pct as u64;
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    if sgs.group_capacity * 100 < sgs.group_util * pct {
        return true;
    }
    sgs.group_capacity * pct < sgs.group_runnable * 100
}

/// `group_classify`. `imbalanced` is the group's `sgc->imbalance` flag.
pub fn group_classify(imbalance_pct: u32, imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        GroupType::Overloaded
    } else if imbalanced {
        GroupType::Imbalanced
    } else if sgs.group_smt_balance {
        GroupType::SmtBalance
    } else if sgs.group_misfit_task_load != 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(imbalance_pct, sgs) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// Whether only an overloaded group can replace `busiest` in the usual
/// pass (see `Sim::sd_lb_others`): it is overloaded itself, or an
/// SMT-balance group with no idle CPU (`init_sd_lb_stats`' stand-in, with
/// no group yet, is neither).
#[inline(always)]
fn busiest_beaten_only_by_overloaded(busiest: &SgLbStats) -> bool {
    busiest.group_type == GroupType::Overloaded
        || (busiest.group_type == GroupType::SmtBalance && busiest.idle_cpus == 0)
}

/// `smt_vs_nonsmt_groups`: one group is SMT siblings, the other is not.
pub fn smt_vs_nonsmt_groups(a: Option<&GroupRef>, b: Option<&GroupRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a.flags & SD_SHARE_CPUCAPACITY) != (b.flags & SD_SHARE_CPUCAPACITY),
        _ => false,
    }
}

/// `adjust_numa_imbalance`: allow a small imbalance (up to
/// `NUMA_IMBALANCE_MIN` = 2 tasks) while the destination runs few tasks.
pub fn adjust_numa_imbalance(imbalance: i64, dst_running: i64, imb_numa_nr: i64) -> i64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= 2 {
        return 0;
    }
    imbalance
}

impl Sim {
    /// The groups of domain `sd` as [`GroupRef`]s, in the kernel's list order
    /// for `cpu`: its own group first, then the others wrapping around.
    ///
    /// Allocation-free: the group descriptions are built once per domain
    /// (`group_refs`, at `Sim::build`) and only rotated here.
    pub fn sd_groups(&self, sd: SdId, cpu: CpuId) -> impl Iterator<Item = GroupRef> + '_ {
        self.sd_group_refs(sd, cpu).copied()
    }

    /// [`Sim::sd_groups`] by reference (a `GroupRef` carries a whole mask).
    pub fn sd_group_refs(&self, sd: SdId, cpu: CpuId) -> impl Iterator<Item = &GroupRef> + '_ {
        let refs = &self.fair.sg_refs[sd.0 as usize];
        let n = refs.len();
        let local = self.local_group(sd, cpu).index as usize;
        (0..n).map(move |k| &refs[(local + k) % n])
    }

    /// `sgc->min_capacity` of a group.
    fn group_min_capacity(&self, span: &CpuMask) -> u64 {
        span.iter().map(|c| self.capacity_of(c)).min().unwrap_or(SCHED_CAPACITY_SCALE)
    }

    /// `sgc->imbalance` of the group `g` of the domain at chain depth `depth`.
    fn sg_imbalanced(&self, depth: usize, g: &GroupRef) -> bool {
        self.fair.nohz.sgc_imbalance(depth, g.first)
    }

    /// `update_sg_lb_stats`: the statistics of group `g`; sets
    /// `*sg_overloaded` when a CPU has more than one task at the root domain.
    /// Inlined into its one caller's group loop: a call per group cost
    /// about a fifth of the loop (register saves, the result's copy).
    ///
    /// Writes into `sgs` (the caller's one buffer for the pass) rather than
    /// returning a value: returned, the statistics were built in one stack
    /// slot and copied to another for every group.
    ///
    /// `PLAIN`: the caller knows that no CPU was excluded (`env.cpus` is the
    /// domain's span) and every group lies within it, that the group sums
    /// are up to date, that the domain is not asymmetric, that dst is idle
    /// or about to be, that no group's `sgc->imbalance` is set and that no
    /// CPU has a lone task on a reduced capacity (no reduced-capacity load
    /// to find), so those tests and lookups drop out of its group loop.
    #[inline(always)]
    pub fn update_sg_lb_stats<const PLAIN: bool, const SPAN_SUMS: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        g: &GroupRef,
        local_group: bool,
        sg_overloaded: &mut bool,
        sgs: &mut SgLbStats,
    ) {
        let balancing_at_rd = sd.parent.is_none();
        // env.cpus loses CPUs only after pinned tasks (LBF_ALL_PINNED).
        debug_assert!(!PLAIN || g.within_sd);
        let all_considered = PLAIN || g.wholly_considered(env, &sd.span);
        match self.sg_lb_stats_summed_in::<PLAIN>(env, sd, g, local_group, all_considered) {
            Some((summed, overloaded)) => {
                // Only the root domain's pass reads `sg_overloaded`: the
                // usual pass ors it in whatever the level (no test per group).
                // With `SPAN_SUMS` the caller takes the span's count instead.
                if !SPAN_SUMS {
                    *sg_overloaded |= (PLAIN || balancing_at_rd) && overloaded;
                }
                #[cfg(debug_assertions)]
                {
                    let mut scan_overloaded = false;
                    let scan = self.sg_lb_stats_scan(env, sd, g, local_group, all_considered, &mut scan_overloaded);
                    debug_assert_eq!(summed, scan, "summed group stats differ from the scan");
                    debug_assert!(!balancing_at_rd || overloaded == scan_overloaded);
                }
                *sgs = summed;
            }
            None => *sgs = self.sg_lb_stats_scan(env, sd, g, local_group, all_considered, sg_overloaded),
        }
        sgs.group_weight = g.nr_cpus;
        // smt_balance: a busy SMT group should hand a task to an idle dst.
        if !local_group
            && (PLAIN || env.idle != CpuIdleType::NotIdle)
            && env.sg_flags & SD_SHARE_CPUCAPACITY != 0
            && sgs.sum_h_nr_running > 1
        {
            sgs.group_smt_balance = true;
        }
        debug_assert!(!PLAIN || !self.sg_imbalanced(sd.depth as usize, g));
        let imbalanced = !PLAIN && self.sg_imbalanced(sd.depth as usize, g);
        sgs.group_type = group_classify(sd.imbalance_pct, imbalanced, sgs);
        if sgs.group_type == GroupType::Overloaded {
            sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity.max(1);
        }
    }

    /// The per-CPU loop of `update_sg_lb_stats` over the group's CPUs that
    /// `env.cpus` allows.
    pub(crate) fn sg_lb_stats_scan(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        g: &GroupRef,
        local_group: bool,
        all_considered: bool,
        sg_overloaded: &mut bool,
    ) -> SgLbStats {
        let balancing_at_rd = sd.parent.is_none();
        let mut sgs = SgLbStats::default();
        if all_considered {
            // Every CPU of the group: its precomputed list, in span order.
            for &i in g.cpus(&self.fair.sg_cpus) {
                self.sg_lb_stats_cpu(env, sd, i, local_group, balancing_at_rd, &mut sgs, sg_overloaded);
            }
        } else {
            for i in g.span.and(self.lb_cpus(env)).iter() {
                self.sg_lb_stats_cpu(env, sd, i, local_group, balancing_at_rd, &mut sgs, sg_overloaded);
            }
            // Some CPUs were excluded (pinned tasks): the capacity is still the whole group's.
            sgs.group_capacity = g.span.iter().map(|c| self.capacity_of(c)).sum();
        }
        sgs
    }

    /// The loop's result from the group's sums (`fair::sg_sums`), with
    /// whether a CPU has more than one task; `None` when the sums cannot
    /// give it: sums not up to date, CPUs excluded, or a misfit or
    /// reduced-capacity load to find (the largest one needs the CPUs).
    /// `PLAIN` as in [`Sim::update_sg_lb_stats`]; tests call it with `false`.
    #[inline]
    pub(crate) fn sg_lb_stats_summed_in<const PLAIN: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        g: &GroupRef,
        local_group: bool,
        all_considered: bool,
    ) -> Option<(SgLbStats, bool)> {
        if !all_considered || (!PLAIN && self.rqs.any_changed()) {
            return None;
        }
        let s = self.fair.sg_sums.group(g.slot);
        debug_assert!(!PLAIN || s.nr_lone_reduced == 0);
        if !PLAIN && !local_group {
            let misfit_to_find = if !PLAIN && sd.has(SD_ASYM_CPUCAPACITY) {
                s.nr_misfit() != 0
            } else {
                env.idle != CpuIdleType::NotIdle && s.nr_lone_reduced != 0
            };
            if misfit_to_find {
                return None;
            }
        }
        Some((SgLbStats::from_sums(s), s.nr_overloaded() != 0))
    }

    /// One CPU's part of `update_sg_lb_stats`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sg_lb_stats_cpu(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        i: CpuId,
        local_group: bool,
        balancing_at_rd: bool,
        sgs: &mut SgLbStats,
        sg_overloaded: &mut bool,
    ) {
        let rq = &self.rqs[i.idx()];
        sgs.group_capacity += self.capacity_of(i);
        let load = rq.cpu_load();
        sgs.group_load += load;
        sgs.group_util += self.cpu_util_cfs(i);
        sgs.group_runnable += rq.cpu_runnable();
        sgs.sum_h_nr_running += rq.cfs.h_nr_runnable;
        let nr_running = rq.nr_running;
        sgs.sum_nr_running += nr_running;
        if nr_running == 0 && rq.idle_cpu() {
            sgs.idle_cpus += 1;
            return;
        }
        if balancing_at_rd && nr_running > 1 {
            *sg_overloaded = true;
        }
        if local_group {
            return;
        }
        if sd.has(SD_ASYM_CPUCAPACITY) {
            let misfit = self.misfit_task_load(i);
            if sgs.group_misfit_task_load < misfit {
                sgs.group_misfit_task_load = misfit;
                *sg_overloaded = true;
            }
        } else if env.idle != CpuIdleType::NotIdle
            && rq.cfs.h_nr_runnable == 1
            && self.check_cpu_capacity(i, sd)
            && sgs.group_misfit_task_load < load
        {
            // sched_reduced_capacity: a lone task on a CPU that lost capacity.
            sgs.group_misfit_task_load = load;
        }
    }

    /// `update_sd_pick_busiest`: whether `sg` is busier than the current busiest.
    /// `sd` is `env.sd`'s domain, read once per pass by the caller.
    /// Inlined into the group loop of `update_sd_lb_stats`. It was kept out
    /// of line while each group's statistics were returned by value (inlined
    /// then, it kept the busiest group's statistics in registers across the
    /// loop, which spilled and reloaded about fifteen values per group:
    /// 19.8 M instructions more on the standard bench); since they are
    /// written into one buffer, inlining saves the call (12.2 M fewer).
    #[inline(always)]
    fn update_sd_pick_busiest<const PLAIN: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        sds: &SdLbStats,
        sg: &GroupRef,
        sgs: &SgLbStats,
    ) -> bool {
        let busiest = &sds.busiest_stat;
        if sgs.sum_h_nr_running == 0 {
            return false;
        }
        // capacity_of(dst) is read only in asymmetric domains.
        let asym = !PLAIN && sd.has(SD_ASYM_CPUCAPACITY);
        if asym && sgs.group_type == GroupType::MisfitTask {
            let dst_cap = self.capacity_of(env.dst_cpu);
            let max_cap = sg.span.iter().map(|c| self.capacity_of(c)).max().unwrap_or(0);
            if !capacity_greater(dst_cap, max_cap) || sds.local_stat.group_type != GroupType::HasSpare {
                return false;
            }
        }
        if sgs.group_type != busiest.group_type {
            return sgs.group_type > busiest.group_type;
        }
        let has_spare = |sgs: &SgLbStats| {
            !(sgs.idle_cpus > busiest.idle_cpus
                || (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running))
        };
        match sgs.group_type {
            GroupType::Overloaded => return sgs.avg_load > busiest.avg_load,
            GroupType::Imbalanced | GroupType::AsymPacking => return false,
            GroupType::MisfitTask => return sgs.group_misfit_task_load > busiest.group_misfit_task_load,
            GroupType::SmtBalance if sgs.idle_cpus != 0 || busiest.idle_cpus != 0 => {
                if !has_spare(sgs) {
                    return false;
                }
            }
            GroupType::SmtBalance | GroupType::FullyBusy => {
                if sgs.avg_load < busiest.avg_load {
                    return false;
                }
                // The busiest group's flags are the domain's groups' (env.sg_flags).
                if sgs.avg_load == busiest.avg_load && sds.busiest.is_some() && env.sg_flags & SD_SHARE_CPUCAPACITY != 0
                {
                    return false;
                }
            }
            GroupType::HasSpare => {
                // smt_vs_nonsmt_groups(busiest, sg) is false here: the
                // groups of one domain share their flags (env.sg_flags).
                debug_assert!(!smt_vs_nonsmt_groups(sds.busiest, Some(sg)));
                if !has_spare(sgs) {
                    return false;
                }
            }
        }
        if asym
            && sgs.group_type <= GroupType::FullyBusy
            && capacity_greater(self.group_min_capacity(&sg.span), self.capacity_of(env.dst_cpu))
        {
            return false;
        }
        true
    }

    /// One group of `update_sd_lb_stats`'s loop: its statistics (into
    /// `sgs`), the local or busiest group's update, the domain's totals.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sd_lb_visit<'a, const PLAIN: bool, const SPAN_SUMS: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        g: &'a GroupRef,
        local_group: bool,
        sds: &mut SdLbStats<'a>,
        sgs: &mut SgLbStats,
        sg_overloaded: &mut bool,
    ) {
        debug_assert_eq!(local_group, g.span.test(env.dst_cpu));
        debug_assert_eq!(g.flags, env.sg_flags, "a domain's groups share their flags");
        self.update_sg_lb_stats::<PLAIN, SPAN_SUMS>(env, sd, g, local_group, sg_overloaded, sgs);
        if local_group {
            sds.local = Some(g);
            sds.local_stat = *sgs;
        } else if self.update_sd_pick_busiest::<PLAIN>(env, sd, sds, g, sgs) {
            sds.busiest = Some(g);
            sds.busiest_stat = *sgs;
        }
        if !SPAN_SUMS {
            sds.total_load += sgs.group_load;
            sds.total_capacity += sgs.group_capacity;
            sds.sum_util += sgs.group_util;
        }
    }

    /// The group loop of `update_sd_lb_stats` when dst is in `local` only:
    /// `local`, then `rest` and `before` (the list from `local` on, wrapped).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sd_lb_groups<'a, const PLAIN: bool, const SPAN_SUMS: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        local: &'a GroupRef,
        rest: &'a [GroupRef],
        before: &'a [GroupRef],
        sds: &mut SdLbStats<'a>,
        sgs: &mut SgLbStats,
        sg_overloaded: &mut bool,
    ) {
        // The local group's statistics straight into `sds.local_stat`
        // (sd_lb_visit's local arm, without the copy from the buffer).
        debug_assert!(local.span.test(env.dst_cpu));
        self.update_sg_lb_stats::<PLAIN, SPAN_SUMS>(env, sd, local, true, sg_overloaded, &mut sds.local_stat);
        sds.local = Some(local);
        if !SPAN_SUMS {
            sds.total_load += sds.local_stat.group_load;
            sds.total_capacity += sds.local_stat.group_capacity;
            sds.sum_util += sds.local_stat.group_util;
        }
        self.sd_lb_others::<PLAIN, SPAN_SUMS>(env, sd, rest, sds, sgs, sg_overloaded);
        self.sd_lb_others::<PLAIN, SPAN_SUMS>(env, sd, before, sds, sgs, sg_overloaded);
    }

    /// Groups of `update_sd_lb_stats`' loop known not local, in order.
    ///
    /// In the usual pass with the span's totals (`PLAIN` and `SPAN_SUMS`) a
    /// group's statistics are read only by `update_sd_pick_busiest`, and once
    /// the busiest group is overloaded, or an SMT-balance group without an
    /// idle CPU, a group that runs no more tasks than it has CPUs cannot
    /// replace it (below): such a group is passed over after one read of
    /// its task count, not classified. The busiest group found is the
    /// loop's; debug builds check that a passed-over group would not have
    /// been picked.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sd_lb_others<'a, const PLAIN: bool, const SPAN_SUMS: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        groups: &'a [GroupRef],
        sds: &mut SdLbStats<'a>,
        sgs: &mut SgLbStats,
        sg_overloaded: &mut bool,
    ) {
        for (k, g) in groups.iter().enumerate() {
            if PLAIN && SPAN_SUMS && busiest_beaten_only_by_overloaded(&sds.busiest_stat) {
                // Not overloaded (`sum_nr_running <= group_weight`), and in
                // the usual pass neither imbalanced nor misfit: its type is
                // at most SmtBalance, its avg_load 0. Against an overloaded
                // busiest group it loses on type; against an SMT-balance one
                // with no idle CPU it loses on type, or as an SMT-balance
                // group with an idle CPU (`has_spare`), or without one as the
                // later of two with equal avg_load among SMT groups (a busiest
                // SMT-balance group means the domain's groups are SMT cores).
                // With `SPAN_SUMS`, `sg_overloaded` is the span's: whether
                // some CPU of the domain runs more than one task. If none
                // does, no group runs more tasks than it has CPUs, and the
                // rest of the loop (this list and the next) is passed over.
                if !*sg_overloaded {
                    #[cfg(debug_assertions)]
                    for g in &groups[k..] {
                        self.debug_passed_over::<PLAIN, SPAN_SUMS>(env, sd, sds, g);
                    }
                    #[cfg(not(debug_assertions))]
                    let _ = k;
                    break;
                }
                if self.fair.sg_sums.group(g.slot).nr_running() <= g.nr_cpus {
                    #[cfg(debug_assertions)]
                    self.debug_passed_over::<PLAIN, SPAN_SUMS>(env, sd, sds, g);
                    continue;
                }
            }
            self.sd_lb_visit::<PLAIN, SPAN_SUMS>(env, sd, g, false, sds, sgs, sg_overloaded);
        }
    }

    /// Debug builds: the group `sd_lb_others` passed over would not have
    /// been picked.
    #[cfg(debug_assertions)]
    fn debug_passed_over<const PLAIN: bool, const SPAN_SUMS: bool>(
        &self,
        env: &LbEnv,
        sd: &crate::topology::SchedDomain,
        sds: &SdLbStats,
        g: &GroupRef,
    ) {
        let (mut o, mut st) = (false, SgLbStats::default());
        self.update_sg_lb_stats::<PLAIN, SPAN_SUMS>(env, sd, g, false, &mut o, &mut st);
        debug_assert!(st.group_type < GroupType::Overloaded);
        debug_assert!(!self.update_sd_pick_busiest::<PLAIN>(env, sd, sds, g, &st), "passed over");
    }

    /// `update_sd_lb_stats`: the statistics of every group of the domain,
    /// the local and the busiest one. `sg_overloaded` and `sum_util` are
    /// returned in the result for the caller to apply.
    pub fn update_sd_lb_stats(&self, env: &LbEnv) -> SdLbStats<'_> {
        let mut sds = SdLbStats::default();
        // init_sd_lb_stats: the worst possible busiest so any group beats it.
        sds.busiest_stat.idle_cpus = u32::MAX;
        let mut sg_overloaded = false;
        // The groups in the kernel's list order for dst (its own first), as
        // `sd_group_refs`; when dst is in one group only, that first one is
        // the local group and no span is tested.
        let refs = &self.fair.sg_refs[env.sd.0 as usize];
        let sd = self.chain_sd(env.sd);
        let lg = env.lg;
        debug_assert_eq!(lg, self.local_group_at(env.sd, env.level, env.dst_cpu));
        let mut sgs = SgLbStats::default();
        let (before, from) = refs.split_at(lg.index as usize);
        if lg.only {
            // Its own group, then the others, which are not local: a loop
            // of its own for them drops the local-group tests from it.
            if let Some((local, rest)) = from.split_first() {
                // No CPU excluded yet and no group beyond the domain, the
                // sums just synced, a symmetric domain, no group flagged
                // imbalanced: the usual pass, whose loops drop those tests.
                if env.cpus.is_none()
                    && lg.all_within
                    && !self.rqs.any_changed()
                    && !sd.has(SD_ASYM_CPUCAPACITY)
                    && env.idle != CpuIdleType::NotIdle
                    && !self.fair.nohz.any_sgc_imbalance()
                    && !self.fair.sg_sums.any_lone_reduced()
                {
                    let span_slot = self.fair.sd_span_slot[env.sd.0 as usize];
                    if span_slot != u32::MAX {
                        // The groups divide the span and the sums are up to
                        // date: the totals are the span's sums.
                        let s = self.fair.sg_sums.group(span_slot);
                        // The usual pass ors every group's overloaded count;
                        // set before the loop, which reads it.
                        sg_overloaded = s.nr_overloaded() != 0;
                        self.sd_lb_groups::<true, true>(
                            env,
                            sd,
                            local,
                            rest,
                            before,
                            &mut sds,
                            &mut sgs,
                            &mut sg_overloaded,
                        );
                        sds.total_load = s.load();
                        sds.total_capacity = s.capacity();
                        sds.sum_util = s.util();
                        #[cfg(debug_assertions)]
                        {
                            let groups = refs.iter().map(|g| self.fair.sg_sums.group(g.slot));
                            let sums = groups.fold((0, 0, 0, false), |(l, c, u, o), g| {
                                (l + g.load(), c + g.capacity(), u + g.util(), o || g.nr_overloaded() != 0)
                            });
                            let span = (sds.total_load, sds.total_capacity, sds.sum_util, sg_overloaded);
                            debug_assert_eq!(sums, span, "span sums");
                        }
                    } else {
                        self.sd_lb_groups::<true, false>(
                            env,
                            sd,
                            local,
                            rest,
                            before,
                            &mut sds,
                            &mut sgs,
                            &mut sg_overloaded,
                        );
                    }
                } else {
                    self.sd_lb_groups::<false, false>(
                        env,
                        sd,
                        local,
                        rest,
                        before,
                        &mut sds,
                        &mut sgs,
                        &mut sg_overloaded,
                    );
                }
            }
        } else {
            for g in from.iter().chain(before) {
                let local_group = g.span.test(env.dst_cpu);
                self.sd_lb_visit::<false, false>(env, sd, g, local_group, &mut sds, &mut sgs, &mut sg_overloaded);
            }
        }
        if let Some(b) = sds.busiest {
            sds.prefer_sibling = b.flags & SD_PREFER_SIBLING != 0;
        }
        sds.sg_overloaded = sg_overloaded;
        sds
    }

    /// `update_idle_cpu_scan`: SIS_UTIL's scan depth for the LLC of the
    /// balancing CPU from the LLC's summed utilisation, or `None` when this
    /// pass does not update it (not the LLC domain, newly idle, SIS_UTIL off).
    ///
    /// With `x = sum_util / llc_weight` and `pct` the LLC's imbalance_pct,
    /// `y = 1024 - min(1024, x^2 * pct^2 / (10000 * 1024))` and
    /// `nr_idle_scan = y * llc_weight / 1024`: the depth falls quadratically
    /// and reaches 0 at `x = 1024 * 100 / pct` (85% for 117), the point
    /// where an LLC group counts as overloaded.
    #[inline]
    pub fn update_idle_cpu_scan(&self, env: &LbEnv, sum_util: u64) -> Option<(usize, u32)> {
        if !crate::sched_feat!(self.features, SIS_UTIL) || env.idle == CpuIdleType::NewlyIdle {
            return None;
        }
        let llc_sd = self.domains.sd_llc[env.dst_cpu.idx()]?;
        let llc_weight = self.domains.sd(llc_sd).span_weight as u64;
        let sd = self.chain_sd(env.sd);
        if sd.span_weight as u64 != llc_weight {
            return None;
        }
        let x = sum_util / llc_weight.max(1);
        let pct = sd.imbalance_pct as u64;
        let tmp = (x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
        let y = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
        Some((self.llc_of(env.dst_cpu), y as u32))
    }
}
