//! Per-CPU occupancy: which CPUs are idle, which tasks wait where, and the
//! time-weighted idle and *wasted idle* integrals.
//!
//! Wasted idle (Lozi et al., "The Linux Scheduler: a Decade of Wasted Cores"):
//! CPU `c` is wasting time while it is idle and some task that is allowed on
//! `c` waits on another CPU's runqueue. Counting that exactly at every event by
//! scanning every waiting task would cost O(tasks x cpus). Instead:
//!
//! * tasks allowed everywhere ("unrestricted") are counted, not listed:
//!   `nr_wait_all` of them wait in total, `a[c]` of them on CPU `c`. For CPU `c`
//!   the unrestricted tasks waiting elsewhere number `nr_wait_all - a[c]`;
//! * each restricted task that starts (stops) waiting on CPU `w` adds (removes)
//!   one to `r[c]` for every allowed `c != w`: O(weight of its mask);
//! * `c` wastes iff idle and `r[c] > 0 || a[c] < nr_wait_all`.
//!
//! The number of wasting CPUs is then O(1) from four counters: idle CPUs with
//! `r > 0` (`idle_r`), idle CPUs with `r == 0` (`idle_0`), and which CPUs have
//! `a > 0` (`nz_count`, `nz_sum`). With `nr_wait_all > 0`, `a[c] == nr_wait_all`
//! holds for at most one CPU, and only when it is the single CPU with `a > 0`,
//! whose id is then `nz_sum`.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;

use super::grown::grown_at;

/// One CPU's occupancy state.
#[derive(Clone, Copy, Debug)]
struct CpuOcc {
    /// Whether its state is known (for real traces a CPU is unknown until
    /// its first `sched_switch`).
    known: bool,
    /// Whether it runs a task (meaningful when known).
    busy: bool,
    /// Unrestricted tasks waiting on it.
    a: u32,
    /// Restricted tasks waiting on another CPU that allow this CPU.
    r: u32,
}

impl CpuOcc {
    #[inline]
    fn is_idle(&self) -> bool {
        self.known && !self.busy
    }
}

/// A CPU unknown until its first switch (a CPU a real trace names beyond
/// the count it announced).
const UNKNOWN: CpuOcc = CpuOcc { known: false, busy: false, a: 0, r: 0 };

/// `cpus[w]`, made first (unknown, as [`CpuOccupancy::ensure_cpu`] makes it)
/// when a real trace names a CPU late (see [`grown_at`]).
#[inline(always)]
fn cpu_at(cpus: &mut Vec<CpuOcc>, w: usize) -> &mut CpuOcc {
    grown_at(cpus, w, &UNKNOWN)
}

/// Occupancy state and integrals. Times are in the collector's counted
/// window only (the collector passes counted durations to [`Self::advance`]).
#[derive(Clone, Debug)]
pub struct CpuOccupancy {
    /// Per CPU, its state and waiter counts in one record: a switch reads
    /// and writes them behind one bounds check.
    cpus: Vec<CpuOcc>,
    nr_wait_all: u32,
    nz_count: u32,
    nz_sum: u64,
    idle_r: u32,
    idle_0: u32,
    /// Counted window time so far, ns (what an unknown CPU has been unknown for).
    counted_ns: u128,
    /// Idle CPU time, ns.
    pub idle_ns: u128,
    /// Wasted idle CPU time, ns.
    pub wasted_ns: u128,
}

impl CpuOccupancy {
    /// `nr_cpus` CPUs, all idle (`start_idle`, a simulation) or all unknown (a
    /// real trace, resolved at each CPU's first switch).
    pub fn new(nr_cpus: usize, start_idle: bool) -> Self {
        let mut o = Self {
            cpus: Vec::new(),
            nr_wait_all: 0,
            nz_count: 0,
            nz_sum: 0,
            idle_r: 0,
            idle_0: 0,
            counted_ns: 0,
            idle_ns: 0,
            wasted_ns: 0,
        };
        o.grow(nr_cpus, start_idle);
        o
    }

    /// Number of CPUs tracked.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Make room for CPU `cpu` (a real trace may name a CPU beyond the count
    /// it announced). New CPUs are unknown, as if present since the start.
    pub fn ensure_cpu(&mut self, cpu: CpuId) {
        if cpu.idx() >= self.cpus.len() {
            self.grow(cpu.idx() + 1, false);
        }
    }

    fn grow(&mut self, n: usize, known_idle: bool) {
        let old = self.cpus.len();
        self.cpus.resize(n, CpuOcc { known: known_idle, busy: false, a: 0, r: 0 });
        if known_idle {
            self.idle_0 += (n - old) as u32;
        }
    }

    #[inline]
    fn is_idle(&self, c: usize) -> bool {
        self.cpus[c].is_idle()
    }

    /// Idle CPUs now (known ones).
    #[inline]
    pub fn nr_idle(&self) -> u32 {
        self.idle_r + self.idle_0
    }

    /// Idle CPUs that a task waiting elsewhere is allowed on, now.
    #[inline]
    pub fn nr_wasted(&self) -> u32 {
        let mut n = self.idle_r;
        if self.nr_wait_all > 0 {
            n += self.idle_0;
            if self.nz_count == 1 {
                let c = self.nz_sum as usize;
                if self.cpus[c].is_idle() && self.cpus[c].r == 0 {
                    n -= 1;
                }
            }
        }
        n
    }

    /// Total CPU time, ns: every CPU, known or not, over the counted
    /// window (a CPU found late counts as unknown from the start), so the
    /// window times the CPUs, not integrated at each step.
    #[inline]
    pub fn total_ns(&self) -> u128 {
        self.counted_ns * self.cpus.len() as u128
    }

    /// Integrate `dt_ns` of counted time in the current state.
    #[inline]
    pub fn advance(&mut self, dt_ns: u64) {
        if dt_ns == 0 {
            return;
        }
        let dt = dt_ns as u128;
        self.counted_ns += dt;
        self.idle_ns += dt * self.nr_idle() as u128;
        self.wasted_ns += dt * self.nr_wasted() as u128;
    }

    fn enter_idle_sets(&mut self, c: usize) {
        if self.is_idle(c) {
            if self.cpus[c].r > 0 {
                self.idle_r += 1;
            } else {
                self.idle_0 += 1;
            }
        }
    }

    /// CPU `cpu` now runs a task (`busy`) or idles. The first call for an
    /// unknown CPU resolves it: the state it left (`was_busy`, i.e. whether the
    /// switch had a previous task) is taken to have held since the start.
    #[inline(always)]
    pub fn set_busy(&mut self, cpu: CpuId, was_busy: bool, busy: bool) {
        let x = cpu_at(&mut self.cpus, cpu.idx());
        let first = !x.known;
        let was_idle = x.is_idle();
        x.known = true;
        x.busy = busy;
        let r_pos = x.r > 0;
        if first && !was_busy {
            self.idle_ns += self.counted_ns;
        }
        // Leave the idle sets if it was idle, enter them if it is now (its
        // restricted waiters, which choose the set, did not change).
        let now_idle = !busy;
        if was_idle != now_idle {
            let set = if r_pos { &mut self.idle_r } else { &mut self.idle_0 };
            if now_idle {
                *set += 1;
            } else {
                *set -= 1;
            }
        }
    }

    /// Resolve CPUs never seen switching as idle for the whole window (a CPU
    /// with no switch in a whole trace most likely slept in NOHZ idle).
    pub fn resolve_unknown_as_idle(&mut self) {
        for c in 0..self.cpus.len() {
            if !self.cpus[c].known {
                self.idle_ns += self.counted_ns;
                self.cpus[c].known = true;
                self.cpus[c].busy = false;
                self.enter_idle_sets(c);
            }
        }
    }

    fn bump_r(&mut self, c: usize, up: bool) {
        let idle = self.is_idle(c);
        let x = &mut self.cpus[c];
        let before = x.r > 0;
        if up {
            x.r += 1;
        } else {
            debug_assert!(x.r > 0);
            x.r = x.r.saturating_sub(1);
        }
        let after = x.r > 0;
        if idle && before != after {
            if after {
                self.idle_0 -= 1;
                self.idle_r += 1;
            } else {
                self.idle_r -= 1;
                self.idle_0 += 1;
            }
        }
    }

    /// A task starts (`up`) or stops waiting on `cpu`'s runqueue. `mask` is its
    /// affinity when restricted, `None` when it may run anywhere.
    pub fn waiting(&mut self, cpu: CpuId, mask: Option<&CpuMask>, up: bool) {
        let w = cpu.idx();
        match mask {
            None => {
                let x = cpu_at(&mut self.cpus, w);
                let was = x.a;
                if up {
                    x.a += 1;
                    self.nr_wait_all += 1;
                } else {
                    debug_assert!(x.a > 0);
                    x.a = x.a.saturating_sub(1);
                    self.nr_wait_all = self.nr_wait_all.saturating_sub(1);
                }
                match (was > 0, x.a > 0) {
                    (false, true) => {
                        self.nz_count += 1;
                        self.nz_sum += w as u64;
                    }
                    (true, false) => {
                        self.nz_count -= 1;
                        self.nz_sum -= w as u64;
                    }
                    _ => {}
                }
            }
            Some(m) => self.waiting_restricted(cpu, m, up),
        }
    }

    /// [`Self::waiting`] of a restricted task: one count per CPU of its
    /// mask. Out of line: the usual waiter may run anywhere, and with this
    /// loop inline every call saved and restored six registers.
    #[inline(never)]
    fn waiting_restricted(&mut self, cpu: CpuId, m: &CpuMask, up: bool) {
        self.ensure_cpu(cpu);
        let w = cpu.idx();
        let n = self.cpus.len();
        for c in m.iter() {
            if c.idx() >= n {
                break;
            }
            if c.idx() != w {
                self.bump_r(c.idx(), up);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Slow reference: scan every waiting task for every idle CPU.
    fn wasted_slow(o: &CpuOccupancy, waiting: &[(usize, Option<CpuMask>)]) -> u32 {
        (0..o.nr_cpus())
            .filter(|&c| o.is_idle(c))
            .filter(|&c| waiting.iter().any(|(w, m)| *w != c && m.is_none_or(|m| m.test(CpuId(c as u32)))))
            .count() as u32
    }

    #[test]
    fn single_unrestricted_waiter_wastes_other_idle_cpus() {
        let mut o = CpuOccupancy::new(4, true);
        o.set_busy(CpuId(0), false, true);
        o.waiting(CpuId(0), None, true);
        assert_eq!(o.nr_wasted(), 3);
        o.set_busy(CpuId(0), true, false); // CPU 0 idle with its own waiter: not waste
        assert_eq!(o.nr_wasted(), 3);
        o.advance(10);
        assert_eq!((o.idle_ns, o.wasted_ns, o.total_ns()), (40, 30, 40));
    }

    #[test]
    fn pinned_waiter_wastes_nothing() {
        let mut o = CpuOccupancy::new(2, true);
        let m = CpuMask::from_cpus([CpuId(0)]);
        o.set_busy(CpuId(0), false, true);
        o.waiting(CpuId(0), Some(&m), true);
        assert_eq!(o.nr_wasted(), 0);
    }

    #[test]
    fn unknown_cpu_resolves_at_first_switch() {
        let mut o = CpuOccupancy::new(2, false);
        o.advance(100);
        assert_eq!(o.idle_ns, 0);
        o.set_busy(CpuId(0), false, true); // was idle since the start
        o.set_busy(CpuId(1), true, false); // was busy since the start
        assert_eq!(o.idle_ns, 100);
        o.advance(10);
        assert_eq!(o.idle_ns, 110);
        assert_eq!(o.total_ns(), 220);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Busy(usize, bool),
        Wait(usize, Option<u8>),
        Unwait(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..6, any::<bool>()).prop_map(|(c, b)| Op::Busy(c, b)),
            (0usize..6, prop::option::of(1u8..64)).prop_map(|(c, m)| Op::Wait(c, m)),
            (0usize..8).prop_map(Op::Unwait),
        ]
    }

    proptest! {
        #[test]
        fn fast_counter_matches_slow_reference(ops in prop::collection::vec(op(), 1..200)) {
            let mut o = CpuOccupancy::new(6, true);
            let mut waiting: Vec<(usize, Option<CpuMask>)> = Vec::new();
            let mut slow_wasted = 0u128;
            for op in ops {
                match op {
                    Op::Busy(c, b) => o.set_busy(CpuId(c as u32), o.cpus[c].busy, b),
                    Op::Wait(c, m) => {
                        let m = m.map(|bits| CpuMask::from_cpus(
                            (0..6).filter(|i| bits & (1 << i) != 0).map(|i| CpuId(i as u32))));
                        o.waiting(CpuId(c as u32), m.as_ref(), true);
                        waiting.push((c, m));
                    }
                    Op::Unwait(i) => {
                        if i < waiting.len() {
                            let (c, m) = waiting.remove(i);
                            o.waiting(CpuId(c as u32), m.as_ref(), false);
                        }
                    }
                }
                prop_assert_eq!(o.nr_wasted(), wasted_slow(&o, &waiting));
                slow_wasted += 7 * wasted_slow(&o, &waiting) as u128;
                o.advance(7);
            }
            prop_assert_eq!(o.wasted_ns, slow_wasted);
        }
    }
}
