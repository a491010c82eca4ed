//! The one place where core errors become Python exceptions (house rule 8).
//!
//! Every exception is a subclass of `schedlab.SchedlabError`, so a caller can
//! catch them all at once; the CLI maps `SpecError` and `UnknownNameError` to
//! exit status 2 and `SimulationError` to 1, mirroring
//! [`SchedlabError::is_usage`].

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use schedlab_core::SchedlabError as CoreError;

create_exception!(schedlab, SchedlabError, PyException, "Base class of every schedlab error.");
create_exception!(
    schedlab,
    SpecError,
    SchedlabError,
    "A machine, workload or policy spec is malformed or has an impossible value."
);
create_exception!(
    schedlab,
    UnknownNameError,
    SchedlabError,
    "A machine, workload, policy or feature name that does not exist."
);
create_exception!(
    schedlab,
    SimulationError,
    SchedlabError,
    "A run failed at run time (a broken invariant or a workload that cannot finish)."
);

create_exception!(
    schedlab,
    RunInterrupted,
    SimulationError,
    "A run stopped by a stop request (SIGINT/SIGTERM in the CLI) before it finished."
);

/// Converts a core error into the matching Python exception, keeping the
/// core's one-line message.
pub fn to_py(err: CoreError) -> PyErr {
    let msg = err.to_string();
    match err {
        CoreError::Spec { .. } => SpecError::new_err(msg),
        CoreError::UnknownName { .. } => UnknownNameError::new_err(msg),
        CoreError::Runtime(_) => SimulationError::new_err(msg),
        CoreError::Interrupted { .. } => RunInterrupted::new_err(msg),
    }
}

/// Adds the exception classes to the module.
pub fn register(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SchedlabError", py.get_type_bound::<SchedlabError>())?;
    m.add("SpecError", py.get_type_bound::<SpecError>())?;
    m.add("UnknownNameError", py.get_type_bound::<UnknownNameError>())?;
    m.add("SimulationError", py.get_type_bound::<SimulationError>())?;
    m.add("RunInterrupted", py.get_type_bound::<RunInterrupted>())?;
    Ok(())
}
