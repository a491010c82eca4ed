//! `schbench`: Chris Mason's schbench in its default futex mode, the real
//! counterpart of the simulated `schbench` family with the same parameters.
//!
//! `message_threads` message threads each start `threads` workers. A worker
//! marks its futex word blocked, stamps the time, pushes itself onto its
//! message thread's list (a lock-free prepend), posts the message thread's
//! futex and waits on its own. The message thread splices the whole list,
//! takes one timestamp for the batch, writes it into every spliced worker's
//! wake time and posts each worker's futex (`xlist_wake_all`), then waits
//! for more. A woken worker records its wakeup latency (now minus the wake
//! time, whole microseconds, zeros dropped, as schbench's `tvdelta` and
//! `delta > 0`), then serves one request: sleeps `sleep` (`usleep`, with the
//! thread's timer slack set to `slack`) and does `operations` matrix
//! multiplications of `footprint` KiB (or, with an explicit `op`, spins that
//! long per operation, as the other families' CPU work), and posts again.
//!
//! Threads `wl-sb-m<M>` (message) and `wl-sb-w<M>.<N>` (workers). The
//! message thread starts its own workers, as schbench's does, so fork
//! placement starts from its CPU.
//!
//! Metric, in schbench's units: wakeup and request latency percentiles in
//! microseconds (20/50/90/99/99.9th, nearest rank over the exact samples
//! rather than fio's histogram buckets), and requests per second over the
//! measured window (schbench's "average rps": requests / runtime).
//!
//! DEVIATION(schbench): no per-CPU lock around the matrix work (as
//! `-L`/`--no-locking`); the simulated family does not model it either.
//! `-R`, `-A`, `-p`, `-W` and `-P ccx` are not offered (nor simulated).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::args::{allowed_cpus, futex, pin_to, spawn, Spec, WlError};
use crate::clock::{mono_ns, spin_ns};

pub(crate) const SUMMARY: &str =
    "message threads waking pools of workers that sleep then do matrix work (schbench): wakeup latency, requests/s";

const NS_PER_US: u64 = 1_000;
const NS_PER_S: u64 = 1_000_000_000;

/// schbench's futex word states (`FUTEX_BLOCKED`, `FUTEX_RUNNING`).
const BLOCKED: u32 = 0;
const RUNNING: u32 = 1;

/// The parsed parameters: the simulated family's names, units, defaults and
/// ranges (crates/schedlab-core/src/workload/schbench.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    pub message_threads: u64,
    /// Workers per message thread.
    pub threads: u64,
    pub runtime_ns: u64,
    pub warmup_ns: u64,
    pub sleep_ns: u64,
    pub slack_ns: u64,
    pub operations: u64,
    pub footprint_kib: u64,
    /// `None` (auto): real matrix multiplications; `Some`: spin this long per operation.
    pub op_ns: Option<u64>,
    pub pin_message: bool,
}

impl Config {
    /// Reads `s`; `nr_cpus` is what `threads=auto` and `N%` count from
    /// (schbench uses `get_nprocs()`; here the CPUs this process may use).
    pub(crate) fn from_spec(s: &Spec, nr_cpus: u64) -> Result<Config, WlError> {
        let message_threads = s.count("message_threads", 1, 1, 4096)?;
        let threads = s.threads("threads", nr_cpus.div_ceil(message_threads).max(1), nr_cpus, 1_000_000)?;
        let runtime_ns = s.duration_within("runtime", 2 * NS_PER_S, NS_PER_S, (1_000_000, 3_600 * NS_PER_S))?;
        let warmup_ns = s.duration_within("warmup", 0, NS_PER_S, (0, 3_600 * NS_PER_S))?;
        let sleep_ns = s.duration_within("sleep", 100 * NS_PER_US, NS_PER_US, (0, NS_PER_S))?;
        let slack_ns = s.duration_within("slack", 50 * NS_PER_US, NS_PER_US, (0, NS_PER_S))?;
        let operations = s.count("operations", 5, 0, 1_000_000)?;
        let footprint_kib = s.count("footprint", 256, 0, 1 << 30)?;
        let op_ns = s.duration_or_auto("op", NS_PER_US, NS_PER_S)?;
        let pin_message = s.choice("message_cpus", &["none", "auto"])? == "auto";
        // The simulation's price of a FUTEX_WAKE: a real run pays its own.
        s.ignore(&["futex"]);
        s.finish()?;
        if warmup_ns >= runtime_ns {
            return Err(WlError::Bad("schbench: warmup: expected a warmup shorter than runtime".into()));
        }
        if message_threads * (threads + 1) > 1_000_000 {
            return Err(WlError::Bad(
                "schbench: threads: expected message_threads*(threads+1) of at most 1000000".into(),
            ));
        }
        Ok(Config {
            message_threads,
            threads,
            runtime_ns,
            warmup_ns,
            sleep_ns,
            slack_ns,
            operations,
            footprint_kib,
            op_ns,
            pin_message,
        })
    }

    /// schbench.c's `matrix_size`: sqrt(footprint bytes / 3 / sizeof(u64)).
    pub(crate) fn matrix_size(&self) -> usize {
        let cells = self.footprint_kib * 1024 / 3 / 8;
        let mut n = (cells as f64).sqrt() as u64;
        while n * n > cells {
            n -= 1;
        }
        while (n + 1) * (n + 1) <= cells {
            n += 1;
        }
        n as usize
    }
}

/// One worker's slot in its message thread's pool.
struct Slot {
    /// 1 + index of the next worker on the list (0 ends it).
    next: AtomicU64,
    /// The worker's futex word.
    futex: AtomicU32,
    /// `CLOCK_MONOTONIC` ns the wake is measured from (schbench's `wake_time`).
    wake_ns: AtomicU64,
}

/// A message thread and its workers' slots.
struct Pool {
    /// 1 + index of the last worker that posted itself (0: empty list).
    head: AtomicU64,
    futex: AtomicU32,
    slots: Vec<Slot>,
}

/// `fpost`: wake the futex's owner if it is (about to be) waiting.
fn fpost(word: &AtomicU32) {
    if word.compare_exchange(BLOCKED, RUNNING, SeqCst, SeqCst).is_ok() {
        futex(word, libc::FUTEX_WAKE, 1);
    }
}

/// `fwait`: return once posted, sleeping in FUTEX_WAIT until then.
fn fwait(word: &AtomicU32) {
    while word.compare_exchange(RUNNING, BLOCKED, SeqCst, SeqCst).is_err() {
        futex(word, libc::FUTEX_WAIT, BLOCKED);
    }
}

impl Pool {
    /// `xlist_add`: prepend worker `i`. Only whole-list splices take entries
    /// off, so a compare-exchange on the head suffices (no ABA: a worker is
    /// on the list at most once).
    fn add(&self, i: usize) {
        let mut old = self.head.load(SeqCst);
        loop {
            self.slots[i].next.store(old, SeqCst);
            match self.head.compare_exchange(old, i as u64 + 1, SeqCst, SeqCst) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// `xlist_wake_all`: splice the list, stamp once, post every worker on it.
    fn wake_all(&self) {
        let mut cur = self.head.swap(0, SeqCst);
        let now = mono_ns();
        while cur != 0 {
            let slot = &self.slots[cur as usize - 1];
            // Read the link before the post: the woken worker may re-add itself at once.
            cur = slot.next.swap(0, SeqCst);
            slot.wake_ns.store(now, SeqCst);
            fpost(&slot.futex);
        }
    }
}

/// What every thread shares.
struct Shared {
    cfg: Config,
    stopping: AtomicBool,
    /// Samples count from this `CLOCK_MONOTONIC` ns (start + warmup).
    count_from_ns: u64,
    results: Mutex<Tally>,
    /// The first failure of a thread that could not report it otherwise.
    error: Mutex<Option<WlError>>,
}

/// Samples, merged from each worker when it exits.
#[derive(Default)]
struct Tally {
    wakeup_us: Vec<u64>,
    request_us: Vec<u64>,
    requests: u64,
    /// Time in the operations of counted requests, ns, and their number.
    work_ns: u64,
    ops: u64,
}

/// `do_some_math`: the naive ijk product of the first two n x n matrices
/// into the third, so that the worker walks its `footprint` of cache.
fn multiply(data: &mut [u64], n: usize) {
    let (ab, c) = data.split_at_mut(2 * n * n);
    let (a, b) = ab.split_at(n * n);
    for i in 0..n {
        for j in 0..n {
            let mut sum = 0u64;
            for k in 0..n {
                sum = sum.wrapping_add(a[i * n + k].wrapping_mul(b[k * n + j]));
            }
            c[i * n + j] = sum;
        }
    }
    std::hint::black_box(c);
}

fn set_timer_slack(ns: u64) {
    // PR_SET_TIMERSLACK with 0 restores the default, so 0 is asked as 1 ns.
    // SAFETY: prctl with integer arguments only; it affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0);
    }
}

/// `worker_thread` + `msg_and_wait`.
fn worker(sh: &Shared, pool: &Pool, i: usize) {
    let cfg = &sh.cfg;
    set_timer_slack(cfg.slack_ns);
    let n = cfg.matrix_size();
    let mut data = if cfg.op_ns.is_none() && cfg.operations > 0 { vec![1u64; 3 * n * n] } else { Vec::new() };
    let mut t = Tally::default();
    let me = &pool.slots[i];
    while !sh.stopping.load(SeqCst) {
        me.futex.store(BLOCKED, SeqCst);
        me.wake_ns.store(mono_ns(), SeqCst);
        pool.add(i);
        fpost(&pool.futex);
        if !sh.stopping.load(SeqCst) {
            fwait(&me.futex);
        }
        let woke = mono_ns();
        // The final posts at the stop carry no wake time: not a sample.
        if sh.stopping.load(SeqCst) {
            break;
        }
        let us = (woke / NS_PER_US).saturating_sub(me.wake_ns.load(SeqCst) / NS_PER_US);
        if us > 0 && woke >= sh.count_from_ns {
            t.wakeup_us.push(us);
        }
        let start = mono_ns();
        if cfg.sleep_ns > 0 {
            std::thread::sleep(Duration::from_nanos(cfg.sleep_ns));
        }
        let work_start = mono_ns();
        match cfg.op_ns {
            Some(op) => spin_ns(op * cfg.operations),
            None => (0..cfg.operations).for_each(|_| multiply(&mut data, n)),
        }
        let end = mono_ns();
        // A request counts when it ends in the window (after warm-up, before the stop).
        if end >= sh.count_from_ns && !sh.stopping.load(SeqCst) {
            t.requests += 1;
            t.work_ns += end - work_start;
            t.ops += cfg.operations;
            let us = (end / NS_PER_US).saturating_sub(start / NS_PER_US);
            if us > 0 {
                t.request_us.push(us);
            }
        }
    }
    let mut all = sh.results.lock().unwrap_or_else(|e| e.into_inner());
    all.wakeup_us.append(&mut t.wakeup_us);
    all.request_us.append(&mut t.request_us);
    all.requests += t.requests;
    all.work_ns += t.work_ns;
    all.ops += t.ops;
}

fn fail(sh: &Shared, e: WlError) {
    sh.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
    sh.stopping.store(true, SeqCst);
}

/// `message_thread` + `run_msg_thread`: start the workers, pin if asked, then
/// wake whoever posted until the stop; finally post every worker and join.
fn message(sh: Arc<Shared>, pool: Arc<Pool>, m: u64, pin: Option<usize>) {
    let mut workers = Vec::with_capacity(sh.cfg.threads as usize);
    for w in 0..sh.cfg.threads as usize {
        let (sh2, pool2) = (Arc::clone(&sh), Arc::clone(&pool));
        match spawn(format!("wl-sb-w{m}.{w}"), move || worker(&sh2, &pool2, w)) {
            Ok(h) => workers.push(h),
            Err(e) => {
                fail(&sh, e);
                break;
            }
        }
    }
    if let Some(cpu) = pin {
        if let Err(e) = pin_to(cpu) {
            fail(&sh, e);
        }
    }
    loop {
        pool.futex.store(BLOCKED, SeqCst);
        pool.wake_all();
        if sh.stopping.load(SeqCst) {
            pool.wake_all();
            break;
        }
        fwait(&pool.futex);
    }
    for slot in &pool.slots {
        fpost(&slot.futex);
    }
    for h in workers {
        let _ = h.join();
    }
}

/// The nearest-rank percentile of sorted samples (schbench's rule: the
/// first value at which the running count reaches p% of the samples).
pub(crate) fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// schbench's percentile block, microseconds.
fn latency_block(mut v: Vec<u64>) -> serde_json::Value {
    v.sort_unstable();
    let p = |q: f64| percentile(&v, q);
    json!({
        "p20": p(20.0), "p50": p(50.0), "p90": p(90.0), "p99": p(99.0), "p99.9": p(99.9),
        "min": v.first(), "max": v.last(), "samples": v.len(),
    })
}

pub(crate) fn run(s: &Spec) -> Result<serde_json::Value, WlError> {
    let cpus = allowed_cpus()?;
    let cfg = Config::from_spec(s, cpus.len() as u64)?;
    let t0 = mono_ns();
    let sh = Arc::new(Shared {
        cfg: cfg.clone(),
        stopping: AtomicBool::new(false),
        count_from_ns: t0 + cfg.warmup_ns,
        results: Mutex::new(Tally::default()),
        error: Mutex::new(None),
    });
    let mut pools = Vec::new();
    let mut handles = Vec::new();
    for m in 0..cfg.message_threads {
        let slots = (0..cfg.threads)
            .map(|_| Slot { next: AtomicU64::new(0), futex: AtomicU32::new(BLOCKED), wake_ns: AtomicU64::new(0) })
            .collect();
        let pool = Arc::new(Pool { head: AtomicU64::new(0), futex: AtomicU32::new(BLOCKED), slots });
        // -M auto: message thread i on CPU i (of the CPUs this process may use).
        let pin = cfg.pin_message.then(|| cpus[m as usize % cpus.len()]);
        let (sh2, pool2) = (Arc::clone(&sh), Arc::clone(&pool));
        match spawn(format!("wl-sb-m{m}"), move || message(sh2, pool2, m, pin)) {
            Ok(h) => handles.push(h),
            Err(e) => fail(&sh, e),
        }
        pools.push(pool);
    }
    // sleep_for_runtime, waking at most every 100 ms to see a stop request.
    let deadline = t0 + cfg.runtime_ns;
    loop {
        let now = mono_ns();
        if now >= deadline || crate::stopping() || sh.stopping.load(SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_nanos((deadline - now).min(100_000_000)));
    }
    let stop_ns = mono_ns();
    sh.stopping.store(true, SeqCst);
    for pool in &pools {
        fpost(&pool.futex);
    }
    for h in handles {
        let _ = h.join();
    }
    let completion_s = (mono_ns() - t0) as f64 / 1e9;
    if let Some(e) = sh.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let tally = std::mem::take(&mut *sh.results.lock().unwrap_or_else(|p| p.into_inner()));
    let window_s = stop_ns.saturating_sub(t0 + cfg.warmup_ns) as f64 / 1e9;
    Ok(json!({
        "family": "schbench",
        "message_threads": cfg.message_threads,
        "threads": cfg.threads,
        "matrix_size": cfg.matrix_size(),
        "completion_time_s": completion_s,
        "measured_s": window_s,
        "requests": tally.requests,
        "requests_per_s": if window_s > 0.0 { tally.requests as f64 / window_s } else { 0.0 },
        "wakeup_latency_us": latency_block(tally.wakeup_us),
        "request_latency_us": latency_block(tally.request_us),
        // Mean wall time of one operation (matrix multiplication or spin):
        // what the simulated family's `op` estimates.
        "op_us": (tally.ops > 0).then(|| tally.work_ns as f64 / tally.ops as f64 / 1e3),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    fn cfg(spec: &str, cpus: u64) -> Result<Config, WlError> {
        Config::from_spec(&parse(spec)?, cpus)
    }

    fn bad(spec: &str) -> String {
        match cfg(spec, 4) {
            Err(WlError::Bad(m)) => m,
            other => panic!("{spec}: expected a bad-argument error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_simulated_familys() {
        let c = cfg("schbench", 6).unwrap();
        let want = Config {
            message_threads: 1,
            threads: 6,
            runtime_ns: 2 * NS_PER_S,
            warmup_ns: 0,
            sleep_ns: 100_000,
            slack_ns: 50_000,
            operations: 5,
            footprint_kib: 256,
            op_ns: None,
            pin_message: false,
        };
        assert_eq!(c, want);
        // 256 KiB: 104 x 104 matrices, as schbench.c and the simulated family compute.
        assert_eq!(c.matrix_size(), 104);
        assert_eq!(cfg("schbench:message_threads=4", 6).unwrap().threads, 2, "ceil(6 / 4)");
    }

    #[test]
    fn units_match_the_simulated_family() {
        // Bare numbers: runtime and warmup in seconds, sleep, slack and op in microseconds.
        let c = cfg("schbench:runtime=3,warmup=1,sleep=20,slack=0,op=40,threads=50%,futex=900ns", 8).unwrap();
        assert_eq!((c.runtime_ns, c.warmup_ns), (3 * NS_PER_S, NS_PER_S));
        assert_eq!((c.sleep_ns, c.slack_ns, c.op_ns), (20_000, 0, Some(40_000)));
        assert_eq!(c.threads, 4);
        let c = cfg("schbench:runtime=250ms,sleep=0,operations=0,message_cpus=auto,op=auto", 2).unwrap();
        assert_eq!((c.runtime_ns, c.sleep_ns, c.operations, c.op_ns), (250_000_000, 0, 0, None));
        assert!(c.pin_message);
    }

    #[test]
    fn bad_arguments_name_the_key_and_the_expectation() {
        assert!(bad("schbench:message_threads=0").starts_with("schbench: message_threads: expected a count 1..=4096"));
        assert!(bad("schbench:threads=0").starts_with("schbench: threads: expected auto, a thread count"));
        assert_eq!(bad("schbench:runtime=0"), "schbench: runtime: expected a duration from 1ms to 3600s, got '0'");
        assert!(bad("schbench:sleep=2s").contains("sleep: expected a duration from 0 to 1s"));
        assert_eq!(bad("schbench:runtime=1,warmup=1"), "schbench: warmup: expected a warmup shorter than runtime");
        assert!(bad("schbench:op=fast").contains("op: expected auto or a duration"));
        assert!(bad("schbench:message_cpus=0-3").contains("message_cpus: expected one of none|auto"));
        assert!(bad("schbench:message_threads=4096,threads=1000").contains("at most 1000000"));
        assert_eq!(bad("schbench:pipe=4096"), "schbench: unknown key(s): pipe");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.9), Some(100));
        assert_eq!(percentile(&[7], 20.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn the_matrix_product_is_a_product() {
        let n = 3;
        let mut d = vec![0u64; 3 * n * n];
        for i in 0..n {
            d[i * n + i] = 1; // a = identity
        }
        for (k, x) in d[n * n..2 * n * n].iter_mut().enumerate() {
            *x = k as u64;
        }
        multiply(&mut d, n);
        assert_eq!(&d[2 * n * n..], &(0..9).collect::<Vec<u64>>()[..]);
    }
}
