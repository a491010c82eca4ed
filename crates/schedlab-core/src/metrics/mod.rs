//! Metrics computed from the event stream, by one code path for simulated
//! runs and real kernel traces (DESIGN.md, "Events and metrics").
//!
//! * [`registry`]: the one list of metric names, units and descriptions;
//! * [`Collector`]: a streaming pass over [`crate::trace::TimedEvent`]s that
//!   keeps O(tasks + cpus) state and never stores events;
//! * [`LatencyHist`]: the fixed-size log-linear histogram behind percentiles;
//! * [`CpuOccupancy`]: idle and wasted-idle time accounting.
//!
//! Usage: build a [`MetricsContext`] (`from_machine` for a simulation,
//! `flat` for a trace without a machine), feed every event to
//! [`Collector::on_event`], then [`Collector::finish`] with the end time.

pub mod collector;
pub mod context;
pub mod energy;
mod grown;
pub mod hist;
mod idle_ref;
pub mod idle_states;
pub mod occupancy;
pub mod registry;

pub use collector::Collector;
pub use context::{CpuTopo, MeasuredPart, MetricsContext, NO_PART};
pub use hist::LatencyHist;
pub use occupancy::CpuOccupancy;
pub use registry::{help_metrics, metric_def, MetricDef, METRICS};

use crate::api::MetricValue;
use crate::ids::Ns;
use crate::trace::TimedEvent;

/// Metrics of a whole event list (a trace read from text): feed every event
/// to a fresh [`Collector`] and finish at `end_ns` (the last event's time
/// when `None`).
pub fn collect(ctx: MetricsContext, events: &[TimedEvent], end_ns: Option<Ns>) -> Vec<MetricValue> {
    let mut c = Collector::new(ctx);
    for e in events {
        c.on_event(e);
    }
    c.finish(end_ns.unwrap_or_else(|| events.last().map_or(0, |e| e.time)))
}
