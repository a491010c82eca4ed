//! The fair class's global state ([`FairState`], held by the engine as
//! `Sim::fair`, as it holds `Sim::rt` for the RT class and `Sim::peer` for a
//! peer): everything fair.c keeps outside `struct rq`'s core fields, the
//! per-task entities included. The engine never reads it; where core code
//! of the kernel calls into fair.c (idle entry, the tick, NOHZ), the engine
//! calls the fair function of the same name (`nohz.rs`, `idle_core.rs`), and
//! the invariant checker calls [`Sim::check_fair`].

use super::eas::EasState;
use super::eevdf::SchedEntity;
use super::lb_stats::GroupRef;
use super::local_group::LocalGroup;
use super::nohz::NohzState;
use super::sg_sums::SgSums;
use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, TaskId};
use crate::topology::{Domains, Machine};

/// `struct sched_domain_shared` of one LLC (`sd_llc_shared`): allocated by
/// topology.c, read and written only by fair.c.
#[derive(Clone, Debug, Default)]
pub struct LlcShared {
    /// `has_idle_cores`: some core of the LLC may be wholly idle.
    pub has_idle_cores: bool,
    /// `nr_busy_cpus`: CPUs of the LLC with the tick running.
    pub nr_busy_cpus: u32,
    /// `nr_idle_scan`: SIS_UTIL scan depth.
    pub nr_idle_scan: u32,
    /// Seed idea 4 (`llc_idle_mask`): CPUs of the LLC believed idle. Set on
    /// idle entry, cleared only by the tick of a busy CPU, so it may hold a
    /// CPU that became busy since (the proposal's trade-off). Maintained
    /// and read only when `llc_idle_mask` is on (a run's features are
    /// fixed; without it the mask keeps its initial all-idle state).
    pub idle_mask: CpuMask,
}

/// The fair class's global state: its entities, the LLC-shared state, the
/// NOHZ and energy-aware state, and the load balancer's group descriptions
/// and sums. Visible to the fair class only.
pub struct FairState {
    /// `p->se` of every task (EEVDF/CFS entities), by task id; a separate
    /// table so the runqueue code can borrow it alongside `Sim::tasks`.
    pub(in crate::fair) ses: super::entities::Entities,
    /// `sd_llc_shared`, by LLC index.
    pub(in crate::fair) llc: Vec<LlcShared>,
    /// `struct nohz` (its `idle_cpus_mask` included) and `sgc->imbalance`.
    pub(in crate::fair) nohz: NohzState,
    /// Energy model and the overutilized flags (`eas.rs`, `overutilized.rs`).
    pub(in crate::fair) eas: EasState,
    /// Static group descriptions per domain (`lb_stats::group_refs`).
    pub(in crate::fair) sg_refs: Vec<Vec<GroupRef>>,
    /// `sd->imb_numa_nr` by domain (`busiest::imb_numa_nr_of`), read by
    /// `calculate_imbalance` and the wakeup slow path.
    pub(in crate::fair) imb_numa_nr: Vec<i64>,
    /// The CPUs of every group of `sg_refs`, each group's a run of this list.
    pub(in crate::fair) sg_cpus: Vec<CpuId>,
    /// Per CPU, per level of its chain: its own group's place in `sg_refs`
    /// (`local_group::local_groups`).
    pub(in crate::fair) sg_local: Vec<Vec<LocalGroup>>,
    /// Per-group sums of what `update_sg_lb_stats` reads (`sg_sums.rs`).
    pub(in crate::fair) sg_sums: SgSums,
    /// Per domain, the slot of `sg_sums` whose CPUs are the domain's span
    /// when its groups divide the span (disjoint, within it) and some
    /// level's group has that span (the parent's), else `u32::MAX`
    /// (`lb_stats::span_slots`): the usual pass reads the domain's totals
    /// from it, not one addition per group.
    pub(in crate::fair) sd_span_slot: Vec<u32>,
    /// `sysctl_sched_base_slice` for this machine, ns: a new entity's slice.
    pub(in crate::fair) base_slice_ns: Ns,
    /// `max_load_balance_interval`, jiffies: HZ * nr_cpus / 10 (at least
    /// 1), which the kernel keeps in a global set by `update_max_interval`
    /// when CPUs come or go; computed once here (no hotplug).
    pub(in crate::fair) max_load_balance_interval: u64,
    /// Scratch of `detach_tasks`: the source's tasks in the order it
    /// examines them, and the detached batch (`env->tasks`); kept between
    /// passes so a balance allocates nothing once they have grown.
    pub(in crate::fair) lb_scratch: (Vec<TaskId>, Vec<TaskId>),
    /// `per_cpu(sd_llc_size)`: the number of CPUs sharing each CPU's LLC,
    /// by CPU, set with the domains as the kernel sets it in
    /// `update_top_cache_domain`; `wake_wide` reads it at every wakeup
    /// instead of counting the bits of a 1024-bit mask.
    pub(in crate::fair) sd_llc_size: Vec<u32>,
}

impl FairState {
    /// The state at the start of a run: one entity per task (of nice
    /// `nices[i]`, slice `base_slice_ns`), every CPU idle (in its LLC's idle
    /// mask and in the NOHZ idle mask), no flag set.
    pub(crate) fn new(machine: &Machine, domains: &Domains, nices: &[i32], base_slice_ns: Ns) -> Self {
        let nr = machine.nr_cpus();
        let mut llc =
            vec![LlcShared { has_idle_cores: machine.has_smt(), ..Default::default() }; machine.nr_llcs as usize];
        for c in 0..nr {
            llc[machine.cpus[c].llc as usize].idle_mask.set(CpuId(c as u32));
        }
        let (sg_refs, sg_cpus) = super::lb_stats::group_refs(domains, machine);
        let pct: Vec<u32> = domains.sds.iter().map(|sd| sd.imbalance_pct).collect();
        let capacity_orig: Vec<u64> = (0..nr).map(|c| machine.capacity_orig(CpuId(c as u32)) as u64).collect();
        let sg_sums = SgSums::new(&sg_refs, &pct, &sg_cpus, &capacity_orig);
        let sg_local = super::local_group::local_groups(domains, &sg_refs);
        let sd_span_slot = super::lb_stats::span_slots(domains, &sg_refs);
        let imb_numa_nr = domains.sds.iter().map(|sd| super::busiest::imb_numa_nr_of(domains, sd)).collect();
        FairState {
            ses: super::entities::Entities::new(
                nices.iter().map(|&nice| SchedEntity::new(nice, base_slice_ns)).collect(),
            ),
            llc,
            nohz: NohzState::new(nr, domains.nr_levels as usize, machine.all_cpus()),
            eas: EasState::new(machine, domains),
            sg_refs,
            sg_cpus,
            sg_local,
            sg_sums,
            sd_span_slot,
            imb_numa_nr,
            base_slice_ns,
            max_load_balance_interval: (machine.hz.max(1) as u64 * nr as u64 / 10).max(1),
            lb_scratch: (Vec::new(), Vec::new()),
            sd_llc_size: (0..nr).map(|c| machine.llc_mask(CpuId(c as u32)).weight()).collect(),
        }
    }
}

impl Sim {
    /// The fair class's invariants, for the engine's checker (`Sim::check`):
    /// a queued fair entity belongs to a task on a runqueue; the balance
    /// statistics' group sums hold, for every CPU not noted changed since
    /// they were brought up to date, what its runqueue gives now, and each
    /// group's sums are its CPUs' terms.
    pub(crate) fn check_fair(&self) -> Result<(), String> {
        for t in &self.tasks {
            if self.fair.ses[t.id.idx()].on_rq && !t.on_rq {
                return Err(format!("task {}: its fair entity is queued but the task is not on a runqueue", t.id));
            }
        }
        for c in 0..self.rqs.len() {
            let cpu = CpuId(c as u32);
            if !self.rqs.is_changed(c) && self.fair.sg_sums.terms(c) != self.sg_cpu_terms(cpu) {
                return Err(format!(
                    "cpu {c} changed unnoticed: group sums hold {:?}, its runqueue gives {:?}",
                    self.fair.sg_sums.terms(c),
                    self.sg_cpu_terms(cpu)
                ));
            }
        }
        self.fair.sg_sums.check_sums(&self.fair.sg_refs, &self.fair.sg_cpus)
    }

    /// `cpu`'s domains bottom-up ([`Domains::chain`]), without a bounds test
    /// in release builds: the balance and wakeup paths' lookup (round 20e:
    /// about 1.1 M bounds tests a standard bench on `Domains::chain` and
    /// `Domains::sd`, whose public ids keep their tests).
    #[inline(always)]
    pub(crate) fn sd_chain(&self, cpu: CpuId) -> &[crate::topology::SdId] {
        let chains = &self.domains.cpu_sd;
        debug_assert!(cpu.idx() < chains.len(), "cpu {} of {}", cpu.idx(), chains.len());
        // SAFETY: `Sim::domains` is made by the crate (`build_sched_domains`)
        // and never changed after `Sim::build`, which read `chain(cpu)` with
        // its bounds test for every CPU of the machine; `cpu` is a CPU of the
        // run (numbered at build, checked where a workload or a decisions
        // row names one, as for the runqueues).
        unsafe { chains.get_unchecked(cpu.idx()) }
    }

    /// The domain `id`, read from a chain ([`Sim::sd_chain`]), without a
    /// bounds test in release builds. Not for a domain's `parent` or `child`
    /// (those keep [`Domains::sd`]).
    #[inline(always)]
    pub(crate) fn chain_sd(&self, id: crate::topology::SdId) -> &crate::topology::SchedDomain {
        let sds = &self.domains.sds;
        debug_assert!((id.0 as usize) < sds.len(), "domain {} of {}", id.0, sds.len());
        // SAFETY: `id` is read from a CPU's chain of `Sim::domains`, made by
        // the crate and never changed after `Sim::build`, which looked every
        // chain's every id up with `Domains::sd`'s bounds test.
        unsafe { sds.get_unchecked(id.0 as usize) }
    }

    /// The domain at `level` of `cpu`'s chain and its id (the level keeps
    /// its bounds test; the CPU and the id do not, as above).
    #[inline(always)]
    pub(crate) fn sd_at(&self, cpu: CpuId, level: usize) -> (crate::topology::SdId, &crate::topology::SchedDomain) {
        let id = self.sd_chain(cpu)[level];
        (id, self.chain_sd(id))
    }

    /// `p->se.sched_delayed`: the fair class keeps `p` queued although it
    /// sleeps (DELAY_DEQUEUE). Read through `class_task_delayed`.
    #[inline]
    pub(crate) fn task_delayed_fair(&self, p: crate::ids::TaskId) -> bool {
        self.fair.ses[p.idx()].sched_delayed
    }

    /// Whether `cpu` is in the NOHZ idle mask, for tests outside the class.
    #[cfg(test)]
    pub(crate) fn nohz_idle_test(&self, cpu: CpuId) -> bool {
        self.fair.nohz.idle_cpus_mask().test(cpu)
    }

    /// `sd_llc_shared->nr_busy_cpus` of LLC `llc`, for tests outside the class.
    #[cfg(test)]
    pub(crate) fn llc_nr_busy_cpus(&self, llc: usize) -> u32 {
        self.fair.llc[llc].nr_busy_cpus
    }

    /// Sets LLC `llc`'s `has_idle_cores` and `nr_idle_scan`, the shared state
    /// the idle search reads, as a real kernel's decision found them
    /// (`decision_replay`).
    pub(crate) fn set_llc_idle_search_state(&mut self, llc: usize, has_idle_cores: bool, nr_idle_scan: u32) {
        let shared = &mut self.fair.llc[llc];
        shared.has_idle_cores = has_idle_cores;
        shared.nr_idle_scan = nr_idle_scan;
    }
}
