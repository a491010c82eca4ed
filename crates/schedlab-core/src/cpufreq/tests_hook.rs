//! Where the fair class calls `cpufreq_update_util`, on hand-built states
//! under schedutil: kernel/sched/fair.c (v6.12.y and linux-next 6.19-rc5)
//! calls it from `update_load_avg` only through `cfs_rq_util_change`, when
//! the runqueue's averages `decayed` (a PELT period boundary crossed, or
//! removed load folded in) or a task is attached (`DO_ATTACH`), from
//! `enqueue_task_fair` for a task back from an I/O wait, and once from the
//! blocked-averages update when something decayed.
//!
//! A hook call is seen as `SugovCpu::last_update` (set to now by every
//! schedutil hook of that CPU): each test clears it, acts, and reads it.

use super::iowait::IOWAIT_BOOST_MIN;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_MSEC};
use crate::testkit::sim_from_toml;
use crate::trace::MigrateReason;

/// Two CPUs, one frequency domain (1000 and 2000 MHz), schedutil, HZ 1000
/// (the frequency tests' machine).
fn su() -> String {
    super::tests::two_opp("governor = \"schedutil\"", "")
}

fn sim() -> Sim {
    sim_from_toml(&su(), 2, Default::default())
}

/// Forget `cpu`'s last hook call.
fn clear(s: &mut Sim, cpu: CpuId) {
    s.cpufreq.sugov_cpus[cpu.idx()].last_update = 0;
}

/// Whether `cpu` got a hook call since [`clear`] (at the current time).
fn hooked(s: &Sim, cpu: CpuId) -> bool {
    let t = s.cpufreq.sugov_cpus[cpu.idx()].last_update;
    assert!(t == 0 || t == s.now, "a hook at another time: {t}");
    t == s.now
}

/// Bring idle `cpu`'s runqueue to `now` and return the time at which its
/// current 1024 us PELT period ends. On an idle CPU without IRQ time the
/// PELT clock is the simulated time.
fn sync_idle(s: &mut Sim, cpu: CpuId, now: Ns) -> Ns {
    s.now = now;
    s.update_load_avg(cpu, None);
    let rq = &s.rqs[cpu.idx()];
    assert_eq!(rq.clock_pelt.rq_clock_pelt(), now, "idle CPU: PELT clock = time");
    let a = &rq.cfs_avg;
    a.last_update_time + (1024 - a.period_contrib as u64) * 1024
}

/// Queue task `p` on `cpu` (not running).
fn enqueue(s: &mut Sim, p: TaskId, cpu: CpuId) {
    s.tasks[p.idx()].cpu = cpu;
    s.tasks[p.idx()].state = TaskState::Runnable;
    s.tasks[p.idx()].runnable_since = s.now;
    s.enqueue_task(cpu, p, EnqueueFlags::default());
}

#[test]
fn update_load_avg_calls_the_hook_only_when_a_pelt_period_ends() {
    let mut s = sim();
    let cpu = CpuId(0);
    // The first update ages the runqueue from 0: decayed.
    s.now = 10 * NSEC_PER_MSEC;
    clear(&mut s, cpu);
    let end = sync_idle(&mut s, cpu, 10 * NSEC_PER_MSEC);
    assert!(hooked(&s, cpu));
    let pol = s.cpufreq.policies[0].clone();
    // 1 us before the period ends: the sums grow, no boundary, no hook; the
    // policy's request and its last change stay.
    clear(&mut s, cpu);
    s.now = end - 1024;
    s.update_load_avg(cpu, None);
    assert!(!hooked(&s, cpu), "same PELT period: no cfs_rq_util_change");
    assert_eq!(s.cpufreq.policies[0].next_freq, pol.next_freq);
    assert_eq!(s.cpufreq.policies[0].last_freq_update_time, pol.last_freq_update_time);
    // 1 us after: the averages decay, the hook runs.
    s.now = end + 1024;
    s.update_load_avg(cpu, None);
    assert!(hooked(&s, cpu), "a crossed period boundary calls the hook");
}

#[test]
fn attaching_a_new_or_migrated_task_calls_the_hook_and_a_requeue_does_not() {
    let mut s = sim();
    let (c0, c1, p) = (CpuId(0), CpuId(1), TaskId(0));
    let end0 = sync_idle(&mut s, c0, 10 * NSEC_PER_MSEC);
    let end1 = sync_idle(&mut s, c1, 10 * NSEC_PER_MSEC);
    s.now = 10 * NSEC_PER_MSEC + 100_000;
    assert!(s.now < end0 - 1024 && s.now < end1 - 1024, "the test stays inside both periods");
    // A new task (last_update_time 0) with some utilisation: attached.
    assert_eq!(s.tasks[p.idx()].avg.last_update_time, 0);
    s.tasks[p.idx()].avg.util_avg = 300;
    clear(&mut s, c0);
    enqueue(&mut s, p, c0);
    assert!(hooked(&s, c0), "attach_entity_load_avg -> cfs_rq_util_change");
    assert!(s.rqs[c0.idx()].cfs_avg.util_avg >= 300, "the hook saw the task's utilisation");
    // Dequeued and queued again in the same period: attached already, no hook.
    clear(&mut s, c0);
    s.dequeue_task(c0, p, DequeueFlags::default());
    assert!(!hooked(&s, c0), "dequeue inside the period");
    enqueue(&mut s, p, c0);
    assert!(!hooked(&s, c0), "enqueue of an attached task inside the period");
    // A load-balance move: the source's next update folds the removed load
    // in (decayed, hook); the destination attaches the task (hook).
    s.dequeue_task(c0, p, DequeueFlags::default());
    s.set_task_cpu(p, c1, MigrateReason::Balance);
    assert_eq!(s.tasks[p.idx()].avg.last_update_time, 0, "migrate_task_rq_fair");
    clear(&mut s, c1);
    enqueue(&mut s, p, c1);
    assert!(hooked(&s, c1), "the migrated task attaches on its new CPU");
    clear(&mut s, c0);
    s.update_load_avg(c0, None);
    assert!(hooked(&s, c0), "the source's removed load is folded in: decayed");
    let u0 = s.rqs[c0.idx()].cfs_avg.util_avg;
    assert!(u0 < 300, "the removal took the task's utilisation off the source: {u0}");
    // Once folded, a further update inside the period is quiet again.
    clear(&mut s, c0);
    s.update_load_avg(c0, None);
    assert!(!hooked(&s, c0));
}

#[test]
fn an_iowait_enqueue_still_calls_the_hook_with_its_flag_inside_a_period() {
    for in_iowait in [false, true] {
        let mut s = sim();
        let (cpu, p) = (CpuId(0), TaskId(0));
        let end = sync_idle(&mut s, cpu, 10 * NSEC_PER_MSEC);
        s.now = 10 * NSEC_PER_MSEC + 50_000;
        enqueue(&mut s, p, cpu); // attaches (hook)
        s.dequeue_task(cpu, p, DequeueFlags::default());
        s.now += 50_000;
        assert!(s.now < end - 1024);
        s.tasks[p.idx()].in_iowait = in_iowait;
        s.cpufreq.sugov_cpus[cpu.idx()].iowait_boost = 0;
        clear(&mut s, cpu);
        enqueue(&mut s, p, cpu);
        assert_eq!(hooked(&s, cpu), in_iowait, "only enqueue_task_fair's explicit IOWAIT call");
        let boost = s.cpufreq.sugov_cpus[cpu.idx()].iowait_boost;
        assert_eq!(boost, if in_iowait { IOWAIT_BOOST_MIN } else { 0 });
    }
}

#[test]
fn blocked_averages_call_the_hook_once_when_something_decayed() {
    let mut s = sim();
    let cpu = CpuId(0);
    let end = sync_idle(&mut s, cpu, 10 * NSEC_PER_MSEC);
    s.update_other_load_avgs(cpu);
    clear(&mut s, cpu);
    s.now = end - 1024;
    s.update_blocked_averages(cpu);
    assert!(!hooked(&s, cpu), "nothing crossed a period");
    s.now = end + 1024;
    s.update_blocked_averages(cpu);
    assert!(hooked(&s, cpu));
}

/// The RT class kicks schedutil where the kernel's `enqueue_top_rt_rq`
/// does: on every RT enqueue and dequeue (not throttled), so a waking RT
/// task's arrival reaches schedutil at once, not at the next tick or pick.
#[test]
fn an_rt_enqueue_kicks_schedutil_at_once() {
    use crate::workload::{Action, SchedPolicy, StartKind};
    // t0: FIFO 50 spins 10 ms on CPU 0 from 0; t1: FIFO 10 (lower), pinned
    // there too, wakes at 5.3 ms and waits behind t0: enqueued, not picked.
    let mut ts = crate::testkit::script_tasks(2, &[Action::Compute(10 * NSEC_PER_MSEC)], 1);
    for (t, prio) in ts.iter_mut().zip([50, 10]) {
        t.policy = SchedPolicy::Fifo;
        t.rt_priority = prio;
        t.allowed = Some(crate::cpumask::CpuMask::from_cpus([CpuId(0)]));
    }
    ts[1].start_ns = 5_300_000;
    ts[1].start = StartKind::Wake { prev_cpu: 0 };
    let w = crate::testkit::script_workload(ts);
    let mut s = crate::testkit::sim_with(&su(), &w, crate::testkit::sim_config(Default::default()));
    let cpu = CpuId(0);
    s.run(5_299_999).unwrap();
    clear(&mut s, cpu);
    s.run(5_300_001).unwrap();
    assert_eq!(s.rqs[cpu.idx()].curr, Some(TaskId(0)), "t1 waits behind t0");
    // HZ 1000: the ticks are at whole milliseconds, so this kick is t1's enqueue.
    assert_eq!(s.cpufreq.sugov_cpus[cpu.idx()].last_update, 5_300_000, "no kick at the RT enqueue");
}
