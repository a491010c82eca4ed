//! Tests of seed ideas 7 (`ni_half_idle_retry`) and 3 (`avg_idle_on_enqueue`)
//! on hand-built states. Each test says which rule it checks and why the
//! expected answer follows from it.
//!
//! Machine: 2 LLCs x 2 cores x 2 SMT threads. A CPU's chain is SMT (its
//! core, `SD_SHARE_LLC`), MC (its LLC, `SD_SHARE_LLC`) and PKG (all 8 CPUs,
//! not LLC). A pass costs 2000 ns + 100 ns per CPU of the span.

use crate::cpumask::CpuMask;
use crate::engine::build::SimConfig;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::fair::eevdf::EnqueueFlags;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, SMT_2LLC};
use crate::topology::domains::SD_SHARE_LLC;
use crate::trace::Event;
use crate::tunables::update_avg;
use crate::workload::Action;

const SMT: usize = 0;
const MC: usize = 1;
const PKG: usize = 2;

fn sim(ntasks: usize, features: Features) -> Sim {
    let w = script_workload(script_tasks(ntasks, &[Action::Compute(10_000_000)], 1));
    let mut s = sim_with(SMT_2LLC, &w, SimConfig { trace: true, ..sim_config(features) });
    s.now = 10 * NSEC_PER_MSEC;
    s
}

fn features(retry: bool, on_enqueue: bool) -> Features {
    let mut f = Features::mainline();
    f.set(Feat::ni_half_idle_retry, retry);
    f.set(Feat::avg_idle_on_enqueue, on_enqueue);
    f
}

fn enqueue(s: &mut Sim, p: u32, cpu: CpuId) {
    let t = TaskId(p);
    s.tasks[t.idx()].cpu = cpu;
    s.tasks[t.idx()].state = TaskState::Runnable;
    s.tasks[t.idx()].runnable_since = s.now;
    s.enqueue_task(cpu, t, EnqueueFlags::default());
}

/// Tasks 0 (running) and 1 (queued) on `cpu`: one task to pull.
fn two_on(s: &mut Sim, cpu: CpuId) {
    enqueue(s, 0, cpu);
    s.schedule(cpu).unwrap();
    enqueue(s, 1, cpu);
    assert!(s.rd_overloaded);
}

/// CPU 0's neighbours: an SMT sibling, a CPU of another core of its LLC,
/// and a CPU of the other LLC.
fn neighbours(s: &Sim) -> (CpuId, CpuId, CpuId) {
    let c = CpuId(0);
    let sib = s.machine.smt_mask(c).iter().find(|&x| x != c).unwrap();
    let llc = s.domains.sd(s.domains.chain(c)[MC]).span;
    let other = llc.iter().find(|x| !s.machine.smt_mask(c).test(*x)).unwrap();
    let far = (0..8).map(CpuId).find(|x| !llc.test(*x)).unwrap();
    (sib, other, far)
}

/// Pin the NI_RANDOM ratios of CPU 0's levels (1024 = no die), zero the
/// max costs and give it `avg_idle`.
fn set_cpu0(s: &mut Sim, ratios: [u32; 3], avg_idle: Ns) {
    let rq = &mut s.rqs[0];
    for (l, r) in ratios.into_iter().enumerate() {
        rq.sd[l].newidle_ratio = r;
        rq.sd[l].max_newidle_lb_cost = 0;
    }
    rq.avg_idle = avg_idle;
}

fn calls(s: &Sim, level: usize) -> u32 {
    s.rqs[0].sd[level].newidle_call
}

#[test]
fn chain_is_smt_mc_pkg() {
    let s = sim(0, features(false, false));
    let chain = s.domains.chain(CpuId(0));
    assert_eq!(chain.len(), 3);
    assert!(s.domains.sd(chain[SMT]).has(SD_SHARE_LLC));
    assert!(s.domains.sd(chain[MC]).has(SD_SHARE_LLC));
    assert!(!s.domains.sd(chain[PKG]).has(SD_SHARE_LLC));
}

#[test]
fn retry_balances_the_dice_skipped_llc_domain_and_pulls() {
    // Work on another core of CPU 0's LLC: only the MC pass can pull it.
    // SMT and PKG always run (ratio 1024), find nothing (PKG's imbalance is
    // inside the local group); MC's ratio 0 makes the die skip it unless it
    // shows 0 or 1. The same seed gives the same die with and without idea 7.
    let mut out = vec![];
    for retry in [false, true] {
        let mut s = sim(2, features(retry, false));
        let (_, other, _) = neighbours(&s);
        two_on(&mut s, other);
        set_cpu0(&mut s, [1024, 0, 1024], 1_000_000);
        let (smt0, mc0) = (calls(&s, SMT), calls(&s, MC));
        let pulled = s.sched_balance_newidle(CpuId(0));
        // SMT ran once in the first pass (an already balanced domain: not
        // retried); MC counted the die's skip, and its retry if any.
        assert_eq!(calls(&s, SMT), smt0 + 1);
        assert_eq!(calls(&s, MC), mc0 + 1 + retry as u32, "the die skipped MC (seed)");
        out.push((pulled, s.tasks[1].cpu));
        if retry {
            // Weight 1: the success counted once, not 1024/(1 + 0) times.
            assert_eq!(s.rqs[0].sd[MC].newidle_success, 256 + 1);
            // The cost of SMT + PKG + MC passes was charged and recorded.
            assert_eq!(s.rqs[0].sd[MC].max_newidle_lb_cost, 2_000 + 100 * 4);
        }
    }
    assert_eq!(out[0], (0, neighbours(&sim(0, features(false, false))).1), "no retry: nothing pulled");
    assert_eq!(out[1], (1, CpuId(0)), "the retry pulled over MC");
}

#[test]
fn no_retry_when_less_than_half_the_idle_time_is_left() {
    // First pass: SMT (2200 ns) + PKG (2800 ns) = 5000 ns. With avg_idle
    // 9000 the budget left is 4000 < 4500: no retry, MC only counted the skip.
    let mut s = sim(2, features(true, false));
    let (_, other, _) = neighbours(&s);
    two_on(&mut s, other);
    set_cpu0(&mut s, [1024, 0, 1024], 9_000);
    let mc0 = calls(&s, MC);
    assert_eq!(s.sched_balance_newidle(CpuId(0)), 0);
    assert_eq!(calls(&s, MC), mc0 + 1);
    assert_eq!(s.tasks[1].cpu, other);
}

#[test]
fn retry_budget_edges() {
    // Direct calls after a 5000 ns first pass, MC in the mask.
    let mut s = sim(2, features(true, false));
    let (_, other, _) = neighbours(&s);
    two_on(&mut s, other);
    set_cpu0(&mut s, [1024, 0, 1024], 10_000);
    let mask = 1 << MC;
    let mut cont = true;
    // 4999 left of 10000: under half, no retry.
    let mut cost = 5_001;
    assert_eq!(s.newidle_half_idle_retry(CpuId(0), 10_000, mask, &mut cont, &mut cost), (0, 0));
    assert_eq!(cost, 5_001);
    // 6000 left: MC's max cost 2500 does not fit (4000 + 2500 > 6000).
    let mut cost = 4_000;
    s.rqs[0].sd[MC].max_newidle_lb_cost = 2_500;
    assert_eq!(s.newidle_half_idle_retry(CpuId(0), 10_000, mask, &mut cont, &mut cost).0, 0);
    assert_eq!(cost, 4_000, "nothing ran");
    // 2000 fits exactly (4000 + 2000 = 6000): MC runs and pulls.
    s.rqs[0].sd[MC].max_newidle_lb_cost = 2_000;
    assert_eq!(s.newidle_half_idle_retry(CpuId(0), 10_000, mask, &mut cont, &mut cost), (1, MC as u8));
    assert_eq!(cost, 4_000 + 2_400);
    assert_eq!(s.tasks[1].cpu, CpuId(0));
}

#[test]
fn domains_outside_the_mask_or_above_the_llc_are_not_retried() {
    // Work in the other LLC: only PKG can pull it. PKG skipped by the die
    // (ratio 0), SMT and MC ran: the retry must not touch PKG.
    let mut s = sim(2, features(true, false));
    let (_, _, far) = neighbours(&s);
    two_on(&mut s, far);
    set_cpu0(&mut s, [1024, 1024, 0], 1_000_000);
    let (smt0, mc0, pkg0) = (calls(&s, SMT), calls(&s, MC), calls(&s, PKG));
    assert_eq!(s.sched_balance_newidle(CpuId(0)), 0);
    assert_eq!(calls(&s, PKG), pkg0 + 1, "the die skipped PKG (seed), and it was not retried");
    assert_eq!((calls(&s, SMT), calls(&s, MC)), (smt0 + 1, mc0 + 1), "balanced domains not retried");
    assert_eq!(s.tasks[1].cpu, far);
    // Direct: PKG in the mask is still not retried; an empty mask does nothing.
    let (mut cont, mut cost) = (true, 0);
    assert_eq!(s.newidle_half_idle_retry(CpuId(0), 1_000_000, 1 << PKG, &mut cont, &mut cost), (0, 0));
    assert_eq!(s.newidle_half_idle_retry(CpuId(0), 1_000_000, 0, &mut cont, &mut cost), (0, 0));
    assert_eq!(cost, 0);
    // Control: PKG's own pass would have pulled.
    s.rqs[0].sd[PKG].newidle_ratio = 1024;
    assert_eq!(s.sched_balance_newidle(CpuId(0)), 1);
    assert_eq!(s.tasks[1].cpu, CpuId(0));
}

#[test]
fn retry_is_off_without_the_feature_and_emits_avg_idle() {
    let mut s = sim(2, features(false, false));
    let (_, other, _) = neighbours(&s);
    two_on(&mut s, other);
    set_cpu0(&mut s, [1024, 0, 1024], 777_000);
    s.sched_balance_newidle(CpuId(0));
    let ev = s.trace.as_ref().unwrap().iter().rev().find(|e| matches!(e.ev, Event::AvgIdle { .. })).unwrap();
    assert_eq!(ev.ev, Event::AvgIdle { cpu: CpuId(0), avg_idle_ns: 777_000, max_ns: 2 * 500_000 });
}

/// CPU 3 goes newly idle at 10 ms with nothing to pull; 300 us later task 0,
/// allowed only there, is forked onto it.
fn fork_onto_idle(on_enqueue: bool) -> Sim {
    let mut s = sim(1, features(false, on_enqueue));
    let c = CpuId(3);
    assert_eq!(s.sched_balance_newidle(c), 0);
    assert_eq!(s.rqs[3].idle_stamp, 10 * NSEC_PER_MSEC, "stamp kept (restored) when nothing was pulled");
    s.now += 300_000;
    s.tasks[0].allowed = CpuMask::from_cpus([c]);
    s.wake_up_new_task(TaskId(0), CpuId(0)).unwrap();
    assert_eq!(s.tasks[0].cpu, c);
    s
}

#[test]
fn fork_onto_an_idle_cpu_refreshes_avg_idle_only_with_the_feature() {
    let init = 2 * 500_000;
    let off = fork_onto_idle(false);
    assert_eq!(off.rqs[3].avg_idle, init, "mainline: only wakeups sample avg_idle");
    assert_eq!(off.rqs[3].idle_stamp, 10 * NSEC_PER_MSEC, "the stale stamp stays");
    let on = fork_onto_idle(true);
    // update_avg(1 ms, 300 us) = 1 ms - 700 us / 8, under the 1 ms cap.
    assert_eq!(on.rqs[3].avg_idle, update_avg(init, 300_000));
    assert_eq!(on.rqs[3].avg_idle, 912_500);
    assert_eq!(on.rqs[3].idle_stamp, 0);
}

#[test]
fn avg_idle_cap_applies_on_enqueue() {
    let mut s = sim(1, features(false, true));
    s.rqs[3].max_idle_balance_cost = 100_000;
    assert_eq!(s.sched_balance_newidle(CpuId(3)), 0);
    s.now += 5 * NSEC_PER_MSEC;
    s.tasks[0].allowed = CpuMask::from_cpus([CpuId(3)]);
    s.wake_up_new_task(TaskId(0), CpuId(0)).unwrap();
    assert_eq!(s.rqs[3].avg_idle, 200_000, "capped at 2 x max_idle_balance_cost");
}

#[test]
fn a_newidle_pull_is_not_an_idle_period_with_the_feature() {
    // NI_RANDOM off: the MC pass runs and pulls. With the feature the stamp
    // is held back, so the pulled task's enqueue samples nothing; without it
    // enqueue does not sample at all. Either way avg_idle is unchanged and
    // the stamp is cleared.
    for on in [false, true] {
        let mut f = features(false, on);
        f.set(Feat::NI_RANDOM, false);
        let mut s = sim(2, f);
        let (_, other, _) = neighbours(&s);
        two_on(&mut s, other);
        set_cpu0(&mut s, [1024, 1024, 1024], 800_000);
        assert_eq!(s.sched_balance_newidle(CpuId(0)), 1);
        assert_eq!(s.rqs[0].avg_idle, 800_000, "on={on}");
        assert_eq!(s.rqs[0].idle_stamp, 0);
    }
}

/// v7.0 (`avg_idle_put_prev`): the idle period ends when the idle task is
/// switched out, so a fork onto the idle CPU samples it once the CPU
/// schedules; before (v6.12) only a wakeup did and the stamp stays.
#[test]
fn avg_idle_is_sampled_when_the_idle_task_is_switched_out() {
    for put_prev in [false, true] {
        let mut s = fork_onto_idle(false);
        s.features.set(Feat::avg_idle_put_prev, put_prev);
        s.schedule(CpuId(3)).unwrap();
        assert_eq!(s.rqs[3].curr, Some(TaskId(0)));
        if put_prev {
            assert_eq!(s.rqs[3].avg_idle, update_avg(2 * 500_000, 300_000));
            assert_eq!(s.rqs[3].idle_stamp, 0);
        } else {
            assert_eq!(s.rqs[3].avg_idle, 2 * 500_000);
            assert_eq!(s.rqs[3].idle_stamp, 10 * NSEC_PER_MSEC);
        }
    }
}

/// v7.0 and v7.1 (no `avg_idle_stamp_guard`): a CPU that went idle without
/// a stamp (newidle balance returned early on a pending wakeup) samples the
/// time since boot when it leaves idle, and avg_idle saturates at its cap;
/// the Sept 2026 fix skips the sample.
#[test]
fn without_the_guard_a_missing_stamp_saturates_avg_idle() {
    for guard in [false, true] {
        let mut f = features(false, false);
        f.set(Feat::avg_idle_stamp_guard, guard);
        let mut s = sim(1, f);
        let c = CpuId(3);
        s.rqs[3].ttwu_pending = 1;
        assert_eq!(s.sched_balance_newidle(c), 0);
        assert_eq!(s.rqs[3].idle_stamp, 0, "the early return takes no stamp");
        s.rqs[3].ttwu_pending = 0;
        s.rqs[3].avg_idle = 200_000;
        s.tasks[0].allowed = CpuMask::from_cpus([c]);
        s.wake_up_new_task(TaskId(0), CpuId(0)).unwrap();
        s.schedule(c).unwrap();
        let want = if guard { 200_000 } else { 2 * s.rqs[3].max_idle_balance_cost };
        assert_eq!(s.rqs[3].avg_idle, want, "guard={guard}");
    }
}

#[test]
fn going_idle_after_saturation_counts_the_pelt_clock_lag_as_lost_idle_time() {
    // A hog alone on a little CPU (capacity 462) for 1.1 s (500 ms of
    // full-capacity work): its PELT clock runs at 462/1024 of the task clock
    // and its util_sum saturates (about nine half-lives of PELT time), so when
    // it sleeps pick_next_task_fair's idle path (update_idle_rq_clock_pelt)
    // records the lag as lost idle time instead of giving it back as idle.
    let mut tasks = script_tasks(1, &[Action::Compute(500 * NSEC_PER_MSEC), Action::Sleep(50 * NSEC_PER_MSEC)], 2);
    tasks[0].allowed = Some(CpuMask::parse_list("0").unwrap());
    tasks[0].start = crate::workload::StartKind::Wake { prev_cpu: 0 };
    let mut s = sim_with(crate::testkit::HIKEY, &script_workload(tasks), sim_config(Features::mainline()));
    s.run(1150 * NSEC_PER_MSEC).unwrap();
    let lost = s.rqs[0].clock_pelt.lost_idle_time;
    assert!(lost > 500 * NSEC_PER_MSEC, "lost idle time {lost} ns");
    // A full-capacity CPU at its top frequency has no lag to lose.
    assert_eq!(s.rqs[4].clock_pelt.lost_idle_time, 0);
}

/// CPU 0's newly-idle pass with work on another core of its LLC: SMT finds
/// nothing (2,200 ns), MC pulls (2,400 ns). Returns when the pass's work
/// starts on CPU 0 (its `ready_at` less the two).
fn timed_pass(s: &mut Sim) -> Ns {
    s.timed = vec![Default::default(); 8];
    let (_, other, _) = neighbours(s);
    two_on(s, other);
    set_cpu0(s, [1024, 1024, 1024], 1_000_000);
    assert_eq!(s.sched_balance_newidle(CpuId(0)), 1);
    assert_eq!(s.rqs[0].sd[MC].max_newidle_lb_cost, 2_400);
    s.rqs[0].ready_at - 4_600
}

#[test]
fn time_taken_from_the_cpu_during_a_domains_pass_counts_in_that_domains_cost() {
    // The kernel reads sched_clock around each domain's pass
    // (sched_balance_newidle, update_newidle_cost): 50 us of interrupt
    // handling while the MC pass ran make MC's cost 2,400 + 50,000 ns, and
    // the whole pass's (max_idle_balance_cost) 4,600 + 50,000; SMT's stays.
    let mut s = sim(2, features(false, false));
    let start = timed_pass(&mut s);
    s.now = start + 3_000; // 800 ns into MC's pass
    s.timed_steal(CpuId(0), 50_000);
    s.now = start + 100_000;
    s.fold_timed_newidle(CpuId(0));
    assert_eq!(s.rqs[0].sd[SMT].max_newidle_lb_cost, 2_200);
    assert_eq!(s.rqs[0].sd[MC].max_newidle_lb_cost, 52_400);
    assert!(s.rqs[0].max_idle_balance_cost >= 54_600);
    // Taken once: folding again changes nothing.
    s.rqs[0].sd[MC].max_newidle_lb_cost = 2_400;
    s.fold_timed_newidle(CpuId(0));
    assert_eq!(s.rqs[0].sd[MC].max_newidle_lb_cost, 2_400);
}

#[test]
fn a_host_stall_inside_a_pass_counts_and_one_after_it_does_not() {
    // A vCPU held by its host from 1 us into the SMT pass for 30 ms: the
    // SMT domain's cost is 30 ms more. A stall after the 4,600 ns of work
    // (their end is the start plus the work plus the first stall) is the
    // CPU's next work's, not the pass's.
    let mut s = sim(2, features(false, false));
    let start = timed_pass(&mut s);
    s.now = start + 1_000;
    s.timed_stall_begin(CpuId(0));
    s.now += 30_000_000;
    s.timed_stall_end(CpuId(0));
    s.now = start + 30_000_000 + 4_600;
    s.timed_stall_begin(CpuId(0));
    s.now += 1_000_000;
    s.timed_stall_end(CpuId(0));
    s.fold_timed_newidle(CpuId(0));
    assert_eq!(s.rqs[0].sd[SMT].max_newidle_lb_cost, 30_002_200);
    assert_eq!(s.rqs[0].sd[MC].max_newidle_lb_cost, 2_400);
    // The decay clock starts where the pass ended, as the kernel's at t1.
    assert_eq!(s.rqs[0].sd[SMT].last_decay_max_lb_cost, start + 30_004_600);
}

#[test]
fn a_domain_cost_inflated_by_a_stall_stops_the_next_pass_at_that_level() {
    // What it changes: with avg_idle 10 us, the next newly-idle pass (on
    // the same state) stops before MC (avg_idle < SMT's cost + MC's max)
    // when a stall inflated MC's cost, and pulls over MC when nothing was
    // taken from the CPU.
    let mut pulled = vec![];
    for stall in [false, true] {
        let mut s = sim(2, features(false, false));
        let start = timed_pass(&mut s);
        if stall {
            s.now = start + 3_000;
            s.timed_steal(CpuId(0), 50_000);
        }
        s.now = start + 1_000_000;
        s.fold_timed_newidle(CpuId(0));
        let (smt, mc) = (s.rqs[0].sd[SMT].max_newidle_lb_cost, s.rqs[0].sd[MC].max_newidle_lb_cost);
        let mut s = sim(2, features(false, false));
        let (_, other, _) = neighbours(&s);
        two_on(&mut s, other);
        set_cpu0(&mut s, [1024, 1024, 1024], 10_000);
        s.rqs[0].sd[SMT].max_newidle_lb_cost = smt;
        s.rqs[0].sd[MC].max_newidle_lb_cost = mc;
        pulled.push(s.sched_balance_newidle(CpuId(0)));
    }
    assert_eq!(pulled, vec![1, 0]);
}
