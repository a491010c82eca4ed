//! Any bytes as an ftrace text (`schedlab analyze`'s reader): an error or
//! parsed events, never a panic or an unbounded allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_core::trace::read_ftrace;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = read_ftrace(&text, "fuzz.trace");
});
