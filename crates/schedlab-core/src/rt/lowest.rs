//! `find_lowest_rq` (rt.c): from the CPUs running at the lowest priority a
//! task could preempt, choose the one closest to the task's cache.
//!
//! Order of preference, as in the kernel:
//! 1. the task's own CPU (`task_cpu(p)`), if in the lowest mask;
//! 2. walking the task CPU's domains bottom-up, at each `SD_WAKE_AFFINE`
//!    domain: `this_cpu` if it is in the mask and the span (preempting
//!    locally is cheaper than an IPI), else a CPU of mask ∩ span;
//! 3. `this_cpu`, if in the mask;
//! 4. any CPU of the mask.
//!
//! # Determinism of "any"
//!
//! The kernel picks in steps 2 and 4 with `cpumask_any_and_distribute`,
//! which spreads choices by remembering, per calling CPU, the CPU it last
//! returned (`distribute_cpu_mask_prev`) and returning the next CPU of the
//! mask after it, wrapping. schedlab keeps that memory in an
//! [`AnyDistribute`] cursor that the caller holds, one per `this_cpu`, so
//! a run depends only on the order of decisions and stays byte-identical
//! for a seed.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;
use crate::rt::cpupri::CpuPri;
use crate::rt::rt_rq::RtRq;
use crate::topology::domains::{Domains, SD_WAKE_AFFINE};

/// `distribute_cpu_mask_prev` of one CPU: the CPU last returned by
/// [`cpumask_any_and_distribute`] from that CPU. Starts at CPU 0, so, as in
/// the kernel, the first choice skips CPU 0 when the mask has another CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnyDistribute {
    /// The CPU last returned.
    pub prev: CpuId,
}

/// `cpumask_any_and_distribute(a, b)`: the first CPU of `a ∩ b` after
/// `cursor.prev`, wrapping around; remembers it in `cursor`. `None` if the
/// intersection is empty (the cursor is then left alone).
pub fn cpumask_any_and_distribute(a: &CpuMask, b: &CpuMask, cursor: &mut AnyDistribute) -> Option<CpuId> {
    let m = a.and(b);
    let start = cursor.prev.idx() + 1;
    let next = m.next_from(start).or_else(|| m.first())?;
    cursor.prev = next;
    Some(next)
}

/// The first half of the kernel's `find_lowest_rq`: the lowest mask of task
/// `p` (kernel `prio` `task_prio`, allowed on `allowed`), or `None` when
/// the task is pinned (`nr_cpus_allowed == 1`) or no allowed CPU runs below
/// its level. With `fits` (given on asymmetric-capacity systems, where
/// `sched_asym_cpucap_active()`), the search is `cpupri_find_fitness` with
/// `rt_task_fits_capacity`.
pub fn lowest_mask_for_task(
    cpupri: &CpuPri,
    task_prio: i32,
    allowed: &CpuMask,
    fits: Option<&dyn Fn(CpuId) -> bool>,
) -> Option<CpuMask> {
    if allowed.weight() <= 1 {
        return None;
    }
    match fits {
        Some(f) => cpupri.cpupri_find_fitness(task_prio, allowed, f),
        None => cpupri.cpupri_find(task_prio, allowed),
    }
}

/// The choice half of the kernel's `find_lowest_rq`: given the lowest mask,
/// the task's CPU and the deciding CPU, the CPU the kernel would return
/// (see the module doc for the order). `None` only for an empty mask.
/// Cost: one intersection per domain level of `task_cpu`.
pub fn find_lowest_rq(
    lowest_mask: &CpuMask,
    task_cpu: CpuId,
    this_cpu: CpuId,
    domains: &Domains,
    cursor: &mut AnyDistribute,
) -> Option<CpuId> {
    if lowest_mask.test(task_cpu) {
        return Some(task_cpu);
    }
    let this_cpu = lowest_mask.test(this_cpu).then_some(this_cpu);
    for &sd_id in domains.chain(task_cpu) {
        let sd = domains.sd(sd_id);
        if !sd.has(SD_WAKE_AFFINE) {
            continue;
        }
        if let Some(this) = this_cpu.filter(|&c| sd.span.test(c)) {
            return Some(this);
        }
        if let Some(best) = cpumask_any_and_distribute(lowest_mask, &sd.span, cursor) {
            return Some(best);
        }
    }
    if this_cpu.is_some() {
        return this_cpu;
    }
    // cpumask_any_distribute(lowest_mask): the same walk over one mask.
    cpumask_any_and_distribute(lowest_mask, lowest_mask, cursor)
}

/// `find_lock_lowest_rq` without lock races: the CPU to push task `p`
/// (kernel `prio` `task_prio`) from `rq_cpu` to, or `None` when there is no
/// lowest CPU, the choice is `rq_cpu` itself, or the chosen CPU's
/// `highest_prio.curr` is not below the task's (a CPU at the same or a higher
/// level is no place to push to). The kernel's retry loop
/// (`RT_MAX_TRIES`) only matters when a lock drop lets state change, which
/// cannot happen between two steps of a sequential simulation.
#[allow(clippy::too_many_arguments)]
pub fn find_lock_lowest_rq(
    cpupri: &CpuPri,
    rt_rqs: &[RtRq],
    task_prio: i32,
    allowed: &CpuMask,
    rq_cpu: CpuId,
    this_cpu: CpuId,
    domains: &Domains,
    fits: Option<&dyn Fn(CpuId) -> bool>,
    cursor: &mut AnyDistribute,
) -> Option<CpuId> {
    let mask = lowest_mask_for_task(cpupri, task_prio, allowed, fits)?;
    let cpu = find_lowest_rq(&mask, rq_cpu, this_cpu, domains, cursor)?;
    if cpu == rq_cpu || rt_rqs[cpu.idx()].highest_prio_curr() <= task_prio {
        return None;
    }
    Some(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{machine_from_toml, SMT_2LLC, TWO_LLC};
    use crate::topology::build_sched_domains;

    fn m(list: &str) -> CpuMask {
        CpuMask::parse_list(list).unwrap()
    }

    fn doms(toml: &str) -> Domains {
        build_sched_domains(&machine_from_toml(toml)).unwrap()
    }

    #[test]
    fn task_cpu_preferred_when_in_mask() {
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&m("1,2,5"), CpuId(2), CpuId(1), &d, &mut cur), Some(CpuId(2)));
    }

    #[test]
    fn this_cpu_preferred_within_wake_affine_domain() {
        // TWO_LLC: LLCs {0-3} and {4-7}. Task on 0, waker on 3, both in the MC span.
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&m("1,3"), CpuId(0), CpuId(3), &d, &mut cur), Some(CpuId(3)));
    }

    #[test]
    fn cache_neighbour_beats_remote_this_cpu() {
        // Task on 0, waker on 5 (other LLC): the LLC of CPU 0 is tried first.
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&m("2,5"), CpuId(0), CpuId(5), &d, &mut cur), Some(CpuId(2)));
    }

    #[test]
    fn this_cpu_taken_at_package_level_when_llc_has_none() {
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&m("5,6"), CpuId(0), CpuId(6), &d, &mut cur), Some(CpuId(6)));
    }

    #[test]
    fn smt_sibling_before_llc_neighbour() {
        // SMT_2LLC: core c has CPUs c and c+4; LLC 0 = {0,1,4,5}.
        let d = doms(SMT_2LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&m("1,4"), CpuId(0), CpuId(7), &d, &mut cur), Some(CpuId(4)));
    }

    #[test]
    fn distribute_rotates_among_equals() {
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        let picks: Vec<u32> =
            (0..4).map(|_| find_lowest_rq(&m("1-3"), CpuId(0), CpuId(7), &d, &mut cur).unwrap().0).collect();
        assert_eq!(picks, vec![1, 2, 3, 1]);
    }

    #[test]
    fn distribute_is_deterministic_for_the_same_cursor() {
        let d = doms(TWO_LLC);
        let run = || {
            let mut cur = AnyDistribute::default();
            (0..5).map(|_| find_lowest_rq(&m("1-3,5"), CpuId(0), CpuId(7), &d, &mut cur)).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn first_distribute_skips_cpu_0() {
        let mut cur = AnyDistribute::default();
        assert_eq!(cpumask_any_and_distribute(&m("0-3"), &m("0-3"), &mut cur), Some(CpuId(1)));
        let mut cur = AnyDistribute::default();
        assert_eq!(cpumask_any_and_distribute(&m("0"), &m("0-3"), &mut cur), Some(CpuId(0)));
    }

    #[test]
    fn empty_mask_gives_none() {
        let d = doms(TWO_LLC);
        let mut cur = AnyDistribute::default();
        assert_eq!(find_lowest_rq(&CpuMask::new(), CpuId(0), CpuId(1), &d, &mut cur), None);
    }

    #[test]
    fn pinned_task_has_no_lowest_mask() {
        let cp = CpuPri::new_online(4);
        assert_eq!(lowest_mask_for_task(&cp, 10, &m("2"), None), None);
    }

    #[test]
    fn lowest_mask_respects_affinity() {
        let mut cp = CpuPri::new_online(4);
        cp.cpupri_set(CpuId(0), 50);
        assert_eq!(lowest_mask_for_task(&cp, 10, &m("0,3"), None), Some(m("3")));
    }

    #[test]
    fn find_lock_lowest_rq_refuses_own_cpu() {
        let d = doms(TWO_LLC);
        let cp = CpuPri::new_online(8);
        let rqs: Vec<RtRq> = (0..8).map(|c| RtRq::new(CpuId(c))).collect();
        let mut cur = AnyDistribute::default();
        let got = find_lock_lowest_rq(&cp, &rqs, 10, &m("0-7"), CpuId(0), CpuId(0), &d, None, &mut cur);
        assert_eq!(got, None, "task CPU 0 is itself in the lowest mask");
    }
}
