//! What the fair class learns when a CPU goes idle or its tick runs busy:
//! the LLC's idle-core hint (`__update_idle_core`) and seed idea 4's LLC
//! idle mask. Both live in `sd_llc_shared` (`state::LlcShared`); the engine
//! calls these from its idle entry and its tick, as core code calls
//! fair.c's `update_idle_core` from `set_next_task_idle`.

use crate::engine::Sim;
use crate::ids::CpuId;
use crate::sched_feat;

impl Sim {
    /// `__update_idle_core`: when every SMT sibling of `cpu` is idle, the LLC
    /// has an idle core.
    #[inline(always)]
    pub fn update_idle_core(&mut self, cpu: CpuId) {
        if !self.machine.has_smt() {
            return;
        }
        let all_idle = self.cpu_rec[cpu.idx()].siblings.iter().all(|s| self.rqs[s.idx()].idle_cpu());
        if all_idle {
            let llc = self.llc_of(cpu);
            self.fair.llc[llc].has_idle_cores = true;
        }
    }

    /// `update_idle_cpumask(cpu, set_idle)` (seed idea 4, `llc_idle_mask`):
    /// `cpu` enters its LLC's idle mask on idle entry, and leaves it only
    /// from the tick of a busy CPU, so at most once per tick per CPU (the
    /// proposal's rate limit).
    #[inline]
    pub(crate) fn update_idle_cpumask(&mut self, cpu: CpuId, set_idle: bool) {
        // Only the feature reads the mask, and a run's features are fixed:
        // without it, the tick and idle entry skip the LLC lookup.
        if !sched_feat!(self.features, llc_idle_mask) {
            return;
        }
        let llc = self.llc_of(cpu);
        let mask = &mut self.fair.llc[llc].idle_mask;
        if set_idle {
            mask.set(cpu);
        } else {
            mask.clear(cpu);
        }
    }
}
