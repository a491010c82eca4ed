//! Decision tests for the wakeup seed features (`fair/wakeup_seeds.rs`):
//! each builds a machine state by hand and checks the CPU chosen with the
//! feature off (mainline) and on; then one end-to-end run per feature.

use crate::cpumask::CpuMask;
use crate::engine::build::SimConfig;
use crate::engine::core::{WF_SYNC, WF_TTWU};
use crate::engine::Sim;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId};
use crate::testkit::{
    inline_source, machine_from_toml, metric, run_spec, script_tasks, script_workload, sim_config, wake_ctx, CLUSTERS,
    SMT_2LLC, TWO_LLC,
};
use crate::trace::PlacePath;
use crate::workload::Action;

/// One LLC, 2 clusters x 2 cores x 2 threads: core c = {c, c+4}; cluster 0 = {0,1,4,5}.
const SMT_CLUSTERS: &str = crate::uniform_machine_toml!("smt-clusters", 1, 2, 2, 2);

fn sim_with(toml: &str, ntasks: usize, features: Features, preferred: Option<CpuMask>) -> Sim {
    let mut tasks = script_tasks(ntasks, &[Action::Compute(1_000_000)], 1);
    if let Some(t) = tasks.first_mut() {
        t.preferred = preferred;
    }
    crate::testkit::sim_with(toml, &script_workload(tasks), sim_config(features))
}

fn sim(toml: &str, ntasks: usize) -> Sim {
    sim_with(toml, ntasks, Features::mainline(), None)
}

/// Make `cpu` busy running task `t`, as a tick would see it (out of the idle mask).
fn busy(s: &mut Sim, cpu: u32, t: u32) {
    crate::testkit::busy(s, cpu, t);
    let l = s.llc_of(CpuId(cpu));
    s.fair.llc[l].idle_mask.clear(CpuId(cpu));
}

fn on(s: &mut Sim, f: Feat) {
    s.features.set(f, true);
}

const P: TaskId = TaskId(0);

// ---- prefer_prev_idle_core (idea 2) ----

#[test]
fn is_idle_core_needs_every_sibling_idle_and_is_plain_idle_without_smt() {
    let mut s = sim(SMT_2LLC, 4);
    busy(&mut s, 4, 1);
    assert!(s.available_idle_cpu(CpuId(0)));
    assert!(!s.is_idle_core(CpuId(0)), "sibling 4 busy");
    assert!(s.is_idle_core(CpuId(1)));
    let mut s = sim(CLUSTERS, 4);
    busy(&mut s, 1, 1);
    assert!(s.is_idle_core(CpuId(0)));
    assert!(!s.is_idle_core(CpuId(1)));
}

#[test]
fn prefer_prev_idle_core_fast_path_keeps_task_on_idle_prev_core_across_llc() {
    // Waker on CPU 0 (LLC 0) wakes sync with one task: wake_affine picks CPU 0.
    // prev = 2 (LLC 1) is a wholly idle core. Mainline searches LLC 0.
    let mut s = sim(SMT_2LLC, 4);
    busy(&mut s, 0, 1);
    s.tasks[0].cpu = CpuId(2);
    s.fair.llc[0].nr_idle_scan = 4;
    let (cpu, _, _) = s.select_task_rq(P, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert!(s.machine.cpus_share_cache(cpu, CpuId(0)), "mainline: {cpu:?}");
    on(&mut s, Feat::prefer_prev_idle_core);
    let (cpu, path, _) = s.select_task_rq(P, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert_eq!((cpu, path), (CpuId(2), PlacePath::Prev));
}

#[test]
fn prefer_prev_idle_core_fast_path_ignores_idle_prev_whose_sibling_is_busy() {
    // prev 2's sibling 6 is busy: not an idle core, so no fast-path pick.
    let mut s = sim(SMT_2LLC, 4);
    on(&mut s, Feat::prefer_prev_idle_core);
    busy(&mut s, 0, 1);
    busy(&mut s, 6, 2);
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_task_rq_seeds(P, CpuId(2), &mut c), None);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_task_rq_seeds(P, CpuId(3), &mut c), Some(CpuId(3)));
}

#[test]
fn prefer_prev_idle_core_checks_recent_idle_core_before_idle_smt_target() {
    // Target 0 is idle but its sibling 4 is busy; recent 1's core {1,5} is idle.
    let mut s = sim(SMT_2LLC, 4);
    busy(&mut s, 4, 1);
    s.tasks[0].recent_used_cpu = CpuId(1);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Target);
    on(&mut s, Feat::prefer_prev_idle_core);
    s.tasks[0].recent_used_cpu = CpuId(1);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(1));
    assert_eq!(c.path, PlacePath::Recent);
    assert_eq!(s.tasks[0].recent_used_cpu, CpuId(0), "prev replaces recent");
}

#[test]
fn prefer_prev_idle_core_takes_idle_core_target_only_on_sync_wakeup() {
    // Target 0's core is idle; prev 1 busy; CPU 4 (target's sibling) and core
    // {1,5}'s 5 idle. Mainline takes the idle target either way.
    let mut s = sim(SMT_2LLC, 4);
    busy(&mut s, 1, 1);
    s.tasks[0].recent_used_cpu = CpuId(1);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(3);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(0));
    on(&mut s, Feat::prefer_prev_idle_core);
    let mut c = wake_ctx(3);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, true), CpuId(0));
    assert_eq!(c.path, PlacePath::Target);
    // Non-sync: the target is skipped; the idle-core search from CPU 1 finds
    // core {0,4} at CPU 4 (iteration order 1, 4, ...).
    let mut c = wake_ctx(3);
    let got = s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(4), PlacePath::IdleCore));
}

// ---- llc_idle_mask (idea 4) ----

#[test]
fn llc_idle_mask_scan_visits_only_masked_cpus() {
    // CPUs 0-3 busy (ticked, out of the mask), 4 idle: mainline scans 1, 2, 3, 4.
    let mut s = sim(CLUSTERS, 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 8;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!(c.scanned, 5, "cluster 1, 2, 3, 0, then 4");
    on(&mut s, Feat::llc_idle_mask);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!((c.scanned, c.path), (1, PlacePath::IdleCpu));
}

#[test]
fn llc_idle_mask_finds_idle_cpu_beyond_sis_util_depth() {
    // Depth 2 (nr = 3) sees only busy 1 and 2 in mainline: fallback to the target.
    let mut s = sim(CLUSTERS, 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 2;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Fallback);
    on(&mut s, Feat::llc_idle_mask);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
}

#[test]
fn llc_idle_mask_stale_busy_cpu_is_still_visited() {
    // CPU 1 became busy after its last tick: still in the mask, visited and
    // counted; CPUs 2, 3 ticked busy and are skipped.
    let mut s = sim(CLUSTERS, 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.fair.llc[0].idle_mask.set(CpuId(1));
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 8;
    on(&mut s, Feat::llc_idle_mask);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!(c.scanned, 2);
}

#[test]
fn llc_idle_mask_engine_keeps_idle_cpus_in_mask_and_clears_ticked_busy_ones() {
    // Run a workload partway: every idle CPU is in its LLC's mask, and some
    // CPU busy across a tick has left it.
    let m = machine_from_toml(SMT_2LLC);
    let w = crate::workload::build_workload("workqueue:threads=4,chunks=400", "spec", "workload", &m).unwrap();
    let mut f = Features::mainline();
    f.set(Feat::llc_idle_mask, true);
    let cfg = SimConfig { seed: 3, check_invariants: true, ..sim_config(f) };
    let mut s = crate::testkit::sim_with(SMT_2LLC, &w, cfg);
    let mut cleared = 0;
    for step in 1..=20u64 {
        s.run(step * 5_000_000).unwrap();
        for cpu in 0..s.rqs.len() {
            let c = CpuId(cpu as u32);
            let inm = s.fair.llc[s.llc_of(c)].idle_mask.test(c);
            if s.rqs[cpu].curr.is_none() {
                assert!(inm, "idle CPU {cpu} missing from the mask at step {step}");
            } else if !inm {
                cleared += 1;
            }
        }
    }
    assert!(cleared > 0);
}

// ---- sis_cluster_first (idea 4) ----

#[test]
fn sis_cluster_first_scans_cluster_even_when_sis_util_forbids_the_scan() {
    let mut s = sim(CLUSTERS, 8);
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 0;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!((c.path, c.scanned), (PlacePath::Fallback, 0));
    on(&mut s, Feat::sis_cluster_first);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(2));
    assert_eq!((c.path, c.scanned), (PlacePath::IdleCpu, 2));
}

#[test]
fn sis_cluster_first_takes_idle_smt_cpu_in_cluster_before_idle_core_elsewhere() {
    // Cluster 0 = {0,1,4,5}: 0 and 1 busy, so 4 and 5 are idle CPUs of busy
    // cores; cluster 1 is wholly idle. Mainline's idle-core search leaves the
    // cluster for core {2,6}; the RFC returns CPU 4 at once.
    let mut s = sim(SMT_CLUSTERS, 8);
    assert_eq!(s.machine.cluster_mask(CpuId(0)).to_list_string(), "0-1,4-5");
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 8;
    let mut c = wake_ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(2), PlacePath::IdleCore));
    on(&mut s, Feat::sis_cluster_first);
    s.fair.llc[0].has_idle_cores = true;
    let mut c = wake_ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(4), PlacePath::IdleCpu));
}

// ---- idler_llc (idea 4) ----

#[test]
fn idler_llc_prefers_llc_with_idle_core() {
    let mut s = sim(SMT_2LLC, 4);
    s.fair.llc[0].has_idle_cores = false;
    s.fair.llc[1].has_idle_cores = true;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(0)), CpuId(0), "feature off");
    on(&mut s, Feat::idler_llc);
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(0)), CpuId(2));
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[1].has_idle_cores = false;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(2)), CpuId(0));
    // Same LLC: no opinion.
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(1), CpuId(1)), CpuId(1));
}

#[test]
fn idler_llc_without_idle_cores_takes_llc_with_more_idle_cpus() {
    let mut s = sim(TWO_LLC, 4);
    s.fair.llc[0].nr_busy_cpus = 3;
    s.fair.llc[1].nr_busy_cpus = 1;
    on(&mut s, Feat::idler_llc);
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(0)), CpuId(4));
    s.fair.llc[1].nr_busy_cpus = 3;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(0)), CpuId(0), "tie keeps wake_affine's pick");
    s.fair.llc[0].nr_busy_cpus = 0;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(4)), CpuId(0));
}

#[test]
fn idler_llc_in_select_task_rq_moves_sync_wakee_to_idler_llc() {
    // Waker on CPU 0 (LLC 0, 3 of 4 CPUs busy), prev 4 (LLC 1, all idle
    // but 4): wake_affine takes the waker's LLC (sync, one task).
    let mut s = sim(TWO_LLC, 8);
    for c in 0..3 {
        busy(&mut s, c, c + 1);
    }
    busy(&mut s, 4, 4);
    s.fair.llc[0].nr_busy_cpus = 3;
    s.fair.llc[1].nr_busy_cpus = 1;
    s.tasks[0].cpu = CpuId(4);
    s.fair.llc[0].nr_idle_scan = 4;
    s.fair.llc[1].nr_idle_scan = 4;
    let (cpu, _, _) = s.select_task_rq(P, CpuId(4), WF_TTWU | WF_SYNC, CpuId(0));
    assert_eq!(cpu, CpuId(3), "mainline: the idle CPU of the waker's LLC");
    on(&mut s, Feat::idler_llc);
    let (cpu, _, _) = s.select_task_rq(P, CpuId(4), WF_TTWU | WF_SYNC, CpuId(0));
    assert_eq!(s.llc_of(cpu), 1, "{cpu:?}");
    assert_ne!(cpu, CpuId(4));
}

// ---- sis_time_limit (idea 4) ----

#[test]
fn sis_time_limit_stops_scan_when_waker_avg_idle_is_short() {
    // 20 ns per CPU scanned; waker avg_idle 60 ns: at most 3 CPUs (1, 2, 3, all busy).
    let mut s = sim(CLUSTERS, 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 8;
    s.rqs[0].avg_idle = 3 * s.machine.cost.scan_ns_per_cpu;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    on(&mut s, Feat::sis_time_limit);
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!((c.path, c.scanned), (PlacePath::Fallback, 3));
    s.rqs[0].avg_idle = 0;
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.scanned, 0);
}

#[test]
fn sis_time_limit_long_avg_idle_and_idle_core_scan_are_not_limited() {
    let mut s = sim(CLUSTERS, 8);
    on(&mut s, Feat::sis_time_limit);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].nr_idle_scan = 8;
    // Default avg_idle (2 x migration cost = 1 ms) covers the LLC many times.
    let mut c = wake_ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    // Idle-core scan (SMT): not limited, like SIS_UTIL.
    let mut s = sim(SMT_2LLC, 4);
    on(&mut s, Feat::sis_time_limit);
    busy(&mut s, 0, 1);
    s.rqs[0].avg_idle = 0;
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.fair.llc[0].has_idle_cores = true;
    s.fair.llc[0].nr_idle_scan = 4;
    let mut c = wake_ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(1), PlacePath::IdleCore));
}

// ---- soft_affinity ----

#[test]
fn soft_affinity_moves_wakee_to_idle_preferred_cpu() {
    let pref = CpuMask::from_cpus([CpuId(6), CpuId(7)]);
    let mut s = sim_with(SMT_2LLC, 4, Features::mainline(), Some(pref));
    assert_eq!(s.tasks[0].preferred, Some(pref));
    let (cpu, path, _) = s.select_task_rq(P, CpuId(0), WF_TTWU, CpuId(0));
    assert_eq!((cpu, path), (CpuId(0), PlacePath::Target));
    on(&mut s, Feat::soft_affinity);
    let (cpu, path, scanned) = s.select_task_rq(P, CpuId(0), WF_TTWU, CpuId(0));
    assert_eq!((cpu, path, scanned), (CpuId(6), PlacePath::IdleCpu, 1));
    // An idle preferred prev stays.
    let (cpu, path, _) = s.select_task_rq(P, CpuId(7), WF_TTWU, CpuId(7));
    assert_eq!((cpu, path), (CpuId(7), PlacePath::Prev));
}

#[test]
fn soft_affinity_spills_to_allowed_cpus_when_preferred_are_busy() {
    let pref = CpuMask::from_cpus([CpuId(6), CpuId(7)]);
    let mut f = Features::mainline();
    f.set(Feat::soft_affinity, true);
    let mut s = sim_with(SMT_2LLC, 4, f, Some(pref));
    busy(&mut s, 6, 1);
    busy(&mut s, 7, 2);
    let (cpu, path, scanned) = s.select_task_rq(P, CpuId(0), WF_TTWU, CpuId(0));
    assert_eq!((cpu, path, scanned), (CpuId(0), PlacePath::Target, 2));
    // Tasks without a preference are untouched.
    let (cpu, _, scanned) = s.select_task_rq(TaskId(3), CpuId(1), WF_TTWU, CpuId(1));
    assert_eq!((cpu, scanned), (CpuId(1), 0));
}

#[test]
fn soft_affinity_preference_outside_allowed_is_dropped_at_build() {
    let m = machine_from_toml(SMT_2LLC);
    let mut w = crate::workload::build_workload("workqueue:threads=2,chunks=4", "spec", "workload", &m).unwrap();
    w.tasks[0].allowed = Some(CpuMask::from_cpus([CpuId(0), CpuId(1)]));
    w.tasks[0].preferred = Some(CpuMask::from_cpus([CpuId(1), CpuId(2)]));
    w.tasks[1].preferred = Some(CpuMask::from_cpus([CpuId(2)]));
    w.tasks[1].allowed = Some(CpuMask::from_cpus([CpuId(3)]));
    let s = crate::testkit::sim_with(SMT_2LLC, &w, sim_config(Features::mainline()));
    assert_eq!(s.tasks[0].preferred, Some(CpuMask::from_cpus([CpuId(1)])));
    assert_eq!(s.tasks[1].preferred, None);
}

// ---- end to end: each `eevdf+<feature>` policy runs with invariants checked ----

fn e2e(policy: &str, workload: &str) -> crate::api::RunResult {
    // 2 LLCs x 2 clusters x 2 cores x 2 threads: every feature has something to act on.
    let machine = crate::uniform_machine_toml!("e2e", 2, 2, 2, 2);
    let spec = run_spec(inline_source(machine), workload, policy, 5, false);
    crate::api::run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

#[test]
fn e2e_every_seed_wakeup_feature_runs() {
    let w = "workqueue:threads=6,chunks=300";
    let base = e2e("eevdf", w);
    assert!(metric(&base, "completion_time_s") > 0.0);
    for f in ["prefer_prev_idle_core", "llc_idle_mask", "sis_cluster_first", "idler_llc", "sis_time_limit"] {
        let r = e2e(&format!("eevdf+{f}"), w);
        assert!(metric(&r, "completion_time_s") > 0.0, "{f}");
        assert!(metric(&r, "scanned_per_wakeup_mean") >= 0.0, "{f}");
    }
}

#[test]
fn e2e_soft_affinity_runs_with_preferred_spec_key() {
    let m = machine_from_toml(SMT_2LLC);
    let w = crate::workload::build_workload("sieve:threads=2,preferred=0-1;4", "spec", "workload", &m).unwrap();
    assert!(w.tasks.iter().all(|t| t.preferred.unwrap().to_list_string() == "0-1,4"));
    assert!(w.name.ends_with(",preferred=0-1;4"), "{}", w.name);
    assert!(crate::workload::build_workload("sieve:threads=2,preferred=0-99", "spec", "workload", &m).is_err());
    let w = "hackbench:groups=2,fds=4,loops=20,preferred=0-3";
    let r = e2e("eevdf+soft_affinity", w);
    assert!(metric(&r, "completion_time_s") > 0.0);
    let r = e2e("eevdf+soft_affinity", "hackbench:groups=2,fds=4,loops=20");
    assert!(metric(&r, "completion_time_s") > 0.0);
}

#[test]
fn e2e_prefer_prev_idle_core_takes_prev_more_often() {
    // The seed idea 2 setting in small: half as many workers as hardware threads.
    let w = "workqueue:threads=50%,chunks=400";
    let base = e2e("eevdf", w);
    let r = e2e("eevdf+prefer_prev_idle_core", w);
    assert!(metric(&r, "place_prev") >= metric(&base, "place_prev"));
}
