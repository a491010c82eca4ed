//! The slow path and the asymmetric wakeup as v4.14 had them
//! (kernel/sched/fair.c and kernel/sched/topology.c of Linux v4.14, read in
//! the `harveydong/linux-4.14-comment` tree, a v4.14 import with added
//! comments, and cross-checked against the tip-bot mail of commit
//! 38c6e4963b50 for the v5.7 removal). Seed idea 5.
//!
//! # `find_idlest_group` before v5.5 (`legacy_find_idlest_group`)
//!
//! Until Vincent Guittot's load-balance rework (v5.5), the slow path chose a
//! group with two independent searches over the domain's groups:
//!
//! * **least load**: per group the *runnable* load (`source_load` for the
//!   local group, `target_load` for the others) and the load average
//!   (`cfs_rq_load_avg`), both scaled by `SCHED_CAPACITY_SCALE / sgc->capacity`.
//!   A remote group becomes the idlest when its runnable load is lower by
//!   more than `imbalance` (a nice-0 load times `imbalance_pct - 100` percent);
//!   when the runnable loads are within `imbalance` of each other, the one
//!   whose load average is lower by more than `imbalance_scale`
//!   (`100 + (imbalance_pct - 100) / 2` percent) wins.
//! * **most spare capacity**: per group the largest
//!   `capacity_spare_wake(cpu, p)` of its CPUs, the capacity left on the CPU
//!   once its utilisation without `p` (`cpu_util_wake`) is taken out.
//!
//! For exec and wakeup (never fork: a new task's utilisation is not set yet)
//! the spare-capacity answer comes first: stay local when the local group's
//! best spare exceeds half the task's utilisation and is within
//! `imbalance_scale` of the best remote spare; else take the remote group
//! with the most spare when that exceeds half the task's utilisation. Only
//! then does the least-load answer decide, again with the local group kept
//! unless the remote one is lighter by the same margins.
//!
//! `capacity_spare_wake_current` picks the capacity `capacity_spare_wake`
//! starts from: the CPU's original capacity (v4.14: RT and IRQ time are
//! invisible, so a big CPU with RT tasks eating it still looks roomy) or
//! `capacity_of` (v4.15, Joel Fernandes' fix, up to v5.4 where the function
//! was renamed `capacity_spare_without` and then dropped in v5.5). v5.7's
//! `select_idle_capacity` carried the idea on: its `util_fits_cpu` reads
//! `capacity_of`, and so does [`Sim::wake_capacity`] there.
//!
//! `source_load(cpu, idx)` and `target_load(cpu, idx)` read `cpu_load[idx-1]`
//! only for `idx > 0`; v4.14's `sd_init` sets `wake_idx = forkexec_idx = 0`
//! at every level and nothing changes them, so both are `weighted_cpuload`,
//! the CFS runqueue's `runnable_load_avg`: the load average of the entities
//! queued right now. schedlab keeps no `runnable_load_avg`; the closest
//! signal is the sum of the `load_avg` of the fair tasks queued or running on
//! the CPU (see [`Sim::weighted_cpuload`]).
//!
//! # Asymmetric wakeups (`wake_cap`)
//!
//! From v4.9 to v5.6, on a machine whose CPUs differ in capacity:
//!
//! * `sd_init` gave a domain with `SD_ASYM_CPUCAPACITY` and every domain
//!   below it `SD_BALANCE_WAKE`;
//! * `select_task_rq_fair` computed `want_affine` as not `wake_wide`, not
//!   `wake_cap` and the waking CPU allowed. `wake_cap` is true when the
//!   original capacities differ by at least an eighth of the largest one and
//!   the task's utilisation does not fit the smaller of the waking and
//!   previous CPU's original capacity with the 1280/1024 margin.
//!
//! So a wakee too big for a LITTLE waker or previous CPU found no affine
//! domain, collected the `SD_BALANCE_WAKE` domains up to the asymmetric one,
//! and took the slow path, which is where `capacity_spare_wake` decided.
//! v5.7 replaced this with `select_idle_capacity` in the fast path
//! (commits 38c6e4963b50 "Remove SD_BALANCE_WAKE on asymmetric capacity
//! systems" and "Remove wake_cap()"), so `v5.9` has neither.
//!
//! The fast path of that era had no capacity awareness either: under
//! `wake_cap`, `select_idle_sibling` skips `select_idle_capacity` and the
//! `asym_fits_cpu` tests (v5.7+ and later), since a wakee that did not fit
//! had been sent down the slow path before it got there.
//!
//! The domain builder is left as it is: the flag is applied at decision time
//! by [`Sim::sd_balance_flags`], which both the wakeup loop and the slow path
//! read, so with `wake_cap` off nothing changes.
//!
//! In mainline v4.14 the `SD_ASYM_CPUCAPACITY` flag itself came from the
//! architecture's topology table (the Android/ARM EAS trees of the Pixel 2
//! era set it at DIE level for big.LITTLE; automatic detection arrived in
//! v4.20). schedlab classifies it from the capacities, as v4.20+ does.

use super::capacity::SCHED_CAPACITY_SCALE;
use super::lb_stats::GroupRef;
use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, TaskId};
use crate::sched_feat;
use crate::topology::domains::{SD_ASYM_CPUCAPACITY, SD_BALANCE_FORK, SD_BALANCE_WAKE};

/// `capacity_margin` (v4.14): a task fits a capacity when
/// `capacity * 1024 >= util * 1280`, i.e. with 20% headroom.
const CAPACITY_MARGIN: u64 = 1280;

/// Per-group sums of the legacy `find_idlest_group`, already scaled by the
/// group's capacity.
#[derive(Clone, Copy, Debug, Default)]
struct LegacyGroupLoad {
    runnable_load: u64,
    avg_load: u64,
    max_spare_cap: u64,
}

impl Sim {
    /// `weighted_cpuload(rq)` (v4.14): the CFS runqueue's runnable load.
    ///
    /// DEVIATION(kernel): v4.14 kept `cfs_rq->runnable_load_avg`, the load
    /// average of the queued entities, decayed with the runqueue's clock.
    /// schedlab sums the `load_avg` of the fair tasks queued or running on
    /// `cpu` as each was last updated (delayed entities excluded; v4.14 had
    /// none), which moves at enqueue and dequeue as the kernel's sum does.
    pub fn weighted_cpuload(&self, cpu: CpuId) -> u64 {
        let cfs = &self.rqs[cpu.idx()].cfs;
        cfs.curr
            .iter()
            .chain(cfs.queue.iter())
            .filter(|t| !self.fair.ses[t.idx()].sched_delayed)
            .map(|t| self.tasks[t.idx()].avg.load_avg)
            .sum()
    }

    /// `cpu_util_wake(cpu, p)` (v4.14): `cpu`'s CFS utilisation without the
    /// share of `p` when `p`'s averages are attached there, capped at the
    /// original capacity. v4.14 had no util_est, so this reads `util_avg`
    /// alone, unlike [`Sim::cpu_util_without`].
    pub fn cpu_util_wake(&self, cpu: CpuId, p: TaskId) -> u64 {
        let t = &self.tasks[p.idx()];
        let mut util = self.rqs[cpu.idx()].cfs_avg.util_avg;
        if t.cpu == cpu && t.avg.last_update_time != 0 {
            util = util.saturating_sub(t.avg.util_avg);
        }
        util.min(self.machine.capacity_orig(cpu) as u64)
    }

    /// `capacity_spare_wake(cpu, p)`: the capacity `p` would find free on
    /// `cpu`. Starts from the original capacity (v4.14) or, with
    /// `capacity_spare_wake_current`, from `capacity_of` (v4.15+), which can
    /// be below the utilisation under RT/IRQ pressure, hence the clamp at 0.
    pub fn capacity_spare_wake(&self, cpu: CpuId, p: TaskId) -> u64 {
        self.wake_capacity(cpu).saturating_sub(self.cpu_util_wake(cpu, p))
    }

    /// The sums of one group, as the loop body of the legacy `find_idlest_group`.
    fn legacy_group_load(&self, span: &CpuMask, p: TaskId) -> LegacyGroupLoad {
        let mut g = LegacyGroupLoad::default();
        for i in span.iter() {
            // source_load / target_load with load_idx 0 (module doc).
            g.runnable_load += self.weighted_cpuload(i);
            g.avg_load += self.rqs[i.idx()].cpu_load();
            g.max_spare_cap = g.max_spare_cap.max(self.capacity_spare_wake(i, p));
        }
        // sgc->capacity: the sum of capacity_of over the group, as
        // update_group_capacity last set it.
        let capacity: u64 = span.iter().map(|c| self.capacity_of(c)).sum::<u64>().max(1);
        g.avg_load = g.avg_load * SCHED_CAPACITY_SCALE / capacity;
        g.runnable_load = g.runnable_load * SCHED_CAPACITY_SCALE / capacity;
        g
    }

    /// `find_idlest_group(sd, p, this_cpu, sd_flag)` as in v4.14 (module
    /// doc): the group of the domain at `level` of `this_cpu`'s chain to move
    /// `p` to, or `None` to stay in the local group.
    ///
    /// Sums start at `u64::MAX` where the kernel starts at `ULONG_MAX`; the
    /// comparisons saturate where C would wrap, which only matters before
    /// the first remote group is seen, where the first test already holds.
    pub fn find_idlest_group(&self, level: usize, p: TaskId, this_cpu: CpuId, sd_flag: u32) -> Option<GroupRef> {
        let sd_id = self.domains.chain(this_cpu)[level];
        let sd = self.domains.sd(sd_id);
        let allowed = self.tasks[p.idx()].allowed;
        let pct = sd.imbalance_pct as u64;
        let imbalance_scale = 100 + (pct - 100) / 2;
        let imbalance = crate::pelt::NICE_0_LOAD * (pct - 100) / 100;
        let (mut min_runnable_load, mut min_avg_load) = (u64::MAX, u64::MAX);
        let mut local = LegacyGroupLoad::default();
        let mut idlest: Option<GroupRef> = None;
        let mut most_spare = 0;
        let mut most_spare_sg: Option<GroupRef> = None;
        for g in self.sd_groups(sd_id, this_cpu) {
            if !g.span.intersects(&allowed) {
                continue;
            }
            let gl = self.legacy_group_load(&g.span, p);
            if g.span.test(this_cpu) {
                local = gl;
                continue;
            }
            if min_runnable_load > gl.runnable_load.saturating_add(imbalance) {
                // Clearly less runnable load.
                min_runnable_load = gl.runnable_load;
                min_avg_load = gl.avg_load;
                idlest = Some(g);
            } else if gl.runnable_load < min_runnable_load.saturating_add(imbalance)
                && min_avg_load.saturating_mul(100) > imbalance_scale * gl.avg_load
            {
                // Runnable loads close: blocked load (in avg_load) decides.
                min_avg_load = gl.avg_load;
                idlest = Some(g);
            }
            if most_spare < gl.max_spare_cap {
                most_spare = gl.max_spare_cap;
                most_spare_sg = Some(g);
            }
        }
        // A forked task has no utilisation yet: spare capacity cannot judge it.
        if sd_flag & SD_BALANCE_FORK == 0 {
            let half_util = self.task_util(p) / 2;
            if local.max_spare_cap > half_util && imbalance_scale * local.max_spare_cap > 100 * most_spare {
                return None;
            }
            if most_spare > half_util {
                return most_spare_sg;
            }
        }
        let idlest = idlest?;
        // v4.14 has no SD_NUMA allowance here (added in v4.16).
        if min_runnable_load > local.runnable_load + imbalance {
            return None;
        }
        if local.runnable_load < min_runnable_load + imbalance && 100 * local.avg_load < imbalance_scale * min_avg_load
        {
            return None;
        }
        Some(idlest)
    }

    /// `find_idlest_group_cpu(group, p, this_cpu)` (v4.14's `find_idlest_cpu`):
    /// the idle CPU in the shallowest idle state (most recently idled among
    /// equals), else the CPU with the least runnable load, `this_cpu` winning ties.
    pub fn find_idlest_group_cpu(&self, group: &CpuMask, p: TaskId, this_cpu: CpuId) -> CpuId {
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
            let rq = &self.rqs[i.idx()];
            if self.available_idle_cpu(i) {
                if self.cas_skip_pressured(i, &mut cas_backup) {
                    continue; // seed idea 5 (CAS, a v4.14-era proposal), fair/cas.rs
                }
                let states = &self.machine.core_type(i).idle_states;
                // As in sched_balance_find_dst_group_cpu: a CPU idle since
                // the start of the run counts as being in its deepest state.
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
                let load = self.weighted_cpuload(i);
                if load < min_load || (load == min_load && i == this_cpu) {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        shallowest.or(cas_backup).unwrap_or(least_loaded)
    }

    /// `wake_cap(p, cpu, prev_cpu)` (v4.9 .. v5.6): `p` does not fit the
    /// smaller original capacity of the waking and the previous CPU, on a
    /// machine where that capacity is at least an eighth below the largest
    /// (`rd->max_cpu_capacity`). The caller checks the `wake_cap` feature.
    ///
    /// DEVIATION(kernel): `sync_entity_load_avg` is skipped, as in the slow
    /// path: the engine keeps a sleeping task's averages as of its dequeue.
    pub fn wake_cap(&self, p: TaskId, cpu: CpuId, prev_cpu: CpuId) -> bool {
        let min_cap = self.machine.capacity_orig(prev_cpu).min(self.machine.capacity_orig(cpu)) as u64;
        let max_cap = self.machine.all_cpus().iter().map(|c| self.machine.capacity_orig(c) as u64).max().unwrap_or(0);
        if max_cap - min_cap < max_cap >> 3 {
            return false; // capacities close: wake_affine stays useful
        }
        min_cap * SCHED_CAPACITY_SCALE < self.task_util(p) * CAPACITY_MARGIN
    }

    /// The flags of the domain at `level` of `cpu`'s chain as the placement
    /// paths read them: `sd.flags`, plus `SD_BALANCE_WAKE` under `wake_cap`
    /// when that domain or one above it has `SD_ASYM_CPUCAPACITY` (v4.14's
    /// `sd_init` set it on the asymmetric domain and every domain below).
    #[inline]
    pub fn sd_balance_flags(&self, cpu: CpuId, level: usize) -> u32 {
        let chain = self.sd_chain(cpu);
        let flags = self.chain_sd(chain[level]).flags;
        if sched_feat!(self.features, wake_cap)
            && chain[level..].iter().any(|&id| self.chain_sd(id).flags & SD_ASYM_CPUCAPACITY != 0)
        {
            return flags | SD_BALANCE_WAKE;
        }
        flags
    }
}
