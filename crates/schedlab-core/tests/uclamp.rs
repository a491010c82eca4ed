//! Utilisation clamps end to end: each use of the clamps in the kernel
//! (EAS placement, misfit, schedutil's request, RT fitness) shown by a run
//! with and without them, and the clamps refused where they are not modelled.

use schedlab_core::api::{run, RunResult, WorkloadSource};
use schedlab_core::testkit::{metric, preset_source, run_spec};

/// Light periodic tasks (1 ms of work every 10 ms), with `keys` on the task.
fn light(keys: &str) -> String {
    format!(
        "[[task]]\nname = \"light\"\ncount = 2\n{keys}\nops = [ {{ loop = 60, do = [ {{ compute = \"1ms\" }}, \
         {{ sleep = \"9ms\" }} ] }} ]\n"
    )
}

/// A CPU hog (200 ms of work, four times, with short sleeps), with `keys`.
fn hog(keys: &str) -> String {
    format!(
        "[[task]]\nname = \"hog\"\ncount = 1\n{keys}\nops = [ {{ loop = 4, do = [ {{ compute = \"200ms\" }}, \
         {{ sleep = \"1ms\" }} ] }} ]\n"
    )
}

fn go_toml(machine: &str, toml: &str, policy: &str, governor: Option<&str>, extra: &[&str]) -> RunResult {
    let mut spec = run_spec(preset_source(machine), toml, policy, 2, true);
    spec.workload_format = "toml".into();
    spec.options.governor = governor.map(str::to_string);
    spec.options.check_invariants = true;
    spec.extra_workloads = extra
        .iter()
        .map(|w| WorkloadSource { text: w.to_string(), format: "spec".into(), origin: "workload".into() })
        .collect();
    run(&spec).unwrap_or_else(|e| panic!("{machine} {policy}: {e}"))
}

/// Share of `comm`'s switch-ins (`next_comm=comm...`) on CPUs `lo..=hi`.
fn share_on(r: &RunResult, comm: &str, lo: usize, hi: usize) -> f64 {
    let trace = r.trace.as_ref().expect("trace asked for");
    let needle = format!("next_comm={comm}");
    let (mut on, mut all) = (0usize, 0usize);
    for l in trace.lines().filter(|l| l.contains("sched_switch") && l.contains(&needle)) {
        let cpu: usize = l.split('[').nth(1).and_then(|s| s.split(']').next()).and_then(|s| s.parse().ok()).unwrap();
        all += 1;
        on += (lo..=hi).contains(&cpu) as usize;
    }
    assert!(all > 0, "{comm} never ran");
    on as f64 / all as f64
}

#[test]
fn uclamp_min_sends_light_tasks_to_the_big_cpus_under_eas() {
    // hikey960: CPUs 0-3 little (capacity 462), 4-7 big (1024); schedutil,
    // where EAS is on.
    let plain = go_toml("hikey960", &light(""), "eevdf", Some("schedutil"), &[]);
    let boosted = go_toml("hikey960", &light("uclamp_min = 1024"), "eevdf", Some("schedutil"), &[]);
    let (p, b) = (share_on(&plain, "light", 4, 7), share_on(&boosted, "light", 4, 7));
    assert!(p < 0.2, "unclamped light tasks belong on the little CPUs under EAS: {p:.2} on big");
    assert!(b > 0.8, "uclamp_min=1024 fits only the big CPUs: {b:.2} on big");
}

#[test]
fn uclamp_max_keeps_a_hog_on_a_little_cpu() {
    let plain = go_toml("hikey960", &hog(""), "eevdf", Some("schedutil"), &[]);
    let capped = go_toml("hikey960", &hog("uclamp_max = 300"), "eevdf", Some("schedutil"), &[]);
    let (p, c) = (share_on(&plain, "hog", 4, 7), share_on(&capped, "hog", 4, 7));
    // Unclamped, the hog outgrows a little CPU (misfit) and is moved up.
    assert!(p > 0.3, "an unclamped hog reaches a big CPU: {p:.2}");
    assert!(c < 0.05, "uclamp_max=300 fits a 462 CPU: {c:.2} on big");
}

#[test]
fn uclamp_min_raises_the_schedutil_request() {
    let pin = "cpus = \"0-3\"";
    let plain = go_toml("hikey960", &light(pin), "eevdf", Some("schedutil"), &[]);
    let boosted = go_toml("hikey960", &light(&format!("{pin}\nuclamp_min = 1024")), "eevdf", Some("schedutil"), &[]);
    let (e0, e1) = (metric(&plain, "energy_j.fd0"), metric(&boosted, "energy_j.fd0"));
    // 10% busy little CPUs run at their lowest OPP unclamped; clamped to
    // 1024 the policy goes to its highest while they run.
    assert!(e1 > 1.2 * e0, "uclamp_min=1024 must cost energy on the little cluster: {e0} -> {e1} J");
}

#[test]
fn an_rt_task_that_asks_for_no_minimum_fits_a_little_cpu() {
    // pixel2: CPUs 0-3 little, 4-7 big. RT tasks default to uclamp_min 1024
    // (rt_task_fits_capacity: big CPUs only); uclamp_min=0 lets them fit anywhere.
    let fair = "hackbench:groups=1,fds=8,loops=200,buf=8";
    let rt = |keys: &str| format!("rt-periodic:count=3,period=10ms,runtime=1ms{keys}");
    let on_big = |rt_spec: String, policy: &str| {
        let mut spec = run_spec(preset_source("pixel2"), fair, policy, 2, true);
        spec.extra_workloads = vec![WorkloadSource { text: rt_spec, format: "spec".into(), origin: "workload".into() }];
        let r = run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"));
        share_on(&r, "rt-periodic", 4, 7)
    };
    let default = on_big(rt(""), "eevdf");
    let zero = on_big(rt(",uclamp_min=0"), "eevdf");
    let no_uclamp = on_big(rt(""), "eevdf-UCLAMP_TASK");
    eprintln!("rt on big: default {default:.3} zero {zero:.3} no_uclamp {no_uclamp:.3}");
    assert!(default > 0.99, "RT tasks default to the big CPUs: {default:.2}");
    assert!(zero < 0.9, "uclamp_min=0 lets RT tasks on little CPUs: {zero:.2}");
    assert!(no_uclamp < 0.9, "without UCLAMP_TASK every CPU fits: {no_uclamp:.2}");
}

#[test]
fn clamps_are_refused_where_they_are_not_modelled() {
    for (policy, want) in [("v5.9", "UCLAMP_TASK"), ("eevdf-UCLAMP_TASK", "UCLAMP_TASK"), ("cosmos", "peer class")] {
        let spec =
            run_spec(preset_source("laptop-4c8t"), "hackbench:groups=1,loops=10,uclamp_min=512", policy, 1, false);
        let e = run(&spec).err().unwrap_or_else(|| panic!("{policy} accepted a clamp")).to_string();
        assert!(e.contains(want) && e.contains("policy"), "{policy}: {e}");
    }
    for (w, key) in [
        ("hackbench:groups=1,uclamp_min=1025", "uclamp_min"),
        ("hackbench:groups=1,uclamp_min=600,uclamp_max=500", "uclamp_min"),
        ("hackbench:groups=1,uclamp_max=x", "uclamp_max"),
        ("irq:preset=pingflood,cpus=0,uclamp_max=5", "uclamp_max"),
    ] {
        let spec = run_spec(preset_source("laptop-4c8t"), w, "eevdf", 1, false);
        let e = run(&spec).err().unwrap_or_else(|| panic!("{w} accepted")).to_string();
        assert!(e.contains(&format!("workload.{key}")), "{w}: {e}");
    }
}

#[test]
fn unclamped_runs_do_not_depend_on_the_uclamp_order() {
    // The static key stays off without clamps: the order flag changes nothing.
    let w = "hackbench:groups=1,fds=8,loops=100,buf=8";
    let a = run(&run_spec(preset_source("hikey960"), w, "eevdf+eas", 1, true)).unwrap().trace;
    let b = run(&run_spec(preset_source("hikey960"), w, "eevdf+eas-uclamp_inc_before_enqueue", 1, true)).unwrap().trace;
    assert_eq!(a, b);
}

#[test]
fn a_runnable_rt_task_takes_schedutil_to_the_top_without_clamps() {
    // The same 1 ms every 10 ms on little CPU 0, as an RT task and as a
    // fair one, beside a benchmark on a big CPU: with no clamps in use,
    // effective_cpu_util's minimum is the CPU's capacity while an RT task is
    // runnable (the kernel's "RT runs at max OPP"), so the RT version costs
    // the little cluster more energy.
    let go = |extra: WorkloadSource| {
        let mut spec = run_spec(preset_source("hikey960"), "sieve:threads=1,work=500ms,cpus=4", "eevdf", 2, false);
        spec.options.governor = Some("schedutil".into());
        spec.extra_workloads = vec![extra];
        run(&spec).unwrap()
    };
    let rt = go(WorkloadSource {
        text: "rt-periodic:count=1,cpus=0,period=10ms,runtime=1ms".into(),
        format: "spec".into(),
        origin: "workload".into(),
    });
    let fair = go(WorkloadSource {
        text: light("cpus = \"0\"").replace("count = 2", "count = 1").replace("loop = 60", "loop = 50"),
        format: "toml".into(),
        origin: "prog.toml".into(),
    });
    let (e_rt, e_fair) = (metric(&rt, "energy_j.fd0"), metric(&fair, "energy_j.fd0"));
    assert!(e_rt > 1.2 * e_fair, "RT at max OPP: {e_rt} J vs fair {e_fair} J");
}
