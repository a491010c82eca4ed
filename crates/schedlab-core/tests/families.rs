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

fn jacobsville(spec: &str) -> f64 {
    let r =
        run(&run_spec(preset_source("jacobsville"), spec, "eevdf", 1, false)).unwrap_or_else(|e| panic!("{spec}: {e}"));
    metric(&r, "completion_time_s")
}

#[test]
fn nas_speeds_up_with_cpus_up_to_its_threads_and_slows_oversubscribed() {
    let bt = |threads: u32, cpus: &str| {
        jacobsville(&format!("nas:kernel=bt,class=A,iterations=2,threads={threads},cpus={cpus}"))
    };
    let (two, four, eight) = (bt(4, "0-1"), bt(4, "0-3"), bt(4, "0-7"));
    assert!(two > 1.8 * four, "4 threads: {two} s on 2 CPUs, {four} s on 4");
    assert!((eight - four).abs() < 0.02 * four, "no gain past the thread count: {four} vs {eight}");
    let (fit, over) = (bt(8, "0-7"), bt(16, "0-7"));
    assert!(over > fit, "oversubscribed bt: {over} s vs {fit} s");
}

#[test]
fn nas_lu_wavefront_collapses_when_oversubscribed_where_bt_degrades_gently() {
    // LU's sync_left/sync_right flags are pure busy-waits: a thread whose
    // neighbour is preempted spins out its slice. bt's barriers fall back to
    // futex sleeps (libgomp's throttled spin when oversubscribed).
    let t =
        |k: &str, threads: u32| jacobsville(&format!("nas:kernel={k},class=A,iterations=2,threads={threads},cpus=0-7"));
    let lu = t("lu", 16) / t("lu", 8);
    let bt = t("bt", 16) / t("bt", 8);
    assert!(lu > 5.0 * bt, "oversubscription slowdown: lu x{lu:.1}, bt x{bt:.1}");
}

#[test]
fn nas_ua_scales_with_cpus_and_its_many_barriers_cost_more_oversubscribed_than_bt() {
    // UA: 154 short element loops per time step (bt: 9 long plane loops).
    let t = |k: &str, threads: u32, cpus: &str| {
        jacobsville(&format!("nas:kernel={k},class=A,iterations=2,threads={threads},cpus={cpus}"))
    };
    let (two, four) = (t("ua", 4, "0-1"), t("ua", 4, "0-3"));
    assert!(two > 1.7 * four, "4 ua threads: {two} s on 2 CPUs, {four} s on 4");
    // Its work per step is NPB's count: 1980 elements x 125 points x 11
    // advances at 30 M/s = 90.75 ms of one CPU (the measured ua.A takes 18 s
    // for 200 steps), so 2 steps on 4 CPUs take a quarter of 181.5 ms and a
    // little more for the barriers and the static split's remainders.
    assert!((0.0454..0.05).contains(&four), "ua.A 2 steps on 4 CPUs: {four} s");
    let ua = t("ua", 16, "0-7") / t("ua", 8, "0-7");
    let bt = t("bt", 16, "0-7") / t("bt", 8, "0-7");
    assert!(ua > bt, "oversubscription slowdown: ua x{ua:.2}, bt x{bt:.2}");
}

#[test]
fn nas_composes_with_kworker_noise() {
    let spec = run_spec(preset_source("laptop-4c8t"), "nas:kernel=lu,class=A,iterations=2", "eevdf", 1, false);
    let quiet = metric(&run(&spec).unwrap(), "completion_time_s");
    let mut noisy = spec.clone();
    noisy.extra_workloads.push(schedlab_core::api::WorkloadSource {
        text: "kworkers:period=4ms".into(),
        format: "spec".into(),
        origin: "test".into(),
    });
    let r = run(&noisy).unwrap();
    assert!(r.workload.contains("nas:kernel=lu") && r.workload.contains("+ kworkers"), "{}", r.workload);
    assert!(metric(&r, "completion_time_s") > quiet, "kworkers steal time from the busy threads");
}

fn xeon(spec: &str) -> RunResult {
    run(&run_spec(preset_source("xeon-2s-20c"), spec, "eevdf", 1, false)).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[test]
fn pgbench_tps_rises_with_clients_and_a_pinned_run_stays_on_its_node() {
    let tps = |c: u32| metric(&xeon(&format!("pgbench:time=200ms,clients={c}")), "requests_per_s");
    let (one, four) = (tps(1), tps(4));
    assert!(four > 3.0 * one, "1 client {one} tps, 4 clients {four}");
    // Pinned to node 0's CPUs (pgbench bound to one NUMA node, SEEDS idea 4).
    let node0 = xeon("pgbench:time=200ms,clients=4,cpus=0-9;20-29");
    assert_eq!(metric(&node0, "wake_other_node_pct"), 0.0);
    assert!(metric(&node0, "requests_per_s") > 0.0);
}

#[test]
fn db_query_finishes_sooner_with_more_workers() {
    let t = |w: u32| metric(&xeon(&format!("db-query:workers={w},chunks=256")), "completion_time_s");
    let (two, eight) = (t(2), t(8));
    assert!(eight < two / 3.0, "2 workers {two} s, 8 workers {eight} s");
    assert!(xeon("db-query:chunks=64").metrics.iter().any(|m| m.name == "requests_per_s" && m.value.is_nan()));
}

#[test]
fn kv_cache_throughput_rises_with_pipeline_depth_until_the_server_saturates() {
    // One server thread, one connection: at depth 1 every request waits for
    // the round trip; deeper pipelines keep the server busy until it is the
    // bottleneck (at most one 2 us get, or 3 us set, at a time).
    let ops = |pl: u32| {
        let spec = format!("kv-cache:time=100ms,threads=1,clients=1,conns=1,pipeline={pl},client_work=500ns");
        metric(&xeon(&spec), "requests_per_s")
    };
    let (one, four, sixty_four, deep) = (ops(1), ops(4), ops(64), ops(256));
    assert!(four > 3.0 * one, "pipeline 1: {one} ops/s, 4: {four}");
    assert!((deep - sixty_four).abs() < 0.05 * sixty_four, "saturated: 64 -> {sixty_four}, 256 -> {deep}");
    assert!(deep < 1.0 / 2e-6, "{deep} ops/s is more than one server thread can serve");
}

#[test]
fn video_frame_threads_speed_up_until_row_dependencies_bind() {
    let t = |spec: &str| metric(&laptop(spec), "completion_time_s");
    let one = t("video-dec:frames=60,threads=1");
    let four = t("video-dec:frames=60,threads=4");
    assert!(four < one / 2.5, "decoder: 1 thread {one} s, 4 threads {four} s");
    // A reference needed whole (lag = all rows) serialises the frames: frame
    // threads cannot overlap and gain nothing.
    let serial = t("video-dec:frames=60,threads=4,lag=68");
    assert!(serial > 0.9 * one, "whole-frame dependency: {serial} s vs one thread {one} s");
    // The encoder's lookahead runs ahead; all frames get coded.
    let enc = laptop("video-enc:frames=40,threads=6");
    assert!(metric(&enc, "completion_time_s") > 0.0);
}

fn hikey_schedutil(spec: &str, policy: &str) -> RunResult {
    let mut s = run_spec(preset_source("hikey960"), spec, policy, 1, false);
    s.options.governor = Some("schedutil".into());
    run(&s).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[test]
fn android_use_cases_keep_their_frame_rates() {
    // The frame thread of each case runs once per period of its clock:
    // 30 fps video and camera, the audio output every 30 ms, 60 fps home
    // screen (the first period starts one period after the start).
    for (case, fps) in [("video", 30.0), ("audio", 33.3), ("camera", 30.0), ("home", 60.0)] {
        let r = hikey_schedutil(&format!("android:case={case},time=1s"), "eevdf");
        let got = metric(&r, "requests_per_s");
        assert!((fps * 0.95..=fps * 1.01).contains(&got), "{case}: {got} frames/s, want about {fps}");
        assert!(metric(&r, "power_mw") > 0.0, "{case}: no power figure");
    }
}

#[test]
fn android_video_costs_less_energy_with_energy_aware_placement() {
    // SEEDS.md idea 6's sign on video playback: EAS keeps the small tasks on
    // the LITTLE cluster at low OPPs.
    let power = |p: &str| metric(&hikey_schedutil("android:case=video,time=1s", p), "power_mw");
    let (base, eas) = (power("eevdf-eas"), power("eevdf"));
    assert!(eas < base, "eas {eas} mW vs {base} mW");
}
