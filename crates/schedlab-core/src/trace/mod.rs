//! Events, and the trace formats they are written to and read from.

pub mod event;
pub mod file;
pub mod frames;
pub mod ftrace;
pub mod ftrace_read;
mod lost_switch;
pub mod perfetto;
pub mod perfetto_proto;

pub use event::{BalanceKind, Event, MigrateReason, PlacePath, PrevState, TimedEvent};
pub use file::{TraceFile, TraceFormat};
pub use frames::{frames_of, EventFrame, FrameColumn, TraceFrames, FIXED_COLUMNS};
pub use ftrace::{write_ftrace, FtraceWriter};
pub use ftrace_read::{read_ftrace, ParsedTrace};
