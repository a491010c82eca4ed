//! Any bytes as a machine JSON (the Python-dict form): an error or a machine, never a panic; a
//! machine that parses must also get its sched domains without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::topology::{build_sched_domains, parse_machine};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(m) = parse_machine(text, "json", "fuzz.json") {
        let _ = build_sched_domains(&m);
    }
});
