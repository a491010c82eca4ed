//! Any bytes as a `-w family:key=value,...` string on a small machine: an
//! error or a workload, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::workload::build_workloads;

#[path = "small_machine.rs"]
mod small_machine;
use small_machine::machine;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = build_workloads(text, "spec", "workload", machine());
});
