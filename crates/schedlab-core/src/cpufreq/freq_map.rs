//! schedutil's map from utilisation to frequency (`get_next_freq`,
//! `map_util_freq`, `cpufreq_driver_resolve_freq` with `CPUFREQ_RELATION_L`),
//! with what it reads of the policy taken once at build, and the
//! utilisation from which its answer is the policy's highest.
//!
//! Why the last one: a shared policy's request is `get_next_freq` of the
//! highest `sugov_get_util` of its CPUs (`sugov_next_freq_shared`), and
//! every scheduler hook recomputes it: the rate limit only runs from the
//! last *change*, and a policy that stays at its frequency never changes.
//! `get_next_freq` never decreases with the utilisation and never exceeds
//! `cpuinfo.max_freq`, so once one CPU asks for at least
//! [`FreqMap::sat_util`], the other CPUs cannot change the answer and are
//! not asked (`Sim::sugov_next_freq_khz`). The answer is the kernel's to the
//! kHz; the unit tests check the threshold against the plain definition on
//! random tables, and under `cfg(test)` every request is checked against
//! the direct computation over all CPUs.
//!
//! Read for this: `sugov_next_freq_shared` and `get_next_freq` of
//! kernel/sched/cpufreq_schedutil.c in their v6.8 form (the loop of
//! `sugov_iowait_apply` and `sugov_get_util` over `policy->cpus`, the max,
//! then `get_next_freq`), as quoted in the LKML patch mails the search
//! tools return for it. The kernel keeps its own shortcut there
//! (`cached_raw_freq`: an unchanged raw frequency skips
//! `cpufreq_driver_resolve_freq`); it needs the utilisation first, which is
//! what costs here.

use crate::topology::{CoreType, Opp};

/// The lowest OPP at or above `khz` (`CPUFREQ_RELATION_L`), `None` when
/// `khz` is above the highest. `opps` must be strictly increasing, which
/// `parse_machine` enforces (`core_type.opps`): a binary search, equal to
/// the first match of a scan from the lowest.
#[inline]
pub fn opp_at_or_above(opps: &[Opp], khz: u64) -> Option<u32> {
    debug_assert!(opps.windows(2).all(|w| w[0].freq_khz < w[1].freq_khz), "OPP table not increasing");
    opps.get(opps.partition_point(|o| (o.freq_khz as u64) < khz)).map(|o| o.freq_khz)
}

/// What `get_next_freq` reads of one policy; none of it changes during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreqMap {
    /// `arch_scale_cpu_capacity` of the policy's CPUs, at least 1: the
    /// `max` of `map_util_freq(util, freq, max)`.
    pub cap: u64,
    /// The highest OPP (the nominal frequency without a table), kHz.
    pub top_khz: u64,
    /// `get_capacity_ref_freq`: `cpuinfo.max_freq`, the highest OPP or with
    /// turbo the one-core turbo ceiling, never below `top_khz`, kHz.
    pub fmax_khz: u64,
    /// The P-state ratio unit a request above the highest OPP is rounded up
    /// to (`intel_cpufreq_target`, `DIV_ROUND_UP`), at least 1, kHz.
    pub unit_khz: u64,
    /// The lowest utilisation whose request is `fmax_khz`: every higher one
    /// asks for the same (at most `cap`, where the request is `fmax_khz`).
    pub sat_util: u64,
}

impl Default for FreqMap {
    /// A policy without CPUs: never asked.
    fn default() -> Self {
        FreqMap { cap: 1, top_khz: 0, fmax_khz: 0, unit_khz: 1, sat_util: 0 }
    }
}

impl FreqMap {
    /// The map of a policy of `ct` CPUs whose `cpuinfo.max_freq` is
    /// `cpuinfo_max_khz`, with P-states `pstate_scaling_khz` apart above
    /// the highest OPP.
    pub fn new(ct: &CoreType, cpuinfo_max_khz: u32, pstate_scaling_khz: u32) -> Self {
        let top = ct.opps.last().map_or(ct.nominal_freq_khz, |o| o.freq_khz);
        let mut m = FreqMap {
            cap: (ct.capacity as u64).max(1),
            top_khz: top as u64,
            fmax_khz: cpuinfo_max_khz.max(top) as u64,
            unit_khz: pstate_scaling_khz.max(1) as u64,
            sat_util: 0,
        };
        m.sat_util = m.lowest_util_for_fmax(&ct.opps);
        m
    }

    /// `get_next_freq(sg_policy, util, max)`: `map_util_freq` (the
    /// utilisation, headroom already added by `sugov_effective_cpu_perf`,
    /// as a share of `cpuinfo.max_freq`), resolved to the lowest OPP at or
    /// above it, or above the highest OPP (turbo, intel_cpufreq) rounded up
    /// to a P-state and capped at `cpuinfo.max_freq`. `opps` are the
    /// policy's core type's.
    #[inline]
    pub fn get_next_freq(&self, opps: &[Opp], util: u64) -> u32 {
        let want = self.fmax_khz * util / self.cap;
        if want > self.top_khz {
            return (want.div_ceil(self.unit_khz) * self.unit_khz).min(self.fmax_khz) as u32;
        }
        opp_at_or_above(opps, want).unwrap_or(self.top_khz as u32)
    }

    /// The lowest `util` with `get_next_freq(util) == fmax_khz`, by
    /// bisection over `0..=cap`: the answer never decreases with `util`,
    /// never exceeds `fmax_khz` (an OPP is at most `top_khz`), and is
    /// `fmax_khz` at `cap` (`want` is then `fmax_khz`, at or above `top_khz`).
    fn lowest_util_for_fmax(&self, opps: &[Opp]) -> u64 {
        let (mut lo, mut hi) = (0, self.cap);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get_next_freq(opps, mid) as u64 == self.fmax_khz {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: a fixed pseudo-random sequence, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A strictly increasing table of 1..=20 OPPs.
    fn random_opps(r: &mut Rng) -> Vec<Opp> {
        let mut f = 100_000 + r.next(1_000_000) as u32;
        (0..1 + r.next(20))
            .map(|_| {
                f += 1 + r.next(300_000) as u32;
                Opp { freq_khz: f, power_mw: 0 }
            })
            .collect()
    }

    fn core(opps: Vec<Opp>, capacity: u32) -> CoreType {
        let nominal_freq_khz = opps.last().map_or(1_000_000, |o| o.freq_khz);
        CoreType { name: "t".into(), capacity, opps, nominal_freq_khz, smt_speed_pct: 100, idle_states: Vec::new() }
    }

    /// The definition: a scan from the lowest OPP.
    fn linear(opps: &[Opp], khz: u64) -> Option<u32> {
        opps.iter().map(|o| o.freq_khz).find(|&f| f as u64 >= khz)
    }

    #[test]
    fn opp_lookup_equals_the_linear_scan_on_random_tables() {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..500 {
            let opps = random_opps(&mut r);
            let top = opps.last().unwrap().freq_khz as u64;
            for o in &opps {
                for khz in [o.freq_khz as u64 - 1, o.freq_khz as u64, o.freq_khz as u64 + 1] {
                    assert_eq!(opp_at_or_above(&opps, khz), linear(&opps, khz), "{khz} in {opps:?}");
                }
            }
            for _ in 0..50 {
                let khz = r.next(top + 200_000);
                assert_eq!(opp_at_or_above(&opps, khz), linear(&opps, khz), "{khz} in {opps:?}");
            }
        }
        assert_eq!(opp_at_or_above(&[], 5), None);
    }

    #[test]
    fn sat_util_is_where_the_request_reaches_cpuinfo_max() {
        let mut r = Rng(0x2545_F491_4F6C_DD1D);
        for i in 0..300 {
            let opps = random_opps(&mut r);
            let top = opps.last().unwrap().freq_khz;
            let capacity = 1 + r.next(1024) as u32;
            // Half the policies with a turbo range above the highest OPP.
            let cpuinfo_max = if i % 2 == 0 { top } else { top + r.next(1_500_000) as u32 };
            let unit = [1, 100_000, 133_333][i % 3];
            let m = FreqMap::new(&core(opps.clone(), capacity), cpuinfo_max, unit);
            assert!(m.sat_util <= m.cap);
            let mut prev = 0;
            for util in 0..=m.cap + 300 {
                let f = m.get_next_freq(&opps, util);
                assert!(f >= prev && f as u64 <= m.fmax_khz, "monotone and capped: {util} -> {f}");
                assert_eq!(f as u64 == m.fmax_khz, util >= m.sat_util, "util {util}, sat {}, {m:?}", m.sat_util);
                prev = f;
            }
        }
    }

    #[test]
    fn get_next_freq_on_a_hand_table() {
        // 3 OPPs, capacity 1024, no turbo: want = 1.2 GHz x util / 1024.
        let opps: Vec<Opp> = [600_000, 900_000, 1_200_000].map(|f| Opp { freq_khz: f, power_mw: 0 }).to_vec();
        let m = FreqMap::new(&core(opps.clone(), 1024), 1_200_000, 100_000);
        assert_eq!(m.get_next_freq(&opps, 0), 600_000);
        assert_eq!(m.get_next_freq(&opps, 512), 600_000); // 600 MHz exactly
        assert_eq!(m.get_next_freq(&opps, 513), 900_000);
        assert_eq!(m.get_next_freq(&opps, 768), 900_000);
        assert_eq!(m.get_next_freq(&opps, 769), 1_200_000);
        assert_eq!(m.sat_util, 769);
        // With turbo to 1.5 GHz in 100 MHz steps: want = 1.5 GHz x util / 1024,
        // above 1.2 GHz rounded up; 1.4 GHz + 1 kHz asks for 1.5 GHz.
        let m = FreqMap::new(&core(opps.clone(), 1024), 1_500_000, 100_000);
        assert_eq!(m.get_next_freq(&opps, 820), 1_300_000); // 1 201 171 kHz
        assert_eq!(m.get_next_freq(&opps, 956), 1_500_000); // 1 400 390 kHz
        assert_eq!(m.get_next_freq(&opps, 955), 1_400_000); // 1 398 925 kHz
        assert_eq!(m.sat_util, 956);
    }
}
