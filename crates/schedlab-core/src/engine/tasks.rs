//! The tasks of a run, indexed by task id (`TaskId::idx`), without a bounds
//! test in release builds: an [`IdTable`] (its module says which invariant
//! keeps that sound). Built once by `Sim::build`, one per task of the
//! workload (a spawned task exists from the start, in state `New`); none is
//! added or removed afterwards.

use super::task::Task;
use crate::id_table::IdTable;

/// The tasks, in id order.
pub type Tasks = IdTable<Task>;
