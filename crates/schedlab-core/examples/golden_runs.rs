//! Golden runs: every metric of a fixed set of short runs (several machines,
//! workload families, policies and seeds), printed as `run | name = value`
//! lines. An engine change that must not move a decision (a speed-up, a
//! refactor, a cost that defaults to the old behaviour) is checked by running
//! this before and after it and comparing the outputs byte for byte:
//!
//!     cargo run -q --release --example golden_runs -p schedlab-core > before.txt
//!     (change)
//!     cargo run -q --release --example golden_runs -p schedlab-core > after.txt
//!     cmp before.txt after.txt
//!
//! The set is chosen to reach most of the engine: SMT, clusters, several
//! LLCs and NUMA nodes, asymmetric capacities with an energy model, the RT
//! class and noise, pipes and futexes, and old and new kernel profiles. It
//! takes about a minute in release mode.

use schedlab_core::api::{run, MachineSource, RunOptions, RunSpec, WorkloadSource};

const RUNS: &[(&str, &str, &str)] = &[
    ("laptop-4c8t", "hackbench:groups=2,fds=10,loops=50,ipc=pipe,mode=thread", "eevdf"),
    ("laptop-4c8t", "hackbench:groups=2,fds=10,loops=50", "v6.12"),
    ("laptop-4c8t", "pipe:loops=5000,mode=thread", "v6.12+NI_RANDOM"),
    ("laptop-4c8t", "workqueue:threads=4,chunks=200,chunk=1ms", "v5.9"),
    ("intel-4n-192", "schbench:runtime=300ms", "eevdf"),
    ("intel-4n-192", "schbench:runtime=300ms", "v6.12"),
    ("xeon-2s-20c", "barrier:threads=40,iterations=50", "eevdf"),
    ("xeon-2s-44c", "nas", "v7.1"),
    ("threadripper-3970x", "sieve:threads=32,work=20ms", "eevdf"),
    ("kunpeng920", "chameneos", "eevdf"),
    ("jacobsville", "kv-cache", "eevdf"),
    ("hikey960", "android", "eevdf"),
    ("pixel2", "video-dec", "eevdf"),
    ("xeon-e7-8870v4", "pgbench", "v4.14"),
    // With the machine's noise beside a benchmark (`-w sieve -w rt-periodic ...`).
    ("laptop-4c8t", "sieve:threads=8,work=10ms+rt-periodic+kworkers+irq", "eevdf"),
];

fn main() {
    let dir = format!("{}/../../python/schedlab/presets/machines", env!("CARGO_MANIFEST_DIR"));
    for (machine, workload, policy) in RUNS {
        for seed in 0..2u64 {
            let path = format!("{dir}/{machine}.toml");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut parts = workload.split('+');
            let first = parts.next().unwrap_or_default();
            let spec = RunSpec {
                machine: MachineSource { text, format: "toml".into(), origin: path },
                workload: first.into(),
                workload_format: "spec".into(),
                workload_origin: String::new(),
                extra_workloads: parts
                    .map(|w| WorkloadSource { text: w.into(), format: "spec".into(), origin: "workload".into() })
                    .collect(),
                policy: (*policy).into(),
                seed,
                options: RunOptions::default(),
            };
            let tag = format!("{machine} {workload} {policy} seed {seed}");
            match run(&spec) {
                Ok(r) => {
                    println!("{tag} | events_handled = {}", r.events_handled);
                    for m in &r.metrics {
                        println!("{tag} | {} = {}", m.name, m.value);
                    }
                }
                Err(e) => println!("{tag} | error = {e}"),
            }
        }
    }
}
