//! End to end: seed ideas 7 (`ni_half_idle_retry`) and 3
//! (`avg_idle_on_enqueue`) through `api::run` on schbench, with the engine's
//! invariant checks on.

use schedlab_core::api::{run, MachineSource, RunOptions, RunResult, RunSpec};
use schedlab_core::trace::ftrace_read::read_ftrace;
use schedlab_core::trace::Event;

/// 2 LLCs x 4 cores x 2 threads.
const M16: &str = r#"
[machine]
name = "m16"
[topology]
packages = 1
nodes_per_package = 1
llcs_per_node = 2
clusters_per_llc = 1
cores_per_cluster = 4
threads_per_core = 2
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
"#;

const SCHBENCH: &str = "schbench:runtime=300ms,warmup=50ms";

fn go(policy: &str, trace: bool) -> RunResult {
    let spec = RunSpec {
        machine: MachineSource { text: M16.into(), format: "toml".into(), origin: "inline".into() },
        workload: SCHBENCH.into(),
        workload_format: "spec".into(),
        policy: policy.into(),
        seed: 3,
        options: RunOptions { trace, check_invariants: true, max_time_ns: 0 },
    };
    run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
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
    let base = go("eevdf", false);
    let on = go("eevdf+avg_idle_on_enqueue", false);
    let (e0, e1) = (metric(&base, "avg_idle_error_us"), metric(&on, "avg_idle_error_us"));
    assert!(e0 > 0.0 && e1 > 0.0, "{e0} {e1}");
    assert!(metric(&on, "requests_per_s") > 0.0);
    eprintln!("avg_idle_error_us: eevdf {e0:.1}, +avg_idle_on_enqueue {e1:.1}");
}

/// The brief's machine: slower, so `cargo test -- --ignored`.
#[test]
#[ignore]
fn schbench_on_intel_4n_192_both_features() {
    let path = format!("{}/../../python/schedlab/presets/machines/intel-4n-192.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    for policy in ["v7.1", "v7.1+ni_half_idle_retry", "eevdf+avg_idle_on_enqueue"] {
        let spec = RunSpec {
            machine: MachineSource { text: text.clone(), format: "toml".into(), origin: path.clone() },
            workload: "schbench:runtime=1s".into(),
            workload_format: "spec".into(),
            policy: policy.into(),
            seed: 1,
            options: RunOptions { trace: false, check_invariants: true, max_time_ns: 0 },
        };
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
