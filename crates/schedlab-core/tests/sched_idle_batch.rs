//! SCHED_IDLE and SCHED_BATCH act as in the kernel: a SCHED_IDLE task
//! weighs 3 (WEIGHT_IDLEPRIO) and gives way to any other wakee at once; a
//! SCHED_BATCH wakee waits for the tick instead of preempting. Each test
//! shows the decision with the policy and without it.

use schedlab_core::api::{run, RunResult, RunSpec, WorkloadSource};
use schedlab_core::testkit::{metric, preset_source, run_spec};

/// Two workloads together on the laptop preset, the second's metrics as `w2.`.
fn pair(first: &str, second: &str) -> RunResult {
    let mut spec: RunSpec = run_spec(preset_source("laptop-4c8t"), first, "eevdf", 1, false);
    spec.extra_workloads = vec![WorkloadSource { text: second.into(), format: "spec".into(), origin: String::new() }];
    run(&spec).unwrap_or_else(|e| panic!("{first} + {second}: {e}"))
}

#[test]
fn a_sched_idle_hog_leaves_a_normal_hog_its_cpu() {
    // Two 100 ms CPU hogs pinned to CPU 0.
    let hog = "sieve:threads=1,work=100ms,cpus=0";
    let shared = pair(hog, hog);
    let yielding = pair(hog, &format!("{hog},policy=idle"));
    let (t_shared, t_first) = (metric(&shared, "completion_time_s"), metric(&yielding, "completion_time_s"));
    // Equal weights share the CPU: the first ends near 200 ms. Against
    // weight 3 it gets 1024/1027 of the CPU: near 100 ms.
    assert!(t_shared > 0.18, "two normal hogs: {t_shared} s");
    assert!(t_first < 0.105, "normal hog beside a SCHED_IDLE one: {t_first} s");
    assert!(metric(&yielding, "w2.completion_time_s") > 0.19);
}

/// A task on CPU 0 that sleeps 2 ms and computes 50 us, 100 times, beside
/// a CPU hog there; its median wakeup latency under `waker_policy` with the
/// hog under `hog_policy`.
fn waker_latency_us(waker_policy: &str, hog_policy: &str) -> f64 {
    let sleeper = format!(
        "[[task]]\nname = \"sleeper\"\ncpus = \"0\"\npolicy = \"{waker_policy}\"\n\
         ops = [ {{ loop = 100, do = [ {{ sleep = \"2ms\" }}, {{ compute = \"50us\" }} ] }} ]\n"
    );
    let hog = format!("sieve:threads=1,work=400ms,cpus=0,policy={hog_policy}");
    let mut spec: RunSpec = run_spec(preset_source("laptop-4c8t"), &sleeper, "eevdf", 1, false);
    spec.workload_format = "toml".into();
    spec.extra_workloads = vec![WorkloadSource { text: hog, format: "spec".into(), origin: String::new() }];
    let r = run(&spec).unwrap_or_else(|e| panic!("{e}"));
    metric(&r, "wakeup_latency_p50_us")
}

#[test]
fn a_batch_wakee_waits_for_the_tick() {
    let normal = waker_latency_us("other", "other");
    let batch = waker_latency_us("batch", "other");
    // A normal wakee with lag preempts the hog at once; a batch one waits
    // for the tick (4 ms at HZ=250) or the hog's slice to end.
    assert!(normal < 50.0, "normal wakee: {normal} us");
    assert!(batch > 500.0, "batch wakee: {batch} us");
    // Over a SCHED_IDLE hog, even a batch wakee preempts at once.
    let over_idle = waker_latency_us("batch", "idle");
    assert!(over_idle < 50.0, "batch wakee over a SCHED_IDLE hog: {over_idle} us");
}
