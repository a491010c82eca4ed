//! The fair class (kernel/sched/fair.c), split by area: the runqueue
//! (`eevdf`, its CFS discipline `cfs`, load weights `weight`), wakeup placement (`wakeup`), the fork/exec slow path
//! (`slowpath`, v4.14's in `slowpath_legacy`), capacity and utilisation (`capacity`), load balancing
//! (`lb_stats`, `busiest`, `balance`, `periodic`, `newidle`, `nohz`); the idle-core and LLC idle-mask
//! updates on idle entry and the tick (`idle_core`). The class's global state, which the engine holds as
//! `Sim::fair` and never reads, is [`state::FairState`].

pub mod balance;
pub mod busiest;
pub mod capacity;
pub mod cas;
pub mod cfs;
pub mod class;
pub mod eas;
pub mod eevdf;
pub mod eevdf_lag;
pub mod entities;
pub mod group_refs;
pub mod hrtick;
pub mod idle_core;
pub mod lb_stats;
pub mod local_group;
pub mod newidle;
pub mod nohz;
pub mod overutilized;
pub mod periodic;
pub mod sg_sums;
pub mod slowpath;
pub mod slowpath_legacy;
pub mod state;
pub mod wakeup;
pub mod wakeup_policy;
pub mod wakeup_seeds;
pub mod weight;

#[cfg(test)]
mod balance_scenario_tests;
#[cfg(test)]
mod balance_tests;
#[cfg(test)]
mod cas_tests;
#[cfg(test)]
mod cfs_tests;
#[cfg(test)]
mod eas_tests;
#[cfg(test)]
mod sg_sums_tests;
#[cfg(test)]
mod slowpath_legacy_tests;
#[cfg(test)]
mod wakeup_seeds_tests;
#[cfg(test)]
mod wakeup_tests;
