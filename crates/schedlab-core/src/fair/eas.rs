//! Energy-aware scheduling (seed idea 6; kernel/sched/fair.c and
//! include/linux/energy_model.h): the energy model built from the machine
//! ([`EnergyModel`], one [`PerfDomain`] per frequency domain), the kernel's
//! energy estimate (`em_cpu_energy`, `compute_energy`, `effective_cpu_util`,
//! `sugov_effective_cpu_perf`) and `find_energy_efficient_cpu`, which
//! `select_task_rq_fair` calls first on a wakeup when EAS is enabled and the
//! root (or, with `sd_overutilized`, the search) domain is not overutilized.
//!
//! `eas_cluster_candidates` replaces the kernel's per-domain candidate (the
//! CPU with the most spare capacity) by the 2017 proposal's: the CPU that
//! needs the lowest OPP once the task is added, the fullest one among equals
//! (packing without raising the domain's frequency).
//!
//! Energies are in the kernel's unit: `cost * util`, where `cost` is
//! `10 * power_uW / performance`; only differences between placements mean
//! anything.

use crate::cpumask::CpuMask;
use crate::engine::uclamp::{UCLAMP_MAX, UCLAMP_MIN};
use crate::engine::Sim;
use crate::ids::{CpuId, TaskId};
use crate::pelt::SCHED_CAPACITY_SCALE;
use crate::sched_feat;
use crate::topology::{Domains, Machine};
use crate::trace::PlacePath;

use super::wakeup::{fits_capacity, WakeCtx};

/// One performance state of a perf domain (`struct em_perf_state`).
#[derive(Clone, Debug, PartialEq)]
pub struct PerfState {
    /// Frequency, kHz.
    pub freq_khz: u32,
    /// Capacity of one CPU at this state: `capacity_orig * freq / f_max`.
    pub performance: u64,
    /// Active power of one CPU, microwatts (the kernel's EM unit).
    pub power_uw: u64,
    /// `10 * power_uw / performance` (`em_compute_costs`; the factor 10 is the
    /// kernel's extra resolution).
    pub cost: u64,
    /// A higher state has a lower or equal cost (`EM_PERF_STATE_INEFFICIENT`).
    pub inefficient: bool,
}

/// A performance domain (`struct perf_domain` + `em_perf_domain`): the CPUs
/// of one frequency domain and their performance states, ascending.
#[derive(Clone, Debug, PartialEq)]
pub struct PerfDomain {
    /// Index into `Machine::freq_domains`.
    pub freq_domain: u32,
    /// The CPUs.
    pub span: CpuMask,
    /// States, ascending frequency; never empty.
    pub states: Vec<PerfState>,
    /// `EM_PERF_DOMAIN_SKIP_INEFFICIENCIES`: skip inefficient states when
    /// mapping a utilisation to a state. On, as cpufreq sets it for drivers
    /// that resolve frequencies through the EM's efficiency table.
    pub skip_inefficiencies: bool,
}

impl PerfDomain {
    /// `em_pd_get_efficient_state`: the lowest state whose performance
    /// covers `max_util` (skipping inefficient ones), else the highest.
    pub fn efficient_state(&self, max_util: u64) -> usize {
        for (i, ps) in self.states.iter().enumerate() {
            if ps.performance >= max_util {
                if self.skip_inefficiencies && ps.inefficient {
                    continue;
                }
                return i;
            }
        }
        self.states.len() - 1
    }

    /// `em_cpu_energy(pd, max_util, sum_util, allowed_cpu_cap)`: the energy
    /// of the domain's CPUs when the busiest needs `max_util` (clamped to
    /// `allowed_cpu_cap`) and together they run `sum_util`: the cost of the
    /// state that covers `max_util` times `sum_util`. Identical to the older
    /// form `power * f_max / f * sum_util / capacity_orig` (times 10).
    pub fn em_cpu_energy(&self, max_util: u64, sum_util: u64, allowed_cpu_cap: u64) -> u64 {
        if sum_util == 0 {
            return 0;
        }
        let i = self.efficient_state(max_util.min(allowed_cpu_cap));
        self.states[i].cost * sum_util
    }
}

/// The energy model of the machine (`rd->pd`): one perf domain per
/// frequency domain, in the kernel's list order (`build_perf_domains`
/// prepends, so the domain of the highest-numbered first CPU comes first).
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyModel {
    /// Perf domains, kernel list order.
    pub pds: Vec<PerfDomain>,
}

impl EnergyModel {
    /// Build the model from the machine's OPP tables. `None` (no energy
    /// model, so EAS stays off, as when no EM is registered) when some OPP
    /// has no power figure (`em_create_perf_table` rejects zero power; the
    /// presets without `opps` get one zero-power OPP) or a frequency domain
    /// mixes core types.
    pub fn from_machine(machine: &Machine) -> Option<EnergyModel> {
        let mut pds = Vec::with_capacity(machine.freq_domains.len());
        for (i, fd) in machine.freq_domains.iter().enumerate() {
            let first = fd.span.first()?;
            let ct = machine.cpus[first.idx()].core_type;
            if fd.span.iter().any(|c| machine.cpus[c.idx()].core_type != ct) {
                return None;
            }
            let core = &machine.core_types[ct as usize];
            let fmax = core.opps.last()?.freq_khz as u64;
            let max_cap = core.capacity as u64;
            let mut states = Vec::with_capacity(core.opps.len());
            for o in &core.opps {
                if o.power_mw == 0 || fmax == 0 {
                    return None;
                }
                let performance = max_cap * o.freq_khz as u64 / fmax;
                let power_uw = o.power_mw as u64 * 1000;
                let cost = power_uw * 10 / performance.max(1);
                states.push(PerfState { freq_khz: o.freq_khz, performance, power_uw, cost, inefficient: false });
            }
            // em_compute_costs: from the top, a state costing no less than a
            // higher one is inefficient.
            let mut prev_cost = u64::MAX;
            for s in states.iter_mut().rev() {
                if s.cost >= prev_cost {
                    s.inefficient = true;
                } else {
                    prev_cost = s.cost;
                }
            }
            pds.push(PerfDomain { freq_domain: i as u32, span: fd.span, states, skip_inefficiencies: true });
        }
        pds.sort_by_key(|pd| std::cmp::Reverse(pd.span.first().map_or(0, |c| c.0)));
        Some(EnergyModel { pds })
    }
}

/// EAS state of the root domain: the energy model and the overutilized
/// flags (see `fair::overutilized`).
#[derive(Clone, Debug, Default)]
pub struct EasState {
    /// The energy model, if the machine has one.
    pub em: Option<EnergyModel>,
    /// `sched_is_eas_possible()`: asymmetric capacities, no SMT, and the
    /// schedutil governor on every CPU (kernel/sched/topology.c; the kernel
    /// also wants frequency invariance, which schedlab has with any governor).
    pub possible: bool,
    /// `rd->overutilized`.
    pub rd_overutilized: bool,
    /// Seed idea 6: the per-domain flag, by `SdId`.
    pub sd_overutilized: Vec<bool>,
}

impl EasState {
    /// The state for a machine and its domains, no flag set.
    pub fn new(machine: &Machine, domains: &Domains) -> Self {
        let asym = domains.sd_asym_cpucapacity.iter().any(|s| s.is_some());
        let schedutil = machine.cpufreq.governor == Some(crate::topology::Governor::Schedutil);
        EasState {
            em: EnergyModel::from_machine(machine),
            possible: asym && schedutil && !machine.has_smt(),
            rd_overutilized: false,
            sd_overutilized: vec![false; domains.sds.len()],
        }
    }
}

/// `struct energy_env`: the utilisation landscape of one perf domain.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnergyEnv {
    /// The task's busy time (`eenv_task_busy_time`).
    pub task_busy_time: u64,
    /// The domain's busy time without the task (`eenv_pd_busy_time`).
    pub pd_busy_time: u64,
    /// Capacity of one CPU of the domain (`get_actual_cpu_capacity`).
    pub cpu_cap: u64,
    /// Capacity of the whole domain.
    pub pd_cap: u64,
}

/// `sugov_effective_cpu_perf(cpu, actual, min, max)`: schedutil's request,
/// the utilisation plus 25% headroom (`map_util_perf`), capped at `max`, at
/// least `min`.
#[inline]
pub fn sugov_effective_cpu_perf(actual: u64, min: u64, max: u64) -> u64 {
    let actual = actual + (actual >> 2);
    let max = if actual < max { actual } else { max };
    min.max(max)
}

impl Sim {
    /// `sched_energy_enabled()`: the `eas` feature is on (v5.0+), the
    /// machine has an energy model, and EAS is possible there (asymmetric
    /// capacities, no SMT, schedutil: `sched_is_eas_possible`), as the kernel
    /// decides when it builds the perf domains.
    #[inline]
    pub fn sched_energy_enabled(&self) -> bool {
        sched_feat!(self.features, eas) && self.fair.eas.possible && self.fair.eas.em.is_some()
    }

    /// `effective_cpu_util(cpu, util_cfs, &min, &max)`: the CPU's utilisation
    /// as frequency selection sees it, (util, min, max). RT time adds to the
    /// fair utilisation, IRQ time scales it (`irq + (max - irq) / max * U`);
    /// the runqueue's clamps bound the request: `min` at least its
    /// `uclamp_min`, `max` at most its `uclamp_max`. With no clamps in use, a
    /// runnable RT task asks for the highest performance (`min` = capacity),
    /// as an RT task's default `uclamp_min` of 1024 does when they are.
    // DEVIATION(kernel): no DL class (`cpu_bw_dl`, `cpu_util_dl` are 0).
    #[inline]
    pub fn effective_cpu_util(&self, cpu: CpuId, util_cfs: u64) -> (u64, u64, u64) {
        let scale = self.machine.capacity_orig(cpu) as u64;
        let rq = &self.rqs[cpu.idx()];
        let irq = rq.irq_avg.util_avg;
        if irq >= scale {
            return (scale, scale, scale);
        }
        let mut min = irq.max(self.uclamp_rq_get(cpu, UCLAMP_MIN));
        if !self.uclamp_is_used() && self.rt_rq_is_runnable(cpu) {
            min = scale;
        }
        let max = scale.min(self.uclamp_rq_get(cpu, UCLAMP_MAX));
        let util = util_cfs + rq.rt_avg.util_avg;
        if util >= scale {
            return (scale, min, max);
        }
        if irq == 0 {
            // `util * (scale - 0) / scale + 0` is `util` (below `scale`,
            // so the product cannot overflow): no division on the common path.
            return (util, min, max);
        }
        let util = util * (scale - irq) / scale + irq;
        (util.min(scale), min, max)
    }

    /// `eenv_task_busy_time`: the task's util_est scaled by prev's IRQ pressure.
    pub fn eenv_task_busy_time(&self, p: TaskId, prev: CpuId) -> u64 {
        let max_cap = self.machine.capacity_orig(prev) as u64;
        let irq = self.rqs[prev.idx()].irq_avg.util_avg;
        if irq >= max_cap {
            return max_cap;
        }
        self.task_util_est(p) * (max_cap - irq) / max_cap
    }

    /// `eenv_pd_busy_time`: the domain's summed effective utilisation without `p`.
    pub fn eenv_pd_busy_time(&self, eenv: &mut EnergyEnv, pd_cpus: &CpuMask, p: TaskId) {
        let busy: u64 = pd_cpus.iter().map(|c| self.effective_cpu_util(c, self.cpu_util(c, Some(p), None)).0).sum();
        eenv.pd_busy_time = busy.min(eenv.pd_cap);
    }

    /// The performance schedutil would request for `cpu` if `p` ran on
    /// `dst` (`None`: `p` runs nowhere): one step of `eenv_pd_max_util`.
    pub fn eas_cpu_perf(&self, cpu: CpuId, p: TaskId, dst: Option<CpuId>) -> u64 {
        let util = self.cpu_util_boost(cpu, Some(p), dst, true);
        let (eff, mut min, mut max) = self.effective_cpu_util(cpu, util);
        // The task's clamps join the CPU it would run on; with no task
        // counted there (its uclamp_max held from the last one) its own
        // uclamp_max stands.
        if dst == Some(cpu) && self.uclamp_is_used() {
            let (p_min, p_max) = self.task_uclamp(p);
            min = min.max(p_min);
            max = if self.uclamp_rq_is_idle(cpu) { p_max } else { max.max(p_max) };
        }
        sugov_effective_cpu_perf(eff, min, max)
    }

    /// `eenv_pd_max_util`: the highest request in the domain, at most `cpu_cap`.
    pub fn eenv_pd_max_util(&self, eenv: &EnergyEnv, pd_cpus: &CpuMask, p: TaskId, dst: Option<CpuId>) -> u64 {
        let max_util = pd_cpus.iter().map(|c| self.eas_cpu_perf(c, p, dst)).max().unwrap_or(0);
        max_util.min(eenv.cpu_cap)
    }

    /// `compute_energy(eenv, pd, pd_cpus, p, dst_cpu)`: the domain's energy
    /// with `p` on `dst` (`None`: without `p`).
    pub fn compute_energy(&self, eenv: &EnergyEnv, pd: &PerfDomain, p: TaskId, dst: Option<CpuId>) -> u64 {
        let max_util = self.eenv_pd_max_util(eenv, &pd.span, p, dst);
        let mut busy_time = eenv.pd_busy_time;
        if dst.is_some() {
            busy_time = eenv.pd_cap.min(busy_time + eenv.task_busy_time);
        }
        pd.em_cpu_energy(max_util, busy_time, eenv.cpu_cap)
    }

    /// Seed idea 6's candidate of a perf domain: among the CPUs `p` fits
    /// (other than prev), the one needing the lowest performance state once
    /// `p` is added (never below the domain's state without `p`, as the
    /// domain runs at its busiest CPU's request), the most utilised among equals.
    pub fn eas_cluster_candidate(&self, pd: &PerfDomain, eenv: &EnergyEnv, p: TaskId, cpus: &CpuMask) -> Option<CpuId> {
        let base = pd.efficient_state(self.eenv_pd_max_util(eenv, &pd.span, p, None));
        let mut best: Option<(usize, u64, CpuId)> = None;
        for cpu in cpus.iter() {
            let util = self.cpu_util(cpu, Some(p), Some(cpu));
            if !fits_capacity(util, self.capacity_of(cpu)) {
                continue;
            }
            let state = pd.efficient_state(self.eas_cpu_perf(cpu, p, Some(cpu)).min(eenv.cpu_cap)).max(base);
            if best.is_none_or(|(s, u, _)| state < s || (state == s && util > u)) {
                best = Some((state, util, cpu));
            }
        }
        best.map(|(_, _, c)| c)
    }

    /// `find_energy_efficient_cpu(p, prev_cpu)`, linux-next: per perf domain
    /// evaluate prev (if there) and one candidate (max spare capacity, or
    /// [`Sim::eas_cluster_candidate`]), and return the CPU whose energy delta
    /// is lowest, prev unless another saves energy. `None` = the kernel's -1
    /// (no energy model or no asymmetric domain spanning prev: the caller
    /// goes on with the usual path). Adds the CPUs examined to `scanned`.
    pub fn find_energy_efficient_cpu(
        &self,
        p: TaskId,
        prev: CpuId,
        this_cpu: CpuId,
        scanned: &mut u32,
    ) -> Option<CpuId> {
        let em = self.fair.eas.em.as_ref()?;
        let mut sd_id = self.domains.sd_asym_cpucapacity[this_cpu.idx()]?;
        while !self.domains.sd(sd_id).span.test(prev) {
            sd_id = self.domains.sd(sd_id).parent?;
        }
        let sd_span = self.domains.sd(sd_id).span;
        let target = prev;
        let used = self.uclamp_is_used();
        let (p_util_min, p_util_max) = if used { self.task_uclamp(p) } else { (0, SCHED_CAPACITY_SCALE) };
        // DEVIATION(kernel): no sync_entity_load_avg (see the slow path).
        if self.task_util_est(p) == 0 && p_util_min == 0 {
            return Some(target);
        }
        let allowed = self.tasks[p.idx()].allowed;
        let cluster = sched_feat!(self.features, eas_cluster_candidates);
        let mut eenv = EnergyEnv { task_busy_time: self.eenv_task_busy_time(p, prev), ..Default::default() };
        let (mut prev_delta, mut best_delta) = (u64::MAX, u64::MAX);
        let (mut prev_fits, mut best_fits) = (-1i32, -1i32);
        let (mut best_actual_cap, mut prev_actual_cap) = (0u64, 0u64);
        let mut best_energy_cpu = target;
        for pd in &em.pds {
            let Some(first) = pd.span.first() else { continue };
            // get_actual_cpu_capacity: no thermal pressure is modelled.
            let cpu_actual_cap = self.machine.capacity_orig(first) as u64;
            eenv.cpu_cap = cpu_actual_cap;
            eenv.pd_cap = cpu_actual_cap * pd.span.weight() as u64;
            let (mut prev_spare_cap, mut max_spare_cap) = (-1i64, -1i64);
            let (mut max_spare_cap_cpu, mut max_fits) = (None, -1i32);
            let cands = pd.span.and(&sd_span).and(&allowed);
            for cpu in cands.iter() {
                *scanned += 1;
                let util = self.cpu_util(cpu, Some(p), Some(cpu));
                let cpu_cap = self.capacity_of(cpu);
                // The runqueue's clamps, max-aggregated with the task's (not
                // applied to util: util_fits_cpu weighs them separately).
                let (mut util_min, mut util_max) = (p_util_min, p_util_max);
                if used && !self.uclamp_rq_is_idle(cpu) {
                    util_min = util_min.max(self.uclamp_rq_get(cpu, UCLAMP_MIN));
                    util_max = util_max.max(self.uclamp_rq_get(cpu, UCLAMP_MAX));
                }
                let fits = self.util_fits_cpu(util, util_min, util_max, cpu);
                if fits == 0 {
                    continue;
                }
                let spare = cpu_cap.saturating_sub(util) as i64;
                if cpu == prev {
                    prev_spare_cap = spare;
                    prev_fits = fits;
                } else if fits > max_fits || (fits == max_fits && spare > max_spare_cap) {
                    max_spare_cap = spare;
                    max_spare_cap_cpu = Some(cpu);
                    max_fits = fits;
                }
            }
            if cluster {
                let others = {
                    let mut m = cands;
                    m.clear(prev);
                    m
                };
                max_spare_cap_cpu = self.eas_cluster_candidate(pd, &eenv, p, &others);
                max_fits = if max_spare_cap_cpu.is_some() { 1 } else { -1 };
            }
            if max_spare_cap_cpu.is_none() && prev_spare_cap < 0 {
                continue;
            }
            self.eenv_pd_busy_time(&mut eenv, &pd.span, p);
            let base_energy = self.compute_energy(&eenv, pd, p, None);
            if prev_spare_cap > -1 {
                let e = self.compute_energy(&eenv, pd, p, Some(prev));
                if e < base_energy {
                    return Some(target); // utilisation changed under us
                }
                prev_delta = e - base_energy;
                prev_actual_cap = cpu_actual_cap;
                best_delta = best_delta.min(prev_delta);
            }
            // The cluster candidate may be fuller than prev on purpose: it is
            // evaluated whatever its spare capacity.
            let Some(cand) = max_spare_cap_cpu else { continue };
            if !cluster && max_spare_cap <= prev_spare_cap {
                continue;
            }
            if max_fits < best_fits || (max_fits < 0 && cpu_actual_cap <= best_actual_cap) {
                continue;
            }
            let e = self.compute_energy(&eenv, pd, p, Some(cand));
            if e < base_energy {
                return Some(target);
            }
            let cur_delta = e - base_energy;
            if max_fits > 0 && best_fits > 0 && cur_delta >= best_delta {
                continue;
            }
            best_delta = cur_delta;
            best_energy_cpu = cand;
            best_fits = max_fits;
            best_actual_cap = cpu_actual_cap;
        }
        if best_fits > prev_fits
            || (best_fits > 0 && best_delta < prev_delta)
            || (best_fits < 0 && best_actual_cap > prev_actual_cap)
        {
            return Some(best_energy_cpu);
        }
        Some(target)
    }

    /// The hook of `select_task_rq_fair` for a wakeup: the energy-efficient
    /// CPU when EAS is enabled and not overutilized, else `None` (go on with
    /// `wake_affine` / `select_idle_sibling`).
    // DEVIATION(kernel): the decision is reported as `PlacePath::Capacity`
    // (capacity/energy-aware placement); there is no separate EAS path name.
    pub fn eas_wake_cpu(&self, p: TaskId, prev: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        if !self.sched_energy_enabled() || self.eas_overutilized(ctx.this_cpu, prev) {
            return None;
        }
        let cpu = self.find_energy_efficient_cpu(p, prev, ctx.this_cpu, &mut ctx.scanned)?;
        ctx.path = PlacePath::Capacity;
        Some(cpu)
    }
}
