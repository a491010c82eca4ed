//! Scheduler tunables and arithmetic that both the engine and the metrics
//! use, kept here so that neither imports the other: the metrics recompute
//! what the kernel computes from the event stream alone.

use crate::ids::Ns;

/// `sysctl_sched_migration_cost`: a task that ran within this is cache hot,
/// and `max_idle_balance_cost` starts here. Kernel default 0.5 ms.
pub const SYSCTL_SCHED_MIGRATION_COST_NS: Ns = 500_000;

/// `update_avg` (kernel/sched/core.c): `*avg += (sample - *avg) / 8`.
pub fn update_avg(avg: Ns, sample: Ns) -> Ns {
    let diff = sample as i64 - avg as i64;
    (avg as i64 + diff / 8).max(0) as Ns
}
