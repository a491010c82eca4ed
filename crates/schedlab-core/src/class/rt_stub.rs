//! The RT class's hooks until its runqueue is wired: no task can be in the
//! RT class yet (`Sim::build` refuses SCHED_FIFO/SCHED_RR tasks), so every
//! hook has nothing to do.

use crate::engine::Sim;
use crate::fair::eevdf::{DequeueFlags, EnqueueFlags};
use crate::ids::{CpuId, TaskId};

impl Sim {
    pub(crate) fn enqueue_task_rt(&mut self, _cpu: CpuId, _p: TaskId, _flags: EnqueueFlags) {}
    pub(crate) fn dequeue_task_rt(&mut self, _cpu: CpuId, _p: TaskId, _flags: DequeueFlags) -> bool {
        true
    }
    pub(crate) fn select_task_rq_rt(&mut self, _p: TaskId, prev: CpuId, _wf: u32, _this: CpuId) -> CpuId {
        prev
    }
    pub(crate) fn task_fork_rt(&mut self, _p: TaskId) {}
    pub(crate) fn task_woken_rt(&mut self, _cpu: CpuId, _p: TaskId) {}
    pub(crate) fn wakeup_preempt_rt(&mut self, _cpu: CpuId, _curr: TaskId, _p: TaskId) -> bool {
        false
    }
    pub(crate) fn update_curr_rt(&mut self, _cpu: CpuId, _curr: TaskId) -> bool {
        false
    }
    pub(crate) fn task_tick_rt(&mut self, _cpu: CpuId, _curr: TaskId, _resched: bool) -> bool {
        false
    }
    pub(crate) fn put_prev_task_rt(&mut self, _cpu: CpuId, _prev: TaskId) {}
    pub(crate) fn balance_rt(&mut self, _cpu: CpuId) {}
    pub(crate) fn rt_runnable(&self, _cpu: CpuId) -> bool {
        false
    }
    pub(crate) fn pick_task_rt(&mut self, _cpu: CpuId) -> Option<TaskId> {
        None
    }
    pub(crate) fn set_next_task_rt(&mut self, _cpu: CpuId, _next: TaskId) {}
}
