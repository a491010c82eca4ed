//! End-to-end runs of the peer classes through `api::run` with the invariant
//! checker on, on small machines.

use crate::api::{run, MachineSource, RunOptions, RunResult, RunSpec};

/// 4 cores x 2 threads, two LLCs of 2 cores.
const M8_SMT: &str = r#"
[machine]
name = "m8smt"
[topology]
packages = 1
nodes_per_package = 1
llcs_per_node = 2
clusters_per_llc = 1
cores_per_cluster = 2
threads_per_core = 2
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
"#;

fn spec(workload: &str, policy: &str, seed: u64) -> RunSpec {
    RunSpec {
        machine: MachineSource { text: M8_SMT.into(), format: "toml".into(), origin: "inline".into() },
        workload: workload.into(),
        workload_format: "spec".into(),
        policy: policy.into(),
        seed,
        options: RunOptions { trace: false, check_invariants: true, max_time_ns: 0 },
    }
}

fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
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
