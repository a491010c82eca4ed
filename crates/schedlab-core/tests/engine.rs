//! End-to-end properties of the engine: determinism, work conservation, the
//! cost model, and sanity of the metrics, on small machines so they run fast.

use schedlab_core::api::run;
use schedlab_core::testkit::{inline_source, metric, preset_source, run_spec, TWO_LLC};
use schedlab_core::trace::{Event, MigrateReason, PrevState, TimedEvent};

#[test]
fn same_seed_same_bytes_different_seed_different_run() {
    let w = "hackbench:groups=2,fds=4,loops=20";
    let a = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 7, true)).unwrap();
    let b = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 7, true)).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    assert_eq!(a.trace, b.trace);
    let w = "workqueue:threads=6,chunks=200,jitter=50";
    let a = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 1, false)).unwrap();
    let c = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 2, false)).unwrap();
    assert_ne!(metric(&a, "completion_time_s"), metric(&c, "completion_time_s"));
}

/// Replay the event stream and return the longest stretch (after `from_ns`)
/// during which some CPU was idle while another had two or more runnable tasks.
fn longest_imbalance(events: &[TimedEvent], nr_cpus: usize, from_ns: u64) -> u64 {
    let mut runnable = vec![0i64; nr_cpus];
    let mut running = vec![false; nr_cpus];
    let mut since: Option<u64> = None;
    let mut worst = 0;
    for te in events {
        match te.ev {
            Event::Wakeup { cpu, .. } => runnable[cpu.idx()] += 1,
            Event::Switch { cpu, prev_state, prev, next } => {
                if prev.is_some() && prev_state != PrevState::Runnable {
                    runnable[cpu.idx()] -= 1;
                }
                running[cpu.idx()] = next.is_some();
            }
            Event::Migrate { orig, dest, reason: MigrateReason::Balance, .. } => {
                runnable[orig.idx()] -= 1;
                runnable[dest.idx()] += 1;
            }
            _ => {}
        }
        let idle = (0..nr_cpus).any(|c| runnable[c] == 0 && !running[c]);
        let stacked = runnable.iter().any(|&r| r >= 2);
        match (idle && stacked, since) {
            (true, None) => since = Some(te.time),
            (false, Some(s)) => {
                if s >= from_ns {
                    worst = worst.max(te.time - s);
                }
                since = None;
            }
            _ => {}
        }
    }
    worst
}

#[test]
fn work_conservation_eight_cpu_bound_tasks_on_eight_cpus() {
    // 8 CPU-bound tasks of 300 ms, forked from CPU 0: after start-up no CPU may
    // stay idle while another has two runnable tasks for more than a few ticks.
    let r = run(&run_spec(inline_source(TWO_LLC), "sieve:threads=8,work=2400ms", "eevdf", 3, true)).unwrap();
    let tr = schedlab_core::trace::ftrace_read::read_ftrace(r.trace.as_deref().unwrap(), "sim").unwrap();
    let worst = longest_imbalance(&tr.events, 8, 20_000_000);
    assert!(worst <= 3 * 4_000_000, "idle CPU beside a stacked one for {worst} ns");
}

#[test]
fn cost_model_bites_smt_stacking_is_slower_than_pinned() {
    // threadripper-3970x: 32 workers pinned one per core vs the same workers on
    // 16 cores, two SMT threads each (CPUs 0-15 and their siblings 32-47).
    let w = "workqueue:threads=50%,chunks=2000";
    let pinned = run(&run_spec(preset_source("threadripper-3970x"), w, "pinned", 1, false)).unwrap();
    let stacked =
        run(&run_spec(preset_source("threadripper-3970x"), &format!("{w},cpus=0-15;32-47"), "eevdf", 1, false))
            .unwrap();
    let (a, b) = (metric(&pinned, "completion_time_s"), metric(&stacked, "completion_time_s"));
    assert!(b > a * 1.2, "pinned {a} s vs SMT-stacked {b} s");
}

#[test]
fn metrics_are_sane_for_schbench() {
    let r = run(&run_spec(inline_source(TWO_LLC), "schbench:threads=4,runtime=200ms", "eevdf", 1, false)).unwrap();
    assert!(metric(&r, "requests_per_s") > 0.0);
    assert!(metric(&r, "wakeup_latency_p99_us") >= metric(&r, "wakeup_latency_p50_us"));
    assert!(metric(&r, "idle_pct") > 0.0 && metric(&r, "idle_pct") < 100.0);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let e = run(&run_spec(inline_source(TWO_LLC), "hackbench:groups=0", "eevdf", 1, false)).unwrap_err();
    assert!(e.is_usage(), "{e}");
    let e = run(&run_spec(inline_source(TWO_LLC), "hackbench", "eevdf+nope", 1, false)).unwrap_err();
    assert!(e.to_string().contains("nope"));
    let e = run(&run_spec(inline_source("[machine]\nname = 3"), "hackbench", "eevdf", 1, false)).unwrap_err();
    assert!(e.to_string().contains("machine.name"), "{e}");
}

#[test]
fn every_seed_feature_at_once_keeps_the_invariants() {
    // "Any combination is accepted": all seed features together, on a mainline
    // and an old-kernel base, on machines with SMT+LLCs, clusters, NUMA and
    // big.LITTLE, with the invariant checker on.
    let all = "+prefer_prev_idle_core+avg_idle_on_enqueue+llc_idle_mask+sis_cluster_first+idler_llc\
               +sis_time_limit+cas+eas+sd_overutilized+eas_cluster_candidates+soft_affinity";
    let cases = [
        ("threadripper-3970x", "hackbench:groups=2,loops=10"),
        ("hikey960", "schbench:runtime=50ms"),
        ("kunpeng920", "workqueue:threads=25%,chunks=200"),
    ];
    for (m, w) in cases {
        for base in ["eevdf", "v4.14"] {
            let policy = format!("{base}{all}");
            let r =
                run(&run_spec(preset_source(m), w, &policy, 1, false)).unwrap_or_else(|e| panic!("{m} {policy}: {e}"));
            assert!(r.events_processed > 0);
        }
        let r = run(&run_spec(preset_source(m), w, "v7.1+ni_half_idle_retry", 1, false)).unwrap();
        assert!(r.events_processed > 0);
    }
}

#[test]
fn a_workload_that_outlives_the_safety_cap_is_an_error_not_a_result() {
    // Two hours of work on one thread: the one-hour cap ends the run, and the
    // caller must hear that the metrics would describe an unfinished workload.
    let e = run(&run_spec(inline_source(TWO_LLC), "sieve:threads=1,work=7200s", "eevdf", 1, false)).unwrap_err();
    assert!(!e.is_usage(), "{e}");
    assert!(e.to_string().contains("did not finish"), "{e}");
}
