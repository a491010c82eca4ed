//! Hand-written event sequences with known answers for every metric.

use super::*;
use crate::metrics::context::CpuTopo;
use crate::trace::{MigrateReason, PlacePath};
use crate::workload::PrimaryMetric;

const A: TaskId = TaskId(0);
const B: TaskId = TaskId(1);

fn ctx(nr_cpus: usize, nr_tasks: usize) -> MetricsContext {
    let mut c = MetricsContext::flat(nr_cpus);
    c.cpus_start_idle = true;
    c.allowed = vec![CpuMask::first_n(nr_cpus); nr_tasks];
    c
}

fn run(c: MetricsContext, evs: &[(Ns, Event)], end: Ns) -> Vec<MetricValue> {
    let mut col = Collector::new(c);
    for &(time, ev) in evs {
        col.on_event(&TimedEvent { time, ev });
    }
    col.finish(end)
}

fn get(m: &[MetricValue], name: &str) -> f64 {
    m.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
}

fn sw(cpu: u32, prev: Option<TaskId>, prev_state: PrevState, next: Option<TaskId>) -> Event {
    Event::Switch { cpu: CpuId(cpu), prev, prev_state, next }
}

fn wakeup(task: TaskId, cpu: u32, new: bool) -> Event {
    Event::Wakeup { task, cpu: CpuId(cpu), new }
}

/// Two tasks on CPU 0 of a 2-CPU machine; CPU 1 stays idle throughout.
fn two_task_script() -> Vec<(Ns, Event)> {
    use PrevState::*;
    vec![
        (0, wakeup(A, 0, true)),                 // A waits from 0
        (1_000, sw(0, None, Sleeping, Some(A))), // rq delay 1000
        (5_000, sw(0, Some(A), Sleeping, None)), // A blocks
        (10_000, Event::Waking { task: A, cpu: CpuId(1) }),
        (12_000, wakeup(A, 0, false)),               // A waits from 12000
        (15_000, sw(0, None, Sleeping, Some(A))),    // wakeup lat 5000, rq delay 3000
        (20_000, wakeup(B, 0, true)),                // B waits from 20000
        (22_000, sw(0, Some(A), Runnable, Some(B))), // B rq 2000; A preempted, waits
        (29_000, Event::Exit { task: B }),
        (30_000, sw(0, Some(B), Dead, Some(A))), // A rq delay 8000
        (40_000, Event::Exit { task: A }),
        (40_000, sw(0, Some(A), Dead, None)),
    ]
}

#[test]
fn every_registry_metric_has_a_value_in_order() {
    let mut c = ctx(2, 2);
    c.policy = Some(vec![crate::workload::SchedPolicy::Normal; 2]);
    // Without an energy model the energy metrics are left out.
    let m = run(c.clone(), &two_task_script(), 50_000);
    let energy = crate::metrics::energy::ENERGY_METRICS;
    let ladder = crate::metrics::registry::WAKEUP_LATENCY_QUANTILES.len();
    assert_eq!(m.len(), METRICS.len() - energy.len() + ladder);
    assert!(m.iter().all(|v| !energy.contains(&v.name.as_str())));
    // With one, every registry metric comes first, in order, then the
    // per-domain and per-CPU ones (energy_j.fd0, freq_residency.fd0.KHZ,
    // energy_j.cpuN), then the wakeup latency quantiles.
    c.energy = Some(crate::metrics::energy::EnergyCtx {
        cpu_domain: vec![0, 0],
        domain_opps: vec![vec![crate::topology::Opp { freq_khz: 1_000_000, power_mw: 100 }]],
        domain_idle_mw: vec![0],
        domain_idle_states_mw: vec![vec![0]],
        domain_idle_levels: Vec::new(),
        cpu_cluster: Vec::new(),
        domain_start_khz: vec![1_000_000],
        domain_has_power: Vec::new(),
    });
    let m = run(c, &two_task_script(), 50_000);
    assert_eq!(m.len(), METRICS.len() + 4 + ladder);
    assert_eq!(m[METRICS.len() + 4].name, "wakeup_latency_dist.p1");
    assert_eq!(m.last().unwrap().name, "wakeup_latency_dist.p100");
    assert_eq!(m[METRICS.len() + 3].name, "energy_j.cpu1");
    assert_eq!(m[METRICS.len()].name, "energy_j.fd0");
    assert_eq!(m[METRICS.len() + 1].name, "freq_residency.fd0.1000000");
    for (v, d) in m.iter().zip(METRICS) {
        assert_eq!(v.name, d.name);
        // A metric that does not apply to a stream is absent (NaN), and its
        // description says when.
        assert!(v.value.is_finite() || d.description.contains("Absent"), "{} = {}", v.name, v.value);
    }
}

#[test]
fn wakeup_latency_quantiles_trace_the_distribution() {
    // One wakeup of 5 us: every quantile is it.
    let m = run(ctx(2, 2), &two_task_script(), 50_000);
    for (q, _) in crate::metrics::registry::WAKEUP_LATENCY_QUANTILES {
        assert_eq!(get(&m, &format!("wakeup_latency_dist.p{q}")), 5.0, "p{q}");
    }
    // No wakeup at all: absent, not 0.
    let forks_only: Vec<(Ns, Event)> = two_task_script().into_iter().take(3).collect();
    let m = run(ctx(2, 2), &forks_only, 50_000);
    assert!(get(&m, "wakeup_latency_dist.p50").is_nan());
    // A spread of latencies: the ladder rises with the quantile and ends at the worst.
    let mut script = Vec::new();
    for (i, lat) in [1_000u64, 2_000, 4_000, 8_000, 100_000].into_iter().enumerate() {
        let t = i as u64 * 1_000_000;
        script.push((t, Event::Waking { task: A, cpu: CpuId(1) }));
        script.push((t, wakeup(A, 0, false)));
        script.push((t + lat, sw(0, None, PrevState::Sleeping, Some(A))));
        script.push((t + lat + 100, sw(0, Some(A), PrevState::Sleeping, None)));
    }
    let m = run(ctx(2, 2), &script, 6_000_000);
    let ladder: Vec<f64> = crate::metrics::registry::WAKEUP_LATENCY_QUANTILES
        .iter()
        .map(|(q, _)| get(&m, &format!("wakeup_latency_dist.p{q}")))
        .collect();
    assert!(ladder.windows(2).all(|w| w[0] <= w[1]), "{ladder:?}");
    // Within the histogram's 0.4% bucket midpoint error; the maximum is exact.
    let near = |v: f64, want: f64| (v - want).abs() <= want * 0.004;
    assert!(near(ladder[0], 1.0) && near(get(&m, "wakeup_latency_dist.p50"), 4.0), "{ladder:?}");
    assert_eq!(*ladder.last().unwrap(), 100.0);
}

#[test]
fn latency_delay_switches_idle_and_completion() {
    let m = run(ctx(2, 2), &two_task_script(), 50_000);
    assert_eq!(get(&m, "wakeup_latency_p50_us"), 5.0);
    assert_eq!(get(&m, "wakeup_latency_p99_us"), 5.0);
    // rq delays 1000, 3000, 2000, 8000 ns.
    assert_eq!(get(&m, "runqueue_delay_mean_us"), 3.5);
    assert_eq!(get(&m, "runqueue_delay_p99_us"), 8.0);
    assert_eq!(get(&m, "context_switches"), 6.0);
    assert_eq!(get(&m, "wakeups"), 1.0);
    assert_eq!(get(&m, "completion_time_s"), 40_000e-9);
    // CPU 1 idle 50000; CPU 0 idle 0-1000, 5000-15000, 40000-50000 = 21000.
    assert!((get(&m, "idle_pct") - 71.0).abs() < 1e-9);
    assert!((get(&m, "cpu_util_pct") - 29.0).abs() < 1e-9);
    // CPU 1 idle while someone waits on CPU 0: 1000 + 3000 + 2000 + 8000.
    assert!((get(&m, "wasted_idle_pct") - 14.0).abs() < 1e-9);
    // No request marks: the request metrics do not apply.
    assert!(get(&m, "request_latency_p99_us").is_nan());
    assert!(get(&m, "requests_per_s").is_nan());
}

#[test]
fn wasted_idle_respects_affinity() {
    let mut c = ctx(2, 2);
    c.allowed[A.idx()] = CpuMask::from_cpus([CpuId(0)]);
    let m = run(c, &two_task_script(), 50_000);
    // Only B's wait (20000-22000) could have used CPU 1.
    assert!((get(&m, "wasted_idle_pct") - 2.0).abs() < 1e-9);

    // The same through set_allowed, called while A is waiting.
    let mut col = Collector::new(ctx(2, 2));
    for (i, &(time, ev)) in two_task_script().iter().enumerate() {
        col.on_event(&TimedEvent { time, ev });
        if i == 0 {
            col.set_allowed(A, CpuMask::from_cpus([CpuId(0)]));
        }
    }
    let m = col.finish(50_000);
    assert!((get(&m, "wasted_idle_pct") - 2.0).abs() < 1e-9);
}

#[test]
fn completion_is_end_time_when_a_task_lives_on() {
    let evs = two_task_script();
    let m = run(ctx(2, 3), &evs, 50_000);
    assert_eq!(get(&m, "completion_time_s"), 50_000e-9);
}

/// LLC 0: core 0 (CPUs 0, 1) and core 1 (CPU 2) in cluster 0, core 2 (CPU 3)
/// in cluster 1. LLC 1: CPU 4. Node 1: LLC 2, CPU 5.
fn tiny_machine() -> MetricsContext {
    let t = |core, cluster, llc, node| CpuTopo { core, cluster, llc, node };
    let mut c = ctx(6, 1);
    c.topo = vec![t(0, 0, 0, 0), t(0, 0, 0, 0), t(1, 0, 0, 0), t(2, 1, 0, 0), t(3, 2, 1, 0), t(4, 3, 2, 1)];
    c.has_clusters = true;
    c
}

#[test]
fn migrations_by_distance() {
    let mig = |o, d| Event::Migrate { task: A, orig: CpuId(o), dest: CpuId(d), reason: MigrateReason::Balance };
    let mut c = tiny_machine();
    c.warmup_ns = 100;
    let evs = [
        (50, mig(0, 5)), // before warm-up
        (100, mig(0, 1)),
        (110, mig(0, 2)),
        (120, mig(0, 3)),
        (130, mig(3, 4)),
        (140, mig(4, 5)),
        (150, mig(5, 0)),
        (160, mig(2, 2)), // not a migration
    ];
    let m = run(c, &evs, 1000);
    assert_eq!(get(&m, "migrations"), 6.0);
    for (name, want) in [("smt", 1.0), ("cluster", 1.0), ("llc", 1.0), ("package", 1.0), ("node", 2.0)] {
        assert_eq!(get(&m, &format!("migrations_{name}")), want, "{name}");
    }
}

#[test]
fn migration_moves_the_wait() {
    use PrevState::*;
    // A waits on busy CPU 0 (B runs there) with CPU 1 idle; a balance moves it
    // to CPU 1 at 300, which runs it at 400: wasted 100..300 on CPU 1, and the
    // runqueue delay spans the move.
    let evs = [
        (0, wakeup(B, 0, true)),
        (0, sw(0, None, Sleeping, Some(B))),
        (100, wakeup(A, 0, true)),
        (300, Event::Migrate { task: A, orig: CpuId(0), dest: CpuId(1), reason: MigrateReason::Balance }),
        (400, sw(1, None, Sleeping, Some(A))),
    ];
    let m = run(ctx(2, 2), &evs, 1000);
    assert!((get(&m, "wasted_idle_pct") - 10.0).abs() < 1e-9);
    assert_eq!(get(&m, "runqueue_delay_p99_us"), 0.3);
}

#[test]
fn place_and_balance_counts() {
    let place = |path, scanned| Event::Place {
        task: A,
        prev: CpuId(0),
        waker_cpu: CpuId(1),
        cpu: CpuId(1),
        path,
        scanned,
        capacity: 0,
    };
    let bal = |kind, pulled| Event::Balance { cpu: CpuId(0), depth: 0, kind, pulled };
    let evs = [
        (1, place(PlacePath::IdleCore, 4)),
        (2, place(PlacePath::IdleCore, 6)),
        (3, place(PlacePath::Fallback, 10)),
        (4, bal(BalanceKind::NewIdle, 1)),
        (5, bal(BalanceKind::NewIdle, 0)),
        (6, bal(BalanceKind::Periodic, 2)),
        (7, bal(BalanceKind::NohzIdle, 3)),
        (8, bal(BalanceKind::Active, 1)),
    ];
    let m = run(ctx(2, 1), &evs, 10);
    assert_eq!(get(&m, "place_idle_core"), 2.0);
    assert_eq!(get(&m, "place_fallback"), 1.0);
    assert_eq!(get(&m, "place_target"), 0.0);
    assert!((get(&m, "scanned_per_wakeup_mean") - 20.0 / 3.0).abs() < 1e-12);
    assert_eq!(get(&m, "newidle_balance_calls"), 2.0);
    assert_eq!(get(&m, "newidle_balance_pulls"), 1.0);
    assert_eq!(get(&m, "periodic_balance_pulls"), 2.0);
    assert_eq!(get(&m, "nohz_balance_pulls"), 3.0);
    assert_eq!(get(&m, "active_balance_pulls"), 1.0);
}

#[test]
fn requests_with_warmup() {
    let done = |start| Event::Mark { task: A, kind: MarkKind::RequestDone, value: start };
    let mut c = ctx(2, 1);
    c.warmup_ns = 1_000_000;
    c.primary = PrimaryMetric::Throughput;
    let evs = [
        (0, sw(0, None, PrevState::Sleeping, Some(A))),
        (500_000, done(400_000)),     // during warm-up: not counted
        (1_500_000, done(1_400_000)), // 100 us
        (2_000_000, done(1_700_000)), // 300 us
        (2_500_000, sw(0, Some(A), PrevState::Sleeping, None)),
    ];
    let m = run(c.clone(), &evs, 3_000_000);
    assert_eq!(c.primary_metric_name(), "requests_per_s");
    // 2 requests in the 2 ms after warm-up.
    assert!((get(&m, "requests_per_s") - 1000.0).abs() < 1e-9);
    assert!((get(&m, "request_latency_p50_us") - 100.0).abs() <= 1.0);
    assert_eq!(get(&m, "request_latency_p99_us"), 300.0);
    assert_eq!(get(&m, "context_switches"), 1.0);
    // Window 1-3 ms on 2 CPUs: CPU 0 busy until 2.5 ms, idle 0.5 ms; CPU 1 idle 2 ms.
    assert!((get(&m, "idle_pct") - 62.5).abs() < 1e-9);
}

#[test]
fn app_wakeup_latency_as_schbench_measures_it() {
    // A message thread (B) timestamps one batch at 10_400 ns and wakes two
    // workers; the kernel-event wakeup latency of each is its own
    // waking -> switch-in, but the benchmark's runs from the batch stamp.
    let woke = |task, start| Event::Mark { task, kind: MarkKind::WakeDone, value: start };
    let w0 = TaskId(2);
    let mut c = ctx(4, 3);
    c.warmup_ns = 5_000;
    let evs = [
        (1_000, woke(w0, 0)), // during warm-up: not counted
        (10_500, Event::Waking { task: A, cpu: CpuId(0) }),
        (11_000, sw(0, None, PrevState::Sleeping, Some(A))), // kernel: 0.5 us
        (11_900, woke(A, 10_400)),                           // stamps 10 us -> 11 us: 1 us
        (12_500, Event::Waking { task: w0, cpu: CpuId(1) }),
        (13_000, sw(1, None, PrevState::Sleeping, Some(w0))), // kernel: 0.5 us
        (13_100, woke(w0, 10_400)),                           // 10 us -> 13 us: 3 us
        (14_000, woke(A, 14_000)),                            // 0 us: not recorded
        (20_999, woke(w0, 14_001)),                           // 14 us -> 20 us: 6 us
    ];
    let m = run(c, &evs, 30_000);
    assert_eq!(get(&m, "app_wakeup_latency_p50_us"), 3.0);
    assert_eq!(get(&m, "app_wakeup_latency_p99_us"), 6.0);
    assert_eq!(get(&m, "wakeup_latency_p99_us"), 0.5);
    // No WakeDone marks: absent, not 0.
    let m = run(ctx(2, 2), &two_task_script(), 50_000);
    assert!(get(&m, "app_wakeup_latency_p99_us").is_nan());
}

#[test]
fn real_trace_cpu_state_resolved_at_first_switch() {
    let mut c = MetricsContext::flat(2);
    c.allowed = vec![];
    let evs = [
        (1_000, Event::Waking { task: B, cpu: CpuId(1) }),  // window starts
        (2_000, sw(0, Some(A), PrevState::Sleeping, None)), // CPU 0 was busy since 1000
    ];
    let m = run(c, &evs, 3_000);
    // CPU 0 idle 1000 of 2000, CPU 1 (never switched) idle 2000.
    assert!((get(&m, "idle_pct") - 75.0).abs() < 1e-9);
    // A and B discovered, neither exited: the end, counted from the trace's
    // first event (a real trace's clock starts at boot).
    assert_eq!(get(&m, "completion_time_s"), 2_000e-9);
}

#[test]
fn waking_before_the_wakees_switch_out_counts_from_waking() {
    use PrevState::*;
    let evs = [
        (0, sw(0, None, Sleeping, Some(A))),
        (100, Event::Waking { task: A, cpu: CpuId(1) }), // A still on CPU 0
        (150, sw(0, Some(A), Sleeping, None)),
        (200, wakeup(A, 0, false)),
        (400, sw(0, None, Sleeping, Some(A))),
        // ttwu of a task that never blocked: no latency sample.
        (500, Event::Waking { task: A, cpu: CpuId(1) }),
        (500, wakeup(A, 0, false)),
        (600, sw(0, Some(A), Runnable, Some(B))),
        (700, sw(0, Some(B), Sleeping, Some(A))),
    ];
    let m = run(ctx(2, 2), &evs, 1000);
    assert_eq!(get(&m, "wakeup_latency_p99_us"), 0.3);
    assert_eq!(get(&m, "wakeup_latency_p50_us"), 0.3);
}

#[test]
fn avg_idle_error_against_the_true_idle_periods() {
    // One CPU; reference starts at 1 ms with a 1 ms cap.
    use PrevState::*;
    let ai = |avg_idle_ns, max_ns| Event::AvgIdle { cpu: CpuId(0), avg_idle_ns, max_ns };
    let evs = vec![
        (0, wakeup(A, 0, true)),
        (1_000, sw(0, None, Sleeping, Some(A))), // initial idle: start unseen, no sample
        (10_000, ai(1_000_000, 1_000_000)),      // |1e6 - 1e6| = 0
        (10_000, sw(0, Some(A), Sleeping, None)),
        (210_000, wakeup(A, 0, false)),
        (210_000, sw(0, None, Sleeping, Some(A))), // idle 200 us: ref 1e6 - 800e3/8 = 900e3
        (300_000, ai(1_000_000, 600_000)),         // stale avg_idle: |1e6 - 900e3| = 100e3; cap now 600e3
        (300_000, sw(0, Some(A), Sleeping, None)),
        (400_000, wakeup(A, 0, false)),
        (400_000, sw(0, None, Sleeping, Some(A))), // idle 100 us: 900e3 - 800e3/8 = 800e3, capped 600e3
        (450_000, sw(0, Some(A), Sleeping, None)),
        (450_000, wakeup(A, 0, false)),
        (450_000, sw(0, None, Sleeping, Some(A))), // zero-length idle: dropped
        (500_000, ai(650_000, 600_000)),           // |650e3 - 600e3| = 50e3
    ];
    let m = run(ctx(1, 1), &evs, 600_000);
    // (0 + 100 + 50) / 3 us.
    assert_eq!(get(&m, "avg_idle_error_us"), 50.0);
    // No schedlab_avg_idle events (a kernel trace): 0.
    assert_eq!(get(&run(ctx(2, 2), &two_task_script(), 50_000), "avg_idle_error_us"), 0.0);
}

#[test]
fn placement_capacity_min_and_mean_skip_unrecorded() {
    let place = |capacity| Event::Place {
        task: A,
        prev: CpuId(0),
        waker_cpu: CpuId(1),
        cpu: CpuId(1),
        path: PlacePath::Target,
        scanned: 0,
        capacity,
    };
    let m = run(ctx(2, 1), &[(1, place(800)), (2, place(1024)), (3, place(0))], 10);
    assert_eq!(get(&m, "placed_capacity_min"), 800.0);
    assert_eq!(get(&m, "placed_capacity_mean"), 912.0);
}

#[test]
fn placement_capacity_is_absent_without_records() {
    let m = run(ctx(2, 1), &[], 10);
    assert!(get(&m, "placed_capacity_min").is_nan());
}

#[test]
fn irq_time_counts_the_outermost_handler() {
    let irq = |entry| Event::Irq { cpu: CpuId(0), irq: 0, entry };
    let soft = |entry| Event::Softirq { cpu: CpuId(0), entry };
    // 0..10 hard, 10..30 soft on CPU 0 of 2 CPUs over 100 ns: 30 of 200.
    let evs = [(0, irq(true)), (10, irq(false)), (10, soft(true)), (30, soft(false))];
    let m = run(ctx(2, 0), &evs, 100);
    assert_eq!(get(&m, "irq_pct"), 15.0);
}

#[test]
fn rt_pct_counts_cpu_time_of_fifo_and_rr_tasks() {
    use crate::workload::SchedPolicy::{Fifo, Normal, Rr};
    use PrevState::*;
    const C: TaskId = TaskId(2);
    let mut c = ctx(2, 3);
    c.policy = Some(vec![Fifo, Normal, Rr]);
    c.warmup_ns = 10_000;
    let evs = [
        (0, sw(0, None, Sleeping, Some(A))),         // RT from 0, counted from 10 us
        (20_000, sw(0, Some(A), Runnable, Some(B))), // A: 10 us counted
        (30_000, sw(1, None, Sleeping, Some(C))),    // RR on CPU 1 for 40 us
        (50_000, sw(0, Some(B), Sleeping, Some(A))), // A again for 50 us
        (70_000, sw(1, Some(C), Sleeping, None)),
        (100_000, sw(0, Some(A), Sleeping, None)),
    ];
    let m = run(c.clone(), &evs, 110_000);
    // Window 10-110 us on 2 CPUs = 200 us; RT ran 10 + 40 + 50 = 100 us.
    assert!((get(&m, "rt_pct") - 50.0).abs() < 1e-9, "{}", get(&m, "rt_pct"));
    // Without policies (a real trace), rt_pct is absent, not 0.
    c.policy = None;
    let m = run(c, &evs, 110_000);
    assert!(m.iter().all(|v| v.name != "rt_pct"));
}

#[test]
fn each_measured_part_keeps_its_own_workload_metrics() {
    use PrevState::*;
    const N: TaskId = TaskId(2); // noise
    let mut c = ctx(2, 3);
    c.task_part = vec![0, 0, crate::metrics::NO_PART];
    // Parts as composed: A in part 0 (main), noise part 1, B in part 2 (`w3.`).
    c.set_parts(&[0, 2, 1], &[Some(String::new()), None, Some("w3.".into())]);
    assert_eq!(c.part_of(0), 0);
    assert_eq!(c.part_of(1), 1);
    assert!(c.is_noise(2));
    let done = |task, start| Event::Mark { task, kind: MarkKind::RequestDone, value: start };
    let evs = [
        (0, sw(0, None, Sleeping, Some(A))),
        (0, sw(1, None, Sleeping, Some(B))),
        (100_000, done(A, 90_000)),  // 10 us, main
        (200_000, done(B, 150_000)), // 50 us, w3
        (300_000, done(N, 0)),       // noise: no metric
        (400_000, Event::Exit { task: A }),
        (400_000, sw(0, Some(A), Dead, Some(N))),
        (600_000, Event::Exit { task: B }),
        (600_000, sw(1, Some(B), Dead, None)),
    ];
    let m = run(c, &evs, 1_000_000);
    assert_eq!(get(&m, "completion_time_s"), 0.0004, "the main part ends when A exits; noise N lives on");
    assert_eq!(get(&m, "w3.completion_time_s"), 0.0006);
    assert_eq!(get(&m, "request_latency_p99_us"), 10.0);
    assert_eq!(get(&m, "w3.request_latency_p99_us"), 50.0);
    assert_eq!(get(&m, "requests_per_s"), 1000.0);
    assert_eq!(get(&m, "w3.requests_per_s"), 1000.0);
    let w3: Vec<&str> = m.iter().filter(|v| v.name.starts_with("w3.")).map(|v| v.name.as_str()).collect();
    assert_eq!(w3.len(), PART_METRICS.len());
    assert!(m.iter().all(|v| !v.name.starts_with("w2.")));
}
