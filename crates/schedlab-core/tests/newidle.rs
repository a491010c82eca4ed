//! End to end: seed ideas 7 (`ni_half_idle_retry`) and 3
//! (`avg_idle_on_enqueue`) through `api::run` on schbench, with the engine's
//! invariant checks on.

use schedlab_core::api::{run, RunResult};
use schedlab_core::testkit::{inline_source, metric, preset_source, run_spec};
use schedlab_core::trace::ftrace_read::read_ftrace;
use schedlab_core::trace::Event;

/// 2 LLCs x 4 cores x 2 threads.
const M16: &str = schedlab_core::uniform_machine_toml!("m16", 2, 1, 4, 2);

const SCHBENCH: &str = "schbench:runtime=300ms,warmup=50ms";

fn go(policy: &str, trace: bool) -> RunResult {
    let spec = run_spec(inline_source(M16), SCHBENCH, policy, 3, trace);
    run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

#[test]
fn schbench_with_half_idle_retry() {
    let base = go("v7.1", false);
    let retry = go("v7.1+ni_half_idle_retry", true);
    for r in [&base, &retry] {
        assert!(metric(r, "requests_per_s") > 0.0);
        assert!(metric(r, "newidle_balance_calls") > 0.0);
        assert!(metric(r, "avg_idle_error_us").is_finite());
    }
    let trace = retry.trace.as_ref().expect("trace");
    let back = read_ftrace(trace, "retry run").unwrap();
    assert!(back.events.iter().any(|e| matches!(e.ev, Event::AvgIdle { .. })), "schedlab_avg_idle lines read back");
    eprintln!(
        "v7.1: rps {:.0} newidle pulls {} | +retry: rps {:.0} newidle pulls {}",
        metric(&base, "requests_per_s"),
        metric(&base, "newidle_balance_pulls"),
        metric(&retry, "requests_per_s"),
        metric(&retry, "newidle_balance_pulls"),
    );
}

#[test]
fn schbench_with_avg_idle_on_enqueue() {
    // Against v6.12, where only wakeups sampled avg_idle: v7.0 merged the
    // idea (avg_idle sampled at put_prev_task_idle), which leaves no stale
    // stamp for the metric to see.
    let base = go("v6.12", false);
    let on = go("v6.12+avg_idle_on_enqueue", false);
    let (e0, e1) = (metric(&base, "avg_idle_error_us"), metric(&on, "avg_idle_error_us"));
    assert!(e0 > 0.0 && e1 > 0.0, "{e0} {e1}");
    assert!(e1 < e0, "refreshing on enqueue shrinks the drift: {e1} vs {e0}");
    assert!(metric(&on, "requests_per_s") > 0.0);
    let mainline = metric(&go("eevdf", false), "avg_idle_error_us");
    assert_eq!(mainline, 0.0, "v7.0+ samples every idle exit");
    eprintln!("avg_idle_error_us: v6.12 {e0:.1}, +avg_idle_on_enqueue {e1:.1}, eevdf {mainline:.1}");
}

/// The brief's machine: slower, so `cargo test -- --ignored`.
#[test]
#[ignore]
fn schbench_on_intel_4n_192_both_features() {
    let machine = preset_source("intel-4n-192");
    for policy in ["v7.1", "v7.1+ni_half_idle_retry", "eevdf+avg_idle_on_enqueue"] {
        let spec = run_spec(machine.clone(), "schbench:runtime=1s", policy, 1, false);
        let r = run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"));
        eprintln!(
            "{policy}: rps {:.0} p99 wakeup {:.1} us, newidle pulls {}, avg_idle_error_us {:.2}",
            metric(&r, "requests_per_s"),
            metric(&r, "wakeup_latency_p99_us"),
            metric(&r, "newidle_balance_pulls"),
            metric(&r, "avg_idle_error_us")
        );
    }
}
