//! Any bytes as a `-p` policy string: an error or a policy, never a panic;
//! a parsed policy's cpuset is also computed on a small machine.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::policy::parse_policy;

#[path = "small_machine.rs"]
mod small_machine;
use small_machine::machine;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = parse_policy(text) {
        let _ = p.cpuset(machine());
    }
    let _ = schedlab_core::api::policy_show(text);
});
