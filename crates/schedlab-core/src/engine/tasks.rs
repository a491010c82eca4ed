//! The tasks of a run, indexed by task id (`TaskId::idx`).
//!
//! Indexing a task tests no bound in release builds (`Tasks::get`,
//! `Tasks::get_mut`): every id the engine indexes with is one it handed out
//! or checked, and debug builds assert the bound at each access.

use super::task::Task;
use std::ops::{Deref, DerefMut, Index, IndexMut};

/// The tasks, one per task of the workload, in id order. Built once by
/// `Sim::build`; none is added or removed afterwards.
#[derive(Clone, Debug)]
pub struct Tasks {
    tasks: Vec<Task>,
}

impl Tasks {
    /// Wrap `tasks` (task `i` at index `i`).
    pub(crate) fn new(tasks: Vec<Task>) -> Self {
        Tasks { tasks }
    }

    /// Task `i`, without a bounds test in release builds.
    #[inline(always)]
    fn get(&self, i: usize) -> &Task {
        debug_assert!(i < self.tasks.len(), "task {i} of {}", self.tasks.len());
        // SAFETY: `i` is a task of this run, and there is one entry per task
        // here: `Sim::build` makes them all (`Tasks::new`; a spawned task
        // exists from the start, in state `New`) and nothing adds or removes
        // one afterwards (`tasks` is private, and `DerefMut` gives a slice,
        // whose length is fixed). The task ids the engine indexes with are
        // the ones `Sim::build` numbered `0..n` (each task's own, and the
        // queue keys, timers, IPC waiters, runqueue entries and wakees made
        // from them), or a program's `Wake` or `Spawn` target, which
        // `Sim::do_action` checks against the task count before use, or a
        // decisions row's tasks, whose count `Sim::replay_decision` checks.
        // Only the crate makes a `Tasks` or a `Sim` (`Tasks::new`,
        // `Sim::build`, `replay_sim` are crate-internal). The debug assertion
        // above checks it in every debug run of the
        // test suite.
        unsafe { self.tasks.get_unchecked(i) }
    }

    /// Task `i`, mutably (see [`Tasks::get`]).
    #[inline(always)]
    fn get_mut(&mut self, i: usize) -> &mut Task {
        debug_assert!(i < self.tasks.len(), "task {i} of {}", self.tasks.len());
        // SAFETY: as in `Tasks::get`: `i` is a task of this run, which has
        // one entry here from `Sim::build` on.
        unsafe { self.tasks.get_unchecked_mut(i) }
    }
}

impl Deref for Tasks {
    type Target = [Task];
    #[inline]
    fn deref(&self) -> &[Task] {
        &self.tasks
    }
}

impl DerefMut for Tasks {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Task] {
        &mut self.tasks
    }
}

impl Index<usize> for Tasks {
    type Output = Task;
    #[inline(always)]
    fn index(&self, i: usize) -> &Task {
        self.get(i)
    }
}

impl IndexMut<usize> for Tasks {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Task {
        self.get_mut(i)
    }
}

impl<'a> IntoIterator for &'a Tasks {
    type Item = &'a Task;
    type IntoIter = std::slice::Iter<'a, Task>;
    fn into_iter(self) -> Self::IntoIter {
        self.tasks.iter()
    }
}
