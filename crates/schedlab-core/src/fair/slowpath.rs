//! The fork/exec placement slow path (kernel/sched/fair.c):
//! `sched_balance_find_dst_cpu` (formerly `find_idlest_cpu`) walks down the
//! domains with the balance flag, picking the idlest group with
//! `sched_balance_find_dst_group` (`update_sg_wakeup_stats`,
//! `update_pick_idlest`, the NUMA imbalance allowance) and the idlest CPU of
//! that group with `sched_balance_find_dst_group_cpu` (the idle CPU in the
//! shallowest idle state, the most recently idled as tie-break, else the
//! least loaded CPU).
//!
//! Seed idea 5: with `legacy_find_idlest_group` the group and CPU choices
//! are v4.14's `find_idlest_group` / `find_idlest_group_cpu`
//! (fair/slowpath_legacy.rs), where `capacity_spare_wake_current` acts. The
//! v5.5+ functions here count a group's capacity as the kernel does, from
//! `sgc->capacity` (the sum of `capacity_of`), whatever that feature says:
//! v5.5+ kernels have no `capacity_spare_wake` (the feature acts in their
//! fast path instead: `select_idle_capacity`, `asym_fits_cpu`). With `wake_cap`, the domain
//! flags come from [`Sim::sd_balance_flags`] (v4.14's SD_BALANCE_WAKE on
//! asymmetric domains).

use super::capacity::SCHED_CAPACITY_SCALE;
use super::lb_stats::{adjust_numa_imbalance, group_classify, GroupRef, GroupType, SgLbStats};
use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, TaskId};
use crate::sched_feat;
use crate::topology::domains::{SchedDomain, SD_ASYM_CPUCAPACITY, SD_NUMA};

impl Sim {
    /// `task_running_on_cpu(cpu, p)`: `p` is queued on `cpu` and counted there.
    fn task_running_on_cpu(&self, cpu: CpuId, p: TaskId) -> u32 {
        let t = &self.tasks[p.idx()];
        (t.cpu == cpu && t.avg.last_update_time != 0 && self.fair.ses[p.idx()].on_rq) as u32
    }

    /// `update_sg_wakeup_stats`: a group's statistics as if `p` were not there.
    pub fn update_sg_wakeup_stats(&self, sd: &SchedDomain, g: &GroupRef, p: TaskId) -> SgLbStats {
        let mut sgs = match self.sg_wakeup_stats_summed(sd, g, p) {
            Some(summed) => {
                debug_assert_eq!(
                    summed,
                    self.sg_wakeup_stats_scan(sd, g, p),
                    "summed wakeup stats differ from the scan"
                );
                summed
            }
            None => self.sg_wakeup_stats_scan(sd, g, p),
        };
        sgs.group_weight = g.nr_cpus;
        let imbalanced = self.fair.nohz.sgc_imbalance(sd.depth as usize, g.first);
        sgs.group_type = group_classify(sd.imbalance_pct, imbalanced, &sgs);
        if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity.max(1);
        }
        sgs
    }

    /// The loop of `update_sg_wakeup_stats` from the group's sums
    /// (`fair::sg_sums`), as `update_sg_lb_stats` reads them, where they give
    /// what the loop over its CPUs gives; `None` otherwise. They do when
    /// they are up to date (`sched_balance_find_dst_cpu` syncs them), no
    /// misfit is looked for (not an asymmetric domain), every CPU of the
    /// group counts (`p` may run on all of them, or `wakeup_stats_allowed`
    /// is off) and `p` is discounted from none of them: its averages are
    /// attached to a CPU outside the group, or to none (a new task at fork,
    /// `last_update_time` 0, the usual case: then `cpu_load_without` is
    /// `cpu_load`, `cpu_util_without` `cpu_util_cfs`, `cpu_runnable_without`
    /// `cpu_runnable`, `task_running_on_cpu` 0, and "idle without `p`" the
    /// sums' idle test, `p` running nowhere). A fork on the standard bench
    /// walked every CPU of every group of its domains (about 4.3 M
    /// instructions).
    pub(crate) fn sg_wakeup_stats_summed(&self, sd: &SchedDomain, g: &GroupRef, p: TaskId) -> Option<SgLbStats> {
        if self.rqs.any_changed() || sd.has(SD_ASYM_CPUCAPACITY) {
            return None;
        }
        let t = &self.tasks[p.idx()];
        let discounted_here = g.span.test(t.cpu)
            && (t.avg.last_update_time != 0 || self.rqs[t.cpu.idx()].curr == Some(p) || self.fair.ses[p.idx()].on_rq);
        if discounted_here {
            return None;
        }
        if sched_feat!(self.features, wakeup_stats_allowed) && !g.span.is_subset(&t.allowed) {
            return None;
        }
        Some(SgLbStats::from_sums(self.fair.sg_sums.group(g.slot)))
    }

    /// The loop of `update_sg_wakeup_stats` over the group's CPUs.
    pub(crate) fn sg_wakeup_stats_scan(&self, sd: &SchedDomain, g: &GroupRef, p: TaskId) -> SgLbStats {
        let mut sgs = SgLbStats::default();
        let asym = sd.has(SD_ASYM_CPUCAPACITY);
        if asym {
            sgs.group_misfit_task_load = 1; // until some CPU fits it
        }
        // Since 2025 (wakeup_stats_allowed) only the CPUs `p` may run on count (a task confined to part
        // of a group does not see the rest's load or idleness).
        let only_allowed = sched_feat!(self.features, wakeup_stats_allowed);
        let allowed = &self.tasks[p.idx()].allowed;
        for &i in g.cpus(&self.fair.sg_cpus) {
            if only_allowed && !allowed.test(i) {
                continue;
            }
            let rq = &self.rqs[i.idx()];
            sgs.group_load += self.cpu_load_without(i, p);
            sgs.group_util += self.cpu_util_without(i, p);
            sgs.group_runnable += self.cpu_runnable_without(i, p);
            let local = self.task_running_on_cpu(i, p);
            sgs.sum_h_nr_running += rq.cfs.h_nr_runnable.saturating_sub(local);
            let nr_running = rq.nr_running.saturating_sub(local);
            sgs.sum_nr_running += nr_running;
            // idle_cpu_without: nothing else runs or is about to.
            if nr_running == 0 && (rq.curr.is_none() || rq.curr == Some(p)) && rq.ttwu_pending == 0 {
                sgs.idle_cpus += 1;
            }
            if asym && sgs.group_misfit_task_load != 0 && self.task_fits_cpu(p, i) {
                sgs.group_misfit_task_load = 0;
            }
        }
        sgs.group_capacity = g.cpus(&self.fair.sg_cpus).iter().map(|&c| self.capacity_of(c)).sum();
        sgs
    }

    fn group_max_capacity(&self, span: &CpuMask) -> u64 {
        span.iter().map(|c| self.capacity_of(c)).max().unwrap_or(0)
    }

    /// `update_pick_idlest`: whether `sgs` is idler than the current idlest.
    fn update_pick_idlest(&self, idlest: Option<&GroupRef>, isgs: &SgLbStats, g: &GroupRef, sgs: &SgLbStats) -> bool {
        if sgs.group_type != isgs.group_type {
            return sgs.group_type < isgs.group_type;
        }
        match sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => isgs.avg_load > sgs.avg_load,
            GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => false,
            GroupType::MisfitTask => {
                idlest.map_or(0, |i| self.group_max_capacity(&i.span)) < self.group_max_capacity(&g.span)
            }
            GroupType::HasSpare => {
                if isgs.idle_cpus > sgs.idle_cpus {
                    return false;
                }
                !(isgs.idle_cpus == sgs.idle_cpus && isgs.group_util <= sgs.group_util)
            }
        }
    }

    /// `sched_balance_find_dst_group(sd, p, this_cpu)`: the idlest group of
    /// the domain at `level` of `this_cpu`'s chain, or `None` when the local
    /// group is at least as good.
    pub fn sched_balance_find_dst_group(&self, level: usize, p: TaskId, this_cpu: CpuId) -> Option<GroupRef> {
        let sd_id = self.domains.chain(this_cpu)[level];
        let sd = self.domains.sd(sd_id);
        let allowed = self.tasks[p.idx()].allowed;
        let mut idlest: Option<GroupRef> = None;
        let mut isgs = SgLbStats { avg_load: u64::MAX, group_type: GroupType::Overloaded, ..Default::default() };
        let mut local: Option<(GroupRef, SgLbStats)> = None;
        for g in self.sd_groups(sd_id, this_cpu) {
            if !g.span.intersects(&allowed) {
                continue;
            }
            let sgs = self.update_sg_wakeup_stats(sd, &g, p);
            if g.span.test(this_cpu) {
                local = Some((g, sgs));
            } else if self.update_pick_idlest(idlest.as_ref(), &isgs, &g, &sgs) {
                idlest = Some(g);
                isgs = sgs;
            }
        }
        let idlest = idlest?;
        let Some((lg, lsgs)) = local else { return Some(idlest) };
        if lsgs.group_type != isgs.group_type {
            return if lsgs.group_type < isgs.group_type { None } else { Some(idlest) };
        }
        match lsgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = crate::pelt::NICE_0_LOAD * (sd.imbalance_pct as u64 - 100) / 100;
                // Across NUMA nodes, weigh the remote side by the allowance to stay local.
                if sd.has(SD_NUMA) && isgs.avg_load + imbalance >= lsgs.avg_load {
                    return None;
                }
                if isgs.avg_load >= lsgs.avg_load + imbalance {
                    return None;
                }
                if 100 * lsgs.avg_load <= sd.imbalance_pct as u64 * isgs.avg_load {
                    return None;
                }
            }
            GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => return None,
            GroupType::MisfitTask => {
                if self.group_max_capacity(&lg.span) >= self.group_max_capacity(&idlest.span) {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if sd.has(SD_NUMA) {
                    // NUMA balancing's preferred node is not modelled: keep the
                    // task near its parent while the imbalance is allowed.
                    let cpus = lg.span.and(&allowed).weight() as i64;
                    let imb_numa_nr = cpus.min(self.imb_numa_nr(sd_id));
                    let imbalance = (lsgs.idle_cpus as i64 - isgs.idle_cpus as i64).abs();
                    if adjust_numa_imbalance(imbalance, lsgs.sum_nr_running as i64 + 1, imb_numa_nr) == 0 {
                        return None;
                    }
                }
                if lsgs.idle_cpus >= isgs.idle_cpus {
                    return None;
                }
            }
        }
        Some(idlest)
    }

    /// `sched_balance_find_dst_group_cpu(group, p, this_cpu)`: the idle CPU
    /// in the shallowest idle state (the most recently idled one among
    /// equals, since its cache may be warmer), else the least loaded CPU.
    pub fn sched_balance_find_dst_group_cpu(&self, group: &CpuMask, p: TaskId, this_cpu: CpuId) -> CpuId {
        if group.weight() == 1 {
            return group.first().unwrap_or(this_cpu);
        }
        let mut min_load = u64::MAX;
        let mut min_exit_latency = Ns::MAX;
        let mut latest_idle_timestamp: Ns = 0;
        let mut least_loaded = this_cpu;
        let mut shallowest: Option<CpuId> = None;
        let mut cas_backup: Option<CpuId> = None;
        for i in group.and(&self.tasks[p.idx()].allowed).iter() {
            if self.sched_idle_cpu(i) {
                return i;
            }
            let rq = &self.rqs[i.idx()];
            if self.available_idle_cpu(i) {
                if self.cas_skip_pressured(i, &mut cas_backup) {
                    continue; // seed idea 5 (CAS), fair/cas.rs
                }
                let states = &self.machine.core_type(i).idle_states;
                // DEVIATION(kernel): a CPU idle since the start of the run has
                // no recorded state; it counts as being in the deepest one, as
                // a CPU idle since boot would be.
                let exit = rq.idle_state.map_or(states.last(), |s| states.get(s as usize)).map(|st| st.exit_latency_ns);
                match exit {
                    Some(el) if el < min_exit_latency => {
                        min_exit_latency = el;
                        latest_idle_timestamp = rq.idle_stamp;
                        shallowest = Some(i);
                    }
                    _ if (exit.is_none() || exit == Some(min_exit_latency))
                        && rq.idle_stamp > latest_idle_timestamp =>
                    {
                        latest_idle_timestamp = rq.idle_stamp;
                        shallowest = Some(i);
                    }
                    _ => {}
                }
            } else if shallowest.is_none() {
                let load = rq.cpu_load();
                if load < min_load {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        shallowest.or(cas_backup).unwrap_or(least_loaded)
    }

    /// `sched_balance_find_dst_cpu(sd, p, cpu, prev_cpu, sd_flag)`: the slow
    /// path. Starts at the highest domain of `cpu` with `sd_flag` (as
    /// `select_task_rq_fair` finds it) and walks down towards the chosen CPU.
    pub fn sched_balance_find_dst_cpu(&mut self, p: TaskId, cpu: CpuId, prev_cpu: CpuId, sd_flag: u32) -> CpuId {
        let top = self.highest_flag_level(cpu, sd_flag, usize::MAX);
        let Some(mut level) = top else { return prev_cpu };
        // The group sums up to date for `update_sg_wakeup_stats` (nothing
        // below changes a runqueue).
        self.sg_sums_sync_slow_path();
        let allowed = self.tasks[p.idx()].allowed;
        if !self.domains.sd(self.domains.chain(cpu)[level]).span.intersects(&allowed) {
            return prev_cpu;
        }
        // DEVIATION(kernel): `sync_entity_load_avg` (decaying p's averages to
        // prev's last update) is skipped for exec/wake; the engine keeps a
        // sleeping task's averages as of its dequeue.
        let mut cpu = cpu;
        let mut new_cpu = cpu;
        let mut cur = Some(level);
        while let Some(l) = cur {
            level = l;
            let weight = self.domains.sd(self.domains.chain(cpu)[level]).span_weight;
            let child = level.checked_sub(1);
            if self.sd_balance_flags(cpu, level) & sd_flag == 0 {
                cur = child;
                continue;
            }
            let legacy = sched_feat!(self.features, legacy_find_idlest_group);
            let group = if legacy {
                self.find_idlest_group(level, p, cpu, sd_flag) // v4.14 (fair/slowpath_legacy.rs)
            } else {
                self.sched_balance_find_dst_group(level, p, cpu)
            };
            let Some(group) = group else {
                cur = child;
                continue;
            };
            new_cpu = if legacy {
                self.find_idlest_group_cpu(&group.span, p, cpu)
            } else {
                self.sched_balance_find_dst_group_cpu(&group.span, p, cpu)
            };
            if new_cpu == cpu {
                cur = child;
                continue;
            }
            // Go on below `weight` in the new CPU's own chain.
            cpu = new_cpu;
            cur = self.highest_flag_level(cpu, sd_flag, weight as usize);
        }
        new_cpu
    }

    /// The highest level of `cpu`'s chain with `sd_flag` among the domains
    /// narrower than `below_weight`, stopping at the first level without it.
    fn highest_flag_level(&self, cpu: CpuId, sd_flag: u32, below_weight: usize) -> Option<usize> {
        let mut found = None;
        for (l, &id) in self.domains.chain(cpu).iter().enumerate() {
            let sd = self.domains.sd(id);
            if sd.span_weight as usize >= below_weight {
                break;
            }
            if self.sd_balance_flags(cpu, l) & sd_flag != 0 {
                found = Some(l);
            } else if below_weight == usize::MAX {
                break;
            }
        }
        found
    }
}
