//! Cluster idle states in the idle loop: a CPU's cluster-state request takes
//! effect only with its whole cluster (`cpuidle/cluster.rs`).

use crate::features::Features;
use crate::ids::{CpuId, Ns, NSEC_PER_MSEC, NSEC_PER_USEC};
use crate::testkit::sim_from_toml;

const US: Ns = NSEC_PER_USEC;

/// One cluster of two CPUs with hi3660's A53 states: WFI, cpu-sleep-0
/// (exit 650 us), cluster-sleep-0 (1600 us, cluster level). The `avg_idle`
/// rule picks cluster-sleep-0 once `avg_idle` covers its 3500 us residency.
fn cluster_sim() -> crate::engine::Sim {
    let toml = format!(
        "{}idle_states = [\n  {{ name = \"WFI\", exit_latency_us = 1, target_residency_us = 1 }},\n  \
         {{ name = \"cpu-sleep-0\", exit_latency_us = 650, target_residency_us = 1500 }},\n  \
         {{ name = \"cluster-sleep-0\", exit_latency_us = 1600, target_residency_us = 3500, level = \"cluster\" }},\n]\n",
        crate::uniform_machine_toml!("one-cluster", 1, 1, 2, 1)
    );
    let mut s = sim_from_toml(&toml, 1, Features::mainline());
    for c in 0..2 {
        s.rqs[c].avg_idle = 10 * NSEC_PER_MSEC;
    }
    s.now = 100 * NSEC_PER_MSEC;
    s
}

#[test]
fn a_cluster_state_is_not_entered_while_a_sibling_runs() {
    let mut s = cluster_sim();
    // CPU 0 runs; CPU 1 goes idle and asks for the cluster state.
    s.enter_idle(CpuId(1));
    assert_eq!(s.rqs[1].idle_state, Some(2), "the governor's request is traced as is");
    assert!(!s.cluster_idle[0].is_down(), "CPU 0 still runs");
    // Woken, CPU 1 pays cpu-sleep-0's exit latency, not the cluster's.
    let now = s.now;
    s.exit_idle(CpuId(1));
    assert_eq!(s.rqs[1].ready_at, now + 650 * US);
}

#[test]
fn the_cluster_exit_latency_is_paid_only_when_the_cluster_was_down() {
    let mut s = cluster_sim();
    s.enter_idle(CpuId(0));
    assert!(!s.cluster_idle[0].is_down());
    s.enter_idle(CpuId(1));
    assert!(s.cluster_idle[0].is_down(), "the last CPU takes the cluster down");
    let now = s.now;
    // The first CPU out powers the cluster up: 1600 us.
    s.exit_idle(CpuId(1));
    assert_eq!(s.rqs[1].ready_at, now + 1600 * US);
    assert!(!s.cluster_idle[0].is_down());
    // Its sibling, woken 100 us later, waits for the rest of the power-up
    // (1500 us, longer than its own 650 us).
    s.now += 100 * US;
    s.exit_idle(CpuId(0));
    assert_eq!(s.rqs[0].ready_at, now + 1600 * US);
    // Later, with CPU 1 running, CPU 0's request leaves the cluster up.
    s.now += 10 * NSEC_PER_MSEC;
    s.enter_idle(CpuId(0));
    let now = s.now;
    s.exit_idle(CpuId(0));
    assert_eq!(s.rqs[0].ready_at, now + 650 * US);
}

#[test]
fn a_second_selection_without_a_wakeup_replaces_the_request() {
    let mut s = cluster_sim();
    s.enter_idle(CpuId(0));
    s.enter_idle(CpuId(1));
    // The idle loop selects again on CPU 1 (as after an idle tick): still
    // one request per CPU, the cluster still down.
    s.cpuidle_idle_call(CpuId(1));
    assert!(s.cluster_idle[0].is_down());
    let now = s.now;
    s.exit_idle(CpuId(0));
    assert_eq!(s.rqs[0].ready_at, now + 1600 * US);
    s.exit_idle(CpuId(1));
    assert!(!s.cluster_idle[0].is_down());
    // Both requests are gone: a new pair takes the cluster down again.
    s.now += 10 * NSEC_PER_MSEC;
    s.enter_idle(CpuId(0));
    assert!(!s.cluster_idle[0].is_down());
    s.enter_idle(CpuId(1));
    assert!(s.cluster_idle[0].is_down());
}

/// A VM's halt: the driver declares 1 us, a wakeup takes 20 us.
fn vm_sim(actual: &str) -> crate::engine::Sim {
    let toml = format!(
        "{}idle_states = [\n  {{ name = \"POLL\", exit_latency_us = 0, target_residency_us = 0 }},\n  \
         {{ name = \"haltpoll idle\", exit_latency_us = 1, target_residency_us = 1{actual} }},\n]\n",
        crate::uniform_machine_toml!("vm", 1, 1, 2, 1)
    );
    let mut s = sim_from_toml(&toml, 1, Features::mainline());
    s.rqs[1].avg_idle = 10 * NSEC_PER_MSEC;
    s.now = 100 * NSEC_PER_MSEC;
    s
}

#[test]
fn a_wakeup_pays_the_measured_exit_latency_and_the_governor_reads_the_declared_one() {
    for (actual, exit_us) in [("", 1), (", actual_exit_latency_us = 20", 20)] {
        let mut s = vm_sim(actual);
        s.enter_idle(CpuId(1));
        // The governor's choice is the same either way (it reads 1 us).
        assert_eq!(s.rqs[1].idle_state, Some(1), "{actual}");
        let now = s.now;
        s.exit_idle(CpuId(1));
        assert_eq!(s.rqs[1].ready_at, now + exit_us * US, "{actual}");
    }
}
