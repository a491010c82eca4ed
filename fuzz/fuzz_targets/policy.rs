//! Any bytes as a `-p` policy string: an error or a policy, never a panic;
//! a parsed policy's cpuset is also computed on a small machine.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::policy::parse_policy;
use schedlab_core::topology::{parse_machine, Machine};
use std::sync::OnceLock;

const MACHINE: &str = "[machine]\nname = \"fuzz\"\n[topology]\nllcs_per_node = 2\ncores_per_cluster = 2\n\
threads_per_core = 2\n[[core_type]]\nname = \"c\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 2000\n";

fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| parse_machine(MACHINE, "toml", "fuzz").expect("the fuzz machine parses"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = parse_policy(text) {
        let _ = p.cpuset(machine());
    }
    let _ = schedlab_core::api::policy_show(text);
});
