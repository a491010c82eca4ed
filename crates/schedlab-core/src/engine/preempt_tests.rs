//! The preemption point of a wakeup preemption: the waker keeps its CPU
//! until the kernel work charged for its wakeup is done, as it does in the
//! kernel (the rest of `try_to_wake_up`, then the return to user), so that
//! work is in the waker's runtime and not in the wakee's.

use crate::cpumask::CpuMask;
use crate::features::Features;
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::trace::Event;
use crate::workload::{Action, ChanId, ChanSpec};

const WAKEUP_NS: Ns = 100_000;

/// On CPU 0 only: t0 starts at 1 ms, computes 4 ms, writes one message (waking t1) and
/// computes 1 ms more; t1 (nice -10) blocks reading at once, then computes
/// 10 us. The
/// machine's `wakeup_ns` is 100 us. Returns the time t1 was woken, the time
/// t0 was switched out for t1, and how long t1 then held the CPU.
fn wake_and_preempt() -> (Ns, Ns, Ns) {
    let mut tasks = script_tasks(
        1,
        &[
            Action::Compute(4 * NSEC_PER_MSEC),
            Action::Send { chan: ChanId(0), msg: 1, sync: true },
            Action::Compute(NSEC_PER_MSEC),
        ],
        1,
    );
    let mut reader = script_tasks(1, &[Action::Recv { chan: ChanId(0) }, Action::Compute(10_000)], 1);
    // Nice -10: its deadline, a slice at its weight, comes before t0's,
    // whose protection (RUN_TO_PARITY) its 4 ms first run outlasted.
    reader[0].nice = -10;
    // t1 blocks alone first, so it sleeps eligible (lag 0), not delayed.
    tasks[0].start_ns = NSEC_PER_MSEC;
    tasks.append(&mut reader);
    for t in &mut tasks {
        t.allowed = Some(CpuMask::from_cpus([CpuId(0)]));
    }
    let mut w = script_workload(tasks);
    w.chans.push(ChanSpec::pipe(16, 100));
    let machine = format!("{TWO_LLC}\n[cost]\nwakeup_ns = {WAKEUP_NS}\n");
    let mut cfg = sim_config(Features::mainline());
    cfg.trace = true;
    let mut sim = sim_with(&machine, &w, cfg);
    sim.check_invariants = true;
    sim.run(u64::MAX).unwrap();
    assert_eq!(sim.alive, 0);
    let trace = sim.trace.take().unwrap();
    let woken = trace
        .iter()
        .find_map(|te| (matches!(te.ev, Event::Waking { task: TaskId(1), .. }) && te.time > 0).then_some(te.time))
        .expect("t1 was woken");
    let switched = trace
        .iter()
        .find_map(|te| match te.ev {
            Event::Switch { prev: Some(TaskId(0)), next: Some(TaskId(1)), .. } if te.time >= woken => Some(te.time),
            _ => None,
        })
        .expect("t1 preempted t0");
    let left = trace
        .iter()
        .find_map(|te| match te.ev {
            Event::Switch { prev: Some(TaskId(1)), .. } if te.time >= switched => Some(te.time),
            _ => None,
        })
        .expect("t1 left the CPU");
    (woken, switched, left - switched)
}

#[test]
fn the_waker_pays_its_wakeup_before_the_wakee_runs() {
    let (woken, switched, wakee_ran) = wake_and_preempt();
    // The switch waits for the waker's try_to_wake_up (wakeup_ns); before
    // the preemption point was modelled it happened at `woken` and the
    // wakee's first 100 us were the waker's work.
    assert_eq!(switched, woken + WAKEUP_NS, "woken at {woken}, switched at {switched}");
    // The wakee's own run: its context switch and 10 us of work.
    assert!(wakee_ran < WAKEUP_NS / 2, "wakee ran {wakee_ran}");
}
