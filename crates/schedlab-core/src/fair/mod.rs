//! The fair class (kernel/sched/fair.c), split by decision area.

pub mod eevdf;
