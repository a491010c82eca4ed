//! Native workload programs: real threads doing real blocking syscalls, the
//! counterparts of schedlab's simulated families with the same parameter
//! names, so that `schedlab validate` can run one workload on a real kernel
//! and in the simulator and compare. Each prints its metric as one JSON line.
//!
//! Thread names (`comm`, at most 15 bytes) all start with `wl-` so a trace
//! can be filtered with `--comm 'wl-*'`; see README.md for each family's.

pub mod args;
mod barrier;
mod clock;
mod hackbench;
mod periodic;
mod pipe;
mod pipecost;
mod refillcost;
mod schbench;
mod stalls;
mod wakecost;
mod workqueue;

use std::sync::atomic::{AtomicBool, Ordering};

pub use args::{parse, Spec, WlError};

/// Set to stop every workload loop at its next check (SIGINT, or Python's
/// handler through [`request_stop`]).
static STOP: AtomicBool = AtomicBool::new(false);

/// Asks the running workload to stop; it exits with status 130.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Clears a stop request.
pub fn clear_stop() {
    STOP.store(false, Ordering::Relaxed);
}

#[inline]
pub(crate) fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_sigint(_: libc::c_int) {
    request_stop();
}

/// SIGINT and SIGTERM request a stop (for the standalone binary).
pub fn install_sigint_stop() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_sigint as *const () as libc::sighandler_t);
    }
}

/// What a family lists in `--help`.
pub const FAMILIES: &[(&str, &str)] = &[
    ("pipe", pipe::SUMMARY),
    ("hackbench", hackbench::SUMMARY),
    ("workqueue", workqueue::SUMMARY),
    ("barrier", barrier::SUMMARY),
    ("periodic", periodic::SUMMARY),
    ("schbench", schbench::SUMMARY),
    ("pipecost", pipecost::SUMMARY),
    ("wakecost", wakecost::SUMMARY),
    ("refillcost", refillcost::SUMMARY),
    ("stalls", stalls::SUMMARY),
];

fn usage() -> String {
    let mut s =
        String::from("usage: schedlab-wl FAMILY:key=value,...   (the simulated family's spec syntax)\n\nfamilies:\n");
    for (name, summary) in FAMILIES {
        s.push_str(&format!("  {name:<10} {summary}\n"));
    }
    s
}

/// Runs the workload `args[0]` describes; prints its JSON line on stdout and
/// returns the exit status (0; 2 for bad arguments, with one line on stderr;
/// 1 for a failed syscall; 130 when stopped).
pub fn main_with_args(args: &[String]) -> i32 {
    match args {
        [a] if a == "--help" || a == "-h" => {
            print!("{}", usage());
            0
        }
        [spec] => match run(spec) {
            Ok(line) => {
                println!("{line}");
                if stopping() {
                    130
                } else {
                    0
                }
            }
            Err(WlError::Bad(msg)) => {
                eprintln!("error: {msg}");
                2
            }
            Err(WlError::Sys(msg)) => {
                eprintln!("error: {msg}");
                1
            }
        },
        _ => {
            eprintln!("error: expected one argument FAMILY:key=value,... (see schedlab-wl --help)");
            2
        }
    }
}

/// Runs one workload; returns its JSON line.
pub fn run(spec: &str) -> Result<String, WlError> {
    let s = parse(spec)?;
    let doc = match s.family.as_str() {
        "pipe" => pipe::run(&s)?,
        "hackbench" => hackbench::run(&s)?,
        "workqueue" => workqueue::run(&s)?,
        "barrier" => barrier::run(&s)?,
        "periodic" => periodic::run(&s)?,
        "schbench" => schbench::run(&s)?,
        "pipecost" => pipecost::run(&s)?,
        "wakecost" => wakecost::run(&s)?,
        "refillcost" => refillcost::run(&s)?,
        "stalls" => stalls::run(&s)?,
        other => {
            let names: Vec<&str> = FAMILIES.iter().map(|f| f.0).collect();
            return Err(WlError::Bad(format!("unknown family '{other}' (families: {})", names.join(", "))));
        }
    };
    Ok(doc.to_string())
}
