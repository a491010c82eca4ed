//! Events, and the trace formats they are written to and read from.

pub mod event;

pub use event::{BalanceKind, Event, MigrateReason, PlacePath, PrevState, TimedEvent};
