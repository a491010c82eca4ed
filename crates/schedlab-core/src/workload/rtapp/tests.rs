//! rt-app files, written here from rt-app's format description (doc/tutorial.txt
//! of the rt-app project), built and run on the engine.

use super::*;
use crate::features::Features;
use crate::testkit::{machine_from_toml, sim_config, sim_with, HIKEY, TWO_LLC};
use crate::workload::build_workload;
use crate::workload::ops::Op;
use crate::workload::Dist;

const MS: Ns = 1_000_000;

fn build_on(toml: &str, json: &str) -> Result<Workload> {
    build_workload(json, "json", "test.json", &machine_from_toml(toml))
}

/// Runs the file on the 8-CPU test machine; returns the end time and the
/// exit time of each task.
fn run(json: &str) -> (Ns, Vec<Ns>) {
    let w = build_on(TWO_LLC, json).unwrap();
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    cfg.check_invariants = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    let trace = sim.trace.as_ref().unwrap();
    let exits = (0..w.tasks.len() as u32)
        .map(|i| {
            trace
                .iter()
                .find(|e| matches!(e.ev, crate::trace::Event::Exit { task } if task.0 == i))
                .map_or(Ns::MAX, |e| e.time)
        })
        .collect();
    (sim.now, exits)
}

fn error(json: &str) -> String {
    build_on(TWO_LLC, json).unwrap_err().to_string()
}

#[test]
fn a_periodic_thread_keeps_its_timer_period() {
    // 10 periods of 10 ms with 2 ms of work: the last expiry is 100 ms after
    // the thread's start, whatever the run's wakeup costs.
    let (_, exits) = run(r#"{"tasks": {"p": {"loop": 10, "run": 2000, "timer": {"ref": "unique", "period": 10000}}}}"#);
    assert!((100 * MS..101 * MS).contains(&exits[0]), "exit at {}", exits[0]);
}

#[test]
fn phases_run_in_file_order_each_its_own_loop_count() {
    // Phase "a": 3 x (1 ms run + 1 ms sleep); phase "b": 2 x 0.5 ms; once.
    let (_, exits) = run(r#"{
        "global": {"duration": -1, "logdir": "/tmp", "ftrace": "none"},
        "tasks": {"t": {"loop": 1, "phases": {
            "a": {"loop": 3, "run": 1000, "sleep": 1000},
            "b": {"loop": 2, "run": 500}
        }}}
    }"#);
    assert!((7 * MS..7 * MS + MS / 10).contains(&exits[0]), "exit at {}", exits[0]);
    // Instances and their names: rt-app's `<name>-<index>`.
    let w =
        build_on(TWO_LLC, r#"{"tasks": {"a": {"instance": 2, "loop": 1, "run": 10}, "b": {"loop": 1, "run": 10}}}"#)
            .unwrap();
    let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a-0", "a-1", "b-2"]);
}

#[test]
fn a_consumer_waits_on_a_condition_the_producer_signals() {
    // The consumer holds the mutex and waits; the producer runs 3 ms, then
    // signals under the mutex. The consumer resumes after the producer.
    let (_, exits) = run(r#"{"tasks": {
        "consumer": {"loop": 1, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 100},
        "producer": {"loop": 1, "delay": 500, "run": 3000, "lock": "m", "signal": "c", "unlock": "m"}
    }}"#);
    assert!(exits[0] > exits[1] - 200_000, "consumer {} producer {}", exits[0], exits[1]);
    assert!((3_500_000..3_800_000).contains(&exits[0]), "consumer exit at {}", exits[0]);
}

#[test]
fn suspend_and_resume_hand_over_between_threads() {
    let (_, exits) = run(r#"{"tasks": {
        "a": {"loop": 1, "suspend": "a", "run": 1000},
        "b": {"loop": 1, "delay": 100, "run": 2000, "resume": "a"}
    }}"#);
    // a wakes when b resumes it, at ~2.1 ms, then runs 1 ms.
    assert!((3_100_000..3_300_000).contains(&exits[0]), "a exit at {}", exits[0]);
}

#[test]
fn threads_meet_at_a_barrier_every_loop() {
    // Fast (1 ms) and slow (3 ms) threads, 5 loops through one barrier: both
    // go at the slow one's pace, ~15 ms.
    let (_, exits) = run(r#"{"tasks": {
        "fast": {"loop": 5, "run": 1000, "barrier": "b"},
        "slow": {"loop": 5, "run": 3000, "barrier": "b"}
    }}"#);
    for e in exits {
        assert!((15 * MS..15 * MS + MS / 2).contains(&e), "exit at {e}");
    }
}

#[test]
fn runtime_is_wall_time_and_run_is_work() {
    // On the HiKey, calibrated on a big CPU: `run` of 10 ms takes 10 ms on
    // a big CPU and 1024/462 times that on a little one; `runtime` of 10 ms
    // takes 10 ms (plus at most one 32 us chunk) on either.
    let end = |ev: &str, cpu: u32| {
        let json = format!(
            r#"{{"global": {{"calibration": "CPU4"}}, "tasks": {{"x": {{"loop": 1, "cpus": [{cpu}], "{ev}": 10000}}}}}}"#
        );
        let w = build_on(HIKEY, &json).unwrap();
        let mut sim = sim_with(HIKEY, &w, sim_config(Features::mainline()));
        sim.run(u64::MAX).unwrap();
        sim.now
    };
    let (run_big, run_little) = (end("run", 4), end("run", 0));
    assert!((10 * MS..10 * MS + MS / 10).contains(&run_big), "run on big: {run_big}");
    let ratio = run_little as f64 / run_big as f64;
    assert!((2.1..2.3).contains(&ratio), "run little/big {ratio}");
    for cpu in [0, 4] {
        let wall = end("runtime", cpu);
        assert!((10 * MS..10 * MS + MS / 10).contains(&wall), "runtime on CPU {cpu}: {wall}");
    }
}

#[test]
fn run_is_calibrated_on_cpu0_unless_told_otherwise() {
    // HiKey: CPU 0 is little (capacity 462). `run` 1000 us is 1000 us there:
    // 462/1024 of that as full-capacity work; calibrated on CPU 4 (big), 1000 us.
    let work = |global: &str| {
        let w = build_on(HIKEY, &format!(r#"{{{global}"tasks": {{"t": {{"loop": 1, "run": 1000}}}}}}"#)).unwrap();
        let Program::Ops(o) = &w.tasks[0].program else { panic!() };
        o.code().iter().find_map(|op| if let Op::Compute(Dist::Fixed(n)) = op { Some(*n) } else { None }).unwrap()
    };
    let cap0 = machine_from_toml(HIKEY).capacity_orig(CpuId(0)) as u64;
    assert_eq!(work(""), 1_000_000 * cap0 / 1024);
    assert_eq!(work(r#""global": {"calibration": "CPU4"}, "#), 1_000_000);
}

#[test]
fn priority_is_rt_priority_or_nice_and_policies_apply() {
    let w = build_on(
        TWO_LLC,
        r#"{"global": {"default_policy": "SCHED_FIFO"}, "tasks": {
            "rt": {"loop": 1, "run": 10},
            "rt2": {"loop": 1, "priority": 42, "policy": "SCHED_RR", "run": 10},
            "fair": {"loop": 1, "policy": "SCHED_OTHER", "priority": -5, "cpus": [2, 3], "run": 10}
        }}"#,
    )
    .unwrap();
    assert_eq!((w.tasks[0].policy, w.tasks[0].rt_priority), (SchedPolicy::Fifo, 10));
    assert_eq!((w.tasks[1].policy, w.tasks[1].rt_priority), (SchedPolicy::Rr, 42));
    assert_eq!((w.tasks[2].policy, w.tasks[2].nice), (SchedPolicy::Normal, -5));
    assert_eq!(w.tasks[2].allowed.unwrap().to_list_string(), "2-3");
}

#[test]
fn comments_are_allowed_and_duration_bounds_a_forever_loop() {
    let w = build_on(
        TWO_LLC,
        "/* a heartbeat */ {\"global\": {\"duration\": 2}, // two seconds\n \"tasks\": {\"hb\": {\"run\": 100, \"sleep\": 900}}}",
    )
    .unwrap();
    assert_eq!(w.duration_ns, Some(2_000_000_000));
}

#[test]
fn bad_files_fail_with_the_key_and_its_path() {
    let cases: &[(&str, &str)] = &[
        (r#"{"tasks": {"t": {"loop": 1, "run": 10, "jump": 5}}}"#, "rtapp.tasks.t.jump"),
        (
            r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"run": 1, "frobnicate": 2}}}}}"#,
            "rtapp.tasks.t.phases.p.frobnicate",
        ),
        (r#"{"tasks": {"t": {"loop": 1, "run": 10, "loop": 2}}}"#, "rtapp.tasks.t.loop"),
        (r#"{"tasks": {"t": {"loop": 1, "fork": "u"}}}"#, "rtapp.tasks.t.fork"),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 10, "fork": "u"}, "u": {"instance": 0, "loop": 1, "run": 5}}}"#,
            "rtapp.tasks.t.fork",
        ),
        (
            r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"util_min": 100, "run": 1}}}}}"#,
            "rtapp.tasks.t.phases.p.util_min",
        ),
        (r#"{"tasks": {"t": {"loop": 1, "util_max": 1025, "run": 1}}}"#, "rtapp.tasks.t.util_max"),
        (r#"{"tasks": {"t": {"loop": 1, "util_min": 600, "util_max": 500, "run": 1}}}"#, "rtapp.tasks.t.util_min"),
        (r#"{"tasks": {"t": {"loop": 1, "policy": "SCHED_DEADLINE", "run": 1}}}"#, "rtapp.tasks.t.policy"),
        (r#"{"tasks": {"t": {"run": 10}}}"#, "rtapp.tasks.t.loop"),
        (r#"{"tasks": {"t": {"loop": 1, "cpus": [8], "run": 1}}}"#, "rtapp.tasks.t.cpus"),
        (r#"{"tasks": {"t": {"loop": 1, "run": -3}}}"#, "rtapp.tasks.t.run"),
        (r#"{"tasks": {"t": {"instance": 2, "loop": 1, "timer": {"ref": "tick", "period": 100}}}}"#, "rtapp.tasks.t"),
        (r#"{"global": {"verbose": true}, "tasks": {"t": {"loop": 1, "run": 1}}}"#, "rtapp.global.verbose"),
        (r#"{"global": {"duration": 1}, "tasks": {"t": {"signal": "c"}}}"#, "rtapp.tasks.t"),
        (
            r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"priority": 5, "run": 1}}}}}"#,
            "rtapp.tasks.t.phases.p.priority",
        ),
        (
            r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"policy": "SCHED_FIFO", "priority": 0, "run": 1}}}}}"#,
            "rtapp.tasks.t.phases.p.priority",
        ),
        (r#"{"tasks": {"t": {"loop": 1, "phases": {"p": {"cpus": [9], "run": 1}}}}}"#, "rtapp.tasks.t.phases.p.cpus"),
    ];
    for (json, key) in cases {
        let e = error(json);
        assert!(e.contains(&format!("{key}:")) || e.contains(&format!("{key} ")), "{json}: {e}");
        assert!(e.contains("test.json"), "{e}");
    }
}

#[test]
fn phase_cpus_move_the_thread_between_phases() {
    // The tutorial's shape: a thread allowed CPUs 4-6 whose first phase runs
    // on 0-1, the second on 2, the third on the thread's own 4-6.
    let w = build_on(
        TWO_LLC,
        r#"{"tasks": {"t": {"loop": 1, "cpus": [4, 5, 6], "phases": {
            "p1": {"cpus": [0, 1], "run": 2000},
            "p2": {"cpus": [2], "run": 2000},
            "p3": {"run": 2000}
        }}}}"#,
    )
    .unwrap();
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    cfg.check_invariants = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    let on_cpu = |from: Ns, to: Ns| -> Vec<u32> {
        let mut cpus: Vec<u32> = sim
            .trace
            .as_ref()
            .unwrap()
            .iter()
            .filter(|e| (from..to).contains(&e.time))
            .filter_map(|e| match e.ev {
                crate::trace::Event::Switch { cpu, next: Some(t), .. } if t.0 == 0 => Some(cpu.0),
                _ => None,
            })
            .collect();
        cpus.dedup();
        cpus
    };
    // The thread starts where its own mask put it (4-6), then moves.
    let first = on_cpu(0, 1_900_000);
    assert!((4..=6).contains(&first[0]) && first[1..].iter().all(|c| *c <= 1), "phase 1 on {first:?}");
    assert_eq!(on_cpu(1_900_000, 3_900_000), vec![2], "phase 2");
    assert!(
        on_cpu(3_900_000, 7_000_000).iter().all(|c| (4..=6).contains(c)),
        "phase 3 on {:?}",
        on_cpu(3_900_000, 7_000_000)
    );
    assert!((6 * MS..6 * MS + MS / 5).contains(&sim.now), "ended at {}", sim.now);
}

#[test]
fn a_thread_with_loop_zero_runs_no_phase() {
    // rt-app runs the phases while thread_loop != loop: 0 means never.
    let (_, exits) = run(r#"{"tasks": {"idle": {"loop": 0, "run": 50000}, "busy": {"loop": 1, "run": 1000}}}"#);
    assert!(exits[0] < 100_000, "loop 0 exited at {}", exits[0]);
    assert!((MS..MS + MS / 10).contains(&exits[1]), "busy exited at {}", exits[1]);
}

fn use_case() -> String {
    r#"{
        "global": {"duration": 1, "default_policy": "SCHED_OTHER", "frag": 1, "calibration": "CPU0"},
        "tasks": {
            "Tick": {"priority": -19, "loop": -1,
                     "resume": "Out", "timer": {"ref": "tick", "period": 5000},},
            "Out": {"priority": -19, "loop": -1,
                    "suspend", "run": 300, "resume": "Track", "run": 3700,},
            "Track": {"priority": -16, "loop": -1, "suspend", "run": 250, "resume": "Decoder"},
            "Decoder": {"priority": -2, "loop": -1,
                        "suspend", "run": 900,
                        "lock": "m", "signal": "q", "wait": {"ref": "q", "mutex": "m"}, "unlock": "m",
                        "run": 120},
            "Callback": {"priority": -2, "loop": -1,
                         "lock": "m", "wait": {"ref": "q", "mutex": "m"}, "unlock": "m",
                         "run": 250,
                         "lock": "m", "signal": "q", "unlock": "m"},
        },
    }"#
    .to_string()
}

#[test]
fn a_use_case_in_workgen_form_runs() {
    // The shape of rt-app's shipped Android use cases (doc/examples/mp3-short.json):
    // a periodic tick resumes a chain of threads, keys repeat, suspend has no
    // value, commas trail. Our own figures: a 5 ms tick, 4 ms of audio work,
    // a decoder handing buffers to a callback thread through a condition.
    let (end, exits) = run(&use_case());
    assert_eq!(end, 1_000_000_000);
    // Nothing exits before the duration: every thread loops.
    assert!(exits.iter().all(|&e| e == Ns::MAX), "{exits:?}");
    // The chain turns once per tick, down to the callback thread: about 200
    // switches into each thread in 1 s.
    let w = build_on(TWO_LLC, &use_case()).unwrap();
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    for task in 0..5u32 {
        let ins = sim
            .trace
            .as_ref()
            .unwrap()
            .iter()
            .filter(|e| matches!(e.ev, crate::trace::Event::Switch { next: Some(t), .. } if t.0 == task))
            .count();
        assert!((190..=420).contains(&ins), "task {task}: {ins} switches in");
    }
    let w = build_on(TWO_LLC, r#"{"tasks": {"a": {"loop": 1, "suspend", "run": 1, "run": 2,}}}"#).unwrap();
    let Program::Ops(o) = &w.tasks[0].program else { panic!() };
    let runs = o.code().iter().filter(|op| matches!(op, Op::Compute(_))).count();
    assert_eq!(runs, 2, "both runs kept, in order");
}

#[test]
fn fork_creates_the_template_thread_each_time_it_runs() {
    // A parent that forks a 1 ms worker every 2 ms, 3 times; the template
    // (instance 0) exists only through the forks, named as rt-app names them.
    let json = r#"{"tasks": {
        "parent": {"loop": 3, "fork": "worker", "sleep": 2000},
        "worker": {"instance": 0, "loop": 1, "run": 1000}
    }}"#;
    let w = build_on(TWO_LLC, json).unwrap();
    let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["parent-0", "worker-1-0000", "worker-2-0001", "worker-3-0002"]);
    assert!(w.tasks[1..].iter().all(|t| t.start == crate::workload::StartKind::Spawned));
    let (end, exits) = run(json);
    // Forked at ~0, 2 and 4 ms, each runs 1 ms; the parent ends at ~6 ms.
    for (k, e) in exits[1..].iter().enumerate() {
        let want = 2 * MS * k as Ns + MS;
        assert!((want..want + MS / 5).contains(e), "worker {k} exited at {e}, want ~{want}");
    }
    assert!((6 * MS..6 * MS + MS / 5).contains(&end), "ended at {end}");
}

#[test]
fn a_threads_util_min_and_util_max_are_its_clamps() {
    let w = build_on(
        TWO_LLC,
        r#"{"tasks": {"a": {"loop": 1, "util_min": 256, "util_max": 512, "run": 10}, "b": {"loop": 1, "run": 10}}}"#,
    )
    .unwrap();
    let clamps: Vec<_> = w.tasks.iter().map(|t| (t.uclamp.min, t.uclamp.max)).collect();
    assert_eq!(clamps, vec![(Some(256), Some(512)), (None, None)]);
}
