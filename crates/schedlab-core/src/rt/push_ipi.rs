//! The RT_PUSH_IPI hand-off (rt.c, `HAVE_RT_PUSH_IPI`): instead of a CPU
//! whose priority dropped taking every overloaded CPU's lock to pull
//! (`pull_rt_task`), it starts one chain of IPIs (irq work) that visits the
//! overloaded CPUs in turn; each pushes its own waiting tasks away
//! (`push_rt_task(rq, true)` until it stops) and passes the IPI on.
//! RT_PUSH_IPI is on by default in mainline `features.h`, so with default
//! features `pull_rt_task` never moves a task itself.
//!
//! One chain runs per root domain at a time. A request that arrives while a
//! chain runs bumps `rto_loop_next`, and the chain makes one more round over
//! `rto_mask` when it reaches the end.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;

/// The push-IPI chain state of a root domain (`rd->rto_cpu`,
/// `rd->rto_loop`, `rd->rto_loop_next`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtoPushState {
    /// The CPU the chain is at (`rto_cpu`; `None` is the kernel's -1: no
    /// chain running).
    pub rto_cpu: Option<CpuId>,
    /// Rounds the chain has started (`rto_loop`).
    pub rto_loop: u32,
    /// Rounds requested (`rto_loop_next`).
    pub rto_loop_next: u32,
}

impl RtoPushState {
    /// `rto_next_cpu`: the next overloaded CPU after the chain's current
    /// one; at the end of `rto_mask`, start another round if one was
    /// requested meanwhile, else end the chain (`None`).
    pub fn rto_next_cpu(&mut self, rto_mask: &CpuMask) -> Option<CpuId> {
        loop {
            let start = self.rto_cpu.map_or(0, |c| c.idx() + 1);
            self.rto_cpu = rto_mask.next_from(start);
            if self.rto_cpu.is_some() {
                return self.rto_cpu;
            }
            if self.rto_loop == self.rto_loop_next {
                return None;
            }
            self.rto_loop = self.rto_loop_next;
        }
    }

    /// `tell_cpu_to_push`: request a round; if no chain is running, start
    /// one and return the CPU to send the first IPI to (the engine then runs
    /// the IPI handler there: push until [`crate::rt::PushDecision`] is not
    /// `Push`, then [`RtoPushState::rto_next_cpu`] for the next hop).
    pub fn tell_cpu_to_push(&mut self, rto_mask: &CpuMask) -> Option<CpuId> {
        self.rto_loop_next = self.rto_loop_next.wrapping_add(1);
        if self.rto_cpu.is_some() {
            return None;
        }
        self.rto_next_cpu(rto_mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(list: &str) -> CpuMask {
        CpuMask::parse_list(list).unwrap()
    }

    #[test]
    fn chain_visits_overloaded_cpus_in_order_then_ends() {
        let mask = m("1,3");
        let mut s = RtoPushState::default();
        assert_eq!(s.tell_cpu_to_push(&mask), Some(CpuId(1)));
        // The first request's round: 1 then 3. The request bumped
        // rto_loop_next, so one more round follows before the chain ends.
        assert_eq!(s.rto_next_cpu(&mask), Some(CpuId(3)));
        assert_eq!(s.rto_next_cpu(&mask), Some(CpuId(1)));
        assert_eq!(s.rto_next_cpu(&mask), Some(CpuId(3)));
        assert_eq!(s.rto_next_cpu(&mask), None);
        assert_eq!(s.rto_cpu, None);
    }

    #[test]
    fn request_during_a_chain_does_not_start_another() {
        let mask = m("2");
        let mut s = RtoPushState::default();
        assert_eq!(s.tell_cpu_to_push(&mask), Some(CpuId(2)));
        assert_eq!(s.tell_cpu_to_push(&mask), None);
        assert_eq!(s.rto_loop_next, 2);
    }

    #[test]
    fn empty_mask_starts_no_chain() {
        let mut s = RtoPushState::default();
        assert_eq!(s.tell_cpu_to_push(&CpuMask::new()), None);
        assert_eq!(s.rto_loop, s.rto_loop_next);
    }
}
