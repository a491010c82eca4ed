//! Decision tests for load balancing, newly-idle balancing, NOHZ idle
//! balancing and the fork slow path, on hand-built states. Each test says
//! which rule of fair.c (linux-next 2026) it checks and why the expected
//! answer follows from it.

use super::balance::CpuIdleType;
use super::lb_stats::{group_classify, GroupType, SgLbStats};
use crate::cpumask::CpuMask;
use crate::engine::build::SimConfig;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_MSEC, NSEC_PER_USEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::topology::domains::SD_BALANCE_FORK;
use crate::trace::{BalanceKind, Event};
use crate::workload::Action;

/// The idle states of the balance tests' machine, appended to
/// [`TWO_LLC`]'s core type (2 LLCs x 4 cores, no SMT: MC domains {0-3},
/// {4-7} of single-CPU groups under one PKG domain of two LLC groups).
const TWO_IDLE_STATES: &str = r#"idle_states = [
  { name = "C1", exit_latency_us = 2, target_residency_us = 2 },
  { name = "C6", exit_latency_us = 100, target_residency_us = 400 },
]
"#;

fn sim(ntasks: usize, features: Features) -> Sim {
    let toml = format!("{TWO_LLC}{TWO_IDLE_STATES}");
    let w = script_workload(script_tasks(ntasks, &[Action::Compute(10_000_000)], 1));
    sim_with(&toml, &w, SimConfig { trace: true, ..sim_config(features) })
}

/// Queue task `p` on `cpu` for real (not running).
fn enqueue(s: &mut Sim, p: u32, cpu: u32) {
    let (t, c) = (TaskId(p), CpuId(cpu));
    s.tasks[t.idx()].cpu = c;
    s.tasks[t.idx()].state = TaskState::Runnable;
    s.tasks[t.idx()].runnable_since = s.now;
    s.enqueue_task(c, t, crate::fair::eevdf::EnqueueFlags::default());
}

/// Queue `p` on the idle `cpu` and let it run.
fn run(s: &mut Sim, p: u32, cpu: u32) {
    enqueue(s, p, cpu);
    s.schedule(CpuId(cpu)).unwrap();
    assert_eq!(s.rqs[cpu as usize].curr, Some(TaskId(p)));
}

/// Mark task `p` as having run on its CPU `ago_ns` ago (cache hot if < 0.5 ms).
fn ran_ago(s: &mut Sim, p: u32, ago_ns: Ns) {
    let t = &mut s.tasks[p as usize];
    t.has_run = true;
    t.cache_cpu = t.cpu;
    t.last_ran_ns = s.now - ago_ns;
}

#[test]
fn classify_follows_capacity_and_runnable() {
    // Two tasks on one CPU with little utilisation: spare capacity (the
    // task count alone does not overload a group).
    let mut sgs = SgLbStats { sum_nr_running: 2, group_weight: 1, group_capacity: 1024, ..Default::default() };
    assert_eq!(group_classify(117, false, &sgs), GroupType::HasSpare);
    // Utilisation above capacity / 1.17 with more tasks than CPUs: overloaded.
    sgs.group_util = 900;
    assert_eq!(group_classify(117, false, &sgs), GroupType::Overloaded);
    // One task per CPU at full utilisation: fully busy, not overloaded.
    sgs.sum_nr_running = 1;
    assert_eq!(group_classify(117, false, &sgs), GroupType::FullyBusy);
    // The affinity flag outranks everything but overload.
    assert_eq!(group_classify(117, true, &sgs), GroupType::Imbalanced);
}

#[test]
fn idle_cpu_pulls_a_cold_task_at_once() {
    let mut s = sim(2, Features::mainline());
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0); // never ran: cold
    let mut cont = true;
    let moved = s.sched_balance_rq(CpuId(1), 0, CpuIdleType::Idle, &mut cont);
    assert_eq!(moved, 1);
    assert_eq!(s.tasks[1].cpu, CpuId(1));
    assert_eq!(s.rqs[1].sd[0].nr_balance_failed, 0);
}

#[test]
fn cache_hot_task_waits_for_cache_nice_tries() {
    // Task 1 ran 100 us ago on CPU 0: task_hot. At MC, cache_nice_tries = 1,
    // so can_migrate_task refuses it until nr_balance_failed > 1: the first
    // two passes fail (nr_balance_failed 1, then 2), the third moves it.
    let mut s = sim(2, Features::mainline());
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0);
    ran_ago(&mut s, 1, 100 * NSEC_PER_USEC);
    let sd = s.domains.sd(s.domains.chain(CpuId(1))[0]);
    assert_eq!(sd.cache_nice_tries, 1);
    let mut cont = true;
    for pass in 1..=2 {
        assert_eq!(s.sched_balance_rq(CpuId(1), 0, CpuIdleType::Idle, &mut cont), 0, "pass {pass}");
        assert_eq!(s.rqs[1].sd[0].nr_balance_failed, pass);
        assert_eq!(s.tasks[1].cpu, CpuId(0));
    }
    assert_eq!(s.sched_balance_rq(CpuId(1), 0, CpuIdleType::Idle, &mut cont), 1);
    assert_eq!(s.tasks[1].cpu, CpuId(1));
    assert_eq!(s.rqs[1].sd[0].nr_balance_failed, 0);
}

#[test]
fn pinned_task_is_not_pulled_and_interval_backs_off() {
    let mut s = sim(2, Features::mainline());
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0);
    // Both pinned to CPU 0 (the running one too: it could otherwise be
    // pushed by active balance, which clears LBF_ALL_PINNED).
    for p in 0..2 {
        s.tasks[p].allowed = crate::cpumask::CpuMask::from_cpus([CpuId(0)]);
    }
    let before = s.rqs[1].sd[0].balance_interval_ms;
    let mut cont = true;
    assert_eq!(s.sched_balance_rq(CpuId(1), 0, CpuIdleType::Idle, &mut cont), 0);
    assert_eq!(s.tasks[1].cpu, CpuId(0));
    // out_all_pinned: the failure counter stays 0 and the interval doubles.
    assert_eq!(s.rqs[1].sd[0].nr_balance_failed, 0);
    assert_eq!(s.rqs[1].sd[0].balance_interval_ms, 2 * before);
}

#[test]
fn pinned_tasks_flag_the_group_imbalanced_for_the_level_above() {
    // sched_balance_rq: a pass below the top that found only tasks pinned
    // away from dst (LBF_SOME_PINNED) with imbalance left sets the parent
    // level's sgc->imbalance of its domain's group; the pass above then
    // classifies that group group_imbalanced (the group loop's flagged
    // path, not the usual pass's, which assumes no flag is set).
    let mut s = sim(3, Features::mainline());
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0);
    enqueue(&mut s, 2, 0);
    for p in 0..3 {
        s.tasks[p].allowed = CpuMask::from_cpus([CpuId(0)]);
    }
    assert!(!s.fair.nohz.any_sgc_imbalance());
    let mut cont = true;
    assert_eq!(s.sched_balance_rq(CpuId(1), 0, CpuIdleType::Idle, &mut cont), 0);
    assert!(s.fair.nohz.any_sgc_imbalance());
    assert!(s.fair.nohz.sgc_imbalance(1, CpuId(0)));
    // CPU 4 (the other LLC) balancing the package level sees LLC 0 flagged.
    let env = s.lb_env(CpuId(4), 1, CpuIdleType::Idle);
    s.sg_sums_sync();
    let sds = s.update_sd_lb_stats(&env);
    assert_eq!(sds.busiest.map(|g| g.first), Some(CpuId(0)));
    assert_eq!(sds.busiest_stat.group_type, GroupType::Imbalanced);
}

#[test]
fn newidle_pulls_only_when_avg_idle_covers_the_cost() {
    let mut f = Features::mainline();
    f.set(Feat::NI_RANDOM, false); // no dice: the decision is avg_idle's alone
    let mut s = sim(2, f);
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0);
    assert!(s.rd_overloaded);
    // avg_idle below the lowest domain's max_newidle_lb_cost: skip entirely.
    s.rqs[1].avg_idle = 1_000;
    s.rqs[1].sd[0].max_newidle_lb_cost = 50_000;
    assert_eq!(s.sched_balance_newidle(CpuId(1)), 0);
    assert_eq!(s.tasks[1].cpu, CpuId(0));
    assert_ne!(s.rqs[1].idle_stamp, 0, "idle_stamp set at entry, kept when nothing was pulled");
    // Enough expected idle time: pull, clear idle_stamp.
    s.rqs[1].avg_idle = 1_000_000;
    s.rqs[1].sd[0].max_newidle_lb_cost = 0;
    assert_eq!(s.sched_balance_newidle(CpuId(1)), 1);
    assert_eq!(s.tasks[1].cpu, CpuId(1));
    assert_eq!(s.rqs[1].idle_stamp, 0);
    // The pass cost (2000 + 100 x 4 CPUs) became the domain's max cost.
    assert_eq!(s.rqs[1].sd[0].max_newidle_lb_cost, 2_400);
    let evs: Vec<_> = s.trace.as_ref().unwrap().iter().filter(|e| matches!(e.ev, Event::Balance { .. })).collect();
    assert_eq!(evs.len(), 2, "one Balance event per call");
}

#[test]
fn newidle_stops_below_a_domain_it_cannot_afford() {
    // The work is in the other LLC (PKG level). avg_idle covers the MC pass
    // (2400 ns) but not MC + PKG's max cost: nothing is pulled.
    let mut f = Features::mainline();
    f.set(Feat::NI_RANDOM, false);
    let mut s = sim(2, f);
    s.now = 10 * NSEC_PER_MSEC;
    run(&mut s, 0, 4);
    enqueue(&mut s, 1, 4);
    s.rqs[1].avg_idle = 10_000;
    s.rqs[1].sd[1].max_newidle_lb_cost = 9_000;
    assert_eq!(s.sched_balance_newidle(CpuId(1)), 0);
    assert_eq!(s.tasks[1].cpu, CpuId(4));
    s.rqs[1].avg_idle = 20_000;
    assert_eq!(s.sched_balance_newidle(CpuId(1)), 1);
    assert_eq!(s.tasks[1].cpu, CpuId(1));
}

#[test]
fn ni_random_ratio_bookkeeping() {
    // Every 1024 calls the ratio becomes the success count and both halve.
    let mut f = Features::mainline();
    f.set(Feat::NI_RATE, false);
    let mut s = sim(0, f);
    for i in 0..512 {
        s.update_newidle_stats(CpuId(0), 0, (i % 4 == 0) as u32);
    }
    let rt = &s.rqs[0].sd[0];
    // Start: 512 calls, 256 successes; +512 calls, +128 successes.
    assert_eq!(rt.newidle_ratio, 384);
    assert_eq!((rt.newidle_call, rt.newidle_success), (512, 192));
    // NI_RATE: a slow call rate adds delta >> 22 (here 4 s -> 953, capped at 1024).
    s.features.set(Feat::NI_RATE, true);
    s.now = 4 * crate::ids::NSEC_PER_SEC;
    for _ in 0..512 {
        s.update_newidle_stats(CpuId(0), 0, 0);
    }
    assert_eq!(s.rqs[0].sd[0].newidle_ratio, 1024);
}

#[test]
fn max_newidle_lb_cost_decays_one_percent_per_second() {
    let mut s = sim(0, Features::mainline());
    s.update_newidle_cost(CpuId(0), 0, 10_000, 0);
    s.now = 2 * crate::ids::NSEC_PER_SEC;
    assert!(s.update_newidle_cost(CpuId(0), 0, 0, 0));
    assert_eq!(s.rqs[0].sd[0].max_newidle_lb_cost, 10_000 * 253 / 256);
}

#[test]
fn nohz_kick_moves_work_to_a_tick_stopped_idle_cpu() {
    let mut s = sim(2, Features::mainline());
    s.now = 100 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    enqueue(&mut s, 1, 0);
    assert!(!s.fair.nohz.idle_cpus_mask().test(CpuId(0)) && s.fair.nohz.idle_cpus_mask().test(CpuId(1)));
    s.nohz_balancer_kick(CpuId(0)).unwrap();
    assert_eq!(s.fair.nohz.kicks, 1);
    let dst = s.tasks[1].cpu;
    assert_ne!(dst, CpuId(0), "pulled by an idle CPU");
    assert!(s
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .any(|e| matches!(e.ev, Event::Balance { kind: BalanceKind::NohzIdle, pulled: 1, cpu, .. } if cpu == dst)));
    // Rate limit: no second balance kick within the same jiffy.
    s.nohz_balancer_kick(CpuId(0)).unwrap();
    assert_eq!(s.fair.nohz.kicks, 1);
}

#[test]
fn nohz_stats_kick_decays_blocked_load_only_with_the_feature() {
    for on in [true, false] {
        let mut f = Features::mainline();
        f.set(Feat::nohz_blocked_load_update, on);
        let mut s = sim(1, f);
        s.now = 100 * NSEC_PER_MSEC;
        run(&mut s, 0, 0);
        // CPU 5 is idle with blocked load left from a task that slept.
        s.rqs[5].cfs_avg.load_avg = 500;
        s.rqs[5].cfs_avg.util_avg = 500;
        assert!(s.nohz_has_blocked());
        s.nohz_balancer_kick(CpuId(0)).unwrap();
        let load = s.rqs[5].cfs_avg.load_avg;
        if on {
            assert!(load < 500, "decayed: {load}");
        } else {
            assert_eq!(load, 500, "stale without the update");
        }
    }
}

/// Hand-mark `cpu` busy with one task of load `load` and full utilisation.
fn busy(s: &mut Sim, cpu: usize, t: u32, load: u64) {
    s.rqs[cpu].curr = Some(TaskId(t));
    s.rqs[cpu].nr_running = 1;
    s.rqs[cpu].cfs_avg.load_avg = load;
    s.rqs[cpu].cfs_avg.util_avg = 1024;
    s.fair.nohz.clear_idle(CpuId(cpu as u32));
}

#[test]
fn fork_picks_the_idlest_group_then_the_shallowest_idle_cpu() {
    // LLC 0 all busy; LLC 1: CPU 4 busy, 5 and 7 in C6, 6 in C1. PKG: LLC 1
    // has 3 idle CPUs vs 0; inside it CPU 6 has the shallowest exit latency.
    let mut s = sim(9, Features::mainline());
    for c in 0..5 {
        busy(&mut s, c, c as u32 + 1, 1000);
    }
    s.rqs[5].idle_state = Some(1);
    s.rqs[6].idle_state = Some(0);
    s.rqs[7].idle_state = Some(1);
    assert_eq!(s.sched_balance_find_dst_cpu(TaskId(0), CpuId(0), CpuId(0), SD_BALANCE_FORK), CpuId(6));
    // Equal exit latencies: the most recently idled CPU wins.
    s.rqs[6].idle_state = Some(1);
    s.rqs[5].idle_stamp = 100;
    s.rqs[7].idle_stamp = 200;
    assert_eq!(s.sched_balance_find_dst_cpu(TaskId(0), CpuId(0), CpuId(0), SD_BALANCE_FORK), CpuId(7));
}

#[test]
fn fork_with_everything_busy_picks_the_least_loaded() {
    // Every CPU fully busy: LLC 0 avg_load 1000, LLC 1 (900+300+800+700)/4 =
    // 675, below 1000 by more than imbalance_pct allows: LLC 1, where CPU 5
    // is the least loaded; at MC level CPU 5 stays (no group lighter by 17%).
    let mut s = sim(9, Features::mainline());
    let loads = [1000, 1000, 1000, 1000, 900, 300, 800, 700];
    for (c, &l) in loads.iter().enumerate() {
        busy(&mut s, c, c as u32 + 1, l);
    }
    assert_eq!(s.sched_balance_find_dst_cpu(TaskId(0), CpuId(0), CpuId(0), SD_BALANCE_FORK), CpuId(5));
}

#[test]
fn fork_stays_local_when_the_local_group_is_as_idle() {
    let mut s = sim(2, Features::mainline());
    busy(&mut s, 0, 1, 1000);
    // Both LLCs have idle CPUs; LLC 0 has 3, LLC 1 has 4: PKG picks LLC 1.
    assert_eq!(s.sched_balance_find_dst_cpu(TaskId(0), CpuId(0), CpuId(0), SD_BALANCE_FORK).0 / 4, 1);
    busy(&mut s, 4, 1, 1000);
    // 3 vs 3: stay in LLC 0, on one of its idle CPUs.
    let c = s.sched_balance_find_dst_cpu(TaskId(0), CpuId(0), CpuId(0), SD_BALANCE_FORK);
    assert!(c.0 >= 1 && c.0 <= 3, "{c:?}");
}

#[test]
fn v5_5_slow_path_sums_capacity_of_whatever_capacity_spare_wake_says() {
    // v5.5+ has no capacity_spare_wake: sgc->capacity is the sum of capacity_of.
    let mut s = sim(1, Features::mainline());
    for c in 4..8 {
        s.rqs[c].cpu_capacity = 400; // RT/IRQ pressure on LLC 1
    }
    let sd_id = *s.domains.chain(CpuId(0)).last().unwrap();
    let sd = s.domains.sd(sd_id).clone();
    let g = s.sd_groups(sd_id, CpuId(0)).nth(1).unwrap();
    assert_eq!(s.update_sg_wakeup_stats(&sd, &g, TaskId(0)).group_capacity, 1600);
    s.features.set(Feat::capacity_spare_wake_current, false);
    assert_eq!(s.update_sg_wakeup_stats(&sd, &g, TaskId(0)).group_capacity, 1600);
}

#[test]
fn slow_path_group_stats_count_only_the_cpus_the_task_may_use_since_2025() {
    // A task allowed on CPUs 0-4 looks at LLC 1 (CPUs 4-7, all idle; 5-7
    // busy here): the 2025 rule counts CPU 4 alone (idle), v6.12 all four.
    let mut s = sim(4, Features::mainline());
    for (c, t) in [(5, 1), (6, 2), (7, 3)] {
        busy(&mut s, c, t, 1000);
    }
    s.tasks[0].allowed = CpuMask::from_cpus((0..5).map(CpuId));
    let sd_id = *s.domains.chain(CpuId(0)).last().unwrap();
    let sd = s.domains.sd(sd_id).clone();
    let g = s.sd_groups(sd_id, CpuId(0)).nth(1).unwrap();
    let now = s.update_sg_wakeup_stats(&sd, &g, TaskId(0));
    assert_eq!((now.idle_cpus, now.sum_nr_running), (1, 0));
    s.features.set(Feat::wakeup_stats_allowed, false);
    let old = s.update_sg_wakeup_stats(&sd, &g, TaskId(0));
    assert_eq!((old.idle_cpus, old.sum_nr_running), (1, 3));
    // The group's capacity and weight stay the whole group's in both.
    assert_eq!((now.group_weight, now.group_capacity), (old.group_weight, old.group_capacity));
}

#[test]
fn periodic_balance_updates_sis_util_scan_depth() {
    // SIS_UTIL: with the LLC 50% utilised, x = 512, y = 1024 - 512^2 x
    // 117^2 / (10000 x 1024) = 1024 - 350 = 674, nr = 674 x 4 / 1024 = 2.
    let mut s = sim(1, Features::mainline());
    s.now = 100 * NSEC_PER_MSEC;
    run(&mut s, 0, 0);
    for c in 0..4 {
        s.rqs[c].cfs_avg.util_avg = 512;
    }
    let mut cont = true;
    s.sched_balance_rq(CpuId(0), 0, CpuIdleType::NotIdle, &mut cont);
    assert_eq!(s.fair.llc[0].nr_idle_scan, 2);
}

#[test]
fn next_buddy_is_cache_hot_for_a_busy_puller_only_with_cache_hot_buddy() {
    // Task 1 is queued on CPU 0 as its next buddy (about to run there) but
    // last ran long ago, so by time alone it is cold. CACHE_HOT_BUDDY calls
    // it hot when the destination has work of its own (CPU 1 runs task 2):
    // pulling the buddy away would waste the wakeup's choice.
    for buddy in [false, true] {
        let mut f = Features::mainline();
        f.set(Feat::CACHE_HOT_BUDDY, buddy);
        let mut s = sim(3, f);
        s.now = 10 * NSEC_PER_MSEC;
        run(&mut s, 0, 0);
        enqueue(&mut s, 1, 0);
        ran_ago(&mut s, 1, 5 * NSEC_PER_MSEC);
        s.rqs[0].cfs.next = Some(TaskId(1));
        run(&mut s, 2, 1);
        let mut env = s.lb_env(CpuId(1), 0, CpuIdleType::NotIdle);
        env.src_cpu = CpuId(0);
        assert_eq!(s.task_hot(TaskId(1), &env), buddy, "CACHE_HOT_BUDDY={buddy}");
        // An idle puller has nothing to protect: the rule needs dst busy.
        let mut idle_env = s.lb_env(CpuId(2), 0, CpuIdleType::Idle);
        idle_env.src_cpu = CpuId(0);
        assert!(!s.task_hot(TaskId(1), &idle_env));
    }
}
