//! Identifier newtypes. Every per-CPU or per-task table in schedlab is a `Vec`
//! indexed by one of these, never a hash map (house rule 6).

use std::fmt;

/// A logical CPU (a hardware thread), numbered as Linux numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct CpuId(pub u32);

/// A task (thread or process) of the simulated workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct TaskId(pub u32);

impl CpuId {
    /// Index into per-CPU tables.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl TaskId {
    /// Index into per-task tables.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Simulated time and durations, in integer nanoseconds (house rule 4).
pub type Ns = u64;

/// One millisecond in [`Ns`].
pub const NSEC_PER_MSEC: Ns = 1_000_000;
/// One microsecond in [`Ns`].
pub const NSEC_PER_USEC: Ns = 1_000;
/// One second in [`Ns`].
pub const NSEC_PER_SEC: Ns = 1_000_000_000;
