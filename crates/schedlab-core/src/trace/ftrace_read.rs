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
use crate::trace::lost_switch::{head_comm, head_pid, heads_current, CurrentTracker};
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
        let Some(pid) = head_pid(h.task) else { return };
        let cpu = self.cpu(h.cpu);
        let Some(lost) = self.current.observe(cpu, pid) else { return };
        let prev_comm = self.by_pid.get(&lost.prev).map(|t| self.out.names[t.idx()].clone()).unwrap_or_default();
        let prev = self.task(lost.prev, &prev_comm);
        let next = self.task(lost.next, head_comm(h.task));
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
mod tests {
    use super::*;
    use crate::trace::ftrace::{write_ftrace, PID_BASE};

    fn ev(time: Ns, ev: Event) -> TimedEvent {
        TimedEvent { time, ev }
    }

    /// A run in the engine's order: waking, place, migrate, wakeup.
    fn sim_events() -> Vec<TimedEvent> {
        let (a, b, c) = (TaskId(0), TaskId(1), TaskId(2));
        let sw = |cpu, prev, prev_state, next| Event::Switch { cpu: CpuId(cpu), prev, prev_state, next };
        let mig = |task, o, d, reason| Event::Migrate { task, orig: CpuId(o), dest: CpuId(d), reason };
        use PrevState::*;
        vec![
            ev(0, mig(a, 0, 1, MigrateReason::Fork)),
            ev(0, Event::Wakeup { task: a, cpu: CpuId(1), new: true }),
            ev(1_000, sw(1, None, Runnable, Some(a))),
            ev(2_000, Event::Wakeup { task: b, cpu: CpuId(1), new: true }),
            ev(3_000, sw(1, Some(a), Runnable, Some(b))),
            ev(4_000, mig(a, 1, 0, MigrateReason::Balance)),
            ev(4_000, Event::Balance { cpu: CpuId(0), depth: 1, kind: BalanceKind::NewIdle, pulled: 1 }),
            ev(4_000, Event::AvgIdle { cpu: CpuId(1), avg_idle_ns: 123_456, max_ns: 1_000_000 }),
            ev(5_000, sw(0, None, Runnable, Some(a))),
            ev(6_000, Event::Mark { task: a, kind: MarkKind::RequestDone, value: 17 }),
            ev(7_000, sw(1, Some(b), Sleeping, None)),
            ev(7_000, Event::CpuIdle { cpu: CpuId(1), state: Some(2) }),
            ev(8_000, Event::Waking { task: b, cpu: CpuId(0) }),
            ev(
                8_000,
                Event::Place {
                    task: b,
                    prev: CpuId(1),
                    waker_cpu: CpuId(0),
                    cpu: CpuId(2),
                    path: PlacePath::IdleCpu,
                    scanned: 3,
                    capacity: 1024,
                },
            ),
            ev(9_000, mig(b, 1, 2, MigrateReason::Wakeup)),
            ev(9_000, Event::Wakeup { task: b, cpu: CpuId(2), new: false }),
            ev(10_000, sw(2, None, Runnable, Some(b))),
            ev(11_000, Event::Wakeup { task: c, cpu: CpuId(2), new: true }),
            ev(12_000, sw(2, Some(b), Dead, Some(c))),
            ev(12_000, Event::Exit { task: b }),
        ]
    }

    #[test]
    fn round_trip_through_the_writer() {
        let names = vec!["alpha".to_string(), "beta worker".to_string(), "gamma".to_string()];
        let evs = sim_events();
        let text = write_ftrace(names.clone(), 3, &evs);
        let got = read_ftrace(&text, "rt.trace").unwrap();
        assert_eq!((got.bad_lines, got.other_lines, got.nr_cpus), (0, 0, 3));
        // The writer heads every line it reads back with the CPU's current
        // task, consistently with its switches: nothing to recover.
        assert_eq!(got.inferred_switches, 0);
        // Map read TaskIds back through their pids.
        let back = |t: TaskId| TaskId(got.pids[t.idx()] - PID_BASE);
        for (i, n) in got.names.iter().enumerate() {
            assert_eq!(n, &names[back(TaskId(i as u32)).idx()]);
        }
        let mapped: Vec<TimedEvent> = got
            .events
            .iter()
            .map(|e| {
                let ev = match e.ev {
                    Event::Switch { cpu, prev, prev_state, next } => {
                        Event::Switch { cpu, prev: prev.map(back), prev_state, next: next.map(back) }
                    }
                    Event::Waking { task, cpu } => Event::Waking { task: back(task), cpu },
                    Event::Wakeup { task, cpu, new } => Event::Wakeup { task: back(task), cpu, new },
                    Event::Migrate { task, orig, dest, reason } => {
                        Event::Migrate { task: back(task), orig, dest, reason }
                    }
                    Event::Place { task, prev, waker_cpu, cpu, path, scanned, capacity } => {
                        Event::Place { task: back(task), prev, waker_cpu, cpu, path, scanned, capacity }
                    }
                    Event::Mark { task, kind, value } => Event::Mark { task: back(task), kind, value },
                    Event::Exit { task } => Event::Exit { task: back(task) },
                    other => other,
                };
                TimedEvent { time: e.time, ev }
            })
            .collect();
        assert_eq!(mapped, evs);
    }

    #[test]
    fn trace_cmd_report_with_plugin_and_kernel_forms() {
        let text = "\
version = 6
cpus=2
     kworker/0:1-50    [000]   100.000100: sched_waking:         comm=app pid=2001 prio=120 target_cpu=000
     kworker/0:1-50    [000]   100.000105: sched_wakeup:         app:2001 [120] CPU:000
     kworker/0:1-50    [000]   100.000200: sched_switch:         kworker/0:1:50 [120] S ==> app:2001 [120]
             app-2001  [000]   100.000900: sched_switch:         app:2001 [120] R+ ==> my worker:2002 [120]
       my worker-2002  [000] d..2. 100.001000: sched_migrate_task: comm=app pid=2001 prio=120 orig_cpu=0 dest_cpu=1
          <idle>-0     [001]   100.001100: sched_switch:         prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=2001 next_prio=120
             app-2001  [001]   100.002000: sched_process_exit:   comm=app pid=2001 prio=120
          <idle>-0     [001]   100.002000: irq_handler_entry:    irq=24 name=eth0
          <idle>-0     [001]   100.002010: hrtimer_expire_entry: hrtimer=000000001 function=tick_sched_timer now=100002010
";
        let t = read_ftrace(text, "report.txt").unwrap();
        assert_eq!(t.names, vec!["app", "kworker/0:1", "my worker"]);
        assert_eq!(t.pids, vec![2001, 50, 2002]);
        assert_eq!((t.nr_cpus, t.bad_lines, t.other_lines), (2, 0, 1));
        let (app, kw, worker) = (TaskId(0), TaskId(1), TaskId(2));
        let s = 100_000_000_000u64;
        assert_eq!(t.events[0], ev(s + 100_000, Event::Waking { task: app, cpu: CpuId(0) }));
        assert_eq!(t.events[1].ev, Event::Wakeup { task: app, cpu: CpuId(0), new: false });
        assert_eq!(
            t.events[2].ev,
            Event::Switch { cpu: CpuId(0), prev: Some(kw), prev_state: PrevState::Sleeping, next: Some(app) }
        );
        assert_eq!(
            t.events[3].ev,
            Event::Switch { cpu: CpuId(0), prev: Some(app), prev_state: PrevState::Runnable, next: Some(worker) }
        );
        // A preempted (queued) task moved: load balancing.
        assert_eq!(
            t.events[4].ev,
            Event::Migrate { task: app, orig: CpuId(0), dest: CpuId(1), reason: MigrateReason::Balance }
        );
        assert_eq!(
            t.events[5].ev,
            Event::Switch { cpu: CpuId(1), prev: None, prev_state: PrevState::Runnable, next: Some(app) }
        );
        assert_eq!(t.events[6], ev(s + 2_000_000, Event::Exit { task: app }));
        // The trace has no switch away from the exited task, but the next
        // line of CPU 1 runs in the idle task: that switch is recovered.
        assert_eq!(t.inferred_switches, 1);
        assert_eq!(
            t.events[7],
            ev(
                s + 2_000_000,
                Event::Switch { cpu: CpuId(1), prev: Some(app), prev_state: PrevState::Sleeping, next: None }
            )
        );
        // Interrupt handlers are read (IRQ time); other events are counted and skipped.
        assert_eq!(t.events[8], ev(s + 2_000_000, Event::Irq { cpu: CpuId(1), irq: 24, entry: true }));
    }

    /// A ping-pong pair as this project's development VM records it: CPU 1's
    /// idle task writes no line in process context, so its switches away
    /// from idle are missing (CPU 0's are there).
    const LOST_IDLE_EXITS: &str = "\
# tracer: nop
#P:2
     schedlab-100   [001] d..2. 10.000000: sched_switch: prev_comm=schedlab prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
        wl-a-201    [000] d..3. 10.100000: sched_waking: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-a-201    [000] d..2. 10.100010: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0  [001] dNh2. 10.100030: sched_wakeup: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-b-202    [001] d..3. 10.100040: sched_waking: comm=wl-a pid=201 prio=120 target_cpu=000
        wl-b-202    [001] d..2. 10.100050: sched_switch: prev_comm=wl-b prev_pid=202 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0  [000] dNh2. 10.100070: sched_wakeup: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] d..2. 10.100080: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wl-a next_pid=201 next_prio=120
        wl-a-201    [000] d..3. 10.100090: sched_waking: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-a-201    [000] d..2. 10.100100: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0  [001] dNh2. 10.100120: sched_wakeup: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-b-202    [001] d..3. 10.100130: sched_waking: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] dNh2. 10.100150: sched_wakeup: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] d..2. 10.100160: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wl-a next_pid=201 next_prio=120
        wl-b-202    [001] ..... 10.200000: sched_process_exit: comm=wl-b pid=202 prio=120
        wl-b-202    [001] d..2. 10.200010: sched_switch: prev_comm=wl-b prev_pid=202 prev_prio=120 prev_state=X ==> next_comm=schedlab next_pid=100 next_prio=120
        wl-a-201    [000] ..... 10.300000: sched_process_exit: comm=wl-a pid=201 prio=120
        wl-a-201    [000] d..2. 10.300010: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120
     schedlab-100   [001] d..2. 10.900000: sched_switch: prev_comm=schedlab prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn switches_away_from_idle_that_the_trace_lost_are_recovered() {
        let t = read_ftrace(LOST_IDLE_EXITS, "vm.trace").unwrap();
        // CPU 1 left idle for wl-b twice without a line: recovered at the
        // first line wl-b heads there (its sched_waking).
        assert_eq!(t.inferred_switches, 2);
        let b = TaskId(t.pids.iter().position(|&p| p == 202).unwrap() as u32);
        let recovered: Vec<Ns> = t
            .events
            .iter()
            .filter(|e| matches!(e.ev, Event::Switch { cpu: CpuId(1), prev: None, next: Some(n), .. } if n == b))
            .map(|e| e.time)
            .collect();
        assert_eq!(recovered, vec![10_100_040_000, 10_100_130_000]);
    }

    #[test]
    fn a_selected_program_is_measured_from_its_first_event_to_its_last_exit() {
        let t = read_ftrace(LOST_IDLE_EXITS, "vm.trace").unwrap();
        let metrics = |selection: Vec<bool>| {
            let mut ctx = crate::metrics::MetricsContext::flat(2);
            ctx.selection = selection;
            let m = crate::metrics::collect(ctx, &t.events, None);
            let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
            (get("completion_time_s"), get("context_switches"))
        };
        let wl: Vec<bool> = t.names.iter().map(|n| n.starts_with("wl-")).collect();
        let (completion, switches) = metrics(wl);
        // From wl-a's first line (10.1 s) to the last wl exit (10.3 s), not
        // the recorder's lines around them; every switch of the pair counted,
        // the two recovered ones too (5 on CPU 0, 4 on CPU 1).
        assert!((completion - 0.2).abs() < 1e-9, "{completion}");
        assert_eq!(switches, 9.0);
        // Without a selection: the whole trace.
        let (whole, _) = metrics(Vec::new());
        assert!((whole - 0.9).abs() < 1e-9, "{whole}");
    }

    #[test]
    fn perf_script_sample_feeds_the_collector() {
        let text = "\
         swapper     0 [001]  5000.000010: sched:sched_waking: comm=db pid=300 prio=120 target_cpu=001
         swapper     0 [001]  5000.000012: sched:sched_migrate_task: comm=db pid=300 prio=120 orig_cpu=1 dest_cpu=3
         swapper     0 [003]  5000.000015: sched:sched_wakeup: comm=db pid=300 prio=120 target_cpu=003
         swapper     0 [003]  5000.000020: sched:sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=db next_pid=300 next_prio=120
              db   300 [003]  5000.000500: sched:sched_switch: prev_comm=db prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
";
        let t = read_ftrace(text, "perf.txt").unwrap();
        assert_eq!((t.nr_cpus, t.names.len(), t.events.len()), (4, 1, 5));
        assert_eq!(
            t.events[1].ev,
            Event::Migrate { task: TaskId(0), orig: CpuId(1), dest: CpuId(3), reason: MigrateReason::Wakeup }
        );
        let mut col = crate::metrics::Collector::new(crate::metrics::MetricsContext::flat(t.nr_cpus));
        for e in &t.events {
            col.on_event(e);
        }
        let m = col.finish(t.events.last().unwrap().time);
        let get = |n: &str| m.iter().find(|v| v.name == n).unwrap().value;
        assert_eq!(get("wakeup_latency_p50_us"), 10.0);
        assert_eq!(get("runqueue_delay_p99_us"), 5.0);
        assert_eq!(get("migrations"), 1.0);
    }

    #[test]
    fn bad_lines_counted_and_reported() {
        let err = read_ftrace("hello\nworld\n", "junk.txt").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("junk.txt") && msg.contains("line 1"), "{msg}");
        assert!(read_ftrace("", "empty.txt").is_err());
        let text = "# tracer: nop\n#P:8 ignored\ngarbage\n bash-7 (    7) [002] d..2. 1.5: sched_process_exit: comm=bash pid=7 prio=120\n";
        let t = read_ftrace(text, "mixed.txt").unwrap();
        assert_eq!((t.bad_lines, t.first_bad_line), (1, Some(3)));
        assert_eq!(t.events, vec![ev(1_500_000_000, Event::Exit { task: TaskId(0) })]);
        assert_eq!(t.nr_cpus, 8);
    }

    #[test]
    fn impossible_cpu_is_an_error_naming_the_line() {
        let ok = " bash-7 [001] 1.000000: sched_process_exit: comm=bash pid=7 prio=120\n";
        let bad = format!("{ok} bash-7 [4000000000] 1.000001: sched_process_exit: comm=bash pid=7 prio=120\n");
        let msg = read_ftrace(&bad, "big.txt").unwrap_err().to_string();
        assert!(msg.starts_with("big.txt: line 2: ") && msg.contains("4000000000"), "{msg}");
        // More digits than u64 holds: still a CPU column, still an error.
        let huge = " bash-7 [99999999999999999999999] 1.0: sched_process_exit: comm=bash pid=7 prio=120\n";
        assert!(read_ftrace(huge, "h.txt").unwrap_err().to_string().contains("line 1"));
        // CPU numbers inside the payload are bounded too.
        let mig =
            format!("{ok} bash-7 [001] 1.1: sched_migrate_task: comm=bash pid=7 prio=120 orig_cpu=1 dest_cpu=9000\n");
        let msg = read_ftrace(&mig, "m.txt").unwrap_err().to_string();
        assert!(msg.contains("m.txt: line 2") && msg.contains("9000"), "{msg}");
        let msg = read_ftrace(&format!("#P:3000000000\n{ok}"), "p.txt").unwrap_err().to_string();
        assert!(msg.contains("p.txt: line 1") && msg.contains("CPU count"), "{msg}");
        assert!(read_ftrace(&format!("cpus=99999999999999999999999\n{ok}"), "c.txt").is_err());
        // The bound itself is the largest accepted count; the last CPU is MAX_CPUS - 1.
        let edge =
            format!("#P:{MAX_CPUS}\n bash-7 [{}] 1.0: sched_process_exit: comm=bash pid=7 prio=120\n", MAX_CPUS - 1);
        assert_eq!(read_ftrace(&edge, "e.txt").unwrap().nr_cpus, MAX_CPUS as usize);
    }

    #[test]
    fn reversed_timestamps_are_counted_and_sorted() {
        let text = "\
 a-7 [000] 2.0: sched_process_exit: comm=a pid=7 prio=120
 b-8 [001] 1.0: sched_process_exit: comm=b pid=8 prio=120
 c-9 [001] 3.0: sched_process_exit: comm=c pid=9 prio=120
 d-10 [001] 2.5: sched_process_exit: comm=d pid=10 prio=120
";
        let t = read_ftrace(text, "r.txt").unwrap();
        assert_eq!((t.reversed_lines, t.first_reversed_line), (2, Some(2)));
        assert!(t.events.windows(2).all(|w| w[0].time <= w[1].time));
    }
}
