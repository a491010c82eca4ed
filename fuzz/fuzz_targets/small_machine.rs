//! The machine the workload and policy targets parse against: 2 LLCs x 2
//! cores x 2 threads, small so that a parsed workload's size (tasks per CPU
//! and the like) stays cheap to build.

use schedlab_core::topology::{parse_machine, Machine};
use std::sync::OnceLock;

const MACHINE: &str = "[machine]\nname = \"fuzz\"\n[topology]\nllcs_per_node = 2\ncores_per_cluster = 2\n\
threads_per_core = 2\n[[core_type]]\nname = \"c\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 2000\n";

/// The machine, parsed once per process.
pub fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| parse_machine(MACHINE, "toml", "fuzz").expect("the fuzz machine parses"))
}
