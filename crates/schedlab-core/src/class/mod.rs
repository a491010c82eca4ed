//! The class table: schedlab's `struct sched_class`.
//!
//! The kernel keeps one `struct sched_class` per class (stop, dl, rt, fair,
//! ext, idle) in priority order, and the core (`core.c`) calls a class's hooks
//! without knowing what the class keeps. schedlab does the same with an enum
//! ([`SchedClass`]) and one dispatch function per hook ([`hooks`]): a `match`,
//! never a trait object, so the engine's hot path has no dynamic dispatch.
//!
//! ```text
//!   priority   class            runs                        per-CPU state   global state
//!   highest    SchedClass::Rt   SCHED_FIFO / SCHED_RR      rq.rt            Sim.rt
//!              SchedClass::Fair SCHED_OTHER/BATCH/IDLE      rq.cfs           Sim.fair
//!              SchedClass::Ext  scx_cosmos (full mode)      Sim.peer         Sim.peer
//!              SchedClass::Bmq  Project C BMQ (replaces fair) Sim.peer       Sim.peer
//!   lowest     (idle)           rq.curr == None
//! ```
//!
//! A run has one *normal* class for SCHED_OTHER/BATCH/IDLE tasks: `Fair`, or
//! a peer that takes them over (sched_ext's full mode puts every fair task in
//! `ext_sched_class`; BMQ replaces the fair class). RT tasks run in `Rt`
//! whatever the normal class is. `pick_next_task` walks the stack from the
//! top as `__pick_next_task` does; a waking task of a higher class preempts
//! at once (`wakeup_preempt` in core.c).
//!
//! Every hook and its one caller are listed in `README.md` beside this file.

pub mod hooks;

use crate::policy::ClassKind;
use crate::workload::SchedPolicy;

/// A scheduling class. The order of the variants is the priority order
/// (`sched_class_above`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchedClass {
    /// The RT class (`rt_sched_class`, kernel/sched/rt.c).
    Rt,
    /// The fair class (`fair_sched_class`, kernel/sched/fair.c).
    Fair,
    /// sched_ext running scx_cosmos (`ext_sched_class`, kernel/sched/ext.c).
    Ext,
    /// Project C BMQ, in place of the fair class.
    Bmq,
}

impl SchedClass {
    /// The class that runs SCHED_OTHER/BATCH/IDLE tasks under `kind`.
    pub fn normal(kind: &ClassKind) -> SchedClass {
        match kind {
            ClassKind::Fair => SchedClass::Fair,
            ClassKind::Cosmos(_) => SchedClass::Ext,
            ClassKind::Bmq(_) => SchedClass::Bmq,
        }
    }

    /// The class of a task with `policy` when `normal` runs normal tasks
    /// (`__setscheduler_class`).
    pub fn of(policy: SchedPolicy, normal: SchedClass) -> SchedClass {
        if policy.is_rt() {
            SchedClass::Rt
        } else {
            normal
        }
    }

    /// `sched_class_above(self, other)`: `self` has the higher priority.
    #[inline]
    pub fn above(self, other: SchedClass) -> bool {
        self < other
    }

    /// A peer class replacing the fair class (its hooks live in `policies`).
    #[inline]
    pub fn is_peer(self) -> bool {
        matches!(self, SchedClass::Ext | SchedClass::Bmq)
    }

    /// Name as the kernel spells the class.
    pub fn name(self) -> &'static str {
        match self {
            SchedClass::Rt => "rt",
            SchedClass::Fair => "fair",
            SchedClass::Ext => "ext",
            SchedClass::Bmq => "bmq",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_is_above_every_normal_class() {
        for c in [SchedClass::Fair, SchedClass::Ext, SchedClass::Bmq] {
            assert!(SchedClass::Rt.above(c));
            assert!(!c.above(SchedClass::Rt));
        }
    }

    #[test]
    fn policy_picks_the_class() {
        assert_eq!(SchedClass::of(SchedPolicy::Fifo, SchedClass::Fair), SchedClass::Rt);
        assert_eq!(SchedClass::of(SchedPolicy::Rr, SchedClass::Ext), SchedClass::Rt);
        assert_eq!(SchedClass::of(SchedPolicy::Batch, SchedClass::Fair), SchedClass::Fair);
        assert_eq!(SchedClass::of(SchedPolicy::Normal, SchedClass::Bmq), SchedClass::Bmq);
    }
}
