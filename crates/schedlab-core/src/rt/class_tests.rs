//! The RT class in the engine: preemption of fair tasks, placement through
//! cpupri, push on wakeup, pull when a CPU's RT level drops, SCHED_RR slices,
//! throttling and the fair server, and `avg_rt` lowering `capacity_of`.

use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId, NSEC_PER_MSEC};
use crate::testkit::{machine_from_toml, preset_source, script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::trace::Event;
use crate::workload::{Action, SchedPolicy, TaskSpec, Workload};

const MS: u64 = NSEC_PER_MSEC;

fn rt(t: &mut TaskSpec, policy: SchedPolicy, prio: u32) {
    t.policy = policy;
    t.rt_priority = prio;
}

fn pin(t: &mut TaskSpec, cpus: &[u32]) {
    t.allowed = Some(CpuMask::from_cpus(cpus.iter().map(|&c| CpuId(c))));
}

fn sim(w: &Workload, f: Features) -> Sim {
    let mut s = sim_with(TWO_LLC, w, sim_config(f));
    s.trace = Some(Vec::new());
    s.check_invariants = true;
    s
}

fn switches_in(s: &Sim, task: u32) -> Vec<(u64, CpuId)> {
    s.trace
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|e| match e.ev {
            Event::Switch { cpu, next: Some(n), .. } if n == TaskId(task) => Some((e.time, cpu)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_waking_rt_task_preempts_a_fair_task_at_once() {
    // t0 (fair) computes 20 ms on CPU 0; t1 (FIFO) wakes at 5 ms pinned there.
    let mut ts = script_tasks(2, &[Action::Compute(20 * MS)], 1);
    pin(&mut ts[0], &[0]);
    pin(&mut ts[1], &[0]);
    rt(&mut ts[1], SchedPolicy::Fifo, 10);
    ts[1].start_ns = 5 * MS;
    let mut s = sim(&script_workload(ts), Features::mainline());
    s.run(u64::MAX).unwrap();
    let t1 = switches_in(&s, 1);
    assert_eq!(t1.len(), 1, "the RT task runs once, to completion");
    assert!(t1[0].0 < 5 * MS + 100_000, "switched in at {} ns", t1[0].0);
    // The fair task finishes after the RT task: 20 + 20 ms (plus costs).
    assert!(s.now >= 40 * MS);
}

#[test]
fn a_higher_rt_priority_preempts_a_lower_one_and_not_the_reverse() {
    let mut ts = script_tasks(3, &[Action::Compute(10 * MS)], 1);
    for t in ts.iter_mut() {
        pin(t, &[1]);
    }
    rt(&mut ts[0], SchedPolicy::Fifo, 10);
    rt(&mut ts[1], SchedPolicy::Fifo, 50);
    rt(&mut ts[2], SchedPolicy::Fifo, 5);
    ts[1].start_ns = 2 * MS;
    ts[2].start_ns = 3 * MS;
    let mut s = sim(&script_workload(ts), Features::mainline());
    s.run(u64::MAX).unwrap();
    // t1 (prio 50) preempts t0 at 2 ms; t2 (prio 5) waits for both.
    assert!(switches_in(&s, 1)[0].0 < 2 * MS + 100_000);
    assert_eq!(switches_in(&s, 0).len(), 2, "t0 runs, is preempted, resumes");
    assert!(switches_in(&s, 2)[0].0 >= 20 * MS, "the lowest RT priority runs last");
}

#[test]
fn select_task_rq_rt_keeps_prev_when_it_runs_fair_work() {
    let w = script_workload(script_tasks(4, &[Action::Compute(MS)], 1));
    let mut s = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    s.tasks[0].policy = SchedPolicy::Fifo;
    s.tasks[0].prio = 89;
    // CPU 2 runs a fair task: an RT task whose prev is 2 stays there.
    s.rt_note_curr(CpuId(2), Some(TaskId(1)));
    s.rqs[2].curr = Some(TaskId(1));
    assert_eq!(s.select_task_rq_rt(TaskId(0), CpuId(2), 0, CpuId(0)), CpuId(2));
}

#[test]
fn select_task_rq_rt_leaves_a_cpu_running_higher_rt_work() {
    let w = script_workload(script_tasks(4, &[Action::Compute(MS)], 1));
    let mut s = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    for (t, prio) in [(0, 89), (1, 50)] {
        s.tasks[t].policy = SchedPolicy::Fifo;
        s.tasks[t].prio = prio;
    }
    // CPU 2 runs RT prio 50 (better than 89): find_lowest_rq looks elsewhere,
    // first in CPU 2's LLC ({0-3} here: the wake-affine domain), this CPU 0 is
    // not in it... the first lowest CPU of the LLC that is not CPU 2.
    s.rqs[2].curr = Some(TaskId(1));
    s.rt_note_curr(CpuId(2), Some(TaskId(1)));
    s.rt.rd.cpupri.cpupri_set(CpuId(2), 50);
    let cpu = s.select_task_rq_rt(TaskId(0), CpuId(2), 0, CpuId(6));
    assert_ne!(cpu, CpuId(2));
    assert!(cpu.0 < 4, "stays in prev's LLC, got {cpu}");
    // Affinity: allowed only on 2 and 5: 5.
    s.tasks[0].allowed = CpuMask::from_cpus([CpuId(2), CpuId(5)]);
    assert_eq!(s.select_task_rq_rt(TaskId(0), CpuId(2), 0, CpuId(6)), CpuId(5));
}

#[test]
fn a_woken_rt_task_behind_a_pinned_one_is_pushed_to_another_cpu() {
    // t0: FIFO 50 pinned on CPU 0 runs 20 ms; t1: FIFO 10 last ran on CPU 0,
    // woken at 1 ms. select_task_rq_rt sends it elsewhere at once.
    let mut ts = script_tasks(2, &[Action::Compute(20 * MS)], 1);
    pin(&mut ts[0], &[0]);
    rt(&mut ts[0], SchedPolicy::Fifo, 50);
    rt(&mut ts[1], SchedPolicy::Fifo, 10);
    ts[1].start_ns = MS;
    let mut s = sim(&script_workload(ts), Features::mainline());
    s.run(u64::MAX).unwrap();
    let t1 = switches_in(&s, 1);
    assert_ne!(t1[0].1, CpuId(0));
    assert!(t1[0].0 < MS + 100_000);
}

#[test]
fn rr_tasks_on_one_cpu_take_turns_every_slice() {
    let mut ts = script_tasks(2, &[Action::Compute(300 * MS)], 1);
    for t in ts.iter_mut() {
        pin(t, &[3]);
        rt(t, SchedPolicy::Rr, 20);
    }
    let mut s = sim(&script_workload(ts), Features::mainline());
    s.run(u64::MAX).unwrap();
    let a = switches_in(&s, 0);
    // 100 ms slices (25 ticks at HZ 250): 300 ms each, alternating.
    assert!(a.len() >= 3, "t0 switched in {} times", a.len());
    let gap = a[1].0 - a[0].0;
    assert!((195 * MS..=205 * MS).contains(&gap), "t0 back after {gap} ns");
}

#[test]
fn fifo_tasks_on_one_cpu_do_not_take_turns() {
    let mut ts = script_tasks(2, &[Action::Compute(300 * MS)], 1);
    for t in ts.iter_mut() {
        pin(t, &[3]);
        rt(t, SchedPolicy::Fifo, 20);
    }
    let mut s = sim(&script_workload(ts), Features::mainline());
    s.run(u64::MAX).unwrap();
    assert_eq!(switches_in(&s, 0).len(), 1);
    assert_eq!(switches_in(&s, 1).len(), 1);
}

/// Running time of task `t` from a trace, until `end`.
fn ran_ns(s: &Sim, t: u32, end: u64) -> u64 {
    let mut on: Option<u64> = None;
    let mut total = 0;
    for e in s.trace.as_ref().unwrap() {
        if let Event::Switch { prev, next, .. } = e.ev {
            if prev == Some(TaskId(t)) {
                if let Some(a) = on.take() {
                    total += e.time.min(end) - a.min(end);
                }
            }
            if next == Some(TaskId(t)) {
                on = Some(e.time);
            }
        }
    }
    if let Some(a) = on {
        total += end.saturating_sub(a);
    }
    total
}

fn hog_and_fair(fair: bool) -> Workload {
    let mut ts = script_tasks(2, &[Action::Compute(3000 * MS)], 1);
    for t in ts.iter_mut() {
        pin(t, &[0]);
    }
    rt(&mut ts[0], SchedPolicy::Fifo, 50);
    if !fair {
        ts.truncate(1);
    }
    script_workload(ts)
}

#[test]
fn rt_throttling_gives_an_rt_hog_at_most_95_percent() {
    let mut f = Features::mainline();
    f.set(Feat::rt_bandwidth, true);
    f.set(Feat::fair_server, false);
    // With a fair task waiting and without. The budget is checked at each
    // tick (update_curr_rt from task_tick_rt), as in the kernel: it may be
    // overrun by up to one tick (4 ms at HZ 250) per period.
    for fair in [true, false] {
        let mut s = sim(&hog_and_fair(fair), f);
        s.run(2000 * MS).unwrap();
        let hog = ran_ns(&s, 0, 2000 * MS);
        assert!(hog <= 1900 * MS + 2 * 4 * MS, "fair={fair}: RT ran {hog} ns of 2 s");
        assert!(hog >= 1880 * MS, "fair={fair}: RT ran {hog} ns of 2 s");
    }
}

#[test]
fn without_any_limit_an_rt_hog_starves_fair_tasks() {
    let mut f = Features::mainline();
    f.set(Feat::rt_bandwidth, false);
    f.set(Feat::fair_server, false);
    let mut s = sim(&hog_and_fair(true), f);
    s.run(2000 * MS).unwrap();
    assert_eq!(ran_ns(&s, 1, 2000 * MS), 0);
}

#[test]
fn the_fair_server_limits_rt_only_while_fair_tasks_wait() {
    let f = Features::mainline(); // fair_server on, rt_bandwidth off
    let mut s = sim(&hog_and_fair(true), f);
    s.run(2000 * MS).unwrap();
    let fair = ran_ns(&s, 1, 2000 * MS);
    assert!((95 * MS..=105 * MS).contains(&fair), "fair task ran {fair} ns of 2 s");
    let mut s = sim(&hog_and_fair(false), f);
    s.run(2000 * MS).unwrap();
    assert!(ran_ns(&s, 0, 2000 * MS) >= 1999 * MS, "alone, the RT hog keeps the CPU");
}

#[test]
fn capacity_of_under_a_known_rt_share_on_a_big_pixel2_cpu() {
    // An RT task taking 20% of big CPU 4 of pixel2 (4 ms every 20 ms at
    // capacity 1024): after the PELT window capacity_of is 80% of the
    // original within 2%.
    let src = preset_source("pixel2");
    let mut m = machine_from_toml(&src.text);
    // A zero latency limit keeps the CPU in WFI: the idle governor would
    // otherwise see the 16 ms timer and pick big-power-collapse, whose 2 ms
    // exit latency the task pays on the CPU (`ready_at`) and PELT counts as
    // RT time. The test is about the RT share alone.
    m.cpuidle.latency_req_ns = 0;
    let mut ts = script_tasks(1, &[Action::Compute(4 * MS), Action::Sleep(16 * MS)], 40);
    pin(&mut ts[0], &[4]);
    rt(&mut ts[0], SchedPolicy::Fifo, 50);
    let w = script_workload(ts);
    let d = crate::topology::build_sched_domains(&m).unwrap();
    let mut s = Sim::build(m, d, &w, sim_config(Features::mainline())).unwrap();
    s.run(790 * MS).unwrap();
    s.update_blocked_averages(CpuId(4));
    s.update_cpu_capacity(CpuId(4));
    let orig = s.machine.capacity_orig(CpuId(4)) as f64;
    let cap = s.capacity_of(CpuId(4)) as f64;
    assert!((cap - 0.8 * orig).abs() <= 0.02 * 0.8 * orig, "capacity_of {cap} of {orig}");
}

#[test]
fn rt_runs_are_deterministic() {
    let mut ts = script_tasks(6, &[Action::Compute(3 * MS), Action::Sleep(2 * MS)], 20);
    for (i, t) in ts.iter_mut().enumerate() {
        rt(t, if i % 2 == 0 { SchedPolicy::Fifo } else { SchedPolicy::Rr }, 10 + i as u32);
    }
    let w = script_workload(ts);
    let run = || {
        let mut s = sim(&w, Features::mainline());
        s.run(u64::MAX).unwrap();
        (s.now, s.trace.take().unwrap())
    };
    assert_eq!(run(), run());
}

#[test]
fn a_cpu_whose_rt_task_blocks_gets_the_rt_work_queued_elsewhere() {
    // CPU 0 runs t0 (FIFO 50, pinned) with t2 (FIFO 20, may run on 0-1)
    // queued behind it: t2 was woken on CPU 0 while CPU 1 ran t1 (FIFO 30),
    // so nowhere was lower. When t1 finishes, CPU 1's RT level drops and the
    // pull (RT_PUSH_IPI: CPU 0 pushes) brings t2 over at once.
    let mut ts = script_tasks(3, &[Action::Compute(10 * MS)], 1);
    // t0 holds CPU 0 well past t1's end.
    ts[0].program = crate::workload::Program::Script(crate::workload::Script::new(vec![Action::Compute(30 * MS)], 1));
    pin(&mut ts[0], &[0]);
    pin(&mut ts[1], &[1]);
    pin(&mut ts[2], &[0, 1]);
    rt(&mut ts[0], SchedPolicy::Fifo, 50);
    rt(&mut ts[1], SchedPolicy::Fifo, 30);
    rt(&mut ts[2], SchedPolicy::Fifo, 20);
    ts[1].start = crate::workload::StartKind::Wake { prev_cpu: 1 };
    ts[2].start_ns = MS;
    for ipi in [true, false] {
        let mut f = Features::mainline();
        f.set(Feat::RT_PUSH_IPI, ipi);
        let mut s = sim(&script_workload(ts.clone()), f);
        s.run(u64::MAX).unwrap();
        let t2 = switches_in(&s, 2);
        assert_eq!(t2[0].1, CpuId(1), "RT_PUSH_IPI={ipi}: t2 ran on {:?}", t2);
        let t1_done = switches_in(&s, 1)[0].0 + 10 * MS;
        // RT_PUSH_IPI: one IPI to CPU 0, whose push moves t2 (a few us).
        assert!(t2[0].0 <= t1_done + 200_000, "RT_PUSH_IPI={ipi}: t2 at {} ns, t1 done ~{t1_done}", t2[0].0);
    }
}
