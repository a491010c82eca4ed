//! Hand-built states for the peer classes' decision tests.

use crate::engine::build::SimConfig;
use crate::engine::Sim;
use crate::features::Features;
use crate::ids::{CpuId, TaskId};
use crate::policy::ClassKind;
use crate::topology::{build_sched_domains, parse_machine, Machine};
use crate::workload::{Action, PrimaryMetric, Program, Script, StartKind, TaskSpec, Workload};

/// 2 LLCs x 2 cores x 2 threads, "split" numbering: core c has CPUs c and
/// c+4. LLC 0 = CPUs {0,1,4,5}; LLC 1 = CPUs {2,3,6,7}.
pub const SMT_2LLC: &str = r#"
[machine]
name = "test-smt-2llc"
[topology]
packages = 1
nodes_per_package = 1
llcs_per_node = 2
clusters_per_llc = 1
cores_per_cluster = 2
threads_per_core = 2
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
"#;

/// The SMT_2LLC machine.
pub fn machine() -> Machine {
    parse_machine(SMT_2LLC, "toml", "test").unwrap()
}

/// A `Sim` of `ntasks` idle tasks under `class`, all with prev CPU 0.
pub fn sim(class: ClassKind, ntasks: usize) -> Sim {
    let m = machine();
    let d = build_sched_domains(&m).unwrap();
    let tasks = (0..ntasks)
        .map(|i| TaskSpec {
            name: format!("t{i}"),
            program: Program::Script(Script::new(vec![Action::Compute(1_000_000)], 1)),
            nice: 0,
            allowed: None,
            footprint_kib: 0,
            start_ns: 0,
            start: StartKind::Wake { prev_cpu: 0 },
            kthread: false,
            preferred: None,
        })
        .collect();
    let w = Workload {
        name: "test".into(),
        tasks,
        chans: vec![],
        barriers: vec![],
        duration_ns: None,
        warmup_ns: 0,
        primary: PrimaryMetric::CompletionTime,
    };
    let cfg = SimConfig {
        features: Features::mainline(),
        class,
        seed: 1,
        trace: false,
        check_invariants: false,
        cpuset: None,
    };
    Sim::build(m, d, &w, cfg).unwrap()
}

/// Make `cpu` run task `t` (one runnable task).
pub fn busy(s: &mut Sim, cpu: u32, t: u32) {
    s.rqs[cpu as usize].curr = Some(TaskId(t));
    s.rqs[cpu as usize].nr_running = 1;
    s.ses[t as usize].on_rq = true;
    s.tasks[t as usize].cpu = CpuId(cpu);
    s.tasks[t as usize].state = crate::engine::task::TaskState::Runnable;
}
