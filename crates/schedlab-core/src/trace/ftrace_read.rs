//! Reads scheduler events back from text traces:
//!
//! * ftrace text (`/sys/kernel/tracing/trace`, also with the `irq-info`
//!   flags column, a tgid column, or schedlab's own writer output);
//! * `trace-cmd report` output, with its sched plugin's short forms
//!   (`bash:12 [120] S ==> swapper/1:0 [120]`, `bash:12 [120] CPU:003`) or
//!   without plugins (`-N`, the kernel's `TP_printk` forms);
//! * `perf script` output of sched tracepoints (`comm tid [cpu] time:
//!   sched:sched_switch: ...`).
//!
//! pids map to dense [`TaskId`]s in order of first appearance in an event's
//! fields (pid 0, the idle task, is `None`). Lines of other events are
//! skipped; lines that are neither comments nor events are counted.
//!
//! `sched_migrate_task` does not say why a task moved, so the reason is
//! inferred from the task's state: a queued or running task was moved by load
//! balancing; a sleeping (or waking) task was placed by a wakeup, or by fork
//! when its next event is `sched_wakeup_new`; a task not seen before is
//! decided by its next event the same way (`Balance` when that is not a
//! wakeup).

use std::collections::HashMap;

use crate::error::{Result, SchedlabError};
use crate::ids::{CpuId, Ns, TaskId};
use crate::trace::lost_switch::{head_task, heads_current, CurrentTracker};
use crate::trace::{BalanceKind, Event, MigrateReason, PlacePath, PrevState, TimedEvent};
use crate::workload::MarkKind;

/// Highest CPU count a trace may describe. Linux's `CONFIG_NR_CPUS` tops out
/// at 8192 on x86-64 (`MAXSMP`), so a CPU number at or beyond this is a
/// corrupt line, not a machine; the bound keeps a bad number from sizing
/// per-CPU vectors (`[4000000000]` would otherwise ask for 64 GB).
pub const MAX_CPUS: u32 = 8192;

/// Events and tasks read from a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedTrace {
    /// Events in time order.
    pub events: Vec<TimedEvent>,
    /// Name (comm) of each task, indexed by `TaskId`.
    pub names: Vec<String>,
    /// pid of each task, indexed by `TaskId`.
    pub pids: Vec<u32>,
    /// CPUs: the header's count (`#P:`, `cpus=`) or the highest CPU seen + 1.
    pub nr_cpus: usize,
    /// Lines that were neither comments nor parseable event lines.
    pub bad_lines: usize,
    /// 1-based number of the first such line.
    pub first_bad_line: Option<usize>,
    /// Event lines of events schedlab does not model (irq, timer ...).
    pub other_lines: usize,
    /// Event lines whose timestamp is earlier than the previous event's.
    pub reversed_lines: usize,
    /// 1-based number of the first such line.
    pub first_reversed_line: Option<usize>,
    /// Switches the trace lost and the task columns of later lines show
    /// (see `lost_switch`), inserted into `events`.
    pub inferred_switches: usize,
}

/// Where a task stands, for inferring migration reasons.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Unknown,
    Asleep,
    Queued,
}

struct Reader {
    out: ParsedTrace,
    by_pid: HashMap<u32, TaskId>,
    seen: Vec<Seen>,
    /// Index of a migration whose reason waits for the task's next event.
    pending: Vec<Option<usize>>,
    max_cpu: Option<u32>,
    header_cpus: usize,
    /// A CPU number at or beyond [`MAX_CPUS`] seen on the current line.
    cpu_out_of_range: Option<u64>,
    /// Each CPU's current task, to recover lost switches.
    current: CurrentTracker,
}

/// The fixed part of an event line.
pub(crate) struct Head<'a> {
    /// The task column before `[cpu]`, trimmed: `comm-pid`, `comm-pid
    /// (tgid)` (trace-cmd, `-o record-tgid`) or `comm pid` (perf script).
    pub(crate) task: &'a str,
    /// As read (saturating): checked against [`MAX_CPUS`] by the caller.
    pub(crate) cpu: u64,
    pub(crate) time: Ns,
    /// The event name without a subsystem prefix (`sched_switch`).
    pub(crate) event: &'a str,
    /// The fields after the event name, trimmed.
    pub(crate) payload: &'a str,
}

/// `secs.frac` (any number of fraction digits up to 9) to ns.
fn parse_time(s: &str) -> Option<Ns> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac: u64 = frac.parse().ok()?;
    let frac_ns = frac * 10u64.pow(9 - s.split_once('.')?.1.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Split off the first whitespace-separated token.
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// Find `[cpu]` after a non-empty task column, then flags, time and event.
pub(crate) fn split_head(line: &str) -> Option<Head<'_>> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(off) = line[from..].find('[') {
        let p = from + off;
        from = p + 1;
        if p == 0 || !bytes[p - 1].is_ascii_whitespace() || line[..p].trim().is_empty() {
            continue;
        }
        let Some(close) = line[p..].find(']') else {
            break;
        };
        let digits = &line[p + 1..p + close];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Too many digits for u64 is still a CPU column, just an impossible one.
        let cpu = digits.parse::<u64>().unwrap_or(u64::MAX);
        // Up to two flag columns, then `secs.frac:`.
        let mut rest = &line[p + close + 1..];
        let mut time = None;
        for _ in 0..3 {
            let (tok, r) = token(rest);
            rest = r;
            if let Some(t) = tok.strip_suffix(':').and_then(parse_time) {
                time = Some(t);
                break;
            }
        }
        let Some(time) = time else { continue };
        let (mut tok, mut r) = token(rest);
        if tok.bytes().all(|b| b.is_ascii_digit()) && !tok.is_empty() {
            // perf script may print a sample period before the event name.
            (tok, r) = token(r);
        }
        let Some(name) = tok.strip_suffix(':') else {
            continue;
        };
        // perf names events `sched:sched_switch`.
        let event = name.rsplit(':').next().unwrap_or(name);
        return Some(Head { task: line[..p].trim(), cpu, time, event, payload: r.trim() });
    }
    None
}

/// Start of the value of `key=` in `s` at or after `from`, where the key
/// starts the string or follows a space (so `pid=` does not match `prev_pid=`).
fn value_start(s: &str, key: &str, from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = s.get(i..)?.find(key) {
        let at = i + off;
        let after = at + key.len();
        if s[after..].starts_with('=') && (at == 0 || s.as_bytes()[at - 1] == b' ') {
            return Some(after + 1);
        }
        i = at + 1;
    }
    None
}

/// Value of `key=` up to the next whitespace.
fn num<T: std::str::FromStr>(s: &str, key: &str) -> Option<T> {
    let v = value_start(s, key, 0)?;
    token(&s[v..]).0.parse().ok()
}

/// Word value of `key=` (up to whitespace).
fn word<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let v = value_start(s, key, 0)?;
    Some(token(&s[v..]).0)
}

/// A comm: the text from `key=` to ` next_key=` (comms may hold spaces).
fn comm<'a>(s: &'a str, key: &str, next_key: &str) -> Option<(&'a str, usize)> {
    let v = value_start(s, key, 0)?;
    let end = value_start(s, next_key, v)? - next_key.len() - 2;
    Some((s.get(v..end)?, end))
}

fn prev_state(s: &str) -> PrevState {
    match s.as_bytes().first() {
        Some(b'R') => PrevState::Runnable,
        Some(b'X' | b'Z') => PrevState::Dead,
        _ => PrevState::Sleeping,
    }
}

/// Plugin form `comm:pid [prio]...`: (comm, pid, rest after `]`).
fn plugin_task(s: &str) -> Option<(&str, u32, &str)> {
    let b = s.rfind(" [")?;
    let (cp, rest) = (&s[..b], &s[b..]);
    let (c, p) = cp.trim().rsplit_once(':')?;
    let close = rest.find(']')?;
    Some((c, p.parse().ok()?, rest[close + 1..].trim()))
}

/// A switch side: (comm, pid).
type Side<'a> = (&'a str, u32);

fn parse_switch(p: &str) -> Option<(Side<'_>, PrevState, Side<'_>)> {
    if p.contains("prev_comm=") {
        let (pc, _) = comm(p, "prev_comm", "prev_pid")?;
        let (nc, _) = comm(p, "next_comm", "next_pid")?;
        let st = word(p, "prev_state")?;
        Some(((pc, num(p, "prev_pid")?), prev_state(st), (nc, num(p, "next_pid")?)))
    } else {
        let (l, r) = p.split_once(" ==> ")?;
        let (pc, pp, st) = plugin_task(l)?;
        let (nc, np, _) = plugin_task(r)?;
        Some(((pc, pp), prev_state(st), (nc, np)))
    }
}

/// `comm= pid= ... target_cpu=` or the plugin's `comm:pid [prio] CPU:003`.
fn parse_wake(p: &str) -> Option<(&str, u32, Option<u32>)> {
    if p.contains("comm=") {
        let (c, _) = comm(p, "comm", "pid")?;
        Some((c, num(p, "pid")?, num(p, "target_cpu")))
    } else {
        let (c, pid, rest) = plugin_task(p)?;
        let cpu = rest.rsplit_once("CPU:").and_then(|(_, n)| n.trim().parse().ok());
        Some((c, pid, cpu))
    }
}

impl Reader {
    fn task(&mut self, pid: u32, name: &str) -> Option<TaskId> {
        if pid == 0 {
            return None;
        }
        if let Some(&t) = self.by_pid.get(&pid) {
            // A thread renames itself (prctl PR_SET_NAME) after it starts:
            // keep the latest comm, the one its work runs under.
            if self.out.names[t.idx()] != name && !name.is_empty() {
                self.out.names[t.idx()] = name.to_string();
            }
            return Some(t);
        }
        let t = TaskId(self.out.pids.len() as u32);
        self.by_pid.insert(pid, t);
        self.out.pids.push(pid);
        self.out.names.push(name.to_string());
        self.seen.push(Seen::Unknown);
        self.pending.push(None);
        Some(t)
    }

    /// A CPU number from the line; one beyond [`MAX_CPUS`] is noted (and the
    /// line rejected by the caller) instead of widening `nr_cpus`.
    fn cpu(&mut self, c: u64) -> CpuId {
        if c >= u64::from(MAX_CPUS) {
            self.cpu_out_of_range = Some(c);
            return CpuId(0);
        }
        let c = c as u32;
        self.max_cpu = Some(self.max_cpu.map_or(c, |m| m.max(c)));
        CpuId(c)
    }

    /// Settle a pending migration reason by the task's next event.
    fn settle(&mut self, t: TaskId, wakeup: Option<bool>) {
        if let Some(i) = self.pending[t.idx()].take() {
            if let Event::Migrate { reason, .. } = &mut self.out.events[i].ev {
                *reason = match wakeup {
                    Some(true) => MigrateReason::Fork,
                    Some(false) => MigrateReason::Wakeup,
                    None if self.seen[t.idx()] == Seen::Asleep => MigrateReason::Wakeup,
                    None => MigrateReason::Balance,
                };
            }
        }
    }

    fn push(&mut self, time: Ns, ev: Event) {
        self.out.events.push(TimedEvent { time, ev });
    }

    /// Parse one event; `None` = malformed, `Some(false)` = not ours.
    fn event(&mut self, h: &Head<'_>) -> Option<bool> {
        let p = h.payload;
        let ev = match h.event {
            "sched_switch" => {
                let ((pc, pp), st, (nc, np)) = parse_switch(p)?;
                let prev = self.task(pp, pc);
                let next = self.task(np, nc);
                if let Some(t) = prev {
                    self.settle(t, None);
                    self.seen[t.idx()] = if st == PrevState::Runnable { Seen::Queued } else { Seen::Asleep };
                }
                if let Some(t) = next {
                    self.settle(t, None);
                    self.seen[t.idx()] = Seen::Queued;
                }
                let cpu = self.cpu(h.cpu);
                self.current.switched(cpu, np);
                Event::Switch { cpu, prev, prev_state: st, next }
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
                let (c, pid, target) = parse_wake(p)?;
                let Some(task) = self.task(pid, c) else {
                    return Some(false);
                };
                if h.event == "sched_waking" {
                    self.settle(task, None);
                    if self.seen[task.idx()] != Seen::Queued {
                        self.seen[task.idx()] = Seen::Asleep;
                    }
                    Event::Waking { task, cpu: self.cpu(h.cpu) }
                } else {
                    let new = h.event == "sched_wakeup_new";
                    self.settle(task, Some(new));
                    self.seen[task.idx()] = Seen::Queued;
                    let cpu = self.cpu(target.map_or(h.cpu, u64::from));
                    Event::Wakeup { task, cpu, new }
                }
            }
            "sched_migrate_task" => {
                let (c, _) = comm(p, "comm", "pid")?;
                let task = self.task(num(p, "pid")?, c);
                let (orig, dest) = (self.cpu(num(p, "orig_cpu")?), self.cpu(num(p, "dest_cpu")?));
                let Some(task) = task else { return Some(false) };
                self.settle(task, None);
                let reason = match self.seen[task.idx()] {
                    Seen::Queued => MigrateReason::Balance,
                    Seen::Asleep => MigrateReason::Wakeup,
                    Seen::Unknown => MigrateReason::Balance,
                };
                if reason == MigrateReason::Wakeup || self.seen[task.idx()] == Seen::Unknown {
                    self.pending[task.idx()] = Some(self.out.events.len());
                }
                Event::Migrate { task, orig, dest, reason }
            }
            "sched_process_exit" => {
                let (c, _) = comm(p, "comm", "pid")?;
                let Some(task) = self.task(num(p, "pid")?, c) else {
                    return Some(false);
                };
                self.settle(task, None);
                Event::Exit { task }
            }
            "schedlab_place" => {
                let (c, _) = comm(p, "comm", "pid")?;
                let task = self.task(num(p, "pid")?, c)?;
                let path = word(p, "path")?;
                let path = *PlacePath::ALL.iter().find(|x| x.name() == path)?;
                Event::Place {
                    task,
                    prev: self.cpu(num(p, "prev_cpu")?),
                    waker_cpu: self.cpu(num(p, "waker_cpu")?),
                    cpu: self.cpu(num(p, "cpu")?),
                    path,
                    scanned: num(p, "scanned")?,
                    capacity: num(p, "capacity").unwrap_or(0),
                }
            }
            "schedlab_balance" => {
                let kind = match word(p, "kind")? {
                    "newidle" => BalanceKind::NewIdle,
                    "periodic" => BalanceKind::Periodic,
                    "nohz_idle" => BalanceKind::NohzIdle,
                    "active" => BalanceKind::Active,
                    _ => return None,
                };
                let cpu = self.cpu(num(p, "cpu")?);
                Event::Balance { cpu, depth: num(p, "depth")?, kind, pulled: num(p, "pulled")? }
            }
            "schedlab_avg_idle" => {
                let cpu = self.cpu(num(p, "cpu")?);
                Event::AvgIdle { cpu, avg_idle_ns: num(p, "avg_idle_ns")?, max_ns: num(p, "max_ns")? }
            }
            "irq_handler_entry" | "irq_handler_exit" => {
                let irq = num::<u32>(p, "irq")?.min(u16::MAX as u32) as u16;
                Event::Irq { cpu: self.cpu(h.cpu), irq, entry: h.event == "irq_handler_entry" }
            }
            "cpu_frequency" => Event::CpuFrequency { cpu: self.cpu(num(p, "cpu_id")?), khz: num(p, "state")? },
            "cpu_idle" => {
                // A state index past u8 is no state schedlab models: read as an exit.
                let state: u32 = num(p, "state")?;
                Event::CpuIdle { cpu: self.cpu(num(p, "cpu_id")?), state: u8::try_from(state).ok() }
            }
            "softirq_entry" | "softirq_exit" => {
                Event::Softirq { cpu: self.cpu(h.cpu), entry: h.event == "softirq_entry" }
            }
            "schedlab_setscheduler" => {
                let (c, _) = comm(p, "comm", "pid")?;
                let task = self.task(num(p, "pid")?, c)?;
                let policy = crate::workload::sched_keys::policy_of_word(word(p, "policy")?)?;
                Event::SetScheduler { task, policy, prio: num(p, "prio")? }
            }
            "schedlab_mark" => {
                let (c, _) = comm(p, "comm", "pid")?;
                let task = self.task(num(p, "pid")?, c)?;
                let kind = match word(p, "kind")? {
                    "request_start" => MarkKind::RequestStart,
                    "request_done" => MarkKind::RequestDone,
                    "work_done" => MarkKind::WorkDone,
                    "wake_done" => MarkKind::WakeDone,
                    _ => return None,
                };
                Event::Mark { task, kind, value: num(p, "value")? }
            }
            _ => return Some(false),
        };
        self.push(h.time, ev);
        Some(true)
    }

    /// Insert the switch the trace lost before line `h`, when its task
    /// column contradicts the CPU's last known current task.
    fn recover_lost_switch(&mut self, h: &Head<'_>) {
        if !heads_current(h.event) || h.cpu >= u64::from(MAX_CPUS) {
            return;
        }
        let Some((comm, pid)) = head_task(h.task) else { return };
        let cpu = self.cpu(h.cpu);
        let Some(lost) = self.current.observe(cpu, pid) else { return };
        let prev_comm = self.by_pid.get(&lost.prev).map(|t| self.out.names[t.idx()].clone()).unwrap_or_default();
        let prev = self.task(lost.prev, &prev_comm);
        let next = self.task(lost.next, comm);
        self.push(h.time, Event::Switch { cpu, prev, prev_state: lost.prev_state, next });
        self.out.inferred_switches += 1;
    }

    /// Header lines that carry the CPU count: `#P:4` (ftrace), `cpus=4` (trace-cmd).
    /// A count beyond [`MAX_CPUS`] is returned as `Err(count)`.
    fn header(&mut self, line: &str) -> std::result::Result<(), u64> {
        let mut counts = Vec::new();
        if let Some(i) = line.find("#P:") {
            let t = token(&line[i + 3..]).0;
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                counts.push(t.parse::<u64>().unwrap_or(u64::MAX));
            }
        }
        if let Some(t) = line.strip_prefix("cpus=").map(str::trim) {
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                counts.push(t.parse::<u64>().unwrap_or(u64::MAX));
            }
        }
        for n in counts {
            if n > u64::from(MAX_CPUS) {
                return Err(n);
            }
            self.header_cpus = self.header_cpus.max(n as usize);
        }
        Ok(())
    }
}

/// Read a text trace. `origin` (a file name) appears in errors. Fails when
/// no scheduler event parses, or on the first CPU number or count beyond
/// [`MAX_CPUS`] (naming the line); otherwise bad lines are counted in
/// [`ParsedTrace::bad_lines`] and out-of-order timestamps in
/// [`ParsedTrace::reversed_lines`], for the caller to report.
pub fn read_ftrace(text: &str, origin: &str) -> Result<ParsedTrace> {
    let mut r = Reader {
        out: ParsedTrace::default(),
        by_pid: HashMap::new(),
        seen: Vec::new(),
        pending: Vec::new(),
        max_cpu: None,
        header_cpus: 0,
        cpu_out_of_range: None,
        current: CurrentTracker::default(),
    };
    let too_many = |line: usize, what: &str, n: u64| {
        SchedlabError::spec(
            origin,
            format!("line {line}"),
            format!("a {what} below {MAX_CPUS} (the most CPUs Linux supports), found {n}"),
        )
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') || trimmed.starts_with("cpus=") {
            if let Err(n) = r.header(trimmed) {
                return Err(too_many(i + 1, "CPU count", n));
            }
            continue;
        }
        // trace-cmd report preamble lines.
        if trimmed.starts_with("version =") || (trimmed.starts_with("CPU ") && trimmed.ends_with("is empty")) {
            continue;
        }
        let ok = match split_head(line) {
            Some(h) if h.cpu >= u64::from(MAX_CPUS) => return Err(too_many(i + 1, "CPU number", h.cpu)),
            Some(h) => {
                r.recover_lost_switch(&h);
                match r.event(&h) {
                    Some(true) => true,
                    Some(false) => {
                        r.out.other_lines += 1;
                        true
                    }
                    None => false,
                }
            }
            None => false,
        };
        if let Some(n) = r.cpu_out_of_range.take() {
            return Err(too_many(i + 1, "CPU number", n));
        }
        if ok {
            let n = r.out.events.len();
            if n >= 2 && r.out.events[n - 1].time < r.out.events[n - 2].time {
                r.out.reversed_lines += 1;
                r.out.first_reversed_line.get_or_insert(i + 1);
            }
        } else {
            r.out.bad_lines += 1;
            r.out.first_bad_line.get_or_insert(i + 1);
        }
    }
    let mut out = r.out;
    if out.events.is_empty() {
        let key = match out.first_bad_line {
            Some(n) => format!("line {n}"),
            None => "(whole file)".to_string(),
        };
        return Err(SchedlabError::spec(
            origin,
            key,
            "scheduler events as ftrace text, `trace-cmd report` or `perf script` lines \
             (e.g. `bash-12 [001] 1.000000: sched_switch: prev_comm=...`); none parsed",
        ));
    }
    out.nr_cpus = r.header_cpus.max(r.max_cpu.map_or(0, |c| c as usize + 1));
    if out.events.windows(2).any(|w| w[1].time < w[0].time) {
        // Per-CPU buffers can interleave slightly out of order; keep ties stable.
        out.events.sort_by_key(|e| e.time);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "ftrace_read_tests.rs"]
mod tests;
