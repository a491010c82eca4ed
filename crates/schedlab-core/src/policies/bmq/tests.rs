//! Decision tests: BMQ's queue levels, boost/deboost, `best_mask_cpu` and
//! `select_task_rq` on hand-built states.

use super::*;
use crate::policies::test_util::{busy, machine, sim};
use crate::policy::ClassKind;

#[test]
fn task_sched_prio_spans_levels_32_to_63() {
    assert_eq!(task_sched_prio(0, 0), 48);
    assert_eq!(task_sched_prio(0, -MAX_PRIORITY_ADJ), 42);
    assert_eq!(task_sched_prio(0, MAX_PRIORITY_ADJ), 54);
    assert_eq!(task_sched_prio(-20, -MAX_PRIORITY_ADJ), 32);
    assert_eq!(task_sched_prio(19, MAX_PRIORITY_ADJ), 63);
}

#[test]
fn boost_on_sleep_and_deboost_on_renewal_are_bounded() {
    let m = machine();
    let mut st = BmqState::new(BmqParams::default(), &m, 1);
    let p = TaskId(0);
    st.tasks[0].boost_prio = MAX_PRIORITY_ADJ;
    st.deboost_task(p);
    assert_eq!(st.tasks[0].boost_prio, MAX_PRIORITY_ADJ);
    for _ in 0..30 {
        st.boost_task(p, 1);
    }
    assert_eq!(st.tasks[0].boost_prio, -MAX_PRIORITY_ADJ);
    st.deboost_task(p);
    assert_eq!(st.tasks[0].boost_prio, -MAX_PRIORITY_ADJ + 1);
}

#[test]
fn queue_pops_best_level_first_fifo_within_a_level() {
    let m = machine();
    let mut st = BmqState::new(BmqParams::default(), &m, 4);
    let c = CpuId(0);
    st.push(c, TaskId(0), 50, false);
    st.push(c, TaskId(1), 42, false);
    st.push(c, TaskId(2), 42, false);
    st.push(c, TaskId(3), 42, true);
    assert_eq!(st.first_level(c), Some(42));
    let order: Vec<u32> = std::iter::from_fn(|| st.pop_first(c)).map(|t| t.0).collect();
    assert_eq!(order, vec![3, 1, 2, 0]);
    assert_eq!(st.queues[0].bitmap, 0);
}

#[test]
fn best_mask_cpu_walks_smt_then_llc_then_package_lowest_first() {
    let m = machine();
    let st = BmqState::new(BmqParams::default(), &m, 1);
    let mask = |v: &[u32]| CpuMask::from_cpus(v.iter().map(|&c| CpuId(c)));
    // From CPU 0: sibling 4, then LLC {1,5}, then the rest {2,3,6,7}.
    assert_eq!(st.best_mask_cpu(CpuId(0), &mask(&[1, 2, 4])), Some(CpuId(4)));
    assert_eq!(st.best_mask_cpu(CpuId(0), &mask(&[2, 5])), Some(CpuId(5)));
    // The CPU itself is in no ring: another CPU anywhere beats it.
    assert_eq!(st.best_mask_cpu(CpuId(0), &mask(&[0, 7, 3])), Some(CpuId(3)));
    assert_eq!(st.best_mask_cpu(CpuId(0), &mask(&[0])), Some(CpuId(0)));
}

#[test]
fn select_prefers_wholly_idle_core_then_lower_priority_cpu() {
    let mut s = sim(ClassKind::Bmq(BmqParams::default()), 9);
    // CPU 4 (0's sibling) busy: core {0,4} is not wholly idle; core {1,5} is.
    busy(&mut s, 4, 1);
    assert_eq!(s.bmq_select_task_rq(TaskId(0)), CpuId(1));
    // Every CPU busy at level 42 except CPU 3, which runs level-54 work.
    for c in 0..8u32 {
        busy(&mut s, c, c + 1);
        let b = if c == 3 { MAX_PRIORITY_ADJ } else { -MAX_PRIORITY_ADJ };
        s.bmq().tasks[(c + 1) as usize].boost_prio = b;
    }
    s.tasks[0].cpu = CpuId(0);
    s.bmq().tasks[0].boost_prio = 0; // level 48
    assert_eq!(s.bmq_select_task_rq(TaskId(0)), CpuId(3));
    // Nothing runs worse work: best_mask_cpu over all allowed, sibling first.
    s.bmq().tasks[4].boost_prio = -MAX_PRIORITY_ADJ;
    assert_eq!(s.bmq_select_task_rq(TaskId(0)), CpuId(4));
}

#[test]
fn wakeup_preempts_only_when_the_queue_head_beats_curr() {
    let mut s = sim(ClassKind::Bmq(BmqParams::default()), 3);
    busy(&mut s, 0, 0);
    s.bmq().tasks[0].boost_prio = 0; // curr at level 48
    s.bmq().push(CpuId(0), TaskId(1), 48, false);
    assert!(!s.bmq_wakeup_preempt(CpuId(0)), "same level queues behind curr");
    s.bmq().push(CpuId(0), TaskId(2), 44, false);
    assert!(s.bmq_wakeup_preempt(CpuId(0)));
}
