//! Objects tasks share: channels (pipes, sockets), barriers. Blocked tasks
//! wait in FIFO order and retry their action when woken, as a task woken from
//! `pipe_read` retries the read.

use crate::ids::TaskId;
use std::collections::VecDeque;

/// A bounded message buffer with its wait queues.
#[derive(Clone, Debug, Default)]
pub struct Chan {
    /// Messages it holds before a writer blocks.
    pub capacity: u32,
    /// Buffered messages.
    pub buf: VecDeque<u64>,
    /// Readers blocked on an empty buffer.
    pub readers: VecDeque<TaskId>,
    /// Writers blocked on a full buffer.
    pub writers: VecDeque<TaskId>,
}

/// A barrier (OpenMP style: spin, then block).
#[derive(Clone, Debug, Default)]
pub struct Barrier {
    /// Tasks that release it.
    pub parties: u32,
    /// Arrived in the current generation.
    pub arrived: u32,
    /// Generation: bumps on every release.
    pub generation: u64,
    /// Tasks spinning or blocked in the current generation.
    pub waiters: Vec<TaskId>,
}

/// A condition variable: tasks blocked in `pthread_cond_wait`, in FIFO order
/// (the futex queue a `pthread_cond_signal` wakes from).
#[derive(Clone, Debug, Default)]
pub struct Cond {
    /// Blocked waiters.
    pub waiters: VecDeque<TaskId>,
}

/// A counting semaphore whose waiters spin, then sleep (a flag a thread
/// busy-waits on, as NPB's LU pipeline does, or a futex-backed `sem_t`).
#[derive(Clone, Debug, Default)]
pub struct Sem {
    /// Posts not yet taken.
    pub count: u64,
    /// Tasks spinning or sleeping on it, in arrival order.
    pub waiters: VecDeque<TaskId>,
}
