//! cpuidle: the idle governor that picks an idle CPU's state and decides
//! whether its tick stops (drivers/cpuidle/cpuidle.c, governors/menu.c and
//! teo.c; `cpuidle_idle_call` in kernel/sched/idle.c). See README.md.
//!
//! The engine calls [`cpuidle_select`] when a CPU enters the idle loop (and
//! again after each idle tick that found no work), and [`cpuidle_reflect`]
//! when the CPU leaves the state it entered. Per-CPU data are fixed arrays
//! (no allocation, no hashing, no dynamic dispatch: the governor is an enum).

pub mod cluster;
pub mod menu;
pub mod teo;

use crate::ids::{Ns, NSEC_PER_USEC};
use crate::topology::IdleState;

/// `CPUIDLE_STATE_MAX` (include/linux/cpuidle.h): the most states a driver
/// may register; machine files are held to it.
pub const CPUIDLE_STATE_MAX: usize = 10;

/// `RESIDENCY_THRESHOLD_NS` (drivers/cpuidle/governors/gov.h, 15 us): below
/// it, menu does not look up the next timer and teo may skip it.
pub const RESIDENCY_THRESHOLD_NS: Ns = 15 * NSEC_PER_USEC;

/// The idle governor of every CPU (`/sys/devices/system/cpu/cpuidle/current_governor`).
///
/// schedlab's default is `avg_idle`, not the kernel's `menu`, until menu is
/// checked against a real kernel. Under menu the big.LITTLE presets used to
/// slow down far more than their sleep states should allow, because their
/// cluster states were entered per CPU; with cluster states coupled
/// (`cluster.rs`: in effect only while the whole cluster asks for one) most
/// of that is gone. hackbench, 1 group of 8 fds, 300 loops, seeds 1-5,
/// menu against avg_idle: pixel2 v4.14 0.0523 -> 0.0257 s (avg_idle
/// 0.0254); hikey960 eevdf mean 0.0351 -> 0.0262 s (0.0233); pixel2 eevdf
/// mean 0.0544 -> 0.0265 s (0.0200), before HRTICK entered the eevdf
/// profile; with it (seeds 0-4, `schedlab compare ... --idle-governor`):
/// hikey960 0.0279 s against 0.0237, pixel2 0.0242 against 0.0205. What is
/// left (+13% and +33% on the eevdf runs then, +18% and +18% now) comes
/// from futex wakeups that leave menu no timer, so it
/// trusts its history and still asks for the deep states, and those
/// figures have no kernel to referee them yet; changing the default would
/// move every published figure (test `tests/idle_governor_default.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IdleGovernor {
    /// `menu`: the next timer scaled by a correction factor, capped by the
    /// typical recent interval. The kernel's default on tick-based systems
    /// (rating 20 beats teo's 19).
    Menu,
    /// `teo` (timer events oriented): per-state bins of "hits" and
    /// "intercepts" decide how far below the sleep length to go.
    Teo,
    /// `avg_idle`: not a kernel governor but schedlab's rule before it had
    /// one, and its default (the deepest state whose target residency fits
    /// `rq->avg_idle`, and the tick always stops).
    #[default]
    AvgIdle,
}

impl IdleGovernor {
    /// The name as `current_governor` spells it.
    pub fn name(self) -> &'static str {
        match self {
            IdleGovernor::Menu => "menu",
            IdleGovernor::Teo => "teo",
            IdleGovernor::AvgIdle => "avg_idle",
        }
    }

    /// Parse a governor name.
    pub fn parse(s: &str) -> Option<IdleGovernor> {
        match s {
            "menu" => Some(IdleGovernor::Menu),
            "teo" => Some(IdleGovernor::Teo),
            "avg_idle" => Some(IdleGovernor::AvgIdle),
            _ => None,
        }
    }
}

/// The idle model of a machine (`[cpuidle]` keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuidleParams {
    /// The governor (`governor`, default `avg_idle`: see `IdleGovernor` for
    /// why menu, the kernel's default, is not yet schedlab's).
    pub governor: IdleGovernor,
    /// `cpuidle_governor_latency_req()`: the PM QoS CPU latency limit
    /// (`/dev/cpu_dma_latency`, `latency_req_us`), ns. States whose exit
    /// latency exceeds it are not chosen. Default: no request
    /// (`PM_QOS_CPU_LATENCY_DEFAULT_VALUE`, unlimited), `Ns::MAX`.
    pub latency_req_ns: Ns,
}

impl Default for CpuidleParams {
    fn default() -> Self {
        CpuidleParams { governor: IdleGovernor::AvgIdle, latency_req_ns: Ns::MAX }
    }
}

/// What `tick_nohz_get_sleep_length` and the tick state tell a governor at
/// selection time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SleepLength {
    /// Time to the CPU's next timer event with the tick stopped, ns
    /// (`Ns::MAX`: none).
    pub sleep_length_ns: Ns,
    /// `delta_tick`: time to the next event while the tick runs (the next
    /// tick or an earlier timer), ns.
    pub delta_tick_ns: Ns,
    /// `tick_nohz_tick_stopped()`: the tick is already stopped.
    pub tick_stopped: bool,
    /// `TICK_NSEC`, ns.
    pub tick_ns: Ns,
    /// `cpuidle_governor_latency_req(cpu)`, ns.
    pub latency_req_ns: Ns,
    /// `rq->avg_idle`, ns (read by the `avg_idle` rule only).
    pub avg_idle_ns: Ns,
}

/// A governor's verdict: the state to enter and whether the tick stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Index of the state, shallowest 0.
    pub idx: usize,
    /// `*stop_tick`.
    pub stop_tick: bool,
}

/// One CPU's `struct cpuidle_device` and its governor's per-CPU data.
#[derive(Clone, Debug, Default)]
pub struct CpuidleDevice {
    /// `dev->last_state_idx`: the state left last, not yet folded into the
    /// governor's statistics (`None` once folded: menu's `needs_update`).
    pub last_state_idx: Option<u8>,
    /// `dev->last_residency_ns`: time from entering that state to running
    /// again (exit latency included, as `cpuidle_enter_state` measures it).
    pub last_residency_ns: Ns,
    /// `tick_nohz_idle_got_tick()` for that wakeup: the tick woke the CPU.
    pub tick_wakeup: bool,
    /// When the current state was entered, ns.
    pub entered_at: Ns,
    /// menu's `struct menu_device`.
    pub menu: menu::MenuDevice,
    /// teo's `struct teo_cpu`.
    pub teo: teo::TeoCpu,
}

/// `cpuidle_select`: the governor picks a state of `states` for the CPU of
/// `dev`, after folding in what happened since the last selection.
pub fn cpuidle_select(gov: IdleGovernor, dev: &mut CpuidleDevice, states: &[IdleState], s: &SleepLength) -> Selection {
    let last = dev.last_state_idx.take().map(|i| (i as usize, dev.last_residency_ns, dev.tick_wakeup));
    match gov {
        IdleGovernor::Menu => menu::menu_select(&mut dev.menu, states, s, last),
        IdleGovernor::Teo => teo::teo_select(&mut dev.teo, states, s, last),
        IdleGovernor::AvgIdle => avg_idle_select(states, s.avg_idle_ns, s.latency_req_ns),
    }
}

/// The `avg_idle` rule: the deepest state whose target residency fits
/// `rq->avg_idle` (and whose exit latency fits the latency limit); the tick
/// stops. It reads nothing else: the engine calls it without computing
/// the sleep length or keeping the device's history.
// DEVIATION(kernel): no kernel governor reads avg_idle; this is schedlab's
// rule from before it modelled menu and teo.
pub fn avg_idle_select(states: &[IdleState], avg_idle_ns: Ns, latency_req_ns: Ns) -> Selection {
    let mut idx = 0;
    for (i, st) in states.iter().enumerate() {
        if st.exit_latency_ns > latency_req_ns {
            break;
        }
        if st.target_residency_ns <= avg_idle_ns {
            idx = i;
        }
    }
    Selection { idx, stop_tick: true }
}

/// `cpuidle_reflect`: the CPU left state `idx` after `residency_ns` (exit
/// latency included); `tick_wakeup` when its tick woke it. Both governors'
/// `reflect` only record this for the next selection.
pub fn cpuidle_reflect(dev: &mut CpuidleDevice, idx: u8, residency_ns: Ns, tick_wakeup: bool) {
    dev.last_state_idx = Some(idx);
    dev.last_residency_ns = residency_ns;
    dev.tick_wakeup = tick_wakeup;
}

#[cfg(test)]
mod tests;
