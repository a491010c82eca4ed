//! The machine model: CPUs, caches, capacities, costs (`machine`), how a
//! machine is described in TOML (`spec`), and the sched domains the kernel
//! would build on it (`domains`).

pub mod domains;
pub mod machine;

pub use domains::{build_sched_domains, Domains, SchedDomain, SdId, SdLevel};
pub use machine::{CoreType, CostParams, CpuInfo, Distance, IdleState, Machine, Opp};
