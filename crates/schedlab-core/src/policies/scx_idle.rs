//! The sched_ext built-in idle CPU tracking and pick (kernel/sched/ext_idle.c):
//! the global idle cpumasks (`cpu` and `smt`), `scx_idle_test_and_clear_cpu`,
//! `pick_idle_cpu_in_node` and `scx_select_cpu_dfl`.
//!
//! Only the global masks are modelled (no `SCX_OPS_BUILTIN_IDLE_PER_NODE`,
//! which scx_cosmos does not set). "Within a mask the pick rotates": the
//! kernel uses `cpumask_any_and_distribute`, which starts the search just
//! after the CPU it returned last time, remembered per calling CPU
//! (`distribute_cpu_mask_prev`). [`ScxIdle::distribute_prev`] is that per-CPU
//! memory, indexed by the waking CPU, so the rotation is deterministic.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;
use crate::topology::Machine;

/// The built-in idle state (`scx_idle_global_masks`) and the rotation memory.
#[derive(Clone, Debug)]
pub struct ScxIdle {
    /// Idle CPUs (`idle_masks.cpu`).
    pub cpu: CpuMask,
    /// CPUs whose whole SMT core is idle (`idle_masks.smt`).
    pub smt: CpuMask,
    /// `distribute_cpu_mask_prev` of each calling CPU: where its last
    /// `cpumask_any_and_distribute` stopped (`u32::MAX` = never).
    pub distribute_prev: Vec<u32>,
    /// `sched_smt_active()`.
    pub smt_active: bool,
    /// `scx_selcpu_topo_llc`: the machine has more than one LLC.
    pub topo_llc: bool,
    /// `scx_selcpu_topo_numa`: more than one node and LLCs differ from nodes.
    pub topo_numa: bool,
}

/// What `scx_select_cpu_dfl` needs to know about the wakeup besides the masks.
#[derive(Clone, Copy, Debug)]
pub struct SelectCtx {
    /// The task's allowed CPUs (`p->cpus_ptr`).
    pub allowed: CpuMask,
    /// `prev_cpu`.
    pub prev: CpuId,
    /// `smp_processor_id()`: the waking CPU.
    pub this_cpu: CpuId,
    /// `SCX_WAKE_SYNC` was set.
    pub sync: bool,
    /// The waker's local DSQ is empty (`cpu_rq(cpu)->scx.local_dsq.nr == 0`).
    pub waker_local_empty: bool,
}

impl ScxIdle {
    /// All online CPUs idle (`reset_idle_masks`), topology switches as
    /// `scx_idle_update_selcpu_topology` sets them.
    pub fn new(m: &Machine) -> Self {
        let all = m.all_cpus();
        let nr = m.nr_cpus();
        let llc_w = m.llc_mask(CpuId(0)).weight() as usize;
        let topo_llc = llc_w < nr;
        // llc_numa_mismatch: some CPU's LLC is not its whole node.
        let mismatch = (0..nr).any(|c| {
            let cpu = CpuId(c as u32);
            *m.llc_mask(cpu) != m.node_cpus[m.cpus[c].node as usize]
        });
        let node_w = m.node_cpus[m.cpus[0].node as usize].weight() as usize;
        ScxIdle {
            cpu: all,
            smt: all,
            distribute_prev: vec![u32::MAX; nr],
            smt_active: m.has_smt(),
            topo_llc,
            topo_numa: m.nr_nodes > 1 && node_w < nr && mismatch,
        }
    }

    /// `update_builtin_idle(cpu, idle)`: the CPU entered or left idle.
    pub fn update_builtin_idle(&mut self, m: &Machine, cpu: CpuId, idle: bool) {
        if idle {
            self.cpu.set(cpu);
        } else {
            self.cpu.clear(cpu);
        }
        if self.smt_active {
            let sib = m.smt_mask(cpu);
            if idle {
                if sib.is_subset(&self.cpu) {
                    self.smt = self.smt.or(sib);
                }
            } else {
                self.smt = self.smt.andnot(sib);
            }
        }
    }

    /// `scx_idle_test_and_clear_cpu`: claim `cpu` if idle. The SMT bits of its
    /// core are cleared either way (the core is not wholly idle any more).
    pub fn test_and_clear_cpu(&mut self, m: &Machine, cpu: CpuId) -> bool {
        if self.smt_active {
            let sib = m.smt_mask(cpu);
            if sib.intersects(&self.smt) {
                self.smt = self.smt.andnot(sib);
            }
        }
        let was = self.cpu.test(cpu);
        self.cpu.clear(cpu);
        was
    }

    /// `cpumask_any_and_distribute(a, b)` called on `this_cpu`: the first CPU
    /// of `a & b` after the one this CPU returned last, wrapping.
    pub fn any_and_distribute(&mut self, a: &CpuMask, b: &CpuMask, this_cpu: CpuId) -> Option<CpuId> {
        let both = a.and(b);
        let prev = self.distribute_prev[this_cpu.idx()];
        let start = if prev == u32::MAX { 0 } else { prev as usize + 1 };
        let pick = both.next_from(start).or_else(|| both.first());
        if let Some(c) = pick {
            self.distribute_prev[this_cpu.idx()] = c.0;
        }
        pick
    }

    /// `pick_idle_cpu_in_node(cpus_allowed, node, flags)`: a wholly idle core
    /// first (only, with `idle_core`), then any idle CPU; claimed atomically.
    pub fn pick_idle_cpu_in_node(
        &mut self,
        m: &Machine,
        allowed: &CpuMask,
        idle_core: bool,
        this_cpu: CpuId,
    ) -> Option<CpuId> {
        loop {
            let mut found = None;
            if self.smt_active {
                let smt = self.smt;
                found = self.any_and_distribute(&smt, allowed, this_cpu);
                if found.is_none() && idle_core {
                    return None;
                }
            }
            if found.is_none() {
                let idle = self.cpu;
                found = self.any_and_distribute(&idle, allowed, this_cpu);
            }
            let cpu = found?;
            if self.test_and_clear_cpu(m, cpu) {
                return Some(cpu);
            }
            // Lost the race for this CPU (its SMT bit was stale): retry.
        }
    }

    /// `scx_select_cpu_dfl(p, prev_cpu, wake_flags, NULL, 0)`: the idle CPU
    /// picked for the wakee, or `None` (`-EBUSY`). A sync wakeup may return
    /// the waker's CPU without it being idle, as the kernel does.
    pub fn scx_select_cpu_dfl(&mut self, m: &Machine, ctx: &SelectCtx) -> Option<CpuId> {
        let allowed = ctx.allowed;
        let prev = ctx.prev;
        let is_prev_allowed = allowed.test(prev);
        let numa_cpus =
            if self.topo_numa { Some(allowed.and(&m.node_cpus[m.cpus[prev.idx()].node as usize])) } else { None };
        let llc_cpus = if self.topo_llc { Some(allowed.and(m.llc_mask(prev))) } else { None };
        let this = ctx.this_cpu;
        if ctx.sync {
            // The waker is cache affine and prev is idle: avoid a migration.
            if is_prev_allowed && m.cpus_share_cache(this, prev) && self.test_and_clear_cpu(m, prev) {
                return Some(prev);
            }
            // The waker's local DSQ is empty and the system has idle CPUs:
            // queue the wakee behind the waker, which is about to sleep.
            if ctx.waker_local_empty && !self.cpu.is_empty() && allowed.test(this) {
                return Some(this);
            }
        }
        if self.smt_active {
            if is_prev_allowed && self.smt.test(prev) && self.test_and_clear_cpu(m, prev) {
                return Some(prev);
            }
            if let Some(llc) = llc_cpus {
                if let Some(c) = self.pick_idle_cpu_in_node(m, &llc, true, this) {
                    return Some(c);
                }
            }
            if let Some(numa) = numa_cpus {
                if let Some(c) = self.pick_idle_cpu_in_node(m, &numa, true, this) {
                    return Some(c);
                }
            }
            if let Some(c) = self.pick_idle_cpu_in_node(m, &allowed, true, this) {
                return Some(c);
            }
        }
        if is_prev_allowed && self.test_and_clear_cpu(m, prev) {
            return Some(prev);
        }
        if let Some(llc) = llc_cpus {
            if let Some(c) = self.pick_idle_cpu_in_node(m, &llc, false, this) {
                return Some(c);
            }
        }
        if let Some(numa) = numa_cpus {
            if let Some(c) = self.pick_idle_cpu_in_node(m, &numa, false, this) {
                return Some(c);
            }
        }
        self.pick_idle_cpu_in_node(m, &allowed, false, this)
    }
}
