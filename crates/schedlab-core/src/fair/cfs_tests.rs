//! Decision tests of the CFS discipline (`cfs.rs`) on hand-built runqueues.
//! One CPU unless said otherwise: `sched_latency` 6 ms, `min_granularity`
//! 0.75 ms, `wakeup_granularity` 1 ms, `sched_nr_latency` 8.

use super::cfs::*;
use super::eevdf::*;
use super::entities::Entities;
use crate::features::{Feat, Features};
use crate::ids::{Ns, TaskId};

const MS: Ns = 1_000_000;

fn cfs_f() -> Features {
    let mut f = Features::mainline();
    f.set(Feat::EEVDF, false);
    f
}

fn with(mut f: Features, feat: Feat, on: bool) -> Features {
    f.set(feat, on);
    f
}

fn rq(nr_cpus: usize) -> CfsRq {
    CfsRq::new(EevdfParams::new(nr_cpus, 250))
}

fn ents(nices: &[i32]) -> Entities {
    Entities::new(nices.iter().map(|&n| SchedEntity::new(n, 700_000)).collect())
}

fn t(i: u32) -> TaskId {
    TaskId(i)
}

/// Put `id` straight into the queue with the given vruntime and deadline
/// (no placement), as the tree would hold it.
fn queue_raw(cfs: &mut CfsRq, ses: &mut Entities, id: TaskId, vruntime: u64, deadline: u64) {
    let se = &mut ses[id.idx()];
    (se.vruntime, se.deadline, se.on_rq) = (vruntime, deadline, true);
    cfs.load_weight += se.weight;
    cfs.nr_queued += 1;
    cfs.h_nr_runnable += 1;
    cfs.enqueue_tree(ses, id);
}

/// Task 0 runs alone from vruntime 0 for `run_ns`: afterwards
/// `min_vruntime` = curr's vruntime = `run_ns` (nice 0).
fn running_curr(nices: &[i32], run_ns: Ns, f: &Features) -> (CfsRq, Entities) {
    let mut cfs = rq(1);
    let mut ses = ents(nices);
    cfs.enqueue_entity(&mut ses, t(0), 0, EnqueueFlags::default(), f);
    assert_eq!(cfs.pick_next_entity(&ses, f), Pick::Task(t(0)));
    cfs.set_next_entity(&mut ses, t(0), 0, f);
    cfs.update_curr(&mut ses, run_ns);
    assert_eq!((ses[0].vruntime, cfs.min_vruntime), (run_ns, run_ns));
    (cfs, ses)
}

/// Wake `id` (which last ran on this CPU, at vruntime `vruntime`) at `now`.
fn wake(cfs: &mut CfsRq, ses: &mut Entities, id: TaskId, vruntime: u64, now: Ns, f: &Features) {
    ses[id.idx()].vruntime = vruntime;
    ses[id.idx()].exec_start = 1; // ran here before: not a migration
    cfs.enqueue_entity(ses, id, now, EnqueueFlags::WAKEUP, f);
}

#[test]
fn tunables_scale_with_the_cpu_count() {
    let p = CfsParams::new(1);
    assert_eq!((p.sched_latency_ns, p.sched_min_granularity_ns, p.sched_wakeup_granularity_ns), (6 * MS, 750_000, MS));
    assert_eq!(p.sched_nr_latency, 8);
    let p = CfsParams::new(8);
    assert_eq!(
        (p.sched_latency_ns, p.sched_min_granularity_ns, p.sched_wakeup_granularity_ns),
        (24 * MS, 3 * MS, 4 * MS)
    );
    assert_eq!(CfsParams::new(192), p);
    assert_eq!(p.sched_nr_latency, 8);
    let cfs = rq(1);
    assert_eq!((cfs.sched_period_ns(8), cfs.sched_period_ns(9)), (6 * MS, 9 * 750_000));
}

#[test]
fn cfs_picks_min_vruntime_where_eevdf_picks_the_earlier_deadline() {
    let mut cfs = rq(1);
    let mut ses = ents(&[0, 0, 0]);
    // V = 400 us / 3: tasks 0 and 1 are eligible; 1 has the earlier deadline.
    queue_raw(&mut cfs, &mut ses, t(0), 0, 5 * MS);
    queue_raw(&mut cfs, &mut ses, t(1), 100_000, 1_100_000);
    queue_raw(&mut cfs, &mut ses, t(2), 300_000, 900_000);
    assert!(cfs.entity_eligible(&ses, t(1)) && !cfs.entity_eligible(&ses, t(2)));
    assert_eq!(cfs.pick_next_entity(&ses, &Features::mainline()), Pick::Task(t(1)));
    assert_eq!(cfs.pick_next_entity(&ses, &cfs_f()), Pick::Task(t(0)));
}

#[test]
fn tick_preempts_after_the_ideal_slice() {
    let f = cfs_f();
    let mut cfs = rq(1);
    let mut ses = ents(&[0, 0]);
    cfs.enqueue_entity(&mut ses, t(0), 0, EnqueueFlags::default(), &f);
    cfs.enqueue_entity(&mut ses, t(1), 0, EnqueueFlags::default(), &f);
    cfs.set_next_entity(&mut ses, t(0), 0, &f);
    // Two equal tasks: half of sched_latency (3 ms, less the rounding of 1/2048).
    let ideal = cfs.sched_slice(&ses, t(0));
    assert!(ideal.abs_diff(3 * MS) <= 2, "{ideal}");
    assert!(!cfs.update_curr(&mut ses, MS).resched);
    assert!(!cfs.update_curr(&mut ses, ideal).resched);
    assert!(cfs.update_curr(&mut ses, ideal + 1).resched);
    // A nice-5 task's share of the period is its weight fraction.
    let mut ses5 = ents(&[0, 5]);
    let mut cfs5 = rq(1);
    cfs5.enqueue_entity(&mut ses5, t(0), 0, EnqueueFlags::default(), &f);
    cfs5.enqueue_entity(&mut ses5, t(1), 0, EnqueueFlags::default(), &f);
    let want = 6 * MS * 335 / (1024 + 335);
    assert!(cfs5.sched_slice(&ses5, t(1)).abs_diff(want) <= 2);
}

#[test]
fn tick_preempts_by_vruntime_distance_not_before_min_granularity() {
    let f = cfs_f();
    let (mut cfs, mut ses) = running_curr(&[0, 0], 20 * MS, &f);
    // A waiter 5 ms behind curr (beyond one ideal slice, no placement).
    queue_raw(&mut cfs, &mut ses, t(1), 15 * MS, 0);
    ses[0].prev_sum_exec_runtime = ses[0].sum_exec_runtime; // a fresh pick
    assert!(!cfs.update_curr(&mut ses, 20 * MS + 700_000).resched, "before min_granularity");
    assert!(cfs.update_curr(&mut ses, 20 * MS + 800_000).resched);
}

/// Curr ran 20 ms; a task whose vruntime is `behind` less wakes up.
fn wake_behind(behind: u64, nice: i32, f: &Features) -> (bool, CfsRq, Entities) {
    let (mut cfs, mut ses) = running_curr(&[0, nice], 20 * MS, f);
    wake(&mut cfs, &mut ses, t(1), 20 * MS - behind, 20 * MS, f);
    assert_eq!(ses[1].vruntime, 20 * MS - behind, "within the sleeper credit: not moved");
    let preempt = cfs.wakeup_preempt_fair(&mut ses, t(1), 20 * MS, (false, Default::default()), f);
    (preempt, cfs, ses)
}

#[test]
fn wakeup_preempts_only_beyond_the_weighted_granularity() {
    let f = cfs_f();
    assert!(!wake_behind(MS, 0, &f).0, "exactly wakeup_gran: no");
    let (preempt, cfs, _) = wake_behind(MS + 1, 0, &f);
    assert!(preempt);
    assert_eq!((cfs.next, cfs.last), (Some(t(1)), None), "next buddy; last needs nr_latency queued");
    // A nice-5 wakee must be 1 ms * 1024 / 335 = 3.06 ms behind.
    let cfs = rq(1);
    let gran5 = cfs.wakeup_gran(&ents(&[5])[0]);
    assert!(gran5.abs_diff(MS * 1024 / 335) <= 1, "{gran5}");
    assert!(!wake_behind(2 * MS, 5, &f).0);
    assert!(wake_behind(2 * MS, 0, &f).0);
    assert!(!wake_behind(2 * MS, 0, &with(f, Feat::WAKEUP_PREEMPTION, false)).0);
}

#[test]
fn gentle_fair_sleepers_halves_the_sleeper_credit() {
    let f = cfs_f();
    for (gentle, credit) in [(true, 3 * MS), (false, 6 * MS)] {
        let g = with(f, Feat::GENTLE_FAIR_SLEEPERS, gentle);
        let (mut cfs, mut ses) = running_curr(&[0, 0], 20 * MS, &g);
        wake(&mut cfs, &mut ses, t(1), 0, 20 * MS, &g); // slept long
        assert_eq!(ses[1].vruntime, 20 * MS - credit, "GENTLE_FAIR_SLEEPERS={gentle}");
        // A short sleeper keeps its own vruntime: placement never moves back.
        let (mut cfs, mut ses) = running_curr(&[0, 0], 20 * MS, &g);
        wake(&mut cfs, &mut ses, t(1), 19 * MS, 20 * MS, &g);
        assert_eq!(ses[1].vruntime, 19 * MS);
    }
}

#[test]
fn start_debit_places_a_new_task_one_vslice_later() {
    let f = cfs_f();
    for (debit, nice) in [(true, 0), (false, 0), (true, 5)] {
        let g = with(f, Feat::START_DEBIT, debit);
        let (mut cfs, mut ses) = running_curr(&[0, nice], 20 * MS, &g);
        let vslice = cfs.sched_vslice(&ses, t(1));
        cfs.enqueue_entity(&mut ses, t(1), 20 * MS, EnqueueFlags::INITIAL, &g);
        let want = if debit { 20 * MS + vslice } else { 20 * MS };
        assert_eq!(ses[1].vruntime, want, "START_DEBIT={debit} nice {nice}");
        if nice == 5 {
            // slice 6 ms * 335 / 1359, in nice-5 virtual time: 6 ms * 1024 / 1359.
            assert!(vslice.abs_diff(6 * MS * 1024 / 1359) <= 3, "{vslice}");
        }
    }
    // The new task does not preempt curr: it is ahead of it.
    let (mut cfs, mut ses) = running_curr(&[0, 0], 20 * MS, &f);
    cfs.enqueue_entity(&mut ses, t(1), 20 * MS, EnqueueFlags::INITIAL, &f);
    assert!(!cfs.wakeup_preempt_fair(&mut ses, t(1), 20 * MS, (true, Default::default()), &f));
}

#[test]
fn pick_prefers_next_then_last_buddy_within_wakeup_gran() {
    let f = cfs_f();
    let mut cfs = rq(1);
    let mut ses = ents(&[0, 0, 0]);
    queue_raw(&mut cfs, &mut ses, t(0), 10 * MS, 0); // leftmost
    queue_raw(&mut cfs, &mut ses, t(1), 10 * MS + 500_000, 0);
    queue_raw(&mut cfs, &mut ses, t(2), 10 * MS + 800_000, 0);
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(0)));
    cfs.last = Some(t(1));
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(1)), "last within 1 ms");
    cfs.next = Some(t(2));
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(2)), "next beats last");
    ses[2].vruntime = 11 * MS + 1; // too unfair to the leftmost
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(1)));
    ses[1].vruntime = 11 * MS + 1;
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(0)));
    // Running the buddy clears it.
    cfs.set_next_entity(&mut ses, t(2), 0, &f);
    assert_eq!((cfs.next, cfs.last), (None, Some(t(1))));
}

/// curr (task 0) ran 20 ms with `others` more tasks queued far ahead, then
/// task 1 wakes `behind` ns of vruntime behind curr.
fn crowded_wakeup(others: u32, behind: u64, fork: bool, f: &Features) -> (bool, CfsRq) {
    let nices = vec![0; 2 + others as usize];
    let (mut cfs, mut ses) = running_curr(&nices, 20 * MS, f);
    for i in 0..others {
        queue_raw(&mut cfs, &mut ses, t(2 + i), 40 * MS, 0);
    }
    wake(&mut cfs, &mut ses, t(1), 20 * MS - behind, 20 * MS, f);
    let preempt = cfs.wakeup_preempt_fair(&mut ses, t(1), 20 * MS, (fork, Default::default()), f);
    (preempt, cfs)
}

#[test]
fn buddies_are_set_by_wakeups_at_sched_nr_latency() {
    let f = cfs_f();
    // 8 queued (curr, woken, 6 others): scale. Preemption marks both buddies.
    let (preempt, cfs) = crowded_wakeup(6, 2 * MS, false, &f);
    assert!(preempt);
    assert_eq!((cfs.next, cfs.last), (Some(t(1)), Some(t(0))));
    let (_, cfs) = crowded_wakeup(6, 2 * MS, false, &with(f, Feat::LAST_BUDDY, false));
    assert_eq!((cfs.next, cfs.last), (Some(t(1)), None));
    let (_, cfs) = crowded_wakeup(5, 2 * MS, false, &f);
    assert_eq!((cfs.next, cfs.last), (Some(t(1)), None), "7 queued: no last buddy");
    // No preemption: only NEXT_BUDDY marks the woken task, and not a fork.
    let nb = with(f, Feat::NEXT_BUDDY, true);
    assert_eq!(crowded_wakeup(6, 0, false, &f), (false, crowded_wakeup(6, 0, false, &f).1));
    assert_eq!(crowded_wakeup(6, 0, false, &f).1.next, None);
    assert_eq!(crowded_wakeup(6, 0, false, &nb).1.next, Some(t(1)));
    assert_eq!(crowded_wakeup(6, 0, true, &nb).1.next, None);
    assert_eq!(crowded_wakeup(5, 0, false, &nb).1.next, None);
}

#[test]
fn migration_keeps_vruntime_relative_to_min_vruntime() {
    let f = cfs_f();
    let (mut src, mut ses) = running_curr(&[0, 0, 0], 20 * MS, &f);
    queue_raw(&mut src, &mut ses, t(1), 22 * MS, 0);
    assert!(src.dequeue_entity(&mut ses, t(1), 20 * MS, DequeueFlags::default(), &f));
    assert!(ses[1].vruntime_normalized && ses[1].vruntime == 2 * MS);
    // dst: task 2 ran 50 ms there.
    let mut dst = rq(1);
    dst.enqueue_entity(&mut ses, t(2), 0, EnqueueFlags::default(), &f);
    dst.set_next_entity(&mut ses, t(2), 0, &f);
    dst.update_curr(&mut ses, 50 * MS);
    dst.enqueue_entity(&mut ses, t(1), 50 * MS, EnqueueFlags::MIGRATED, &f);
    assert_eq!(ses[1].vruntime, 52 * MS);
    assert!(!ses[1].vruntime_normalized && ses[1].exec_start == 0);
}

#[test]
fn wakeup_migration_is_relative_to_the_old_min_vruntime() {
    let f = cfs_f();
    // Task 1 sleeps on src at vruntime 21 ms (src min 20 ms), then src's
    // curr runs on to 30 ms.
    let (mut src, mut ses) = running_curr(&[0, 0, 0], 20 * MS, &f);
    wake(&mut src, &mut ses, t(1), 21 * MS, 20 * MS, &f);
    assert!(src.dequeue_entity(&mut ses, t(1), 20 * MS, DequeueFlags::SLEEP, &f));
    assert_eq!((ses[1].vruntime, ses[1].sleep_min_vruntime), (21 * MS, 20 * MS));
    src.update_curr(&mut ses, 30 * MS);
    let mut dst = rq(1);
    dst.enqueue_entity(&mut ses, t(2), 0, EnqueueFlags::default(), &f);
    dst.set_next_entity(&mut ses, t(2), 0, &f);
    dst.update_curr(&mut ses, 50 * MS);
    let slept = ses[1];
    // migrate_task_rq_fair at wakeup: -9 ms relative, placed at 50 - 3 ms.
    src.migrate_task_rq_fair(&mut ses, t(1), &f);
    assert_eq!(ses[1].vruntime as i64, -9 * MS as i64);
    let mut d1 = dst.clone();
    d1.enqueue_entity(&mut ses, t(1), 50 * MS, EnqueueFlags::WAKEUP | EnqueueFlags::MIGRATED, &f);
    assert_eq!(ses[1].vruntime, 47 * MS);
    // Without the hook (set_task_cpu only cleared exec_start): +1 ms
    // relative to the min_vruntime it slept at.
    ses[1] = slept;
    ses[1].exec_start = 0;
    dst.enqueue_entity(&mut ses, t(1), 50 * MS, EnqueueFlags::WAKEUP, &f);
    assert_eq!(ses[1].vruntime, 51 * MS);
}

#[test]
fn cfs_shares_by_weight_and_keeps_min_vruntime_monotonic() {
    let f = cfs_f();
    let mut cfs = rq(8);
    let mut ses = ents(&[0, 5]);
    for i in 0..2 {
        cfs.enqueue_entity(&mut ses, t(i), 0, EnqueueFlags::INITIAL, &f);
    }
    let (mut now, total, tick) = (0, 2_000 * MS, 100_000);
    let mut last_min = cfs.min_vruntime;
    while now < total {
        let Pick::Task(p) = cfs.pick_next_entity(&ses, &f) else { panic!("idle") };
        cfs.set_next_entity(&mut ses, p, now, &f);
        loop {
            now += tick;
            if cfs.update_curr(&mut ses, now).resched || now >= total {
                break;
            }
        }
        cfs.put_prev_entity(&mut ses, now);
        assert!(cfs.min_vruntime.wrapping_sub(last_min) as i64 >= 0);
        last_min = cfs.min_vruntime;
    }
    let ratio_x1000 = ses[0].sum_exec_runtime * 1000 / ses[1].sum_exec_runtime;
    let want = 1024 * 1000 / 335;
    assert!(ratio_x1000.abs_diff(want) * 100 <= 3 * want, "{ratio_x1000} vs {want}");
}

#[test]
fn eevdf_only_features_do_not_change_cfs() {
    // DELAY_DEQUEUE: a sleeping task leaves at once under CFS.
    let f = cfs_f();
    for g in [f, with(f, Feat::DELAY_DEQUEUE, false), with(f, Feat::PLACE_LAG, false)] {
        let (mut cfs, mut ses) = running_curr(&[0, 0], 20 * MS, &g);
        queue_raw(&mut cfs, &mut ses, t(1), 10 * MS, 0);
        assert!(cfs.dequeue_entity(&mut ses, t(0), 20 * MS, DequeueFlags::SLEEP, &g));
        assert!(!ses[0].sched_delayed && !ses[0].on_rq);
        cfs.put_prev_entity(&mut ses, 20 * MS);
        assert_eq!(cfs.pick_next_entity(&ses, &g), Pick::Task(t(1)));
        wake(&mut cfs, &mut ses, t(0), 0, 20 * MS, &g);
        assert_eq!(ses[0].vruntime, cfs.min_vruntime - 3 * MS);
    }
}

#[test]
fn e2e_v5_9_runs_cfs_and_differs_from_eevdf_with_v5_9_placement() {
    use crate::api::run;
    use crate::testkit::{inline_source, metric, run_spec, SMT_2LLC};
    let w = "hackbench:groups=2,fds=4,loops=20";
    let cfs = run(&run_spec(inline_source(SMT_2LLC), w, "v5.9", 7, false)).unwrap();
    let eevdf = run(&run_spec(inline_source(SMT_2LLC), w, "v5.9+EEVDF", 7, false)).unwrap();
    let v414 = run(&run_spec(inline_source(SMT_2LLC), w, "v4.14", 7, false)).unwrap();
    let cs = |r: &crate::api::RunResult| metric(r, "context_switches");
    assert!(cs(&cfs) > 0.0 && cs(&eevdf) > 0.0 && cs(&v414) > 0.0);
    assert_ne!(cs(&cfs), cs(&eevdf), "CFS and EEVDF schedule the same run differently");
    // Every workload of the peer e2e suite runs under CFS with invariants checked.
    for w in ["schbench:message_threads=1,threads=4,runtime=1s,warmup=0s", "workqueue:threads=6,chunks=200,jitter=50"] {
        let r = run(&run_spec(inline_source(SMT_2LLC), w, "v5.9", 3, false)).unwrap_or_else(|e| panic!("{w}: {e}"));
        assert!(metric(&r, "completion_time_s") > 0.0, "{w}");
    }
}

proptest::proptest! {
    /// Random enqueues, sleeps, migrations out and back, schedules and
    /// ticks: `min_vruntime` never goes back, the load matches the queued
    /// entities, buddies are queued, and the pick is queued.
    #[test]
    fn cfs_runqueue_invariants(
        ops in proptest::collection::vec((0u8..5, 0usize..6, -20i32..20), 1..80)
    ) {
        let f = cfs_f();
        let mut cfs = rq(4);
        let mut ses: Entities = ents(&[0; 6]);
        let mut now = 0;
        for (op, i, nice) in ops {
            let id = t(i as u32);
            now += 250_000;
            let before = cfs.min_vruntime;
            match op {
                0 if !ses[i].on_rq && cfs.curr != Some(id) => {
                    let w = nice_to_weight(nice);
                    (ses[i].weight, ses[i].inv_weight) = (w, super::weight::inv_weight(w));
                    cfs.enqueue_entity(&mut ses, id, now, EnqueueFlags::WAKEUP, &f);
                }
                1 if ses[i].on_rq => {
                    cfs.dequeue_entity(&mut ses, id, now, DequeueFlags::SLEEP, &f);
                    if cfs.curr == Some(id) {
                        cfs.put_prev_entity(&mut ses, now);
                    }
                }
                2 if ses[i].on_rq && cfs.curr != Some(id) => {
                    cfs.dequeue_entity(&mut ses, id, now, DequeueFlags::default(), &f);
                    proptest::prop_assert!(ses[i].vruntime_normalized);
                    cfs.enqueue_entity(&mut ses, id, now, EnqueueFlags::MIGRATED, &f);
                }
                3 => {
                    cfs.put_prev_entity(&mut ses, now);
                    if let Pick::Task(p) = cfs.pick_next_entity(&ses, &f) {
                        proptest::prop_assert!(ses[p.idx()].on_rq);
                        cfs.set_next_entity(&mut ses, p, now, &f);
                    }
                }
                _ => {
                    let other_curr = cfs.curr.is_some_and(|c| c != id);
                    if cfs.wakeup_preempt_fair(&mut ses, id, now, (false, Default::default()), &f) && other_curr && ses[i].on_rq {
                        proptest::prop_assert!(cfs.next == Some(id));
                    }
                }
            }
            proptest::prop_assert!(cfs.min_vruntime.wrapping_sub(before) as i64 >= 0);
            let load: u64 = ses.iter().filter(|s| s.on_rq).map(|s| s.weight).sum();
            proptest::prop_assert_eq!(cfs.load_weight, load);
            proptest::prop_assert_eq!(cfs.nr_queued as usize, ses.iter().filter(|s| s.on_rq).count());
            for b in [cfs.next, cfs.last].into_iter().flatten() {
                proptest::prop_assert!(ses[b.idx()].on_rq);
            }
        }
    }
}

#[test]
fn last_buddy_survives_until_the_switch_picks() {
    let f = cfs_f();
    let (mut cfs, mut ses) = running_curr(&[0; 8], 20 * MS, &f);
    for i in 2..8 {
        queue_raw(&mut cfs, &mut ses, t(i), 20 * MS + 500_000, 0);
    }
    // curr ran 20 ms since its pick, far beyond its 0.75 ms slice of 8;
    // a wakeup 2 ms behind preempts it with 8 queued: both buddies set.
    wake(&mut cfs, &mut ses, t(1), 18 * MS, 20 * MS, &f);
    assert!(cfs.wakeup_preempt_fair(&mut ses, t(1), 20 * MS, (false, Default::default()), &f));
    assert_eq!((cfs.next, cfs.last), (Some(t(1)), Some(t(0))));
    // The switch's update_curr must not drop the last buddy.
    cfs.put_prev_entity(&mut ses, 20 * MS + 10_000);
    assert_eq!(cfs.last, Some(t(0)));
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(1)));
    cfs.set_next_entity(&mut ses, t(1), 20 * MS + 10_000, &f);
    // The woken task runs 1.5 ms; the preempted one is back within 1 ms of
    // it and gets the CPU back ahead of the leftmost.
    cfs.update_curr(&mut ses, 21 * MS + 510_000);
    cfs.put_prev_entity(&mut ses, 21 * MS + 510_000);
    assert_eq!(cfs.pick_first_entity(&ses), Some(t(1)));
    assert_eq!(cfs.pick_next_entity(&ses, &f), Pick::Task(t(0)));
}
