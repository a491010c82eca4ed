//! intel_pstate in active mode, `powersave` policy, without HWP: the
//! algorithm a v5.9-era kernel runs on a Broadwell-EX (no HWP before
//! Skylake; `intel_pstate_update_util` is the hook, not a governor).
//!
//! Read for this: drivers/cpufreq/intel_pstate.c of linux 5.10.13 (the
//! nearest stored tree to v5.9; the functions below did not change between
//! them as far as the v5.9..v5.10 history of the file goes: 5.10 added
//! passive mode with HWP and `strict_target`, outside this path), and,
//! for the newest form, 2024-2025 patches to the file found by the search
//! tools (the `global.turbo_disabled` -> `READ_ONCE(global.no_turbo)`
//! cleanup; Christian Loehle's "Remove iowait boost" proposal): they show
//! the same `get_target_pstate` still in place; no whole newest tree was
//! read.
//!
//! The path, as the kernel runs it on every `cpufreq_update_util` of the
//! CPU itself (remote calls return at once):
//! - `intel_pstate_update_util`: unless `INTEL_PSTATE_SAMPLING_INTERVAL`
//!   (10 ms) has passed since the last sample, return;
//! - `intel_pstate_sample`: read APERF, MPERF, TSC; the deltas since the
//!   last sample; nothing if MPERF did not move; the first sample only
//!   primes the counters;
//! - `get_target_pstate`: `busy_frac = mperf / tsc` (the share of the
//!   period in C0), `target = turbo_pstate x 1.25 x busy_frac` (at least
//!   `min_pstate`); if the average P-state of the period
//!   (`max_pstate_physical x aperf / mperf`) was higher, add half the
//!   difference;
//! - `intel_pstate_prepare_request`: clamp to `[min_pstate, turbo_pstate]`;
//! - `intel_pstate_update_pstate`: write PERF_CTL when it changed.
//!
//! Here MPERF and APERF are `cpufreq::counters` (C0 time, and C0 time x
//! frequency), TSC is the wall clock. The request is per CPU; the core runs
//! at the highest request of its threads (PERF_CTL is per thread and the
//! core resolves them to the highest), capped by turbo. The fixed-point
//! formats are the kernel's (`FRAC_BITS` 8, `EXT_FRAC_BITS` 14).
//!
//! Not modelled: the iowait boost (`SCHED_CPUFREQ_IOWAIT`): schedlab's
//! tasks never sleep in iowait and its hooks carry no flags, so the boost
//! would be 0 every time. HWP (Skylake and later, and its dynamic boost).
//! The `performance` policy of the active driver requests the highest
//! P-state within limits (`intel_pstate_max_within_limits`): that is the
//! `performance` governor here, which requests the one-core turbo ceiling
//! when the machine has turbo.

use crate::engine::Sim;
use crate::ids::{CpuId, Ns, NSEC_PER_MSEC};

/// `INTEL_PSTATE_SAMPLING_INTERVAL`: the shortest time between two samples
/// of a CPU, ns (10 ms in every kernel since 4.x).
pub const INTEL_PSTATE_SAMPLING_INTERVAL_NS: Ns = 10 * NSEC_PER_MSEC;

/// `core_get_scaling()`: kHz per P-state ratio unit on Core and Xeon
/// processors (100 MHz bus clock).
pub const DEFAULT_PSTATE_SCALING_KHZ: u32 = 100_000;

/// `FRAC_BITS`: intel_pstate's fixed-point fraction bits.
const FRAC_BITS: u32 = 8;
/// `EXT_BITS + FRAC_BITS`: the extended format of `core_avg_perf`.
const EXT_FRAC_BITS: u32 = 6 + FRAC_BITS;

/// One CPU's sampling state (`struct cpudata`, the part this path uses).
#[derive(Clone, Copy, Debug, Default)]
pub struct PstateCpu {
    /// `sample.time`: when the last sample was taken, ns (0: none yet).
    pub sample_time: Ns,
    /// `last_sample_time`: the sample before it, ns.
    pub last_sample_time: Ns,
    /// `prev_aperf`: APERF at the last sample (C0 ns x MHz).
    pub prev_aperf: u64,
    /// `prev_mperf`: MPERF at the last sample (C0 ns).
    pub prev_mperf: u64,
    /// `prev_tsc`: the wall clock at the last sample, ns.
    pub prev_tsc: Ns,
    /// `pstate.current_pstate`: the ratio last written to PERF_CTL.
    pub current_pstate: u32,
}

/// The P-state limits of a CPU, in ratio units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PstateLimits {
    /// `min_pstate`: the lowest OPP.
    pub min: u32,
    /// `max_pstate_physical`: the base (nominal) frequency, which MPERF counts at.
    pub max_physical: u32,
    /// `turbo_pstate`: the one-core turbo ceiling, or the highest OPP without turbo.
    pub turbo: u32,
}

/// One sample's counter deltas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// APERF delta: C0 ns x MHz.
    pub aperf: u64,
    /// MPERF delta: C0 ns.
    pub mperf: u64,
    /// TSC delta: wall ns.
    pub tsc: u64,
}

/// `get_target_pstate` for `s` under `lim`, with MPERF counting at
/// `base_mhz`: the P-state ratio requested, before
/// `intel_pstate_prepare_request`'s clamp.
pub fn get_target_pstate(s: Sample, lim: PstateLimits, base_mhz: u64) -> u32 {
    let busy_frac = ((s.mperf << FRAC_BITS) / s.tsc.max(1)) as i64;
    let mut target = lim.turbo as i64;
    target += target >> 2;
    target = (target * busy_frac) >> FRAC_BITS;
    if target < lim.min as i64 {
        target = lim.min as i64;
    }
    // core_avg_perf = aperf / mperf in the extended format; our APERF is
    // in MHz x ns, so dividing by the base frequency makes the ratio.
    let core_avg_perf = ((s.aperf << EXT_FRAC_BITS) / (s.mperf * base_mhz).max(1)) as i64;
    let avg_pstate = (lim.max_physical as i64 * core_avg_perf) >> EXT_FRAC_BITS;
    if avg_pstate > target {
        target += (avg_pstate - target) >> 1;
    }
    target.max(0) as u32
}

impl Sim {
    /// The P-state limits of `cpu`'s policy.
    fn pstate_limits(&self, cpu: CpuId) -> PstateLimits {
        let pol = &self.cpufreq.policies[self.machine.cpus[cpu.idx()].freq_domain as usize];
        let scaling = self.machine.cpufreq.pstate_scaling_khz.max(1);
        PstateLimits {
            min: pol.min_khz / scaling,
            max_physical: self.machine.core_type(cpu).nominal_freq_khz / scaling,
            turbo: pol.cpuinfo_max_khz / scaling,
        }
    }

    /// `intel_pstate_update_util`: the scheduler's hook on `cpu`.
    pub(crate) fn intel_pstate_update_util(&mut self, cpu: CpuId) {
        // "Don't allow remote callbacks".
        if self.cpufreq.this_cpu.is_some_and(|t| t != cpu) {
            return;
        }
        let now = self.now;
        if now.saturating_sub(self.cpufreq.pstate[cpu.idx()].sample_time) < INTEL_PSTATE_SAMPLING_INTERVAL_NS {
            return;
        }
        if let Some(s) = self.intel_pstate_sample(cpu) {
            self.intel_pstate_adjust_pstate(cpu, s);
        }
    }

    /// `intel_pstate_sample`: the deltas since the last sample, `None` when
    /// MPERF did not move or this is the first sample.
    fn intel_pstate_sample(&mut self, cpu: CpuId) -> Option<Sample> {
        self.counters_fold(cpu);
        let k = self.cpufreq.counters[cpu.idx()];
        let now = self.now;
        let st = &mut self.cpufreq.pstate[cpu.idx()];
        if st.prev_mperf == k.mperf_ns || st.prev_tsc == now {
            return None;
        }
        st.last_sample_time = st.sample_time;
        st.sample_time = now;
        let s =
            Sample { aperf: k.aperf_mhz_ns - st.prev_aperf, mperf: k.mperf_ns - st.prev_mperf, tsc: now - st.prev_tsc };
        st.prev_aperf = k.aperf_mhz_ns;
        st.prev_mperf = k.mperf_ns;
        st.prev_tsc = now;
        (st.last_sample_time != 0).then_some(s)
    }

    /// `intel_pstate_adjust_pstate`: choose, clamp, and write the P-state.
    fn intel_pstate_adjust_pstate(&mut self, cpu: CpuId, s: Sample) {
        let lim = self.pstate_limits(cpu);
        let base_mhz = (self.machine.core_type(cpu).nominal_freq_khz / 1000) as u64;
        let target = get_target_pstate(s, lim, base_mhz).clamp(lim.min, lim.turbo.max(lim.min));
        let st = &mut self.cpufreq.pstate[cpu.idx()];
        if target == st.current_pstate {
            return;
        }
        st.current_pstate = target;
        // The ratio is written as such; on a machine whose OPP table is
        // coarser than the P-state unit, the lowest OPP at or above it.
        let khz = target * self.machine.cpufreq.pstate_scaling_khz;
        let opps = &self.machine.core_type(cpu).opps;
        let khz = match opps.last() {
            Some(top) if khz <= top.freq_khz => super::resolve_freq(opps, khz as u64),
            _ => khz,
        };
        self.cpufreq_cpu_request(cpu, khz);
    }
}
