//! The event queue: an indexed binary heap ordered by (time, sequence number).
//!
//! Ordering guarantee: events pop in time order; events with the same time pop
//! in the order they were pushed (FIFO), because each push takes the next
//! sequence number. This is what makes a run repeatable bit for bit.
//!
//! Events that replace each other have a *key* (a CPU's run-segment end, a
//! CPU's tick, a task's timer: the engine numbers them): a key has one slot,
//! and pushing it again moves the pending event in place (it takes a new
//! sequence number, as a fresh push would), and cancelling it takes it out.
//! So nothing is popped only to be thrown away: the queue holds live events
//! only, and its size is bounded by the keys plus the one-shot events in
//! flight. Other events are one-shot, each in a slot taken from a free list.
//! Push, pop, move and cancel are O(log n); the heap holds 24-byte nodes and
//! the payloads stay put in their slots.

use crate::ids::Ns;

/// Position of a slot that is not in the heap.
const NOT_QUEUED: u32 = u32::MAX;

/// A heap node: the order of an event and where its payload is.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Time in the high 64 bits, sequence number in the low 64: one
    /// comparison orders by time, then FIFO.
    order: u128,
    slot: u32,
}

impl Node {
    #[inline]
    fn new(time: Ns, seq: u64, slot: u32) -> Self {
        Node { order: ((time as u128) << 64) | seq as u128, slot }
    }

    #[inline]
    fn time(&self) -> Ns {
        (self.order >> 64) as Ns
    }

    /// Whether `self` pops before `o`.
    #[inline]
    fn before(&self, o: &Node) -> bool {
        self.order < o.order
    }
}

/// A min-queue of events of type `E`.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    heap: Vec<Node>,
    /// By slot: its node's index in `heap`, or `NOT_QUEUED`.
    pos: Vec<u32>,
    /// By slot: the payload of its pending event.
    evs: Vec<Option<E>>,
    /// Slots `0..keys` belong to keys; the rest are one-shot.
    keys: u32,
    /// Free one-shot slots.
    free: Vec<u32>,
    seq: u64,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0, without keys.
    pub fn new() -> Self {
        Self::with_keys(0)
    }

    /// An empty queue at time 0 with keys `0..keys`.
    pub fn with_keys(keys: u32) -> Self {
        let n = keys as usize;
        EventQueue {
            heap: Vec::with_capacity(n + 64),
            pos: vec![NOT_QUEUED; n],
            evs: (0..n).map(|_| None).collect(),
            keys,
            free: Vec::new(),
            seq: 0,
            now: 0,
        }
    }

    /// The time of the last popped event.
    #[inline]
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule the one-shot `ev` at `time`. Scheduling in the past is a
    /// broken invariant.
    #[inline]
    pub fn push(&mut self, time: Ns, ev: E) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.pos.push(NOT_QUEUED);
                self.evs.push(None);
                self.pos.len() as u32 - 1
            }
        };
        self.insert(slot, time, ev);
    }

    /// Schedule `ev` at `time` under `key`, replacing the key's pending
    /// event if there is one.
    #[inline]
    pub fn push_key(&mut self, key: u32, time: Ns, ev: E) {
        debug_assert!(key < self.keys, "key {key} out of range");
        let i = self.pos[key as usize];
        if i == NOT_QUEUED {
            self.insert(key, time, ev);
            return;
        }
        let time = self.check_time(time);
        self.seq += 1;
        let node = Node::new(time, self.seq, key);
        self.evs[key as usize] = Some(ev);
        // A move to a later time (a fresh sequence number is later too)
        // sinks; one to an earlier time rises.
        let old = self.heap[i as usize];
        if node.before(&old) {
            self.sift_up(i as usize, node);
        } else {
            self.sift_down(i as usize, node);
        }
    }

    /// Take `key`'s pending event out of the queue, if there is one.
    #[inline]
    pub fn cancel_key(&mut self, key: u32) {
        debug_assert!(key < self.keys, "key {key} out of range");
        let i = self.pos[key as usize];
        if i == NOT_QUEUED {
            return;
        }
        self.pos[key as usize] = NOT_QUEUED;
        self.evs[key as usize] = None;
        let last = self.heap.pop().expect("a queued key is in the heap");
        if (i as usize) < self.heap.len() {
            let old = self.heap[i as usize];
            if last.before(&old) {
                self.sift_up(i as usize, last);
            } else {
                self.sift_down(i as usize, last);
            }
        }
    }

    /// When `key`'s pending event is due, if it has one.
    #[cfg(test)]
    pub fn key_time(&self, key: u32) -> Option<Ns> {
        let p = self.pos[key as usize];
        (p != NOT_QUEUED).then(|| self.heap[p as usize].time())
    }

    /// Whether `key` has a pending event.
    #[inline]
    pub fn key_queued(&self, key: u32) -> bool {
        self.pos[key as usize] != NOT_QUEUED
    }

    /// Pop the earliest event and advance `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        if !self.heap.is_empty() {
            self.sift_down_to_bottom(last);
        }
        let slot = top.slot as usize;
        self.pos[slot] = NOT_QUEUED;
        if top.slot >= self.keys {
            self.free.push(top.slot);
        }
        let time = top.time();
        self.now = time;
        let ev = self.evs[slot].take().expect("a queued slot holds its event");
        Some((time, ev))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.first().map(Node::time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    #[inline]
    fn check_time(&self, time: Ns) -> Ns {
        debug_assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        time.max(self.now)
    }

    #[inline]
    fn insert(&mut self, slot: u32, time: Ns, ev: E) {
        let time = self.check_time(time);
        self.seq += 1;
        self.evs[slot as usize] = Some(ev);
        let node = Node::new(time, self.seq, slot);
        self.heap.push(node);
        self.sift_up(self.heap.len() - 1, node);
    }

    /// Put `node` at `i` or above it, moving the nodes it passes down.
    #[inline]
    fn sift_up(&mut self, mut i: usize, node: Node) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !node.before(&p) {
                break;
            }
            self.heap[i] = p;
            self.pos[p.slot as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = node;
        self.pos[node.slot as usize] = i as u32;
    }

    /// Refill the root's hole with `node` (the former last node): move the
    /// hole down along the earlier children to a leaf, one comparison a
    /// level, then let `node` rise from there. The last node usually
    /// belongs near the bottom, so this beats sinking it from the root.
    #[inline]
    fn sift_down_to_bottom(&mut self, node: Node) {
        let n = self.heap.len();
        let mut i = 0;
        let mut child = 1;
        while child + 1 < n {
            if self.heap[child + 1].before(&self.heap[child]) {
                child += 1;
            }
            let c = self.heap[child];
            self.heap[i] = c;
            self.pos[c.slot as usize] = i as u32;
            i = child;
            child = 2 * i + 1;
        }
        if child < n {
            let c = self.heap[child];
            self.heap[i] = c;
            self.pos[c.slot as usize] = i as u32;
            i = child;
        }
        self.sift_up(i, node);
    }

    /// Put `node` at `i` or below it, moving the nodes it passes up.
    #[inline]
    fn sift_down(&mut self, mut i: usize, node: Node) {
        let n = self.heap.len();
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.heap[child + 1].before(&self.heap[child]) {
                child += 1;
            }
            let c = self.heap[child];
            if !c.before(&node) {
                break;
            }
            self.heap[i] = c;
            self.pos[c.slot as usize] = i as u32;
            i = child;
        }
        self.heap[i] = node;
        self.pos[node.slot as usize] = i as u32;
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

    #[test]
    fn a_key_pushed_again_moves_and_takes_a_new_place_in_fifo_order() {
        let mut q = EventQueue::with_keys(2);
        q.push_key(0, 10, 'a');
        q.push(10, 'b');
        q.push_key(0, 10, 'A'); // replaces 'a' and now comes after 'b'
        q.push_key(1, 3, 'x');
        q.push_key(1, 20, 'X'); // moved later
        assert_eq!(q.len(), 3);
        let v: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(v, vec!['b', 'A', 'X']);
    }

    #[test]
    fn a_cancelled_key_never_pops_and_can_be_pushed_again() {
        let mut q = EventQueue::with_keys(1);
        q.push_key(0, 5, 'k');
        q.push(7, 'o');
        q.cancel_key(0);
        q.cancel_key(0);
        assert!(!q.key_queued(0));
        q.push_key(0, 9, 'K');
        let v: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(v, vec!['o', 'K']);
    }

    /// Against a model that pushes every event and drops stale ones when
    /// popped (what the queue did before keys): the same live events in the
    /// same order, on random pushes, moves and cancels.
    #[test]
    fn keys_pop_as_lazily_cancelled_events_would() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let keys = 1 + rnd(6) as u32;
            let mut q = EventQueue::with_keys(keys);
            // The model: (time, seq, key or none, generation), popped in order.
            let mut model: Vec<(Ns, u64, Option<u32>, u64, u32)> = Vec::new();
            let mut gens = vec![0u64; keys as usize];
            let (mut seq, mut now, mut id) = (0u64, 0, 0u32);
            let mut got = Vec::new();
            let mut want = Vec::new();
            for _ in 0..300 {
                match rnd(5) {
                    0 | 1 => {
                        let k = rnd(keys as u64) as u32;
                        let t = now + rnd(50);
                        gens[k as usize] += 1;
                        seq += 1;
                        id += 1;
                        model.push((t, seq, Some(k), gens[k as usize], id));
                        q.push_key(k, t, id);
                    }
                    2 => {
                        let t = now + rnd(50);
                        seq += 1;
                        id += 1;
                        model.push((t, seq, None, 0, id));
                        q.push(t, id);
                    }
                    3 => {
                        let k = rnd(keys as u64) as u32;
                        gens[k as usize] += 1;
                        q.cancel_key(k);
                    }
                    _ => {
                        // Pop one live event from each.
                        model.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
                        while let Some(e) = model.pop() {
                            let live = e.2.is_none_or(|k| gens[k as usize] == e.3);
                            if live {
                                now = e.0;
                                if let Some(k) = e.2 {
                                    gens[k as usize] += 1;
                                }
                                want.push((e.0, e.4));
                                break;
                            }
                        }
                        if let Some((t, v)) = q.pop() {
                            got.push((t, v));
                        }
                        assert_eq!(got, want);
                    }
                }
            }
            assert_eq!(q.len(), model.iter().filter(|e| e.2.is_none_or(|k| gens[k as usize] == e.3)).count());
        }
    }
}
