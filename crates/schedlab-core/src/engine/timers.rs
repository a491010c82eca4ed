//! Per-CPU pending timers, for the idle governor's
//! `tick_nohz_get_sleep_length`: the next expiry among the sleep timers
//! armed on a CPU (a task's `Ev::Timer` fires on the CPU it slept on, as an
//! hrtimer fires on the CPU that armed it).
//!
//! One indexed binary min-heap per CPU, keyed by (expiry, task), with each
//! task's position kept so a cancelled timer (an early wakeup) leaves at
//! once: a task has at most one pending timer (`Task::timer_gen`). Arming,
//! cancelling and firing cost O(log n) in the CPU's timers; the next expiry
//! is O(1). A CPU's heap grows to the most timers it ever held and is never
//! shrunk, so the run allocates only while that maximum rises.
//!
//! Only menu and teo read the sleep length; under `avg_idle` (the default)
//! nothing is kept and arming or cancelling a timer returns at once.

use crate::ids::{CpuId, Ns, TaskId};

const NONE: u32 = u32::MAX;

/// Every CPU's pending timers.
#[derive(Clone, Debug, Default)]
pub struct TimerQueues {
    /// Per CPU, its tasks with a pending timer, heap-ordered by (expiry, task).
    heaps: Vec<Vec<TaskId>>,
    /// Per task, its timer's expiry, ns.
    expires: Vec<Ns>,
    /// Per task, the CPU of its pending timer.
    cpu: Vec<u32>,
    /// Per task, its index in that CPU's heap (`NONE`: no pending timer).
    pos: Vec<u32>,
    /// The idle governor reads the sleep length (menu, teo). `avg_idle`
    /// does not, and then no timer is kept: arming and cancelling return at
    /// once and every CPU's next expiry is none.
    tracked: bool,
}

impl TimerQueues {
    /// Queues for `nr_cpus` CPUs and `nr_tasks` tasks, all empty; kept only
    /// when `tracked`.
    pub fn new(nr_cpus: usize, nr_tasks: usize, tracked: bool) -> Self {
        TimerQueues {
            heaps: vec![Vec::new(); nr_cpus],
            expires: vec![0; nr_tasks],
            cpu: vec![0; nr_tasks],
            pos: vec![NONE; nr_tasks],
            tracked,
        }
    }

    fn key(&self, p: TaskId) -> (Ns, u32) {
        (self.expires[p.idx()], p.0)
    }

    /// Arm `p`'s timer on `cpu` to fire at `expires` (replacing a pending one).
    /// The test inlined (under `avg_idle` nothing is kept), the work not.
    #[inline]
    pub fn add(&mut self, cpu: CpuId, p: TaskId, expires: Ns) {
        if self.tracked {
            self.add_tracked(cpu, p, expires);
        }
    }

    /// [`TimerQueues::add`] when timers are kept.
    #[inline(never)]
    fn add_tracked(&mut self, cpu: CpuId, p: TaskId, expires: Ns) {
        self.del(p);
        self.expires[p.idx()] = expires;
        self.cpu[p.idx()] = cpu.0;
        let h = cpu.idx();
        self.heaps[h].push(p);
        let i = self.heaps[h].len() - 1;
        self.pos[p.idx()] = i as u32;
        self.sift_up(h, i);
    }

    /// Cancel `p`'s pending timer, if any (it fired or the task was woken).
    /// The test inlined (most wakeups find no timer), the removal not.
    #[inline]
    pub fn del(&mut self, p: TaskId) {
        if self.tracked && self.pos.get(p.idx()).is_some_and(|&i| i != NONE) {
            self.del_pending(p);
        }
    }

    #[inline(always)]
    fn del_pending(&mut self, p: TaskId) {
        let i = self.pos[p.idx()];
        let (h, i) = (self.cpu[p.idx()] as usize, i as usize);
        self.pos[p.idx()] = NONE;
        let last = self.heaps[h].pop().expect("a pending timer is in its heap");
        if i < self.heaps[h].len() {
            self.heaps[h][i] = last;
            self.pos[last.idx()] = i as u32;
            self.sift_down(h, i);
            self.sift_up(h, i);
        }
    }

    /// The earliest pending expiry on `cpu`.
    #[inline]
    pub fn next_expiry(&self, cpu: CpuId) -> Option<Ns> {
        self.heaps[cpu.idx()].first().map(|&p| self.expires[p.idx()])
    }

    fn swap(&mut self, h: usize, a: usize, b: usize) {
        self.heaps[h].swap(a, b);
        let (pa, pb) = (self.heaps[h][a], self.heaps[h][b]);
        self.pos[pa.idx()] = a as u32;
        self.pos[pb.idx()] = b as u32;
    }

    fn sift_up(&mut self, h: usize, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.key(self.heaps[h][i]) >= self.key(self.heaps[h][parent]) {
                break;
            }
            self.swap(h, i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, h: usize, mut i: usize) {
        let n = self.heaps[h].len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.key(self.heaps[h][l]) < self.key(self.heaps[h][m]) {
                m = l;
            }
            if r < n && self.key(self.heaps[h][r]) < self.key(self.heaps[h][m]) {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(h, i, m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a slow reference (a scan of every pending timer), through a
    /// deterministic mix of arms, re-arms and cancels on 3 CPUs.
    #[test]
    fn next_expiry_matches_a_scan() {
        let (nr_cpus, nr_tasks) = (3usize, 40usize);
        let mut q = TimerQueues::new(nr_cpus, nr_tasks, true);
        let mut reference: Vec<Option<(usize, Ns)>> = vec![None; nr_tasks];
        let mut x: u64 = 12345;
        for _ in 0..5000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = (x >> 33) as usize % nr_tasks;
            let cpu = (x >> 20) as usize % nr_cpus;
            let t = (x >> 40) % 1000;
            if (x >> 10).is_multiple_of(3) {
                q.del(TaskId(p as u32));
                reference[p] = None;
            } else {
                q.add(CpuId(cpu as u32), TaskId(p as u32), t);
                reference[p] = Some((cpu, t));
            }
            for c in 0..nr_cpus {
                let want = reference.iter().flatten().filter(|(rc, _)| *rc == c).map(|&(_, t)| t).min();
                assert_eq!(q.next_expiry(CpuId(c as u32)), want);
            }
        }
    }
}
