//! HRTICK end to end: two CPU-bound fair tasks sharing a CPU switch at
//! their requests' ends with the slice timer, at tick boundaries without.

use schedlab_core::api::run;
use schedlab_core::testkit::{preset_source, run_spec};

/// The times (ns) of the context switches between the two sieve threads
/// on CPU 0.
fn switch_times(policy: &str) -> Vec<u64> {
    let spec = run_spec(preset_source("laptop-4c8t"), "sieve:threads=2,work=60ms,cpus=0", policy, 0, true);
    let r = run(&spec).unwrap_or_else(|e| panic!("{policy}: {e}"));
    let trace = r.trace.expect("trace");
    trace
        .lines()
        .filter(|l| l.contains("sched_switch:") && l.contains("[000]") && l.contains("prev_comm=sieve"))
        .filter(|l| l.contains("next_comm=sieve"))
        .map(|l| {
            let ts = l.split_whitespace().find(|w| w.ends_with(':') && w.contains('.')).expect("timestamp");
            let secs: f64 = ts.trim_end_matches(':').parse().expect("seconds");
            (secs * 1e9).round() as u64
        })
        .collect()
}

#[test]
fn cpu_bound_tasks_switch_at_their_deadlines_with_hrtick_and_at_ticks_without() {
    // laptop-4c8t: HZ=250 (4 ms ticks), 8 CPUs: base slice 0.7 ms x
    // (1 + ilog2(8)) = 2.8 ms. The last switch is the first thread's exit.
    let tick = 4_000_000;
    let mut with = switch_times("eevdf");
    let mut without = switch_times("eevdf-HRTICK");
    with.pop();
    without.pop();
    eprintln!("with HRTICK {with:?}\nwithout {without:?}");
    // The switch a tick asks for waits for the tick's own kernel work (the
    // balance pass it raises, a few us), the preemption point.
    let tick_work = 10_000;
    assert!(without.len() >= 5 && with.len() >= 5, "{} / {} switches", with.len(), without.len());
    assert!(without.iter().all(|t| t % tick < tick_work), "without HRTICK the tick ends each request: {without:?}");
    assert!(with.iter().filter(|t| *t % tick >= tick_work).count() >= with.len() / 2, "the slice timer ends them");
    // One request each until a slice timer and a tick coincide (28 ms): the
    // tick's work then delays the switch by 2.2 us, the next task's timer
    // fires as its request ends while the other is not eligible, and it is
    // picked again with a new request and no timer (the kernel re-arms it
    // only for a task that takes the CPU from another,
    // `put_prev_set_next_task`), so it runs to a tick.
    assert!(with.windows(2).skip(1).take(8).all(|w| w[1] - w[0] == 2_800_000), "one request each: {with:?}");
    assert!(with.len() > without.len(), "2.8 ms requests switch more often than 4 ms ticks");
}
