//! APERF/MPERF-like counters per CPU, for the governors that measure what a
//! CPU did over a sampling period instead of reading the scheduler's PELT
//! signals (`intel_pstate`, `ondemand`).
//!
//! On x86, MPERF counts at the TSC (base) rate while the CPU is in C0 and
//! APERF at the actual frequency while in C0; both stop in every idle state
//! (C1 and deeper). Here:
//! - `mperf_ns`: time the CPU was not idle (the idle task did not run), ns:
//!   MPERF / base frequency, so `mperf_ns / wall` is intel_pstate's
//!   `busy_frac` and the complement is what `get_cpu_idle_time_us` counts
//!   as idle for ondemand;
//! - `aperf_mhz_ns`: the same time weighted by the domain's frequency in
//!   MHz: `aperf / mperf` is the average frequency while busy.
//!
//! They are folded at idle entry and exit of the CPU, at a frequency change
//! of its domain, and when a governor reads them: O(1) per event, no scan.

use crate::engine::Sim;
use crate::ids::{CpuId, Ns};

/// The counters of one CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfCounters {
    /// Whether the CPU is in C0 (runs something, the idle task excepted).
    pub c0: bool,
    /// When the counters were last folded, ns.
    pub since: Ns,
    /// C0 time, ns (MPERF at the base rate).
    pub mperf_ns: u64,
    /// C0 time x frequency in MHz (APERF).
    pub aperf_mhz_ns: u64,
}

impl Sim {
    /// Bring `cpu`'s counters to now at its domain's current frequency.
    #[inline]
    pub(crate) fn counters_fold(&mut self, cpu: CpuId) {
        let fd = self.machine.cpus[cpu.idx()].freq_domain as usize;
        let mhz = (self.cpufreq.policies[fd].cur_khz / 1000) as u64;
        let now = self.now;
        let k = &mut self.cpufreq.counters[cpu.idx()];
        if k.c0 {
            let d = now.saturating_sub(k.since);
            k.mperf_ns += d;
            k.aperf_mhz_ns += d * mhz;
        }
        k.since = now;
    }

    /// `cpu` enters (`c0 = false`) or leaves (`true`) the idle loop: the
    /// counters stop or start, and the turbo ceiling may move. Called from
    /// `enter_idle`/`exit_idle`; does nothing without a governor that
    /// counts.
    #[inline]
    pub(crate) fn counters_set_c0(&mut self, cpu: CpuId, c0: bool) {
        if self.cpufreq.counters.is_empty() {
            return;
        }
        self.counters_fold(cpu);
        self.cpufreq.counters[cpu.idx()].c0 = c0;
    }
}
