//! The runqueues of the machine, one per CPU, and which of them changed.
//!
//! Every mutable access to a runqueue goes through `IndexMut`, which notes
//! the CPU as *changed*. The fair class
//! keeps per-group sums of what `update_sg_lb_stats` reads
//! (`fair::sg_sums`) and brings them up to date from this list before a
//! balance pass, so a pass costs its groups instead of their CPUs. Noting a
//! CPU is a flag test and, the first time, a push into a list sized to the
//! machine at build: no allocation on the hot path. A runqueue borrowed
//! mutably for a reason the sums do not care about is only re-read once.
//!
//! Indexing a runqueue tests no bound in release builds: the runqueues are
//! an [`IdTable`] by CPU id (its module says which invariant keeps that
//! sound); with 8.9 M runqueue accesses a standard bench, the tests were
//! 2.5% of its instructions. Debug builds assert the bound at each access.

use super::rq::{Rq, SdRuntime};
use crate::id_table::IdTable;
use std::ops::{Deref, Index, IndexMut};

/// The runqueues, indexed by CPU, with the set of CPUs changed since the
/// last [`Rqs::take_changed`].
#[derive(Clone, Debug)]
pub struct Rqs {
    /// The runqueues; each one's `noted_changed` says it is in `changed`.
    rqs: IdTable<Rq>,
    /// CPUs changed since the last take, in the order first changed.
    changed: Vec<u32>,
    /// The other list's storage, while not handed out (both hold up to
    /// one entry per CPU, so neither grows after the first passes).
    spare: Vec<u32>,
}

impl Rqs {
    /// Wrap `rqs`; every CPU starts changed (nothing summed yet).
    pub(crate) fn new(mut rqs: Vec<Rq>) -> Self {
        let n = rqs.len();
        for rq in &mut rqs {
            rq.noted_changed = true;
        }
        Rqs { rqs: IdTable::new(rqs), changed: (0..n as u32).collect(), spare: Vec::with_capacity(n) }
    }

    /// Whether runqueue `i` changed since the last take.
    #[inline]
    pub fn is_changed(&self, i: usize) -> bool {
        self.get(i).noted_changed
    }

    /// Whether some runqueue changed since the last take.
    #[inline]
    pub fn any_changed(&self) -> bool {
        !self.changed.is_empty()
    }

    /// The CPUs changed since the last call, forgotten here: a runqueue
    /// changed from now on is noted anew. Hand the list back with
    /// [`Rqs::give_back`] so its storage is reused.
    pub fn take_changed(&mut self) -> Vec<u32> {
        for &i in &self.changed {
            self.rqs[i as usize].noted_changed = false;
        }
        std::mem::replace(&mut self.changed, std::mem::take(&mut self.spare))
    }

    /// The CPUs changed since the last call, their flags still set: the
    /// caller clears each one ([`Rqs::clear_changed`]) as it reads that
    /// runqueue, which it indexes anyway, instead of a walk of its own
    /// here, and notes nothing changed before it hands the list back.
    #[inline]
    pub fn take_changed_uncleared(&mut self) -> Vec<u32> {
        std::mem::replace(&mut self.changed, std::mem::take(&mut self.spare))
    }

    /// Clear runqueue `i`'s changed flag (its CPU was in a list from
    /// [`Rqs::take_changed_uncleared`]).
    #[inline]
    pub fn clear_changed(&mut self, i: usize) {
        self.get_mut(i).noted_changed = false;
    }

    /// Return a list [`Rqs::take_changed`] gave out.
    pub fn give_back(&mut self, mut list: Vec<u32>) {
        list.clear();
        self.spare = list;
    }
}

impl Rqs {
    /// Runqueue `i`: CPU `i`'s (`cpu_rq(i)`), without a bounds test in
    /// release builds (the table's).
    #[inline(always)]
    fn get(&self, i: usize) -> &Rq {
        &self.rqs[i]
    }

    /// Runqueue `i`, mutably, without noting it changed (see [`Rqs::get`]).
    #[inline(always)]
    fn get_mut(&mut self, i: usize) -> &mut Rq {
        &mut self.rqs[i]
    }

    /// Runqueue `i` borrowed mutably *without* noting it changed: only for
    /// fields no group sum reads: the engine's run-segment bookkeeping
    /// (`seg_start`, `seg_speed`, `seg_active`, `run_gen`, `ready_at`),
    /// `update_rq_clock`'s clocks and IRQ average, `update_curr`'s entity
    /// and queue times, `next_balance`, `max_idle_balance_cost`, the RT and
    /// IRQ averages (`update_other_load_avgs`), the idle bookkeeping
    /// (`idle_state`, `idle_stamp`, `avg_idle`, the tick's
    /// `tick_gen` and `tick_stopped`, the PELT clock's idle sync) and
    /// `need_resched`. An SMT
    /// sibling's speed change, a segment's end, a charged cost, a clock
    /// update or a periodic balance that moved nothing then leaves the CPU
    /// out of the next balance pass's sync. Misuse (a summed field written
    /// through it) is what the invariant checker's "changed unnoticed" test
    /// (`check_fair`) finds.
    #[inline]
    pub fn untracked_mut(&mut self, i: usize) -> &mut Rq {
        self.get_mut(i)
    }
}

impl Rqs {
    /// CPU `i`'s balancing state for its domain at `level` (`rq.sd[level]`:
    /// `nr_balance_failed`, `balance_interval`, `last_balance`, the newidle
    /// costs), mutably, without noting the CPU changed: no group sum reads
    /// it, and a balance pass that found nothing to pull otherwise left its
    /// CPU to be re-read by the next pass.
    #[inline]
    pub fn sd_mut(&mut self, i: usize, level: usize) -> &mut SdRuntime {
        &mut self.get_mut(i).sd[level]
    }
}

impl Deref for Rqs {
    type Target = [Rq];
    #[inline]
    fn deref(&self) -> &[Rq] {
        &self.rqs
    }
}

impl Index<usize> for Rqs {
    type Output = Rq;
    #[inline]
    fn index(&self, i: usize) -> &Rq {
        self.get(i)
    }
}

impl IndexMut<usize> for Rqs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Rq {
        let rq = &mut self.rqs[i];
        if !rq.noted_changed {
            rq.noted_changed = true;
            self.changed.push(i as u32);
        }
        rq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::eevdf::EevdfParams;

    fn rqs(n: usize) -> Rqs {
        Rqs::new((0..n).map(|_| Rq::new(1024, Vec::new(), EevdfParams::new(n, 250))).collect())
    }

    fn drained(r: &mut Rqs) -> Vec<usize> {
        let list = r.take_changed();
        let out = list.iter().map(|&i| i as usize).collect();
        r.give_back(list);
        out
    }

    #[test]
    fn every_cpu_starts_changed_and_a_drain_forgets_them() {
        let mut r = rqs(4);
        assert_eq!(drained(&mut r), vec![0, 1, 2, 3]);
        assert!(!r.any_changed());
        assert_eq!(drained(&mut r), Vec::<usize>::new());
    }

    #[test]
    fn a_mutable_access_notes_its_cpu_once_and_a_read_does_not() {
        let mut r = rqs(4);
        drained(&mut r);
        let _ = r[1].nr_running;
        assert!(!r.any_changed());
        r[2].nr_running += 1;
        r[2].nr_running += 1;
        r[0].need_resched = true;
        assert_eq!(drained(&mut r), vec![2, 0]);
    }

    #[test]
    fn segment_bookkeeping_through_untracked_mut_is_not_noted() {
        let mut r = rqs(4);
        drained(&mut r);
        r.untracked_mut(3).seg_active = true;
        r.untracked_mut(3).ready_at = 5;
        assert!(!r.any_changed());
        assert!(r[3].seg_active);
        r[3].nr_running += 1;
        assert_eq!(drained(&mut r), vec![3]);
    }

    #[test]
    fn a_list_taken_uncleared_is_forgotten_as_its_cpus_are_cleared() {
        let mut r = rqs(4);
        drained(&mut r);
        r[1].nr_running += 1;
        r[3].nr_running += 1;
        let list = r.take_changed_uncleared();
        assert_eq!(list, vec![1, 3]);
        assert!(!r.any_changed());
        for &c in &list {
            assert!(r.is_changed(c as usize));
            r.clear_changed(c as usize);
        }
        r.give_back(list);
        r[3].nr_running += 1;
        assert_eq!(drained(&mut r), vec![3]);
    }
}
