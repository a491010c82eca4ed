//! End-to-end runs of the peer classes through `api::run` with the invariant
//! checker on, on small machines.

use crate::api::{run, RunSpec};
use crate::testkit::{inline_source, metric, run_spec, SMT_2LLC};

/// A run on 4 cores x 2 threads, two LLCs of 2 cores, invariants checked.
fn spec(workload: &str, policy: &str, seed: u64) -> RunSpec {
    run_spec(inline_source(SMT_2LLC), workload, policy, seed, false)
}

const WORKLOADS: [&str; 3] = [
    "hackbench:groups=2,fds=4,loops=20",
    "schbench:message_threads=1,threads=4,runtime=1s,warmup=0s",
    "workqueue:threads=6,chunks=200,jitter=50",
];

#[test]
fn cosmos_runs_every_workload_with_invariants() {
    for w in WORKLOADS {
        let r = run(&spec(w, "cosmos", 3)).unwrap_or_else(|e| panic!("{w}: {e}"));
        assert!(metric(&r, "completion_time_s") > 0.0, "{w}");
    }
}

#[test]
fn bmq_runs_every_workload_with_invariants() {
    for w in WORKLOADS {
        let r = run(&spec(w, "bmq", 3)).unwrap_or_else(|e| panic!("{w}: {e}"));
        assert!(metric(&r, "completion_time_s") > 0.0, "{w}");
    }
}

#[test]
fn peers_are_deterministic_and_options_matter() {
    let w = "workqueue:threads=12,chunks=200,jitter=50";
    let a = run(&spec(w, "cosmos", 5)).unwrap();
    let b = run(&spec(w, "cosmos", 5)).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    let c = run(&spec(w, "cosmos:slice=20ms", 5)).unwrap();
    assert_ne!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&c).unwrap());
    let n = run(&spec(w, "cosmos:busy=50", 5)).unwrap();
    assert!(metric(&n, "completion_time_s") > 0.0);
    let d = run(&spec(w, "bmq", 5)).unwrap();
    let e = run(&spec(w, "bmq", 5)).unwrap();
    assert_eq!(serde_json::to_string(&d).unwrap(), serde_json::to_string(&e).unwrap());
}
