//! Any bytes as a `-w family:key=value,...` string on a small machine: an
//! error or a workload, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::topology::{parse_machine, Machine};
use schedlab_core::workload::build_workloads;
use std::sync::OnceLock;

/// 2 LLCs x 2 cores x 2 threads: small, so that a parsed workload's size
/// (tasks per CPU and the like) stays cheap to build.
const MACHINE: &str = "[machine]\nname = \"fuzz\"\n[topology]\nllcs_per_node = 2\ncores_per_cluster = 2\n\
threads_per_core = 2\n[[core_type]]\nname = \"c\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 2000\n";

fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| parse_machine(MACHINE, "toml", "fuzz").expect("the fuzz machine parses"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = build_workloads(text, "spec", "workload", machine());
});
