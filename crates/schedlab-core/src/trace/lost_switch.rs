//! Switches a real trace lost, recovered from the task column.
//!
//! Every ftrace line names, before its `[cpu]`, the task current on that
//! CPU when the event was recorded (`comm-pid`; `<idle>-0` for the idle
//! task), in interrupt context too. So when a line shows a task current on
//! a CPU where the last `sched_switch` put another one, a switch between
//! them was not recorded. Some kernels lose such switches wholesale: on this
//! project's development VM (a 6.18 guest kernel) no event of CPU 1's idle
//! task in process context reaches the buffer, neither its `sched_switch`
//! away from idle nor its `cpu_idle` exits, while CPU 0's do. Counting from
//! such a trace would miss every idle-to-task switch of that CPU.
//!
//! [`CurrentTracker`] keeps each CPU's current task as the switches and the
//! task columns say, and returns the switch to insert when a column
//! contradicts it, at that line's time (the latest it can have happened;
//! the earliest is the CPU's previous line). A task that left the CPU for
//! the idle task is taken to have slept (a runnable one would not have left
//! the CPU idle); one replaced by another task, to have slept as well (the
//! trace cannot tell a preemption here, and a later wakeup of a task taken
//! for runnable would be misread as a queue wait).

use crate::ids::CpuId;
use crate::trace::PrevState;

/// The comm and pid in a line's task column: `comm-pid`, `comm-pid (tgid)`
/// (trace-cmd's tgid column, `-o record-tgid`) or `comm pid` (perf script);
/// `<idle>-0` has pid 0. `None` when the column has no trailing pid.
pub(crate) fn head_task(task: &str) -> Option<(&str, u32)> {
    let mut t = task.trim_end();
    if t.ends_with(')') {
        t = t[..t.rfind('(')?].trim_end();
    }
    let start = t.rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    if start == 0 || start == t.len() {
        return None;
    }
    let sep = t.as_bytes()[start - 1];
    if sep != b'-' && !sep.is_ascii_whitespace() {
        return None;
    }
    Some((t[..start - 1].trim(), t[start..].parse().ok()?))
}

/// Whether a line of `event` names the CPU's current task in its task
/// column, as the kernel writes it and as schedlab's trace writer does too
/// (the writer heads its own `schedlab_*` events and `sched_process_exit`
/// with the task they concern, which need not be running, so those lines
/// are not read).
pub(crate) fn heads_current(event: &str) -> bool {
    matches!(
        event,
        "sched_switch"
            | "sched_waking"
            | "sched_wakeup"
            | "sched_wakeup_new"
            | "sched_migrate_task"
            | "cpu_idle"
            | "cpu_frequency"
            | "irq_handler_entry"
            | "irq_handler_exit"
            | "softirq_entry"
            | "softirq_exit"
    )
}

/// A switch the trace lost: on the line's CPU, from the task with pid
/// `prev` to the one with pid `next` (0 is the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LostSwitch {
    pub(crate) prev: u32,
    pub(crate) prev_state: PrevState,
    pub(crate) next: u32,
}

/// Pid of each CPU's current task as far as the trace has said (pids, not
/// task ids, so that a task column alone creates no task).
#[derive(Default)]
pub(crate) struct CurrentTracker {
    /// [`UNKNOWN`] before the CPU's first switch or line; 0 the idle task.
    curr: Vec<u32>,
}

/// No line has said yet which task runs on the CPU.
const UNKNOWN: u32 = u32::MAX;

impl CurrentTracker {
    fn slot(&mut self, cpu: CpuId) -> &mut u32 {
        if cpu.idx() >= self.curr.len() {
            self.curr.resize(cpu.idx() + 1, UNKNOWN);
        }
        &mut self.curr[cpu.idx()]
    }

    /// A line's task column says pid `head` is current on `cpu`: the switch
    /// that must have been lost, if the last known current task differs.
    pub(crate) fn observe(&mut self, cpu: CpuId, head: u32) -> Option<LostSwitch> {
        let known = std::mem::replace(self.slot(cpu), head);
        (known != UNKNOWN && known != head).then_some(LostSwitch {
            prev: known,
            prev_state: PrevState::Sleeping,
            next: head,
        })
    }

    /// A recorded `sched_switch` on `cpu` made pid `next` current.
    pub(crate) fn switched(&mut self, cpu: CpuId, next: u32) {
        *self.slot(cpu) = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_columns_of_every_format() {
        assert_eq!(head_task("wl-pipe-a-31778"), Some(("wl-pipe-a", 31778)));
        assert_eq!(head_task("<idle>-0"), Some(("<idle>", 0)));
        assert_eq!(head_task("bash-1234 (1230)"), Some(("bash", 1234)));
        assert_eq!(head_task("bash-1234 (  1230)"), Some(("bash", 1234)));
        assert_eq!(head_task("perf 4242"), Some(("perf", 4242)));
        assert_eq!(head_task("kworker/0:1"), None);
        assert_eq!(head_task("1234"), None);
        assert_eq!(head_task(""), None);
    }

    #[test]
    fn a_contradicting_column_yields_the_lost_switch() {
        let mut c = CurrentTracker::default();
        // Unknown until the CPU says: nothing is inferred.
        assert_eq!(c.observe(CpuId(1), 7), None);
        c.switched(CpuId(1), 0);
        assert_eq!(c.observe(CpuId(1), 0), None);
        // Idle per the last switch, pid 7 per this line: idle -> 7 was lost.
        assert_eq!(c.observe(CpuId(1), 7), Some(LostSwitch { prev: 0, prev_state: PrevState::Sleeping, next: 7 }));
        assert_eq!(c.observe(CpuId(1), 7), None);
        // 7 -> 8 lost; 7 is taken to have slept.
        assert_eq!(c.observe(CpuId(1), 8), Some(LostSwitch { prev: 7, prev_state: PrevState::Sleeping, next: 8 }));
        // Other CPUs are tracked apart.
        assert_eq!(c.observe(CpuId(0), 8), None);
    }
}
