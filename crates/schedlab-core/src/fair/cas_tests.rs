//! Decision tests for CAS and the remote cpufreq decision (seed idea 5):
//! RT/IRQ pressure is modelled by setting `rqs[c].cpu_capacity` by hand.

use crate::cpumask::CpuMask;
use crate::features::Feat;
use crate::ids::{CpuId, TaskId};
use crate::testkit::{busy, sim_from_toml, wake_ctx, HIKEY, SMT_2LLC};
use crate::trace::PlacePath;

use super::cas::CpufreqUpdate;
use super::eas_tests::feats;

/// 8 cores, no SMT, one LLC.
const FLAT8: &str = crate::uniform_machine_toml!("test-flat8", 1, 1, 8, 1);

const P: TaskId = TaskId(0);

fn pressure(s: &mut crate::engine::Sim, cpu: u32, cap: u32) {
    s.rqs[cpu as usize].cpu_capacity = cap;
}

#[test]
fn full_capacity_threshold_is_80_percent_of_the_original() {
    let mut s = sim_from_toml(FLAT8, 2, feats(&[Feat::cas]));
    pressure(&mut s, 1, 820); // 80.08%
    pressure(&mut s, 2, 819); // 79.98%
    assert!(s.cas_full_capacity(CpuId(1)));
    assert!(!s.cas_full_capacity(CpuId(2)));
    let s = sim_from_toml(FLAT8, 2, feats(&[]));
    assert!(s.cas_full_capacity(CpuId(2)));
}

#[test]
fn cas_skips_a_pressured_idle_target_when_a_full_idle_cpu_exists() {
    for cas in [false, true] {
        let mut s = sim_from_toml(FLAT8, 2, if cas { feats(&[Feat::cas]) } else { feats(&[]) });
        pressure(&mut s, 0, 700);
        s.tasks[0].recent_used_cpu = CpuId(0);
        s.fair.llc[0].nr_idle_scan = 8;
        let mut c = wake_ctx(0);
        let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
        if cas {
            assert_eq!((got, c.path), (CpuId(1), PlacePath::IdleCpu));
        } else {
            assert_eq!((got, c.path), (CpuId(0), PlacePath::Target));
        }
    }
}

#[test]
fn cas_skips_a_pressured_idle_prev_and_recent() {
    let mut s = sim_from_toml(FLAT8, 2, feats(&[Feat::cas]));
    busy(&mut s, 0, 1);
    for c in [3, 5, 6, 7] {
        busy(&mut s, c, 1);
    }
    // prev 2 and recent 1 idle but pressured; CPU 4 idle with full capacity.
    pressure(&mut s, 1, 500);
    pressure(&mut s, 2, 600);
    s.tasks[0].recent_used_cpu = CpuId(1);
    s.fair.llc[0].nr_idle_scan = 8;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(2), CpuId(0), &mut c, false), CpuId(4));
}

#[test]
fn cas_falls_back_to_the_idle_cpu_with_most_capacity() {
    for (cas, want) in [(false, 3), (true, 5)] {
        let mut s = sim_from_toml(FLAT8, 2, if cas { feats(&[Feat::cas]) } else { feats(&[]) });
        for c in [0, 1, 2, 4, 6, 7] {
            busy(&mut s, c, 1);
        }
        pressure(&mut s, 3, 600);
        pressure(&mut s, 5, 700);
        s.tasks[0].recent_used_cpu = CpuId(0);
        s.fair.llc[0].nr_idle_scan = 8;
        let mut c = wake_ctx(0);
        assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(want), "cas={cas}");
    }
}

#[test]
fn cas_idle_core_taken_through_its_full_capacity_sibling() {
    // LLC 0: core 0 = {0,4} (CPU 0 busy), core 1 = {1,5} idle, CPU 1 pressured.
    for (cas, want) in [(false, 1), (true, 5)] {
        let mut s = sim_from_toml(SMT_2LLC, 2, if cas { feats(&[Feat::cas]) } else { feats(&[]) });
        busy(&mut s, 0, 1);
        pressure(&mut s, 1, 600);
        s.fair.llc[0].has_idle_cores = true;
        s.fair.llc[0].nr_idle_scan = 4;
        let mut c = wake_ctx(0);
        let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
        assert_eq!((got, c.path), (CpuId(want), PlacePath::IdleCore), "cas={cas}");
    }
}

#[test]
fn cas_pressured_idle_core_loses_to_a_full_idle_cpu_of_a_busy_core() {
    // Core 1 = {1,5} idle but both pressured; CPU 4 idle (its core is busy) and full.
    let mut s = sim_from_toml(SMT_2LLC, 2, feats(&[Feat::cas]));
    busy(&mut s, 0, 1);
    pressure(&mut s, 1, 600);
    pressure(&mut s, 5, 700);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    // Only pressured idle CPUs: the one with most capacity.
    let mut s = sim_from_toml(SMT_2LLC, 2, feats(&[Feat::cas]));
    busy(&mut s, 0, 1);
    busy(&mut s, 4, 1);
    pressure(&mut s, 1, 600);
    pressure(&mut s, 5, 700);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(5));
}

#[test]
fn cas_select_idle_smt_backup() {
    let mut s = sim_from_toml(SMT_2LLC, 2, feats(&[Feat::cas]));
    busy(&mut s, 0, 1);
    pressure(&mut s, 4, 600);
    let llc = *s.machine.llc_mask(CpuId(0));
    // The only sibling is pressured: it is still the answer (backup).
    assert_eq!(s.select_idle_smt(P, &llc, CpuId(0), &mut wake_ctx(0)), Some(CpuId(4)));
}

#[test]
fn cas_slow_path_prefers_full_then_biggest_idle() {
    let all = CpuMask::first_n(8);
    for (cas, want) in [(false, 1), (true, 2)] {
        let mut s = sim_from_toml(FLAT8, 2, if cas { feats(&[Feat::cas]) } else { feats(&[]) });
        for c in [0, 3, 4, 5, 6, 7] {
            busy(&mut s, c, 1);
        }
        pressure(&mut s, 1, 600);
        assert_eq!(s.sched_balance_find_dst_group_cpu(&all, P, CpuId(0)), CpuId(want), "cas={cas}");
    }
    let mut s = sim_from_toml(FLAT8, 2, feats(&[Feat::cas]));
    for c in [0, 3, 4, 5, 6, 7] {
        busy(&mut s, c, 1);
    }
    pressure(&mut s, 1, 600);
    pressure(&mut s, 2, 700);
    assert_eq!(s.sched_balance_find_dst_group_cpu(&all, P, CpuId(0)), CpuId(2));
}

#[test]
fn remote_cpufreq_update_decision() {
    let mut s = sim_from_toml(HIKEY, 2, feats(&[]));
    // CPU 1 at 200: 200 * 1.25 = 250 -> 1844 MHz * 250 / 462 = 997.7 MHz -> 999 MHz OPP.
    s.rqs[1].cfs_avg.util_avg = 200;
    assert_eq!(s.remote_cpufreq_update(CpuId(0), CpuId(1)), CpufreqUpdate::Deferred { domain: 0 });
    assert!(!s.cpufreq_this_cpu_can_update(CpuId(0), CpuId(1)));
    assert!(s.cpufreq_this_cpu_can_update(CpuId(1), CpuId(1)));
    assert_eq!(s.remote_cpufreq_update(CpuId(1), CpuId(1)), CpufreqUpdate::Local { domain: 0, freq_khz: 999_000 });
    let mut s2 = sim_from_toml(HIKEY, 2, feats(&[Feat::remote_cpufreq_update]));
    s2.rqs[1].cfs_avg.util_avg = 200;
    let fd = s2.machine.cpus[1].freq_domain;
    assert_eq!(
        s2.remote_cpufreq_update(CpuId(0), CpuId(1)),
        CpufreqUpdate::RemoteNow { domain: fd, freq_khz: 999_000 }
    );
    // From the other cluster: still deferred.
    assert!(matches!(s2.remote_cpufreq_update(CpuId(4), CpuId(1)), CpufreqUpdate::Deferred { .. }));
}
