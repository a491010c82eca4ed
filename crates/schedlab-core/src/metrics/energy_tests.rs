//! Tests of the energy meter (`energy.rs`): hand-built schedules summed by hand.

use super::*;
use crate::ids::{TaskId, NSEC_PER_MSEC};
use crate::metrics::{Collector, MetricsContext};
use crate::trace::{Event, PrevState, TimedEvent};

/// Two CPUs in one domain: 1000 MHz at 100 mW, 2000 MHz at 400 mW, idle 10 mW.
fn ctx() -> EnergyCtx {
    EnergyCtx {
        cpu_domain: vec![0, 0],
        domain_opps: vec![vec![Opp { freq_khz: 1_000_000, power_mw: 100 }, Opp { freq_khz: 2_000_000, power_mw: 400 }]],
        domain_idle_mw: vec![10],
        domain_idle_states_mw: vec![vec![10]],
        domain_idle_levels: vec![vec![IdleLevel::Cpu]],
        cpu_cluster: vec![0, 0],
        domain_start_khz: vec![1_000_000],
        domain_has_power: vec![true],
    }
}

fn value(ms: &[MetricValue], name: &str) -> f64 {
    ms.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no {name}")).value
}

#[test]
fn hand_built_schedule_energy_is_the_hand_sum() {
    let mut mc = MetricsContext::flat(2);
    mc.cpus_start_idle = true;
    mc.energy = Some(ctx());
    let mut c = Collector::new(mc);
    let ms = NSEC_PER_MSEC;
    let sw = |cpu: u32, next: Option<TaskId>| Event::Switch {
        cpu: CpuId(cpu),
        prev: None,
        prev_state: PrevState::Runnable,
        next,
    };
    let evs = [
        // 0..1 ms: CPU0 busy at 1000 MHz, CPU1 idle: 100 + 10 mW.
        TimedEvent { time: 0, ev: sw(0, Some(TaskId(0))) },
        // 1..2 ms: 2000 MHz (both CPUs' lines, one transition): 400 + 10 mW.
        TimedEvent { time: ms, ev: Event::CpuFrequency { cpu: CpuId(0), khz: 2_000_000 } },
        TimedEvent { time: ms, ev: Event::CpuFrequency { cpu: CpuId(1), khz: 2_000_000 } },
        // 2..3 ms: CPU1 busy too: 400 + 400 mW.
        TimedEvent { time: 2 * ms, ev: sw(1, Some(TaskId(1))) },
        // 3..4 ms: both idle: 10 + 10 mW.
        TimedEvent {
            time: 3 * ms,
            ev: Event::Switch { cpu: CpuId(0), prev: Some(TaskId(0)), prev_state: PrevState::Sleeping, next: None },
        },
        TimedEvent {
            time: 3 * ms,
            ev: Event::Switch { cpu: CpuId(1), prev: Some(TaskId(1)), prev_state: PrevState::Sleeping, next: None },
        },
    ];
    for e in &evs {
        c.on_event(e);
    }
    let out = c.finish(4 * ms);
    // mW x ms = uJ: 110 + 410 + 800 + 20 = 1340 uJ.
    let want = 1340e-6;
    assert!((value(&out, "energy_j") - want).abs() < 1e-12, "{}", value(&out, "energy_j"));
    assert!((value(&out, "energy_j.fd0") - want).abs() < 1e-12);
    // 1340 uJ over 4 ms = 335 mW.
    assert!((value(&out, "power_mw") - 335.0).abs() < 1e-9);
    assert_eq!(value(&out, "freq_transitions"), 1.0);
    // Per CPU: CPU0 busy 0..3 ms (100 + 400 + 400 uJ) then idle 1 ms (10 uJ);
    // CPU1 idle 0..2 ms (20 uJ), busy 2..3 ms (400 uJ), idle 3..4 ms (10 uJ).
    assert!((value(&out, "energy_j.cpu0") - 910e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu0"));
    assert!((value(&out, "energy_j.cpu1") - 430e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu1"));
    assert_eq!(value(&out, "freq_residency.fd0.1000000"), 0.25);
    assert_eq!(value(&out, "freq_residency.fd0.2000000"), 0.75);
}

#[test]
fn warmup_is_not_counted() {
    let mut mc = MetricsContext::flat(2);
    mc.cpus_start_idle = true;
    mc.warmup_ns = NSEC_PER_MSEC;
    mc.energy = Some(ctx());
    let mut c = Collector::new(mc);
    c.on_event(&TimedEvent {
        time: 0,
        ev: Event::Switch { cpu: CpuId(0), prev: None, prev_state: PrevState::Runnable, next: Some(TaskId(0)) },
    });
    let out = c.finish(3 * NSEC_PER_MSEC);
    // Counted 1..3 ms: 110 mW x 2 ms = 220 uJ: CPU0 busy 200, CPU1 idle 20.
    assert!((value(&out, "energy_j") - 220e-6).abs() < 1e-12, "{}", value(&out, "energy_j"));
    assert!((value(&out, "energy_j.cpu0") - 200e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu0"));
    assert!((value(&out, "energy_j.cpu1") - 20e-6).abs() < 1e-12);
}

/// A CPU's idle-state event (`None`: it leaves idle).
fn idle(cpu: u32, state: Option<u8>) -> Event {
    Event::CpuIdle { cpu: CpuId(cpu), state }
}

/// A context switch on `cpu` (a blocking `prev`).
fn sw(cpu: u32, prev: Option<TaskId>, next: Option<TaskId>) -> Event {
    Event::Switch { cpu: CpuId(cpu), prev, prev_state: PrevState::Sleeping, next }
}

/// Two CPUs starting idle under energy context `x`, fed `evs` and
/// finished at `end`.
fn replay(x: EnergyCtx, evs: &[(u64, Event)], end: u64) -> Collector {
    let mut mc = MetricsContext::flat(2);
    mc.cpus_start_idle = true;
    mc.energy = Some(x);
    let mut c = Collector::new(mc);
    for (time, ev) in evs.iter().cloned() {
        c.on_event(&TimedEvent { time, ev });
    }
    c.finish(end);
    c
}

#[test]
fn idle_power_follows_the_idle_state() {
    // One domain at 1000 MHz (100 mW busy); idle states C1 at 10 mW and
    // C6 at 2 mW; an idle CPU in no state draws C1's 10 mW.
    let mut x = ctx();
    x.domain_idle_states_mw = vec![vec![10, 2]];
    let ms = NSEC_PER_MSEC;
    // CPU0: busy 0..1 ms, C6 1..3 ms, C1 3..4 ms, busy 4..5 ms.
    // CPU1: no state 0..2 ms (10 mW), C6 2..5 ms.
    let evs = [
        (0, sw(0, None, Some(TaskId(0)))),
        (ms, sw(0, Some(TaskId(0)), None)),
        (ms, idle(0, Some(1))),
        (2 * ms, idle(1, Some(1))),
        (3 * ms, idle(0, None)),
        (3 * ms, idle(0, Some(0))),
        (4 * ms, idle(0, None)),
        (4 * ms, sw(0, None, Some(TaskId(0)))),
    ];
    let c = replay(x, &evs, 5 * ms);
    let e = c.energy.as_ref().unwrap();
    // mW x ms: CPU0 100 + 2 x 2 + 10 + 100 = 214; CPU1 2 x 10 + 3 x 2 = 26.
    assert_eq!(e.energy_mw_ns(), (214 + 26) * ms as u128);
    assert_eq!(e.cpus[0].energy, 214 * ms as u128);
    assert_eq!(e.cpus[1].energy, 26 * ms as u128);
}

#[test]
fn a_cluster_state_draws_its_power_only_while_the_whole_cluster_is_in_it() {
    // Two CPUs of one cluster at 1000 MHz (100 mW busy); states C1 10 mW,
    // cpu-off 4 mW, cluster-off 1 mW (cluster level).
    let mut x = ctx();
    x.domain_idle_states_mw = vec![vec![10, 4, 1]];
    x.domain_idle_levels = vec![vec![IdleLevel::Cpu, IdleLevel::Cpu, IdleLevel::Cluster]];
    let ms = NSEC_PER_MSEC;
    // CPU0: busy 0..1 ms, asks for cluster-off 1..3 ms, then (CPU1 up)
    // in cpu-off 3..4 ms.
    // CPU1: asks for cluster-off 0..3 ms: cpu-off while CPU0 runs
    // (0..1 ms), cluster-off with it (1..3 ms); busy 3..4 ms.
    let evs = [
        (0, sw(0, None, Some(TaskId(0)))),
        (0, idle(1, Some(2))),
        (ms, sw(0, Some(TaskId(0)), None)),
        (ms, idle(0, Some(2))),
        (3 * ms, idle(1, None)),
        (3 * ms, sw(1, None, Some(TaskId(1)))),
    ];
    let c = replay(x, &evs, 4 * ms);
    let e = c.energy.as_ref().unwrap();
    // mW x ms: CPU0 100 + 2 x 1 + 4 = 106; CPU1 4 + 2 x 1 + 100 = 106.
    assert_eq!(e.cpus[0].energy, 106 * ms as u128);
    assert_eq!(e.cpus[1].energy, 106 * ms as u128);
    assert_eq!(e.energy_mw_ns(), 212 * ms as u128);
}

/// Two domains of one CPU each (CPU0 in fd0, CPU1 in fd1), the same
/// tables; `powered[d]`: whether domain `d` has a power model.
fn two_domains(powered: [bool; 2]) -> EnergyCtx {
    let opps = ctx().domain_opps[0].clone();
    EnergyCtx {
        cpu_domain: vec![0, 1],
        domain_opps: vec![opps.clone(), opps],
        domain_idle_mw: vec![10, 10],
        domain_idle_states_mw: vec![vec![10], vec![10]],
        domain_idle_levels: vec![vec![IdleLevel::Cpu], vec![IdleLevel::Cpu]],
        cpu_cluster: vec![0, 1],
        domain_start_khz: vec![1_000_000, 1_000_000],
        domain_has_power: powered.to_vec(),
    }
}

/// Both CPUs busy 0..1 ms, CPU1's domain at 2000 MHz from 1 ms, both
/// idle from 2 ms; finished at 3 ms.
fn run_two_domains(powered: [bool; 2]) -> Vec<MetricValue> {
    let ms = NSEC_PER_MSEC;
    let evs = [
        (0, sw(0, None, Some(TaskId(0)))),
        (0, sw(1, None, Some(TaskId(1)))),
        (ms, Event::CpuFrequency { cpu: CpuId(1), khz: 2_000_000 }),
        (2 * ms, sw(0, Some(TaskId(0)), None)),
        (2 * ms, sw(1, Some(TaskId(1)), None)),
    ];
    let mut mc = MetricsContext::flat(2);
    mc.cpus_start_idle = true;
    mc.energy = Some(two_domains(powered));
    let mut c = Collector::new(mc);
    for (time, ev) in evs.iter().cloned() {
        c.on_event(&TimedEvent { time, ev });
    }
    c.finish(3 * ms)
}

#[test]
fn a_domain_without_power_has_no_energy_and_the_totals_are_absent() {
    // fd0 powered: 100 + 100 + 10 uJ; fd1 not: its energy, its CPU's and
    // the totals are absent, its residency and transitions are not.
    let out = run_two_domains([true, false]);
    assert!((value(&out, "energy_j.fd0") - 210e-6).abs() < 1e-12);
    assert!((value(&out, "energy_j.cpu0") - 210e-6).abs() < 1e-12);
    for name in ["energy_j.fd1", "energy_j.cpu1", "energy_j", "power_mw"] {
        assert!(value(&out, name).is_nan(), "{name} = {}", value(&out, name));
    }
    assert_eq!(value(&out, "freq_transitions"), 1.0);
    assert!((value(&out, "freq_residency.fd1.2000000") - 2.0 / 3.0).abs() < 1e-12);
    assert!((value(&out, "freq_residency.fd0.1000000") - 1.0).abs() < 1e-12);
}

#[test]
fn with_every_domain_powered_the_totals_are_the_sum() {
    // fd0 210 uJ as above; fd1: 100 (1000 MHz) + 400 (2000 MHz) + 10 idle.
    let out = run_two_domains([true, true]);
    assert!((value(&out, "energy_j.fd1") - 510e-6).abs() < 1e-12);
    assert!((value(&out, "energy_j") - 720e-6).abs() < 1e-12);
    assert!((value(&out, "power_mw") - 240.0).abs() < 1e-9);
}

#[test]
fn no_power_figure_means_no_power_model() {
    let preset = |name: &str| crate::testkit::machine_from_toml(&crate::testkit::preset_source(name).text);
    // The x86 presets give P-states without power; hikey960 OPP power
    // without idle power; pixel2 both.
    let m = preset("xeon-2s-20c");
    let x = EnergyCtx::from_machine(&m, vec![0; m.freq_domains.len()]);
    assert!(!x.domain_has_power.is_empty() && x.domain_has_power.iter().all(|&p| !p));
    for name in ["hikey960", "pixel2"] {
        let m = preset(name);
        let x = EnergyCtx::from_machine(&m, vec![0; m.freq_domains.len()]);
        assert_eq!(x.domain_has_power, vec![true, true], "{name}");
    }
}
