//! Python bindings of schedlab-core, imported as `schedlab._native`.
//!
//! Thin by design (house rule 9): each function converts its arguments, calls
//! `schedlab_core::api` with the GIL released, and converts the answer back.
//! Answers cross the boundary as Python objects, never as JSON text: a run
//! as a `RunOutput` with its `Metric`s (classes defined here from the core's
//! types), trace tables as Arrow record batches, and the core's documents
//! (policies, workload families, analyses, topologies) as dicts and lists.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr, which
// recent clippy flags in our code; the conversion is the macro's, not ours.
#![allow(clippy::useless_conversion)]

mod errors;
mod frames;
mod results;

use pyo3::prelude::*;
use results::{Metric, RunOutput};
use schedlab_core::api::{self, MachineSource, RunOptions, RunSpec, WorkloadSource};

/// The `RunSpec` the run functions' arguments describe.
fn run_spec(
    machine: MachineSource,
    (workload, workload_format, workload_origin): (String, String, String),
    extra_workloads: Vec<(String, String, String)>,
    policy: String,
    seed: u64,
    options: RunOptions,
) -> RunSpec {
    RunSpec {
        machine,
        workload,
        workload_format,
        workload_origin,
        extra_workloads: extra_workloads
            .into_iter()
            .map(|(text, format, origin)| WorkloadSource { text, format, origin })
            .collect(),
        policy,
        seed,
        options,
    }
}

/// Runs one simulation. Returns its `RunOutput`, holding the ftrace-format
/// trace text when `trace` is set.
///
/// `extra_workloads` are further workloads run at the same time, each as
/// `(text, format, origin)` (see `RunSpec::extra_workloads`); `governor`
/// overrides the machine's cpufreq governor (`RunOptions::governor`) and
/// `idle_governor` its idle governor (`RunOptions::idle_governor`);
/// `workload_origin` is what errors in `workload` name (the file's path),
/// empty for the default.
#[pyfunction]
#[pyo3(signature = (machine_text, machine_format, machine_origin, workload, workload_format,
                    policy, seed, trace=false, check_invariants=false, max_time_ns=0,
                    extra_workloads=Vec::new(), governor=None, workload_origin=String::new(),
                    idle_governor=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    machine_text: String,
    machine_format: String,
    machine_origin: String,
    workload: String,
    workload_format: String,
    policy: String,
    seed: u64,
    trace: bool,
    check_invariants: bool,
    max_time_ns: u64,
    extra_workloads: Vec<(String, String, String)>,
    governor: Option<String>,
    workload_origin: String,
    idle_governor: Option<String>,
) -> PyResult<RunOutput> {
    let spec = run_spec(
        MachineSource { text: machine_text, format: machine_format, origin: machine_origin },
        (workload, workload_format, workload_origin),
        extra_workloads,
        policy,
        seed,
        RunOptions { trace, check_invariants, max_time_ns, governor, idle_governor },
    );
    let result = py.allow_threads(|| api::run_keeping_trace(&spec)).map_err(|f| {
        let err = errors::to_py(f.error);
        // A failed run's trace so far rides on the exception as `partial_trace`.
        if let Some(text) = f.partial_trace {
            let _ = err.value_bound(py).setattr("partial_trace", text);
        }
        err
    })?;
    Ok(RunOutput::from(result))
}

/// Runs one simulation writing its trace to `trace_path` while it goes, as
/// ftrace text (`trace_format="ftrace"`) or a Perfetto protobuf trace
/// (`"perfetto"`). Returns its `RunOutput`. A run that fails or is
/// interrupted raises, and the file holds the trace so far, marked incomplete.
#[pyfunction]
#[pyo3(signature = (machine_text, machine_format, machine_origin, workload, workload_format,
                    policy, seed, trace_path, trace_format, check_invariants=false, max_time_ns=0,
                    extra_workloads=Vec::new(), governor=None, workload_origin=String::new(),
                    idle_governor=None))]
#[allow(clippy::too_many_arguments)]
fn run_to_file(
    py: Python<'_>,
    machine_text: String,
    machine_format: String,
    machine_origin: String,
    workload: String,
    workload_format: String,
    policy: String,
    seed: u64,
    trace_path: String,
    trace_format: String,
    check_invariants: bool,
    max_time_ns: u64,
    extra_workloads: Vec<(String, String, String)>,
    governor: Option<String>,
    workload_origin: String,
    idle_governor: Option<String>,
) -> PyResult<RunOutput> {
    let format = match trace_format.as_str() {
        "ftrace" => schedlab_core::trace::TraceFormat::Ftrace,
        "perfetto" => schedlab_core::trace::TraceFormat::Perfetto,
        other => {
            return Err(errors::SpecError::new_err(format!("trace format: expected ftrace or perfetto, got '{other}'")))
        }
    };
    let spec = run_spec(
        MachineSource { text: machine_text, format: machine_format, origin: machine_origin },
        (workload, workload_format, workload_origin),
        extra_workloads,
        policy,
        seed,
        RunOptions { trace: false, check_invariants, max_time_ns, governor, idle_governor },
    );
    let file = schedlab_core::trace::TraceFile { path: trace_path.into(), format };
    let result = py.allow_threads(|| api::run_to_trace_file(&spec, &file)).map_err(|f| errors::to_py(f.error))?;
    Ok(RunOutput::from(result))
}

/// Asks runs in progress in this process to stop (they raise
/// `RunInterrupted`); called from the CLI's SIGINT/SIGTERM handler.
#[pyfunction]
fn request_stop() {
    api::request_stop();
}

/// `(simulated ns so far, end ns or 0 when unknown)` of the run in progress.
#[pyfunction]
fn run_progress() -> (u64, u64) {
    api::progress()
}

/// Clears a stop request so later runs proceed.
#[pyfunction]
fn clear_stop() {
    api::clear_stop();
}

/// A JSON document the core rendered, as Python dicts and lists (keys in
/// the document's order).
fn document(py: Python<'_>, json: &str) -> PyResult<PyObject> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| errors::SimulationError::new_err(format!("the core's document does not read back: {e}")))?;
    Ok(pythonize::pythonize(py, &value)?.unbind())
}

/// The machine's CPUs and sched domains, as the text `topo show` prints.
#[pyfunction]
fn topo_show(py: Python<'_>, text: String, format: String, origin: String) -> PyResult<String> {
    let source = MachineSource { text, format, origin };
    py.allow_threads(|| api::topo_show(&source, false)).map_err(errors::to_py)
}

/// The machine's CPUs and sched domains as a dict (`topo show --json`).
#[pyfunction]
fn topo_doc(py: Python<'_>, text: String, format: String, origin: String) -> PyResult<PyObject> {
    let source = MachineSource { text, format, origin };
    let json = py.allow_threads(|| api::topo_show(&source, true)).map_err(errors::to_py)?;
    document(py, &json)
}

/// A machine TOML imported from the sysfs tree under `root` (`/sys` or a copy).
#[pyfunction]
fn topo_import(py: Python<'_>, root: String) -> PyResult<String> {
    py.allow_threads(|| api::topo_import(&root)).map_err(errors::to_py)
}

/// A kernel's wakeup decisions replayed through the model (`schedlab
/// kernel-decisions check`): the report as a dict.
#[pyfunction]
#[pyo3(signature = (text, format, origin, policy, table, table_origin))]
fn replay_decisions(
    py: Python<'_>,
    text: String,
    format: String,
    origin: String,
    policy: String,
    table: String,
    table_origin: String,
) -> PyResult<PyObject> {
    let machine = api::MachineSource { text, format, origin };
    let json =
        py.allow_threads(|| api::replay_decisions(&machine, &policy, &table, &table_origin)).map_err(errors::to_py)?;
    document(py, &json)
}

/// The header of a decisions table for `nr_cpus` CPUs (`_kernel_decisions.table`).
#[pyfunction]
fn decision_columns(nr_cpus: usize) -> Vec<String> {
    api::decision_columns(nr_cpus)
}

/// Policies, kernel profiles and features: a list of dicts (`name`,
/// `kind`, `default_on`, `summary`, `shown_by`).
#[pyfunction]
fn policy_list(py: Python<'_>) -> PyResult<PyObject> {
    Ok(pythonize::pythonize(py, &api::policy_list())?.unbind())
}

/// What a policy string expands to, as a dict.
#[pyfunction]
fn policy_show(py: Python<'_>, policy: String) -> PyResult<PyObject> {
    let json = api::policy_show(&policy).map_err(errors::to_py)?;
    document(py, &json)
}

/// The model's values of the kernel's `/sys/kernel/debug/sched/` tunables
/// on a machine of `nr_cpus` CPUs (`api::kernel_tunables`), as a dict.
#[pyfunction]
fn kernel_tunables(nr_cpus: usize) -> std::collections::BTreeMap<&'static str, u64> {
    api::kernel_tunables(nr_cpus).into_iter().collect()
}

/// Workload families and their parameters, as a list of dicts.
#[pyfunction]
fn workload_list(py: Python<'_>) -> PyResult<PyObject> {
    Ok(pythonize::pythonize(py, &schedlab_core::workload::spec::workload_families())?.unbind())
}

/// Metrics of an ftrace text (real or simulated), as a dict; with `machine`
/// (`(text, format, origin)`) topology-aware, and with `comms`/`pids` the
/// scheduler metrics restricted to those tasks.
#[pyfunction]
#[pyo3(signature = (text, origin, machine=None, comms=Vec::new(), pids=Vec::new()))]
fn analyze_trace(
    py: Python<'_>,
    text: String,
    origin: String,
    machine: Option<(String, String, String)>,
    comms: Vec<String>,
    pids: Vec<u32>,
) -> PyResult<PyObject> {
    let machine = machine.map(|(text, format, origin)| MachineSource { text, format, origin });
    let filter = api::TaskFilter { comms, pids };
    let json =
        py.allow_threads(|| api::analyze_trace_on(&text, &origin, machine.as_ref(), &filter)).map_err(errors::to_py)?;
    document(py, &json)
}

/// Runs a native workload program (`schedlab-wl`'s families, in this
/// process's threads) with the GIL released; returns its exit status. Its
/// JSON line goes to stdout, errors to stderr.
#[pyfunction]
fn wl_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    schedlab_wl::clear_stop();
    py.allow_threads(|| schedlab_wl::main_with_args(&argv))
}

/// Asks a running native workload to stop (its loops check a flag).
#[pyfunction]
fn wl_stop() {
    schedlab_wl::request_stop();
}

/// The `schedlab._native` module.
#[pymodule]
fn _native(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(py, m)?;
    m.add_class::<RunOutput>()?;
    m.add_class::<Metric>()?;
    m.add_function(wrap_pyfunction!(frames::trace_frames, m)?)?;
    m.add_function(wrap_pyfunction!(topo_doc, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_to_file, m)?)?;
    m.add_function(wrap_pyfunction!(wl_main, m)?)?;
    m.add_function(wrap_pyfunction!(run_progress, m)?)?;
    m.add_function(wrap_pyfunction!(wl_stop, m)?)?;
    m.add_function(wrap_pyfunction!(request_stop, m)?)?;
    m.add_function(wrap_pyfunction!(clear_stop, m)?)?;
    m.add_function(wrap_pyfunction!(topo_show, m)?)?;
    m.add_function(wrap_pyfunction!(topo_import, m)?)?;
    m.add_function(wrap_pyfunction!(policy_list, m)?)?;
    m.add_function(wrap_pyfunction!(policy_show, m)?)?;
    m.add_function(wrap_pyfunction!(workload_list, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_tunables, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_trace, m)?)?;
    m.add_function(wrap_pyfunction!(replay_decisions, m)?)?;
    m.add_function(wrap_pyfunction!(decision_columns, m)?)?;
    Ok(())
}
