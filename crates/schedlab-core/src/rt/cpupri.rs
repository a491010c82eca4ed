//! `struct cpupri` (kernel/sched/cpupri.c): for each CPU, the priority
//! level it runs at, and for each level, the set of CPUs at it. An RT task
//! looking for a CPU to preempt scans the levels from the lowest upward and
//! takes the first level holding a CPU it may use.
//!
//! Levels (`cpupri` values), lowest first:
//!
//! | level | meaning | set from task `prio` |
//! |---|---|---|
//! | `CPUPRI_INVALID` (-1) | offline, never a target | -1 |
//! | `CPUPRI_NORMAL` (0) | no RT task: idle *or* running fair tasks | 99 (`MAX_RT_PRIO - 1`) |
//! | 1..=99 | best queued RT task has `rt_priority` 1..=99 | 98..=0 |
//! | `CPUPRI_HIGHER` (100) | a deadline task is queued | 100 (`MAX_RT_PRIO`) |
//!
//! Idle and fair CPUs share one level since v5.11 (before, `CPUPRI_IDLE`
//! sat below `CPUPRI_NORMAL`, so idle CPUs were preferred). In the kernel
//! read there is no such preference: among CPUs without RT work,
//! `find_lowest_rq` picks by cache locality only.
//!
//! A CPU's level is its runqueue's `highest_prio.curr`, which counts the
//! running RT task too, so a CPU running one RT task sits at that task's
//! level.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;
use crate::rt::prio::MAX_RT_PRIO;
use crate::rt::rt_rq::RtRqChange;

/// Not eligible as a target (an offline CPU, or one never set).
pub const CPUPRI_INVALID: i32 = -1;
/// No RT task queued: idle or running only fair tasks.
pub const CPUPRI_NORMAL: i32 = 0;
/// Above every RT level: the deadline class is active on the CPU.
pub const CPUPRI_HIGHER: i32 = 100;
/// Number of valid levels (`MAX_RT_PRIO + 1`).
pub const CPUPRI_NR_PRIORITIES: usize = MAX_RT_PRIO as usize + 1;

/// `convert_prio`: a task-convention `prio` (-1, 0..=98, 99, 100) to its
/// cpupri level (-1, 99..=1, 0, 100).
pub fn convert_prio(prio: i32) -> i32 {
    match prio {
        CPUPRI_INVALID => CPUPRI_INVALID,
        0..=98 => MAX_RT_PRIO - 1 - prio,
        99 => CPUPRI_NORMAL,
        100 => CPUPRI_HIGHER,
        _ => panic!("prio {prio} has no cpupri level"),
    }
}

/// One level: its CPUs and their number (`struct cpupri_vec`).
#[derive(Clone, Debug, Default)]
struct CpuPriVec {
    count: u32,
    mask: CpuMask,
}

/// The CPU priority index of a root domain.
#[derive(Clone, Debug)]
pub struct CpuPri {
    pri_to_cpu: Vec<CpuPriVec>,
    cpu_to_pri: Vec<i32>,
}

impl CpuPri {
    /// Every CPU at `CPUPRI_INVALID` (`cpupri_init`).
    pub fn new(nr_cpus: usize) -> Self {
        CpuPri {
            pri_to_cpu: vec![CpuPriVec::default(); CPUPRI_NR_PRIORITIES],
            cpu_to_pri: vec![CPUPRI_INVALID; nr_cpus],
        }
    }

    /// Every CPU online with no RT task (`CPUPRI_NORMAL`), as `rq_online_rt`
    /// leaves a booted machine.
    pub fn new_online(nr_cpus: usize) -> Self {
        let mut cp = Self::new(nr_cpus);
        for c in 0..nr_cpus {
            cp.cpupri_set(CpuId(c as u32), MAX_RT_PRIO - 1);
        }
        cp
    }

    /// `cpu`'s current level.
    #[inline]
    pub fn cpu_level(&self, cpu: CpuId) -> i32 {
        self.cpu_to_pri[cpu.idx()]
    }

    /// The CPUs at `level` (0..=100).
    #[inline]
    pub fn level_mask(&self, level: i32) -> &CpuMask {
        &self.pri_to_cpu[level as usize].mask
    }

    /// The number of CPUs at `level` (0..=100).
    #[inline]
    pub fn level_count(&self, level: i32) -> u32 {
        self.pri_to_cpu[level as usize].count
    }

    /// `cpupri_set`: move `cpu` to the level of task-convention `prio`
    /// (-1 offline, 0..=98 RT, 99 no RT, 100 deadline). O(1).
    pub fn cpupri_set(&mut self, cpu: CpuId, prio: i32) {
        let new = convert_prio(prio);
        let old = self.cpu_to_pri[cpu.idx()];
        if new == old {
            return;
        }
        if new != CPUPRI_INVALID {
            let v = &mut self.pri_to_cpu[new as usize];
            v.mask.set(cpu);
            v.count += 1;
        }
        if old != CPUPRI_INVALID {
            let v = &mut self.pri_to_cpu[old as usize];
            v.count -= 1;
            v.mask.clear(cpu);
        }
        self.cpu_to_pri[cpu.idx()] = new;
    }

    /// `cpupri_find`: the CPUs of `allowed` at the lowest level below the
    /// task's own, or `None` if every allowed CPU runs at the task's level
    /// or higher. `task_prio` is the task's kernel `prio` (0..=98).
    /// Cost: one mask intersection per level visited, at most `task`'s level.
    pub fn cpupri_find(&self, task_prio: i32, allowed: &CpuMask) -> Option<CpuMask> {
        let task_pri = convert_prio(task_prio);
        (0..task_pri).find_map(|idx| self.lowest_at(idx, allowed))
    }

    /// `cpupri_find_fitness`: as [`CpuPri::cpupri_find`], but at each level
    /// keep only CPUs where `fits(cpu)` (`rt_task_fits_capacity`); a level
    /// with no fitting CPU is skipped. If no level below the task's has a
    /// fitting CPU, fall back to the plain search: the kernel prefers running
    /// a higher-priority task on a CPU too small for it over not running it.
    pub fn cpupri_find_fitness(
        &self,
        task_prio: i32,
        allowed: &CpuMask,
        fits: impl Fn(CpuId) -> bool,
    ) -> Option<CpuMask> {
        let task_pri = convert_prio(task_prio);
        for idx in 0..task_pri {
            let Some(mut lowest) = self.lowest_at(idx, allowed) else {
                continue;
            };
            let candidates = lowest;
            for cpu in candidates.iter() {
                if !fits(cpu) {
                    lowest.clear(cpu);
                }
            }
            if !lowest.is_empty() {
                return Some(lowest);
            }
        }
        self.cpupri_find(task_prio, allowed)
    }

    /// `__cpupri_find`: `allowed` ∩ the CPUs at `idx`, if not empty.
    #[inline]
    fn lowest_at(&self, idx: i32, allowed: &CpuMask) -> Option<CpuMask> {
        let v = &self.pri_to_cpu[idx as usize];
        if v.count == 0 {
            return None;
        }
        let m = v.mask.and(allowed);
        (!m.is_empty()).then_some(m)
    }
}

/// The RT part of a root domain (`struct root_domain`): the cpupri index and
/// the overloaded CPUs (`rto_mask`, `rto_count`).
#[derive(Clone, Debug)]
pub struct RtRootDomain {
    /// `rd->cpupri`.
    pub cpupri: CpuPri,
    /// `rd->rto_mask`: CPUs whose `rt_rq` is overloaded.
    pub rto_mask: CpuMask,
    /// `rd->rto_count`: the weight of `rto_mask`.
    pub rto_count: u32,
}

impl RtRootDomain {
    /// A root domain of `nr_cpus` online CPUs with no RT task.
    pub fn new(nr_cpus: usize) -> Self {
        RtRootDomain { cpupri: CpuPri::new_online(nr_cpus), rto_mask: CpuMask::new(), rto_count: 0 }
    }

    /// `rt_overloaded`: how many CPUs are overloaded.
    #[inline]
    pub fn rt_overloaded(&self) -> u32 {
        self.rto_count
    }

    /// `rt_set_overload`.
    pub fn rt_set_overload(&mut self, cpu: CpuId) {
        if !self.rto_mask.test(cpu) {
            self.rto_mask.set(cpu);
            self.rto_count += 1;
        }
    }

    /// `rt_clear_overload`.
    pub fn rt_clear_overload(&mut self, cpu: CpuId) {
        if self.rto_mask.test(cpu) {
            self.rto_mask.clear(cpu);
            self.rto_count -= 1;
        }
    }

    /// Apply what an `rt_rq` operation on `cpu` asked for.
    pub fn apply(&mut self, cpu: CpuId, change: RtRqChange) {
        if let Some(prio) = change.cpupri {
            self.cpupri.cpupri_set(cpu, prio);
        }
        match change.overload {
            Some(true) => self.rt_set_overload(cpu),
            Some(false) => self.rt_clear_overload(cpu),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::prio::rt_priority_to_prio;

    fn m(list: &str) -> CpuMask {
        CpuMask::parse_list(list).unwrap()
    }

    /// 4 CPUs: 0 no RT, 1 runs rt_priority 10, 2 runs rt_priority 50, 3 no RT.
    fn four() -> CpuPri {
        let mut cp = CpuPri::new_online(4);
        cp.cpupri_set(CpuId(1), rt_priority_to_prio(10));
        cp.cpupri_set(CpuId(2), rt_priority_to_prio(50));
        cp
    }

    #[test]
    fn convert_prio_maps_the_kernel_table() {
        assert_eq!(convert_prio(-1), CPUPRI_INVALID);
        assert_eq!(convert_prio(99), CPUPRI_NORMAL);
        assert_eq!(convert_prio(98), 1);
        assert_eq!(convert_prio(0), 99);
        assert_eq!(convert_prio(100), CPUPRI_HIGHER);
    }

    #[test]
    fn set_moves_cpu_between_levels() {
        let cp = four();
        assert_eq!(cp.cpu_level(CpuId(1)), 10);
        assert_eq!(cp.level_count(CPUPRI_NORMAL), 2);
        assert_eq!(cp.level_mask(CPUPRI_NORMAL).to_list_string(), "0,3");
    }

    #[test]
    fn find_takes_lowest_level_first() {
        let cp = four();
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(60), &m("0-3")), Some(m("0,3")));
    }

    #[test]
    fn find_respects_affinity() {
        let cp = four();
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(60), &m("1-2")), Some(m("1")));
    }

    #[test]
    fn find_never_returns_cpus_at_the_task_level() {
        let cp = four();
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(50), &m("2")), None);
    }

    #[test]
    fn find_never_returns_cpus_above_the_task_level() {
        let cp = four();
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(30), &m("1-2")), Some(m("1")));
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(5), &m("1-2")), None);
    }

    #[test]
    fn idle_and_fair_cpus_share_the_normal_level() {
        // Kernels since v5.11 have no CPUPRI_IDLE: an idle CPU and one running
        // a fair task are equally "lowest".
        let cp = CpuPri::new_online(2);
        assert_eq!(cp.cpupri_find(rt_priority_to_prio(1), &m("0-1")), Some(m("0-1")));
    }

    #[test]
    fn deadline_cpu_is_never_a_target() {
        let mut cp = CpuPri::new_online(2);
        cp.cpupri_set(CpuId(0), MAX_RT_PRIO);
        assert_eq!(cp.cpu_level(CpuId(0)), CPUPRI_HIGHER);
        assert_eq!(cp.cpupri_find(0, &m("0")), None);
    }

    #[test]
    fn invalid_cpu_is_never_a_target() {
        let mut cp = CpuPri::new_online(2);
        cp.cpupri_set(CpuId(1), CPUPRI_INVALID);
        assert_eq!(cp.cpupri_find(0, &m("0-1")), Some(m("0")));
        assert_eq!(cp.level_count(CPUPRI_NORMAL), 1);
    }

    #[test]
    fn fitness_filters_within_a_level() {
        let cp = four();
        let fits = |c: CpuId| c.0 == 3;
        assert_eq!(cp.cpupri_find_fitness(rt_priority_to_prio(60), &m("0-3"), fits), Some(m("3")));
    }

    #[test]
    fn fitness_skips_a_level_with_no_fitting_cpu() {
        let cp = four();
        let fits = |c: CpuId| c.0 == 1;
        assert_eq!(cp.cpupri_find_fitness(rt_priority_to_prio(60), &m("0-3"), fits), Some(m("1")));
    }

    #[test]
    fn fitness_falls_back_to_unfitting_lowest() {
        let cp = four();
        let fits = |_: CpuId| false;
        assert_eq!(cp.cpupri_find_fitness(rt_priority_to_prio(60), &m("0-3"), fits), Some(m("0,3")));
    }

    #[test]
    fn root_domain_applies_changes() {
        let mut rd = RtRootDomain::new(2);
        rd.apply(CpuId(1), RtRqChange { cpupri: Some(40), overload: Some(true) });
        assert_eq!(rd.cpupri.cpu_level(CpuId(1)), 59);
        assert_eq!(rd.rt_overloaded(), 1);
        rd.apply(CpuId(1), RtRqChange { cpupri: None, overload: Some(false) });
        assert_eq!(rd.rt_overloaded(), 0);
        assert!(rd.rto_mask.is_empty());
    }
    /// The slow reference for `cpupri_find`: scan every allowed CPU for the
    /// lowest valid level below the task's, then collect the CPUs at it.
    fn find_reference(levels: &[i32], task_prio: i32, allowed: &CpuMask) -> Option<CpuMask> {
        let task_pri = convert_prio(task_prio);
        let lowest = allowed.iter().map(|c| levels[c.idx()]).filter(|&l| l >= 0 && l < task_pri).min()?;
        Some(CpuMask::from_cpus(allowed.iter().filter(|c| levels[c.idx()] == lowest)))
    }

    proptest::proptest! {
        #[test]
        fn find_matches_slow_reference(
            prios in proptest::collection::vec(-1i32..=100, 1..24),
            task_prio in 0i32..=98,
            allowed_bits in proptest::num::u32::ANY,
        ) {
            let n = prios.len();
            let mut cp = CpuPri::new(n);
            for (c, &p) in prios.iter().enumerate() {
                cp.cpupri_set(CpuId(c as u32), p);
            }
            let levels: Vec<i32> = (0..n).map(|c| cp.cpu_level(CpuId(c as u32))).collect();
            let allowed = CpuMask::from_cpus((0..n).filter(|c| allowed_bits & (1 << c) != 0).map(|c| CpuId(c as u32)));
            proptest::prop_assert_eq!(cp.cpupri_find(task_prio, &allowed), find_reference(&levels, task_prio, &allowed));
            let total: u32 = (0..CPUPRI_NR_PRIORITIES as i32).map(|l| cp.level_count(l)).sum();
            proptest::prop_assert_eq!(total as usize, prios.iter().filter(|&&p| p != CPUPRI_INVALID).count());
        }
    }
}
