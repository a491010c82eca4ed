//! The reference `avg_idle_error_us` compares a CPU's `avg_idle` with: an
//! `avg_idle` fed with every true idle period seen in the switches (see the
//! registry's description of the metric).

use crate::ids::Ns;
use crate::tunables::{update_avg, SYSCTL_SCHED_MIGRATION_COST_NS};

/// No idle period under way (the CPU is busy, or its idle period began
/// before the stream).
const NONE: Ns = Ns::MAX;

/// Per CPU: an `avg_idle` fed with every true idle period.
#[derive(Clone, Copy, Debug)]
pub(super) struct IdleRef {
    /// When the current idle period began (a switch to idle), or [`NONE`].
    idle_since: Ns,
    /// EWMA (1/8) of the true idle durations, capped like `avg_idle`, ns.
    avg_ns: Ns,
    /// The cap last reported by an `AvgIdle` event, ns.
    max_ns: Ns,
}

impl IdleRef {
    /// The kernel's initial `avg_idle` and cap: `2 * sysctl_sched_migration_cost`.
    pub(super) const NEW: IdleRef = IdleRef {
        idle_since: NONE,
        avg_ns: 2 * SYSCTL_SCHED_MIGRATION_COST_NS,
        max_ns: 2 * SYSCTL_SCHED_MIGRATION_COST_NS,
    };

    /// A CPU goes idle or leaves idle: feed the finished idle period, if its
    /// start was seen and it lasted (the kernel's `update_avg` and cap). A
    /// switch that stays busy (or idle) is no boundary.
    pub(super) fn boundary(&mut self, t: Ns, was_busy: bool, now_busy: bool) {
        if was_busy && !now_busy {
            self.idle_since = t;
        } else if !was_busy && now_busy {
            if self.idle_since != NONE && t > self.idle_since {
                self.avg_ns = update_avg(self.avg_ns, t - self.idle_since).min(self.max_ns);
            }
            self.idle_since = NONE;
        }
    }

    /// The CPU read `avg_idle_ns` with cap `max_ns`: its distance from the
    /// reference, ns (the cap is kept for the reference's next update).
    pub(super) fn error_of(&mut self, avg_idle_ns: Ns, max_ns: Ns) -> Ns {
        self.max_ns = max_ns;
        avg_idle_ns.abs_diff(self.avg_ns)
    }
}
