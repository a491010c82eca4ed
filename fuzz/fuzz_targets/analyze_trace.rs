//! Any bytes through all of `schedlab analyze`: the reader, then the
//! metrics collector over whatever events it kept. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = schedlab_core::api::analyze_trace(&text, "fuzz.trace");
});
