//! Scaffolding for tests and examples, not a stable API.
//!
//! The unit tests next to the code and the scenario tests in `tests/` build
//! the same things again and again: a `Sim` on a small inline machine with a
//! few scripted tasks, a CPU made busy by hand, a `RunSpec` on a preset. They
//! live here once. Everything panics on bad input, as a test wants: a broken
//! inline machine is a broken test, not a user error.

use crate::api::{MachineSource, RunOptions, RunResult, RunSpec};
use crate::engine::build::SimConfig;
#[cfg(test)]
use crate::engine::Sim;
use crate::fair::wakeup::WakeCtx;
use crate::features::Features;
use crate::ids::CpuId;
#[cfg(test)]
use crate::ids::TaskId;
use crate::policy::ClassKind;
#[cfg(test)]
use crate::topology::build_sched_domains;
use crate::topology::{parse_machine, Machine};
use crate::trace::PlacePath;
use crate::workload::{Action, PrimaryMetric, Program, Script, StartKind, TaskSpec, Workload};

/// The TOML text of a symmetric one-package, one-node machine named `$name`:
/// `$llcs` LLCs x `$clusters` clusters x `$cores` cores x `$threads`
/// threads, one core type (capacity 1024, 2000 MHz) and every other key at
/// its default (HZ 250, SMT speed 60% with SMT, one C1 idle state). The
/// `[[core_type]]` table comes last, so a test may append keys to it (e.g.
/// `idle_states`). CPUs are numbered "split": thread t of core c is CPU
/// c + t x (number of cores). Expands to a `&'static str` literal, so it can
/// initialise a `const`.
#[doc(hidden)]
#[macro_export]
macro_rules! uniform_machine_toml {
    ($name:literal, $llcs:literal, $clusters:literal, $cores:literal, $threads:literal) => {
        concat!(
            "\n[machine]\nname = \"",
            $name,
            "\"\n[topology]\npackages = 1\nnodes_per_package = 1\nllcs_per_node = ",
            $llcs,
            "\nclusters_per_llc = ",
            $clusters,
            "\ncores_per_cluster = ",
            $cores,
            "\nthreads_per_core = ",
            $threads,
            "\n[[core_type]]\nname = \"t\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 2000\n"
        )
    };
}

/// 2 LLCs x 2 cores x 2 threads: core c has CPUs c and c+4. LLC 0 = cores
/// 0,1 = CPUs {0,1,4,5}; LLC 1 = CPUs {2,3,6,7}.
pub const SMT_2LLC: &str = uniform_machine_toml!("test-smt-2llc", 2, 1, 2, 2);

/// 8 cores, no SMT, one LLC with two clusters of 4: {0-3} and {4-7}.
pub const CLUSTERS: &str = uniform_machine_toml!("test-clusters", 1, 2, 4, 1);

/// 2 LLCs x 4 cores, no SMT: LLCs {0-3} and {4-7}.
pub const TWO_LLC: &str = uniform_machine_toml!("test-2llc", 2, 1, 4, 1);

/// A HiKey960-like big.LITTLE machine: CPUs 0-3 little (capacity 462, OPPs
/// of the A53 table), 4-7 big (1024, A73), one LLC and one frequency domain
/// per cluster, so one MC domain per cluster with PKG on top.
pub const HIKEY: &str = r#"
[machine]
name = "test-hikey"
[topology]
packages = 1
nodes_per_package = 1
llcs_per_node = 2
clusters_per_llc = 1
cores_per_cluster = 4
threads_per_core = 1
[[core_type]]
name = "little"
cores = "0-3"
capacity = 462
nominal_freq_mhz = 1844
opps = [
  { freq_mhz = 533, power_mw = 29 },
  { freq_mhz = 999, power_mw = 70 },
  { freq_mhz = 1402, power_mw = 125 },
  { freq_mhz = 1709, power_mw = 188 },
  { freq_mhz = 1844, power_mw = 245 },
]
[[core_type]]
name = "big"
cores = "4-7"
capacity = 1024
nominal_freq_mhz = 2362
opps = [
  { freq_mhz = 903, power_mw = 243 },
  { freq_mhz = 1421, power_mw = 500 },
  { freq_mhz = 1805, power_mw = 804 },
  { freq_mhz = 2112, power_mw = 1162 },
  { freq_mhz = 2362, power_mw = 1572 },
]
[freq_domain]
per = "cluster"
"#;

/// Parse an inline TOML machine (origin `"test"`).
pub fn machine_from_toml(toml: &str) -> Machine {
    parse_machine(toml, "toml", "test").unwrap()
}

/// `n` tasks `t0..`, each running `actions` `repeat` times (0 = forever):
/// nice 0, any CPU, no preference, no footprint, woken at time 0 with prev
/// CPU 0.
pub fn script_tasks(n: usize, actions: &[Action], repeat: u64) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| TaskSpec {
            name: format!("t{i}"),
            program: Program::Script(Script::new(actions.to_vec(), repeat)),
            nice: 0,
            allowed: None,
            preferred: None,
            footprint_kib: 0,
            start_ns: 0,
            start: StartKind::Wake { prev_cpu: 0 },
            kthread: false,
            policy: crate::workload::SchedPolicy::Normal,
            rt_priority: 0,
            noise: false,
            wakee_flips: 0,
            uclamp: Default::default(),
        })
        .collect()
}

/// A workload named `"test"` of `tasks`, without channels or barriers, that
/// runs until every task has exited.
pub fn script_workload(tasks: Vec<TaskSpec>) -> Workload {
    Workload { name: "test".into(), ..Workload::of(tasks, PrimaryMetric::CompletionTime) }
}

/// The fair class with `features`, seed 1, no trace, no invariant checks.
pub fn sim_config(features: Features) -> SimConfig {
    SimConfig { features, class: ClassKind::Fair, seed: 1, trace: false, check_invariants: false, cpuset: None }
}

/// A `Sim` of workload `w` on the inline TOML machine under `cfg`.
#[cfg(test)]
pub(crate) fn sim_with(toml: &str, w: &Workload, cfg: SimConfig) -> Sim {
    let m = machine_from_toml(toml);
    let d = build_sched_domains(&m).unwrap();
    Sim::build(m, d, w, cfg).unwrap()
}

/// A `Sim` of `ntasks` tasks of 1 ms of work each (not yet woken, prev CPU
/// 0) on the inline TOML machine, under [`sim_config`]`(features)`.
#[cfg(test)]
pub(crate) fn sim_from_toml(toml: &str, ntasks: usize, features: Features) -> Sim {
    let w = script_workload(script_tasks(ntasks, &[Action::Compute(1_000_000)], 1));
    sim_with(toml, &w, sim_config(features))
}

/// Make `cpu` busy running task `task` as the wakeup path sees it: `curr`
/// set, one runnable task, and the task's CPU is `cpu`. Nothing is queued.
#[cfg(test)]
pub(crate) fn busy(sim: &mut Sim, cpu: u32, task: u32) {
    sim.rqs[cpu as usize].curr = Some(TaskId(task));
    // A clock updated while idle is not current for a busy CPU.
    sim.rqs[cpu as usize].clock_stamp = u64::MAX;
    sim.rqs[cpu as usize].nr_running = 1;
    sim.rqs[cpu as usize].cfs.h_nr_runnable = 1;
    sim.rqs[cpu as usize].cfs.nr_queued = 1;
    sim.tasks[task as usize].cpu = CpuId(cpu);
}

/// A machine preset shipped with the Python package
/// (`python/schedlab/presets/machines/<name>.toml`), origin its path.
pub fn preset_source(name: &str) -> MachineSource {
    let path = format!("{}/../../python/schedlab/presets/machines/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    MachineSource { text, format: "toml".into(), origin: path }
}

/// An inline TOML machine as a run's source (origin `"inline"`).
pub fn inline_source(toml: &str) -> MachineSource {
    MachineSource { text: toml.into(), format: "toml".into(), origin: "inline".into() }
}

/// A run of the `workload` spec under `policy` on `machine`, with the
/// invariant checker on and no time limit.
pub fn run_spec(machine: MachineSource, workload: &str, policy: &str, seed: u64, trace: bool) -> RunSpec {
    RunSpec {
        machine,
        workload: workload.into(),
        workload_format: "spec".into(),
        workload_origin: String::new(),
        extra_workloads: Vec::new(),
        policy: policy.into(),
        seed,
        options: RunOptions { trace, check_invariants: true, max_time_ns: 0, ..RunOptions::default() },
    }
}

/// A fresh wakeup context for a decision taken on `this_cpu`, before any
/// rule has chosen (path `Fallback`, nothing scanned).
pub fn wake_ctx(this_cpu: u32) -> WakeCtx {
    WakeCtx { this_cpu: CpuId(this_cpu), path: PlacePath::Fallback, scanned: 0 }
}

/// The value of metric `name` in `r`; panics if the run did not report it.
pub fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
}
