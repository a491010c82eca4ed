//! Cluster idle states: requested per CPU, in effect only when the whole
//! cluster asks for one (PSCI platform-coordinated mode's last-man rule).
//!
//! On the big.LITTLE presets the cpuidle driver lists a cluster state
//! (hi3660's `cluster-sleep-*`, `arm,psci-suspend-param` 0x1010000: power
//! level 1) in every CPU's table next to its CPU states, and each CPU's
//! governor may pick it on its own (drivers/cpuidle/cpuidle-psci.c
//! `psci_enter_idle_state` passes the state's parameter to `CPU_SUSPEND`).
//! The firmware then coordinates: the cluster powers down only when the last
//! of its CPUs suspends with a cluster-level request, to the shallowest
//! cluster state any of them asked for; until then a requesting CPU is
//! powered down at CPU level only (PSCI 1.x "platform-coordinated" mode).
//! The first CPU to wake powers the cluster up and pays the cluster state's
//! exit latency; a sibling woken while it comes back waits for it.
//! In OS-initiated mode (cpuidle-psci-domain.c, genpd) the kernel does the
//! same bookkeeping itself: the last CPU's `pm_runtime_put_sync_suspend`
//! powers the domain off (`psci_pd_power_off` sets the domain state), the
//! first `pm_runtime_get_sync` powers it on.
//!
//! [`ClusterIdle`] is that bookkeeping for one cluster: counters only, so an
//! entry or exit costs O(1) (O(`CPUIDLE_STATE_MAX`) for the shallowest
//! request). The engine uses it for exit latencies (`engine/idle.rs`), the
//! energy meter for idle power (`metrics/energy.rs`), each from its own copy.

use super::CPUIDLE_STATE_MAX;
use crate::ids::Ns;
use crate::topology::IdleLevel;

/// The cluster-level requests of one cluster's idle CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterIdle {
    /// CPUs in the cluster.
    weight: u16,
    /// Idle CPUs of the cluster whose requested state is a cluster state.
    nr_requesting: u16,
    /// How many of them requested each state index.
    requested: [u16; CPUIDLE_STATE_MAX],
    /// When the cluster is powered up again after its last wakeup, ns: a
    /// sibling woken before then waits for it.
    up_at: Ns,
}

/// The deepest CPU-level state at or below `idx` of a table whose levels are
/// `levels` (state 0 is always a CPU state, so there is one).
pub fn deepest_cpu_state(levels: impl Iterator<Item = IdleLevel>, idx: usize) -> usize {
    levels.take(idx + 1).enumerate().filter(|&(_, l)| l == IdleLevel::Cpu).last().map_or(0, |(i, _)| i)
}

impl ClusterIdle {
    /// A cluster of `weight` CPUs, none requesting.
    pub fn new(weight: u16) -> Self {
        ClusterIdle { weight, ..ClusterIdle::default() }
    }

    /// The cluster is down: every CPU of it is idle with a cluster request.
    pub fn is_down(&self) -> bool {
        self.weight > 0 && self.nr_requesting == self.weight
    }

    /// The cluster state it is in while down: the shallowest requested (the
    /// firmware takes the minimum of the cluster-level requests); `None`
    /// while any CPU of the cluster runs or requests a CPU state.
    pub fn down_state(&self) -> Option<usize> {
        if !self.is_down() {
            return None;
        }
        self.requested.iter().position(|&n| n > 0)
    }

    /// A CPU of the cluster enters cluster state `idx`; true when it is the
    /// last one (the cluster goes down).
    pub fn cpu_enter(&mut self, idx: usize) -> bool {
        debug_assert!(self.nr_requesting < self.weight, "more requests than CPUs");
        self.requested[idx] += 1;
        self.nr_requesting += 1;
        self.is_down()
    }

    /// A CPU of the cluster leaves cluster state `idx`; true when the cluster
    /// was down (this CPU powers it up).
    pub fn cpu_exit(&mut self, idx: usize) -> bool {
        let was_down = self.is_down();
        debug_assert!(self.requested[idx] > 0, "exit from a state not entered");
        self.requested[idx] -= 1;
        self.nr_requesting -= 1;
        was_down
    }

    /// A CPU that requested state `idx` of `states` (a cluster state) wakes
    /// at `now`: it leaves its request and returns its exit latency. The
    /// first CPU out of a down cluster pays the cluster state's latency (and
    /// the cluster is up again that much later); any other pays the state's
    /// `cpu_exit_latency_ns` (default: its deepest CPU state's latency), or
    /// the rest of the cluster's power-up if longer.
    pub fn wake(&mut self, states: &[crate::topology::IdleState], idx: usize, now: Ns) -> Ns {
        let down = self.down_state();
        self.cpu_exit(idx);
        match down {
            Some(d) => {
                let exit = states[d].exit_latency_ns;
                self.up_at = now + exit;
                exit
            }
            None => {
                let cpu_exit = states[idx]
                    .cpu_exit_latency_ns
                    .unwrap_or_else(|| states[deepest_cpu_state(states.iter().map(|s| s.level), idx)].exit_latency_ns);
                cpu_exit.max(self.up_at.saturating_sub(now))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NSEC_PER_USEC;
    use crate::topology::IdleState;

    const US: Ns = NSEC_PER_USEC;

    /// hi3660's A53 table: WFI, cpu-sleep-0 (650 us), two cluster states
    /// (the second a made-up deeper one: 1600 and 2500 us).
    fn states() -> Vec<IdleState> {
        let st = |name: &str, exit_us: u64, level| IdleState {
            name: name.into(),
            exit_latency_ns: exit_us * US,
            actual_exit_latency_ns: exit_us * US,
            target_residency_ns: 2 * exit_us * US,
            power_mw: 0,
            level,
            cpu_exit_latency_ns: None,
        };
        vec![
            st("WFI", 1, IdleLevel::Cpu),
            st("cpu-sleep-0", 650, IdleLevel::Cpu),
            st("cluster-sleep-0", 1600, IdleLevel::Cluster),
            st("cluster-sleep-deep", 2500, IdleLevel::Cluster),
        ]
    }

    #[test]
    fn the_cluster_goes_down_only_with_its_last_cpu() {
        let mut c = ClusterIdle::new(4);
        for _ in 0..3 {
            assert!(!c.cpu_enter(2));
            assert_eq!(c.down_state(), None, "a sibling still runs");
        }
        assert!(c.cpu_enter(3), "the last man takes it down");
        // The shallowest request wins: cluster-sleep-0, not the deep one.
        assert_eq!(c.down_state(), Some(2));
        assert!(c.cpu_exit(3), "the first out powers it up");
        assert!(!c.is_down());
        assert!(!c.cpu_exit(2));
    }

    #[test]
    fn the_cluster_exit_latency_is_paid_only_when_the_cluster_was_down() {
        let s = states();
        let mut c = ClusterIdle::new(2);
        // One CPU requests cluster-sleep-0 while its sibling runs: it wakes
        // from cpu-sleep-0 (650 us).
        c.cpu_enter(2);
        assert_eq!(c.wake(&s, 2, 0), 650 * US);
        // Both request it: the first to wake pays 1600 us ...
        c.cpu_enter(2);
        c.cpu_enter(2);
        assert_eq!(c.wake(&s, 2, 10_000 * US), 1600 * US);
        // ... and its sibling, woken 100 us later, waits for the rest of the
        // cluster's power-up (1500 us > its own 650 us) ...
        assert_eq!(c.wake(&s, 2, 10_100 * US), 1500 * US);
        // ... but only its own 650 us once the cluster is long up.
        c.cpu_enter(2);
        assert_eq!(c.wake(&s, 2, 20_000 * US), 650 * US);
        // A cluster state that names its CPU part's exit latency pays that.
        let mut s = s;
        s[2].cpu_exit_latency_ns = Some(612 * US);
        c.cpu_enter(2);
        assert_eq!(c.wake(&s, 2, 30_000 * US), 612 * US);
    }

    #[test]
    fn the_cpu_fallback_is_the_deepest_cpu_state_below_the_request() {
        let levels = states().iter().map(|s| s.level).collect::<Vec<_>>();
        assert_eq!(deepest_cpu_state(levels.iter().copied(), 3), 1);
        assert_eq!(deepest_cpu_state(levels.iter().copied(), 1), 1);
        assert_eq!(deepest_cpu_state(levels.iter().copied(), 0), 0);
    }
}
