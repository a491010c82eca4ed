//! The machine model: CPUs, caches, capacities, costs (`machine`), how a
//! machine is described in TOML (`spec`), the sched domains the kernel
//! would build on it (`domains`), how `topo show` prints both (`show`),
//! and how `topo import` writes a description from sysfs (`sysfs`).

pub mod domains;
pub mod machine;
pub mod show;
pub mod spec;
pub mod sysfs;
#[cfg(test)]
mod sysfs_tests;
mod sysfs_toml;

pub use domains::{build_sched_domains, Domains, SchedDomain, SdId, SdLevel};
pub use machine::{
    CoreType, CostParams, CpuInfo, CpufreqParams, Distance, Governor, IdleLevel, IdleState, Machine, Opp,
};
pub use show::{render_json, render_text};

/// A hasher with fixed keys (`DefaultHasher::new`: SipHash with zero keys)
/// for build-time maps that are only looked up: the std default seeds each
/// map at random, which leaves results alone but moves a build's
/// instruction count from run to run (engine_cost.py counts them).
pub type FixedHasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
pub use spec::{parse_machine, set_governor, set_idle_governor};
pub use sysfs::import_sysfs;
