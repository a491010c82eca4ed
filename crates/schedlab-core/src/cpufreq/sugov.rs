//! The slow path of schedutil: drivers without `fast_switch` (cpufreq-dt,
//! intel_cpufreq in passive mode without it) switch frequency from a
//! per-policy kernel thread, `sugov:N` (N = the policy's first CPU), woken
//! through an irq_work by `sugov_deferred_update`. It runs `sugov_work`:
//! clear `work_in_progress`, then `__cpufreq_driver_target(next_freq)`,
//! which blocks for the driver's transition.
//!
//! Here the thread is a task of the run: it waits, computes
//! `sugov_work_us` (the driver call's CPU time), sleeps the transition
//! latency, and the new frequency takes effect when it comes back to wait.
//! DEVIATION(kernel): the kernel's thread is SCHED_DEADLINE (with
//! SCHED_FLAG_SUGOV, above every RT task); schedlab has no DL class and
//! gives it SCHED_FIFO priority 99, the highest RT priority.

use crate::engine::Sim;
use crate::ids::{CpuId, TaskId, NSEC_PER_USEC};
use crate::topology::{Governor, Machine};
use crate::workload::{Action, Program, SchedPolicy, Script, StartKind, TaskSpec, Workload};

/// `MAX_RT_PRIO - 1`: the highest SCHED_FIFO priority.
const SUGOV_RT_PRIORITY: u32 = 99;

/// Whether `machine` switches frequencies through `sugov:N` threads.
pub fn uses_kthreads(machine: &Machine) -> bool {
    machine.cpufreq.governor == Some(Governor::Schedutil) && !machine.cpufreq.fast_switch
}

/// `workload` with one `sugov:N` thread per frequency domain when the
/// machine uses the slow path, and the id of the first of them.
pub fn with_sugov_kthreads(workload: Workload, machine: &Machine) -> (Workload, Option<TaskId>) {
    if !uses_kthreads(machine) {
        return (workload, None);
    }
    let mut w = workload;
    let first = TaskId(w.tasks.len() as u32);
    let p = &machine.cpufreq;
    let mut actions = vec![Action::Wait, Action::Compute(p.sugov_work_ns)];
    if p.transition_latency_ns > 0 {
        actions.push(Action::Sleep(p.transition_latency_ns));
    }
    for fd in &machine.freq_domains {
        let cpu = fd.span.first().unwrap_or(CpuId(0));
        w.tasks.push(TaskSpec {
            name: format!("sugov:{}", cpu.0),
            program: Program::Script(Script::new(actions.clone(), 0)),
            nice: 0,
            // kthread_bind_mask(thread, policy->related_cpus).
            allowed: Some(fd.span),
            preferred: None,
            footprint_kib: 0,
            start_ns: 0,
            start: StartKind::Wake { prev_cpu: cpu.0 },
            kthread: true,
            policy: SchedPolicy::Fifo,
            rt_priority: SUGOV_RT_PRIORITY,
            noise: true,
            wakee_flips: 0,
            uclamp: Default::default(),
        });
    }
    (w, Some(first))
}

/// Default CPU time of one `sugov_work`, ns: an assumption of the order of
/// a driver call that programs a regulator and a clock through a mailbox
/// or I2C (tens of microseconds on the ARM boards of the presets); the
/// waiting part of the transition is the sleep, not CPU time.
pub const DEFAULT_SUGOV_WORK_NS: u64 = 20 * NSEC_PER_USEC;

#[test]
fn machine_defaults_agree() {
    let d = crate::topology::CpufreqParams::default();
    assert_eq!(d.sugov_work_ns, DEFAULT_SUGOV_WORK_NS);
    assert!(d.fast_switch);
}

impl Sim {
    /// The `sugov:N` thread of policy `fd`, if the run has them.
    #[inline]
    fn sugov_task(&self, fd: u32) -> Option<TaskId> {
        self.cpufreq.sugov_first.map(|f| TaskId(f.0 + fd))
    }

    /// The policy whose `sugov:N` thread `p` is, if it is one.
    #[inline]
    pub(crate) fn sugov_domain_of(&self, p: TaskId) -> Option<u32> {
        let f = self.cpufreq.sugov_first?;
        (p.0 >= f.0 && ((p.0 - f.0) as usize) < self.cpufreq.policies.len()).then(|| p.0 - f.0)
    }

    /// Whether `cpu`'s policy thread is queued on `cpu`.
    pub(crate) fn sugov_queued_on(&self, cpu: CpuId) -> bool {
        let fd = self.machine.cpus[cpu.idx()].freq_domain;
        self.sugov_task(fd).is_some_and(|p| {
            let t = &self.tasks[p.idx()];
            t.on_rq && t.cpu == cpu
        })
    }

    /// The irq_work of `sugov_deferred_update` ran on `cpu`: wake policy
    /// `fd`'s thread (or, without threads, switch after the latency).
    pub(crate) fn sugov_irq_work(&mut self, fd: u32, cpu: CpuId) -> crate::Result<()> {
        let Some(p) = self.sugov_task(fd) else {
            self.sugov_work(fd);
            return Ok(());
        };
        let t = &mut self.tasks[p.idx()];
        t.wake_tokens += 1;
        if t.state == crate::engine::task::TaskState::Blocked && t.pending == Some(Action::Wait) {
            self.try_to_wake_up(p, 0, cpu, None)?;
        }
        Ok(())
    }

    /// `sugov:N` came back to wait: its `__cpufreq_driver_target` is over.
    pub(crate) fn sugov_thread_waits(&mut self, fd: u32) {
        if self.cpufreq.policies[fd as usize].work_in_progress {
            self.sugov_work(fd);
        }
    }
}
