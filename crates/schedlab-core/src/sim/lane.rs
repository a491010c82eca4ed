//! FIFO lanes of the event queue: events that arrive in time order need no
//! heap.
//!
//! Some events are pushed in the order they are due: every CPU's tick is
//! armed at the next tick boundary (all CPUs' ticks are aligned), so a tick
//! pushed later is never due earlier; an IPI lands a fixed delay after it
//! is sent. Each push also takes the next sequence number, so such events
//! arrive in (time, sequence) order, the order they must pop in. A lane
//! keeps them in a doubly linked list over the queue's slots: append,
//! unlink (a cancelled or moved key) and taking the front are O(1), where
//! the heap costs O(log n) and every event it holds makes the others'
//! sifts deeper. The queue appends an event to a lane only when it is not
//! due before the lane's last one, so a lane stays sorted whatever its
//! users do; an event out of order goes to the heap.

use super::queue::Slot;

/// No slot (an empty lane's ends, a list end).
pub(super) const NIL: u32 = u32::MAX;

/// A slot's place in a lane: its order and neighbours.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    /// Time in the high 64 bits, sequence number in the low 64 (as
    /// `queue::Node`).
    pub order: u128,
    prev: u32,
    next: u32,
}

impl Default for Link {
    fn default() -> Self {
        Link { order: 0, prev: NIL, next: NIL }
    }
}

/// Slot `s`'s link, without a bounds test in release builds.
#[inline(always)]
fn link<E>(slots: &mut [Slot<E>], s: u32) -> &mut Link {
    debug_assert!((s as usize) < slots.len(), "slot {s} of {}", slots.len());
    // SAFETY: `slots` is the queue's (`EventQueue::slots`, the only
    // caller's), which never shrinks, and `s` a slot in this lane: one the
    // queue handed out and appended (see `EventQueue::slot_mut`), or a
    // neighbour's `prev`/`next`, which this lane wrote from such slots
    // (never `NIL` here: each use tests for it first).
    unsafe { &mut slots.get_unchecked_mut(s as usize).link }
}

/// One lane: the ends of a list of slots sorted by order, and their orders.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lane {
    /// The earliest slot, or `NIL`.
    pub head: u32,
    /// The latest slot, or `NIL`.
    tail: u32,
    /// The head's order, or `EMPTY_HEAD`: the queue finds the earliest lane
    /// front again whenever a head changes, and a copy here spares each
    /// lane's empty test and the load through the slots.
    pub head_order: u128,
    /// The tail's order, or 0 when empty (every order is above 0: sequence
    /// numbers start at 1), so that `accepts` is one comparison.
    tail_order: u128,
}

/// `head_order` of an empty lane: after every order (none reaches it, as a
/// sequence number never reaches `u64::MAX`).
pub(super) const EMPTY_HEAD: u128 = u128::MAX;

impl Default for Lane {
    fn default() -> Self {
        Lane { head: NIL, tail: NIL, head_order: EMPTY_HEAD, tail_order: 0 }
    }
}

impl Lane {
    /// Whether an event of `order` can go last without breaking the order.
    #[inline]
    pub fn accepts(&self, order: u128) -> bool {
        self.tail_order < order
    }

    /// Append `slot` (of `order`, which `accepts` allowed) at the end.
    #[inline]
    pub fn push_back<E>(&mut self, slots: &mut [Slot<E>], slot: u32, order: u128) {
        debug_assert!(self.accepts(order), "a lane must stay sorted");
        *link(slots, slot) = Link { order, prev: self.tail, next: NIL };
        if self.tail == NIL {
            self.head = slot;
            self.head_order = order;
        } else {
            link(slots, self.tail).next = slot;
        }
        self.tail = slot;
        self.tail_order = order;
    }

    /// Take the head out (the lane is not empty): `unlink` of a slot known
    /// to have no predecessor.
    #[inline]
    pub fn pop_front<E>(&mut self, slots: &mut [Slot<E>]) -> u32 {
        let slot = self.head;
        let next = link(slots, slot).next;
        self.head = next;
        if next == NIL {
            self.head_order = EMPTY_HEAD;
            self.tail = NIL;
            self.tail_order = 0;
        } else {
            let n = link(slots, next);
            self.head_order = n.order;
            n.prev = NIL;
        }
        slot
    }

    /// Take `slot`, which is in this lane, out of it.
    #[inline]
    pub fn unlink<E>(&mut self, slots: &mut [Slot<E>], slot: u32) {
        let Link { prev, next, .. } = *link(slots, slot);
        if prev == NIL {
            self.head = next;
            self.head_order = if next == NIL { EMPTY_HEAD } else { link(slots, next).order };
        } else {
            link(slots, prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
            self.tail_order = if prev == NIL { 0 } else { link(slots, prev).order };
        } else {
            link(slots, next).prev = prev;
        }
    }
}
