//! Tests of the EEVDF runqueue (`eevdf.rs`), kept in their own file for size.

use super::*;
use proptest::prelude::*;

const TICK: Ns = 100_000;

fn rq(nr_cpus: usize) -> CfsRq {
    CfsRq::new(EevdfParams::new(nr_cpus, 250))
}

fn ent(nice: i32, cfs: &CfsRq) -> SchedEntity {
    SchedEntity::new(nice, cfs.params.base_slice_ns)
}

/// Enqueue every entity (as new tasks), then run the queue for
/// `total` ns: pick, run until update_curr asks to reschedule, put back.
fn run(cfs: &mut CfsRq, ses: &mut Entities, f: &Features, total: Ns) {
    let mut now = 0;
    for i in 0..ses.len() {
        cfs.enqueue_entity(ses, TaskId(i as u32), now, EnqueueFlags::INITIAL, f);
    }
    while now < total {
        let Pick::Task(t) = cfs.pick_next_entity(ses, f) else { panic!("nothing to run") };
        cfs.set_next_entity(ses, t, now, f);
        loop {
            now += TICK;
            if cfs.update_curr(ses, now).resched || now >= total {
                break;
            }
        }
        cfs.put_prev_entity(ses, now);
    }
}

#[test]
fn base_slice_scaling() {
    assert_eq!(base_slice_ns(1), 700_000);
    assert_eq!(base_slice_ns(2), 1_400_000);
    assert_eq!(base_slice_ns(4), 2_100_000);
    assert_eq!(base_slice_ns(8), 2_800_000);
    assert_eq!(base_slice_ns(256), 2_800_000);
}

#[test]
fn calc_delta_fair_scales_by_weight() {
    let cfs = rq(1);
    assert_eq!(calc_delta_fair(1_000_000, &ent(0, &cfs)), 1_000_000);
    let d5 = calc_delta_fair(1_000_000, &ent(5, &cfs));
    assert!((d5 as i64 - 1_000_000 * 1024 / 335).abs() <= 1, "{d5}");
    let dm = calc_delta_fair(1_000_000, &ent(-20, &cfs));
    assert!((dm as i64 - 1_000_000 * 1024 / 88761).abs() <= 1, "{dm}");
}

#[test]
fn two_equal_tasks_share_half_half() {
    let f = Features::mainline();
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs)]);
    run(&mut cfs, &mut ses, &f, 1_000_000_000);
    let (a, b) = (ses[0].sum_exec_runtime, ses[1].sum_exec_runtime);
    assert_eq!(a + b, 1_000_000_000);
    assert!(a.abs_diff(b) * 100 <= 2 * (a + b) / 2, "{a} {b}");
}

#[test]
fn nice_0_vs_nice_5_share_by_weight() {
    let f = Features::mainline();
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(5, &cfs)]);
    run(&mut cfs, &mut ses, &f, 2_000_000_000);
    let ratio_x1000 = ses[0].sum_exec_runtime * 1000 / ses[1].sum_exec_runtime;
    let want = 1024 * 1000 / 335;
    assert!(ratio_x1000.abs_diff(want) * 100 <= 2 * want, "{ratio_x1000} vs {want}");
}

#[test]
fn initial_placement_gets_half_a_slice() {
    let f = Features::mainline();
    let mut cfs = rq(4);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(3, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::INITIAL, &f);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::INITIAL, &f);
    for se in &ses {
        assert_eq!(se.deadline.wrapping_sub(se.vruntime), calc_delta_fair(se.slice, se) / 2);
    }
    let mut no = f;
    no.set(crate::features::Feat::PLACE_DEADLINE_INITIAL, false);
    cfs.place_entity(&mut ses, TaskId(1), EnqueueFlags::INITIAL, &no);
    assert_eq!(ses[1].deadline.wrapping_sub(ses[1].vruntime), calc_delta_fair(ses[1].slice, &ses[1]));
}

/// A curr, B queued far behind (negative lag) so A stays eligible, and
/// W waking with positive lag, i.e. an earlier deadline than A's.
fn wakeup_setup(f: &Features, run_ns: Ns) -> (CfsRq, Entities) {
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), f);
    ses[1].vlag = -6_000_000;
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), f);
    assert_eq!(cfs.pick_next_entity(&ses, f), Pick::Task(TaskId(0)));
    cfs.set_next_entity(&mut ses, TaskId(0), 0, f);
    cfs.update_curr(&mut ses, run_ns);
    ses[2].vlag = 5_500_000;
    cfs.enqueue_entity(&mut ses, TaskId(2), run_ns, EnqueueFlags::WAKEUP, f);
    (cfs, ses)
}

#[test]
fn positive_lag_wakeup_preempts_curr_that_used_its_slice() {
    let f = Features::mainline();
    let (mut cfs, mut ses) = wakeup_setup(&f, 3_000_000); // > 2.8 ms slice
    assert!(!protect_slice(&ses[0]));
    assert!(cfs.entity_eligible(&ses, TaskId(2)));
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 3_000_000, (false, Default::default()), &f));
}

#[test]
fn run_to_parity_protects_curr_until_its_slice_ends() {
    let f = Features::mainline();
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    // Preconditions: curr eligible, woken has the earlier deadline.
    assert!(cfs.entity_eligible(&ses, TaskId(0)));
    assert!(entity_before(&ses[2], &ses[0]));
    assert!(protect_slice(&ses[0]));
    assert!(!cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, Default::default()), &f));
    // Without RUN_TO_PARITY only the 0.7 ms minimum quantum is protected.
    let mut no = f;
    no.set(crate::features::Feat::RUN_TO_PARITY, false);
    let (mut cfs, mut ses) = wakeup_setup(&no, 1_000_000);
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, Default::default()), &no));
    // PREEMPT_SHORT: a shorter-slice wakee breaks the protection.
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    ses[2].slice = 300_000;
    ses[2].custom_slice = true;
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, Default::default()), &f));
}

#[test]
fn a_forked_wakee_preempts_only_before_v6_19_or_with_a_shorter_slice() {
    // Curr past its protection (RUN_TO_PARITY off: only the minimum quantum)
    // and a wakee with the earlier deadline: any wakee preempts under v6.12;
    // from v6.19 a forked one (WF_FORK) does not, unless PREEMPT_SHORT lets
    // it through first.
    let mut f = Features::mainline();
    f.set(crate::features::Feat::RUN_TO_PARITY, false);
    let fork = (true, Default::default());
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, Default::default()), &f));
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    assert!(!cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, fork, &f));
    let mut old = f;
    old.set(crate::features::Feat::wakeup_preempt_no_fork, false);
    let (mut cfs, mut ses) = wakeup_setup(&old, 1_000_000);
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, fork, &old));
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    ses[2].slice = 300_000;
    ses[2].custom_slice = true;
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, fork, &f));
    // v6.12 and older profiles keep the old rule.
    assert!(!crate::policy::parse_policy("v6.12").unwrap().features.on(crate::features::Feat::wakeup_preempt_no_fork));
}

#[test]
fn sched_idle_curr_gives_way_and_batch_or_idle_wakees_do_not_preempt() {
    use crate::fair::wakeup_policy::WakeupPolicies;
    let f = Features::mainline();
    let pol = |curr_idle, woken_idle, woken_batch| WakeupPolicies { curr_idle, woken_idle, woken_batch };
    // Slice protection keeps curr running against a normal wakee...
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    assert!(!cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, pol(false, false, false)), &f));
    // ...but a SCHED_IDLE curr is preempted by any non-idle wakee.
    let (mut cfs, mut ses) = wakeup_setup(&f, 1_000_000);
    assert!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 1_000_000, (false, pol(true, false, false)), &f));
    // Where a normal wakee preempts (curr's slice used), a batch or an idle
    // wakee does not; between two SCHED_IDLE tasks EEVDF decides as usual.
    for (p, want) in
        [(pol(false, false, true), false), (pol(false, true, false), false), (pol(true, true, false), true)]
    {
        let (mut cfs, mut ses) = wakeup_setup(&f, 3_000_000);
        assert_eq!(cfs.wakeup_preempt_fair(&mut ses, TaskId(2), 3_000_000, (false, p), &f), want, "{p:?}");
    }
}

#[test]
fn delay_dequeue_keeps_negative_lag_sleeper_until_picked() {
    let f = Features::mainline();
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), &f);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), &f);
    cfs.set_next_entity(&mut ses, TaskId(0), 0, &f);
    // A runs ahead of V, then sleeps: not eligible, so it stays queued.
    cfs.update_curr(&mut ses, 2_000_000);
    assert!(!cfs.entity_eligible(&ses, TaskId(0)));
    assert!(!cfs.dequeue_entity(&mut ses, TaskId(0), 2_000_000, DequeueFlags::SLEEP, &f));
    assert!(ses[0].sched_delayed && ses[0].on_rq);
    assert_eq!((cfs.nr_queued, cfs.h_nr_runnable), (2, 1));
    cfs.put_prev_entity(&mut ses, 2_000_000);
    // B runs until A becomes the pick; then the engine finishes A's dequeue.
    let mut now = 2_000_000;
    let delayed = loop {
        match cfs.pick_next_entity(&ses, &f) {
            Pick::Delayed(t) => break t,
            Pick::Task(t) => {
                assert_eq!(t, TaskId(1));
                cfs.set_next_entity(&mut ses, t, now, &f);
                now += TICK;
                cfs.update_curr(&mut ses, now);
                cfs.put_prev_entity(&mut ses, now);
            }
            Pick::Idle => panic!("idle"),
        }
        assert!(now < 100_000_000);
    };
    assert_eq!(delayed, TaskId(0));
    let flags = DequeueFlags::SLEEP | DequeueFlags::DELAYED;
    assert!(cfs.dequeue_entity(&mut ses, TaskId(0), now, flags, &f));
    assert!(!ses[0].on_rq && !ses[0].sched_delayed && ses[0].vlag <= 0);
    assert_eq!((cfs.nr_queued, cfs.h_nr_runnable), (1, 1));
    // Without DELAY_DEQUEUE the sleeper leaves at once.
    let mut no = f;
    no.set(crate::features::Feat::DELAY_DEQUEUE, false);
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), &no);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), &no);
    cfs.set_next_entity(&mut ses, TaskId(0), 0, &no);
    assert!(cfs.dequeue_entity(&mut ses, TaskId(0), 2_000_000, DequeueFlags::SLEEP, &no));
}

#[test]
fn requeue_delayed_entity_makes_it_runnable_again() {
    let f = Features::mainline();
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), &f);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), &f);
    cfs.set_next_entity(&mut ses, TaskId(0), 0, &f);
    assert!(!cfs.dequeue_entity(&mut ses, TaskId(0), 2_000_000, DequeueFlags::SLEEP, &f));
    cfs.put_prev_entity(&mut ses, 2_000_000);
    cfs.requeue_delayed_entity(&mut ses, TaskId(0), &f);
    assert!(!ses[0].sched_delayed && ses[0].on_rq);
    assert_eq!((cfs.nr_queued, cfs.h_nr_runnable), (2, 2));
}

#[test]
fn migration_keeps_lag_and_relative_deadline() {
    let f = Features::mainline();
    let (mut src, mut dst) = (rq(8), rq(8));
    let mut ses = Entities::new(vec![ent(0, &src), ent(0, &src), ent(0, &src)]);
    src.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), &f);
    src.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), &f);
    src.set_next_entity(&mut ses, TaskId(0), 0, &f);
    src.update_curr(&mut ses, 1_000_000);
    src.put_prev_entity(&mut ses, 1_000_000);
    let rel = ses[1].deadline.wrapping_sub(ses[1].vruntime);
    assert!(src.dequeue_entity(&mut ses, TaskId(1), 1_000_000, DequeueFlags::default(), &f));
    let lag = ses[1].vlag;
    assert!(lag > 0 && ses[1].rel_deadline);
    dst.enqueue_entity(&mut ses, TaskId(2), 0, EnqueueFlags::default(), &f);
    dst.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::MIGRATED, &f);
    assert_eq!(ses[1].deadline.wrapping_sub(ses[1].vruntime), rel);
    let got = dst.avg_vruntime(&ses).wrapping_sub(ses[1].vruntime) as i64;
    assert!((got - lag).abs() <= 1, "lag {lag} -> {got}");
    assert_eq!(ses[1].exec_start, 0);
}

/// The weighted mean computed directly from the entities, relative to
/// the first one's vruntime (any base gives the same floor).
fn reference_v(cfs: &CfsRq, ses: &Entities) -> Option<u64> {
    let mut ids: Vec<TaskId> = cfs.queue.clone();
    ids.extend(cfs.curr.filter(|c| ses[c.idx()].on_rq));
    let base = ses[ids.first()?.idx()].vruntime;
    let w: i128 = ids.iter().map(|t| ses[t.idx()].weight as i128).sum();
    let s: i128 =
        ids.iter().map(|t| ses[t.idx()].weight as i128 * ses[t.idx()].vruntime.wrapping_sub(base) as i64 as i128).sum();
    Some(base.wrapping_add(s.div_euclid(w) as i64 as u64))
}

proptest! {
    #[test]
    fn avg_vruntime_is_the_weighted_mean(
        ops in proptest::collection::vec((0u8..4, 0usize..6, -20i32..20, -3_000_000i64..3_000_000), 1..60)
    ) {
        let mut f = Features::mainline();
        f.set(crate::features::Feat::DELAY_DEQUEUE, false);
        let mut cfs = rq(4);
        let mut ses = Entities::new((0..6).map(|_| ent(0, &cfs)).collect());
        let mut now = 0;
        for (op, i, nice, lag) in ops {
            let id = TaskId(i as u32);
            now += 250_000;
            match op {
                0 if !ses[i].on_rq => {
                    let w = nice_to_weight(nice);
                    ses[i].weight = w;
                    ses[i].inv_weight = inv_weight(w);
                    ses[i].vlag = lag;
                    cfs.enqueue_entity(&mut ses, id, now, EnqueueFlags::WAKEUP, &f);
                }
                1 if ses[i].on_rq => {
                    cfs.dequeue_entity(&mut ses, id, now, DequeueFlags::SLEEP, &f);
                    if cfs.curr == Some(id) {
                        cfs.put_prev_entity(&mut ses, now);
                    }
                }
                2 => {
                    cfs.put_prev_entity(&mut ses, now);
                    if let Pick::Task(t) = cfs.pick_next_entity(&ses, &f) {
                        cfs.set_next_entity(&mut ses, t, now, &f);
                    }
                }
                _ => {
                    cfs.update_curr(&mut ses, now);
                }
            }
            let queued: u64 = cfs.queue.iter().map(|t| ses[t.idx()].weight).sum();
            prop_assert_eq!(cfs.sum_weight, queued);
            if let Some(v) = reference_v(&cfs, &ses) {
                prop_assert_eq!(cfs.avg_vruntime(&ses), v);
            }
        }
    }
}

/// An entity that ran 20 ms ahead of a waiting one (8 CPUs: 2.8 ms slices,
/// 4 ms tick) and leaves without sleeping: its saved lag is clamped.
fn lag_after_running_ahead(f: &Features) -> i64 {
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), f);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), f);
    cfs.set_next_entity(&mut ses, TaskId(0), 0, f);
    cfs.update_curr(&mut ses, 20_000_000);
    cfs.dequeue_entity(&mut ses, TaskId(0), 20_000_000, DequeueFlags::MOVE, f);
    ses[0].vlag
}

#[test]
fn lag_clamp_is_the_longest_slice_plus_a_tick_since_2026() {
    // V - v is about -10 ms: clamped at -(slice + tick) now, at
    // -max(2 x slice, tick) before (nice 0: virtual time is real time).
    let p = rq(8).params;
    assert_eq!((p.base_slice_ns, p.tick_ns), (2_800_000, 4_000_000));
    let f = Features::mainline();
    assert_eq!(lag_after_running_ahead(&f), -6_800_000);
    let mut old = f;
    old.set(crate::features::Feat::lag_clamp_max_slice, false);
    assert_eq!(lag_after_running_ahead(&old), -5_600_000);
}

/// Entity 0 runs 2 ms ahead and sleeps (delayed: not eligible); entity 2
/// then joins far behind (a large positive lag), pulling V back, and entity
/// 0 is woken: returns its (vlag, vruntime) before and after the requeue.
fn delayed_then_woken(f: &Features) -> ((i64, u64), (i64, u64)) {
    let mut cfs = rq(8);
    let mut ses = Entities::new(vec![ent(0, &cfs), ent(0, &cfs), ent(0, &cfs)]);
    cfs.enqueue_entity(&mut ses, TaskId(0), 0, EnqueueFlags::default(), f);
    cfs.enqueue_entity(&mut ses, TaskId(1), 0, EnqueueFlags::default(), f);
    cfs.set_next_entity(&mut ses, TaskId(0), 0, f);
    cfs.update_curr(&mut ses, 2_000_000);
    assert!(!cfs.dequeue_entity(&mut ses, TaskId(0), 2_000_000, DequeueFlags::SLEEP, f), "delayed");
    let before = (ses[0].vlag, ses[0].vruntime);
    ses[2].vlag = 3_000_000;
    cfs.enqueue_entity(&mut ses, TaskId(2), 2_000_000, EnqueueFlags::WAKEUP, f);
    cfs.requeue_delayed_entity(&mut ses, TaskId(0), f);
    (before, (ses[0].vlag, ses[0].vruntime))
}

#[test]
fn a_delayed_entity_keeps_the_lag_it_was_delayed_with_since_2026() {
    let f = Features::mainline();
    let ((saved, v0), (kept, v1)) = delayed_then_woken(&f);
    // The lag at delay is saved (about -1 ms: V is the mean of 2 ms and 0),
    // the later V is lower, and the woken entity is placed back at the
    // lag it was delayed with instead of the worse one.
    assert!(saved < 0, "{saved}");
    assert_eq!(kept, saved);
    assert_ne!(v1, v0, "placed again");
    let mut old = f;
    old.set(crate::features::Feat::delayed_lag_floor, false);
    let ((_, v0), (_, v1)) = delayed_then_woken(&old);
    assert_eq!(v1, v0, "before 2026 a negative lag is left where it is");
}
