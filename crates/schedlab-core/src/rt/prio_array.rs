//! `struct rt_prio_array`: one FIFO list per RT priority level and a bitmap
//! of the non-empty levels, so the highest-priority task is found with one
//! bit search (`sched_find_first_bit`).
//!
//! The same structure stands in for the pushable-tasks `plist`: a plist
//! keeps nodes sorted by priority and, among equal priorities, in insertion
//! order (`plist_add` goes after the last node of its priority), which is
//! exactly a priority array walked from the lowest `prio` upward.
//!
//! Storage: the kernel's 100 `list_head`s become one vector of the queued
//! tasks sorted by `prio`, FIFO within a level, so that an array costs one
//! allocation at build instead of one per level (two arrays per CPU: at
//! 1024 CPUs, 2 allocations per CPU instead of 200, which was a tenth of
//! building the machine and as much again to free it). Cost: finding the
//! first task is O(1) (the bitmap, then the front); adding or removing a
//! task is a binary search for its level and a shift of the tasks after it,
//! O(k) in the tasks queued, which are few on an RT runqueue. No allocation
//! happens once the vector has grown to its peak length.

use crate::ids::TaskId;
use crate::rt::prio::MAX_RT_PRIO;

/// Tasks an array has room for at build (a runqueue rarely queues more RT
/// tasks; past it the vector grows once to its peak).
const INITIAL_ROOM: usize = 4;

/// A bitmap over the 100 RT levels plus the queued tasks in level order.
#[derive(Clone, Debug)]
pub struct PrioArray {
    /// Bit `i` of word `i / 64` is set iff level `i` has a task.
    bitmap: [u64; 2],
    /// The queued tasks with their `prio`, by `prio` then FIFO.
    queue: Vec<(i32, TaskId)>,
}

impl Default for PrioArray {
    fn default() -> Self {
        Self::new()
    }
}

impl PrioArray {
    /// An empty array (`init_rt_rq`) with room for `room` tasks, so small
    /// runs never allocate after construction.
    pub fn with_capacity(room: usize) -> Self {
        PrioArray { bitmap: [0; 2], queue: Vec::with_capacity(room) }
    }

    /// An empty array with room for a few tasks.
    pub fn new() -> Self {
        Self::with_capacity(INITIAL_ROOM)
    }

    /// Number of tasks queued.
    #[inline]
    pub fn len(&self) -> u32 {
        self.queue.len() as u32
    }

    /// Whether no task is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    #[inline]
    fn level(prio: i32) -> usize {
        debug_assert!((0..MAX_RT_PRIO).contains(&prio), "prio {prio} is not an RT level");
        prio as usize
    }

    /// Where level `prio` starts and ends in `queue`.
    #[inline]
    fn level_range(&self, prio: i32) -> (usize, usize) {
        let a = self.queue.partition_point(|&(q, _)| q < prio);
        let b = a + self.queue[a..].iter().take_while(|&&(q, _)| q == prio).count();
        (a, b)
    }

    /// Add `p` at `prio`, at the tail of the level or, with `head`, at its
    /// front (`list_add_tail` / `list_add` under ENQUEUE_HEAD).
    pub fn push(&mut self, p: TaskId, prio: i32, head: bool) {
        let i = Self::level(prio);
        debug_assert!(!self.level_tasks(prio).any(|t| t == p), "task {p} already queued at prio {prio}");
        let at = if head {
            self.queue.partition_point(|&(q, _)| q < prio)
        } else {
            self.queue.partition_point(|&(q, _)| q <= prio)
        };
        self.queue.insert(at, (prio, p));
        self.bitmap[i / 64] |= 1u64 << (i % 64);
    }

    /// Remove `p` from level `prio` (`__delist_rt_entity`), clearing the
    /// level's bit when it empties. Returns whether `p` was there.
    pub fn remove(&mut self, p: TaskId, prio: i32) -> bool {
        let i = Self::level(prio);
        let (a, b) = self.level_range(prio);
        let Some(pos) = self.queue[a..b].iter().position(|&(_, t)| t == p) else {
            return false;
        };
        self.queue.remove(a + pos);
        if b - a == 1 {
            self.bitmap[i / 64] &= !(1u64 << (i % 64));
        }
        true
    }

    /// Move `p` to the tail (or, with `head`, the front) of its level
    /// (`requeue_rt_entity`: `list_move_tail` / `list_move`). Returns whether
    /// `p` was queued at `prio`.
    pub fn requeue(&mut self, p: TaskId, prio: i32, head: bool) -> bool {
        let (a, b) = self.level_range(prio);
        let Some(pos) = self.queue[a..b].iter().position(|&(_, t)| t == p) else {
            return false;
        };
        let level = &mut self.queue[a..b];
        if head {
            level[..=pos].rotate_right(1);
        } else {
            level[pos..].rotate_left(1);
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
        self.queue.first().map(|&(prio, p)| (p, prio))
    }

    /// Whether level `prio` has a task (the bitmap bit).
    #[inline]
    pub fn test_level(&self, prio: i32) -> bool {
        let i = Self::level(prio);
        self.bitmap[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// The tasks of level `prio`, front first.
    pub fn level_tasks(&self, prio: i32) -> impl Iterator<Item = TaskId> + '_ {
        let (a, b) = self.level_range(Self::level(prio) as i32);
        self.queue[a..b].iter().map(|&(_, t)| t)
    }

    /// Every task with its `prio`, highest priority first and FIFO within a
    /// level (`plist_for_each_entry` order).
    pub fn iter(&self) -> impl Iterator<Item = (TaskId, i32)> + '_ {
        self.queue.iter().map(|&(prio, t)| (t, prio))
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

    #[test]
    fn head_requeue_and_removal_keep_the_other_levels_in_order() {
        let mut a = PrioArray::new();
        for (t, prio) in [(1, 30), (2, 10), (3, 30), (4, 30), (5, 50), (6, 10)] {
            a.push(TaskId(t), prio, false);
        }
        assert!(a.requeue(TaskId(4), 30, true));
        assert!(a.requeue(TaskId(2), 10, false));
        let order: Vec<(u32, i32)> = a.iter().map(|(t, p)| (t.0, p)).collect();
        assert_eq!(order, vec![(6, 10), (2, 10), (4, 30), (1, 30), (3, 30), (5, 50)]);
        assert!(a.remove(TaskId(5), 50));
        assert!(!a.test_level(50) && a.test_level(30));
        assert_eq!(a.first_prio(), Some(10));
        assert_eq!(a.len(), 5);
        assert!(!a.requeue(TaskId(5), 50, false), "no longer queued");
    }
}
