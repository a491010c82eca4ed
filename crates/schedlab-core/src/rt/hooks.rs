//! The RT class hooks that only decide whether to queue a push or a pull
//! (a balance callback run after the current scheduling operation) and
//! whether to reschedule: `prio_changed_rt`, `switched_from_rt`,
//! `switched_to_rt` (rt.c). The engine runs the queued push with
//! [`crate::rt::push_rt_task`] and the pull with [`crate::rt::pull_rt_task`].

/// What a hook asks the engine to do next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookAction {
    /// Queue `pull_rt_task` for this CPU (`rt_queue_pull_task`).
    pub queue_pull: bool,
    /// Queue `push_rt_tasks` for this CPU (`rt_queue_push_tasks`; it does
    /// nothing if the rq has no pushable task).
    pub queue_push: bool,
    /// `resched_curr(rq)`.
    pub resched: bool,
}

/// `prio_changed_rt`: task `p`, queued on this rq unless `!queued`, went
/// from `oldprio` to `prio`. If it is the running task, a drop in priority
/// queues a pull and a better queued task forces a reschedule; a waiting
/// task that now beats the running one (`donor_prio`) forces a reschedule.
/// `highest_prio_curr` is the rq's value after the change.
pub fn prio_changed_rt(
    queued: bool,
    is_running: bool,
    oldprio: i32,
    prio: i32,
    highest_prio_curr: i32,
    donor_prio: i32,
) -> HookAction {
    if !queued {
        return HookAction::default();
    }
    if is_running {
        return HookAction { queue_pull: oldprio < prio, queue_push: false, resched: prio > highest_prio_curr };
    }
    HookAction { resched: prio < donor_prio, ..HookAction::default() }
}

/// `switched_from_rt`: task `p` left the RT class. If it was the last RT
/// task queued here (`rt_nr_running` is now 0), queue a pull: other CPUs'
/// waiting RT tasks may run here now.
pub fn switched_from_rt(queued: bool, rt_nr_running: u32) -> HookAction {
    HookAction { queue_pull: queued && rt_nr_running == 0, ..HookAction::default() }
}

/// `switched_to_rt`: task `p` (kernel `prio`) joined the RT class. If it
/// is running nothing happens; if it waits, push when it can move and the
/// rq is overloaded, and reschedule when it beats the running task.
pub fn switched_to_rt(
    is_running: bool,
    queued: bool,
    prio: i32,
    nr_cpus_allowed: u32,
    rq_overloaded: bool,
    donor_prio: i32,
) -> HookAction {
    if is_running || !queued {
        return HookAction::default();
    }
    HookAction { queue_pull: false, queue_push: nr_cpus_allowed > 1 && rq_overloaded, resched: prio < donor_prio }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::prio::DEFAULT_PRIO;

    #[test]
    fn running_task_losing_priority_queues_pull() {
        assert!(prio_changed_rt(true, true, 10, 50, 50, 50).queue_pull);
    }

    #[test]
    fn running_task_below_a_queued_one_reschedules() {
        assert!(prio_changed_rt(true, true, 10, 50, 30, 50).resched);
    }

    #[test]
    fn waiting_task_beating_curr_reschedules() {
        let a = prio_changed_rt(true, false, 60, 20, 20, 40);
        assert_eq!(a, HookAction { queue_pull: false, queue_push: false, resched: true });
    }

    #[test]
    fn dequeued_task_changes_nothing() {
        assert_eq!(prio_changed_rt(false, false, 60, 20, 20, 40), HookAction::default());
    }

    #[test]
    fn last_rt_task_leaving_queues_pull() {
        assert!(switched_from_rt(true, 0).queue_pull);
        assert!(!switched_from_rt(true, 1).queue_pull);
    }

    #[test]
    fn waiting_task_switched_to_rt_pushes_and_preempts_fair() {
        let a = switched_to_rt(false, true, 50, 4, true, DEFAULT_PRIO);
        assert_eq!(a, HookAction { queue_pull: false, queue_push: true, resched: true });
    }

    #[test]
    fn running_task_switched_to_rt_changes_nothing() {
        assert_eq!(switched_to_rt(true, true, 50, 4, true, 50), HookAction::default());
    }
}
