//! Wakeup-placement seed ideas (SEEDS.md ideas 2 and 4, and soft affinity
//! from idea 6) as switchable features. Each function here is called from a
//! one-line hook in `fair/wakeup.rs` and returns "no opinion" (`None`, or its
//! input unchanged) when its feature is off, so mainline behaviour is exactly
//! the hooks' callers' own.
//!
//! Hook points, in the order a wakeup meets them:
//!
//! ```text
//! select_task_rq_fair
//!   wake_affine ─► wake_idler_llc                 (idler_llc)
//!   select_task_rq_seeds
//!     ├─ select_idle_preferred                    (soft_affinity)
//!     └─ prev is an idle core?                    (prefer_prev_idle_core)
//!   select_idle_sibling
//!     ├─ sis_recent_idle_core_first               (prefer_prev_idle_core)
//!     ├─ sis_target_ok / sis_prev_ok              (prefer_prev_idle_core)
//!     ├─ sis_scan_cluster_first                   (sis_cluster_first)
//!     └─ select_idle_cpu
//!          ├─ sis_llc_idle_mask_filter            (llc_idle_mask)
//!          └─ sis_time_limit_nr                   (sis_time_limit)
//! ```

use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::{CpuId, TaskId};
use crate::sched_feat;
use crate::trace::PlacePath;

use super::wakeup::WakeCtx;

impl Sim {
    /// `is_idle_core` (seed idea 2): every SMT sibling of `cpu`, `cpu`
    /// included, is idle or runs only SCHED_IDLE tasks. Without SMT a core
    /// is one CPU, so this is plain idleness.
    pub fn is_idle_core(&self, cpu: CpuId) -> bool {
        if !self.machine.has_smt() {
            return self.idle_or_sched_idle(cpu);
        }
        self.machine.smt_mask(cpu).iter().all(|s| self.idle_or_sched_idle(s))
    }

    /// The fast-path rules that run before `select_idle_sibling` on a
    /// wakeup: soft affinity's preferred-CPU search, then idea 2's
    /// "prev is an idle core". `None` = go on to `select_idle_sibling`.
    pub fn select_task_rq_seeds(&mut self, p: TaskId, prev: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        if sched_feat!(self.features, soft_affinity) {
            if let Some(c) = self.select_idle_preferred(p, prev, ctx) {
                return Some(c);
            }
        }
        // Idea 2, first rule: an idle core at prev keeps the task there, its
        // caches warm and no sibling shared, whatever wake_affine said.
        if sched_feat!(self.features, prefer_prev_idle_core)
            && self.tasks[p.idx()].allowed.test(prev)
            && self.is_idle_core(prev)
            && self.asym_fits_task(p, prev)
        {
            ctx.path = PlacePath::Prev;
            return Some(prev);
        }
        None
    }

    /// Soft affinity (`cpus_preferred`): prev if it is preferred and idle,
    /// else the first idle CPU of the preferred mask from prev + 1, wrapping.
    /// The whole preferred mask is scanned (no SIS_UTIL depth: the depth is a
    /// per-LLC estimate and a preferred mask may span LLCs), each CPU counted
    /// in `scanned`. `None` when the task has no preference or none of its
    /// preferred CPUs is idle: the normal path over all allowed CPUs follows.
    pub fn select_idle_preferred(&mut self, p: TaskId, prev: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        let t = &self.tasks[p.idx()];
        let pref: CpuMask = t.preferred?.and(&t.allowed);
        if pref.test(prev) && self.idle_or_sched_idle(prev) {
            ctx.path = PlacePath::Prev;
            return Some(prev);
        }
        let start = CpuId((prev.0 + 1) % self.machine.nr_cpus() as u32);
        for cpu in pref.iter_wrap(start) {
            if cpu == prev {
                continue;
            }
            ctx.scanned += 1;
            if self.idle_or_sched_idle(cpu) {
                ctx.path = PlacePath::IdleCpu;
                return Some(cpu);
            }
        }
        None
    }

    /// Idea 2 in `select_idle_sibling`: `recent_used_cpu` is checked first,
    /// before target and prev, and taken only if it is an idle core sharing
    /// the target's LLC (no cluster distinction: the patch targets the
    /// cluster-less Zen 2 CCX). As in mainline, prev replaces it as the
    /// candidate for the next wakeup; mainline's own recent check further
    /// down then sees `recent == prev` and does nothing.
    ///
    /// Order with `prefer_prev_idle_core` on (SEEDS.md idea 2, the 2025 EEVDF
    /// "prefer the previous CPU if it is an idle core, recent_used_cpu first"
    /// series; SEEDS.md's text is the spec we follow):
    /// 1. `select_task_rq_fair`: prev if it is an idle core;
    /// 2. `recent_used_cpu` if it is an idle core sharing the target's LLC;
    /// 3. target, only for a sync wakeup and only if it is an idle core;
    /// 4. prev if it is an idle core sharing the target's LLC (the cluster
    ///    rule of mainline unchanged);
    /// 5. the per-CPU kthread stacking rule, then the idle-core / idle-SMT /
    ///    idle-CPU search, all as in mainline.
    pub fn sis_recent_idle_core_first(
        &mut self,
        p: TaskId,
        prev: CpuId,
        target: CpuId,
        ctx: &mut WakeCtx,
    ) -> Option<CpuId> {
        if !sched_feat!(self.features, prefer_prev_idle_core) {
            return None;
        }
        let recent = self.tasks[p.idx()].recent_used_cpu;
        self.tasks[p.idx()].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && self.machine.cpus_share_cache(recent, target)
            && self.tasks[p.idx()].allowed.test(recent)
            && self.is_idle_core(recent)
            && self.asym_fits_task(p, recent)
        {
            ctx.path = PlacePath::Recent;
            return Some(recent);
        }
        None
    }

    /// `select_idle_sibling`'s test of the target: idle (mainline), or with
    /// `prefer_prev_idle_core` a sync wakeup onto an idle core (idea 2: an
    /// idle SMT sibling of a busy core is no longer good enough, and a
    /// non-sync waker keeps running on its CPU).
    #[inline]
    pub fn sis_target_ok(&self, target: CpuId, sync: bool) -> bool {
        if sched_feat!(self.features, prefer_prev_idle_core) {
            return sync && self.is_idle_core(target);
        }
        self.idle_or_sched_idle(target)
    }

    /// `select_idle_sibling`'s test of prev: idle (mainline), or with
    /// `prefer_prev_idle_core` an idle core.
    #[inline]
    pub fn sis_prev_ok(&self, prev: CpuId) -> bool {
        if sched_feat!(self.features, prefer_prev_idle_core) {
            return self.is_idle_core(prev);
        }
        self.idle_or_sched_idle(prev)
    }

    /// `sis_cluster_first` (idea 4; Barry Song's 2021 RFC "scan cluster
    /// before scanning LLC in wake-up path", later reworked by Yicong Yang):
    /// before any idle-core or idle-CPU search of the LLC, scan the target's
    /// cluster from target + 1 and return its first idle CPU. Mainline's
    /// merged form (v6.8) scans the cluster first inside `select_idle_cpu`,
    /// but under `has_idle_cores` it looks for whole idle cores there and then
    /// in the rest of the LLC, and the SIS_UTIL depth can stop it before it
    /// starts; the RFC's early return takes any idle CPU of the cluster, with
    /// no depth limit (a cluster is a handful of CPUs).
    pub fn sis_scan_cluster_first(&mut self, p: TaskId, target: CpuId, ctx: &mut WakeCtx) -> Option<CpuId> {
        if !sched_feat!(self.features, sis_cluster_first) || !self.machine.has_clusters {
            return None;
        }
        let mut cpus = self.machine.cluster_mask(target).and(&self.tasks[p.idx()].allowed);
        self.sis_llc_idle_mask_filter(&mut cpus, target);
        let start = CpuId((target.0 + 1) % self.machine.nr_cpus() as u32);
        for cpu in cpus.iter_wrap(start) {
            ctx.scanned += 1;
            if self.idle_or_sched_idle(cpu) {
                ctx.path = PlacePath::IdleCpu;
                return Some(cpu);
            }
        }
        None
    }

    /// `llc_idle_mask` (idea 4, the LPC 2021 per-LLC idle cpumask): restrict
    /// the idle search to the CPUs of the target's LLC believed idle. The
    /// mask is set on idle entry and cleared by a busy CPU's tick (at most
    /// once per tick per CPU), so it can hold a CPU that has become busy
    /// since: the search visits it, counts it in `scanned`, and moves on.
    #[inline]
    pub fn sis_llc_idle_mask_filter(&self, cpus: &mut CpuMask, target: CpuId) {
        if sched_feat!(self.features, llc_idle_mask) {
            *cpus = cpus.and(&self.fair.llc[self.llc_of(target)].idle_mask);
        }
    }

    /// `sis_time_limit` (idea 4, "limit the time spent searching"): cap the
    /// idle-CPU scan depth `nr` (the loop visits at most `nr - 1` CPUs) so
    /// that `scanned * scan_ns_per_cpu` stays within the expected idle time.
    ///
    /// Which CPU's `avg_idle`: the waker's (`this`), because the waker's CPU
    /// pays for the scan (the engine charges `scanned * scan_ns_per_cpu` to
    /// it), so its expected idle time is the time the scan can use without
    /// delaying other work. SEEDS.md warns that this local `avg_idle` alone is
    /// misleading: it is refreshed only when a wakeup ends an idle period
    /// (idea 3 fixes part of that), and a busy waker keeps an old value. We
    /// still use it alone, plain `rq->avg_idle` (not SIS_PROP's consumed
    /// `wake_avg_idle` nor its /512 fuzz), so the feature measures exactly
    /// that budget; combine with `avg_idle_on_enqueue` for a fresher one.
    /// Like SIS_UTIL, the cap applies to the idle-CPU scan only: the
    /// idle-core scan runs only while `has_idle_cores` is set, and a failed
    /// one clears it.
    pub fn sis_time_limit_nr(&self, nr: i64, this: CpuId) -> i64 {
        if !sched_feat!(self.features, sis_time_limit) {
            return nr;
        }
        let budget_cpus = self.rqs[this.idx()].avg_idle / self.machine.cost.scan_ns_per_cpu.max(1);
        nr.min(budget_cpus.min(i64::MAX as u64 - 1) as i64 + 1)
    }

    /// `idler_llc` (idea 4): when the waker's CPU and prev are in different
    /// LLCs, override `wake_affine`'s pick with the LLC that has an idle core
    /// (`has_idle_cores`), else the one with more idle CPUs (LLC weight minus
    /// `nr_busy_cpus`, the kernel's per-LLC count of CPUs with the tick
    /// running); a tie keeps `wake_affine`'s pick. Returns `this` or `prev`,
    /// the target `select_idle_sibling` then searches around. The proposal's
    /// optional widening to the parent domain is not modelled.
    pub fn wake_idler_llc(&self, this: CpuId, prev: CpuId, affine: CpuId) -> CpuId {
        if !sched_feat!(self.features, idler_llc) || self.machine.cpus_share_cache(this, prev) {
            return affine;
        }
        let (lt, lp) = (self.llc_of(this), self.llc_of(prev));
        let smt = self.machine.has_smt();
        let (core_t, core_p) = (smt && self.fair.llc[lt].has_idle_cores, smt && self.fair.llc[lp].has_idle_cores);
        if core_t != core_p {
            return if core_t { this } else { prev };
        }
        let idle =
            |cpu: CpuId, l: usize| self.fair.sd_llc_size[cpu.idx()].saturating_sub(self.fair.llc[l].nr_busy_cpus);
        let (idle_t, idle_p) = (idle(this, lt), idle(prev, lp));
        match idle_t.cmp(&idle_p) {
            std::cmp::Ordering::Greater => this,
            std::cmp::Ordering::Less => prev,
            std::cmp::Ordering::Equal => affine,
        }
    }
}
