//! The families written in ops primitives (pipe, barrier, chameneos): each
//! runs at a small scale, and its metric moves the way the real benchmark's
//! does when the machine or the parameters change.

use schedlab_core::api::{run, RunResult};
use schedlab_core::testkit::{metric, preset_source, run_spec};

fn laptop(spec: &str) -> RunResult {
    run(&run_spec(preset_source("laptop-4c8t"), spec, "eevdf", 1, false)).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[test]
fn pipe_counts_every_round_trip_and_is_faster_on_one_cpu() {
    let r = laptop("pipe:loops=3000");
    let ops = metric(&r, "requests_per_s") * metric(&r, "completion_time_s");
    assert!((2990.0..=3001.0).contains(&ops), "{ops} round trips counted");
    // perf bench sched pipe under `taskset -c 0` beats two CPUs on a machine
    // with idle states: no cross-CPU wakeup, no idle exit per message.
    let pinned = metric(&laptop("pipe:loops=3000,cpus=0"), "requests_per_s");
    let spread = metric(&r, "requests_per_s");
    assert!(pinned > 1.3 * spread, "pinned {pinned} ops/s vs spread {spread}");
}

#[test]
fn barrier_rate_collapses_when_oversubscribed_and_spinning_helps_when_not() {
    let rate = |spec: &str| metric(&laptop(spec), "requests_per_s");
    let fit = rate("barrier:iterations=1000,threads=8");
    let over = rate("barrier:iterations=1000,threads=16");
    assert!(over < fit / 2.0, "16 threads on 8 CPUs: {over} it/s vs {fit}");
    // Not oversubscribed: spinning (the default) skips the futex sleep and
    // wakeup a passive wait pays at every barrier.
    let passive = rate("barrier:iterations=1000,threads=8,wait_policy=passive");
    assert!(fit > 1.2 * passive, "spin {fit} it/s vs passive {passive}");
}

#[test]
fn chameneos_time_grows_with_meetings_and_one_cpu_never_migrates() {
    let t = |spec: &str| metric(&laptop(spec), "completion_time_s");
    let (a, b) = (t("chameneos:meetings=5000"), t("chameneos:meetings=10000"));
    assert!((1.7..2.3).contains(&(b / a)), "{a} s then {b} s for twice the meetings");
    let one = laptop("chameneos:meetings=2000,creatures=3,cpus=0");
    assert_eq!(metric(&one, "migrations"), 0.0);
}
