//! The fair entities (`p->se`) of every task, by task id: the table the
//! EEVDF runqueue code (`eevdf.rs`, `cfs.rs`, `eevdf_lag.rs`) reads its
//! queued entities from, without a bounds test in release builds: an
//! [`IdTable`] (its module says which invariant keeps that sound). The fair
//! state's table is made with the run's tasks (`FairState::new`, one per
//! task); a test's holds the test's tasks.

use super::eevdf::SchedEntity;
use crate::id_table::IdTable;

/// One entity per task, at its task id.
pub type Entities = IdTable<SchedEntity>;
