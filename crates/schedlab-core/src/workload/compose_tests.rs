use super::*;
use crate::workload::testdrv::{run, test_machine};
use crate::workload::{build_workload, Script};

fn build(spec: &str) -> Workload {
    build_workload(spec, "spec", "cli", &test_machine(8)).unwrap()
}

/// The channels a program uses in its first `n` steps (a receiver's first Recv ...).
fn chans_touched(p: &Program, n: usize) -> Vec<u32> {
    let mut p = p.clone();
    let mut rng = crate::sim::Rng::new(1, 1);
    let ctx = super::super::ProgCtx { now: 0, task: TaskId(0), msg: Some(0), woken_at: None };
    (0..n)
        .filter_map(|_| match p.step(&ctx, &mut rng) {
            Action::Send { chan, .. } | Action::Recv { chan } => Some(chan.0),
            _ => None,
        })
        .collect()
}

#[test]
fn composed_hackbench_and_workqueue_keep_their_own_channels() {
    let hb = build("hackbench:groups=1,fds=2,loops=3");
    let wq = build("workqueue:threads=2,chunks=4");
    let (hb_tasks, hb_chans, hb_barriers) = (hb.tasks.len(), hb.chans.len() as u32, hb.barriers.len());
    let c = compose(vec![hb.clone(), wq.clone()]).unwrap();
    let w = &c.workload;
    assert_eq!(w.tasks.len(), hb_tasks + wq.tasks.len());
    assert_eq!(w.chans.len(), hb.chans.len() + wq.chans.len());
    assert_eq!(w.barriers.len(), hb_barriers);
    assert_eq!(w.name, format!("{} + {}", hb.name, wq.name));
    // Every hackbench task stays on channels 0..hb_chans, every work-queue
    // task on hb_chans.. (its own request queue and replies).
    for (i, t) in w.tasks.iter().enumerate() {
        for ch in chans_touched(&t.program, 6) {
            if i < hb_tasks {
                assert!(ch < hb_chans, "hackbench task {i} on chan {ch}");
            } else {
                assert!(ch >= hb_chans, "workqueue task {i} on chan {ch}");
            }
        }
    }
    // The manager replies on the shifted reply channel of worker 0.
    assert_eq!(chans_touched(&w.tasks[hb_tasks].program, 3), [hb_chans, hb_chans + 1]);
    assert_eq!(c.task_part, [vec![0; hb_tasks], vec![1; wq.tasks.len()]].concat());
    // Both complete when run together.
    let out = run(w, 1, 10_000_000_000);
    assert_eq!(out.exited, w.tasks.len(), "{out:?}");
}

#[test]
fn script_task_ids_point_at_the_right_tasks() {
    let first = build("sieve:threads=3");
    let waker = Workload {
        tasks: vec![
            crate::workload::forked_task(
                "waker",
                Program::Script(Script::new(vec![Action::Wake { task: TaskId(1), sync: false }], 1)),
                0,
            ),
            crate::workload::forked_task("sleeper", Program::Script(Script::new(vec![Action::Wait], 1)), 0),
        ],
        ..first.clone()
    };
    let c = compose(vec![first, waker]).unwrap();
    let Program::Script(s) = &c.workload.tasks[3].program else { panic!() };
    assert_eq!(s.actions[0], Action::Wake { task: TaskId(4), sync: false });
    assert_eq!(c.workload.tasks[4].name, "sleeper");
}

#[test]
fn noise_parts_get_no_metric_prefix_and_the_main_part_is_the_first_benchmark() {
    let c =
        compose(vec![build("kworkers"), build("hackbench:groups=1"), build("irq"), build("sieve:threads=2")]).unwrap();
    let prefixes: Vec<Option<&str>> = c.parts.iter().map(|p| p.metric_prefix.as_deref()).collect();
    assert_eq!(prefixes, [None, Some(""), None, Some("w4.")]);
    assert_eq!(c.main, 1);
    assert_eq!(c.workload.irqs.len(), 1);
    assert!(c.workload.tasks[..8].iter().all(|t| t.noise));
    let e = compose(vec![build("kworkers"), build("irq")]).unwrap_err().to_string();
    assert!(e.contains("only noise"), "{e}");
}

#[test]
fn longest_duration_wins() {
    let s = build("schbench:runtime=2s,warmup=0s");
    let h = build("hackbench:groups=1");
    let c = compose(vec![h.clone(), s.clone()]).unwrap();
    assert_eq!(c.workload.duration_ns, s.duration_ns);
    assert_eq!(c.workload.warmup_ns, h.warmup_ns);
    assert_eq!(c.workload.primary, h.primary);
}

#[test]
fn toml_lists_of_workloads() {
    let m = test_machine(8);
    let t =
        "[[workload]]\nfamily = \"hackbench\"\ngroups = 1\n\n[[workload]]\nfamily = \"kworkers\"\nperiod = \"4ms\"\n";
    let ws = build_workloads(t, "toml", "w.toml", &m).unwrap();
    assert_eq!(ws.len(), 2);
    assert!(ws[1].name.starts_with("kworkers:period=4ms"), "{}", ws[1].name);
    let t = "workloads = [\"sieve:threads=2\", \"rt-periodic:count=1\"]\n";
    assert_eq!(build_workloads(t, "toml", "w.toml", &m).unwrap().len(), 2);
    let j = r#"{"workloads": ["sieve:threads=2", {"family": "irq", "preset": "pingflood"}]}"#;
    assert_eq!(build_workloads(j, "json", "w.json", &m).unwrap()[1].irqs.len(), 1);
    // A single table is still one workload.
    assert_eq!(build_workloads("family = \"sieve\"\nthreads = 1\n", "toml", "w.toml", &m).unwrap().len(), 1);
    let e = build_workloads("workloads = [\"sieve:threads=0\"]\n", "toml", "w.toml", &m).unwrap_err();
    assert!(
        matches!(&e, SchedlabError::Spec { file, key, .. } if file == "w.toml workload[1]" && key == "workload.threads"),
        "{e:?}"
    );
    assert!(build_workloads("workloads = []\n", "toml", "w.toml", &m).is_err());
    assert!(build_workloads("workloads = [\"sieve\"]\nx = 1\n", "toml", "w.toml", &m).is_err());
}
