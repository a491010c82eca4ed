//! Decision tests for the wakeup path: each builds a machine state by hand
//! and checks the CPU the rule must choose, per the kernel function's
//! behaviour (fair.c, linux-next 2026). Test names say which rule they check.

use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId};
use crate::testkit::{busy, sim_from_toml, wake_ctx, CLUSTERS, SMT_2LLC};
use crate::trace::PlacePath;

const P: TaskId = TaskId(0);

#[test]
fn wake_affine_idle_this_idle_shared_cache_prefers_idle_prev() {
    let s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(1), false), Some(CpuId(1)));
}

#[test]
fn wake_affine_idle_this_idle_shared_cache_busy_prev_takes_this() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 1, 1);
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(1), false), Some(CpuId(0)));
}

#[test]
fn wake_affine_idle_sync_with_one_task_takes_this() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 2, 2);
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), true), Some(CpuId(0)));
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), false), None);
}

#[test]
fn wake_affine_idle_sync_counts_every_class_and_not_delayed_entities() {
    // `rq->nr_running - cfs_h_nr_delayed(rq) == 1`: an RT task queued
    // behind the waker makes two; a delayed fair entity does not count.
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 2, 2);
    s.rqs[0].nr_running = 2; // an RT task queued behind the waker
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), true), None);
    s.rqs[0].cfs.nr_queued = 2; // ...or instead a delayed fair entity
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), true), Some(CpuId(0)));
}

#[test]
fn wake_affine_idle_prev_idle_across_llc_needs_wa_idle_prev() {
    // Seed idea 1: with wa_idle_prev (v5.10+) an idle prev wins; v5.9 had no opinion.
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), false), Some(CpuId(2)));
    s.features.set(Feat::wa_idle_prev, false);
    assert_eq!(s.wake_affine_idle(CpuId(0), CpuId(2), false), None);
}

#[test]
fn wake_affine_weight_lighter_this_cpu_wins() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    s.rqs[0].cfs_avg.load_avg = 100;
    s.rqs[2].cfs_avg.load_avg = 2000;
    s.tasks[0].avg.load_avg = 300;
    assert_eq!(s.wake_affine_weight(117, P, CpuId(0), CpuId(2), false), Some(CpuId(0)));
    s.rqs[0].cfs_avg.load_avg = 3000;
    assert_eq!(s.wake_affine_weight(117, P, CpuId(0), CpuId(2), false), None);
}

#[test]
fn wake_affine_weight_wa_bias_favours_prev_on_a_tie() {
    // Equal loads: this = (L + t) * 100, prev = (L + t - t) * 108: this loses with WA_BIAS...
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    s.rqs[0].cfs_avg.load_avg = 1000;
    s.rqs[2].cfs_avg.load_avg = 1100;
    s.tasks[0].avg.load_avg = 100;
    // this_eff = (1000 + 100) * 100 = 110000; prev_eff = (1100 - 100) * 108 = 108000: prev.
    assert_eq!(s.wake_affine_weight(117, P, CpuId(0), CpuId(2), false), None);
    // ...and wins without it: 1100 vs 1000 still prev; make this lighter by 1.
    s.features.set(Feat::WA_BIAS, false);
    s.rqs[0].cfs_avg.load_avg = 899;
    assert_eq!(s.wake_affine_weight(117, P, CpuId(0), CpuId(2), false), Some(CpuId(0)));
}

#[test]
fn wake_affine_weight_sync_waker_heavier_than_its_cpu_takes_this() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    s.rqs[0].cfs_avg.load_avg = 500;
    s.tasks[1].avg.load_avg = 600;
    s.rqs[2].cfs_avg.load_avg = 0;
    assert_eq!(s.wake_affine_weight(117, P, CpuId(0), CpuId(2), true), Some(CpuId(0)));
}

#[test]
fn wake_affine_resolves_no_decision_to_prev() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 2, 2);
    s.rqs[0].cfs_avg.load_avg = 5000;
    let sd = *s.domains.chain(CpuId(0)).last().unwrap();
    assert_eq!(s.wake_affine(sd, P, CpuId(0), CpuId(2), false), CpuId(2));
}

#[test]
fn sis_idle_target_is_taken() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Target);
}

#[test]
fn sis_idle_prev_sharing_llc_is_taken() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(1));
    assert_eq!(c.path, PlacePath::Prev);
}

#[test]
fn sis_takes_prev_running_only_a_sched_idle_task_as_idle() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    // Without SCHED_IDLE: both busy, no idle CPU in the way.
    assert!(!s.sched_idle_cpu(CpuId(1)));
    // CPU 1 runs only a SCHED_IDLE task: sched_idle_cpu, taken as prev.
    s.tasks[2].policy = crate::workload::SchedPolicy::Idle;
    s.rqs[1].cfs.h_nr_idle = 1;
    assert!(s.sched_idle_cpu(CpuId(1)));
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(1));
    assert_eq!(c.path, PlacePath::Prev);
    // A normal task queued behind it: no longer.
    s.rqs[1].nr_running = 2;
    assert!(!s.sched_idle_cpu(CpuId(1)));
}

#[test]
fn sis_recent_used_cpu_is_taken_and_replaced_by_prev() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(5);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(5));
    assert_eq!(c.path, PlacePath::Recent);
    assert_eq!(s.tasks[0].recent_used_cpu, CpuId(1));
}

#[test]
fn sis_per_cpu_kthread_waker_stacks_on_prev() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    s.tasks[1].kthread = true;
    busy(&mut s, 1, 2);
    busy(&mut s, 4, 3);
    s.rqs[5].nr_running = 1;
    s.rqs[5].curr = Some(TaskId(3));
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::KthreadStack);
}

#[test]
fn sis_idle_core_preferred_over_idle_sibling_of_busy_core() {
    // LLC 0: core 0 = {0,4}, core 1 = {1,5}. CPU 0 busy: CPU 4 is idle but its
    // core is not; core 1 is wholly idle. With has_idle_cores, core 1 wins.
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!(got, CpuId(1));
    assert_eq!(c.path, PlacePath::IdleCore);
}

#[test]
fn sis_no_whole_idle_core_clears_has_idle_cores_and_returns_first_idle_cpu() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert!(got == CpuId(4) || got == CpuId(5), "{got:?}");
    assert!(!s.fair.llc[0].has_idle_cores);
}

#[test]
fn sis_select_idle_smt_takes_prevs_idle_sibling_when_no_idle_core() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].has_idle_cores = false;
    s.fair.llc[0].nr_idle_scan = 0;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(5));
    assert_eq!(c.path, PlacePath::IdleSmt);
}

#[test]
fn sis_util_zero_depth_does_not_scan() {
    let mut s = sim_from_toml(CLUSTERS, 4, Features::mainline());
    busy(&mut s, 0, 1);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 0;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Fallback);
    assert_eq!(c.scanned, 0);
}

#[test]
fn sis_util_depth_limits_the_scan() {
    // CPUs 1..=3 busy, 4 idle; target 0; cluster {0-3} first: depth 2 sees 1, 2 only.
    let mut s = sim_from_toml(CLUSTERS, 8, Features::mainline());
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 2;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.scanned, 2);
    s.fair.llc[0].nr_idle_scan = 8;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!(c.path, PlacePath::IdleCpu);
}

#[test]
fn sis_cluster_scanned_before_rest_of_llc_wrapping_from_target_plus_one() {
    // Target 2 busy; idle: 1 (same cluster) and 3? busy. Cluster {0-3} scanned
    // from 3: 3 busy, 0 busy, 1 idle -> 1, though 4..7 are idle too.
    let mut s = sim_from_toml(CLUSTERS, 8, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 2, 2);
    busy(&mut s, 3, 3);
    s.tasks[0].recent_used_cpu = CpuId(2);
    s.fair.llc[0].nr_idle_scan = 8;
    let mut c = wake_ctx(2);
    assert_eq!(s.select_idle_sibling(P, CpuId(2), CpuId(2), &mut c, false), CpuId(1));
    assert_eq!(c.scanned, 3);
}

#[test]
fn wake_wide_detects_one_to_many_wider_than_llc() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    s.tasks[1].wakee_flips = 64;
    s.tasks[0].wakee_flips = 4;
    assert!(s.wake_wide(P, Some(TaskId(1)), CpuId(0)));
    s.tasks[0].wakee_flips = 3;
    assert!(!s.wake_wide(P, Some(TaskId(1)), CpuId(0)), "slave below llc size");
}

#[test]
fn select_task_rq_single_allowed_cpu_is_forced() {
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    s.tasks[0].allowed = crate::cpumask::CpuMask::from_cpus([CpuId(6)]);
    s.tasks[0].nr_cpus_allowed = 1;
    let (cpu, path, _) = s.select_task_rq(P, CpuId(0), crate::engine::core::WF_TTWU, CpuId(0));
    assert_eq!((cpu, path), (CpuId(6), PlacePath::Forced));
}

#[test]
fn select_task_rq_fair_affine_wakeup_moves_to_idle_waker_llc() {
    // Waker on CPU 0 (LLC 0), prev 2 (LLC 1) busy, WA_IDLE: waker's CPU is
    // busy (the waker runs), sync with one task -> this CPU's LLC; then
    // select_idle_sibling finds an idle CPU there.
    let mut s = sim_from_toml(SMT_2LLC, 4, Features::mainline());
    busy(&mut s, 0, 1);
    busy(&mut s, 2, 2);
    s.tasks[0].cpu = CpuId(2);
    s.fair.llc[0].nr_idle_scan = 4;
    let (cpu, _, _) =
        s.select_task_rq(P, CpuId(2), crate::engine::core::WF_TTWU | crate::engine::core::WF_SYNC, CpuId(0));
    assert!(s.machine.cpus_share_cache(cpu, CpuId(0)), "{cpu:?}");
    assert_ne!(cpu, CpuId(0));
}

#[test]
fn sis_prop_budget_is_half_avg_idle_at_wakeup_and_halves_per_jiffy() {
    // v5.12..v5.19: ttwu sets wake_avg_idle = avg_idle / 2; select_idle_cpu's
    // depth is llc_weight * wake_avg_idle / avg_scan_cost (at least 4), and
    // the budget halves for every jiffy since it was set.
    let mut s = sim_from_toml(SMT_2LLC, 4, crate::policy::parse_policy("v5.9").unwrap().features);
    s.now = 10 * s.tick_ns;
    s.rqs[0].idle_stamp = s.now - 400_000;
    s.rqs[0].avg_idle = 400_000;
    s.update_rq_avg_idle(CpuId(0));
    assert_eq!(s.rqs[0].wake_avg_idle, 200_000);
    s.rqs[0].avg_scan_cost = 9_999; // + 1 in the formula: 10 us per scan
    assert_eq!(s.sis_prop_budget(CpuId(0), 4), 4 * 200_000 / 10_000);
    s.now += 2 * s.tick_ns;
    assert_eq!(s.sis_prop_budget(CpuId(0), 4), 4 * 50_000 / 10_000);
    assert_eq!(s.rqs[0].wake_avg_idle, 50_000);
}

#[test]
fn inherited_flips_list_decides_wake_wide_per_task() {
    // hackbench's tasks (receivers r0 r1, then senders s0 s1, the native
    // program's fork order) with the count each inherited at its fork. The
    // LLC has 4 CPUs (sd_llc_size). Sender s0 wakes both receivers from CPU
    // 0 (LLC 0); both last ran on idle CPU 2 (LLC 1). r0 inherited 2, below
    // the LLC size: wake_wide() is false and wake_affine pulls r0 into the
    // waker's LLC. r1 inherited 9 and s0 64 >= 9 x 4: the wakeup is wide,
    // there is no affine step, and r1 stays on its idle prev.
    use crate::engine::core::{WF_SYNC, WF_TTWU};
    use crate::testkit::{machine_from_toml, sim_config, sim_with};
    let m = machine_from_toml(SMT_2LLC);
    let spec = "hackbench:groups=1,fds=2,parent_wakee_flips=2;9;64;64";
    let w = crate::workload::spec::build_workload(spec, "spec", "test", &m).unwrap();
    let mut s = sim_with(SMT_2LLC, &w, sim_config(Features::mainline()));
    let flips: Vec<u32> = s.tasks.iter().take(4).map(|t| t.wakee_flips).collect();
    assert_eq!(flips, [2, 9, 64, 64]);
    let (r0, r1, s0) = (TaskId(0), TaskId(1), TaskId(2));
    busy(&mut s, 0, s0.0);
    s.fair.llc[0].nr_idle_scan = 4;
    for r in [r0, r1] {
        s.tasks[r.idx()].cpu = CpuId(2);
    }
    assert!(!s.wake_wide(r0, Some(s0), CpuId(0)), "2 < sd_llc_size 4");
    assert!(s.wake_wide(r1, Some(s0), CpuId(0)), "9 >= 4 and 64 >= 9 x 4");
    let (cpu, _, _) = s.select_task_rq(r0, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert!(s.machine.cpus_share_cache(cpu, CpuId(0)), "r0 pulled to the waker's LLC, got {cpu:?}");
    let (cpu, _, _) = s.select_task_rq(r1, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert_eq!(cpu, CpuId(2), "r1 stays on its previous CPU");
}
