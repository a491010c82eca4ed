//! A table of one entry per id of a run, indexed without a bounds test in
//! release builds: the engine's tasks (`engine::tasks::Tasks`) and the fair
//! class's entities (`fair::entities::Entities`), both by task id, the
//! runqueues (`engine::rqs::Rqs`), the engine's SMT sibling records
//! (`Sim::cpu_rec`) and the cpufreq model's speeds and frequency
//! capacities (`CpufreqState::speed`, `freq_cap`, sized to the machine by
//! `CpufreqState::new`), by CPU id, and the engine's cache pressure by the
//! machine's core and LLC ids (`Sim::core_pressure`, `Sim::llc_pressure`:
//! numbered `0..nr_cores` and `0..nr_llcs` when the machine is built and
//! validated, and read from its CPU records or the SMT sibling records).
//!
//! The invariant that keeps indexing sound is the table's size: it is made
//! once, with one entry per id of the run, by the crate only (`IdTable::new`
//! is crate-internal, and so are `Sim::build` and `replay_sim`, which make
//! the run's tables), and never resized (`items` is private; `DerefMut`
//! gives a slice, whose length is fixed). The ids the crate indexes with are
//! the ones `Sim::build` numbered `0..n` (each task's own, and the queue
//! keys, timers, IPC waiters, runqueue entries, queued entities and wakees
//! made from them), a program's `Wake` or `Spawn` target, which
//! `Sim::do_action` checks against the task count before use, or a
//! decisions row's tasks, whose count `Sim::replay_decision` checks; for
//! the runqueues, one per CPU of the machine, the CPU numbers, lists, masks
//! and domains of that machine (built from it and validated at its build),
//! or a workload's, interrupt source's or decisions row's CPU, checked or
//! cut to the machine when the run is built (`Sim::build`: start CPUs,
//! affinity and `SetAffinity` masks; `irq::with_ksoftirqd`;
//! `decision_replay::parse_rows` and `Sim::replay_decision`); a test's table
//! holds the test's own ids. Debug builds assert the bound at
//! every access, in every debug run of the test suite.

use std::ops::{Deref, DerefMut, Index, IndexMut};

/// One entry per id, entry `i` for id `i`; never resized.
#[derive(Clone, Debug)]
pub struct IdTable<T> {
    items: Vec<T>,
}

impl<T> IdTable<T> {
    /// Wrap `items` (id `i`'s entry at index `i`).
    pub(crate) fn new(items: Vec<T>) -> Self {
        IdTable { items }
    }

    /// Entry `i`, without a bounds test in release builds.
    #[inline(always)]
    fn get(&self, i: usize) -> &T {
        debug_assert!(i < self.items.len(), "id {i} of a table of {}", self.items.len());
        // SAFETY: `i` is an id of the table's run, and the table holds one
        // entry per id from its making on (the module's doc: made by the
        // crate only, never resized; ids numbered at build or checked where
        // a workload or a decisions row names one).
        unsafe { self.items.get_unchecked(i) }
    }

    /// Entry `i`, mutably (see [`IdTable::get`]).
    #[inline(always)]
    fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.items.len(), "id {i} of a table of {}", self.items.len());
        // SAFETY: as in `IdTable::get`: `i` is an id of the table's run,
        // which has one entry here from the table's making on.
        unsafe { self.items.get_unchecked_mut(i) }
    }
}

impl<T> Deref for IdTable<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> DerefMut for IdTable<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T> Index<usize> for IdTable<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        self.get(i)
    }
}

impl<T> IndexMut<usize> for IdTable<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i)
    }
}

impl<'a, T> IntoIterator for &'a IdTable<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}
