//! Ops programs run on the engine: loops, timers, mutexes, condition
//! variables and wall-clock runs behave as their C counterparts.

use super::*;
use crate::features::Features;
use crate::ids::{Ns, NSEC_PER_MSEC};
use crate::testkit::{script_workload, sim_config, sim_with, TWO_LLC};
use crate::workload::{forked_task, ChanSpec, Program, Workload};

const US: Ns = 1_000;

fn task(name: &str, b: OpsBuilder) -> crate::workload::TaskSpec {
    forked_task(name, Program::Ops(b.build()), 0)
}

fn traced(w: &Workload) -> crate::engine::Sim {
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    cfg.check_invariants = true;
    sim_with(TWO_LLC, w, cfg)
}

fn run(w: &Workload) -> crate::engine::Sim {
    let mut sim = traced(w);
    sim.run(u64::MAX).unwrap();
    sim
}

/// When task `i` exited.
fn exit_of(sim: &crate::engine::Sim, i: u32) -> Ns {
    let trace = sim.trace.as_ref().expect("traced");
    trace
        .iter()
        .find(|e| matches!(e.ev, crate::trace::Event::Exit { task } if task.0 == i))
        .map(|e| e.time)
        .expect("exited")
}

#[test]
fn a_loop_runs_its_body_count_times() {
    let mut b = OpsBuilder::new();
    b.begin_loop(5).push(Op::Compute(Dist::Fixed(100 * US))).push(Op::Sleep(Dist::Fixed(100 * US))).end_loop();
    let w = script_workload(vec![task("a", b)]);
    let sim = run(&w);
    // 5 x (100 us work + 100 us sleep), plus small engine costs.
    assert!((1_000 * US..1_050 * US).contains(&sim.now), "ended at {}", sim.now);
    // Nested: 3 x 4 of 100 us.
    let mut b = OpsBuilder::new();
    b.begin_loop(3).begin_loop(4).push(Op::Compute(Dist::Fixed(100 * US))).end_loop().end_loop();
    let sim = run(&script_workload(vec![task("a", b)]));
    assert!((1_200 * US..1_250 * US).contains(&sim.now), "ended at {}", sim.now);
}

#[test]
fn a_timer_keeps_its_period_through_the_work() {
    // 10 periods of 1 ms with 300 us of work: the last expiry is 10 ms after
    // the anchor (the end of the first run), whatever the wakeup costs.
    let mut b = OpsBuilder::new();
    let slot = b.timer_slot();
    b.begin_loop(10)
        .push(Op::Compute(Dist::Fixed(300 * US)))
        .push(Op::Timer { slot, period: NSEC_PER_MSEC, absolute: false })
        .end_loop();
    let sim = run(&script_workload(vec![task("t", b)]));
    let anchored = exit_of(&sim, 0);
    // The first use anchors after the first run (t = 300 us + start costs).
    assert!((10_300 * US..10_330 * US).contains(&anchored), "timer run ended at {anchored}");
}

#[test]
fn a_late_relative_timer_reanchors_and_an_absolute_one_catches_up() {
    // Work of 1.5 ms then a 1 ms timer, twice. Relative: each missed expiry
    // re-anchors at now, so no sleep ever happens: 3 ms. Absolute: the same
    // here (each expiry is missed); the phase shows once the work shrinks.
    for absolute in [false, true] {
        let mut b = OpsBuilder::new();
        let slot = b.timer_slot();
        b.push(Op::Compute(Dist::Fixed(100 * US)))
            .push(Op::Timer { slot, period: NSEC_PER_MSEC, absolute })
            .push(Op::Compute(Dist::Fixed(1_500 * US)))
            .push(Op::Timer { slot, period: NSEC_PER_MSEC, absolute })
            .push(Op::Compute(Dist::Fixed(100 * US)))
            .push(Op::Timer { slot, period: NSEC_PER_MSEC, absolute });
        let end = exit_of(&run(&script_workload(vec![task("t", b)])), 0);
        // Anchor a = ~100 us. First expiry a+1ms: sleep to 1.1 ms; work to
        // 2.6 ms; next expiry 2.1 ms missed. Relative re-anchors at 2.6 ms:
        // work to 2.7, sleep to 3.6 ms. Absolute keeps 2.1: next 3.1 ms.
        let want = if absolute { 3_100 * US } else { 3_600 * US };
        assert!((want..want + 40 * US).contains(&end), "absolute={absolute}: ended at {end}, want ~{want}");
    }
}

#[test]
fn runfor_takes_wall_time_whatever_the_competition() {
    // Two tasks pinned to one CPU, one of them running 2 ms of wall time:
    // sharing the CPU, it still ends near 2 ms (it does less work), while
    // `run` of 2 ms of work would take ~4 ms shared.
    let one = crate::cpumask::CpuMask::from_cpus([crate::ids::CpuId(0)]);
    let mut tasks = Vec::new();
    let mut b = OpsBuilder::new();
    b.push(Op::RunFor(2 * NSEC_PER_MSEC));
    tasks.push(task("wall", b));
    let mut b = OpsBuilder::new();
    b.push(Op::Compute(Dist::Fixed(6 * NSEC_PER_MSEC)));
    tasks.push(task("hog", b));
    for t in &mut tasks {
        t.allowed = Some(one);
    }
    let mut w = script_workload(tasks);
    w.tasks[0].start = crate::workload::StartKind::Wake { prev_cpu: 0 };
    w.tasks[1].start = crate::workload::StartKind::Wake { prev_cpu: 0 };
    let sim = run(&w);
    let wall = exit_of(&sim, 0);
    assert!((2_000 * US..2_200 * US).contains(&wall), "runtime task exited at {wall}");
    assert!(sim.now >= 7_000 * US, "the hog still needs its 6 ms of work: ended at {}", sim.now);
}

#[test]
fn a_mutex_serialises_its_critical_sections() {
    // 4 tasks on 4 CPUs, each 5 x (lock, 200 us, unlock): 20 critical
    // sections in a row, at least 4 ms, although 4 CPUs are free.
    let mut w = script_workload(Vec::new());
    w.chans.push(ChanSpec::queue(1));
    let m = ChanId(0);
    for i in 0..4 {
        let mut b = OpsBuilder::new();
        b.begin_loop(5)
            .push(Op::Lock(m))
            .push(Op::Compute(Dist::Fixed(200 * US)))
            .push(Op::Unlock(m))
            .push(Op::Compute(Dist::Fixed(10 * US)))
            .end_loop();
        w.tasks.push(task(&format!("m{i}"), b));
    }
    let sim = run(&w);
    assert!(sim.now >= 4_000 * US, "critical sections overlapped: ended at {}", sim.now);
    assert!(sim.now < 5_000 * US, "ended at {}", sim.now);
}

#[test]
fn a_signal_wakes_one_waiter_a_broadcast_all_and_a_lost_signal_is_lost() {
    // Two waiters on one condition; a signaller signals once after 1 ms,
    // then broadcasts after 2 ms. The first waiter resumes at ~1 ms, the
    // second at ~2 ms.
    let mk = |signals: &[(Ns, bool)]| {
        let mut w = script_workload(Vec::new());
        w.conds = 1;
        w.chans.push(ChanSpec::queue(1));
        let (c, m) = (CondId(0), ChanId(0));
        for i in 0..2 {
            let mut b = OpsBuilder::new();
            b.push(Op::Lock(m)).push(Op::CondWait { cond: c, mutex: Some(m) }).push(Op::Unlock(m));
            w.tasks.push(task(&format!("w{i}"), b));
        }
        let mut b = OpsBuilder::new();
        for &(at, all) in signals {
            b.push(Op::Sleep(Dist::Fixed(at))).push(Op::Signal { cond: c, all });
        }
        w.tasks.push(task("s", b));
        w
    };
    let sim = run(&mk(&[(NSEC_PER_MSEC, false), (NSEC_PER_MSEC, true)]));
    let mut ends: Vec<Ns> = (0..2).map(|i| exit_of(&sim, i)).collect();
    ends.sort();
    assert!((1_000 * US..1_100 * US).contains(&ends[0]), "first waiter at {}", ends[0]);
    assert!((2_000 * US..2_100 * US).contains(&ends[1]), "second waiter at {}", ends[1]);
    // A signal before anyone waits is lost: waiters then block for good.
    let mut w = mk(&[(0, true)]);
    // The signaller goes first: the waiters start 500 us later.
    for t in &mut w.tasks[..2] {
        t.start_ns = 500 * US;
    }
    let err = traced(&w).run(u64::MAX).unwrap_err().to_string();
    assert!(err.contains("never finish"), "{err}");
}

#[test]
fn an_empty_forever_loop_is_reported_not_hung() {
    let mut b = OpsBuilder::new();
    b.push(Op::Compute(Dist::Fixed(10 * US))).begin_forever().push(Op::Mark(MarkKind::WorkDone)).end_loop();
    let w = script_workload(vec![task("spin", b)]);
    let err = traced(&w).run(u64::MAX).unwrap_err().to_string();
    assert!(err.contains("without computing"), "{err}");
}

#[test]
fn marks_carry_request_start_and_wake_time() {
    let mut b = OpsBuilder::new();
    b.push(Op::Mark(MarkKind::RequestStart))
        .push(Op::Compute(Dist::Fixed(100 * US)))
        .push(Op::Mark(MarkKind::RequestDone));
    let mut ops = b.build();
    let mut rng = crate::sim::Rng::named(1, "t", 0);
    let ctx = |now| ProgCtx { now, task: crate::ids::TaskId(0), msg: None, woken_at: None };
    assert_eq!(ops.step(&ctx(7), &mut rng), Action::Mark { kind: MarkKind::RequestStart, value: 7 });
    assert_eq!(ops.step(&ctx(7), &mut rng), Action::Compute(100 * US));
    assert_eq!(ops.step(&ctx(200), &mut rng), Action::Mark { kind: MarkKind::RequestDone, value: 7 });
    assert_eq!(ops.step(&ctx(200), &mut rng), Action::Exit);
}

#[test]
fn a_busy_wait_on_a_flag_burns_the_cpu_a_sleeping_wait_does_not() {
    // Two tasks pinned to one CPU: a waiter that waits on a semaphore, and a
    // poster that computes 2 ms then posts. A sleeping waiter leaves the CPU
    // to the poster (done at ~2 ms); a busy-waiting one shares it, so the
    // post comes later.
    let end = |spin: Ns| {
        let one = crate::cpumask::CpuMask::from_cpus([crate::ids::CpuId(0)]);
        let mut w = script_workload(Vec::new());
        w.sems = vec![0];
        let mut b = OpsBuilder::new();
        b.push(Op::SemWait { sem: SemId(0), spin }).push(Op::Compute(Dist::Fixed(10 * US)));
        w.tasks.push(task("waiter", b));
        let mut b = OpsBuilder::new();
        b.push(Op::Compute(Dist::Fixed(2 * NSEC_PER_MSEC))).push(Op::SemPost(SemId(0)));
        w.tasks.push(task("poster", b));
        for t in &mut w.tasks {
            t.allowed = Some(one);
        }
        exit_of(&run(&w), 0)
    };
    let sleeping = end(0);
    let spinning = end(1_000_000_000_000);
    assert!((2_000 * US..2_200 * US).contains(&sleeping), "sleeping waiter done at {sleeping}");
    assert!(spinning > 3_000 * US, "busy waiter done at {spinning}");
    // A post before the wait is kept.
    let mut w = script_workload(Vec::new());
    w.sems = vec![1];
    let mut b = OpsBuilder::new();
    b.push(Op::SemWait { sem: SemId(0), spin: 0 }).push(Op::Compute(Dist::Fixed(10 * US)));
    w.tasks.push(task("taker", b));
    assert!(exit_of(&run(&w), 0) < 100 * US);
}

/// Two tasks pinned to CPU 0: `a` runs `n` x (100 us, then a yield or not),
/// `b` `b_ms` of work, starting `b_at` later. Returns when `b` finished.
fn b_done_with(
    yields: bool,
    features: Features,
    policy: crate::workload::SchedPolicy,
    n: u64,
    b_ms: u64,
    b_at: Ns,
) -> Ns {
    let one = crate::cpumask::CpuMask::from_cpus([crate::ids::CpuId(0)]);
    let mut b = OpsBuilder::new();
    b.begin_loop(n).push(Op::Compute(Dist::Fixed(100 * US)));
    if yields {
        b.push(Op::Yield);
    }
    b.end_loop();
    let mut w = script_workload(vec![task("a", b)]);
    let mut hog = OpsBuilder::new();
    hog.push(Op::Compute(Dist::Fixed(b_ms * NSEC_PER_MSEC)));
    w.tasks.push(task("b", hog));
    w.tasks[1].start_ns = b_at;
    for t in &mut w.tasks {
        t.allowed = Some(one);
        t.policy = policy;
        t.rt_priority = if policy.is_rt() { 10 } else { 0 };
    }
    let mut cfg = sim_config(features);
    cfg.trace = true;
    cfg.check_invariants = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    exit_of(&sim, 1)
}

/// `b_done_with` for 20 x 100 us against 2 ms arriving 50 us into a's run.
fn b_done(yields: bool, features: Features, policy: crate::workload::SchedPolicy) -> Ns {
    b_done_with(yields, features, policy, 20, 2, 50 * US)
}

#[test]
fn a_yield_lets_the_other_task_run_under_eevdf_cfs_and_fifo() {
    use crate::workload::SchedPolicy::{Fifo, Normal};
    let mut cfs = Features::mainline();
    cfs.set(crate::features::Feat::EEVDF, false);
    for (what, f, policy) in [("eevdf", Features::mainline(), Normal), ("fifo", Features::mainline(), Fifo)] {
        let (with, without) = (b_done(true, f, policy), b_done(false, f, policy));
        assert!(with < without, "{what}: b done at {with} with yields, {without} without");
    }
    // CFS: a new b starts a vslice behind (START_DEBIT) and the skip buddy
    // is passed over only for a task within wakeup_gran of it, so a yield
    // changes nothing here (as in the kernel). With two long tasks taking
    // turns, a's yields hand the CPU to b once a has caught up to within
    // wakeup_gran of it, before a's slice ends.
    assert_eq!(b_done(true, cfs, Normal), b_done(false, cfs, Normal));
    let (with, without) = (b_done_with(true, cfs, Normal, 400, 40, 0), b_done_with(false, cfs, Normal, 400, 40, 0));
    assert!(with < without, "cfs, both running: b done at {with} with yields, {without} without");
    // SCHED_FIFO: without yields b waits for all of a (2 ms), then runs 2 ms;
    // with them it runs at a's first yield (100 us), to the end (FIFO never
    // preempts it).
    let with = b_done(true, Features::mainline(), Fifo);
    assert!((2_100 * US..2_300 * US).contains(&with), "fifo with yields: b done at {with}");
    assert!(b_done(false, Features::mainline(), Fifo) > 4_000 * US);
}
