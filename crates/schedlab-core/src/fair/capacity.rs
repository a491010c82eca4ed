//! CPU capacity and utilisation as the placement and balancing code reads
//! them (kernel/sched/fair.c): `capacity_of`, `update_cpu_capacity`
//! (`scale_rt_capacity`), `cpu_util` and its `_without` / `_boost` forms,
//! `task_util`, `task_util_est`, `cpu_load_without`, `cpu_runnable_without`
//! and `check_cpu_capacity`. All are reads of `&Sim` except
//! `update_cpu_capacity`, which refreshes `rq.cpu_capacity`.

use crate::engine::Sim;
use crate::ids::{CpuId, TaskId};
use crate::sched_feat;
use crate::topology::domains::SchedDomain;

/// `SCHED_CAPACITY_SCALE`: the capacity of the biggest CPU at its highest OPP.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// `capacity_greater(cap1, cap2)`: `cap1` is more than ~5% above `cap2`.
#[inline]
pub fn capacity_greater(cap1: u64, cap2: u64) -> bool {
    cap1 * 1024 > cap2 * 1078
}

impl Sim {
    /// `capacity_of(cpu)`: the capacity left to fair tasks (`rq->cpu_capacity`),
    /// as last refreshed by [`Sim::update_cpu_capacity`].
    #[inline]
    pub fn capacity_of(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu.idx()].cpu_capacity as u64
    }

    /// `arch_scale_cpu_capacity(cpu)` from the group sums' per-CPU copy
    /// (fixed with the machine), without the machine tables' two bounds
    /// tests, as `sg_cpu_terms` reads it.
    #[inline(always)]
    pub(crate) fn capacity_orig_of(&self, cpu: CpuId) -> u64 {
        let c = self.fair.sg_sums.capacity_orig(cpu.idx());
        debug_assert_eq!(c, self.machine.capacity_orig(cpu) as u64);
        c
    }

    /// `scale_rt_capacity(cpu)`: the original capacity minus the RT and DL
    /// pressure, scaled down by the IRQ pressure
    /// (`free * (max - irq) / max`), at least 1. With `NONTASK_CAPACITY` off
    /// non-task time is not subtracted and the original capacity is returned.
    pub fn scale_rt_capacity(&self, cpu: CpuId) -> u64 {
        let max = self.capacity_orig_of(cpu);
        if !sched_feat!(self.features, NONTASK_CAPACITY) {
            return max;
        }
        let rq = &self.rqs[cpu.idx()];
        let irq = rq.irq_avg.util_avg;
        if irq >= max {
            return 1;
        }
        // No DL class in schedlab: the RT average is the whole "used" part.
        let used = rq.rt_avg.util_avg;
        if used >= max {
            return 1;
        }
        let free = max - used;
        // scale_irq_capacity
        (free * (max - irq) / max).max(1)
    }

    /// `update_cpu_capacity(sd, cpu)`: refresh `rq->cpu_capacity`. The kernel
    /// does this when the lowest domain's group capacity is updated during
    /// load balancing; schedlab's balance code calls it at the same point.
    ///
    /// Written only when it changes: a write notes the CPU changed for the
    /// balance statistics' group sums, and the pass about to read them
    /// would re-sync a CPU whose terms did not move.
    pub fn update_cpu_capacity(&mut self, cpu: CpuId) {
        let cap = self.scale_rt_capacity(cpu).max(1) as u32;
        if self.rqs[cpu.idx()].cpu_capacity != cap {
            self.rqs[cpu.idx()].cpu_capacity = cap;
        }
    }

    /// `check_cpu_capacity(rq, sd)`: the CPU's capacity is noticeably
    /// reduced by non-fair activity (below `100 / imbalance_pct` of its original).
    #[inline]
    pub fn check_cpu_capacity(&self, cpu: CpuId, sd: &SchedDomain) -> bool {
        self.capacity_of(cpu) * (sd.imbalance_pct as u64) < self.capacity_orig_of(cpu) * 100
    }

    /// `task_util(p)`: the task's `util_avg`.
    #[inline]
    pub fn task_util(&self, p: TaskId) -> u64 {
        self.tasks[p.idx()].avg.util_avg
    }

    /// `_task_util_est(p)`: the task's util_est alone, the amount the engine
    /// adds to `rq.cfs_avg.util_est` when the task is enqueued.
    #[inline]
    fn task_util_est_only(&self, p: TaskId) -> u64 {
        let t = &self.tasks[p.idx()];
        crate::pelt::task_util_est_raw(&t.avg)
    }

    /// `task_util_est(p)`: `max(task_util, _task_util_est)`.
    #[inline]
    pub fn task_util_est(&self, p: TaskId) -> u64 {
        self.task_util(p).max(self.task_util_est_only(p))
    }

    /// `cpu_util(cpu, p, dst_cpu, boost)`: the fair utilisation of `cpu` if
    /// `p` moved to `dst` (`None` = `dst_cpu == -1`: `p` leaves `cpu`), with
    /// util_est when UTIL_EST is on, capped at the original capacity. `boost`
    /// takes `runnable_avg` into account as well (`cpu_util_cfs_boost`).
    pub fn cpu_util_boost(&self, cpu: CpuId, p: Option<TaskId>, dst: Option<CpuId>, boost: bool) -> u64 {
        let rq = &self.rqs[cpu.idx()];
        let mut util = rq.cfs_avg.util_avg;
        if boost {
            util = util.max(rq.cfs_avg.runnable_avg);
        }
        if let Some(p) = p {
            let on_cpu = self.tasks[p.idx()].cpu == cpu;
            if on_cpu && dst != Some(cpu) {
                util = util.saturating_sub(self.task_util(p));
            } else if !on_cpu && dst == Some(cpu) {
                util += self.task_util(p);
            }
        }
        if sched_feat!(self.features, UTIL_EST) {
            let mut util_est = rq.cfs_avg.util_est.ewma as u64;
            if let Some(p) = p {
                if dst == Some(cpu) {
                    util_est += self.task_util_est_only(p);
                } else if self.fair.ses[p.idx()].on_rq || rq.curr == Some(p) {
                    // `p` is queued on `cpu` and contributes to its util_est.
                    if self.tasks[p.idx()].cpu == cpu {
                        util_est = util_est.saturating_sub(self.task_util_est_only(p));
                    }
                }
            }
            util = util.max(util_est);
        }
        util.min(self.capacity_orig_of(cpu))
    }

    /// `cpu_util(cpu, p, dst_cpu, 0)`; `cpu_util(cpu, None, None)` is `cpu_util_cfs(cpu)`.
    #[inline]
    pub fn cpu_util(&self, cpu: CpuId, p: Option<TaskId>, dst: Option<CpuId>) -> u64 {
        self.cpu_util_boost(cpu, p, dst, false)
    }

    /// `cpu_util_cfs(cpu)`.
    #[inline]
    pub fn cpu_util_cfs(&self, cpu: CpuId) -> u64 {
        self.cpu_util_boost(cpu, None, None, false)
    }

    /// `cpu_util_cfs_boost(cpu)`.
    #[inline]
    pub fn cpu_util_cfs_boost(&self, cpu: CpuId) -> u64 {
        self.cpu_util_boost(cpu, None, None, true)
    }

    /// Whether `p`'s averages are attached to `cpu` (`task_cpu(p) == cpu` and
    /// `last_update_time != 0`): only then do the `_without` forms discount it.
    #[inline]
    fn contributes_to(&self, cpu: CpuId, p: TaskId) -> bool {
        let t = &self.tasks[p.idx()];
        t.cpu == cpu && t.avg.last_update_time != 0
    }

    /// `cpu_util_without(cpu, p)`: `cpu`'s utilisation without `p`'s share.
    pub fn cpu_util_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let p = if self.contributes_to(cpu, p) { Some(p) } else { None };
        self.cpu_util_boost(cpu, p, None, false)
    }

    /// `cpu_load_without(rq, p)`.
    pub fn cpu_load_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let load = self.rqs[cpu.idx()].cpu_load();
        if !self.contributes_to(cpu, p) {
            return load;
        }
        load.saturating_sub(self.tasks[p.idx()].avg.load_avg)
    }

    /// `cpu_runnable_without(rq, p)`.
    pub fn cpu_runnable_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let r = self.rqs[cpu.idx()].cpu_runnable();
        if !self.contributes_to(cpu, p) {
            return r;
        }
        r.saturating_sub(self.tasks[p.idx()].avg.runnable_avg)
    }

    /// `task_fits_cpu(p, cpu)`: the task's estimated utilisation fits the
    /// CPU's capacity with a 20% margin, and its clamps are met
    /// (`util_fits_cpu` > 0).
    #[inline]
    pub fn task_fits_cpu(&self, p: TaskId, cpu: CpuId) -> bool {
        let (min, max) = self.task_uclamp(p);
        self.util_fits_cpu(self.task_util_est(p), min, max, cpu) > 0
    }

    /// `rq->misfit_task_load`, as `update_misfit_status` last set it.
    #[inline]
    pub fn misfit_task_load(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu.idx()].misfit_task_load
    }

    /// `update_misfit_status(p, rq)`, at pick (`p` = the picked fair task,
    /// `None` when the CPU goes idle) and at the tick: on asymmetric-capacity
    /// machines, the load of a task that could run on a bigger CPU and does
    /// not fit this one (at least 1); else 0. Kept, not computed on read:
    /// between pick and tick the task's util grows and `capacity_of` moves,
    /// and the balancer sees what was recorded, as in the kernel.
    ///
    /// The symmetric-machine test is inlined at the callers (pick, idle
    /// entry, tick: about 230,000 calls per standard bench), the update is not.
    #[inline]
    pub fn update_misfit_status(&mut self, p: Option<TaskId>, cpu: CpuId) {
        // The kernel's test is the static key alone; the CPU's own domain
        // decides on a machine with asymmetric and symmetric parts.
        if self.domains.asym_cpucap_active && self.domains.sd_asym_cpucapacity[cpu.idx()].is_some() {
            self.update_misfit_status_asym(p, cpu);
        }
    }

    /// `update_misfit_status` on a CPU with an asymmetric-capacity domain.
    #[inline(never)]
    fn update_misfit_status_asym(&mut self, p: Option<TaskId>, cpu: CpuId) {
        let load = match p {
            Some(p) => {
                let t = &self.tasks[p.idx()];
                let on_biggest = self.machine.capacity_orig(cpu) >= t.max_allowed_capacity;
                if t.nr_cpus_allowed == 1 || on_biggest || self.task_fits_cpu(p, cpu) {
                    0
                } else {
                    t.avg.load_avg.max(1)
                }
            }
            None => 0,
        };
        self.rqs[cpu.idx()].misfit_task_load = load;
    }
}
