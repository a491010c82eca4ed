use super::*;
use crate::workload::testdrv::test_machine;
use crate::workload::Program;

fn build(spec: &str, cpus: usize) -> Result<Workload> {
    build_workload(spec, "spec", "cli", &test_machine(cpus))
}

fn spec_err(spec: &str) -> (String, String, String) {
    match build(spec, 64) {
        Err(SchedlabError::Spec { file, key, expected }) => (file, key, expected),
        other => panic!("{spec}: expected a spec error, got {other:?}"),
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("10ms", 1), Some(10_000_000));
    assert_eq!(parse_duration("50us", 1), Some(50_000));
    assert_eq!(parse_duration("2s", 1), Some(2_000_000_000));
    assert_eq!(parse_duration("1.5ms", 1), Some(1_500_000));
    assert_eq!(parse_duration("100", 1_000), Some(100_000));
    assert_eq!(parse_duration("-5ms", 1), None);
    assert_eq!(parse_duration("ms", 1), None);
    assert_eq!(parse_duration("5 parsecs", 1), None);
    assert_eq!(parse_duration("1.2.3s", 1), None);
    assert_eq!(parse_duration("99999999999999999999s", 1), None);
    assert_eq!(format_duration(2_000_000_000), "2s");
    assert_eq!(format_duration(1_500_000), "1500us");
    assert_eq!(format_duration(1_234), "1234ns");
}

#[test]
fn good_specs_normalise() {
    let w = build("workqueue:threads=50%", 64).unwrap();
    assert!(w.name.starts_with("workqueue:threads=32,"), "{}", w.name);
    let w2 = build(&w.name, 64).unwrap();
    assert_eq!(w2.name, w.name, "the normalised name rebuilds the same workload");
    let w = build("hackbench:groups=4,fds=20,loops=100,ipc=pipe,mode=process", 8).unwrap();
    assert!(w.name.contains("groups=4") && w.name.contains("ipc=pipe"), "{}", w.name);
    assert_eq!(w.tasks.len(), 4 * 40);
    let w = build("schbench", 8).unwrap();
    assert!(w.name.contains("threads=8"), "{}", w.name);
    let w = build(" sieve : threads=31.25% ", 64).unwrap();
    assert_eq!(w.tasks.len(), 20);
}

#[test]
fn toml_and_json() {
    let m = test_machine(16);
    let t = "family = \"workqueue\"\nthreads = \"50%\"\nchunks = 100\nchunk = \"2ms\"\n";
    let w = build_workload(t, "toml", "wq.toml", &m).unwrap();
    assert!(w.name.starts_with("workqueue:threads=8,chunks=100,chunk=2ms"), "{}", w.name);
    let j = r#"{"family": "hackbench", "groups": 2, "ipc": "socket"}"#;
    let w = build_workload(j, "json", "hb.json", &m).unwrap();
    assert_eq!(w.tasks.len(), 80);
    let e = build_workload("groups = 2", "toml", "x.toml", &m).unwrap_err();
    assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "workload.family"), "{e:?}");
    let e = build_workload(r#"{"family":"sieve","threads":[1]}"#, "json", "x.json", &m).unwrap_err();
    assert!(e.to_string().contains("workload.threads"), "{e}");
    assert!(build_workload("sieve", "yaml", "x", &m).is_err());
}

#[test]
fn unknown_family_lists_valid() {
    match build("hackbenc:groups=1", 8) {
        Err(SchedlabError::UnknownName { kind, name, valid }) => {
            assert_eq!((kind.as_str(), name.as_str()), ("workload", "hackbenc"));
            assert_eq!(
                valid,
                "hackbench, schbench, workqueue, sieve, pipe, barrier, nas, chameneos, kv-cache, pgbench, db-query, video-enc, video-dec, android, rt-periodic, kworkers, irq, stall, overcommit"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_specs_name_origin_and_key() {
    let (file, key, exp) = spec_err("hackbench:grups=3");
    assert_eq!((file.as_str(), key.as_str()), ("cli", "workload.grups"));
    assert!(exp.contains("groups, fds, loops"), "{exp}");
    for (spec, key) in [
        ("workqueue:threads=0", "workload.threads"),
        ("workqueue:threads=150%", "workload.threads"),
        ("workqueue:threads=0%", "workload.threads"),
        ("workqueue:threads=abc%", "workload.threads"),
        ("workqueue:threads=-3", "workload.threads"),
        ("workqueue:chunk=-5ms", "workload.chunk"),
        ("workqueue:chunk=5parsecs", "workload.chunk"),
        ("schbench:runtime=-1s", "workload.runtime"),
        ("schbench:sleep=garbage", "workload.sleep"),
        ("hackbench:groups=0", "workload.groups"),
        ("hackbench:ipc=carrier-pigeon", "workload.ipc"),
        ("hackbench:groups", "workload.groups"),
        ("hackbench:groups=1,groups=2", "workload.groups"),
        ("sieve:threads=1,work=0", "workload.work"),
    ] {
        let (file, k, exp) = spec_err(spec);
        assert_eq!((file.as_str(), k.as_str()), ("cli", key), "{spec}: {exp}");
        assert!(exp.starts_with("expected"), "{spec}: {exp}");
    }
    let (_, _, exp) = spec_err("workqueue:threads=150%");
    assert!(exp.contains("'150%'") && exp.contains("64 hardware threads"), "{exp}");
}

#[test]
fn percent_resolves_against_machine() {
    let m = test_machine(64);
    let mut p = Params::new("t", "sieve", sieve::PARAMS, &m, vec![("threads".into(), "50%".into())]).unwrap();
    assert_eq!(p.threads("threads").unwrap(), 32);
    let mut p = Params::new("t", "sieve", sieve::PARAMS, &m, vec![("threads".into(), "31.25%".into())]).unwrap();
    assert_eq!(p.threads("threads").unwrap(), 20);
    let m4 = test_machine(4);
    // 10% of 4 CPUs rounds to 0: an error, not an empty workload.
    let mut p = Params::new("t", "sieve", sieve::PARAMS, &m4, vec![("threads".into(), "10%".into())]).unwrap();
    assert!(p.threads("threads").is_err());
}

#[test]
fn families_are_documented() {
    let fams = workload_families();
    assert_eq!(fams.len(), 20);
    for f in &fams {
        assert!(!f.summary.is_empty());
        for p in &f.params {
            assert!(!p.doc.is_empty() && !p.unit.is_empty() && !p.default.is_empty(), "{}.{}", f.name, p.name);
        }
    }
    assert!(serde_json::to_string(&fams).unwrap().contains("\"message_threads\""));
}

#[test]
fn every_family_builds_from_its_defaults_and_its_name_rebuilds_it() {
    for f in workload_families().into_iter().filter(|f| f.name != "rtapp") {
        for cpus in [4, 64] {
            let m = test_machine(cpus);
            let w = build_workload(&f.name, "spec", "t", &m).unwrap_or_else(|e| panic!("{}: {e}", f.name));
            let again = build_workload(&w.name, "spec", "t", &m).unwrap_or_else(|e| panic!("{}: {e}", w.name));
            assert_eq!(again.name, w.name);
            assert_eq!(again.tasks.len(), w.tasks.len(), "{}", w.name);
        }
    }
}

#[test]
fn cpus_key_sets_affinity_and_rejects_cpus_outside_the_machine() {
    let w = build("sieve:threads=2,cpus=0-1;3", 8).unwrap();
    assert!(w.tasks.iter().all(|t| t.allowed.unwrap().to_list_string() == "0-1,3"));
    assert!(w.name.ends_with(",cpus=0-1;3"), "{}", w.name);
    let e = build("sieve:threads=2,cpus=0-9", 8).unwrap_err().to_string();
    assert!(e.contains("workload.cpus") && e.contains("CPU 8"), "{e}");
    assert!(build("sieve:threads=2,cpus=x", 8).is_err());
}

#[test]
fn policy_keys_apply_to_every_task_and_round_trip() {
    use crate::workload::SchedPolicy;
    let w = build("hackbench:groups=1,fds=2,policy=batch,nice=5", 8).unwrap();
    assert!(w.tasks.iter().all(|t| t.policy == SchedPolicy::Batch && t.nice == 5 && t.rt_priority == 0));
    assert!(w.name.ends_with(",policy=batch,nice=5"), "{}", w.name);
    assert_eq!(build(&w.name, 8).unwrap().name, w.name);
    let w = build("sieve:threads=2,cpus=0-1,policy=rr,priority=7", 8).unwrap();
    assert!(w.tasks.iter().all(|t| t.policy == SchedPolicy::Rr && t.rt_priority == 7));
    assert!(w.name.ends_with(",cpus=0-1,policy=rr,priority=7"), "{}", w.name);
    // Without policy keys the name is as before.
    assert!(!build("sieve:threads=2", 8).unwrap().name.contains("policy"));
    let t = "family = \"sieve\"\nthreads = 1\npolicy = \"fifo\"\npriority = 10\n";
    let w = build_workload(t, "toml", "s.toml", &test_machine(4)).unwrap();
    assert_eq!(w.tasks[0].rt_priority, 10);
    let (file, key, exp) = spec_err("workqueue:threads=2,policy=fifo,priority=x");
    assert_eq!((file.as_str(), key.as_str()), ("cli", "workload.priority"));
    assert!(exp.contains("1 to 99"), "{exp}");
}

#[test]
fn start_key_delays_every_task_and_the_metrics_window() {
    let w = build("hackbench:groups=1,fds=2,start=500ms", 4).unwrap();
    assert!(w.tasks.iter().all(|t| t.start_ns == 500_000_000));
    assert_eq!(w.warmup_ns, 500_000_000);
    assert!(w.name.ends_with(",start=500ms"), "{}", w.name);
    let again = build(&w.name, 4).unwrap();
    assert_eq!(again.name, w.name);
    let (_, key, what) = spec_err("hackbench:start=soon");
    assert_eq!(key, "workload.start");
    assert!(what.contains("duration"), "{what}");
}

#[test]
fn parent_wakee_flips_is_inherited_by_forked_tasks_only() {
    let w = build("hackbench:groups=1,fds=2,parent_wakee_flips=8", 4).unwrap();
    assert!(!w.tasks.is_empty());
    assert!(w.tasks.iter().all(|t| t.wakee_flips == 8));
    assert!(w.name.ends_with(",parent_wakee_flips=8"), "{}", w.name);
    assert_eq!(build(&w.name, 4).unwrap().name, w.name);
    // Without the key the launcher is taken as having woken no one.
    let plain = build("hackbench:groups=1,fds=2", 4).unwrap();
    assert!(plain.tasks.iter().all(|t| t.wakee_flips == 0));
    // Bound kworkers are woken, not forked by the launcher: the key would
    // change nothing and is refused.
    let (_, key, what) = spec_err("kworkers:period=4ms,parent_wakee_flips=8");
    assert_eq!(key, "workload.parent_wakee_flips");
    assert!(what.contains("not forked by a launcher"), "{what}");
    let (_, key, what) = spec_err("hackbench:parent_wakee_flips=lots");
    assert_eq!(key, "workload.parent_wakee_flips");
    assert!(what.contains("count"), "{what}");
    let (_, key, _) = spec_err("irq:preset=pingflood,parent_wakee_flips=8");
    assert_eq!(key, "workload.parent_wakee_flips");
}

#[test]
fn parent_wakee_flips_list_is_given_per_task_in_native_fork_order() {
    // hackbench: per group the receivers, then the senders, natively and simulated.
    let w = build("hackbench:groups=1,fds=2,parent_wakee_flips=1;2;3;4", 4).unwrap();
    let flips: Vec<u32> = w.tasks.iter().map(|t| t.wakee_flips).collect();
    assert_eq!(flips, [1, 2, 3, 4]);
    assert!(matches!(w.tasks[1].program, Program::HackbenchReceiver(_)));
    assert!(matches!(w.tasks[2].program, Program::HackbenchSender(_)));
    assert!(w.name.ends_with(",parent_wakee_flips=1;2;3;4"), "{}", w.name);
    assert_eq!(build(&w.name, 4).unwrap().name, w.name, "the name keeps the whole list");
    // workqueue: schedlab-wl forks the workers first and the manager last;
    // the simulated family builds the manager first.
    let w = build("workqueue:threads=3,parent_wakee_flips=5;6;7;9", 4).unwrap();
    assert!(matches!(w.tasks[0].program, Program::WorkqueueManager(_)));
    let flips: Vec<u32> = w.tasks.iter().map(|t| t.wakee_flips).collect();
    assert_eq!(flips, [9, 5, 6, 7]);
    assert!(w.name.ends_with(",parent_wakee_flips=5;6;7;9"), "{}", w.name);
    // schbench: each message thread, then the workers it forked.
    let w = build("schbench:message_threads=2,threads=2,parent_wakee_flips=1;2;3;4;5;6", 4).unwrap();
    assert!(matches!(w.tasks[3].program, Program::SchbenchMessage(_)));
    assert_eq!(w.tasks[3].wakee_flips, 4);
    // One number keeps its meaning: every forked task.
    let w = build("workqueue:threads=3,parent_wakee_flips=4", 4).unwrap();
    assert!(w.tasks.iter().all(|t| t.wakee_flips == 4));
}

#[test]
fn parent_wakee_flips_list_errors_name_the_key_and_the_length() {
    let (_, key, what) = spec_err("hackbench:groups=1,fds=2,parent_wakee_flips=1;2;3");
    assert_eq!(key, "workload.parent_wakee_flips");
    assert!(what.contains("4 counts") && what.contains("got 3"), "{what}");
    for bad in ["1;;3", "1;x;3", "1;2;", "-1;2", "1;2000000"] {
        let (_, key, what) = spec_err(&format!("pipe:parent_wakee_flips={bad}"));
        assert_eq!(key, "workload.parent_wakee_flips", "{bad}");
        assert!(what.contains("one count per forked task"), "{bad}: {what}");
    }
    // Bound kworkers are not forked: no list fits.
    let (_, _, what) = spec_err("kworkers:period=4ms,parent_wakee_flips=1;2");
    assert!(what.contains("not forked by a launcher"), "{what}");
}
