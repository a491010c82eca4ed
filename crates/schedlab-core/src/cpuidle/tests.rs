//! Governor decisions on hand-built state tables, and the idle loop in runs.

use super::menu::{get_typical_interval, menu_select, which_bucket, MenuDevice, INTERVALS};
use super::teo::{teo_select, teo_update, TeoCpu, PULSE};
use super::*;
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::topology::IdleState;

const US: Ns = NSEC_PER_USEC;
const MS: Ns = NSEC_PER_MSEC;
/// HZ = 250.
const TICK: Ns = 4 * MS;

/// Three states: C1 (exit 2 us, residency 2 us), C1E (10, 20), C6 (133, 600).
fn states() -> Vec<IdleState> {
    let st = |name: &str, exit_us: u64, res_us: u64| IdleState {
        name: name.into(),
        exit_latency_ns: exit_us * US,
        actual_exit_latency_ns: exit_us * US,
        target_residency_ns: res_us * US,
        power_mw: 0,
        level: crate::topology::IdleLevel::Cpu,
        cpu_exit_latency_ns: None,
    };
    vec![st("C1", 2, 2), st("C1E", 10, 20), st("C6", 133, 600)]
}

/// The tick runs, next timer `timer`, next tick a full period away.
fn sleep(timer: Ns) -> SleepLength {
    SleepLength {
        sleep_length_ns: timer,
        delta_tick_ns: timer.min(TICK),
        tick_stopped: false,
        tick_ns: TICK,
        latency_req_ns: Ns::MAX,
        avg_idle_ns: 0,
    }
}

#[test]
fn menu_picks_the_deepest_state_whose_residency_fits_the_timer() {
    // No history: the prediction is the next timer itself (factor 1.0).
    let mut d = MenuDevice::default();
    // 10 ms away, beyond a tick: C6, and the tick stops.
    assert_eq!(menu_select(&mut d, &states(), &sleep(10 * MS), None), Selection { idx: 2, stop_tick: true });
    // 300 us: C6 does not pay off (600 us), C1E does.
    assert_eq!(menu_select(&mut d, &states(), &sleep(300 * US), None).idx, 1);
    // 15 us: only C1.
    assert_eq!(menu_select(&mut d, &states(), &sleep(15 * US), None).idx, 0);
    // A latency limit of 50 us rules C6 out whatever the timer.
    let mut s = sleep(10 * MS);
    s.latency_req_ns = 50 * US;
    assert_eq!(menu_select(&mut d, &states(), &s, None).idx, 1);
}

#[test]
fn menu_prediction_is_the_timer_scaled_by_its_bucket_factor() {
    let mut d = MenuDevice::default();
    // A 2 ms timer is in bucket 3 (1..10 ms); a factor of 0.3 there predicts
    // 600 us: C6 exactly fits.
    assert_eq!(which_bucket(2 * MS), 3);
    d.correction_factor[3] = (RESOLUTION_X_DECAY * 3 / 10) as u32;
    let sel = menu_select(&mut d, &states(), &sleep(2 * MS), None);
    assert_eq!(sel, Selection { idx: 2, stop_tick: false });
    assert_eq!((d.next_timer_ns, d.bucket), (2 * MS, 3));
    // One microsecond less and C1E it is.
    d.correction_factor[3] -= 5;
    assert_eq!(menu_select(&mut d, &states(), &sleep(2 * MS), None).idx, 1);
    // The CPU then stayed idle 1 ms (+ C1E's 10 us exit): menu_update folds
    // 1 ms / 2 ms into the factor: f - f/8 + 1024 * 1/2.
    let f = d.correction_factor[3] as u64;
    menu_select(&mut d, &states(), &sleep(2 * MS), Some((1, MS + 10 * US, false)));
    assert_eq!(d.correction_factor[3] as u64, f - f / 8 + 512);
    assert_eq!(d.intervals[0], 1000);
}

/// `RESOLUTION * DECAY`: a correction factor of 1.0.
const RESOLUTION_X_DECAY: u64 = super::menu::RESOLUTION * super::menu::DECAY;

#[test]
fn the_tick_stays_on_for_a_short_prediction() {
    let mut d = MenuDevice::default();
    // 300 us predicted, shorter than a tick: keep the tick.
    assert_eq!(menu_select(&mut d, &states(), &sleep(300 * US), None), Selection { idx: 1, stop_tick: false });
    // A prediction beyond a tick stops the tick, so a tick due in 100 us
    // does not cap the state: C6.
    let mut s = sleep(10 * MS);
    s.delta_tick_ns = 100 * US;
    assert_eq!(menu_select(&mut d, &states(), &s, None), Selection { idx: 2, stop_tick: true });
    // A repeating 5 us pattern: the typical interval (5 us, under
    // RESIDENCY_THRESHOLD_NS) wins without a timer lookup: C1, tick on.
    d.intervals = [5; INTERVALS];
    assert_eq!(get_typical_interval(&d), 5);
    assert_eq!(menu_select(&mut d, &states(), &sleep(10 * MS), None), Selection { idx: 0, stop_tick: false });
}

#[test]
fn typical_interval_drops_an_outlier_and_gives_up_on_noise() {
    let mut d = MenuDevice::default();
    assert_eq!(get_typical_interval(&d), u32::MAX, "no history, no opinion");
    d.intervals = [100, 100, 100, 100, 100, 100, 100, 5000];
    assert_eq!(get_typical_interval(&d), 100);
    d.intervals = [10, 5000, 40, 9000, 300, 70000, 2, 600];
    assert_eq!(get_typical_interval(&d), u32::MAX);
}

#[test]
fn teo_counts_hits_and_intercepts_with_decay() {
    let st = states();
    let mut c = TeoCpu { sleep_length_ns: 10 * MS, ..TeoCpu::default() };
    // Woken 5 ms into a 10 ms sleep, in C6: same bin (C6's) as the sleep
    // length, a hit.
    teo_update(&mut c, &st, 2, 5 * MS, false, TICK);
    assert_eq!(c.state_bins[2].hits, PULSE);
    // Woken after 50 us (C1E's bin): an intercept there, shorter than a tick;
    // the hit decays by 1/8.
    teo_update(&mut c, &st, 2, 50 * US, false, TICK);
    assert_eq!(c.state_bins[2].hits, PULSE - PULSE / 8);
    assert_eq!(c.state_bins[1].intercepts, PULSE);
    assert_eq!(c.tick_intercepts, PULSE);
    assert_eq!(c.total, (PULSE - PULSE / 8) + PULSE);
}

#[test]
fn teo_goes_shallow_when_intercepts_dominate() {
    let st = states();
    let mut c = TeoCpu::default();
    // Fresh: the deepest state the 10 ms sleep length allows, tick stopped.
    assert_eq!(teo_select(&mut c, &st, &sleep(10 * MS), None), Selection { idx: 2, stop_tick: true });
    // Ten wakeups after 50 us although no timer was due for 10 ms.
    for _ in 0..10 {
        c.sleep_length_ns = 10 * MS;
        teo_update(&mut c, &st, 2, 50 * US, false, TICK);
    }
    // The intercepts in C1E's bin outweigh everything at C6: C1E, and as
    // they come within a tick, the tick keeps running.
    assert_eq!(teo_select(&mut c, &st, &sleep(10 * MS), None), Selection { idx: 1, stop_tick: false });
}

#[test]
fn one_state_leaves_menu_nothing_to_decide() {
    let one = &states()[..1];
    let mut d = MenuDevice::default();
    assert_eq!(menu_select(&mut d, one, &sleep(300 * US), None), Selection { idx: 0, stop_tick: true });
    // teo keeps the tick when there is no choice (its `state_count < 2` exit).
    let mut c = TeoCpu::default();
    assert_eq!(teo_select(&mut c, one, &sleep(300 * US), None), Selection { idx: 0, stop_tick: false });
}

/// A one-CPU machine with the three states, and one task that computes
/// 100 us and sleeps `sleep_ns`, forever.
fn one_cpu_sim(sleep_ns: Ns, gov: IdleGovernor, trace: bool) -> crate::engine::Sim {
    use crate::testkit::{machine_from_toml, script_tasks, script_workload, sim_config};
    use crate::workload::Action;
    let toml = format!(
        "{}idle_states = [\n  {{ name = \"C1\", exit_latency_us = 2, target_residency_us = 2, power_mw = 100 }},\n  \
         {{ name = \"C1E\", exit_latency_us = 10, target_residency_us = 20, power_mw = 50 }},\n  \
         {{ name = \"C6\", exit_latency_us = 133, target_residency_us = 600, power_mw = 5 }},\n]\n",
        crate::uniform_machine_toml!("one-cpu", 1, 1, 1, 1)
    );
    let mut m = machine_from_toml(&toml);
    m.cpuidle.governor = gov;
    let d = crate::topology::build_sched_domains(&m).unwrap();
    let w = script_workload(script_tasks(1, &[Action::Compute(100 * US), Action::Sleep(sleep_ns)], 0));
    let cfg = crate::engine::build::SimConfig { trace, ..sim_config(crate::features::Features::mainline()) };
    crate::engine::Sim::build(m, d, &w, cfg).unwrap()
}

#[test]
fn an_idle_cpu_enters_the_state_its_timer_allows_and_stops_the_tick_only_for_long_sleeps() {
    // A 10 ms sleep timer: C6, tick stopped, the CPU in the NOHZ idle mask.
    let mut s = one_cpu_sim(10 * MS, IdleGovernor::Menu, false);
    s.run(150 * US).unwrap();
    let rq = &s.rqs[0];
    assert!(rq.curr.is_none());
    assert_eq!((rq.idle_state, rq.tick_stopped), (Some(2), true));
    assert!(s.nohz_idle_test(CpuId(0)));
    // A 300 us timer: C1E, the tick keeps running, the CPU stays out of the
    // NOHZ mask and counts as busy in its LLC.
    let mut s = one_cpu_sim(300 * US, IdleGovernor::Menu, false);
    s.run(150 * US).unwrap();
    let rq = &s.rqs[0];
    assert_eq!((rq.idle_state, rq.tick_stopped), (Some(1), false));
    assert!(!s.nohz_idle_test(CpuId(0)));
    assert_eq!(s.llc_nr_busy_cpus(0), 1);
}

#[test]
fn every_idle_period_of_a_steady_timer_loop_picks_the_same_state() {
    let mut s = one_cpu_sim(10 * MS, IdleGovernor::Menu, true);
    s.run(200 * MS).unwrap();
    let states: Vec<Option<u8>> = s
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|e| match e.ev {
            crate::trace::Event::CpuIdle { state: Some(st), .. } => Some(Some(st)),
            _ => None,
        })
        .collect();
    assert!(states.len() >= 18, "{} idle entries", states.len());
    assert!(states.iter().all(|&st| st == Some(2)), "{states:?}");
}

#[test]
fn menu_and_teo_spend_the_idle_time_in_different_states() {
    use crate::testkit::{metric, preset_source, run_spec};
    // schbench's workers block on futexes, not timers: menu, finding no
    // timer, trusts its (irregular) history and goes deep; teo learns the
    // early wakeups as intercepts and stays shallower.
    let w = "schbench:message_threads=1,threads=4,runtime=300ms,warmup=0s";
    let run = |gov: &str| {
        let mut spec = run_spec(preset_source("laptop-4c8t"), w, "eevdf", 1, false);
        spec.options.idle_governor = Some(gov.into());
        crate::api::run(&spec).unwrap()
    };
    let (menu, teo) = (run("menu"), run("teo"));
    let res = |r: &crate::api::RunResult| {
        ["C1", "C1E", "C3", "C6", "C7s", "C8", "C9", "C10"].map(|s| metric(r, &format!("idle_residency.{s}")))
    };
    let (m, t) = (res(&menu), res(&teo));
    assert_ne!(m, t);
    // The deepest state (C10) holds more of menu's idle time than teo's.
    assert!(m[7] > t[7], "menu {m:?}, teo {t:?}");
    // Each residency is a share of total CPU time, within the idle share.
    let idle = metric(&menu, "idle_pct") / 100.0;
    assert!(m.iter().sum::<f64>() <= idle + 1e-9, "{m:?} over idle {idle}");
}

#[test]
fn the_avg_idle_rule_takes_the_deepest_state_avg_idle_covers() {
    let mut s = sleep(10 * MS);
    s.avg_idle_ns = 700 * US;
    assert_eq!(avg_idle_select(&states(), s.avg_idle_ns, s.latency_req_ns), Selection { idx: 2, stop_tick: true });
    s.avg_idle_ns = 500 * US;
    assert_eq!(avg_idle_select(&states(), s.avg_idle_ns, s.latency_req_ns).idx, 1);
    s.latency_req_ns = 5 * US;
    assert_eq!(avg_idle_select(&states(), s.avg_idle_ns, s.latency_req_ns).idx, 0);
}
