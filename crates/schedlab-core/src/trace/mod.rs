//! Events, and the trace formats they are written to and read from.

pub mod event;
pub mod ftrace;
pub mod ftrace_read;

pub use event::{BalanceKind, Event, MigrateReason, PlacePath, PrevState, TimedEvent};
pub use ftrace::{write_ftrace, FtraceWriter};
pub use ftrace_read::{read_ftrace, ParsedTrace};
