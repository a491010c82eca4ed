//! A task changing its own policy mid-run (`sched_setattr`, the user
//! program op `{ policy = ..., priority = ... }` and rt-app's per-phase
//! `policy`): `__sched_setscheduler`'s dequeue, put_prev, change, enqueue,
//! set_next, then the class hooks `switched_from`/`switched_to` or
//! `prio_changed` decide whether the CPU reschedules.

use schedlab_core::api::{run, RunResult, RunSpec};
use schedlab_core::testkit::{metric, preset_source, run_spec};

fn program(toml: &str, policy: &str) -> Result<RunResult, String> {
    let mut spec: RunSpec = run_spec(preset_source("laptop-4c8t"), toml, policy, 1, true);
    spec.workload_format = "toml".into();
    run(&spec).map_err(|e| e.to_string())
}

/// A normal hog on CPU 0 for 40 ms, and `booster` there: 1 ms asleep, then
/// `ops` (its policy changes and work).
fn with_hog(ops: &str) -> RunResult {
    let toml = format!(
        "[[task]]\nname = \"hog\"\ncpus = \"0\"\nops = [ {{ compute = \"40ms\" }} ]\n\n\
         [[task]]\nname = \"booster\"\ncpus = \"0\"\nops = [ {{ sleep = \"1ms\" }}, {ops} ]\n"
    );
    program(&toml, "eevdf").unwrap_or_else(|e| panic!("{e}"))
}

/// The timestamp of an ftrace line, s.
fn ts(line: &str) -> f64 {
    let tok = line.split_whitespace().find(|w| w.ends_with(':') && w.contains('.')).unwrap();
    tok.trim_end_matches(':').parse().unwrap()
}

/// The first sched_switch at or after the schedlab_setscheduler line
/// containing `needle`, and whether it came at the same instant.
fn switch_after<'a>(r: &'a RunResult, needle: &str) -> (&'a str, bool) {
    let t = r.trace.as_deref().unwrap();
    let at = t.lines().find(|l| l.contains("schedlab_setscheduler") && l.contains(needle)).unwrap();
    let next = t.lines().skip_while(|l| *l != at).find(|l| l.contains("sched_switch")).unwrap();
    (next, ts(next) == ts(at))
}

/// Trace lines of `event` naming `needle`.
fn lines<'a>(r: &'a RunResult, event: &str, needle: &str) -> Vec<&'a str> {
    let t = r.trace.as_deref().unwrap_or("");
    t.lines().filter(|l| l.contains(event) && l.contains(needle)).collect()
}

#[test]
fn a_fair_task_turning_fifo_keeps_its_cpu_and_counts_as_rt() {
    let fair = with_hog("{ compute = \"20ms\" }");
    let fifo = with_hog("{ policy = \"fifo\", priority = 50 }, { compute = \"20ms\" }");
    // Fair: the two share CPU 0 and the hog ends after both (~60 ms); RT:
    // the booster runs its 20 ms at once, the hog waits, ends at ~61 ms too,
    // but the booster's RT time shows and nothing shares with it.
    assert_eq!(metric(&fair, "rt_pct"), 0.0);
    let rt = metric(&fifo, "rt_pct");
    let total = metric(&fifo, "completion_time_s") * 8.0;
    assert!((rt / 100.0 * total - 0.020).abs() < 0.001, "rt_pct {rt} over {total} CPU-s");
    assert_eq!(lines(&fifo, "schedlab_setscheduler", "policy=fifo prio=49").len(), 1);
    // After the change the switch lines carry the new prio, and the hog
    // never preempts the booster (fair, it is preempted again and again).
    assert!(lines(&fifo, "sched_switch", "prev_comm=booster prev_pid=1001 prev_prio=49 prev_state=R").is_empty());
    assert!(!lines(&fifo, "sched_switch", "next_comm=booster next_pid=1001 next_prio=49").is_empty());
    assert!(lines(&fair, "sched_switch", "prev_comm=booster prev_pid=1001 prev_prio=120 prev_state=R").len() > 1);
}

#[test]
fn back_to_fair_reschedules_and_shares_again() {
    let r = with_hog(
        "{ compute = \"12ms\" }, { policy = \"fifo\", priority = 50 }, { compute = \"5ms\" }, \
         { policy = \"other\", priority = 19 }, { compute = \"5ms\" }",
    );
    assert_eq!(lines(&r, "schedlab_setscheduler", "policy=other prio=139").len(), 1);
    // switched_to_fair reschedules and the pick decides: the booster had
    // used its share (no lag left) before it went RT; back at nice 19 the
    // hog is the pick, and gets the CPU at once, not at the next tick.
    let (next, at_once) = switch_after(&r, "policy=other prio=139");
    assert!(next.contains("prev_comm=booster") && next.contains("next_comm=hog"), "{next}");
    assert!(at_once, "{next}");
}

#[test]
fn a_lowered_rt_priority_gives_way_to_a_queued_higher_one() {
    let toml = "[[task]]\nname = \"high\"\ncpus = \"0\"\npolicy = \"fifo\"\npriority = 40\n\
                ops = [ { sleep = \"2ms\" }, { compute = \"5ms\" } ]\n\n\
                [[task]]\nname = \"low\"\ncpus = \"0\"\npolicy = \"fifo\"\npriority = 60\n\
                ops = [ { compute = \"4ms\" }, { policy = \"fifo\", priority = 30 }, { compute = \"4ms\" } ]\n";
    let r = program(toml, "eevdf").unwrap();
    // `low` (prio 39) runs first; `high` (prio 59) waits behind it; at 4 ms
    // `low` drops to 30 (prio 69) and prio_changed_rt hands the CPU over.
    let (next, at_once) = switch_after(&r, "prio=69");
    assert!(next.contains("prev_comm=low") && next.contains("next_comm=high"), "{next}");
    assert!(at_once, "{next}");
}

#[test]
fn peers_refuse_a_policy_change() {
    let toml = "[[task]]\nname = \"t\"\nops = [ { policy = \"fifo\", priority = 10 }, { compute = \"1ms\" } ]\n";
    let e = program(toml, "cosmos").unwrap_err();
    assert!(e.contains("sched_setscheduler") && e.contains("ext"), "{e}");
}

#[test]
fn rt_app_phases_set_their_policy() {
    let json = r#"{"tasks": {
        "hog": {"loop": 1, "cpus": [0], "run": 30000},
        "phased": {"loop": 1, "cpus": [0], "phases": {
            "wait": {"sleep": 1000},
            "fair": {"run": 5000},
            "rt": {"policy": "SCHED_FIFO", "priority": 20, "run": 5000}
        }}
    }}"#;
    let mut spec: RunSpec = run_spec(preset_source("laptop-4c8t"), json, "eevdf", 1, true);
    spec.workload_format = "json".into();
    let r = run(&spec).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lines(&r, "schedlab_setscheduler", "policy=fifo prio=79").len(), 1);
    assert!(metric(&r, "rt_pct") > 0.0);
}
