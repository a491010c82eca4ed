//! The overutilized flags that switch EAS off (kernel/sched/fair.c
//! `cpu_overutilized`, `is_rd_overutilized`, `set_rd_overutilized`,
//! `check_update_overutilized_status`), and seed idea 6's per-domain flag
//! (`sd_overutilized`, the 2017 Android proposal).
//!
//! System-wide (mainline): a CPU whose fair utilisation does not fit its
//! capacity with the 20% margin marks the root domain. The flag is set on
//! enqueue (not for new tasks) and at the tick, and recomputed (so cleared)
//! when the root domain's statistics are gathered for balancing. While it is
//! clear, EAS places wakeups and load balancing is skipped.
//!
//! Per domain (`sd_overutilized`), with "over 80%" meaning "does not fit with
//! the 20% margin" (`fits_capacity`):
//! - a CPU over 80% of its capacity marks its lowest domain;
//! - a misfit task on a CPU, or a cluster (a lowest domain's span, i.e. a
//!   group of the level above) over 80% of its summed capacity, marks the
//!   parent of the lowest domain;
//! - total utilisation over [`SD_OVERUTIL_ROOT_PCT`]% of the total capacity
//!   marks the root.
//!
//! EAS places a wakeup while its search domain (the asymmetric-capacity
//! domain spanning this CPU and prev) is not marked; load balancing of a
//! domain is skipped while that domain is not marked.
//!
//! When flags change: set at the enqueue of a waking task and at the tick of
//! the CPU (`check_update_overutilized_status`: the CPU rule, and the misfit
//! rule for the running task); recomputed from scratch, so also cleared, for
//! a domain when its periodic balance is due (`eas_balance_skip`, the role
//! `update_sd_lb_stats` plays in the kernel).

use crate::engine::uclamp::{UCLAMP_MAX, UCLAMP_MIN};
use crate::engine::Sim;
use crate::ids::CpuId;
use crate::sched_feat;
use crate::topology::SdId;

use super::wakeup::fits_capacity;

/// Seed idea 6: the root domain is overutilized when the machine's total
/// utilisation exceeds this share of its total capacity (SEEDS.md, the 2017
/// proposal's "total util over 50% of the system").
pub const SD_OVERUTIL_ROOT_PCT: u64 = 50;

impl Sim {
    /// `cpu_overutilized(cpu)`: its fair utilisation does not fit its
    /// capacity (false when EAS is not enabled).
    pub fn cpu_overutilized(&self, cpu: CpuId) -> bool {
        if !self.sched_energy_enabled() {
            return false;
        }
        let (min, max) = (self.uclamp_rq_get(cpu, UCLAMP_MIN), self.uclamp_rq_get(cpu, UCLAMP_MAX));
        self.util_fits_cpu(self.cpu_util_cfs(cpu), min, max, cpu) == 0
    }

    /// `is_rd_overutilized(rd)`: true when EAS is not enabled.
    pub fn is_rd_overutilized(&self) -> bool {
        !self.sched_energy_enabled() || self.fair.eas.rd_overutilized
    }

    /// `set_rd_overutilized(rd, flag)`.
    pub fn set_rd_overutilized(&mut self, flag: bool) {
        if self.sched_energy_enabled() {
            self.fair.eas.rd_overutilized = flag;
        }
    }

    /// Whether domain `sd` is marked overutilized (seed idea 6).
    #[inline]
    pub fn sd_is_overutilized(&self, sd: SdId) -> bool {
        self.fair.eas.sd_overutilized.get(sd.0 as usize).copied().unwrap_or(true)
    }

    fn set_sd_overutilized(&mut self, sd: SdId, flag: bool) {
        if let Some(f) = self.fair.eas.sd_overutilized.get_mut(sd.0 as usize) {
            *f = flag;
        }
    }

    /// Whether EAS is off for a wakeup on `this_cpu` with previous CPU
    /// `prev`: the root domain is overutilized, or with `sd_overutilized` the
    /// search domain of `find_energy_efficient_cpu` is.
    pub fn eas_overutilized(&self, this_cpu: CpuId, prev: CpuId) -> bool {
        if !sched_feat!(self.features, sd_overutilized) {
            return self.is_rd_overutilized();
        }
        if !self.sched_energy_enabled() {
            return true;
        }
        let mut sd = self.domains.sd_asym_cpucapacity[this_cpu.idx()];
        while let Some(id) = sd {
            if self.domains.sd(id).span.test(prev) {
                return self.sd_is_overutilized(id);
            }
            sd = self.domains.sd(id).parent;
        }
        true
    }

    /// `check_update_overutilized_status(rq)`: after a wakeup's enqueue and
    /// at the tick, mark what `cpu` makes overutilized (never clears).
    /// Without EAS nothing is marked: that test is inlined at the callers
    /// (every wakeup's enqueue and tick), the marking is not.
    #[inline]
    pub fn check_update_overutilized_status(&mut self, cpu: CpuId) {
        if self.sched_energy_enabled() {
            self.check_update_overutilized_eas(cpu);
        }
    }

    /// `check_update_overutilized_status` with EAS enabled.
    #[inline(never)]
    fn check_update_overutilized_eas(&mut self, cpu: CpuId) {
        let over = self.cpu_overutilized(cpu);
        if !self.fair.eas.rd_overutilized && over {
            self.set_rd_overutilized(true);
        }
        if !sched_feat!(self.features, sd_overutilized) {
            return;
        }
        let chain = self.domains.chain(cpu);
        let (lowest, parent) = (chain.first().copied(), chain.get(1).copied());
        if let (Some(l), true) = (lowest, over) {
            self.set_sd_overutilized(l, true);
        }
        if let (Some(pa), true) = (parent, self.misfit_task_load(cpu) > 0) {
            self.set_sd_overutilized(pa, true);
        }
    }

    /// Seed idea 6: whether domain `sd` is overutilized now, by the rules of
    /// the module doc.
    pub fn sd_overutilized_now(&self, sd_id: SdId) -> bool {
        let sd = self.domains.sd(sd_id);
        if sd.child.is_none() && sd.span.iter().any(|c| self.cpu_overutilized(c)) {
            return true;
        }
        // The parent of a lowest domain: its groups are clusters.
        if sd.child.is_some_and(|c| self.domains.sd(c).child.is_none()) {
            for g in &sd.groups {
                let util: u64 = g.iter().map(|c| self.cpu_util_cfs(c)).sum();
                let cap: u64 = g.iter().map(|c| self.capacity_of(c)).sum();
                if !fits_capacity(util, cap) || g.iter().any(|c| self.misfit_task_load(c) > 0) {
                    return true;
                }
            }
        }
        if sd.parent.is_none() {
            let util: u64 = sd.span.iter().map(|c| self.cpu_util_cfs(c)).sum();
            let cap: u64 = sd.span.iter().map(|c| self.capacity_of(c)).sum();
            if util * 100 > cap * SD_OVERUTIL_ROOT_PCT {
                return true;
            }
        }
        false
    }

    /// Recompute the flags of `cpu`'s domain at `level` as gathering its
    /// balance statistics does: the root domain's `rd->overutilized` from
    /// its CPUs, and with `sd_overutilized` the domain's own flag.
    pub fn update_sd_overutilized(&mut self, cpu: CpuId, level: usize) {
        if !self.sched_energy_enabled() {
            return;
        }
        let Some(&sd_id) = self.domains.chain(cpu).get(level) else { return };
        let sd = self.domains.sd(sd_id);
        if sd.parent.is_none() {
            let any = sd.span.iter().any(|c| self.cpu_overutilized(c));
            self.set_rd_overutilized(any);
        }
        if sched_feat!(self.features, sd_overutilized) {
            let now = self.sd_overutilized_now(sd_id);
            self.set_sd_overutilized(sd_id, now);
        }
    }

    /// The balance hook: refresh the flags of `cpu`'s domain at `level`, then
    /// say whether its balancing is skipped because EAS is in charge (the
    /// kernel's `out_balanced` in `sched_balance_find_src_group` when a perf
    /// domain exists and the root domain is not overutilized; with
    /// `sd_overutilized`, when this domain is not).
    pub fn eas_balance_skip(&mut self, cpu: CpuId, level: usize) -> bool {
        if !self.sched_energy_enabled() {
            return false;
        }
        self.update_sd_overutilized(cpu, level);
        if sched_feat!(self.features, sd_overutilized) {
            let Some(&sd_id) = self.domains.chain(cpu).get(level) else { return false };
            return !self.sd_is_overutilized(sd_id);
        }
        !self.is_rd_overutilized()
    }
}
