//! The event queue: a binary heap ordered by (time, sequence number).
//!
//! Ordering guarantee: events pop in time order; events with the same time pop
//! in the order they were pushed (FIFO), because each push takes the next
//! sequence number. This is what makes a run repeatable bit for bit.
//! Cancellation is lazy: an event carries whatever generation stamp its
//! handler checks (a CPU's `run_gen`, a task's `sleep_gen`), and a stale event
//! is dropped when popped. Push and pop are O(log n).

use crate::ids::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: Ns,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest pops first.
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A min-queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, now: 0 }
    }

    /// The time of the last popped event.
    #[inline]
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `ev` at `time`. Scheduling in the past is a broken invariant.
    #[inline]
    pub fn push(&mut self, time: Ns, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        let time = time.max(self.now);
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, ev });
    }

    /// Pop the earliest event and advance `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let e = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.ev))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.time)
    }

    /// Number of pending events (stale ones included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_fifo() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(5, 'b');
        q.push(10, 'c');
        q.push(5, 'd');
        let v: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(v, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 10);
    }
}
