//! Any bytes as a workload file (TOML, or JSON when the input starts with
//! `{`): an error or workloads, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::topology::{parse_machine, Machine};
use schedlab_core::workload::build_workloads;
use std::sync::OnceLock;

/// The same small machine as `workload_spec`.
const MACHINE: &str = "[machine]\nname = \"fuzz\"\n[topology]\nllcs_per_node = 2\ncores_per_cluster = 2\n\
threads_per_core = 2\n[[core_type]]\nname = \"c\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 2000\n";

fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| parse_machine(MACHINE, "toml", "fuzz").expect("the fuzz machine parses"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let format = if text.trim_start().starts_with('{') { "json" } else { "toml" };
    let _ = build_workloads(text, format, "fuzz-workload", machine());
});
