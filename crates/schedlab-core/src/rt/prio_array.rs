//! `struct rt_prio_array`: one FIFO list per RT priority level and a bitmap
//! of the non-empty levels, so the highest-priority task is found with one
//! bit search (`sched_find_first_bit`).
//!
//! The same structure stands in for the pushable-tasks `plist`: a plist
//! keeps nodes sorted by priority and, among equal priorities, in insertion
//! order (`plist_add` goes after the last node of its priority), which is
//! exactly a priority array walked from the lowest `prio` upward.
//!
//! Cost: enqueue at either end and pop are O(1); removing a given task is
//! O(k) in the length of its level (a scan of one `VecDeque`). Levels hold
//! few tasks in practice. No allocation happens once each level's
//! `VecDeque` has grown to its peak length.

use std::collections::VecDeque;

use crate::ids::TaskId;
use crate::rt::prio::MAX_RT_PRIO;

const LEVELS: usize = MAX_RT_PRIO as usize;

/// A bitmap over the 100 RT levels plus one FIFO list per level.
#[derive(Clone, Debug)]
pub struct PrioArray {
    /// Bit `i` of word `i / 64` is set iff `queue[i]` is non-empty.
    bitmap: [u64; 2],
    queue: Vec<VecDeque<TaskId>>,
    len: u32,
}

impl Default for PrioArray {
    fn default() -> Self {
        Self::new()
    }
}

impl PrioArray {
    /// An empty array (`init_rt_rq`). Each level starts with room for
    /// `per_level` tasks, so small runs never allocate after construction.
    pub fn with_capacity(per_level: usize) -> Self {
        PrioArray { bitmap: [0; 2], queue: (0..LEVELS).map(|_| VecDeque::with_capacity(per_level)).collect(), len: 0 }
    }

    /// An empty array with room for 2 tasks per level.
    pub fn new() -> Self {
        Self::with_capacity(2)
    }

    /// Number of tasks queued.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether no task is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn level(prio: i32) -> usize {
        debug_assert!((0..MAX_RT_PRIO).contains(&prio), "prio {prio} is not an RT level");
        prio as usize
    }

    /// Add `p` at `prio`, at the tail of the level or, with `head`, at its
    /// front (`list_add_tail` / `list_add` under ENQUEUE_HEAD).
    pub fn push(&mut self, p: TaskId, prio: i32, head: bool) {
        let i = Self::level(prio);
        debug_assert!(!self.queue[i].contains(&p), "task {p} already queued at prio {prio}");
        if head {
            self.queue[i].push_front(p);
        } else {
            self.queue[i].push_back(p);
        }
        self.bitmap[i / 64] |= 1u64 << (i % 64);
        self.len += 1;
    }

    /// Remove `p` from level `prio` (`__delist_rt_entity`), clearing the
    /// level's bit when it empties. Returns whether `p` was there.
    pub fn remove(&mut self, p: TaskId, prio: i32) -> bool {
        let i = Self::level(prio);
        let q = &mut self.queue[i];
        let Some(pos) = q.iter().position(|&t| t == p) else {
            return false;
        };
        q.remove(pos);
        if q.is_empty() {
            self.bitmap[i / 64] &= !(1u64 << (i % 64));
        }
        self.len -= 1;
        true
    }

    /// Move `p` to the tail (or, with `head`, the front) of its level
    /// (`requeue_rt_entity`: `list_move_tail` / `list_move`). Returns whether
    /// `p` was queued at `prio`.
    pub fn requeue(&mut self, p: TaskId, prio: i32, head: bool) -> bool {
        let i = Self::level(prio);
        let q = &mut self.queue[i];
        let Some(pos) = q.iter().position(|&t| t == p) else {
            return false;
        };
        q.remove(pos);
        if head {
            q.push_front(p);
        } else {
            q.push_back(p);
        }
        true
    }

    /// The lowest non-empty `prio` (`sched_find_first_bit`), if any.
    #[inline]
    pub fn first_prio(&self) -> Option<i32> {
        if self.bitmap[0] != 0 {
            Some(self.bitmap[0].trailing_zeros() as i32)
        } else if self.bitmap[1] != 0 {
            Some(64 + self.bitmap[1].trailing_zeros() as i32)
        } else {
            None
        }
    }

    /// The first task of the highest-priority level and its `prio`.
    #[inline]
    pub fn first(&self) -> Option<(TaskId, i32)> {
        let prio = self.first_prio()?;
        Some((self.queue[prio as usize][0], prio))
    }

    /// Whether level `prio` has a task (the bitmap bit).
    #[inline]
    pub fn test_level(&self, prio: i32) -> bool {
        let i = Self::level(prio);
        self.bitmap[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// The tasks of level `prio`, front first.
    pub fn level_tasks(&self, prio: i32) -> impl Iterator<Item = TaskId> + '_ {
        self.queue[Self::level(prio)].iter().copied()
    }

    /// Every task with its `prio`, highest priority first and FIFO within a
    /// level (`plist_for_each_entry` order). Visits only non-empty levels.
    pub fn iter(&self) -> impl Iterator<Item = (TaskId, i32)> + '_ {
        let mut bits = self.bitmap;
        std::iter::from_fn(move || {
            let w = if bits[0] != 0 {
                0
            } else if bits[1] != 0 {
                1
            } else {
                return None;
            };
            let b = bits[w].trailing_zeros() as usize;
            bits[w] &= bits[w] - 1;
            Some(w * 64 + b)
        })
        .flat_map(move |i| self.queue[i].iter().map(move |&t| (t, i as i32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TaskId = TaskId(1);
    const B: TaskId = TaskId(2);
    const C: TaskId = TaskId(3);

    #[test]
    fn highest_priority_is_first() {
        let mut a = PrioArray::new();
        a.push(A, 50, false);
        a.push(B, 10, false);
        a.push(C, 70, false);
        assert_eq!(a.first(), Some((B, 10)));
    }

    #[test]
    fn levels_above_63_use_second_word() {
        let mut a = PrioArray::new();
        a.push(A, 98, false);
        assert_eq!(a.first_prio(), Some(98));
        a.push(B, 64, false);
        assert_eq!(a.first_prio(), Some(64));
    }

    #[test]
    fn fifo_within_level() {
        let mut a = PrioArray::new();
        a.push(A, 20, false);
        a.push(B, 20, false);
        assert_eq!(a.first(), Some((A, 20)));
    }

    #[test]
    fn head_enqueue_goes_first() {
        let mut a = PrioArray::new();
        a.push(A, 20, false);
        a.push(B, 20, true);
        assert_eq!(a.first(), Some((B, 20)));
    }

    #[test]
    fn requeue_moves_to_tail() {
        let mut a = PrioArray::new();
        a.push(A, 20, false);
        a.push(B, 20, false);
        assert!(a.requeue(A, 20, false));
        assert_eq!(a.level_tasks(20).collect::<Vec<_>>(), vec![B, A]);
    }

    #[test]
    fn bit_cleared_when_level_empties() {
        let mut a = PrioArray::new();
        a.push(A, 20, false);
        a.push(B, 20, false);
        assert!(a.remove(A, 20));
        assert!(a.test_level(20));
        assert!(a.remove(B, 20));
        assert!(!a.test_level(20));
        assert_eq!(a.first(), None);
        assert!(a.is_empty());
    }

    #[test]
    fn remove_of_absent_task_reports_false() {
        let mut a = PrioArray::new();
        a.push(A, 20, false);
        assert!(!a.remove(B, 20));
        assert!(!a.remove(A, 21));
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn iter_is_priority_then_fifo_order() {
        let mut a = PrioArray::new();
        a.push(A, 80, false);
        a.push(B, 5, false);
        a.push(C, 80, false);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(B, 5), (A, 80), (C, 80)]);
    }
}
