//! Scenario tests of load balancing on whole runs: work that starts piled on
//! one CPU spreads to every CPU, through NOHZ idle balancing (idle CPUs
//! have their tick stopped, so only a kicked idle CPU balances for them)
//! and periodic balancing.

use crate::engine::build::SimConfig;
use crate::engine::Sim;
use crate::features::Features;
use crate::ids::{CpuId, Ns, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::trace::{BalanceKind, Event};
use crate::workload::Action;

/// `n` CPU-bound tasks (1 s of work each), all woken on CPU 0 at time 0, on
/// 2 LLCs x 4 cores, no SMT, HZ = 250 (4 ms ticks).
fn piled_on_cpu0(n: usize, features: Features) -> Sim {
    let w = script_workload(script_tasks(n, &[Action::Compute(1_000_000)], 1000));
    sim_with(TWO_LLC, &w, SimConfig { seed: 7, trace: true, check_invariants: true, ..sim_config(features) })
}

fn spread(s: &Sim) -> Vec<u32> {
    s.rqs.iter().map(|r| r.nr_running).collect()
}

/// Run until every CPU runs exactly one task; the time it took.
fn time_to_spread(s: &mut Sim, limit: Ns) -> Option<Ns> {
    let step = NSEC_PER_MSEC;
    let mut t = 0;
    while t < limit {
        t += step;
        s.run(t).unwrap();
        if s.rqs.iter().all(|r| r.nr_running == 1) {
            return Some(t);
        }
    }
    None
}

/// Scenario 1: eight CPU hogs start on CPU 0 of an idle 8-CPU, 2-LLC machine.
///
/// The wakeups themselves cannot spread them: with SIS_UTIL, an LLC whose
/// `nr_idle_scan` is still 0 is not scanned, so the hogs queue on CPU 0.
/// The busy CPU 0 cannot push (its busiest group is itself), so the work
/// spreads by NOHZ idle balancing: CPU 0's tick sees two runnable tasks
/// and kicks an idle CPU, which balances for every tick-stopped idle CPU;
/// MC passes move tasks inside LLC 0 at once (tasks that have waited more
/// than 0.5 ms are cache cold), PKG passes move them to LLC 1. One kick per
/// tick (4 ms) with MC and PKG intervals of 4 and 8 ms: a handful of kicks,
/// so well within the 100 ms bound (the run reports the measured time).
#[test]
fn eight_hogs_on_one_cpu_spread_one_per_cpu() {
    let mut s = piled_on_cpu0(8, Features::mainline());
    let t = time_to_spread(&mut s, 100 * NSEC_PER_MSEC);
    assert!(t.is_some(), "not spread after 100 ms: {:?}", spread(&s));
    eprintln!("spread one per CPU after {} ms", t.unwrap() / NSEC_PER_MSEC);
    let trace = s.trace.as_ref().unwrap();
    assert!(trace.iter().any(|e| matches!(e.ev, Event::Balance { kind: BalanceKind::NohzIdle, .. })));
    // Tasks crossed to LLC 1 by balancing.
    assert!(trace.iter().any(|e| matches!(e.ev, Event::Migrate { dest, .. } if dest.0 >= 4)));
    // Every `run` above checked the invariants after each event (and unwrapped).
    assert_eq!(s.check(), Ok(()));
}

/// Scenario 4: without NOHZ kicks nobody balances for the idle CPUs; with
/// them the idle, tick-stopped CPUs receive the work. Checked on a run.
#[test]
fn nohz_idle_balance_moves_work_to_tick_stopped_cpus() {
    let mut s = piled_on_cpu0(2, Features::mainline());
    s.run(20 * NSEC_PER_MSEC).unwrap();
    let busy: Vec<usize> = (0..8).filter(|&c| s.rqs[c].curr.is_some()).collect();
    assert_eq!(busy.len(), 2, "{:?}", spread(&s));
    assert!(s.fair.nohz.kicks >= 1);
    // The CPUs still idle are the tick-stopped ones.
    for c in 0..8 {
        assert_eq!(s.fair.nohz.idle_cpus_mask().test(CpuId(c as u32)), s.rqs[c].curr.is_none(), "cpu {c}");
    }
}
