//! Wakeup placement (kernel/sched/fair.c): `select_task_rq_fair`,
//! `record_wakee`/`wake_wide`, `wake_affine` and `select_idle_sibling` with its
//! helpers. Each function plays the role of the kernel function of the same
//! name; schedlab's additions are the [`WakeCtx`] that records which rule
//! decided and how many CPUs were examined (charged to the waker).

use crate::cpumask::CpuMask;
use crate::engine::core::{WF_FORK, WF_SYNC, WF_TTWU};
use crate::engine::uclamp::{UCLAMP_MAX, UCLAMP_MIN};
use crate::engine::Sim;
use crate::ids::{CpuId, TaskId};
use crate::pelt::SCHED_CAPACITY_SCALE;
use crate::sched_feat;
use crate::topology::domains::{SD_BALANCE_EXEC, SD_BALANCE_FORK, SD_WAKE_AFFINE};
use crate::trace::PlacePath;

/// What one wakeup decision did: the rule that chose the CPU and the CPUs examined.
#[derive(Clone, Copy, Debug)]
pub struct WakeCtx {
    /// The waking CPU (`smp_processor_id()`).
    pub this_cpu: CpuId,
    /// Rule that chose the CPU.
    pub path: PlacePath,
    /// CPUs examined by the idle search.
    pub scanned: u32,
}

/// `fits_capacity(cap, max)`: util fits with a 20% margin (`cap * 1280 < max * 1024`).
#[inline]
pub fn fits_capacity(util: u64, max: u64) -> bool {
    util * 1280 < max * 1024
}

impl Sim {
    /// `select_task_rq_fair`: the fast path (`wake_affine` then
    /// `select_idle_sibling`) for wakeups, the slow path
    /// (`sched_balance_find_dst_cpu`) for fork and exec.
    pub fn select_task_rq_fair(&mut self, p: TaskId, prev_cpu: CpuId, wake_flags: u32, ctx: &mut WakeCtx) -> CpuId {
        let cpu = ctx.this_cpu;
        let sync = wake_flags & WF_SYNC != 0;
        let mut new_cpu = prev_cpu;
        let mut want_affine = false;
        // SD flags and WF flags share the first nibble: WF_FORK is SD_BALANCE_FORK's role.
        let sd_flag = if wake_flags & WF_FORK != 0 {
            SD_BALANCE_FORK
        } else if wake_flags & crate::engine::core::WF_EXEC != 0 {
            SD_BALANCE_EXEC
        } else {
            crate::topology::domains::SD_BALANCE_WAKE
        };
        if wake_flags & WF_TTWU != 0 {
            if let Some(c) = self.eas_wake_cpu(p, prev_cpu, ctx) {
                return c; // seed idea 6 (EAS), fair/eas.rs
            }
            let waker = self.rqs[cpu.idx()].curr;
            // v4.9 .. v5.6 on asymmetric machines: a wakee too big for the
            // waker's or prev's capacity is not woken affine (fair/slowpath_legacy.rs).
            let misfit = sched_feat!(self.features, wake_cap) && self.wake_cap(p, cpu, prev_cpu);
            want_affine = !self.wake_wide(p, waker, cpu) && !misfit && self.tasks[p.idx()].allowed.test(cpu);
        }
        let mut sd_slow = None;
        // Index the chain rather than borrow it: wake_affine needs `&self`.
        for i in 0..self.sd_chain(cpu).len() {
            let (id, sd) = self.sd_at(cpu, i);
            if want_affine && sd.has(SD_WAKE_AFFINE) && sd.span.test(prev_cpu) {
                if cpu != prev_cpu {
                    new_cpu = self.wake_affine(id, p, cpu, prev_cpu, sync);
                    new_cpu = self.wake_idler_llc(cpu, prev_cpu, new_cpu);
                }
                sd_slow = None;
                break;
            }
            if self.sd_balance_flags(cpu, i) & sd_flag != 0 {
                sd_slow = Some(id);
            } else if !want_affine {
                break;
            }
        }
        if sd_slow.is_some() {
            ctx.path = PlacePath::Slow;
            return self.sched_balance_find_dst_cpu(p, cpu, prev_cpu, sd_flag);
        }
        if wake_flags & WF_TTWU != 0 {
            // soft_affinity, prefer_prev_idle_core (fair/wakeup_seeds.rs).
            if let Some(c) = self.select_task_rq_seeds(p, prev_cpu, ctx) {
                return c;
            }
            return self.select_idle_sibling(p, prev_cpu, new_cpu, ctx, sync);
        }
        new_cpu
    }

    /// `record_wakee`: the waker's flip counter, decayed once a second.
    pub fn record_wakee(&mut self, waker: TaskId, p: TaskId) {
        let now = self.now;
        let w = &mut self.tasks[waker.idx()];
        if now > w.wakee_flip_decay_ts + crate::ids::NSEC_PER_SEC {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide`: a 1:N waker/wakee relation wider than the LLC.
    #[inline(always)]
    pub fn wake_wide(&self, p: TaskId, waker: Option<TaskId>, this_cpu: CpuId) -> bool {
        let Some(w) = waker else { return false };
        let mut master = self.tasks[w.idx()].wakee_flips;
        let mut slave = self.tasks[p.idx()].wakee_flips;
        let factor = self.fair.sd_llc_size[this_cpu.idx()];
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave * factor)
    }

    /// `available_idle_cpu`: idle, nothing queued, no wakeup pending.
    #[inline]
    pub fn available_idle_cpu(&self, cpu: CpuId) -> bool {
        self.rqs[cpu.idx()].idle_cpu()
    }

    /// `sched_idle_cpu` (`sched_idle_rq`): something runs, and every task
    /// on the runqueue is SCHED_IDLE, so a wakee placed there preempts at
    /// once: the wakeup paths take such a CPU as idle.
    #[inline]
    pub fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu.idx()];
        rq.nr_running > 0 && rq.nr_running == rq.cfs.h_nr_idle
    }

    /// `wake_affine_idle`: decide from idleness alone. `None` = no opinion.
    pub fn wake_affine_idle(&self, this_cpu: CpuId, prev_cpu: CpuId, sync: bool) -> Option<CpuId> {
        if self.available_idle_cpu(this_cpu) && self.machine.cpus_share_cache(this_cpu, prev_cpu) {
            return Some(if self.available_idle_cpu(prev_cpu) { prev_cpu } else { this_cpu });
        }
        if sync {
            // `rq->nr_running - cfs_h_nr_delayed(rq) == 1`: the waker is the
            // only runnable task of any class there (v5.9: `nr_running == 1`,
            // nothing was delayed then).
            let rq = &self.rqs[this_cpu.idx()];
            let delayed = rq.cfs.nr_queued - rq.cfs.h_nr_runnable;
            if rq.nr_running - delayed == 1 {
                return Some(this_cpu);
            }
        }
        // Seed idea 1 (v5.10): an idle prev CPU wins before any load comparison.
        if sched_feat!(self.features, wa_idle_prev) && self.available_idle_cpu(prev_cpu) {
            return Some(prev_cpu);
        }
        None
    }

    /// `wake_affine_weight`: compare the PELT loads of this and prev CPU.
    pub fn wake_affine_weight(
        &self,
        imbalance_pct: u32,
        p: TaskId,
        this_cpu: CpuId,
        prev_cpu: CpuId,
        sync: bool,
    ) -> Option<CpuId> {
        let mut this_eff_load = self.rqs[this_cpu.idx()].cpu_load() as i64;
        if sync {
            if let Some(cur) = self.rqs[this_cpu.idx()].curr {
                let current_load = self.tasks[cur.idx()].avg.load_avg as i64;
                if current_load > this_eff_load {
                    return Some(this_cpu);
                }
                this_eff_load -= current_load;
            }
        }
        let task_load = self.tasks[p.idx()].avg.load_avg as i64;
        this_eff_load += task_load;
        if sched_feat!(self.features, WA_BIAS) {
            this_eff_load *= 100;
        }
        this_eff_load *= self.capacity_of(prev_cpu) as i64;
        let mut prev_eff_load = self.rqs[prev_cpu.idx()].cpu_load() as i64 - task_load;
        if sched_feat!(self.features, WA_BIAS) {
            prev_eff_load *= 100 + (imbalance_pct as i64 - 100) / 2;
        }
        prev_eff_load *= self.capacity_of(this_cpu) as i64;
        if sync {
            prev_eff_load += 1;
        }
        if this_eff_load < prev_eff_load {
            Some(this_cpu)
        } else {
            None
        }
    }

    /// `wake_affine`: this CPU if WA_IDLE or WA_WEIGHT picks it, else prev.
    pub fn wake_affine(
        &self,
        sd: crate::topology::SdId,
        p: TaskId,
        this_cpu: CpuId,
        prev_cpu: CpuId,
        sync: bool,
    ) -> CpuId {
        let mut target = None;
        if sched_feat!(self.features, WA_IDLE) {
            target = self.wake_affine_idle(this_cpu, prev_cpu, sync);
        }
        if sched_feat!(self.features, WA_WEIGHT) && target.is_none() {
            let pct = self.domains.sd(sd).imbalance_pct;
            target = self.wake_affine_weight(pct, p, this_cpu, prev_cpu, sync);
        }
        if target != Some(this_cpu) {
            return prev_cpu;
        }
        this_cpu
    }

    /// `util_fits_cpu(util, uclamp_min, uclamp_max, cpu)`: 1 when `util`
    /// fits the CPU's current capacity with the 20% margin, or a
    /// `uclamp_max` below its original capacity caps it there; -1 when it
    /// fits but a `uclamp_min` above both `util` and the CPU's actual
    /// capacity asks for more (a better CPU is wanted, this one will do);
    /// else 0. Without clamps in use (`uclamp_is_used`), 1 or 0 on `util` alone.
    #[inline]
    pub fn util_fits_cpu(&self, util: u64, uclamp_min: u64, uclamp_max: u64, cpu: CpuId) -> i32 {
        self.util_fits_capacity(util, uclamp_min, uclamp_max, cpu, self.capacity_of(cpu))
    }

    /// The capacity the wakeup path's fitting reads: `capacity_of` (RT, IRQ
    /// and thermal pressure subtracted) under `capacity_spare_wake_current`,
    /// the original capacity without it. Idea 5's patch (v4.15) made
    /// `capacity_spare_wake` read `capacity_of`; since v5.7 the wakeup
    /// path's capacity test is `select_idle_capacity`/`asym_fits_cpu`, whose
    /// `util_fits_cpu` reads `capacity_of` as well, so switching the feature
    /// off there asks what the idea is worth in today's kernel.
    #[inline]
    pub fn wake_capacity(&self, cpu: CpuId) -> u64 {
        if sched_feat!(self.features, capacity_spare_wake_current) {
            self.capacity_of(cpu)
        } else {
            self.machine.capacity_orig(cpu) as u64
        }
    }

    /// `util_fits_cpu` against a given current `capacity` of `cpu` (the
    /// kernel's reads `capacity_of(cpu)`; the wakeup path passes
    /// [`Sim::wake_capacity`]).
    pub fn util_fits_capacity(&self, util: u64, uclamp_min: u64, uclamp_max: u64, cpu: CpuId, capacity: u64) -> i32 {
        let fits = fits_capacity(util, capacity);
        if !self.uclamp_is_used() {
            return fits as i32;
        }
        // Clamps compare with the original capacity: pressure from RT and
        // IRQ only bears on the real utilisation. A uclamp_max of 1024 on a
        // 1024 CPU is no cap (the task may still be misfit there).
        let capacity_orig = self.machine.capacity_orig(cpu) as u64;
        let no_cap = capacity_orig == SCHED_CAPACITY_SCALE && uclamp_max == SCHED_CAPACITY_SCALE;
        let uclamp_max_fits = !no_cap && uclamp_max <= capacity_orig;
        let fits = fits || uclamp_max_fits;
        let uclamp_min = uclamp_min.min(uclamp_max);
        if fits && util < uclamp_min && uclamp_min > self.get_actual_cpu_capacity(cpu) {
            return -1;
        }
        fits as i32
    }

    /// `get_actual_cpu_capacity(cpu)`: the original capacity less thermal
    /// and cpufreq-cap pressure, neither of which is modelled.
    #[inline]
    pub fn get_actual_cpu_capacity(&self, cpu: CpuId) -> u64 {
        self.machine.capacity_orig(cpu) as u64
    }

    /// `(uclamp_eff_value(p, UCLAMP_MIN), uclamp_eff_value(p, UCLAMP_MAX))`,
    /// as `select_idle_sibling` reads them once per wakeup.
    #[inline]
    pub fn task_uclamp(&self, p: TaskId) -> (u64, u64) {
        (self.uclamp_eff_value(p, UCLAMP_MIN), self.uclamp_eff_value(p, UCLAMP_MAX))
    }

    /// `asym_fits_cpu(task_util_est(p), uclamp_min, uclamp_max, cpu)` for
    /// one test of `p` (`select_idle_sibling` reads the three once instead).
    #[inline]
    pub fn asym_fits_task(&self, p: TaskId, cpu: CpuId) -> bool {
        let (min, max) = self.task_uclamp(p);
        self.asym_fits_cpu(self.task_util_est(p), min, max, cpu)
    }

    /// `asym_fits_cpu(util, util_min, util_max, cpu)`: on asymmetric-capacity
    /// machines the task must fully fit (utilisation and clamps).
    /// Under `wake_cap` (v4.9 .. v5.6) the idle search was capacity-blind:
    /// a wakee that did not fit had already been sent down the slow path.
    /// Always inlined at its few callers in the idle search (round 19).
    #[inline(always)]
    pub fn asym_fits_cpu(&self, util: u64, util_min: u64, util_max: u64, cpu: CpuId) -> bool {
        if sched_feat!(self.features, wake_cap) {
            return true;
        }
        if self.domains.asym_cpucap_active {
            return self.util_fits_capacity(util, util_min, util_max, cpu, self.wake_capacity(cpu)) > 0;
        }
        true
    }

    /// `cpus_share_resources`: share the cluster (or the LLC without clusters).
    pub fn cpus_share_resources(&self, a: CpuId, b: CpuId) -> bool {
        if self.machine.has_clusters {
            self.machine.cpus[a.idx()].cluster == self.machine.cpus[b.idx()].cluster
        } else {
            self.machine.cpus_share_cache(a, b)
        }
    }

    pub(crate) fn idle_or_sched_idle(&self, cpu: CpuId) -> bool {
        self.available_idle_cpu(cpu) || self.sched_idle_cpu(cpu)
    }

    /// `select_idle_sibling`: find an idle CPU sharing the target's LLC.
    pub fn select_idle_sibling(
        &mut self,
        p: TaskId,
        prev: CpuId,
        target: CpuId,
        ctx: &mut WakeCtx,
        sync: bool,
    ) -> CpuId {
        let task_util = self.task_util_est(p);
        let (umin, umax) = self.task_uclamp(p);
        let cluster_active = self.machine.has_clusters;
        // prefer_prev_idle_core changes the order and the idleness tests of
        // the three checks below (fair/wakeup_seeds.rs).
        if let Some(c) = self.sis_recent_idle_core_first(p, prev, target, ctx) {
            return c;
        }
        if self.sis_target_ok(target, sync)
            && self.asym_fits_cpu(task_util, umin, umax, target)
            && self.cas_full_capacity(target)
        {
            ctx.path = PlacePath::Target;
            return target;
        }
        let mut prev_aff = None;
        if prev != target
            && self.machine.cpus_share_cache(prev, target)
            && self.sis_prev_ok(prev)
            && self.asym_fits_cpu(task_util, umin, umax, prev)
            && self.cas_full_capacity(prev)
        {
            if !cluster_active || self.cpus_share_resources(prev, target) {
                ctx.path = PlacePath::Prev;
                return prev;
            }
            prev_aff = Some(prev);
        }
        // A per-CPU kthread waker stacks with its wakee (IO completion pattern).
        let this = ctx.this_cpu;
        if let Some(cur) = self.rqs[this.idx()].curr {
            if self.tasks[cur.idx()].kthread
                && prev == this
                && self.rqs[this.idx()].nr_running <= 1
                && self.asym_fits_cpu(task_util, umin, umax, prev)
            {
                ctx.path = PlacePath::KthreadStack;
                return prev;
            }
        }
        let recent = self.tasks[p.idx()].recent_used_cpu;
        self.tasks[p.idx()].recent_used_cpu = prev;
        let mut recent_used = None;
        if recent != prev
            && recent != target
            && self.machine.cpus_share_cache(recent, target)
            && self.idle_or_sched_idle(recent)
            && self.tasks[p.idx()].allowed.test(recent)
            && self.asym_fits_cpu(task_util, umin, umax, recent)
            && self.cas_full_capacity(recent)
        {
            if !cluster_active || self.cpus_share_resources(recent, target) {
                ctx.path = PlacePath::Recent;
                return recent;
            }
            recent_used = Some(recent);
        }
        // select_idle_capacity (v5.7) replaced wake_cap: one or the other.
        let asym_sd = self.domains.sd_asym_cpucapacity[target.idx()].filter(|_| !sched_feat!(self.features, wake_cap));
        if let Some(sd) = asym_sd {
            let span = self.domains.sd(sd).span;
            return match self.select_idle_capacity(p, &span, target, ctx) {
                Some(c) => {
                    ctx.path = PlacePath::Capacity;
                    c
                }
                None => {
                    ctx.path = PlacePath::Fallback;
                    target
                }
            };
        }
        let Some(llc_sd) = self.domains.sd_llc[target.idx()] else {
            ctx.path = PlacePath::Fallback;
            return target;
        };
        let llc_span = self.domains.sd(llc_sd).span;
        if let Some(c) = self.sis_scan_cluster_first(p, target, ctx) {
            return c;
        }
        let mut has_idle_core = false;
        if self.machine.has_smt() {
            has_idle_core = self.fair.llc[self.llc_of(target)].has_idle_cores;
            if !has_idle_core && self.machine.cpus_share_cache(prev, target) {
                if let Some(c) = self.select_idle_smt(p, &llc_span, prev, ctx) {
                    ctx.path = PlacePath::IdleSmt;
                    return c;
                }
            }
        }
        if let Some(c) = self.select_idle_cpu(p, &llc_span, has_idle_core, target, ctx) {
            return c;
        }
        ctx.path = PlacePath::Fallback;
        if let Some(c) = prev_aff {
            return c;
        }
        if let Some(c) = recent_used {
            return c;
        }
        target
    }

    /// `select_idle_smt`: an idle SMT sibling of `target` inside the LLC.
    pub fn select_idle_smt(&self, p: TaskId, llc: &CpuMask, target: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        let sibs = self.machine.smt_mask(target).and(&self.tasks[p.idx()].allowed);
        let mut cas_backup = None;
        for cpu in sibs.iter() {
            if cpu == target || !llc.test(cpu) {
                continue;
            }
            ctx.scanned += 1;
            if self.cas_take_idle(cpu, &mut cas_backup) {
                return Some(cpu);
            }
        }
        cas_backup
    }

    /// `select_idle_core`: whether `core`'s whole core is idle; removes its
    /// siblings from `cpus` when not, and remembers the first idle CPU seen.
    fn select_idle_core(
        &self,
        core: CpuId,
        cpus: &mut CpuMask,
        idle_cpu: &mut Option<CpuId>,
        ctx: &mut WakeCtx,
    ) -> Option<CpuId> {
        let mut idle = true;
        for cpu in self.machine.smt_mask(core).iter() {
            ctx.scanned += 1;
            if !self.available_idle_cpu(cpu) {
                idle = false;
                // CAS: a pressured fallback does not end the sibling scan.
                if idle_cpu.is_none_or(|c| !self.cas_full_capacity(c)) {
                    if self.sched_idle_cpu(cpu) && cpus.test(cpu) {
                        *idle_cpu = Some(cpu);
                        break;
                    }
                    continue;
                }
                break;
            }
            if cpus.test(cpu) && self.cas_prefer_backup(cpu, *idle_cpu) {
                *idle_cpu = Some(cpu);
            }
        }
        if idle {
            if let Some(c) = self.cas_idle_core_pick(core, cpus) {
                return Some(c);
            }
        }
        *cpus = cpus.andnot(self.machine.smt_mask(core));
        None
    }

    /// `select_idle_cpu`: scan the LLC from `target + 1` for an idle core
    /// (when the LLC may have one) or an idle CPU, limited by SIS_UTIL's
    /// `nr_idle_scan` (or SIS_PROP's idle-time budget in older kernels).
    pub fn select_idle_cpu(
        &mut self,
        p: TaskId,
        llc: &CpuMask,
        has_idle_core: bool,
        target: CpuId,
        ctx: &mut WakeCtx,
    ) -> Option<CpuId> {
        let mut cpus = llc.and(&self.tasks[p.idx()].allowed);
        self.sis_llc_idle_mask_filter(&mut cpus, target);
        let mut idle_cpu: Option<CpuId> = None;
        let mut nr: i64 = i64::MAX;
        if sched_feat!(self.features, SIS_UTIL) {
            nr = self.fair.llc[self.llc_of(target)].nr_idle_scan as i64 + 1;
            if nr == 1 {
                return None;
            }
        }
        let sis_prop = sched_feat!(self.features, SIS_PROP) && !has_idle_core;
        if sis_prop {
            nr = self.sis_prop_budget(ctx.this_cpu, llc.weight() as u64);
        }
        if !has_idle_core {
            nr = self.sis_time_limit_nr(nr, ctx.this_cpu);
            if nr == 1 {
                return None;
            }
        }
        let scanned_before = ctx.scanned;
        let start = CpuId((target.0 + 1) % self.machine.nr_cpus() as u32);
        let mut found = None;
        let mut cas_backup = None;
        // Two passes with one body: the target's cluster first (the kernel
        // does this whenever the LLC's first group is a cluster), then the
        // rest of the LLC. Without clusters the first pass is empty.
        let cluster = if self.machine.has_clusters { *self.machine.cluster_mask(target) } else { CpuMask::new() };
        'scan: for span in [cluster, *llc] {
            for cpu in span.iter_wrap(start) {
                if !cpus.test(cpu) {
                    continue;
                }
                if has_idle_core {
                    if let Some(c) = self.select_idle_core(cpu, &mut cpus, &mut idle_cpu, ctx) {
                        ctx.path = PlacePath::IdleCore;
                        return Some(c);
                    }
                } else {
                    nr -= 1;
                    if nr <= 0 {
                        break 'scan;
                    }
                    ctx.scanned += 1;
                    if self.cas_take_idle(cpu, &mut cas_backup) {
                        found = Some(cpu);
                        break 'scan;
                    }
                }
            }
            cpus = cpus.andnot(&cluster);
        }
        if has_idle_core {
            let l = self.llc_of(target);
            self.fair.llc[l].has_idle_cores = false;
            found = idle_cpu;
        }
        found = found.or(cas_backup);
        if sis_prop {
            self.sis_prop_account(ctx.this_cpu, (ctx.scanned - scanned_before) as u64);
        }
        if found.is_some() {
            ctx.path = PlacePath::IdleCpu;
        }
        found
    }

    /// SIS_PROP (v4.13..v5.19): scan depth from the waker's recent idle time
    /// over the average scan cost: `nr = llc_weight * avg_idle / avg_scan_cost`, at least 4.
    pub(crate) fn sis_prop_budget(&mut self, this: CpuId, llc_weight: u64) -> i64 {
        // The budget decays by half per jiffy since it was set.
        let jiffies = self.now / self.tick_ns;
        let rq = &mut self.rqs[this.idx()];
        while rq.wake_stamp < jiffies && rq.wake_avg_idle != 0 {
            rq.wake_stamp += 1;
            rq.wake_avg_idle >>= 1;
        }
        let avg_idle = rq.wake_avg_idle;
        let avg_cost = rq.avg_scan_cost + 1;
        let span_avg = llc_weight * avg_idle;
        if span_avg > 4 * avg_cost {
            (span_avg / avg_cost) as i64
        } else {
            4
        }
    }

    /// SIS_PROP bookkeeping after a scan: the scan ate into the waker's idle
    /// budget, and the average scan cost follows the measured cost.
    fn sis_prop_account(&mut self, this: CpuId, scanned: u64) {
        let cost = scanned * self.machine.cost.scan_ns_per_cpu;
        let rq = &mut self.rqs[this.idx()];
        rq.wake_avg_idle -= rq.wake_avg_idle.min(cost);
        rq.avg_scan_cost = crate::tunables::update_avg(rq.avg_scan_cost, cost);
    }

    /// `select_idle_capacity`: on asymmetric machines, the first idle CPU
    /// the task fits on, else the idle CPU with the most capacity.
    pub fn select_idle_capacity(&self, p: TaskId, span: &CpuMask, target: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        let cpus = span.and(&self.tasks[p.idx()].allowed);
        let task_util = self.task_util_est(p);
        let (util_min, util_max) = self.task_uclamp(p);
        // (CPU, capacity, fits): -1 (only uclamp_min unmet) beats 0.
        let mut best: Option<(CpuId, u64)> = None;
        let mut best_fits = 0;
        for cpu in cpus.iter_wrap(target) {
            ctx.scanned += 1;
            if !self.idle_or_sched_idle(cpu) {
                continue;
            }
            let mut cap = self.wake_capacity(cpu);
            let fits = self.util_fits_capacity(task_util, util_min, util_max, cpu, cap);
            if fits > 0 {
                return Some(cpu);
            } else if fits < 0 {
                cap = self.get_actual_cpu_capacity(cpu);
            }
            if fits < best_fits || (fits == best_fits && best.is_none_or(|(_, c)| cap > c)) {
                best = Some((cpu, cap));
                best_fits = fits;
            }
        }
        best.map(|(c, _)| c)
    }
}
