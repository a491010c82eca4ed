//! Any bytes as a workload file (TOML, or JSON when the input starts with
//! `{`): an error or workloads, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::workload::build_workloads;

#[path = "small_machine.rs"]
mod small_machine;
use small_machine::machine;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let format = if text.trim_start().starts_with('{') { "json" } else { "toml" };
    let _ = build_workloads(text, format, "fuzz-workload", machine());
});
