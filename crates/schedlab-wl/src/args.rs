//! `family:key=value,...` specs, with the simulated families' units
//! (durations like `5ms`, `50us`, `2s`; counts), and the syscall helpers the
//! families share.

use std::collections::BTreeMap;

/// Why a workload did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WlError {
    /// Bad arguments (exit 2).
    Bad(String),
    /// A syscall failed (exit 1).
    Sys(String),
}

/// A parsed spec: family and its keys; `take_*` consume keys so that
/// [`Spec::finish`] can reject the ones left over.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Family name.
    pub family: String,
    keys: std::cell::RefCell<BTreeMap<String, String>>,
}

/// Parse `family:key=value,...`.
pub fn parse(spec: &str) -> Result<Spec, WlError> {
    let (family, rest) = spec.split_once(':').unwrap_or((spec, ""));
    if family.is_empty() {
        return Err(WlError::Bad(format!("'{spec}': expected FAMILY:key=value,...")));
    }
    let mut keys = BTreeMap::new();
    for part in rest.split(',').filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(WlError::Bad(format!("{family}: '{part}' is not key=value")));
        };
        if keys.insert(k.to_string(), v.to_string()).is_some() {
            return Err(WlError::Bad(format!("{family}: key '{k}' given twice")));
        }
    }
    Ok(Spec { family: family.to_string(), keys: std::cell::RefCell::new(keys) })
}

/// Nanoseconds in a duration like `5ms`, `50us`, `1500ns`, `2s` (a bare
/// number is in `default_unit_ns`).
pub fn parse_duration(v: &str, default_unit_ns: u64) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit {
        "" => default_unit_ns as f64,
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = n * mult;
    (ns.is_finite() && (0.0..3.6e12).contains(&ns)).then_some(ns.round() as u64)
}

impl Spec {
    fn take(&self, key: &str) -> Option<String> {
        self.keys.borrow_mut().remove(key)
    }

    /// A count in `min..=max`.
    pub fn count(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, WlError> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().ok().filter(|n| (min..=max).contains(n)).ok_or_else(|| {
                WlError::Bad(format!("{}: {key}: expected a count {min}..={max}, got '{v}'", self.family))
            }),
        }
    }

    /// A duration, ns.
    pub fn duration(&self, key: &str, default_ns: u64, default_unit_ns: u64) -> Result<u64, WlError> {
        match self.take(key) {
            None => Ok(default_ns),
            Some(v) => parse_duration(&v, default_unit_ns).ok_or_else(|| {
                WlError::Bad(format!("{}: {key}: expected a duration such as 5ms, got '{v}'", self.family))
            }),
        }
    }

    /// A duration in `min_ns..=max_ns`, ns (the simulated family's range).
    pub fn duration_within(
        &self,
        key: &str,
        default_ns: u64,
        default_unit_ns: u64,
        (min_ns, max_ns): (u64, u64),
    ) -> Result<u64, WlError> {
        match self.take(key) {
            None => Ok(default_ns),
            Some(v) => {
                parse_duration(&v, default_unit_ns).filter(|ns| (min_ns..=max_ns).contains(ns)).ok_or_else(|| {
                    WlError::Bad(format!(
                        "{}: {key}: expected a duration from {} to {}, got '{v}'",
                        self.family,
                        fmt_ns(min_ns),
                        fmt_ns(max_ns)
                    ))
                })
            }
        }
    }

    /// A duration, ns, or `None` for `auto` (the default).
    pub fn duration_or_auto(&self, key: &str, default_unit_ns: u64, max_ns: u64) -> Result<Option<u64>, WlError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) if v == "auto" => Ok(None),
            Some(v) => parse_duration(&v, default_unit_ns).filter(|&ns| ns <= max_ns).map(Some).ok_or_else(|| {
                WlError::Bad(format!(
                    "{}: {key}: expected auto or a duration up to {}, got '{v}'",
                    self.family,
                    fmt_ns(max_ns)
                ))
            }),
        }
    }

    /// A thread count as the simulated families take it: `auto` (the
    /// default, giving `auto`), a count in `1..=max`, or `N%` of `nr_cpus`
    /// rounded to the nearest whole thread (at least one).
    pub fn threads(&self, key: &str, auto: u64, nr_cpus: u64, max: u64) -> Result<u64, WlError> {
        let Some(v) = self.take(key) else { return Ok(auto) };
        if v == "auto" {
            return Ok(auto);
        }
        let n = match v.strip_suffix('%') {
            Some(pct) => pct
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .map(|p| ((nr_cpus as f64 * p / 100.0).round() as u64).max(1)),
            None => v.parse::<u64>().ok(),
        };
        n.filter(|n| (1..=max).contains(n)).ok_or_else(|| {
            WlError::Bad(format!(
                "{}: {key}: expected auto, a thread count 1..={max} or a percentage in (0%, 100%] of the \
                 {nr_cpus} CPUs, got '{v}'",
                self.family
            ))
        })
    }

    /// One of `choices` (the first is the default).
    pub fn choice(&self, key: &str, choices: &[&str]) -> Result<String, WlError> {
        match self.take(key) {
            None => Ok(choices[0].to_string()),
            Some(v) if choices.contains(&v.as_str()) => Ok(v),
            Some(v) => {
                Err(WlError::Bad(format!("{}: {key}: expected one of {}, got '{v}'", self.family, choices.join("|"))))
            }
        }
    }

    /// Accept and ignore keys the simulation reads but a real run cannot
    /// use (costs the real machine has by itself, a seed).
    pub fn ignore(&self, keys: &[&str]) {
        for k in keys {
            self.take(k);
        }
    }

    /// Error on any key left.
    pub fn finish(&self) -> Result<(), WlError> {
        let left: Vec<String> = self.keys.borrow().keys().cloned().collect();
        if left.is_empty() {
            Ok(())
        } else {
            Err(WlError::Bad(format!("{}: unknown key(s): {}", self.family, left.join(", "))))
        }
    }
}

/// `ns` in the largest unit that divides it (for error messages).
fn fmt_ns(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// `futex(2)` on `word`, process-private; `val` is FUTEX_WAIT's expected
/// value or FUTEX_WAKE's count. Errors (EAGAIN when the word moved, EINTR)
/// are the callers' loops' business: they re-check the word.
pub fn futex(word: &std::sync::atomic::AtomicU32, op: libc::c_int, val: u32) {
    // SAFETY: `word` is a live, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// The last OS error as a `WlError::Sys` naming `what`.
pub fn sys(what: &str) -> WlError {
    WlError::Sys(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// A pipe (or a unix stream socketpair with `socket`): (read end, write end).
pub fn channel(socket: bool) -> Result<(libc::c_int, libc::c_int), WlError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors both calls write.
    let rc = unsafe {
        if socket {
            libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
        } else {
            libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC)
        }
    };
    if rc != 0 {
        return Err(sys(if socket { "socketpair" } else { "pipe" }));
    }
    Ok((fds[0], fds[1]))
}

/// Write all of `buf`; `false` when the other end is gone.
pub fn write_all(fd: libc::c_int, buf: &[u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unwritten part of `buf`.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        done += n as usize;
    }
    true
}

/// Read exactly `buf.len()` bytes; `false` at end of file or on error.
pub fn read_exact(fd: libc::c_int, buf: &mut [u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unfilled part of `buf`.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        done += n as usize;
    }
    true
}

/// Close a descriptor.
pub fn close(fd: libc::c_int) {
    // SAFETY: closing a descriptor this program opened.
    unsafe {
        libc::close(fd);
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), in order.
pub fn allowed_cpus() -> Result<Vec<usize>, WlError> {
    // SAFETY: `set` is a valid cpu_set_t for the kernel to fill; CPU_ISSET stays within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(sys("sched_getaffinity"));
        }
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Pin the calling thread to `cpu` (`sched_setaffinity`); a CPU this
/// process may not use is a `Sys` error.
pub fn pin_to(cpu: usize) -> Result<(), WlError> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(WlError::Bad(format!("cpu {cpu} is beyond CPU_SETSIZE")));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(sys(&format!("sched_setaffinity to CPU {cpu}")));
        }
    }
    Ok(())
}

/// Spawn a named thread (`comm` = `name`, cut to 15 bytes by the kernel).
pub fn spawn<F: FnOnce() + Send + 'static>(name: String, f: F) -> Result<std::thread::JoinHandle<()>, WlError> {
    std::thread::Builder::new().name(name.clone()).spawn(f).map_err(|e| WlError::Sys(format!("thread {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_units() {
        let s = parse("hackbench:groups=2,loops=10").unwrap();
        assert_eq!(s.family, "hackbench");
        assert_eq!(s.count("groups", 1, 1, 10).unwrap(), 2);
        assert_eq!(s.count("fds", 20, 1, 100).unwrap(), 20);
        assert!(s.finish().is_err(), "loops is left");
        assert_eq!(parse_duration("5ms", 1), Some(5_000_000));
        assert_eq!(parse_duration("1500ns", 1), Some(1500));
        assert_eq!(parse_duration("2", 1_000_000), Some(2_000_000));
        assert_eq!(parse_duration("2h", 1), None);
        assert!(matches!(parse("x:oops"), Err(WlError::Bad(m)) if m.contains("not key=value")));
        assert!(matches!(parse("x:a=1,a=2"), Err(WlError::Bad(m)) if m.contains("twice")));
    }

    #[test]
    fn ranged_durations_auto_and_thread_counts() {
        let s = parse("f:a=2s,b=0,c=auto,d=3ms,t=50%,u=auto,v=7").unwrap();
        assert_eq!(s.duration_within("a", 0, 1_000_000_000, (1_000_000, 3_600_000_000_000)).unwrap(), 2_000_000_000);
        assert_eq!(s.duration_within("b", 5, 1, (0, 10)).unwrap(), 0);
        assert_eq!(s.duration_or_auto("c", 1_000, 1_000_000_000).unwrap(), None);
        assert_eq!(s.duration_or_auto("d", 1_000, 1_000_000_000).unwrap(), Some(3_000_000));
        assert_eq!(s.duration_or_auto("absent", 1_000, 1).unwrap(), None);
        assert_eq!(s.threads("t", 9, 6, 100).unwrap(), 3);
        assert_eq!(s.threads("u", 9, 6, 100).unwrap(), 9);
        assert_eq!(s.threads("v", 9, 6, 100).unwrap(), 7);
        assert_eq!(s.threads("absent", 9, 6, 100).unwrap(), 9);
        let bad = parse("f:a=0,t=0,u=101%,v=x,w=2s").unwrap();
        let msg = |r: Result<u64, WlError>| match r {
            Err(WlError::Bad(m)) => m,
            other => panic!("expected a bad-argument error, got {other:?}"),
        };
        assert_eq!(
            msg(bad.duration_within("a", 0, 1, (1_000_000, 2_000_000_000))),
            "f: a: expected a duration from 1ms to 2s, got '0'"
        );
        assert!(msg(bad.threads("t", 1, 4, 10)).starts_with("f: t: expected auto, a thread count 1..=10"));
        assert!(msg(bad.threads("u", 1, 4, 10)).contains("got '101%'"));
        assert!(msg(bad.threads("v", 1, 4, 10)).contains("got 'x'"));
        assert!(matches!(bad.duration_or_auto("w", 1, 1_000), Err(WlError::Bad(m)) if m.contains("up to 1us")));
    }
}
