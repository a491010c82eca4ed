//! Hand-built states for the peer classes' decision tests.

use crate::engine::build::SimConfig;
use crate::engine::Sim;
use crate::features::Features;
use crate::ids::{CpuId, TaskId};
use crate::policy::ClassKind;
use crate::testkit::{machine_from_toml, script_tasks, script_workload, sim_config, sim_with, SMT_2LLC};
use crate::topology::Machine;
use crate::workload::Action;

/// The [`SMT_2LLC`] machine: 2 LLCs x 2 cores x 2 threads, core c has CPUs c
/// and c+4; LLC 0 = CPUs {0,1,4,5}, LLC 1 = CPUs {2,3,6,7}.
pub fn machine() -> Machine {
    machine_from_toml(SMT_2LLC)
}

/// A `Sim` of `ntasks` idle tasks under `class`, all with prev CPU 0.
pub fn sim(class: ClassKind, ntasks: usize) -> Sim {
    let w = script_workload(script_tasks(ntasks, &[Action::Compute(1_000_000)], 1));
    sim_with(SMT_2LLC, &w, SimConfig { class, ..sim_config(Features::mainline()) })
}

/// Make `cpu` run task `t` (one runnable task). Unlike
/// [`crate::testkit::busy`], the task is marked on its runqueue and runnable,
/// and the CFS runnable count is left alone: the peer classes keep their
/// own queues.
pub fn busy(s: &mut Sim, cpu: u32, t: u32) {
    s.rqs[cpu as usize].curr = Some(TaskId(t));
    // A clock updated while idle is not current for a busy CPU.
    s.rqs[cpu as usize].clock_stamp = u64::MAX;
    s.rqs[cpu as usize].nr_running = 1;
    s.tasks[t as usize].on_rq = true;
    s.tasks[t as usize].cpu = CpuId(cpu);
    s.tasks[t as usize].state = crate::engine::task::TaskState::Runnable;
}
