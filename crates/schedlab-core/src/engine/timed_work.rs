//! Kernel work the kernel times with `sched_clock`, and what took its CPU
//! meanwhile.
//!
//! Some of the kernel's costs are measured, not assumed: `sched_balance_newidle`
//! (fair.c) reads `sched_clock_cpu()` around each domain's pass and keeps the
//! domain's maximum (`update_newidle_cost`), and the sum of the passes
//! (`curr_cost`) feeds `rq->max_idle_balance_cost`. `sched_clock` is wall
//! time: an interrupt handled during a pass, or a vCPU descheduled by its
//! host while it ran one, is counted in that pass's cost. Measured in a
//! 2-socket, 8-vCPU Debian 6.12 guest under TCG (docs/validation.md,
//! eighteenth session): after a saturated hackbench, 5 of its 24 domains
//! (CPU, level) held a `max_newidle_lb_cost` of 30-55 ms, where their boot
//! values were 11-70 us, so each of those CPUs stopped its newly-idle
//! balancing at that level for as long as `avg_idle` stays below it (the
//! maximum decays by 1% a second).
//!
//! The engine charges such work to the CPU (`Sim::charge`: it owes the time
//! from `ready_at`), and a class that times it names its parts as it prices
//! them ([`Sim::timed_part`]: for the newly-idle pass, each domain level and
//! its modelled cost), then, once it has charged them, says so
//! ([`Sim::timed_work_begin`]). Time an interrupt handler or a
//! stall takes from the CPU (`irq_steal`, a host's hold of the vCPU) while
//! the work runs is added to the part that was running; the class folds it
//! into its measurements with [`Sim::take_timed_work`] before it next reads
//! them. Only machines where something can take a CPU's time (interrupt
//! sources, stalls, a host) keep the records.

use super::Sim;
use crate::ids::{CpuId, Ns};

/// Parts one timed piece of work is split into at most (a newly-idle
/// pass's domain levels: SMT, CLS, MC, PKG and up to four NUMA levels). A
/// pass over more levels times the rest with the last part.
pub const TIMED_PARTS: usize = 8;

/// One CPU's timed work: its parts' tags and cumulative modelled costs, and
/// the time taken from the CPU while each ran.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TimedWork {
    /// When the CPU starts on it: the work is charged after what the CPU
    /// already owed.
    start: Ns,
    /// Parts in use.
    n: u8,
    /// Each part's tag (the class's: a domain level).
    tags: [u8; TIMED_PARTS],
    /// Each part's end, in work done since `start` (cumulative costs).
    ends: [Ns; TIMED_PARTS],
    /// Time taken from the CPU while each part ran.
    stolen: [Ns; TIMED_PARTS],
    /// Their sum.
    stolen_total: Ns,
    /// A stall that began while part `.0` ran, at `.1`, and has not ended.
    open: Option<(u8, Ns)>,
    /// Its parts are being named, not yet charged: no time runs meanwhile
    /// (naming and charging happen in one instant).
    naming: bool,
}

impl TimedWork {
    /// Whether it was charged and is measured.
    fn live(&self) -> bool {
        self.n > 0 && !self.naming
    }

    /// The part running at `t`, or `None` when the work has not started or
    /// is done (what the CPU does then is not this work).
    fn part_at(&self, t: Ns) -> Option<usize> {
        let done = t.checked_sub(self.start)?.checked_sub(self.stolen_total)?;
        self.ends[..self.n as usize].iter().position(|&e| done < e)
    }

    /// Whether the work is over at `t`: every part done, no stall open.
    fn over_at(&self, t: Ns) -> bool {
        self.open.is_none() && self.part_at(t).is_none() && t >= self.start
    }
}

/// What [`Sim::take_timed_work`] gives back: per part its tag, its
/// modelled cost and the time taken from the CPU while it ran; and when
/// the work ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimedResult {
    pub n: usize,
    pub tags: [u8; TIMED_PARTS],
    pub costs: [Ns; TIMED_PARTS],
    pub stolen: [Ns; TIMED_PARTS],
    pub end: Ns,
}

impl Sim {
    /// Whether this machine keeps timed work: something can take a CPU's
    /// time (else a class need not name its parts).
    #[inline(always)]
    pub(crate) fn times_work(&self) -> bool {
        !self.timed.is_empty()
    }

    /// The next part (`tag`, modelled cost) of work `cpu` is about to be
    /// charged. The first part named after a charge starts a new record,
    /// replacing one not taken; past `TIMED_PARTS` parts the last takes the
    /// rest (and the latest tag).
    #[inline]
    pub(crate) fn timed_part(&mut self, cpu: CpuId, tag: u8, cost: Ns) {
        let Some(w) = self.timed.get_mut(cpu.idx()) else { return };
        if !w.naming {
            *w = TimedWork { naming: true, ..TimedWork::default() };
        }
        let n = w.n as usize;
        let before = if n == 0 { 0 } else { w.ends[n - 1] };
        let i = n.min(TIMED_PARTS - 1);
        w.tags[i] = tag;
        w.ends[i] = before + cost;
        w.n = i as u8 + 1;
    }

    /// `cpu` has just been charged the parts named since the last charge:
    /// their wall time is measured from when the CPU gets to them
    /// (`ready_at` less their sum).
    #[inline]
    pub(crate) fn timed_work_begin(&mut self, cpu: CpuId) {
        if self.timed.is_empty() {
            return;
        }
        let ready_at = self.rqs[cpu.idx()].ready_at;
        let w = &mut self.timed[cpu.idx()];
        if w.naming {
            w.naming = false;
            w.start = ready_at.saturating_sub(w.ends[w.n as usize - 1]);
        }
    }

    /// `ns` of `cpu`'s time taken from now (an interrupt handler): the part
    /// running gets it; work not started yet starts that much later.
    pub(crate) fn timed_steal(&mut self, cpu: CpuId, ns: Ns) {
        let now = self.now;
        let Some(w) = self.timed.get_mut(cpu.idx()) else { return };
        if !w.live() {
            return;
        }
        if now < w.start {
            w.start += ns;
        } else if let Some(i) = w.part_at(now) {
            w.stolen[i] += ns;
            w.stolen_total += ns;
        }
    }

    /// `cpu` stalls from now until [`Sim::timed_stall_end`] (a host's hold
    /// of its vCPU).
    pub(crate) fn timed_stall_begin(&mut self, cpu: CpuId) {
        let now = self.now;
        let Some(w) = self.timed.get_mut(cpu.idx()) else { return };
        if !w.live() || w.open.is_some() {
            return;
        }
        if now < w.start {
            // Not started: it starts when the stall ends, as late as the stall is long.
            w.open = Some((u8::MAX, now));
        } else if let Some(i) = w.part_at(now) {
            w.open = Some((i as u8, now));
        }
    }

    /// `cpu`'s stall ends now.
    pub(crate) fn timed_stall_end(&mut self, cpu: CpuId) {
        let now = self.now;
        let Some(w) = self.timed.get_mut(cpu.idx()) else { return };
        let Some((i, since)) = w.open.take() else { return };
        let ns = now - since;
        if i == u8::MAX {
            w.start += ns;
        } else {
            w.stolen[i as usize] += ns;
            w.stolen_total += ns;
        }
    }

    /// `cpu`'s timed work, once it is over and time was taken from it
    /// (else `None`, and a record of work that is over is dropped). The
    /// record is consumed.
    pub(crate) fn take_timed_work(&mut self, cpu: CpuId) -> Option<TimedResult> {
        let now = self.now;
        let w = self.timed.get_mut(cpu.idx())?;
        if !w.live() || !w.over_at(now) {
            return None;
        }
        let w = std::mem::take(w);
        if w.stolen_total == 0 {
            return None;
        }
        let n = w.n as usize;
        let mut costs = [0; TIMED_PARTS];
        let mut prev = 0;
        for (c, &e) in costs.iter_mut().zip(&w.ends[..n]) {
            *c = e - prev;
            prev = e;
        }
        Some(TimedResult { n, tags: w.tags, costs, stolen: w.stolen, end: w.start + prev + w.stolen_total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(start: Ns, costs: &[Ns]) -> TimedWork {
        let mut w = TimedWork { start, ..TimedWork::default() };
        let mut end = 0;
        for (i, &c) in costs.iter().enumerate() {
            end += c;
            w.tags[i] = i as u8;
            w.ends[i] = end;
        }
        w.n = costs.len() as u8;
        w
    }

    #[test]
    fn the_part_running_follows_the_work_done_not_the_wall_clock() {
        let mut w = work(100, &[10, 20, 30]);
        assert_eq!(w.part_at(99), None);
        assert_eq!(w.part_at(100), Some(0));
        assert_eq!(w.part_at(115), Some(1));
        // 50 ns taken in part 1: the parts end 50 ns later.
        w.stolen[1] = 50;
        w.stolen_total = 50;
        assert_eq!(w.part_at(165), Some(1));
        assert_eq!(w.part_at(185), Some(2));
        assert!(!w.over_at(209));
        assert!(w.over_at(210));
    }
}
