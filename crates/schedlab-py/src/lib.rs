//! Python bindings of schedlab-core, imported as `schedlab._native`.
//!
//! Thin by design (house rule 9): each function converts its arguments, calls
//! `schedlab_core::api` with the GIL released, and converts the answer back.
//! Results cross the boundary as JSON text so that the types stay defined
//! once, in Rust; the Python package wraps them in typed classes.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr, which
// recent clippy flags in our code; the conversion is the macro's, not ours.
#![allow(clippy::useless_conversion)]

mod errors;

use pyo3::prelude::*;
use schedlab_core::api::{self, MachineSource, RunOptions, RunSpec, WorkloadSource};

/// Runs one simulation. Returns the result as JSON and, when `trace` is set,
/// the ftrace-format trace text.
///
/// `extra_workloads` are further workloads run at the same time, each as
/// `(text, format, origin)` (see `RunSpec::extra_workloads`); `workload_origin`
/// is what errors in `workload` name (the file's path), empty for the default.
#[pyfunction]
#[pyo3(signature = (machine_text, machine_format, machine_origin, workload, workload_format,
                    policy, seed, trace=false, check_invariants=false, max_time_ns=0,
                    extra_workloads=Vec::new(), workload_origin=String::new()))]
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
    workload_origin: String,
) -> PyResult<(String, Option<String>)> {
    let spec = RunSpec {
        machine: MachineSource { text: machine_text, format: machine_format, origin: machine_origin },
        workload,
        workload_format,
        workload_origin,
        extra_workloads: extra_workloads
            .into_iter()
            .map(|(text, format, origin)| WorkloadSource { text, format, origin })
            .collect(),
        policy,
        seed,
        options: RunOptions { trace, check_invariants, max_time_ns },
    };
    let mut result = py.allow_threads(|| api::run_keeping_trace(&spec)).map_err(|f| {
        let err = errors::to_py(f.error);
        // A failed run's trace so far rides on the exception as `partial_trace`.
        if let Some(text) = f.partial_trace {
            let _ = err.value_bound(py).setattr("partial_trace", text);
        }
        err
    })?;
    let trace_text = result.trace.take();
    let json = serde_json::to_string(&result)
        .map_err(|e| errors::SimulationError::new_err(format!("cannot serialise the result: {e}")))?;
    Ok((json, trace_text))
}

/// Asks runs in progress in this process to stop (they raise
/// `RunInterrupted`); called from the CLI's SIGINT/SIGTERM handler.
#[pyfunction]
fn request_stop() {
    api::request_stop();
}

/// Clears a stop request so later runs proceed.
#[pyfunction]
fn clear_stop() {
    api::clear_stop();
}

/// The machine's CPUs and sched domains, as text or (`json = True`) JSON.
#[pyfunction]
#[pyo3(signature = (text, format, origin, json=false))]
fn topo_show(py: Python<'_>, text: String, format: String, origin: String, json: bool) -> PyResult<String> {
    let source = MachineSource { text, format, origin };
    py.allow_threads(|| api::topo_show(&source, json)).map_err(errors::to_py)
}

/// A machine TOML imported from the sysfs tree under `root` (`/sys` or a copy).
#[pyfunction]
fn topo_import(py: Python<'_>, root: String) -> PyResult<String> {
    py.allow_threads(|| api::topo_import(&root)).map_err(errors::to_py)
}

/// Policies, kernel profiles and features, as a JSON array.
#[pyfunction]
fn policy_list() -> PyResult<String> {
    serde_json::to_string(&api::policy_list())
        .map_err(|e| errors::SimulationError::new_err(format!("cannot serialise the policy list: {e}")))
}

/// What a policy string expands to, as JSON.
#[pyfunction]
fn policy_show(policy: String) -> PyResult<String> {
    api::policy_show(&policy).map_err(errors::to_py)
}

/// Workload families and their parameters, as a JSON array.
#[pyfunction]
fn workload_list() -> String {
    api::workload_list()
}

/// Metrics of an ftrace text (real or simulated), as JSON.
#[pyfunction]
fn analyze_trace(py: Python<'_>, text: String, origin: String) -> PyResult<String> {
    py.allow_threads(|| api::analyze_trace(&text, &origin)).map_err(errors::to_py)
}

/// The `schedlab._native` module.
#[pymodule]
fn _native(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(py, m)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(request_stop, m)?)?;
    m.add_function(wrap_pyfunction!(clear_stop, m)?)?;
    m.add_function(wrap_pyfunction!(topo_show, m)?)?;
    m.add_function(wrap_pyfunction!(topo_import, m)?)?;
    m.add_function(wrap_pyfunction!(policy_list, m)?)?;
    m.add_function(wrap_pyfunction!(policy_show, m)?)?;
    m.add_function(wrap_pyfunction!(workload_list, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_trace, m)?)?;
    Ok(())
}
