//! IRQ time: stolen from the running task, out of `clock_task`, into
//! `avg_irq` and `capacity_of`; softirq work past the limit runs in ksoftirqd.

use crate::cpumask::CpuMask;
use crate::features::Features;
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::workload::{Action, Dist, IrqSpec};

/// A workload of `tasks` tasks computing `work_ns` once each, plus one
/// interrupt source on CPU 0 every `interval_ns` with the given handlers.
fn with_irq(tasks: usize, work_ns: u64, interval_ns: u64, hard_ns: u64, soft_ns: u64) -> crate::workload::Workload {
    let mut ts = script_tasks(tasks, &[Action::Compute(work_ns)], 1);
    for t in &mut ts {
        t.allowed = Some(CpuMask::from_cpus([CpuId(0)]));
    }
    let mut w = script_workload(ts);
    w.irqs.push(IrqSpec {
        name: "test".into(),
        cpus: CpuMask::from_cpus([CpuId(0)]),
        interval: Dist::Fixed(interval_ns),
        hardirq: Dist::Fixed(hard_ns),
        softirq: Dist::Fixed(soft_ns),
        accounted: true,
        busy_cpus: 0,
    });
    w
}

#[test]
fn handler_time_delays_the_task_by_exactly_the_irq_share() {
    // 20% of CPU 0 in hard handlers: 100 ms of work takes 125 ms (+ costs).
    let w = with_irq(1, 100 * NSEC_PER_MSEC, 1_000_000, 200_000, 0);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    sim.run(u64::MAX).unwrap();
    let end = sim.now;
    assert!((124 * NSEC_PER_MSEC..127 * NSEC_PER_MSEC).contains(&end), "ended at {end}");
}

#[test]
fn no_irq_source_no_irq_time() {
    let w = script_workload(script_tasks(1, &[Action::Compute(10 * NSEC_PER_MSEC)], 1));
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(u64::MAX).unwrap();
    assert!(sim.now < 11 * NSEC_PER_MSEC);
    assert_eq!(sim.rqs[0].irq_time, 0);
}

#[test]
fn capacity_of_under_a_known_irq_share() {
    // 20% IRQ on CPU 0, then 400 ms for avg_irq to settle (PELT half-life
    // 32 ms): capacity_of within 2% of 80% of 1024.
    let w = with_irq(1, 400 * NSEC_PER_MSEC, 1_000_000, 200_000, 0);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(400 * NSEC_PER_MSEC).unwrap();
    sim.update_rq_clock(CpuId(0));
    sim.update_cpu_capacity(CpuId(0));
    let cap = sim.capacity_of(CpuId(0)) as f64;
    let want = 0.8 * 1024.0;
    assert!((cap - want).abs() <= 0.02 * want, "capacity_of {cap}, want {want}");
    // The other CPUs keep their whole capacity.
    sim.update_cpu_capacity(CpuId(1));
    assert_eq!(sim.capacity_of(CpuId(1)), 1024);
}

#[test]
fn nontask_capacity_off_keeps_the_original_capacity() {
    let w = with_irq(1, 400 * NSEC_PER_MSEC, 1_000_000, 200_000, 0);
    let mut f = Features::mainline();
    f.set(crate::features::Feat::NONTASK_CAPACITY, false);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(f));
    sim.run(400 * NSEC_PER_MSEC).unwrap();
    sim.update_cpu_capacity(CpuId(0));
    assert_eq!(sim.capacity_of(CpuId(0)), 1024);
}

#[test]
fn clock_task_excludes_irq_time() {
    let w = with_irq(1, 100 * NSEC_PER_MSEC, 1_000_000, 200_000, 0);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(50 * NSEC_PER_MSEC).unwrap();
    let task_clock = sim.rq_clock_task(CpuId(0));
    let irq = sim.rqs[0].irq_time;
    assert!(irq >= 9 * 200_000, "irq time {irq}");
    assert!(task_clock + irq <= sim.now + 200_000, "clock_task {task_clock} + irq {irq} vs {}", sim.now);
    assert!(task_clock + irq + 200_000 >= sim.now);
}

#[test]
fn a_stall_is_charged_to_the_running_task_not_kept_as_irq_time() {
    // The same 20% of CPU 0, as stalls: the task is delayed alike, but
    // clock_task keeps the time (no IRQ time), so update_curr charges the
    // task for it: its runtime is the wall time it held the CPU.
    let mut w = with_irq(1, 100 * NSEC_PER_MSEC, 1_000_000, 200_000, 0);
    w.irqs[0].accounted = false;
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    sim.run(50 * NSEC_PER_MSEC).unwrap();
    assert_eq!(sim.rqs[0].irq_time, 0);
    let task_clock = sim.rq_clock_task(CpuId(0));
    assert!(task_clock + 200_000 >= sim.now, "clock_task {task_clock} vs {}", sim.now);
    sim.run(u64::MAX).unwrap();
    let end = sim.now;
    assert!((124 * NSEC_PER_MSEC..127 * NSEC_PER_MSEC).contains(&end), "ended at {end}");
}

#[test]
fn a_stalled_cpu_takes_its_ticks_when_the_stall_ends() {
    // Two CPU-bound tasks on CPU 0 and one 20 ms stall from 30 ms on: the
    // ticks due meanwhile (which would rotate the two every slice) wait for
    // the stall's end, so the task running at its start still runs at its
    // last moment, and the first tick after it, its slice long used up,
    // switches to the other.
    let mut w = with_irq(2, 200 * NSEC_PER_MSEC, 30 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC, 0);
    w.irqs[0].accounted = false;
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    sim.run(30 * NSEC_PER_MSEC + 1).unwrap();
    assert_eq!(sim.stalled(CpuId(0)), Some(50 * NSEC_PER_MSEC));
    let during = sim.rqs[0].curr;
    assert!(during.is_some());
    sim.run(50 * NSEC_PER_MSEC - 1).unwrap();
    assert_eq!(sim.rqs[0].curr, during, "switched during the stall");
    sim.run(50 * NSEC_PER_MSEC + 1).unwrap();
    assert_ne!(sim.rqs[0].curr, during, "the deferred tick preempts at the stall's end");
    // An accounted interrupt of the same length does not hold the ticks.
    let w = with_irq(2, 200 * NSEC_PER_MSEC, 30 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC, 0);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(30 * NSEC_PER_MSEC + 1).unwrap();
    assert_eq!(sim.stalled(CpuId(0)), None);
}

/// When a task pinned to CPU 0 computing 100 ms ends, with stalls of
/// 0.5 ms every 1 ms on CPU 0 gated on `busy` busy CPUs, and `others`
/// more tasks pinned to CPU 1 computing as long.
fn end_with_busy_gated_stalls(busy: u32, others: usize) -> u64 {
    let mut ts = script_tasks(1 + others, &[Action::Compute(100 * NSEC_PER_MSEC)], 1);
    for (i, t) in ts.iter_mut().enumerate() {
        t.allowed = Some(CpuMask::from_cpus([CpuId(u32::from(i > 0))]));
    }
    let mut w = script_workload(ts);
    w.irqs.push(IrqSpec {
        name: "stall".into(),
        cpus: CpuMask::from_cpus([CpuId(0)]),
        interval: Dist::Fixed(NSEC_PER_MSEC),
        hardirq: Dist::Fixed(NSEC_PER_MSEC / 2),
        softirq: Dist::Fixed(0),
        accounted: false,
        busy_cpus: busy,
    });
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    let p = crate::ids::TaskId(0);
    while sim.tasks[p.idx()].state != crate::engine::task::TaskState::Dead {
        let next = sim.now + NSEC_PER_MSEC;
        sim.run(next).unwrap();
    }
    sim.now
}

#[test]
fn a_busy_gated_stall_acts_only_while_that_many_cpus_run_tasks() {
    // Alone on the machine, CPU 0 is the one busy CPU: stalls gated on 2
    // busy CPUs never come, stalls gated on 1 take half of it.
    let alone = end_with_busy_gated_stalls(2, 0);
    assert!(alone < 102 * NSEC_PER_MSEC, "ended at {alone}");
    let gated_on_one = end_with_busy_gated_stalls(1, 0);
    assert!(gated_on_one > 195 * NSEC_PER_MSEC, "ended at {gated_on_one}");
    // With a task on CPU 1 as well, two CPUs are busy: the 2-gated stalls
    // take half of CPU 0 until CPU 1's task ends at 100 ms (50 ms of CPU
    // 0's work done), then none: the rest at full speed, ending near 150 ms.
    let beside = end_with_busy_gated_stalls(2, 1);
    assert!((148 * NSEC_PER_MSEC..153 * NSEC_PER_MSEC).contains(&beside), "ended at {beside}");
}

/// A task pinned to CPU 4 (the second LLC) that computes 1 ms then sleeps
/// `sleep_ns`, while CPU 4 stalls from 5 to 25 ms.
fn cpu4_sleeper_and_a_stall(sleep_ns: u64) -> crate::engine::Sim {
    let mut ts = script_tasks(1, &[Action::Compute(NSEC_PER_MSEC), Action::Sleep(sleep_ns)], 1);
    ts[0].allowed = Some(CpuMask::from_cpus([CpuId(4)]));
    let mut w = script_workload(ts);
    w.irqs.push(IrqSpec {
        name: "stall".into(),
        cpus: CpuMask::from_cpus([CpuId(4)]),
        interval: Dist::Fixed(5 * NSEC_PER_MSEC),
        hardirq: Dist::Fixed(20 * NSEC_PER_MSEC),
        softirq: Dist::Fixed(0),
        accounted: false,
        busy_cpus: 0,
    });
    sim_with(TWO_LLC, &w, sim_config(Features::mainline()))
}

#[test]
fn a_timer_due_on_a_stalled_cpu_fires_when_the_stall_ends() {
    // The sleeper's timer is due at 6 ms, during the stall: its interrupt
    // is taken at 25 ms, so the task is runnable again only then.
    let mut sim = cpu4_sleeper_and_a_stall(5 * NSEC_PER_MSEC);
    let p = crate::ids::TaskId(0);
    sim.run(24 * NSEC_PER_MSEC).unwrap();
    assert!(!sim.tasks[p.idx()].on_rq, "woken while CPU 4 was stalled");
    sim.run(25 * NSEC_PER_MSEC + 1).unwrap();
    assert!(sim.tasks[p.idx()].on_rq, "woken when the stall ended");
}

#[test]
fn a_wakeup_sent_to_a_stalled_cpu_arrives_when_the_stall_ends() {
    // The sleeper sleeps from 1 ms on. Woken at 6 ms from CPU 0 (the other
    // LLC: the wakeup goes through CPU 4's wake list and an IPI), it is
    // queued there only when the stall ends, as a descheduled vCPU takes
    // its IPIs.
    let mut sim = cpu4_sleeper_and_a_stall(1_000 * NSEC_PER_MSEC);
    sim.run(6 * NSEC_PER_MSEC).unwrap();
    let p = crate::ids::TaskId(0);
    assert!(!sim.tasks[p.idx()].on_rq, "asleep before the wakeup");
    assert_eq!(sim.stalled(CpuId(4)), Some(25 * NSEC_PER_MSEC));
    sim.try_to_wake_up(p, 0, CpuId(0), None).unwrap();
    sim.run(24 * NSEC_PER_MSEC).unwrap();
    assert!(!sim.tasks[p.idx()].on_rq, "queued while CPU 4 was stalled");
    sim.run(25 * NSEC_PER_MSEC + 1).unwrap();
    assert!(sim.tasks[p.idx()].on_rq, "queued when the stall ended");
}

#[test]
fn softirq_past_the_limit_runs_in_ksoftirqd() {
    // Each interrupt raises 3 ms of softirq work: 2 ms inline, 1 ms deferred.
    let w = with_irq(1, 20 * NSEC_PER_MSEC, 10 * NSEC_PER_MSEC, 10_000, 3 * NSEC_PER_MSEC);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.trace = Some(Vec::new());
    sim.check_invariants = true;
    sim.run(u64::MAX).unwrap();
    let k = sim.irq[0].ksoftirqd.expect("CPU 0 has a ksoftirqd");
    assert_eq!(sim.tasks[k.idx()].name, "ksoftirqd/0");
    let ran = sim
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .filter(|e| matches!(e.ev, crate::trace::Event::Switch { next: Some(n), .. } if n == k))
        .count();
    assert!(ran >= 2, "ksoftirqd ran {ran} times");
    // CPU 1 takes no interrupts: no ksoftirqd there.
    assert!(sim.irq[1].ksoftirqd.is_none());
}

#[test]
fn irq_events_round_trip_through_ftrace_text() {
    let w = with_irq(1, 5 * NSEC_PER_MSEC, 1_000_000, 200_000, 50_000);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.trace = Some(Vec::new());
    sim.run(u64::MAX).unwrap();
    let events = sim.trace.take().unwrap();
    let names: Vec<String> = sim.tasks.iter().map(|t| t.name.clone()).collect();
    let text = crate::trace::write_ftrace(names, 8, &events);
    assert!(text.contains("irq_handler_entry: irq=0"));
    assert!(text.contains("softirq_exit: vec=3 [action=NET_RX]"));
    let parsed = crate::trace::read_ftrace(&text, "test").unwrap();
    let irqs = parsed.events.iter().filter(|e| matches!(e.ev, crate::trace::Event::Irq { .. })).count();
    let want = events.iter().filter(|e| matches!(e.ev, crate::trace::Event::Irq { .. })).count();
    assert_eq!(irqs, want);
}

/// When ksoftirqd/0 was first woken in a run of `w` (None: never).
fn ksoftirqd_first_woken(w: &crate::workload::Workload, until: u64) -> Option<u64> {
    let mut sim = sim_with(TWO_LLC, w, sim_config(Features::mainline()));
    sim.trace = Some(Vec::new());
    sim.run(until).unwrap();
    let k = sim.irq[0].ksoftirqd.expect("CPU 0 has a ksoftirqd");
    let trace = sim.trace.as_ref().unwrap();
    trace.iter().find(|e| matches!(e.ev, crate::trace::Event::Waking { task, .. } if task == k)).map(|e| e.time)
}

/// How often ksoftirqd/0 was switched in during a run of `w`.
fn ksoftirqd_runs(w: &crate::workload::Workload, until: u64) -> usize {
    let mut sim = sim_with(TWO_LLC, w, sim_config(Features::mainline()));
    sim.trace = Some(Vec::new());
    sim.check_invariants = true;
    sim.run(until).unwrap();
    let k = sim.irq[0].ksoftirqd.expect("CPU 0 has a ksoftirqd");
    sim.trace
        .as_ref()
        .unwrap()
        .iter()
        .filter(|e| matches!(e.ev, crate::trace::Event::Switch { next: Some(n), .. } if n == k))
        .count()
}

#[test]
fn softirq_rounds_stop_after_max_softirq_restart() {
    // An interrupt every 20 us, each raising 30 us of softirq work: every
    // round of the softirq loop sees a new interrupt, so the loop restarts
    // until MAX_SOFTIRQ_RESTART rounds (or the jiffy end) and then wakes
    // ksoftirqd, although no single round comes near MAX_SOFTIRQ_TIME.
    let flood = with_irq(1, 20 * NSEC_PER_MSEC, 20_000, 1_000, 30_000);
    // ksoftirqd, woken with the deferred work, waits for the running task's
    // slice to end (no wakeup preemption under RUN_TO_PARITY), which at the
    // few percent of CPU the softirqs leave it takes tens of milliseconds.
    assert!(ksoftirqd_runs(&flood, 200 * NSEC_PER_MSEC) > 0, "the restart limit defers work to ksoftirqd");
    // The first deferral comes after the first 10 rounds (1 + 10 restart
    // attempts, 31 us apart, from the first interrupt at 20 us), long before
    // the loop's jiffy end (4 ms at HZ=250) could stop it.
    let first = ksoftirqd_first_woken(&flood, 10 * NSEC_PER_MSEC).expect("ksoftirqd woken");
    assert_eq!(first, 20_000 + 10 * 31_000 + 1_000, "woken at {first} ns");
    // Spaced interrupts (each softirq done before the next arrives) never
    // restart the loop: everything runs inline.
    let spaced = with_irq(1, 20 * NSEC_PER_MSEC, 100_000, 1_000, 30_000);
    assert_eq!(ksoftirqd_runs(&spaced, 200 * NSEC_PER_MSEC), 0);
}
