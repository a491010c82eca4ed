//! Byte fuzzing of every parser of user input, in the normal suite (the long
//! runs are cargo-fuzz's, see fuzz/README.md): random bytes, and random edits
//! of valid inputs (the fuzz seed corpus), must give `Ok` or `Err`, never a
//! panic. Crashes the fuzzers found are pinned below as regression tests.

use proptest::prelude::*;
use schedlab_core::api::{analyze_trace, policy_show};
use schedlab_core::policy::parse_policy;
use schedlab_core::testkit::{preset_source, SMT_2LLC};
use schedlab_core::topology::{build_sched_domains, parse_machine, Machine};
use schedlab_core::trace::{frames_of, read_ftrace};
use schedlab_core::workload::build_workloads;

/// Valid inputs to edit: what a user types, close enough to the grammar that
/// edits reach past the first token.
const WORKLOAD_SPECS: &[&str] = &[
    "hackbench:groups=2,fds=4,loops=20",
    "schbench:message_threads=1,threads=4,runtime=1s,warmup=0s",
    "workqueue:threads=50%,chunks=2000,jitter=10",
    "sieve:threads=2",
    "kworkers:period=4ms",
    "irq:preset=pingflood,cpus=0-1",
    "rt-periodic",
    "pipe:loops=100,tasks=3",
    "barrier:iterations=10,threads=4,wait_policy=passive",
    "nas:kernel=lu,class=A,iterations=2,threads=4",
    "chameneos:creatures=3,meetings=10",
    "kv-cache:threads=2,clients=2,conns=2,pipeline=3,time=10ms",
    "pgbench:clients=2,time=10ms,script=select-only",
    "db-query:workers=2,chunks=8",
    "video-enc:frames=4,threads=2,rows=8,lag=2",
    "video-dec:frames=4,threads=3,rows=8",
];
const WORKLOAD_FILES: &[&str] = &[
    include_str!("../../../tests/python/fixtures/hackbench-small.toml"),
    "[[workload]]\nfamily = \"sieve\"\nthreads = 2\n\n[[workload]]\nfamily = \"irq\"\npreset = \"pingflood\"\n",
    "{\"family\": \"hackbench\", \"groups\": 1, \"loops\": 10}",
    // rt-app, in workgen's relaxed form.
    "{\"global\": {\"duration\": 1}, \"tasks\": {\"a\": {\"instance\": 2, \"cpus\": [0, 1], \"phases\": {\"p\": {\"loop\": 3, \"run\": 100, \"timer\": {\"ref\": \"unique\", \"period\": 1000}, \"lock\": \"m\", \"signal\": \"c\", \"unlock\": \"m\", \"barrier\": \"b\"}, \"q\": {\"cpus\": [1], \"policy\": \"SCHED_RR\", \"priority\": 30, \"suspend\", \"runtime\": 50,}}}, \"b\": {\"loop\": 2, \"resume\": \"a\", \"fork\": \"t\", \"yield\": \"\", \"barrier\": \"b\", \"mem\": 4096, \"iorun\": 100}, \"t\": {\"instance\": 0, \"loop\": 1, \"run\": 10}}}",
    // A user program.
    "pipes = { q = 4 }\nmutexes = [\"m\"]\nconds = [\"c\"]\nbarriers = [\"b\"]\nsemaphores = { s = 1 }\n[[task]]\nname = \"a\"\ncount = 2\nloop = 3\nops = [ { compute = \"exp:10us\" }, { send = \"q\", sync = true }, { lock = \"m\" }, { unlock = \"m\" }, { semwait = \"s\", spin = \"1us\" }, { sempost = \"s\" }, { loop = 2, do = [ { sleep = \"5us\" } ] }, { cpus = \"0-1\" }, { yield = true }, { policy = \"fifo\", priority = 20 }, { policy = \"batch\", priority = 5 } ]\n[[task]]\nname = \"b\"\nops = [ { recv = \"q\" }, { recv = \"q\" }, { timer = \"1ms\", mode = \"absolute\" }, { request = \"start\" }, { request = \"done\" }, { fork = \"c\" } ]\n[[task]]\nname = \"c\"\nforked = true\nops = [ { compute = \"1us\" } ]\n",
];
const POLICIES: &[&str] =
    &["eevdf", "eevdf+prefer_prev_idle_core", "eevdf-SIS_UTIL", "v6.12", "pinned", "cosmos", "bmq"];
const TRACES: &[&str] = &[
    include_str!("../../../fuzz/corpus/ftrace_read/seed-kernel"),
    include_str!("../../../fuzz/corpus/ftrace_read/seed-sim"),
];

fn machine() -> Machine {
    parse_machine(SMT_2LLC, "toml", "test").unwrap()
}

/// One edit of a text: replace, insert or delete a byte at a position
/// (taken modulo the length), the edits a byte fuzzer starts from.
#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    /// Repeat a slice: grows counts and nesting.
    Duplicate(usize, usize),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    // Bytes biased to the grammars' own punctuation and digits.
    let byte = prop_oneof![any::<u8>(), prop::sample::select(b"0123456789=,:+-%[]{}\"\n .#".to_vec())];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(p, b)| Edit::Replace(p, b)),
        (any::<usize>(), byte).prop_map(|(p, b)| Edit::Insert(p, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), 1usize..40).prop_map(|(p, n)| Edit::Duplicate(p, n)),
    ]
}

fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut b = seed.as_bytes().to_vec();
    for e in edits {
        let n = b.len().max(1);
        match *e {
            Edit::Replace(p, x) if !b.is_empty() => b[p % n] = x,
            Edit::Insert(p, x) => b.insert(p % (b.len() + 1), x),
            Edit::Delete(p) if !b.is_empty() => {
                b.remove(p % n);
            }
            Edit::Duplicate(p, len) if !b.is_empty() => {
                let start = p % n;
                let part = b[start..(start + len).min(b.len())].to_vec();
                b.splice(start..start, part);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn edited(seeds: &'static [&'static str]) -> impl Strategy<Value = String> {
    (prop::sample::select(seeds), prop::collection::vec(edit_strategy(), 1..8)).prop_map(|(s, e)| apply(s, &e))
}

fn random_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn preset_texts() -> &'static [&'static str] {
    use std::sync::OnceLock;
    static T: OnceLock<Vec<&'static str>> = OnceLock::new();
    T.get_or_init(|| {
        ["laptop-4c8t", "pixel2", "hikey960", "xeon-2s-44c"]
            .iter()
            .map(|n| &*Box::leak(preset_source(n).text.into_boxed_str()))
            .collect()
    })
}

fn machine_both_formats(text: &str) {
    if let Ok(m) = parse_machine(text, "toml", "f.toml") {
        let _ = build_sched_domains(&m);
    }
    if let Ok(m) = parse_machine(text, "json", "f.json") {
        let _ = build_sched_domains(&m);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn machine_parser_never_panics_on_bytes(text in random_text()) {
        machine_both_formats(&text);
    }

    #[test]
    fn machine_parser_never_panics_on_edited_presets(
        text in (prop::sample::select(preset_texts()), prop::collection::vec(edit_strategy(), 1..8))
            .prop_map(|(s, e)| apply(s, &e))
    ) {
        machine_both_formats(&text);
    }

    #[test]
    fn workload_spec_parser_never_panics(text in prop_oneof![random_text(), edited(WORKLOAD_SPECS)]) {
        let _ = build_workloads(&text, "spec", "workload", &machine());
    }

    #[test]
    fn workload_file_parser_never_panics(text in prop_oneof![random_text(), edited(WORKLOAD_FILES)]) {
        let m = machine();
        let _ = build_workloads(&text, "toml", "w.toml", &m);
        let _ = build_workloads(&text, "json", "w.json", &m);
    }

    #[test]
    fn policy_parser_never_panics(text in prop_oneof![random_text(), edited(POLICIES)]) {
        if let Ok(p) = parse_policy(&text) {
            let _ = p.cpuset(&machine());
        }
        let _ = policy_show(&text);
    }

    #[test]
    fn trace_readers_never_panic(text in prop_oneof![random_text(), edited(TRACES)]) {
        let _ = read_ftrace(&text, "t.trace");
        let _ = analyze_trace(&text, "t.trace");
        // The tables schedlab.trace hands to pandas: every line either a row
        // of one table or skipped, never lost.
        let frames = frames_of(&text);
        let rows: usize = frames.events.iter().map(|e| e.time_s.len()).sum();
        prop_assert_eq!(rows as u64 + frames.skipped, text.lines().count() as u64);
    }
}

#[test]
fn seeds_are_valid_inputs() {
    // The edits above start from inputs that parse, or they would only test
    // the first error each parser reports.
    let m = machine();
    for s in WORKLOAD_SPECS {
        build_workloads(s, "spec", "workload", &m).unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    build_workloads(WORKLOAD_FILES[3], "json", "w.json", &m).unwrap_or_else(|e| panic!("rt-app seed: {e}"));
    build_workloads(WORKLOAD_FILES[4], "toml", "w.toml", &m).unwrap_or_else(|e| panic!("program seed: {e}"));
    for p in POLICIES {
        parse_policy(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    }
    for t in TRACES {
        assert!(!read_ftrace(t, "t").unwrap().events.is_empty());
    }
    for t in preset_texts() {
        parse_machine(t, "toml", "preset").unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Edited workload files that still build must run (for a short while)
    /// without a panic: an error is fine, a crash is not.
    #[test]
    fn edited_workloads_that_build_also_run(text in prop_oneof![edited(WORKLOAD_FILES), edited(WORKLOAD_SPECS)]) {
        use schedlab_core::api::{run, RunOptions, RunSpec};
        for format in ["json", "toml", "spec"] {
            if build_workloads(&text, format, "w", &machine()).is_err() {
                continue;
            }
            let spec = RunSpec {
                machine: schedlab_core::testkit::inline_source(SMT_2LLC),
                workload: text.clone(),
                workload_format: format.into(),
                workload_origin: "w".into(),
                extra_workloads: Vec::new(),
                policy: "eevdf".into(),
                seed: 1,
                options: RunOptions { max_time_ns: 20_000_000, ..RunOptions::default() },
            };
            let _ = run(&spec);
        }
    }
}
