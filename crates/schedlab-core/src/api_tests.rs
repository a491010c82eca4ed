//! Composed runs through `api::run`, invariants checked.

use super::*;
use crate::testkit::{inline_source, metric, run_spec, SMT_2LLC};

fn composed(workloads: &[&str], seed: u64) -> RunSpec {
    let mut spec = run_spec(inline_source(SMT_2LLC), workloads[0], "eevdf", seed, false);
    spec.extra_workloads = workloads[1..]
        .iter()
        .map(|w| WorkloadSource { text: w.to_string(), format: "spec".into(), origin: "workload".into() })
        .collect();
    spec
}

fn names(r: &RunResult) -> Vec<&str> {
    r.metrics.iter().map(|m| m.name.as_str()).collect()
}

#[test]
fn hackbench_with_kworkers_ends_when_hackbench_ends() {
    let r = run(&composed(&["hackbench:groups=1,fds=4,loops=20", "kworkers:period=4ms"], 1)).unwrap();
    assert_eq!(r.workloads.len(), 2);
    assert_eq!(r.workload, r.workloads.join(" + "));
    let t = metric(&r, "completion_time_s");
    assert!(t > 0.0 && r.sim_time_ns as f64 <= t * 1e9 + 1.0, "ended at {} for completion {t}", r.sim_time_ns);
    // Fair kworkers: no RT time; noise adds no metric of its own (the
    // machine's, idle residency per state, are not a part's).
    assert_eq!(metric(&r, "rt_pct"), 0.0);
    let machine_wide = |n: &str| n.starts_with("wakeup_latency_dist.") || n.starts_with("idle_residency.");
    assert!(names(&r).iter().all(|n| !n.contains('.') || machine_wide(n)), "{:?}", names(&r));
}

#[test]
fn a_second_benchmark_reports_under_its_prefix_and_rt_noise_shows_in_rt_pct() {
    let r = run(&composed(
        &["sieve:threads=2,work=20ms", "rt-periodic:count=2,period=10ms,runtime=2ms", "workqueue:threads=2,chunks=20"],
        2,
    ))
    .unwrap();
    assert!(metric(&r, "w3.completion_time_s") > 0.0);
    assert!(!names(&r).iter().any(|n| n.starts_with("w2.")));
    // Two RT tasks at 20% each on 8 CPUs: about 5% while they run.
    let rt = metric(&r, "rt_pct");
    assert!(rt > 1.0 && rt < 10.0, "rt_pct {rt}");
    let again = run(&composed(
        &["sieve:threads=2,work=20ms", "rt-periodic:count=2,period=10ms,runtime=2ms", "workqueue:threads=2,chunks=20"],
        2,
    ))
    .unwrap();
    assert_eq!(format!("{:?}", r.metrics), format!("{:?}", again.metrics), "same spec and seed, same result");
}

#[test]
fn irq_source_reaches_the_engine_and_noise_alone_is_an_error() {
    let r = run(&composed(&["sieve:threads=1,work=1ms", "irq:preset=pingflood,cpus=0-2"], 1)).unwrap();
    assert!(r.workloads[1].starts_with("irq:preset=pingflood"), "{}", r.workloads[1]);
    let e = run(&composed(&["kworkers", "irq"], 1)).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("only noise"), "{e}");
    let e = run(&composed(&["sieve:threads=1", "rt-periodic:priority=100"], 1)).unwrap_err();
    assert!(e.to_string().contains("workload.priority"), "{e}");
}

#[test]
fn an_interrupted_trace_keeps_its_last_events_and_says_so() {
    let spec = run_spec(inline_source(SMT_2LLC), "hackbench:groups=1,fds=2,loops=20", "eevdf", 1, true);
    let full = run(&spec).unwrap().trace.unwrap();
    let parsed = crate::trace::read_ftrace(&full, "t").unwrap();
    let (all, names) = (parsed.events, parsed.names);
    assert!(all.len() > 10);
    let mut sim_events = all.clone();
    let tail = render_trace_tail(names.clone(), Vec::new(), &[], 4, &sim_events, 10);
    assert!(tail.starts_with(&format!("# schedlab: only the last 10 of {} events are kept\n", all.len())), "{tail}");
    let kept = crate::trace::read_ftrace(&tail, "t").unwrap().events;
    assert_eq!(kept.len(), 10);
    assert_eq!(kept.last().map(|e| e.time), all.last().map(|e| e.time));
    sim_events.truncate(5);
    let whole = render_trace_tail(names, Vec::new(), &[], 4, &sim_events, 10);
    assert!(!whole.contains("only the last"));
}

#[test]
fn kernel_tunables_as_debugfs_shows_them() {
    let t = |n: usize| -> std::collections::BTreeMap<&str, u64> { kernel_tunables(n).into_iter().collect() };
    // 0.70 ms x (1 + ilog2(min(n, 8))): Debian's 6.12.95 printed 2100000 in
    // /sys/kernel/debug/sched/base_slice_ns on a 4-vCPU guest.
    assert_eq!(t(1)["base_slice_ns"], 700_000);
    assert_eq!(t(4)["base_slice_ns"], 2_100_000);
    assert_eq!(t(8)["base_slice_ns"], 2_800_000);
    assert_eq!(t(192)["base_slice_ns"], 2_800_000);
    assert_eq!(t(4)["migration_cost_ns"], 500_000);
    assert_eq!(t(4)["nr_migrate"], 32);
    assert_eq!(t(4)["tunable_scaling"], 1);
}
