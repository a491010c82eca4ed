//! Decision tests for the energy model, `find_energy_efficient_cpu` and the
//! overutilized flags (seed idea 6), on a HiKey960-like machine built inline:
//! CPUs 0-3 little (capacity 462, OPPs of the A53 table), 4-7 big (1024, A73),
//! one MC domain and frequency domain per cluster, PKG on top. UTIL_EST is
//! off so the utilisations set by hand are the ones the code reads.

use crate::engine::Sim;
use crate::features::{Feat, Features};
use crate::ids::{CpuId, TaskId};
use crate::testkit::{busy, machine_from_toml, sim_from_toml, wake_ctx, HIKEY};
use crate::trace::PlacePath;

use super::eas::EnergyModel;

/// Mainline features plus `on`, with UTIL_EST off.
pub(super) fn feats(on: &[Feat]) -> Features {
    let mut f = Features::mainline();
    f.set(Feat::UTIL_EST, false);
    for &x in on {
        f.set(x, true);
    }
    f
}

fn set_util(s: &mut Sim, cpu: u32, util: u64) {
    s.rqs[cpu as usize].cfs_avg.util_avg = util;
}

/// Task `p` last ran on `prev` with utilisation `util` (counted in prev's util).
fn waking(s: &mut Sim, p: u32, prev: u32, util: u64) {
    let t = &mut s.tasks[p as usize];
    t.cpu = CpuId(prev);
    t.avg.util_avg = util;
    t.avg.last_update_time = 1;
    s.rqs[prev as usize].cfs_avg.util_avg += util;
}

const P: TaskId = TaskId(0);

/// The test HiKey960 under schedutil, where the kernel enables EAS.
fn hikey_schedutil() -> String {
    HIKEY.replace("[freq_domain]\nper = \"cluster\"", "[freq_domain]\nper = \"cluster\"\ngovernor = \"schedutil\"")
}

#[test]
fn eas_needs_schedutil_and_no_smt_as_sched_is_eas_possible() {
    assert!(sim_from_toml(&hikey_schedutil(), 4, feats(&[])).sched_energy_enabled(), "on by default there");
    assert!(!sim_from_toml(HIKEY, 4, feats(&[])).sched_energy_enabled(), "no governor: no schedutil");
    let perf = HIKEY
        .replace("[freq_domain]\nper = \"cluster\"", "[freq_domain]\nper = \"cluster\"\ngovernor = \"performance\"");
    assert!(!sim_from_toml(&perf, 4, feats(&[])).sched_energy_enabled(), "performance governor");
    let smt = hikey_schedutil()
        .replace("cores_per_cluster = 4\nthreads_per_core = 1", "cores_per_cluster = 2\nthreads_per_core = 2")
        .replace("cores = \"0-3\"", "cores = \"0-1\"")
        .replace("cores = \"4-7\"", "cores = \"2-3\"");
    assert!(!sim_from_toml(&smt, 4, feats(&[])).sched_energy_enabled(), "SMT");
}

#[test]
fn energy_model_states_costs_and_order() {
    let m = machine_from_toml(HIKEY);
    let em = EnergyModel::from_machine(&m).unwrap();
    // Kernel list order: the big domain (first CPU 4) first.
    assert_eq!(em.pds[0].span.first(), Some(CpuId(4)));
    let little = &em.pds[1];
    let perf: Vec<u64> = little.states.iter().map(|s| s.performance).collect();
    // 462 * f / 1844 MHz, truncated.
    assert_eq!(perf, vec![133, 250, 351, 428, 462]);
    // cost = 10 * power_uW / performance: 10 * 70_000 / 250.
    assert_eq!(little.states[1].cost, 2800);
    assert!(little.states.iter().all(|s| !s.inefficient));
}

#[test]
fn em_cpu_energy_hand_computed() {
    let m = machine_from_toml(HIKEY);
    let em = EnergyModel::from_machine(&m).unwrap();
    let little = &em.pds[1];
    // max_util 200 needs the 999 MHz state (performance 250, cost 2800);
    // 300 units of utilisation there cost 2800 * 300. The older form gives
    // the same: 70 mW * 1844/999 * 300/462 = 83.9 mW, times 10^4.
    assert_eq!(little.em_cpu_energy(200, 300, 462), 840_000);
    // max_util above the allowed capacity is clamped to it: top state.
    assert_eq!(little.em_cpu_energy(900, 100, 462), little.states[4].cost * 100);
    assert_eq!(little.em_cpu_energy(200, 0, 462), 0);
}

#[test]
fn no_power_figures_no_energy_model() {
    // Without OPP tables the parser gives one zero-power OPP: no EM.
    let stripped: String = HIKEY
        .lines()
        .filter(|l| !l.starts_with("  { freq_mhz") && !l.starts_with("opps = [") && *l != "]")
        .collect::<Vec<_>>()
        .join("\n");
    let m = machine_from_toml(&stripped);
    assert!(EnergyModel::from_machine(&m).is_none());
}

#[test]
fn eas_puts_a_small_task_on_a_little_cpu() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas]));
    waking(&mut s, 0, 4, 100);
    let mut c = wake_ctx(4);
    let got = s.eas_wake_cpu(P, CpuId(4), &mut c).unwrap();
    assert!(got.0 < 4, "{got:?}");
    assert_eq!(c.path, PlacePath::Capacity);
    assert!(c.scanned >= 8);
}

#[test]
fn eas_puts_a_task_that_does_not_fit_little_on_a_big_cpu() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas]));
    // 500 does not fit 462 with the 20% margin.
    waking(&mut s, 0, 0, 500);
    let mut c = wake_ctx(0);
    let got = s.eas_wake_cpu(P, CpuId(0), &mut c).unwrap();
    assert!(got.0 >= 4, "{got:?}");
}

#[test]
fn eas_is_off_when_overutilized_or_disabled() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas]));
    waking(&mut s, 0, 4, 100);
    // CPU 1 at 400 of 462 is over the 80% margin: the enqueue/tick check marks the root.
    set_util(&mut s, 1, 400);
    assert!(s.cpu_overutilized(CpuId(1)));
    s.check_update_overutilized_status(CpuId(1));
    assert!(s.is_rd_overutilized());
    assert_eq!(s.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)), None);
    // The full wakeup path then goes on with select_idle_sibling.
    let mut c = wake_ctx(4);
    let got = s.select_task_rq_fair(P, CpuId(4), crate::engine::core::WF_TTWU, &mut c);
    assert_ne!(c.path, PlacePath::Capacity);
    assert_eq!(got, CpuId(4));
    // Balancing the root recomputes the flag: cleared once util dropped.
    set_util(&mut s, 1, 100);
    let root = s.domains.chain(CpuId(1)).len() - 1;
    assert!(s.eas_balance_skip(CpuId(1), root));
    assert!(!s.is_rd_overutilized());
    // Without the feature EAS is never used and overutilized reads true.
    let mut off = feats(&[]);
    off.set(Feat::eas, false);
    let s2 = sim_from_toml(&hikey_schedutil(), 4, off);
    assert!(s2.is_rd_overutilized());
    assert_eq!(s2.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)), None);
}

#[test]
fn eas_only_on_asymmetric_machines() {
    let sym = HIKEY.replace("capacity = 462", "capacity = 1024");
    let s = sim_from_toml(&sym, 4, feats(&[Feat::eas]));
    assert!(!s.sched_energy_enabled());
}

#[test]
fn cluster_candidates_pick_the_fuller_cpu_at_the_same_opp() {
    // Little: CPU 1 at 50, CPU 2 at 150, CPUs 0 and 3 empty. The domain runs
    // at the 999 MHz state for CPU 2 (150 * 1.25 = 187 <= 250). Adding 100 to
    // CPU 0, 1 or 3 keeps that state; CPU 2 would need 1402 MHz.
    let setup = |f: Features| {
        let mut s = sim_from_toml(&hikey_schedutil(), 4, f);
        waking(&mut s, 0, 4, 100);
        set_util(&mut s, 1, 50);
        set_util(&mut s, 2, 150);
        s
    };
    let s = setup(feats(&[Feat::eas]));
    assert_eq!(s.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)), Some(CpuId(0)), "max spare capacity");
    let s = setup(feats(&[Feat::eas, Feat::eas_cluster_candidates]));
    assert_eq!(s.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)), Some(CpuId(1)), "fullest at the lowest OPP");
}

#[test]
fn sd_overutilized_cpu_marks_only_its_lowest_domain() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas, Feat::sd_overutilized]));
    waking(&mut s, 0, 4, 100);
    set_util(&mut s, 1, 400);
    s.check_update_overutilized_status(CpuId(1));
    let chain = s.domains.chain(CpuId(1)).to_vec();
    assert!(s.sd_is_overutilized(chain[0]));
    assert!(!s.sd_is_overutilized(chain[1]));
    // EAS searches the root (PKG) domain, which is not marked: still active.
    assert!(s.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)).is_some());
    // Balancing: the little MC balances, the root does not.
    assert!(!s.eas_balance_skip(CpuId(1), 0));
    assert!(s.eas_balance_skip(CpuId(1), 1));
}

#[test]
fn sd_overutilized_misfit_marks_the_parent() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas, Feat::sd_overutilized]));
    waking(&mut s, 0, 4, 100);
    // Task 1 (util 400) runs on little CPU 2 and does not fit it.
    busy(&mut s, 2, 1);
    s.tasks[1].avg.util_avg = 400;
    set_util(&mut s, 2, 400);
    // Nothing recorded yet: the status is taken at pick and tick.
    assert_eq!(s.misfit_task_load(CpuId(2)), 0);
    s.update_misfit_status(Some(TaskId(1)), CpuId(2)); // task_tick_fair
    assert!(s.misfit_task_load(CpuId(2)) > 0);
    s.check_update_overutilized_status(CpuId(2));
    let chain = s.domains.chain(CpuId(2)).to_vec();
    assert!(s.sd_is_overutilized(chain[1]));
    assert_eq!(s.eas_wake_cpu(P, CpuId(4), &mut wake_ctx(4)), None);
    assert!(!s.eas_balance_skip(CpuId(2), 1));
}

#[test]
fn sd_overutilized_cluster_over_80_percent_marks_the_parent() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas, Feat::sd_overutilized]));
    // 4 x 370 = 1480 of 1848: over 80%; the machine (5944) is under 50%.
    for c in 0..4 {
        set_util(&mut s, c, 370);
    }
    let root = s.domains.chain(CpuId(0))[1];
    assert!(s.sd_overutilized_now(root));
    for c in 0..4 {
        set_util(&mut s, c, 300);
    }
    assert!(!s.sd_overutilized_now(root));
}

#[test]
fn sd_overutilized_half_the_system_marks_the_root() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas, Feat::sd_overutilized]));
    // Big CPUs at 750 each fit (750 < 819) and so does the big cluster,
    // but 3000 > 50% of 5944.
    for c in 4..8 {
        set_util(&mut s, c, 750);
    }
    let chain = s.domains.chain(CpuId(4)).to_vec();
    assert!(!s.sd_overutilized_now(chain[0]));
    assert!(s.sd_overutilized_now(chain[1]));
    // The balance hook sets it; the root is then balanced and EAS is off.
    assert!(!s.eas_balance_skip(CpuId(4), 1));
    assert!(s.eas_overutilized(CpuId(4), CpuId(4)));
    for c in 4..8 {
        set_util(&mut s, c, 600);
    }
    assert!(s.eas_balance_skip(CpuId(4), 1));
    assert!(!s.eas_overutilized(CpuId(4), CpuId(4)));
}

#[test]
fn misfit_status_is_what_pick_or_tick_recorded() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas]));
    busy(&mut s, 2, 1);
    s.tasks[1].avg.util_avg = 100;
    s.update_misfit_status(Some(TaskId(1)), CpuId(2));
    assert_eq!(s.misfit_task_load(CpuId(2)), 0);
    // The task grows past the little CPU: the balancer does not see it
    // until the next tick records it.
    s.tasks[1].avg.util_avg = 400;
    assert_eq!(s.misfit_task_load(CpuId(2)), 0);
    s.update_misfit_status(Some(TaskId(1)), CpuId(2));
    assert!(s.misfit_task_load(CpuId(2)) > 0);
    // Idle: cleared.
    s.update_misfit_status(None, CpuId(2));
    assert_eq!(s.misfit_task_load(CpuId(2)), 0);
}

#[test]
fn a_task_on_the_biggest_cpu_it_may_use_is_not_misfit() {
    let mut s = sim_from_toml(&hikey_schedutil(), 4, feats(&[Feat::eas]));
    busy(&mut s, 2, 1);
    s.tasks[1].avg.util_avg = 400;
    s.tasks[1].max_allowed_capacity = s.machine.capacity_orig(CpuId(2));
    s.update_misfit_status(Some(TaskId(1)), CpuId(2));
    assert_eq!(s.misfit_task_load(CpuId(2)), 0);
}
