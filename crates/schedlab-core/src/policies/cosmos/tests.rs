//! Decision tests: the sched_ext built-in idle pick (`scx_select_cpu_dfl`,
//! ext_idle.c) on hand-built idle masks, and cosmos's deadline queue.

use super::*;
use crate::policies::scx_idle::{ScxIdle, SelectCtx};
use crate::policies::test_util::{busy, machine, sim};
use crate::policy::ClassKind;

fn ctx(prev: u32, this: u32, sync: bool, waker_local_empty: bool) -> SelectCtx {
    SelectCtx { allowed: CpuMask::first_n(8), prev: CpuId(prev), this_cpu: CpuId(this), sync, waker_local_empty }
}

use crate::cpumask::CpuMask;

/// All idle, then the listed CPUs busy.
fn idle_with_busy(m: &Machine, busy: &[u32]) -> ScxIdle {
    let mut s = ScxIdle::new(m);
    for &c in busy {
        s.update_builtin_idle(m, CpuId(c), false);
    }
    s
}

#[test]
fn select_cpu_dfl_prefers_a_wholly_idle_core_over_prevs_idle_smt_half() {
    let m = machine();
    // prev 0 is idle but its sibling 4 is busy; core 1 = {1,5} is wholly idle.
    let mut s = idle_with_busy(&m, &[4]);
    let c = s.scx_select_cpu_dfl(&m, &ctx(0, 0, false, true)).unwrap();
    assert!(c == CpuId(1) || c == CpuId(5), "{c:?}");
    assert!(!s.cpu.test(c), "the pick is claimed");
}

#[test]
fn select_cpu_dfl_keeps_prev_when_its_whole_core_is_idle() {
    let m = machine();
    let mut s = idle_with_busy(&m, &[1, 5]);
    assert_eq!(s.scx_select_cpu_dfl(&m, &ctx(0, 3, false, true)), Some(CpuId(0)));
}

#[test]
fn select_cpu_dfl_without_idle_cores_takes_idle_prev_then_its_llc() {
    let m = machine();
    // One thread of every core busy: no wholly idle core anywhere.
    let mut s = idle_with_busy(&m, &[4, 5, 6, 7]);
    assert_eq!(s.scx_select_cpu_dfl(&m, &ctx(0, 0, false, true)), Some(CpuId(0)));
    // prev 4 is busy: an idle CPU of its LLC {0,1,4,5} (0 is now claimed).
    assert_eq!(s.scx_select_cpu_dfl(&m, &ctx(4, 4, false, true)), Some(CpuId(1)));
    // Nothing idle in the LLC any more: anywhere (LLC 1).
    let c = s.scx_select_cpu_dfl(&m, &ctx(4, 4, false, true)).unwrap();
    assert!(c == CpuId(2) || c == CpuId(3), "{c:?}");
}

#[test]
fn select_cpu_dfl_rotates_within_a_mask() {
    let m = machine();
    // Core 0 busy; the idle core of prev's LLC is {1,5}.
    let mut s = idle_with_busy(&m, &[0, 4]);
    let a = s.scx_select_cpu_dfl(&m, &ctx(0, 0, false, true)).unwrap();
    s.update_builtin_idle(&m, a, true);
    let b = s.scx_select_cpu_dfl(&m, &ctx(0, 0, false, true)).unwrap();
    assert_eq!((a, b), (CpuId(1), CpuId(5)), "cpumask_any_and_distribute starts after the last pick");
}

#[test]
fn select_cpu_dfl_sync_wakeup_goes_to_the_waker_when_its_local_dsq_is_empty() {
    let m = machine();
    // Waker on 2, prev 0 busy, idle CPUs exist.
    let mut s = idle_with_busy(&m, &[0, 2]);
    assert_eq!(s.scx_select_cpu_dfl(&m, &ctx(0, 2, true, true)), Some(CpuId(2)));
    // With tasks queued behind the waker, the normal idle search runs.
    let c = s.scx_select_cpu_dfl(&m, &ctx(0, 2, true, false)).unwrap();
    assert_ne!(c, CpuId(2));
    // A cache-affine idle prev wins over the waker.
    let mut s = idle_with_busy(&m, &[1]);
    assert_eq!(s.scx_select_cpu_dfl(&m, &ctx(0, 1, true, true)), Some(CpuId(0)));
}

#[test]
fn task_dl_clamps_vtime_to_slice_lag_times_wakeup_freq() {
    let m = machine();
    let mut st = CosmosState::new(CosmosParams::default(), &m, 2);
    st.tasks[0].weight = 100;
    st.vtime_now = 1_000_000_000;
    st.tasks[0].exec_runtime = 3_000_000;
    let dl = st.task_dl(TaskId(0));
    assert_eq!(st.tasks[0].dsq_vtime, 1_000_000_000 - 50_000_000);
    assert_eq!(dl, 1_000_000_000 - 50_000_000 + 3_000_000);
    // A frequent sleeper keeps more credit: 4 x slice_lag.
    st.tasks[0].dsq_vtime = 0;
    st.tasks[0].wakeup_freq = 4;
    st.task_dl(TaskId(0));
    assert_eq!(st.tasks[0].dsq_vtime, 1_000_000_000 - 200_000_000);
    // A task ahead of vtime_now is not touched; a heavier one runs less in vtime.
    st.tasks[1].weight = 200;
    st.tasks[1].dsq_vtime = 1_000_000_000;
    st.tasks[1].exec_runtime = 4_000_000;
    assert_eq!(st.task_dl(TaskId(1)), 1_000_000_000 + 2_000_000);
}

#[test]
fn shared_dsq_is_ordered_by_deadline_then_insertion() {
    let m = machine();
    let mut st = CosmosState::new(CosmosParams::default(), &m, 4);
    for (i, rt) in [3_000_000u64, 1_000_000, 2_000_000, 1_000_000].into_iter().enumerate() {
        st.tasks[i].weight = 100;
        st.tasks[i].exec_runtime = rt;
        st.insert_shared(TaskId(i as u32), CpuId(0));
    }
    let order: Vec<u32> = st.shared[0].iter().map(|k| k.2 .0).collect();
    assert_eq!(order, vec![1, 3, 2, 0]);
    // The insertion set dsq_vtime to the deadline.
    assert_eq!(st.tasks[0].dsq_vtime, 3_000_000);
}

#[test]
fn cosmos_wakeup_dispatch_idle_hit_goes_local_else_shared() {
    let mut s = sim(ClassKind::Cosmos(CosmosParams::default()), 3);
    busy(&mut s, 1, 1);
    // Reflect the busy CPU in the idle masks.
    let crate::policies::PeerState::Cosmos(st) = &mut s.peer else { panic!() };
    st.idle.update_builtin_idle(&s.machine, CpuId(1), false);
    let cpu = s.cosmos_select_cpu(TaskId(0), CpuId(1), WF_TTWU, CpuId(1));
    assert_ne!(cpu, CpuId(1));
    let crate::policies::PeerState::Cosmos(st) = &s.peer else { panic!() };
    assert!(st.tasks[0].direct, "an idle hit is dispatched to the local DSQ");
    // No idle CPU at all: the wakee goes to the shared DSQ (busy mode).
    let crate::policies::PeerState::Cosmos(st) = &mut s.peer else { panic!() };
    for c in 0..8 {
        st.idle.update_builtin_idle(&s.machine, CpuId(c), false);
    }
    let cpu = s.cosmos_select_cpu(TaskId(2), CpuId(3), WF_TTWU, CpuId(1));
    assert_eq!(cpu, CpuId(3));
    s.tasks[2].cpu = cpu;
    s.enqueue_task(cpu, TaskId(2), EnqueueFlags::WAKEUP);
    let crate::policies::PeerState::Cosmos(st) = &s.peer else { panic!() };
    assert_eq!(st.shared[0].len(), 1);
    assert!(st.local[3].is_empty());
}
