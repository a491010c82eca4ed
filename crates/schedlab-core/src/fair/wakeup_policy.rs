//! What the scheduling policies (SCHED_IDLE, SCHED_BATCH) decide in a
//! wakeup preemption before the runqueue discipline is asked
//! (`check_preempt_wakeup_fair` in fair.c).

/// The scheduling policies a wakeup preemption looks at (`se_is_idle`,
/// `p->policy == SCHED_BATCH`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeupPolicies {
    /// The running task has SCHED_IDLE.
    pub curr_idle: bool,
    /// The woken task has SCHED_IDLE.
    pub woken_idle: bool,
    /// The woken task has SCHED_BATCH.
    pub woken_batch: bool,
}

impl WakeupPolicies {
    /// The EEVDF-era rule (v6.11+, 2024's "sched/fair: Make SCHED_IDLE entity
    /// be preempted in strict hierarchy"): an idle entity is preempted by a
    /// non-idle one, never the other way; a SCHED_BATCH wakee preempts
    /// nothing else; two SCHED_IDLE tasks compare as normal ones (`None`:
    /// the discipline decides).
    ///
    /// DEVIATION(kernel): v6.6-v6.10 let no SCHED_IDLE wakee preempt even
    /// another SCHED_IDLE task; the v6.6 profile follows v6.11 here.
    pub fn decide_eevdf(self) -> Option<bool> {
        if self.curr_idle && !self.woken_idle {
            return Some(true);
        }
        if self.curr_idle != self.woken_idle || self.woken_batch {
            return Some(false);
        }
        None
    }
}
