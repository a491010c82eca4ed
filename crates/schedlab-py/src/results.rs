//! A run's result as Python objects: `RunOutput` with its `Metric`s, typed
//! as the core defines them (no JSON crosses the boundary).

use pyo3::prelude::*;
use schedlab_core::api::{Better, MetricValue, RunResult};

/// One metric of a run: its registry name, value (NaN when absent: a run
/// with nothing to measure), unit and better direction.
#[pyclass(frozen, get_all, module = "schedlab._native")]
#[derive(Clone)]
pub struct Metric {
    /// Registry name, e.g. `completion_time_s`.
    pub name: String,
    /// Value; NaN when the run had nothing to measure.
    pub value: f64,
    /// Unit, e.g. `s`, `us`, `count`, `1/s`.
    pub unit: String,
    /// `"lower"`, `"higher"` or `"neither"`.
    pub better: &'static str,
}

#[pymethods]
impl Metric {
    fn __repr__(&self) -> String {
        format!("Metric({}={} {}, better {})", self.name, self.value, self.unit, self.better)
    }
}

impl From<MetricValue> for Metric {
    fn from(m: MetricValue) -> Self {
        let better = match m.better {
            Better::Lower => "lower",
            Better::Higher => "higher",
            Better::Neither => "neither",
        };
        Metric { name: m.name, value: m.value, unit: m.unit, better }
    }
}

/// The result of one run, as the core returns it; `schedlab.RunResult`
/// wraps it with pandas helpers.
#[pyclass(frozen, get_all, module = "schedlab._native")]
pub struct RunOutput {
    /// Machine name.
    pub machine: String,
    /// Normalised workload spec (a composed run's parts joined by ` + `).
    pub workload: String,
    /// Each part's normalised spec, in order.
    pub workloads: Vec<String>,
    /// Policy string as given.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// Name of the primary metric.
    pub primary: String,
    /// Every metric, in registry order.
    pub metrics: Vec<Metric>,
    /// Events the engine popped (handled and stale).
    pub events_processed: u64,
    /// Events handled (popped less the stale ones).
    pub events_handled: u64,
    /// Simulated time at the end, ns.
    pub sim_time_ns: u64,
    /// The ftrace-format trace, when the run kept one in memory.
    pub trace: Option<String>,
}

#[pymethods]
impl RunOutput {
    fn __repr__(&self) -> String {
        format!("RunOutput({} on {}, {}, seed {})", self.workload, self.machine, self.policy, self.seed)
    }
}

impl From<RunResult> for RunOutput {
    fn from(r: RunResult) -> Self {
        RunOutput {
            machine: r.machine,
            workload: r.workload,
            workloads: r.workloads,
            policy: r.policy,
            seed: r.seed,
            primary: r.primary,
            metrics: r.metrics.into_iter().map(Metric::from).collect(),
            events_processed: r.events_processed,
            events_handled: r.events_handled,
            sim_time_ns: r.sim_time_ns,
            trace: r.trace,
        }
    }
}
