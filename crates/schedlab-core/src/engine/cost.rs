//! The cost model: how fast a CPU executes work, and what a migration or a
//! cold cache costs. Work is measured in nanoseconds at the full speed of a
//! capacity-1024 CPU at its highest frequency with its SMT siblings idle.
//!
//! Internally work is kept in *work units*: ns x 1024, so that a CPU of speed
//! `s` (1024 = full) retires `s` units per ns and every conversion is exact
//! integer arithmetic.

use super::Sim;
use crate::ids::{CpuId, Ns, TaskId};
use crate::topology::Distance;

/// Work units per ns of work.
pub const WU_PER_NS: u64 = 1024;

impl Sim {
    /// Speed of `cpu` now, in work units per ns: `capacity_orig x f/f_max`,
    /// scaled by the SMT factor when a sibling is busy.
    #[inline(always)]
    pub fn cpu_speed(&self, cpu: CpuId) -> u64 {
        let mut s = self.cpufreq.speed[cpu.idx()];
        // Another hardware thread of the core runs a task: the factor is
        // in the same record as the siblings.
        let smt = &self.cpu_rec[cpu.idx()];
        if smt.siblings.iter().any(|s| self.rqs[s.idx()].curr.is_some()) {
            s = s * smt.speed_pct as u64 / 100;
        }
        s.max(1)
    }

    /// `arch_scale_freq_capacity(cpu)`: current frequency over the maximum, out of 1024.
    #[inline]
    pub fn freq_capacity(&self, cpu: CpuId) -> u32 {
        self.cpufreq.freq_cap[cpu.idx()]
    }

    /// Cache refill work (ns of work) that task `p` owes when it starts
    /// running on `cpu`. The footprint is warm where it last ran, minus what
    /// other tasks brought into that core's private cache (and the LLC) since:
    ///
    /// - same core: the evicted part refills from the LLC (or memory if the
    ///   LLC lost it too);
    /// - another core of the same cluster/LLC: the whole footprint refills
    ///   from the shared level, except what the LLC lost, which comes from memory;
    /// - another LLC or node: the whole footprint refills at that distance's rate.
    ///
    /// Eviction is proportional: `evicted = footprint x min(1, pressure / size)`.
    /// Returns the refill work (ns) and the KiB brought into the caches, which
    /// is the pressure this task puts on the others.
    pub fn refill_work_ns(&self, p: TaskId, cpu: CpuId) -> (Ns, u64) {
        let t = &self.tasks[p.idx()];
        let fp = t.footprint_kib as u64;
        if fp == 0 {
            return (0, 0);
        }
        let c = &self.machine.cost;
        let mem = c.refill_ns_per_kib[Distance::Package as usize];
        if !t.has_run {
            // First run: nothing is warm anywhere; refill from memory.
            return (fp * mem, fp);
        }
        let from = t.cache_cpu;
        let old = &self.cpu_rec[from.idx()];
        // `Machine::distance`, its usual answers (the same CPU or core) from
        // the CPUs' engine records, without the CPU table's bounds tests.
        let d = if from == cpu {
            Distance::Same
        } else if old.core == self.cpu_rec[cpu.idx()].core {
            Distance::Smt
        } else {
            self.machine.distance(from, cpu)
        };
        let core_press = self.core_pressure[old.core as usize].saturating_sub(t.core_pressure_at_leave);
        let llc_press = self.llc_pressure[old.llc as usize].saturating_sub(t.llc_pressure_at_leave);
        let l2 = (c.l2_kib as u64).max(1);
        let llc = (c.llc_kib as u64).max(1);
        let evicted_llc = fp * llc_press.min(llc) / llc;
        match d {
            Distance::Same | Distance::Smt => {
                let evicted_l2 = (fp * core_press.min(l2) / l2).max(evicted_llc);
                let work = (evicted_l2 - evicted_llc) * c.refill_ns_per_kib[Distance::Llc as usize] + evicted_llc * mem;
                (work, evicted_l2)
            }
            Distance::Cluster | Distance::Llc => {
                ((fp - evicted_llc) * c.refill_ns_per_kib[d as usize] + evicted_llc * mem, fp)
            }
            Distance::Package | Distance::Node => (fp * c.refill_ns_per_kib[d as usize], fp),
        }
    }

    /// Charge `cost_ns` of CPU time on `cpu` now (a wakeup's scan, a balance
    /// pass): the CPU cannot make progress on its task until it is paid.
    /// A zero cost (most passes and scans) is tested first.
    #[inline]
    pub fn charge(&mut self, cpu: CpuId, cost_ns: Ns) {
        if cost_ns != 0 {
            self.charge_nonzero(cpu, cost_ns);
        }
    }

    /// `charge` of a cost that is not zero: always inlined at its few
    /// callers (out of line, 0.75 M more on the standard bench, round 20).
    #[inline(always)]
    fn charge_nonzero(&mut self, cpu: CpuId, cost_ns: Ns) {
        self.sync_segment(cpu);
        let now = self.now;
        let rq = self.rqs.untracked_mut(cpu.idx());
        rq.ready_at = rq.ready_at.max(now) + cost_ns;
        if rq.seg_active {
            // Push the running task's completion back.
            self.restart_segment(cpu);
        }
    }
}
