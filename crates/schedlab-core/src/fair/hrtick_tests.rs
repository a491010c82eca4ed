//! HRTICK decision tests on hand-built runqueues.

use super::hrtick_irq_scaled;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId};
use crate::testkit::{busy, sim_from_toml, TWO_LLC};

const C0: CpuId = CpuId(0);

/// CPU 0 runs task 0 with task 1 queued behind it (as `nr_queued` counts),
/// task 0 `left_ns` of virtual time before its deadline, at weight `w`.
fn two_queued(left_ns: i64, w: u64) -> crate::engine::Sim {
    let mut f = Features::mainline();
    f.set(Feat::HRTICK, true);
    let mut s = sim_from_toml(TWO_LLC, 2, f);
    busy(&mut s, 0, 0);
    s.rqs[0].cfs.nr_queued = 2;
    let se = &mut s.fair.ses[0];
    se.weight = w;
    se.vruntime = 10_000_000;
    se.deadline = (10_000_000 + left_ns) as u64;
    s
}

#[test]
fn the_timer_is_armed_for_the_time_to_the_virtual_deadline() {
    // 3 ms of virtual time at nice 0 is 3 ms; at twice the weight the
    // task's virtual time runs half as fast: 6 ms.
    let mut s = two_queued(3_000_000, 1024);
    s.hrtick_start_fair(C0, TaskId(0));
    assert_eq!(s.hrtick_expires(C0), Some(3_000_000));
    let mut s = two_queued(3_000_000, 2048);
    s.hrtick_start_fair(C0, TaskId(0));
    assert_eq!(s.hrtick_expires(C0), Some(6_000_000));
    // Never shorter than 10 us.
    let mut s = two_queued(1_000, 1024);
    s.hrtick_start_fair(C0, TaskId(0));
    assert_eq!(s.hrtick_expires(C0), Some(10_000));
}

#[test]
fn alone_no_timer_past_the_deadline_a_reschedule() {
    let mut s = two_queued(3_000_000, 1024);
    s.rqs[0].cfs.nr_queued = 1;
    s.hrtick_start_fair(C0, TaskId(0));
    assert_eq!(s.hrtick_expires(C0), None, "one task: nothing to share the CPU with");
    let mut s = two_queued(-1, 1024);
    s.hrtick_start_fair(C0, TaskId(0));
    assert_eq!(s.hrtick_expires(C0), None);
    assert!(s.rqs[0].need_resched, "the running task is past its deadline");
}

#[test]
fn interrupt_time_stretches_the_timer() {
    assert_eq!(hrtick_irq_scaled(1_000_000, 0), 1_000_000);
    assert_eq!(hrtick_irq_scaled(1_000_000, 512), 2_000_000);
    // The kernel's integer steps: scale = 1024 * 1024 / 768 = 1365.
    assert_eq!(hrtick_irq_scaled(1_000_000, 256), 1365 * 1_000_000 / 1024);
    // A saturated (or empty) IRQ signal leaves it alone, as the kernel's
    // `util && util < 1024` does.
    assert_eq!(hrtick_irq_scaled(1_000_000, 1024), 1_000_000);
}

#[test]
fn an_enqueue_starts_the_timer_only_when_none_is_armed() {
    let mut s = two_queued(3_000_000, 1024);
    s.hrtick_update(C0);
    assert_eq!(s.hrtick_expires(C0), Some(3_000_000));
    s.fair.ses[0].deadline += 5_000_000;
    s.hrtick_update(C0);
    assert_eq!(s.hrtick_expires(C0), Some(3_000_000), "an armed timer is left alone");
}
