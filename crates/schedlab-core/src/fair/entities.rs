//! The fair entities (`p->se`) of every task, by task id: the table the
//! EEVDF runqueue code (`eevdf.rs`, `cfs.rs`, `eevdf_lag.rs`) reads its
//! queued entities from.
//!
//! Indexing an entity tests no bound in release builds (`Entities::get`,
//! `Entities::get_mut`); debug builds assert the bound at each access.

use super::eevdf::SchedEntity;
use std::ops::{Deref, DerefMut, Index, IndexMut};

/// One entity per task, at its task id. Made with the run's tasks
/// (`FairState::new`, or a test's own table) and never resized.
#[derive(Clone, Debug)]
pub struct Entities {
    ses: Vec<SchedEntity>,
}

impl Entities {
    /// Wrap `ses` (task `i`'s entity at index `i`). Crate-internal: only
    /// the crate makes a table, so every id it is indexed with is one the
    /// crate numbered.
    pub(crate) fn new(ses: Vec<SchedEntity>) -> Self {
        Entities { ses }
    }

    /// Entity `i`, without a bounds test in release builds.
    #[inline(always)]
    fn get(&self, i: usize) -> &SchedEntity {
        debug_assert!(i < self.ses.len(), "entity {i} of {}", self.ses.len());
        // SAFETY: `i` is a task of the table's run, and the table has one
        // entity per task from its making on (`ses` is private, never
        // resized; `DerefMut` gives a slice, whose length is fixed): the
        // fair state's table is made with the run's tasks in `Sim::build`
        // (`FairState::new`, one per task), and the ids it is indexed with
        // are the run's task ids (see `engine::tasks::Tasks::get`: numbered
        // at build, or checked where a workload names one), directly or as
        // queued in a runqueue's tree or as its `curr`, put there from
        // those. A test's table holds the test's tasks. The debug assertion
        // above checks it in every debug run of the test suite.
        unsafe { self.ses.get_unchecked(i) }
    }

    /// Entity `i`, mutably (see [`Entities::get`]).
    #[inline(always)]
    fn get_mut(&mut self, i: usize) -> &mut SchedEntity {
        debug_assert!(i < self.ses.len(), "entity {i} of {}", self.ses.len());
        // SAFETY: as in `Entities::get`: `i` is a task of the table's run,
        // which has one entity here from the table's making on.
        unsafe { self.ses.get_unchecked_mut(i) }
    }
}

impl Deref for Entities {
    type Target = [SchedEntity];
    #[inline]
    fn deref(&self) -> &[SchedEntity] {
        &self.ses
    }
}

impl DerefMut for Entities {
    #[inline]
    fn deref_mut(&mut self) -> &mut [SchedEntity] {
        &mut self.ses
    }
}

impl Index<usize> for Entities {
    type Output = SchedEntity;
    #[inline(always)]
    fn index(&self, i: usize) -> &SchedEntity {
        self.get(i)
    }
}

impl IndexMut<usize> for Entities {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut SchedEntity {
        self.get_mut(i)
    }
}

impl<'a> IntoIterator for &'a Entities {
    type Item = &'a SchedEntity;
    type IntoIter = std::slice::Iter<'a, SchedEntity>;
    fn into_iter(self) -> Self::IntoIter {
        self.ses.iter()
    }
}
