//! `sched_setscheduler` / `sched_setattr` on the running task itself: the
//! core part of `__sched_setscheduler` (kernel/sched/core.c), which takes the
//! task off its class, changes its policy, priority and class, puts it back,
//! and lets the classes react through `switched_from` / `switched_to` or
//! `prio_changed` (`check_class_changed`).

use super::Sim;
use crate::class::SchedClass;
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, TaskId};
use crate::workload::SchedPolicy;

impl Sim {
    /// `p`, running on `cpu`, sets its own policy: `priority` is the RT
    /// priority (1..=99) for SCHED_FIFO/RR and the nice value for the
    /// others (as rt-app's phases and `sched_setattr` carry it). Returns
    /// whether `cpu` must reschedule. Nothing happens when nothing changes.
    #[inline(never)]
    pub(super) fn sched_setscheduler(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        policy: SchedPolicy,
        priority: i32,
    ) -> crate::Result<bool> {
        let t = &self.tasks[p.idx()];
        let (rt_priority, nice) = if policy.is_rt() { (priority as u32, t.nice) } else { (0, priority) };
        if (t.policy, t.rt_priority, t.nice) == (policy, rt_priority, nice) {
            return Ok(false);
        }
        if self.normal_class.is_peer() {
            return Err(crate::SchedlabError::spec(
                "workload",
                "sched_setscheduler",
                format!(
                    "a fair-class run: a task changing its policy mid-run is not modelled under the {} class",
                    self.normal_class.name()
                ),
            ));
        }
        debug_assert_eq!(self.rqs[cpu.idx()].curr, Some(p), "only the running task changes its own policy");
        let (prev_class, oldprio) = (t.class, t.prio);
        // queued and running: dequeue_task(DEQUEUE_SAVE | DEQUEUE_MOVE), put_prev_task.
        let done = self.dequeue_task(cpu, p, DequeueFlags::SAVE | DequeueFlags::MOVE);
        debug_assert!(done, "a save-dequeue is never delayed");
        self.class_put_prev_task(cpu, p);
        // __setscheduler_params, __setscheduler_prio.
        let class = SchedClass::of(policy, self.normal_class);
        let t = &mut self.tasks[p.idx()];
        (t.policy, t.rt_priority, t.nice) = (policy, rt_priority, nice);
        t.prio = crate::rt::class::task_prio(policy, rt_priority, nice);
        t.class = class;
        let normal = self.normal_class;
        self.nr_off_normal = self.nr_off_normal + (class != normal) as u32 - (prev_class != normal) as u32;
        // __setscheduler_uclamp: an unrequested minimum follows the policy.
        t.uclamp.policy_changed(policy.is_rt());
        if class == SchedClass::Fair {
            self.set_load_weight_fair(p);
        }
        // enqueue_task(ENQUEUE_RESTORE | ENQUEUE_MOVE), set_next_task.
        self.enqueue_task(cpu, p, EnqueueFlags::RESTORE);
        self.class_set_next_task(cpu, p);
        self.rt_note_curr(cpu, Some(p));
        let prio = self.tasks[p.idx()].prio;
        self.emit(crate::trace::Event::SetScheduler { task: p, policy, prio });
        Ok(self.check_class_changed(cpu, p, prev_class, oldprio))
    }

    /// `check_class_changed`: the old class lets go and the new one takes
    /// the task, or its class sees the priority change. Whether to reschedule.
    fn check_class_changed(&mut self, cpu: CpuId, p: TaskId, prev_class: SchedClass, oldprio: i32) -> bool {
        if self.task_class(p) != prev_class {
            let pulled = self.class_switched_from(cpu, p, prev_class);
            self.class_switched_to(cpu, p) || pulled
        } else if self.tasks[p.idx()].prio != oldprio {
            self.class_prio_changed(cpu, p, oldprio)
        } else {
            false
        }
    }
}
