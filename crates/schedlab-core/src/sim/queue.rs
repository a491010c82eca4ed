//! The event queue: an indexed binary heap ordered by (time, sequence number),
//! beside a few FIFO lanes (`sim::lane`) for events pushed in the order they
//! are due.
//!
//! Ordering guarantee: events pop in time order; events with the same time pop
//! in the order they were pushed (FIFO), because each push takes the next
//! sequence number. This is what makes a run repeatable bit for bit. Where an
//! event is kept (the heap or a lane) changes nothing about when it pops: a
//! pop takes the earliest of the heap's top and the lanes' fronts.
//!
//! Events that replace each other have a *key* (a CPU's run-segment end, a
//! CPU's tick, a task's timer: the engine numbers them): a key has one slot,
//! and pushing it again moves the pending event in place (it takes a new
//! sequence number, as a fresh push would), and cancelling it takes it out.
//! So nothing is popped only to be thrown away: the queue holds live events
//! only, and its size is bounded by the keys plus the one-shot events in
//! flight. Other events are one-shot, each in a slot taken from a free list.
//! Push, pop, move and cancel are O(log n) in the heap, O(1) in a lane (and
//! a pop compares the heap's top with the earliest lane front); the heap holds
//! 32-byte nodes (a `u128` order and a slot, aligned to 16 bytes) and the
//! payloads stay put in their slots. The heap is 1-based between two guard
//! nodes, one ordered before every event (the root's parent) and one after
//! (past the last node): a sift reads a node's two children as one pair,
//! with one bounds test and no test that the right child exists, and a
//! rising node stops below the first guard without a test for the root.

use super::lane::{Lane, Link, EMPTY_HEAD};
use crate::ids::Ns;

/// Position of a slot that is not queued.
const NOT_QUEUED: u32 = u32::MAX;

/// A slot's position when it is in lane `l`: `IN_LANE | l` (heap positions
/// stay below it).
const IN_LANE: u32 = 1 << 31;

/// Number of FIFO lanes; what each is for is the user's choice (the engine
/// names them).
pub const LANES: usize = 3;

/// A heap node: the order of an event and where its payload is.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Time in the high 64 bits, sequence number in the low 64: one
    /// comparison orders by time, then FIFO.
    order: u128,
    slot: u32,
}

#[inline]
fn order_of(time: Ns, seq: u64) -> u128 {
    ((time as u128) << 64) | seq as u128
}

#[inline]
fn time_of(order: u128) -> Ns {
    (order >> 64) as Ns
}

impl Node {
    /// Whether `self` pops before `o`.
    #[inline]
    fn before(&self, o: &Node) -> bool {
        self.order < o.order
    }
}

/// Where the earliest event is.
#[derive(Clone, Copy)]
enum Front {
    Heap,
    Lane(usize),
}

/// The heap is 1-based: the root is `heap[ROOT]`, node `i`'s children are
/// `2i` and `2i + 1` (a pair read with one bounds test) and its parent `i / 2`.
const ROOT: usize = 1;

/// `heap[0]`, the root's parent: ordered before every event (each has a
/// sequence number from 1), so a node rising to the root stops there
/// without testing for the root.
const FIRST: Node = Node { order: 0, slot: NOT_QUEUED };

/// The node past the heap's last: ordered after every event, so a last
/// child's right neighbour is read, and never taken, without testing that it
/// exists; with it, "has children" is "both child places are in the vector".
const SENTINEL: Node = Node { order: u128::MAX, slot: NOT_QUEUED };

// `front` reads an empty heap's root, the sentinel, as an empty lane's head.
const _: () = assert!(SENTINEL.order == EMPTY_HEAD);

/// Note `slot`'s heap position `i` if it is a key's (`pos` covers the keys
/// only: the bounds test is the key test).
#[inline(always)]
fn set_pos(pos: &mut [u32], slot: u32, i: u32) {
    if let Some(p) = pos.get_mut(slot as usize) {
        *p = i;
    }
}

/// Lane `l` of `lanes` (the queue's), without a bounds test in release
/// builds.
#[inline(always)]
fn lane_at(lanes: &mut [Lane; LANES], l: usize) -> &mut Lane {
    debug_assert!(l < LANES, "lane {l} of {LANES}");
    // SAFETY: `l` is a lane the queue recorded after indexing `lanes` with a
    // bounds test (`lane_append`): `lane_min_at` (set from the lanes' own
    // enumeration or from such an `l`), or a key's `pos` entry `IN_LANE | l`.
    unsafe { lanes.get_unchecked_mut(l) }
}

/// A slot's state: what a pending event needs besides its heap node.
#[derive(Clone, Debug)]
pub(super) struct Slot<E> {
    /// Its order and neighbours while it is in a lane.
    pub(super) link: Link,
    /// The payload of its pending event.
    ev: Option<E>,
}

impl<E> Slot<E> {
    fn new() -> Self {
        Slot { link: Link::default(), ev: None }
    }
}

/// A min-queue of events of type `E`.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    /// `FIRST`, the heap's nodes from `ROOT` (a hole at the root included),
    /// then one `SENTINEL`.
    heap: Vec<Node>,
    /// By key (slots `0..pos.len()` are the keys', the rest one-shot): its
    /// node's index in `heap`, `IN_LANE | lane`, or `NOT_QUEUED`. A one-shot
    /// event is never moved or cancelled, so its place is not kept: the
    /// sifts and a pop write a slot's entry through `get_mut`, whose bounds
    /// test is the test for a key.
    pos: Vec<u32>,
    /// By slot: its payload and lane link in one record, so that one bounds
    /// test reaches both (a lane's pop and append).
    slots: Vec<Slot<E>>,
    lanes: [Lane; LANES],
    /// The earliest of the lanes' `head_order`s (`EMPTY_HEAD` when all are
    /// empty) and its lane, kept up to date when a lane's head changes
    /// (an append to an empty lane, a pop or unlink of a head): a pop then
    /// compares the heap's top with one order instead of every lane's front.
    lane_min: u128,
    lane_min_at: usize,
    /// Events in the lanes.
    in_lanes: usize,
    /// The heap's root was popped and not refilled yet (`heap[ROOT]` is
    /// stale): the next heap insert takes its place (see `pop_due`).
    hole: bool,
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
            heap: {
                let mut h = Vec::with_capacity(n + 64);
                h.extend([FIRST, SENTINEL]);
                h
            },
            pos: vec![NOT_QUEUED; n],
            slots: (0..n).map(|_| Slot::new()).collect(),
            lanes: [Lane::default(); LANES],
            lane_min: EMPTY_HEAD,
            lane_min_at: 0,
            in_lanes: 0,
            hole: false,
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

    /// Schedule the one-shot `ev` at `time` (in the heap). Scheduling in the
    /// past is a broken invariant.
    #[inline]
    pub fn push(&mut self, time: Ns, ev: E) {
        let slot = self.one_shot_slot();
        self.insert(None, false, slot, time, ev);
    }

    /// Schedule the one-shot `ev` at `time` in lane `lane` if it is not due
    /// before the lane's last event, else in the heap.
    #[inline]
    pub fn push_in(&mut self, lane: usize, time: Ns, ev: E) {
        let slot = self.one_shot_slot();
        self.insert(Some(lane), false, slot, time, ev);
    }

    /// Schedule `ev` at `time` under `key` (in the heap), replacing the
    /// key's pending event if there is one.
    #[inline]
    pub fn push_key(&mut self, key: u32, time: Ns, ev: E) {
        self.push_key_to(None, key, time, ev);
    }

    /// As `push_key`, in lane `lane` when the event is not due before the
    /// lane's last one.
    #[inline]
    pub fn push_key_in(&mut self, lane: usize, key: u32, time: Ns, ev: E) {
        self.push_key_to(Some(lane), key, time, ev);
    }

    #[inline(always)]
    fn push_key_to(&mut self, lane: Option<usize>, key: u32, time: Ns, ev: E) {
        debug_assert!((key as usize) < self.pos.len(), "key {key} out of range");
        let i = self.pos[key as usize];
        if i == NOT_QUEUED {
            self.insert(lane, true, key, time, ev);
            return;
        }
        if i & IN_LANE != 0 {
            self.unlink(key, i);
            self.insert(lane, true, key, time, ev);
            return;
        }
        // The root may be a hole (a popped root not refilled yet): the key
        // is not there, and nothing rises into it (see `heap_remove`).
        let time = self.check_time(time);
        self.seq += 1;
        let order = order_of(time, self.seq);
        if let Some(l) = lane {
            if self.lanes[l].accepts(order) {
                self.heap_remove(i as usize);
                self.lane_append(l, true, key, order, ev);
                return;
            }
        }
        let node = Node { order, slot: key };
        self.slot_mut(key).ev = Some(ev);
        if self.hole {
            // The moved event fills the hole (usually soon due, it sinks
            // a few levels) and the last node its old place, instead of a
            // refill (the last node sunk from the root) and a move.
            self.hole = false;
            self.heap_remove(i as usize);
            self.sift_down(ROOT, node);
            return;
        }
        // A move to a later time (a fresh sequence number is later too)
        // sinks; one to an earlier time rises.
        let old = self.node(i as usize);
        if node.before(&old) {
            self.sift_up(i as usize, node);
        } else {
            self.sift_down(i as usize, node);
        }
    }

    /// Take `key`'s pending event out of the queue, if there is one.
    #[inline(always)]
    pub fn cancel_key(&mut self, key: u32) {
        debug_assert!((key as usize) < self.pos.len(), "key {key} out of range");
        let i = self.pos[key as usize];
        if i == NOT_QUEUED {
            return;
        }
        self.slot_mut(key).ev = None;
        if i & IN_LANE != 0 {
            self.unlink(key, i);
        } else {
            // A hole at the root stays for the next insert to fill.
            self.heap_remove(i as usize);
        }
    }

    /// When `key`'s pending event is due, if it has one.
    #[cfg(test)]
    pub fn key_time(&self, key: u32) -> Option<Ns> {
        let p = self.pos[key as usize];
        if p == NOT_QUEUED {
            None
        } else if p & IN_LANE != 0 {
            Some(time_of(self.slots[key as usize].link.order))
        } else {
            Some(time_of(self.heap[p as usize].order))
        }
    }

    /// Whether `key` has a pending event.
    #[inline]
    pub fn key_queued(&self, key: u32) -> bool {
        self.pos[key as usize] != NOT_QUEUED
    }

    /// Pop the earliest event and advance `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        self.pop_due(Ns::MAX)
    }

    /// Pop the earliest event if it is due at `max_time` or before, and
    /// advance `now` to its time.
    ///
    /// A popped heap root is not refilled at once: the handler of the event
    /// usually queues the next one of its CPU (a run segment's end, often
    /// among the earliest events), and that one goes into the hole and
    /// sinks from the root, which costs the few levels it sinks, where a
    /// refill (the last node, which belongs near the bottom, sunk from the
    /// root) and a push cost more. Anything else refills the hole first
    /// (`settle`).
    #[inline]
    pub fn pop_due(&mut self, max_time: Ns) -> Option<(Ns, E)> {
        self.settle();
        let (order, front) = self.front()?;
        let time = time_of(order);
        if time > max_time {
            return None;
        }
        let slot = match front {
            Front::Heap => {
                // The last node too: the hole's refill then takes the
                // stale root itself out (`pop_last`) and sifts nothing.
                self.hole = true;
                self.node(ROOT).slot
            }
            Front::Lane(l) => {
                let s = lane_at(&mut self.lanes, l).pop_front(&mut self.slots);
                self.lanes_changed();
                self.in_lanes -= 1;
                s
            }
        };
        match self.pos.get_mut(slot as usize) {
            Some(p) => *p = NOT_QUEUED,
            None => self.free.push(slot),
        }
        self.now = time;
        let ev = self.slot_mut(slot).ev.take().expect("a queued slot holds its event");
        Some((time, ev))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Ns> {
        self.settle();
        self.front().map(|(o, _)| time_of(o))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - 2 - self.hole as usize + self.in_lanes
    }

    /// Refill the root's hole, if there is one, with the last node: the
    /// test inlined, the refill not.
    #[inline(always)]
    fn settle(&mut self) {
        if self.hole {
            self.refill_hole();
        }
    }

    /// Sunk from the root with a test at each level: the bottom-up refill
    /// (the hole moved down along the earlier children to a leaf, one
    /// comparison a level, then the last node risen from there) cost
    /// 0.52 M more on the standard bench (round 20).
    #[inline(never)]
    fn refill_hole(&mut self) {
        self.hole = false;
        let last = self.pop_last();
        if self.heap.len() > 2 {
            self.sift_down(ROOT, last);
        }
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The earliest event's order and where it is (the heap settled).
    #[inline]
    fn front(&self) -> Option<(u128, Front)> {
        debug_assert!(!self.hole);
        // An empty heap's root is the sentinel, ordered as an empty lane.
        let top = self.node(ROOT).order;
        if self.lane_min < top {
            Some((self.lane_min, Front::Lane(self.lane_min_at)))
        } else if top != EMPTY_HEAD {
            Some((top, Front::Heap))
        } else {
            None
        }
    }

    /// Find the earliest lane front again (a lane's head changed).
    #[inline]
    fn lanes_changed(&mut self) {
        let (mut best, mut at) = (EMPTY_HEAD, 0);
        for (l, lane) in self.lanes.iter().enumerate() {
            if lane.head_order < best {
                best = lane.head_order;
                at = l;
            }
        }
        self.lane_min = best;
        self.lane_min_at = at;
    }

    /// An event's time, not before the last popped one: every caller
    /// clamps it so (`Sim::at` and `at_in`, `sleep_until`) or computes it
    /// from `now` forward (a segment's end from `ready_at.max(now)`, the next
    /// tick boundary, `now` plus a slice or a delay), so release builds do
    /// not clamp it again (0.3% of the standard bench, round 20); debug
    /// builds check it.
    #[inline]
    fn check_time(&self, time: Ns) -> Ns {
        debug_assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        time
    }

    /// Heap node `i`, without a bounds test in release builds.
    #[inline(always)]
    fn node(&self, i: usize) -> Node {
        debug_assert!(i < self.heap.len(), "heap place {i} of {}", self.heap.len());
        // SAFETY: `i` is a heap place this queue computed, below
        // `heap.len()`: `ROOT` (the heap always holds `FIRST` and
        // `SENTINEL`: `with_keys` puts them there and `pop_last` and
        // `pop_due` take a node from between them only), a key's place from
        // `pos` (a key in the heap is at a place the sifts wrote there, and
        // `heap_remove` and `pop_due` reset it when the node leaves), a place
        // below the last node (`heap_remove` tests it, `insert` pushes the
        // new last place first), or the parent of such a place.
        unsafe { *self.heap.get_unchecked(i) }
    }

    /// Write heap node `i` (a place as in [`EventQueue::node`]).
    #[inline(always)]
    fn set_node(&mut self, i: usize, node: Node) {
        debug_assert!(i < self.heap.len(), "heap place {i} of {}", self.heap.len());
        // SAFETY: as in `node`: `i` is a place this queue computed below
        // `heap.len()`.
        unsafe { *self.heap.get_unchecked_mut(i) = node }
    }

    /// Slot `s`, without a bounds test in release builds.
    #[inline(always)]
    fn slot_mut(&mut self, s: u32) -> &mut Slot<E> {
        debug_assert!((s as usize) < self.slots.len(), "slot {s} of {}", self.slots.len());
        // SAFETY: `s` is a slot this queue handed out, and `slots` never
        // shrinks: a one-shot slot from `one_shot_slot` (pushed there or
        // taken back from the free list), or a key after `pos[key]` was
        // indexed (keys are slots `0..pos.len()`, and `with_keys` makes
        // `slots` at least that long); a node's or lane link's slot is one of
        // these, written by this queue.
        unsafe { self.slots.get_unchecked_mut(s as usize) }
    }

    /// Key `key`'s place, without a bounds test in release builds.
    #[inline(always)]
    fn key_pos_mut(&mut self, key: u32) -> &mut u32 {
        debug_assert!((key as usize) < self.pos.len(), "key {key} of {}", self.pos.len());
        // SAFETY: `key` is a key whose place `push_key_to` or `cancel_key`
        // has already read from `pos` with a bounds test (only a key's slot
        // is appended to a lane with `keyed` or unlinked), and `pos` never
        // changes length.
        unsafe { self.pos.get_unchecked_mut(key as usize) }
    }

    /// A free one-shot slot.
    #[inline]
    fn one_shot_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::new());
                self.slots.len() as u32 - 1
            }
        }
    }

    /// Queue `ev` in the free `slot`: in `lane` if it keeps the lane's
    /// order, else in the heap. `keyed`: the slot is a key's, whose position
    /// `pos` keeps (a constant at each caller, so the test folds away).
    #[inline(always)]
    fn insert(&mut self, lane: Option<usize>, keyed: bool, slot: u32, time: Ns, ev: E) {
        let time = self.check_time(time);
        self.seq += 1;
        let order = order_of(time, self.seq);
        if let Some(l) = lane {
            if self.lanes[l].accepts(order) {
                self.lane_append(l, keyed, slot, order, ev);
                return;
            }
        }
        self.slot_mut(slot).ev = Some(ev);
        let node = Node { order, slot };
        if self.hole {
            self.hole = false;
            self.sift_down(ROOT, node);
        } else {
            // The sentinel's place, which `sift_up` fills; a new one after it.
            self.heap.push(SENTINEL);
            self.sift_up(self.heap.len() - 2, node);
        }
    }

    #[inline]
    fn lane_append(&mut self, l: usize, keyed: bool, slot: u32, order: u128, ev: E) {
        self.slot_mut(slot).ev = Some(ev);
        self.lanes[l].push_back(&mut self.slots, slot, order);
        // Only an append to an empty lane changes its head, to `order`; a
        // lane with a head already has one before `order`.
        if order < self.lane_min {
            self.lane_min = order;
            self.lane_min_at = l;
        }
        if keyed {
            *self.key_pos_mut(slot) = IN_LANE | l as u32;
        }
        self.in_lanes += 1;
    }

    /// Take `slot` (at position `p`, in a lane) out of its lane.
    #[inline(always)]
    fn unlink(&mut self, slot: u32, p: u32) {
        let lane = lane_at(&mut self.lanes, (p & !IN_LANE) as usize);
        let was_head = lane.head == slot;
        lane.unlink(&mut self.slots, slot);
        if was_head {
            self.lanes_changed();
        }
        self.in_lanes -= 1;
        *self.key_pos_mut(slot) = NOT_QUEUED;
    }

    /// Take the node at heap index `i` out of the heap. The root may be a
    /// hole (`i` is not the root then): its stale node is the last popped
    /// event, ordered before every queued one, so no node rises into it.
    #[inline]
    fn heap_remove(&mut self, i: usize) {
        debug_assert!(!self.hole || i > ROOT);
        let slot = self.node(i).slot;
        set_pos(&mut self.pos, slot, NOT_QUEUED);
        let last = self.pop_last();
        if i < self.heap.len() - 1 {
            let old = self.node(i);
            if last.before(&old) {
                self.sift_up(i, last);
            } else {
                self.sift_down(i, last);
            }
        }
    }

    /// Take the heap's last node out (the sentinel takes its place).
    #[inline]
    fn pop_last(&mut self) -> Node {
        debug_assert!(self.heap.len() > 2, "a queued key is in the heap");
        self.heap.swap_remove(self.heap.len() - 2)
    }

    /// Put `node` at `i` or above it, moving the nodes it passes down.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, node: Node) {
        loop {
            let parent = i / 2;
            // At the root, `heap[0]` (`FIRST`) stops the climb.
            let p = self.node(parent);
            if !node.before(&p) {
                break;
            }
            self.set_node(i, p);
            set_pos(&mut self.pos, p.slot, i as u32);
            i = parent;
        }
        self.set_node(i, node);
        set_pos(&mut self.pos, node.slot, i as u32);
    }

    /// Put `node` at `i` or below it, moving the nodes it passes up.
    #[inline(always)]
    fn sift_down(&mut self, i: usize, node: Node) {
        let heap = &mut self.heap[..];
        // A position as `u32` (as `pos` keeps it): `2 * i` cannot overflow,
        // so the pair read proves `i` in bounds and `heap[i]` is not tested.
        let mut i = i as u32;
        while let Some(pair) = heap.get(2 * i as usize..2 * i as usize + 2) {
            let k = pair[1].before(&pair[0]) as u32;
            let (c, child) = (pair[k as usize], 2 * i + k);
            if !c.before(&node) {
                break;
            }
            heap[i as usize] = c;
            set_pos(&mut self.pos, c.slot, i);
            i = child;
        }
        heap[i as usize] = node;
        set_pos(&mut self.pos, node.slot, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_node_is_32_bytes() {
        // What the module doc and the engine README say.
        assert_eq!(std::mem::size_of::<Node>(), 32);
    }

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

    #[test]
    fn lanes_and_heap_pop_in_one_order() {
        let mut q = EventQueue::with_keys(2);
        q.push_in(0, 10, 'a');
        q.push_in(0, 5, 'b'); // before the lane's last: to the heap
        q.push_key_in(0, 0, 10, 'c');
        q.push_in(1, 10, 'd');
        q.push(7, 'e');
        q.push_key_in(0, 1, 12, 'f');
        q.push_key_in(1, 0, 11, 'C'); // moved from lane 0 to lane 1
        q.cancel_key(1);
        assert_eq!(q.len(), 5);
        assert_eq!(q.key_time(0), Some(11));
        assert_eq!(q.pop_due(4), None);
        let v: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(v, vec!['b', 'e', 'a', 'd', 'C']);
        assert!(q.is_empty());
    }

    #[test]
    fn the_popped_roots_hole_is_filled_by_a_push_or_before_anything_else() {
        let mut q = EventQueue::with_keys(3);
        for (k, t) in [(0, 5), (1, 8), (2, 9)] {
            q.push_key(k, t, k);
        }
        q.push(7, 10);
        assert_eq!(q.pop(), Some((5, 0)));
        q.push_key(0, 6, 20); // into the hole
        assert_eq!(q.pop(), Some((6, 20)));
        q.push_key(1, 12, 21); // a move while the root is a hole
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(), Some((7, 10)));
        q.cancel_key(2); // a cancel while the root is a hole
        assert_eq!(q.peek_time(), Some(12));
        assert_eq!(q.pop(), Some((12, 21)));
        assert!(q.is_empty());
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
                        match rnd(LANES as u64 + 1) as usize {
                            LANES => q.push_key(k, t, id),
                            l => q.push_key_in(l, k, t, id),
                        }
                    }
                    2 => {
                        let t = now + rnd(50);
                        seq += 1;
                        id += 1;
                        model.push((t, seq, None, 0, id));
                        match rnd(LANES as u64 + 1) as usize {
                            LANES => q.push(t, id),
                            l => q.push_in(l, t, id),
                        }
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
