//! The machine model: CPUs, caches, capacities, costs (`machine`), how a
//! machine is described in TOML (`spec`), the sched domains the kernel
//! would build on it (`domains`), how `topo show` prints both (`show`),
//! and how `topo import` writes a description from sysfs (`sysfs`).

pub mod domains;
mod hasher;
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

/// The hasher of the build-time maps keyed by CPU masks, which are only
/// looked up (see [`hasher::WordHasher`]).
pub type FixedHasher = std::hash::BuildHasherDefault<hasher::WordHasher>;
pub use spec::{parse_machine, set_governor, set_idle_governor};
pub use sysfs::import_sysfs;
