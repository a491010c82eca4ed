//! Golden runs: a handful of short runs over several machines, workloads,
//! policies and governors, each printed as its metrics and a hash of its
//! full ftrace-format trace. Two builds that make the same decisions print
//! the same text, so an engine change that must not change behaviour is
//! checked by comparing this output byte for byte before and after:
//! `cargo run -q --release --example golden_runs -p schedlab-core > before.txt`.

use schedlab_core::api::{run, MachineSource, RunOptions, RunSpec, WorkloadSource};

/// FNV-1a, 64-bit: a stable hash of the trace text (no dependency, no
/// per-process random state as std's `DefaultHasher` might have).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One run: machine preset, workload spec (parts after ` + ` are extra
/// workloads), policy, cpufreq governor, idle governor.
type Case = (&'static str, &'static str, &'static str, Option<&'static str>, Option<&'static str>);

fn main() {
    let cases: &[Case] = &[
        ("intel-4n-192", "schbench:runtime=300ms", "eevdf", None, None),
        ("intel-4n-192", "hackbench:groups=4,loops=50", "eevdf", None, Some("menu")),
        ("laptop-4c8t", "hackbench:groups=2,fds=4,loops=40", "eevdf", Some("schedutil"), None),
        ("xeon-2s-20c", "schbench:runtime=200ms", "v6.12", None, Some("teo")),
        ("hikey960", "sieve:threads=6,work=20ms", "eevdf", Some("schedutil"), None),
        (
            "pixel2",
            "sieve:threads=4,work=20ms + rt-periodic:count=2,period=10ms,runtime=2ms",
            "eevdf",
            Some("schedutil"),
            None,
        ),
        ("jacobsville", "hackbench:groups=2,loops=30 + irq:preset=pingflood", "eevdf", None, None),
        ("kunpeng920", "workqueue:threads=8,chunks=40", "eevdf", None, None),
        ("threadripper-3970x", "hackbench:groups=2,loops=30", "cosmos", None, None),
        ("xeon-2s-44c", "hackbench:groups=2,loops=30", "bmq", None, None),
        ("xeon-e7-8870v4", "schbench:runtime=100ms", "v5.9", None, None),
        ("laptop-4c8t", "sieve:threads=2,work=20ms + kworkers:period=4ms", "v4.14", None, None),
    ];
    let dir = format!("{}/../../python/schedlab/presets/machines", env!("CARGO_MANIFEST_DIR"));
    for &(machine, workload, policy, gov, idle) in cases {
        let path = format!("{dir}/{machine}.toml");
        // Parts after the first (` + `) are extra workloads (noise beside a benchmark).
        let mut parts = workload.split(" + ");
        let first = parts.next().unwrap_or_default();
        let extra =
            parts.map(|w| WorkloadSource { text: w.into(), format: "spec".into(), origin: String::new() }).collect();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let spec = RunSpec {
            machine: MachineSource { text, format: "toml".into(), origin: path },
            workload: first.into(),
            workload_format: "spec".into(),
            workload_origin: String::new(),
            extra_workloads: extra,
            policy: policy.into(),
            seed: 7,
            options: RunOptions {
                trace: true,
                governor: gov.map(str::to_string),
                idle_governor: idle.map(str::to_string),
                max_time_ns: 2_000_000_000,
                ..RunOptions::default()
            },
        };
        println!("== {machine} {workload} {policy} {gov:?} {idle:?}");
        match run(&spec) {
            Ok(r) => {
                let trace = r.trace.as_deref().unwrap_or("");
                println!(
                    "events {} handled {} sim_ns {} trace {} bytes fnv {:016x}",
                    r.events_processed,
                    r.events_handled,
                    r.sim_time_ns,
                    trace.len(),
                    fnv1a(trace.as_bytes())
                );
                for m in &r.metrics {
                    println!("{} = {}", m.name, m.value);
                }
            }
            Err(e) => println!("error: {e}"),
        }
    }
}
