//! The standard engine benchmark without Python: schbench on intel-4n-192 for
//! 2 simulated seconds (the scenario of `schedlab bench`). Prints events per
//! second of wall time (handled events; stale ones, popped and dropped, are
//! counted apart). Run with `cargo run --release --example bench`, or under
//! `valgrind --tool=callgrind` to count instructions, which repeat exactly.
//! Arguments (optional): machine preset or .toml file, workload spec, cpufreq
//! governor (`-` for none), idle governor (`menu`, the default, or `teo`).
//! With `SCHEDLAB_BENCH_METRICS=1` it also prints every metric of the run
//! (name = value), to compare a change's outputs before and after.

use schedlab_core::api::{run, MachineSource, RunOptions, RunSpec};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let machine = args.get(1).map(String::as_str).unwrap_or("intel-4n-192");
    let workload = args.get(2).map(String::as_str).unwrap_or("schbench:runtime=2s");
    // A preset name, or a machine file (`schedlab bench --scale`'s machines:
    // `python -c 'from schedlab._bench_scale import machine_toml; print(machine_toml(1024))'`).
    let path = if machine.ends_with(".toml") {
        machine.to_string()
    } else {
        format!("{}/../../python/schedlab/presets/machines/{machine}.toml", env!("CARGO_MANIFEST_DIR"))
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec = RunSpec {
        machine: MachineSource { text, format: "toml".into(), origin: path },
        workload: workload.into(),
        workload_format: "spec".into(),
        workload_origin: String::new(),
        extra_workloads: Vec::new(),
        policy: "eevdf".into(),
        seed: 0,
        // Third argument: a cpufreq governor (`performance`, ...), none by default.
        options: RunOptions {
            governor: args.get(3).filter(|g| *g != "-").cloned(),
            idle_governor: args.get(4).cloned(),
            ..RunOptions::default()
        },
    };
    let t0 = Instant::now();
    let r = run(&spec).unwrap_or_else(|e| panic!("{e}"));
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{} handled events ({} stale) in {:.3} s: {:.0} handled events/s, simulated/wall {:.2}",
        r.events_handled,
        r.events_processed - r.events_handled,
        wall,
        r.events_handled as f64 / wall,
        r.sim_time_ns as f64 / 1e9 / wall
    );
    if std::env::var_os("SCHEDLAB_BENCH_METRICS").is_some() {
        for m in &r.metrics {
            println!("{} = {}", m.name, m.value);
        }
    }
}
