//! schedlab-core: a deterministic, discrete-event simulator of Linux CPU
//! scheduler task placement.
//!
//! Three inputs, kept apart: a [`topology::Machine`] (what the hardware is), a
//! [`workload::Workload`] (what the tasks do) and a policy (the fair class with
//! a set of sched features, or a peer scheduler). The engine runs them on an
//! integer-nanosecond clock and emits kernel-named events, from which
//! `metrics` computes the results.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod api;
pub mod class;
pub mod cpufreq;
pub mod cpuidle;
pub mod cpumask;
pub mod decision_replay;
pub mod engine;
pub mod error;
pub mod fair;
pub mod feature_metrics;
pub mod features;
pub mod id_table;
pub mod ids;
pub mod metrics;
pub mod pelt;
pub mod policies;
pub mod policy;
pub mod rt;
pub mod sim;
#[doc(hidden)]
pub mod testkit;
pub mod topology;
pub mod trace;
pub mod tunables;
pub mod workload;

pub use error::{Result, SchedlabError};
pub use ids::{CpuId, Ns, TaskId};
