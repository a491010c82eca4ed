//! Objects tasks share: channels (pipes, sockets), barriers. Blocked tasks
//! retry their action when woken, as a task woken from `pipe_read` retries
//! the read. When a channel's writer blocks and whom a read wakes follow its
//! kind: fs/pipe.c for pipes, net/unix/af_unix.c for unix stream sockets, one
//! writer per read for plain queues (workload/README.md, "Channels").

use crate::ids::TaskId;
use crate::workload::ChanKind;
use std::collections::VecDeque;

/// `PAGE_SIZE`: the bytes one pipe buffer (`struct pipe_buffer`) holds.
pub const PAGE_SIZE: u32 = 4096;

/// Who a read wakes among the blocked writers, and how (the caller does the
/// `try_to_wake_up`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterWake {
    /// Nobody.
    None,
    /// The first blocked writer (an exclusive waiter), with or without WF_SYNC.
    One {
        /// WF_SYNC.
        sync: bool,
    },
    /// Every blocked writer (non-exclusive waiters), with WF_SYNC, in the
    /// wait queue's list order (`prepare_to_wait` adds at the head: the last
    /// to block is woken first).
    All,
}

/// A bounded message buffer with its wait queues. What "full" means and whom
/// a read wakes depend on its [`ChanKind`].
#[derive(Clone, Debug)]
pub struct Chan {
    /// What the channel is.
    pub kind: ChanKind,
    /// Buffered messages.
    pub buf: VecDeque<u64>,
    /// Pipes: the occupied ring slots (`pipe->bufs[tail..head]`), oldest
    /// first, each as (messages written into its page, messages not yet
    /// read). A slot is released (`pipe_update_tail`) when its last message
    /// is read.
    pub slots: VecDeque<(u32, u32)>,
    /// Readers blocked on an empty buffer.
    pub readers: VecDeque<TaskId>,
    /// Writers blocked on a full buffer.
    pub writers: VecDeque<TaskId>,
}

impl Chan {
    /// A channel of `kind`, empty; a pipe's ring is allocated here, whole.
    pub fn new(kind: ChanKind) -> Self {
        let slots = match kind {
            ChanKind::Pipe { max_usage, .. } => VecDeque::with_capacity(max_usage as usize),
            _ => VecDeque::new(),
        };
        Chan { kind, buf: VecDeque::new(), slots, readers: VecDeque::new(), writers: VecDeque::new() }
    }

    /// `pipe_full(head, tail, max_usage)`: every slot of the ring is taken.
    pub fn pipe_full(&self) -> bool {
        match self.kind {
            ChanKind::Pipe { max_usage, .. } => self.slots.len() as u32 >= max_usage,
            _ => false,
        }
    }

    /// `refcount_read(&sk->sk_wmem_alloc)` of a unix stream socket's sending
    /// side: the truesize of every skb still queued at the peer. (The
    /// reference of 1 the socket holds on itself is left out: it moves the
    /// thresholds by one byte.)
    pub fn sk_wmem_alloc(&self) -> u64 {
        match self.kind {
            ChanKind::UnixStream { truesize, .. } => self.buf.len() as u64 * truesize as u64,
            _ => 0,
        }
    }

    /// `unix_writable`: `(sk_wmem_alloc << 2) <= sk_sndbuf`, the socket has
    /// drained to a quarter of its send buffer (net/unix/af_unix.c).
    pub fn unix_writable(&self) -> bool {
        match self.kind {
            ChanKind::UnixStream { sndbuf, .. } => self.sk_wmem_alloc() << 2 <= sndbuf as u64,
            _ => true,
        }
    }

    /// Whether a write of one message must block now. Queue: `capacity`
    /// messages held. Pipe (`pipe_write`): it can neither merge into the
    /// last page (the pipe is not empty and the page has room for one more
    /// message) nor take a new slot (`pipe_full`). Unix stream socket
    /// (`sock_alloc_send_pskb`): `sk_wmem_alloc >= sk_sndbuf`, so the write
    /// that crosses the limit still goes through.
    pub fn write_blocks(&self) -> bool {
        match self.kind {
            ChanKind::Queue { capacity } => self.buf.len() as u32 >= capacity,
            ChanKind::Pipe { msg_bytes, .. } => !self.pipe_can_merge(msg_bytes) && self.pipe_full(),
            ChanKind::UnixStream { sndbuf, .. } => self.sk_wmem_alloc() >= sndbuf as u64,
        }
    }

    /// `pipe_write`'s merge test: the pipe was not empty (`!was_empty`) and
    /// the last page has room (`offset + len + chars <= PAGE_SIZE`; a page's
    /// offset + len is what was written into it, whatever was read since).
    fn pipe_can_merge(&self, msg_bytes: u32) -> bool {
        match self.slots.back() {
            Some(&(written, _)) => (written + 1) as u64 * msg_bytes as u64 <= PAGE_SIZE as u64,
            None => false,
        }
    }

    /// Queue a message the caller checked [`Chan::write_blocks`] for. A pipe
    /// merges it into the last page or takes a new slot.
    pub fn push(&mut self, msg: u64) {
        if let ChanKind::Pipe { msg_bytes, .. } = self.kind {
            if self.pipe_can_merge(msg_bytes) {
                let last = self.slots.back_mut().expect("merge needs a last page");
                last.0 += 1;
                last.1 += 1;
            } else {
                debug_assert!(!self.pipe_full(), "a write into a full pipe");
                self.slots.push_back((1, 1));
            }
        }
        self.buf.push_back(msg);
    }

    /// Read one message, and say which blocked writers the read wakes.
    /// `pipe_release_wakes_writer` (the sched feature of that name) picks the
    /// pipe rule: v6.14+ when set, v5.5 .. v6.13 otherwise. `None` when empty.
    pub fn pop(&mut self, pipe_release_wakes_writer: bool) -> Option<(u64, WriterWake)> {
        let was_full = self.pipe_full();
        let m = self.buf.pop_front()?;
        let wake = match self.kind {
            // Each read frees room for one message: wake one writer (no
            // kernel object; the behaviour schedlab always had).
            ChanKind::Queue { .. } => WriterWake::One { sync: false },
            ChanKind::Pipe { .. } => {
                let head = self.slots.front_mut().expect("a buffered message has a slot");
                head.1 -= 1;
                let released = head.1 == 0;
                if released {
                    // pipe_update_tail: the page goes back, tail++.
                    self.slots.pop_front();
                }
                // v6.14+ (`wake_writer |= pipe_full(head, tail, max_usage)`
                // before `pipe_update_tail`): only a read that released a
                // page of a full pipe. v5.5 .. v6.13 (`was_full`): any read
                // that started on a full pipe, although the page it read may
                // still hold messages, so the woken writer finds no room and
                // waits again. Either way one exclusive waiter, WF_SYNC.
                let wake = if pipe_release_wakes_writer { released && was_full } else { was_full };
                if wake {
                    WriterWake::One { sync: true }
                } else {
                    WriterWake::None
                }
            }
            // sock_wfree -> sk_write_space = unix_write_space: only once the
            // socket is unix_writable, then every sleeper in
            // sock_wait_for_wmem (non-exclusive), WF_SYNC.
            ChanKind::UnixStream { .. } => {
                if self.unix_writable() {
                    WriterWake::All
                } else {
                    WriterWake::None
                }
            }
        };
        Some((m, wake))
    }

    /// `pipe_write`'s `wake_next_writer`: a writer that waited for room and
    /// then wrote wakes the next waiting writer if the pipe is not full.
    pub fn wakes_next_writer(&self) -> bool {
        matches!(self.kind, ChanKind::Pipe { .. }) && !self.pipe_full()
    }
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

impl super::Sim {
    /// A write of one message to channel `c` by `p` on `cpu` (`pipe_write`,
    /// `unix_stream_sendmsg`): block if [`Chan::write_blocks`], else queue it
    /// and wake a blocked reader (with WF_SYNC when `sync`). A pipe writer
    /// that had to wait wakes the next waiting writer if room remains
    /// (`wake_next_writer`).
    pub(super) fn chan_send(
        &mut self,
        cpu: crate::ids::CpuId,
        p: TaskId,
        c: usize,
        msg: u64,
        sync: bool,
        action: crate::workload::Action,
    ) -> crate::Result<Option<super::exec::Stepped>> {
        let ch = &mut self.chans[c];
        if ch.write_blocks() {
            ch.writers.push_back(p);
            let t = &mut self.tasks[p.idx()];
            t.pending = Some(action);
            t.chan_waited = true;
            self.block_task(cpu, p, false);
            return Ok(Some(super::exec::Stepped::Reschedule));
        }
        ch.push(msg);
        let next_writer = std::mem::take(&mut self.tasks[p.idx()].chan_waited) && ch.wakes_next_writer();
        if let Some(r) = self.chans[c].readers.pop_front() {
            let flags = if sync { super::core::WF_SYNC } else { 0 };
            self.try_to_wake_up(r, flags, cpu, Some(p))?;
        }
        if next_writer {
            if let Some(w) = self.chans[c].writers.pop_front() {
                self.try_to_wake_up(w, super::core::WF_SYNC, cpu, Some(p))?;
            }
        }
        Ok(None)
    }

    /// A read of one message from channel `c` by `p` on `cpu` (`pipe_read`,
    /// `unix_stream_recvmsg`): block on an empty buffer, else take the
    /// message and wake the writers [`Chan::pop`] names.
    pub(super) fn chan_recv(
        &mut self,
        cpu: crate::ids::CpuId,
        p: TaskId,
        c: usize,
        action: crate::workload::Action,
    ) -> crate::Result<Option<super::exec::Stepped>> {
        let release_rule = crate::sched_feat!(self.features, pipe_release_wakes_writer);
        let Some((m, wake)) = self.chans[c].pop(release_rule) else {
            self.chans[c].readers.push_back(p);
            self.tasks[p.idx()].pending = Some(action);
            self.block_task(cpu, p, false);
            return Ok(Some(super::exec::Stepped::Reschedule));
        };
        self.tasks[p.idx()].msg = Some(m);
        match wake {
            WriterWake::None => {}
            WriterWake::One { sync } => {
                if let Some(w) = self.chans[c].writers.pop_front() {
                    let flags = if sync { super::core::WF_SYNC } else { 0 };
                    self.try_to_wake_up(w, flags, cpu, Some(p))?;
                }
            }
            WriterWake::All => {
                while let Some(w) = self.chans[c].writers.pop_back() {
                    self.try_to_wake_up(w, super::core::WF_SYNC, cpu, Some(p))?;
                }
            }
        }
        Ok(None)
    }
}
