//! The machine's own activity end to end: RT tasks and interrupts composed
//! with a benchmark, as the seed experiments of idea 5 run them.

use schedlab_core::api::{run, RunResult, WorkloadSource};
use schedlab_core::testkit::{metric, preset_source, run_spec};

fn composed(machine: &str, workloads: &[&str], policy: &str, seed: u64) -> RunResult {
    let mut spec = run_spec(preset_source(machine), workloads[0], policy, seed, false);
    spec.options.check_invariants = false;
    spec.extra_workloads = workloads[1..]
        .iter()
        .map(|w| WorkloadSource { text: w.to_string(), format: "spec".into(), origin: "workload".into() })
        .collect();
    run(&spec).unwrap_or_else(|e| panic!("{machine} {workloads:?} {policy}: {e}"))
}

#[test]
fn rt_periodic_on_the_big_cpus_of_pixel2_takes_a_tenth_of_all_cpu_time() {
    // 4 FIFO tasks on CPUs 4-7, 20 ms of every 100 ms: 20% of 4 of 8 CPUs.
    // The run must cover many periods: over a 0.16 s run the two bursts
    // at 0 and 100 ms weigh 12%.
    let r = composed(
        "pixel2",
        &["hackbench:groups=1,fds=8,loops=20000", "rt-periodic:count=4,cpus=4-7,period=100ms,runtime=20ms"],
        "eevdf",
        0,
    );
    let rt = metric(&r, "rt_pct");
    assert!((rt - 10.0).abs() <= 1.5, "rt_pct {rt}");
}

#[test]
fn cas_moves_wakeups_away_from_cpus_taking_a_ping_flood() {
    // The flood runs before hackbench starts (start=500ms), so avg_irq has
    // built up on CPUs 0-2, as on a machine being flooded.
    let w = ["hackbench:groups=2,start=500ms", "irq:preset=pingflood,cpus=0-2"];
    let base = composed("xeon-2s-44c", &w, "eevdf", 0);
    let cas = composed("xeon-2s-44c", &w, "eevdf+cas", 0);
    assert!(metric(&base, "irq_pct") > 0.5);
    assert_ne!(metric(&base, "migrations"), metric(&cas, "migrations"));
    assert!(metric(&cas, "placed_capacity_mean") > metric(&base, "placed_capacity_mean"));
}

#[test]
fn wakeup_fitting_from_capacity_of_on_pixel2_hackbench_beside_rt_tasks() {
    // Issue 7's command: `schedlab compare -m pixel2 -w hackbench:groups=1,
    // fds=8,loops=2000 -w rt-periodic:... -p eevdf-capacity_spare_wake_current
    // -p eevdf`. The RT tasks take 20% of each big CPU, so capacity_of there
    // is ~80% of the original capacity; select_idle_capacity and
    // asym_fits_cpu read capacity_of with the feature (the kernel since
    // v5.7) and the original capacity without it.
    // A wakee fits a big CPU's ~80% current capacity with the 20% margin
    // up to util ~655, its original capacity up to 819: only wakees in
    // between are placed differently, so not every seed has one.
    let w = ["hackbench:groups=1,fds=8,loops=2000", "rt-periodic:count=4,cpus=4-7,period=100ms,runtime=20ms"];
    let names = ["completion_time_s", "migrations", "placed_capacity_mean"];
    let mut differ = 0;
    for seed in 0..5 {
        let cur = composed("pixel2", &w, "eevdf", seed);
        let orig = composed("pixel2", &w, "eevdf-capacity_spare_wake_current", seed);
        let (c, o): (Vec<f64>, Vec<f64>) = names.iter().map(|m| (metric(&cur, m), metric(&orig, m))).unzip();
        eprintln!("seed {seed} {names:?}\n capacity_of {c:?}\n original    {o:?}");
        differ += (c[0] != o[0] && (c[1] != o[1] || c[2] != o[2])) as u32;
    }
    // Until socket writers were woken by the kernel's rule (all of them,
    // once the socket drains to a quarter: unix_write_space), one of seeds
    // 0-4 (seed 3) placed and finished differently. Since, none does: the
    // senders sleep longer between bursts, and their utils seldom reach the
    // band where the two capacities disagree. The README says so (idea 5's
    // row); this keeps it true, and fails if the feature acts here again.
    // That the feature acts at all is shown under v4.14's slow path
    // (tests/features_act.rs, PIXEL2_RT).
    assert_eq!(differ, 0, "a seed of five now placed or finished differently: update README idea 5's row");
    // The kernels before and after v5.5/v5.7 differ there too.
    let v414 = composed("pixel2", &w, "v4.14", 0);
    let v59 = composed("pixel2", &w, "v5.9", 0);
    assert_ne!(metric(&v414, "completion_time_s"), metric(&v59, "completion_time_s"));
    assert_ne!(metric(&v414, "migrations"), metric(&v59, "migrations"));
}
