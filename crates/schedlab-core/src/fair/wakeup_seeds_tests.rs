//! Decision tests for the wakeup seed features (`fair/wakeup_seeds.rs`):
//! each builds a machine state by hand and checks the CPU chosen with the
//! feature off (mainline) and on; then one end-to-end run per feature.

use crate::cpumask::CpuMask;
use crate::engine::build::SimConfig;
use crate::engine::core::{WF_SYNC, WF_TTWU};
use crate::engine::Sim;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId};
use crate::policy::ClassKind;
use crate::topology::{build_sched_domains, parse_machine};
use crate::trace::PlacePath;
use crate::workload::{Action, PrimaryMetric, Program, Script, StartKind, TaskSpec, Workload};

use super::wakeup::WakeCtx;

fn machine(name: &str, llcs: u32, clusters: u32, cores: u32, threads: u32) -> String {
    format!(
        r#"
[machine]
name = "{name}"
[topology]
packages = 1
nodes_per_package = 1
llcs_per_node = {llcs}
clusters_per_llc = {clusters}
cores_per_cluster = {cores}
threads_per_core = {threads}
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
smt_speed_pct = 60
"#
    )
}

/// 2 LLCs x 2 cores x 2 threads; core c = CPUs {c, c+4}; LLC 0 = {0,1,4,5}, LLC 1 = {2,3,6,7}.
fn smt_2llc() -> String {
    machine("smt-2llc", 2, 1, 2, 2)
}

/// 8 CPUs, no SMT, one LLC, clusters {0-3} and {4-7}.
fn clusters() -> String {
    machine("clusters", 1, 2, 4, 1)
}

/// 8 CPUs, no SMT, LLCs {0-3} and {4-7}.
fn nosmt_2llc() -> String {
    machine("nosmt-2llc", 2, 1, 4, 1)
}

/// One LLC, 2 clusters x 2 cores x 2 threads: core c = {c, c+4}; cluster 0 = {0,1,4,5}.
fn smt_clusters() -> String {
    machine("smt-clusters", 1, 2, 2, 2)
}

fn sim_with(toml: &str, ntasks: usize, features: Features, preferred: Option<CpuMask>) -> Sim {
    let m = parse_machine(toml, "toml", "test").unwrap();
    let d = build_sched_domains(&m).unwrap();
    let tasks = (0..ntasks)
        .map(|i| TaskSpec {
            name: format!("t{i}"),
            program: Program::Script(Script::new(vec![Action::Compute(1_000_000)], 1)),
            nice: 0,
            allowed: None,
            preferred: if i == 0 { preferred } else { None },
            footprint_kib: 0,
            start_ns: 0,
            start: StartKind::Wake { prev_cpu: 0 },
            kthread: false,
        })
        .collect();
    let w = Workload {
        name: "test".into(),
        tasks,
        chans: vec![],
        barriers: vec![],
        duration_ns: None,
        warmup_ns: 0,
        primary: PrimaryMetric::CompletionTime,
    };
    let cfg =
        SimConfig { features, class: ClassKind::Fair, seed: 1, trace: false, check_invariants: false, cpuset: None };
    Sim::build(m, d, &w, cfg).unwrap()
}

fn sim(toml: &str, ntasks: usize) -> Sim {
    sim_with(toml, ntasks, Features::mainline(), None)
}

/// Make `cpu` busy running task `t`, as a tick would see it (out of the idle mask).
fn busy(s: &mut Sim, cpu: u32, t: u32) {
    s.rqs[cpu as usize].curr = Some(TaskId(t));
    s.rqs[cpu as usize].nr_running = 1;
    s.rqs[cpu as usize].cfs.h_nr_runnable = 1;
    s.tasks[t as usize].cpu = CpuId(cpu);
    let l = s.llc_of(CpuId(cpu));
    s.llc[l].idle_mask.clear(CpuId(cpu));
}

fn ctx(this: u32) -> WakeCtx {
    WakeCtx { this_cpu: CpuId(this), path: PlacePath::Fallback, scanned: 0 }
}

fn on(s: &mut Sim, f: Feat) {
    s.features.set(f, true);
}

const P: TaskId = TaskId(0);

// ---- prefer_prev_idle_core (idea 2) ----

#[test]
fn is_idle_core_needs_every_sibling_idle_and_is_plain_idle_without_smt() {
    let mut s = sim(&smt_2llc(), 4);
    busy(&mut s, 4, 1);
    assert!(s.available_idle_cpu(CpuId(0)));
    assert!(!s.is_idle_core(CpuId(0)), "sibling 4 busy");
    assert!(s.is_idle_core(CpuId(1)));
    let mut s = sim(&clusters(), 4);
    busy(&mut s, 1, 1);
    assert!(s.is_idle_core(CpuId(0)));
    assert!(!s.is_idle_core(CpuId(1)));
}

#[test]
fn prefer_prev_idle_core_fast_path_keeps_task_on_idle_prev_core_across_llc() {
    // Waker on CPU 0 (LLC 0) wakes sync with one task: wake_affine picks CPU 0.
    // prev = 2 (LLC 1) is a wholly idle core. Mainline searches LLC 0.
    let mut s = sim(&smt_2llc(), 4);
    busy(&mut s, 0, 1);
    s.tasks[0].cpu = CpuId(2);
    s.llc[0].nr_idle_scan = 4;
    let (cpu, _, _) = s.select_task_rq(P, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert!(s.machine.cpus_share_cache(cpu, CpuId(0)), "mainline: {cpu:?}");
    on(&mut s, Feat::prefer_prev_idle_core);
    let (cpu, path, _) = s.select_task_rq(P, CpuId(2), WF_TTWU | WF_SYNC, CpuId(0));
    assert_eq!((cpu, path), (CpuId(2), PlacePath::Prev));
}

#[test]
fn prefer_prev_idle_core_fast_path_ignores_idle_prev_whose_sibling_is_busy() {
    // prev 2's sibling 6 is busy: not an idle core, so no fast-path pick.
    let mut s = sim(&smt_2llc(), 4);
    on(&mut s, Feat::prefer_prev_idle_core);
    busy(&mut s, 0, 1);
    busy(&mut s, 6, 2);
    s.llc[0].nr_idle_scan = 4;
    let mut c = ctx(0);
    assert_eq!(s.select_task_rq_seeds(P, CpuId(2), &mut c), None);
    let mut c = ctx(0);
    assert_eq!(s.select_task_rq_seeds(P, CpuId(3), &mut c), Some(CpuId(3)));
}

#[test]
fn prefer_prev_idle_core_checks_recent_idle_core_before_idle_smt_target() {
    // Target 0 is idle but its sibling 4 is busy; recent 1's core {1,5} is idle.
    let mut s = sim(&smt_2llc(), 4);
    busy(&mut s, 4, 1);
    s.tasks[0].recent_used_cpu = CpuId(1);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Target);
    on(&mut s, Feat::prefer_prev_idle_core);
    s.tasks[0].recent_used_cpu = CpuId(1);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(1));
    assert_eq!(c.path, PlacePath::Recent);
    assert_eq!(s.tasks[0].recent_used_cpu, CpuId(0), "prev replaces recent");
}

#[test]
fn prefer_prev_idle_core_takes_idle_core_target_only_on_sync_wakeup() {
    // Target 0's core is idle; prev 1 busy; CPU 4 (target's sibling) and core
    // {1,5}'s 5 idle. Mainline takes the idle target either way.
    let mut s = sim(&smt_2llc(), 4);
    busy(&mut s, 1, 1);
    s.tasks[0].recent_used_cpu = CpuId(1);
    s.llc[0].has_idle_cores = true;
    s.llc[0].nr_idle_scan = 4;
    let mut c = ctx(3);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false), CpuId(0));
    on(&mut s, Feat::prefer_prev_idle_core);
    let mut c = ctx(3);
    assert_eq!(s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, true), CpuId(0));
    assert_eq!(c.path, PlacePath::Target);
    // Non-sync: the target is skipped; the idle-core search from CPU 1 finds
    // core {0,4} at CPU 4 (iteration order 1, 4, ...).
    let mut c = ctx(3);
    let got = s.select_idle_sibling(P, CpuId(1), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(4), PlacePath::IdleCore));
}

// ---- llc_idle_mask (idea 4) ----

#[test]
fn llc_idle_mask_scan_visits_only_masked_cpus() {
    // CPUs 0-3 busy (ticked, out of the mask), 4 idle: mainline scans 1, 2, 3, 4.
    let mut s = sim(&clusters(), 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 8;
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!(c.scanned, 5, "cluster 1, 2, 3, 0, then 4");
    on(&mut s, Feat::llc_idle_mask);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!((c.scanned, c.path), (1, PlacePath::IdleCpu));
}

#[test]
fn llc_idle_mask_finds_idle_cpu_beyond_sis_util_depth() {
    // Depth 2 (nr = 3) sees only busy 1 and 2 in mainline: fallback to the target.
    let mut s = sim(&clusters(), 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 2;
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.path, PlacePath::Fallback);
    on(&mut s, Feat::llc_idle_mask);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
}

#[test]
fn llc_idle_mask_stale_busy_cpu_is_still_visited() {
    // CPU 1 became busy after its last tick: still in the mask, visited and
    // counted; CPUs 2, 3 ticked busy and are skipped.
    let mut s = sim(&clusters(), 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.llc[0].idle_mask.set(CpuId(1));
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 8;
    on(&mut s, Feat::llc_idle_mask);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    assert_eq!(c.scanned, 2);
}

#[test]
fn llc_idle_mask_engine_keeps_idle_cpus_in_mask_and_clears_ticked_busy_ones() {
    // Run a workload partway: every idle CPU is in its LLC's mask, and some
    // CPU busy across a tick has left it.
    let m = parse_machine(&smt_2llc(), "toml", "test").unwrap();
    let w = crate::workload::build_workload("workqueue:threads=4,chunks=400", "spec", "workload", &m).unwrap();
    let d = build_sched_domains(&m).unwrap();
    let mut f = Features::mainline();
    f.set(Feat::llc_idle_mask, true);
    let cfg =
        SimConfig { features: f, class: ClassKind::Fair, seed: 3, trace: false, check_invariants: true, cpuset: None };
    let mut s = Sim::build(m, d, &w, cfg).unwrap();
    let mut cleared = 0;
    for step in 1..=20u64 {
        s.run(step * 5_000_000).unwrap();
        for cpu in 0..s.rqs.len() {
            let c = CpuId(cpu as u32);
            let inm = s.llc[s.llc_of(c)].idle_mask.test(c);
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
    let mut s = sim(&clusters(), 8);
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 0;
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!((c.path, c.scanned), (PlacePath::Fallback, 0));
    on(&mut s, Feat::sis_cluster_first);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(2));
    assert_eq!((c.path, c.scanned), (PlacePath::IdleCpu, 2));
}

#[test]
fn sis_cluster_first_takes_idle_smt_cpu_in_cluster_before_idle_core_elsewhere() {
    // Cluster 0 = {0,1,4,5}: 0 and 1 busy, so 4 and 5 are idle CPUs of busy
    // cores; cluster 1 is wholly idle. Mainline's idle-core search leaves the
    // cluster for core {2,6}; the RFC returns CPU 4 at once.
    let mut s = sim(&smt_clusters(), 8);
    assert_eq!(s.machine.cluster_mask(CpuId(0)).to_list_string(), "0-1,4-5");
    busy(&mut s, 0, 1);
    busy(&mut s, 1, 2);
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].has_idle_cores = true;
    s.llc[0].nr_idle_scan = 8;
    let mut c = ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(2), PlacePath::IdleCore));
    on(&mut s, Feat::sis_cluster_first);
    s.llc[0].has_idle_cores = true;
    let mut c = ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(4), PlacePath::IdleCpu));
}

// ---- idler_llc (idea 4) ----

#[test]
fn idler_llc_prefers_llc_with_idle_core() {
    let mut s = sim(&smt_2llc(), 4);
    s.llc[0].has_idle_cores = false;
    s.llc[1].has_idle_cores = true;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(0)), CpuId(0), "feature off");
    on(&mut s, Feat::idler_llc);
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(0)), CpuId(2));
    s.llc[0].has_idle_cores = true;
    s.llc[1].has_idle_cores = false;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(2), CpuId(2)), CpuId(0));
    // Same LLC: no opinion.
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(1), CpuId(1)), CpuId(1));
}

#[test]
fn idler_llc_without_idle_cores_takes_llc_with_more_idle_cpus() {
    let mut s = sim(&nosmt_2llc(), 4);
    s.llc[0].nr_busy_cpus = 3;
    s.llc[1].nr_busy_cpus = 1;
    on(&mut s, Feat::idler_llc);
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(0)), CpuId(4));
    s.llc[1].nr_busy_cpus = 3;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(0)), CpuId(0), "tie keeps wake_affine's pick");
    s.llc[0].nr_busy_cpus = 0;
    assert_eq!(s.wake_idler_llc(CpuId(0), CpuId(4), CpuId(4)), CpuId(0));
}

#[test]
fn idler_llc_in_select_task_rq_moves_sync_wakee_to_idler_llc() {
    // Waker on CPU 0 (LLC 0, 3 of 4 CPUs busy), prev 4 (LLC 1, all idle
    // but 4): wake_affine takes the waker's LLC (sync, one task).
    let mut s = sim(&nosmt_2llc(), 8);
    for c in 0..3 {
        busy(&mut s, c, c + 1);
    }
    busy(&mut s, 4, 4);
    s.llc[0].nr_busy_cpus = 3;
    s.llc[1].nr_busy_cpus = 1;
    s.tasks[0].cpu = CpuId(4);
    s.llc[0].nr_idle_scan = 4;
    s.llc[1].nr_idle_scan = 4;
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
    let mut s = sim(&clusters(), 8);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 8;
    s.rqs[0].avg_idle = 3 * s.machine.cost.scan_ns_per_cpu;
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    on(&mut s, Feat::sis_time_limit);
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!((c.path, c.scanned), (PlacePath::Fallback, 3));
    s.rqs[0].avg_idle = 0;
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(0));
    assert_eq!(c.scanned, 0);
}

#[test]
fn sis_time_limit_long_avg_idle_and_idle_core_scan_are_not_limited() {
    let mut s = sim(&clusters(), 8);
    on(&mut s, Feat::sis_time_limit);
    for c in 0..4 {
        busy(&mut s, c, c + 1);
    }
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].nr_idle_scan = 8;
    // Default avg_idle (2 x migration cost = 1 ms) covers the LLC many times.
    let mut c = ctx(0);
    assert_eq!(s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false), CpuId(4));
    // Idle-core scan (SMT): not limited, like SIS_UTIL.
    let mut s = sim(&smt_2llc(), 4);
    on(&mut s, Feat::sis_time_limit);
    busy(&mut s, 0, 1);
    s.rqs[0].avg_idle = 0;
    s.tasks[0].recent_used_cpu = CpuId(0);
    s.llc[0].has_idle_cores = true;
    s.llc[0].nr_idle_scan = 4;
    let mut c = ctx(0);
    let got = s.select_idle_sibling(P, CpuId(0), CpuId(0), &mut c, false);
    assert_eq!((got, c.path), (CpuId(1), PlacePath::IdleCore));
}

// ---- soft_affinity ----

#[test]
fn soft_affinity_moves_wakee_to_idle_preferred_cpu() {
    let pref = CpuMask::from_cpus([CpuId(6), CpuId(7)]);
    let mut s = sim_with(&smt_2llc(), 4, Features::mainline(), Some(pref));
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
    let mut s = sim_with(&smt_2llc(), 4, f, Some(pref));
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
    let m = parse_machine(&smt_2llc(), "toml", "test").unwrap();
    let d = build_sched_domains(&m).unwrap();
    let mut w = crate::workload::build_workload("workqueue:threads=2,chunks=4", "spec", "workload", &m).unwrap();
    w.tasks[0].allowed = Some(CpuMask::from_cpus([CpuId(0), CpuId(1)]));
    w.tasks[0].preferred = Some(CpuMask::from_cpus([CpuId(1), CpuId(2)]));
    w.tasks[1].preferred = Some(CpuMask::from_cpus([CpuId(2)]));
    w.tasks[1].allowed = Some(CpuMask::from_cpus([CpuId(3)]));
    let cfg = SimConfig {
        features: Features::mainline(),
        class: ClassKind::Fair,
        seed: 1,
        trace: false,
        check_invariants: false,
        cpuset: None,
    };
    let s = Sim::build(m, d, &w, cfg).unwrap();
    assert_eq!(s.tasks[0].preferred, Some(CpuMask::from_cpus([CpuId(1)])));
    assert_eq!(s.tasks[1].preferred, None);
}

// ---- end to end: each `eevdf+<feature>` policy runs with invariants checked ----

fn e2e(policy: &str, workload: &str) -> crate::api::RunResult {
    let spec = crate::api::RunSpec {
        // 2 LLCs x 2 clusters x 2 cores x 2 threads: every feature has something to act on.
        machine: crate::api::MachineSource {
            text: machine("e2e", 2, 2, 2, 2),
            format: "toml".into(),
            origin: "inline".into(),
        },
        workload: workload.into(),
        workload_format: "spec".into(),
        policy: policy.into(),
        seed: 5,
        options: crate::api::RunOptions { trace: false, check_invariants: true, max_time_ns: 0 },
    };
    crate::api::run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

fn metric(r: &crate::api::RunResult, name: &str) -> f64 {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
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
    let m = parse_machine(&smt_2llc(), "toml", "test").unwrap();
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
