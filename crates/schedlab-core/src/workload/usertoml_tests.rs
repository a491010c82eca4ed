//! User programs in TOML: the README's example runs, each primitive acts,
//! and mistakes name their path.

use super::*;
use crate::features::Features;
use crate::testkit::{machine_from_toml, sim_config, sim_with, TWO_LLC};
use crate::workload::build_workload;

/// The README's example (`examples/programs/prodcons.toml`): a producer
/// hands 200 items through a bounded pipe to 3 consumers, which update a
/// shared counter under a mutex, then all meet at a barrier.
fn example() -> String {
    let path = format!("{}/../../examples/programs/prodcons.toml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn build(text: &str) -> Result<Workload> {
    build_workload(text, "toml", "prog.toml", &machine_from_toml(TWO_LLC))
}

fn end(w: &Workload) -> Ns {
    let mut cfg = sim_config(Features::mainline());
    cfg.check_invariants = true;
    let mut sim = sim_with(TWO_LLC, w, cfg);
    sim.run(u64::MAX).unwrap();
    sim.now
}

#[test]
fn the_readme_example_runs_to_the_end() {
    // 200 items, the 3 consumers take 66 each: 2 are left in the pipe, as a
    // real program with this count would leave them.
    let w = build(&example()).unwrap();
    assert_eq!(
        w.tasks.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["producer", "consumer-0", "consumer-1", "consumer-2"]
    );
    assert_eq!(w.barriers[0].parties, 4);
    let t = end(&w);
    // 66 items of ~62 us each per consumer, in parallel: over 4 ms, and
    // well under the 12.3 ms one consumer alone would take (WF_SYNC wakeups
    // stack some consumers on the producer's CPU for a while).
    assert!((4_000_000..9_000_000).contains(&t), "ended at {t}");
}

#[test]
fn a_semaphore_handoff_and_a_timer_loop_act() {
    let w = build(
        r#"
semaphores = { go = 0 }
[[task]]
name = "a"
loop = 5
ops = [ { compute = "100us" }, { sempost = "go" }, { timer = "1ms", mode = "absolute" } ]
[[task]]
name = "b"
loop = 5
ops = [ { semwait = "go", spin = "0" }, { compute = "50us" } ]
"#,
    )
    .unwrap();
    // The timer anchors at its first use (after the first 100 us): its 5th
    // expiry is at 5.1 ms, and b follows a each period.
    let t = end(&w);
    assert!((5_100_000..5_200_000).contains(&t), "ended at {t}");
}

#[test]
fn requests_and_duration_make_a_throughput_program() {
    let w = build(
        r#"
duration = "100ms"
primary = "requests_per_s"
[[task]]
name = "server"
loop = 0
ops = [ { request = "start" }, { compute = "100us" }, { sleep = "100us" }, { request = "done" } ]
"#,
    )
    .unwrap();
    assert_eq!(w.duration_ns, Some(100_000_000));
    assert_eq!(w.primary, PrimaryMetric::Throughput);
}

#[test]
fn mistakes_name_their_path() {
    let cases: &[(&str, &str)] = &[
        ("[[task]]\nname = \"a\"\nops = [ { jump = 1 } ]", "program.task[0].ops[0]"),
        ("[[task]]\nname = \"a\"\nops = [ { send = \"nowhere\" } ]", "program.task[0].ops[0].send"),
        ("[[task]]\nname = \"a\"\nops = [ { compute = \"fast\" } ]", "program.task[0].ops[0].compute"),
        ("[[task]]\nname = \"a\"\nloop = 0\nops = [ { compute = \"1ms\" } ]", "program.task[0].loop"),
        ("[[task]]\nname = \"a\"\nops = [ { request = \"start\" } ]", "program.task[0].ops"),
        (
            "[[task]]\nname = \"a\"\ncount = 2\nops = [ { park = true } ]\n[[task]]\nname = \"b\"\nops = [ { unpark = \"a\" } ]",
            "program.task[1].ops[0].unpark",
        ),
        ("[[task]]\nname = \"a\"\npolicy = \"fifo\"\nops = [ { compute = \"1ms\" } ]", "program.task[0].priority"),
        ("[[task]]\nname = \"a\"\ncpus = \"0-99\"\nops = [ { compute = \"1ms\" } ]", "program.task[0].cpus"),
        ("[[task]]\nname = \"a\"\nops = [ { compute = \"1ms\", sync = true } ]", "program.task[0].ops[0].sync"),
        ("colour = \"red\"\n[[task]]\nname = \"a\"\nops = [ { compute = \"1ms\" } ]", "program.colour"),
    ];
    for (text, key) in cases {
        let e = build(text).unwrap_err().to_string();
        assert!(e.contains(&format!("prog.toml: {key}:")), "{text}\n=> {e}");
    }
}

#[test]
fn a_cpus_op_moves_the_task_where_it_says() {
    let w = build("[[task]]\nname = \"a\"\nops = [ { compute = \"1ms\" }, { cpus = \"6\" }, { compute = \"1ms\" } ]")
        .unwrap();
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    let last_cpu = sim.trace.as_ref().unwrap().iter().rev().find_map(|e| match e.ev {
        crate::trace::Event::Switch { cpu, next: Some(t), .. } if t.0 == 0 => Some(cpu.0),
        _ => None,
    });
    assert_eq!(last_cpu, Some(6));
    assert!(build("[[task]]\nname = \"a\"\nops = [ { cpus = \"99\" } ]")
        .unwrap_err()
        .to_string()
        .contains("ops[0].cpus"));
}

/// A parent forking a worker every 2 ms, 4 times; each worker computes 3 ms.
const FORKS: &str = r#"
[[task]]
name = "parent"
ops = [ { loop = 4, do = [ { fork = "worker" }, { sleep = "2ms" } ] } ]

[[task]]
name = "worker"
count = 4
forked = true
ops = [ { compute = "3ms" } ]
"#;

#[test]
fn fork_creates_each_worker_when_its_parent_forks_it() {
    let w = build(FORKS).unwrap();
    assert_eq!(w.tasks.len(), 5);
    assert!(w.tasks[1..].iter().all(|t| t.start == crate::workload::StartKind::Spawned));
    // Forks at 0, 2, 4 and 6 ms, 3 ms of work each, CPUs to spare: the last
    // worker ends at about 9 ms (not 3 ms, as if all had started at once).
    let t = end(&w);
    assert!((8_900_000..9_600_000).contains(&t), "{t} ns");
}

#[test]
fn forks_must_match_their_tasks() {
    let bad = |from: &str, to: &str, key: &str| {
        let e = build(&FORKS.replace(from, to)).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    };
    // Three forks of four workers; a fork in an endless loop; a task not
    // marked forked; a forked task nobody forks; a forking task with two
    // instances.
    bad("loop = 4", "loop = 3", "task[0].ops[0].do[0].fork");
    let endless = format!("duration = \"20ms\"\n{}", FORKS.replace("name = \"parent\"", "name = \"parent\"\nloop = 0"));
    let e = build(&endless).unwrap_err().to_string();
    assert!(e.contains("task[0].ops[0].do[0].fork") && e.contains("endless"), "{e}");
    bad("forked = true", "forked = false", "task[0].ops[0].do[0].fork");
    bad("{ fork = \"worker\" }, ", "", "task[1].forked");
    bad("name = \"parent\"", "name = \"parent\"\ncount = 2", "task[0].ops[0].do[0].fork");
}

#[test]
fn uclamp_keys_set_every_instance_and_bad_ones_name_their_path() {
    let prog = |keys: &str| format!("[[task]]\nname = \"t\"\ncount = 2\n{keys}\nops = [ {{ compute = \"1ms\" }} ]\n");
    let w = build(&prog("uclamp_min = 128\nuclamp_max = 640")).unwrap();
    assert!(w.tasks.iter().all(|t| t.uclamp.min == Some(128) && t.uclamp.max == Some(640)));
    for (keys, path) in
        [("uclamp_min = 2000", "task[0].uclamp_min"), ("uclamp_min = 700\nuclamp_max = 600", "task[0].uclamp_min")]
    {
        let e = build(&prog(keys)).unwrap_err().to_string();
        assert!(e.contains(path), "{keys}: {e}");
    }
}
