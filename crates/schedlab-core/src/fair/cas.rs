//! Seed idea 5: capacity awareness under RT and IRQ pressure.
//!
//! CAS (capacity-aware idle search, the 2017 proposal for x86 and Android).
//! A CPU has *full capacity* when `capacity_of(cpu)` (what RT, DL and IRQ
//! time leave to fair tasks) is at least [`CAS_CAPACITY_PCT`]% of its
//! original capacity. With the `cas` feature:
//! - `select_idle_sibling` takes the target, prev or `recent_used_cpu` only
//!   if, besides being idle, it has full capacity;
//! - `select_idle_smt` and `select_idle_cpu` take the first idle CPU with
//!   full capacity; idle CPUs below it are remembered, and when the search
//!   ends without a full-capacity idle CPU, the idle CPU with the most
//!   capacity among those seen is returned (the "backup");
//! - `select_idle_core` accepts a wholly idle core only through a
//!   full-capacity CPU of it; its fallback idle CPU (returned when no idle
//!   core is found) prefers a full-capacity CPU, else the most capacity;
//! - `sched_balance_find_dst_group_cpu` (slow path) ignores idle CPUs below
//!   full capacity when choosing the shallowest idle CPU; if no
//!   full-capacity idle CPU exists, the idle CPU with the most capacity is
//!   taken before any busy CPU.
//!
//! Without `cas` every helper here answers as if every CPU had full capacity
//! and the first idle CPU found is kept, which is the kernel's behaviour.
//!
//! Remote cpufreq updates (`remote_cpufreq_update`, v4.14): when a task is
//! enqueued on another CPU of the waker's frequency domain, schedutil
//! updates that domain's frequency at once instead of at the target's next
//! scheduler event. [`Sim::remote_cpufreq_update`] is the decision;
//! `cpufreq::sugov_update_shared` acts on it under the schedutil governor
//! (the run is refused with the feature and another governor).

use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::CpuId;
use crate::sched_feat;

use super::eas::sugov_effective_cpu_perf;

/// CAS: a CPU keeps "full capacity" while `capacity_of` is at least this
/// percentage of its original capacity (SEEDS.md idea 5: 80%, the margin the
/// fair class uses everywhere for "fits", `fits_capacity`).
pub const CAS_CAPACITY_PCT: u64 = 80;

/// What a cpufreq update request on enqueue would do (`remote_cpufreq_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpufreqUpdate {
    /// The enqueue runs on the target CPU itself: schedutil updates the
    /// domain as usual, to `freq_khz`.
    Local {
        /// Frequency domain of the target.
        domain: u32,
        /// Frequency schedutil would request, kHz.
        freq_khz: u32,
    },
    /// Remote enqueue from a CPU of the same frequency domain with
    /// `remote_cpufreq_update` on: the domain is updated now, to `freq_khz`.
    RemoteNow {
        /// Frequency domain of the target.
        domain: u32,
        /// Frequency schedutil would request, kHz.
        freq_khz: u32,
    },
    /// The request waits for the target's next scheduler event (tick or
    /// local enqueue): remote enqueue from another frequency domain, or the
    /// feature is off (pre-v4.14 behaviour: remote callbacks were dropped).
    Deferred {
        /// Frequency domain of the target.
        domain: u32,
    },
}

impl Sim {
    /// CAS: whether `cpu` has full capacity (always true without `cas`).
    #[inline]
    pub fn cas_full_capacity(&self, cpu: CpuId) -> bool {
        !sched_feat!(self.features, cas)
            || self.capacity_of(cpu) * 100 >= self.machine.capacity_orig(cpu) as u64 * CAS_CAPACITY_PCT
    }

    /// CAS: whether idle CPU `cand` should replace `cur` as the fallback of
    /// an idle search. Without `cas` only an empty fallback is replaced (the
    /// first idle CPU wins); with it a full-capacity CPU beats a pressured
    /// one, and between pressured ones the larger `capacity_of` wins.
    pub fn cas_prefer_backup(&self, cand: CpuId, cur: Option<CpuId>) -> bool {
        let Some(cur) = cur else { return true };
        if !sched_feat!(self.features, cas) || self.cas_full_capacity(cur) {
            return false;
        }
        self.cas_full_capacity(cand) || self.capacity_of(cand) > self.capacity_of(cur)
    }

    /// CAS step of an idle search over `cpu`: `true` when `cpu` is idle (or
    /// runs only SCHED_IDLE tasks) and has full capacity, so the search takes
    /// it; an idle CPU below full capacity is offered to `backup` instead.
    pub fn cas_take_idle(&self, cpu: CpuId, backup: &mut Option<CpuId>) -> bool {
        if !(self.available_idle_cpu(cpu) || self.sched_idle_cpu(cpu)) {
            return false;
        }
        if self.cas_full_capacity(cpu) {
            return true;
        }
        if self.cas_prefer_backup(cpu, *backup) {
            *backup = Some(cpu);
        }
        false
    }

    /// CAS for a wholly idle core: the CPU to return for it, `core` itself
    /// when it has full capacity, else a full-capacity sibling in `cpus`,
    /// else `None` (the core is passed over; its CPUs stay fallbacks).
    pub fn cas_idle_core_pick(&self, core: CpuId, cpus: &CpuMask) -> Option<CpuId> {
        if self.cas_full_capacity(core) {
            return Some(core);
        }
        self.machine.smt_mask(core).and(cpus).iter().find(|&c| self.cas_full_capacity(c))
    }

    /// The slow path's CAS filter for idle CPU `cpu`: `true` when it must be
    /// skipped (below full capacity), after offering it to `backup`.
    pub fn cas_skip_pressured(&self, cpu: CpuId, backup: &mut Option<CpuId>) -> bool {
        if self.cas_full_capacity(cpu) {
            return false;
        }
        if self.cas_prefer_backup(cpu, *backup) {
            *backup = Some(cpu);
        }
        true
    }

    /// `sugov_get_util(sg_cpu, boost)`: what `cpu` asks schedutil for,
    /// `sugov_effective_cpu_perf(effective_cpu_util(cpu_util_cfs_boost))`
    /// with the iowait boost of the policy's last decision
    /// (`sugov_iowait_apply`) as the floor of the utilisation (v6.8 form).
    #[inline]
    pub fn sugov_get_util(&self, cpu: CpuId) -> u64 {
        let (eff, min, max) = self.effective_cpu_util(cpu, self.cpu_util_cfs_boost(cpu));
        let boost = self.cpufreq.sugov_cpus.get(cpu.idx()).map_or(0, |sg| sg.boost_util);
        sugov_effective_cpu_perf(eff.max(boost), min, max)
    }

    /// schedutil's frequency request for frequency domain `fd`
    /// (`sugov_next_freq_shared`): `get_next_freq` of the busiest CPU's
    /// [`Sim::sugov_get_util`], a linear map of it to a frequency
    /// (`map_util_freq`) resolved to the lowest OPP at or above it
    /// (`CPUFREQ_RELATION_L`).
    ///
    /// Two shortcuts give the same answer with less work (cpufreq/freq_map.rs):
    /// the walk over the CPUs stops at the first one asking for at least
    /// `FreqMap::sat_util` (the request is then `cpuinfo.max_freq`,
    /// whatever the others ask), and a CPU is first tried with
    /// [`Sim::sugov_util_reaches_max`], a lower bound of its request read
    /// from its fair averages alone.
    #[inline(always)]
    pub fn sugov_next_freq_khz(&self, fd: u32) -> u32 {
        let next = self.sugov_next_freq_walk(fd);
        #[cfg(test)]
        assert_eq!(
            next,
            self.sugov_next_freq_khz_direct(fd),
            "policy {fd}: the walk's answer differs from the direct one"
        );
        next
    }

    /// The walk of [`Sim::sugov_next_freq_khz`]: first the lower bounds
    /// alone (in a busy policy one suffices), then, only if none shows the
    /// top request, every CPU's request.
    #[inline(always)]
    fn sugov_next_freq_walk(&self, fd: u32) -> u32 {
        let pol = &self.cpufreq.policies[fd as usize];
        let sat = pol.freq_map.sat_util;
        if pol.cpus.iter().any(|&c| self.sugov_util_reaches_max(c, sat)) {
            // `get_next_freq(sat_util)` is `fmax_khz`, by its definition.
            return pol.freq_map.fmax_khz as u32;
        }
        self.sugov_next_freq_all(fd)
    }

    /// `get_next_freq` of the highest [`Sim::sugov_get_util`] of policy
    /// `fd`'s CPUs, stopping at one that reaches `sat_util`.
    #[inline(never)]
    fn sugov_next_freq_all(&self, fd: u32) -> u32 {
        let pol = &self.cpufreq.policies[fd as usize];
        let map = &pol.freq_map;
        let mut util = 0;
        for &c in &pol.cpus {
            util = util.max(self.sugov_get_util(c));
            if util >= map.sat_util {
                return map.fmax_khz as u32;
            }
        }
        let Some(&first) = pol.cpus.first() else { return 0 };
        map.get_next_freq(&self.machine.core_type(first).opps, util)
    }

    /// Whether [`Sim::sugov_get_util`] of `cpu` is at least `sat_util`,
    /// shown from a lower bound (`false`: not shown, ask it). The bound:
    /// `cpu_util_cfs_boost` is at least `max(util_avg, runnable_avg)`
    /// capped at the capacity (util_est only raises it); `effective_cpu_util`
    /// returns at least its input capped at the capacity (RT time adds to
    /// it, IRQ time scales it as `irq + (cap - irq) x U / cap`, which is at
    /// least `U` for `U <= cap`, and at `irq >= cap` it returns the
    /// capacity as util, `min` and `max`);
    /// the iowait boost and `min` only raise the request; so
    /// `sugov_effective_cpu_perf` is at least the bound plus 25%, capped at
    /// `min(cap, uclamp_max)`.
    #[inline]
    pub fn sugov_util_reaches_max(&self, cpu: CpuId, sat_util: u64) -> bool {
        let rq = &self.rqs[cpu.idx()];
        let scale = self.machine.capacity_orig(cpu) as u64;
        let cfs = rq.cfs_avg.util_avg.max(rq.cfs_avg.runnable_avg).min(scale);
        let max = scale.min(self.uclamp_rq_get(cpu, crate::engine::uclamp::UCLAMP_MAX));
        let reaches = sugov_effective_cpu_perf(cfs, 0, max) >= sat_util;
        #[cfg(test)]
        assert!(!reaches || self.sugov_get_util(cpu) >= sat_util, "cpu {cpu:?}: the lower bound is above the request");
        reaches
    }

    /// [`Sim::sugov_next_freq_khz`] computed without its shortcuts: every
    /// CPU of the span asked, the linear scan of the OPPs. The reference
    /// each request is checked against in the unit tests.
    #[cfg(test)]
    pub(crate) fn sugov_next_freq_khz_direct(&self, fd: u32) -> u32 {
        let span = &self.machine.freq_domains[fd as usize].span;
        let Some(first) = span.first() else { return 0 };
        let core = self.machine.core_type(first);
        let cap = core.capacity as u64;
        let util = span
            .iter()
            .map(|c| {
                let (eff, min, max) = self.effective_cpu_util(c, self.cpu_util_cfs_boost(c));
                let boost = self.cpufreq.sugov_cpus.get(c.idx()).map_or(0, |sg| sg.boost_util);
                sugov_effective_cpu_perf(eff.max(boost), min, max)
            })
            .max()
            .unwrap_or(0);
        let top = core.opps.last().map_or(core.nominal_freq_khz, |o| o.freq_khz);
        let fmax = self.cpufreq.policies[fd as usize].cpuinfo_max_khz.max(top) as u64;
        let want = fmax * util / cap.max(1);
        if want > top as u64 {
            let unit = self.machine.cpufreq.pstate_scaling_khz.max(1) as u64;
            return (want.div_ceil(unit) * unit).min(fmax) as u32;
        }
        core.opps.iter().map(|o| o.freq_khz).find(|&f| f as u64 >= want).unwrap_or(top)
    }

    /// `cpufreq_this_cpu_can_update`: whether `this_cpu` may update the
    /// policy of `target` now (its own CPU, or with `remote_cpufreq_update`
    /// a CPU of the same policy); otherwise the target's next own update
    /// does. The decision of [`Sim::remote_cpufreq_update`] without the
    /// frequency it would ask for.
    #[inline]
    pub fn cpufreq_this_cpu_can_update(&self, this_cpu: CpuId, target: CpuId) -> bool {
        this_cpu == target
            || (sched_feat!(self.features, remote_cpufreq_update)
                && self.machine.cpus[this_cpu.idx()].freq_domain == self.machine.cpus[target.idx()].freq_domain)
    }

    /// Seed idea 5: what the cpufreq update of an enqueue of a task on
    /// `target`, done by `this_cpu`, does (`cpufreq_this_cpu_can_update`).
    pub fn remote_cpufreq_update(&self, this_cpu: CpuId, target: CpuId) -> CpufreqUpdate {
        let domain = self.machine.cpus[target.idx()].freq_domain;
        if !self.cpufreq_this_cpu_can_update(this_cpu, target) {
            return CpufreqUpdate::Deferred { domain };
        }
        let freq_khz = self.sugov_next_freq_khz(domain);
        if this_cpu == target {
            CpufreqUpdate::Local { domain, freq_khz }
        } else {
            CpufreqUpdate::RemoteNow { domain, freq_khz }
        }
    }
}
