//! Trace text as columns, one table per event name: what
//! `schedlab.trace.read` hands to pandas as Arrow record batches, in the
//! layout LISA's `df_event` uses.
//!
//! Unlike [`super::read_ftrace`], which understands the scheduler events it
//! models, this keeps every event of any kind and every `key=value` field as
//! written, so that analysis code sees a real trace and a simulated one the
//! same way. Each table has the line's time in seconds, CPU, pid and comm
//! (of the task that was running), the line's number (to order events of
//! equal time), then the event's fields in the order they first appear. A
//! field whose every value is an integer is an integer column; any other is
//! text. A field an event line lacks is missing (null) there. Lines that are
//! not events (headers, comments, lost-event notes) are counted as skipped.

use std::collections::HashMap;

use super::ftrace_read::split_head;

/// The columns every table has, in this order; a field of the same name is
/// left out (the line's own column wins).
pub const FIXED_COLUMNS: [&str; 5] = ["Time", "__cpu", "__pid", "__comm", "__line"];

/// The values of one field of one event's table.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameColumn {
    /// Every present value was a decimal integer that fits in `i64`.
    Int(Vec<Option<i64>>),
    /// Otherwise, the values as written.
    Text(Vec<Option<String>>),
}

/// The lines of one event name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventFrame {
    /// Event name without a subsystem prefix (`sched_switch`).
    pub name: String,
    /// Time of each line, seconds.
    pub time_s: Vec<f64>,
    /// CPU column.
    pub cpu: Vec<i64>,
    /// Pid of the running task.
    pub pid: Vec<i64>,
    /// Its comm.
    pub comm: Vec<String>,
    /// Line number in the text (0-based), to order equal times.
    pub line: Vec<u64>,
    /// The event's fields, in order of first appearance.
    pub fields: Vec<(String, FrameColumn)>,
}

/// The tables of one trace text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceFrames {
    /// One table per event name, in order of first appearance.
    pub events: Vec<EventFrame>,
    /// Lines that are not events.
    pub skipped: u64,
}

/// `comm-pid`, `comm-pid (tgid)` or perf's `comm pid`, as (comm, pid).
fn comm_pid(task: &str) -> Option<(&str, i64)> {
    let mut t = task;
    if let Some(open) = t.rfind(" (").filter(|_| t.ends_with(')')) {
        t = t[..open].trim_end();
    }
    let digits_from = t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits_from == t.len() || digits_from == 0 {
        return None;
    }
    let pid = t[digits_from..].parse::<i64>().ok()?;
    let head = &t[..digits_from];
    let comm = head.strip_suffix('-').or_else(|| {
        let trimmed = head.trim_end();
        (trimmed.len() < head.len()).then_some(trimmed)
    })?;
    let comm = comm.trim();
    (!comm.is_empty()).then_some((comm, pid))
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The `key=value` pairs of `payload`: a key is a run of word characters
/// followed by `=`, its value the non-blank run after it.
fn fields<'a>(payload: &'a str, mut each: impl FnMut(&'a str, &'a str)) {
    let mut rest = payload;
    while let Some(start) = rest.find(is_word) {
        let word = &rest[start..];
        let end = word.find(|c: char| !is_word(c)).unwrap_or(word.len());
        let after = &word[end..];
        if let Some(value) = after.strip_prefix('=') {
            let vlen = value.find(char::is_whitespace).unwrap_or(value.len());
            each(&word[..end], &value[..vlen]);
            rest = &value[vlen..];
        } else {
            rest = after;
        }
    }
}

/// A decimal integer (an optional `-`, then digits) that fits in `i64`.
fn int_value(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// One event's table while it is read: field values kept as slices of the
/// text until the end decides each column's type.
#[derive(Default)]
struct Building<'a> {
    frame: EventFrame,
    names: HashMap<&'a str, usize>,
    values: Vec<Vec<Option<&'a str>>>,
}

impl<'a> Building<'a> {
    fn push_line(&mut self, time_s: f64, cpu: i64, (comm, pid): (&str, i64), line: u64, payload: &'a str) {
        let row = self.frame.time_s.len();
        self.frame.time_s.push(time_s);
        self.frame.cpu.push(cpu);
        self.frame.pid.push(pid);
        self.frame.comm.push(comm.to_string());
        self.frame.line.push(line);
        let (names, values) = (&mut self.names, &mut self.values);
        fields(payload, |key, value| {
            if FIXED_COLUMNS.contains(&key) {
                return;
            }
            let col = *names.entry(key).or_insert_with(|| {
                values.push(Vec::new());
                values.len() - 1
            });
            let column = &mut values[col];
            if column.len() <= row {
                // The first value of a key in a line wins, as a later
                // repeat (`comm=` of a payload's own text) is not the field.
                column.resize(row, None);
                column.push(Some(value));
            }
        });
    }

    fn finish(mut self) -> EventFrame {
        let rows = self.frame.time_s.len();
        let mut order: Vec<(&str, usize)> = self.names.into_iter().collect();
        order.sort_by_key(|&(_, col)| col);
        for (name, col) in order {
            let mut vals = std::mem::take(&mut self.values[col]);
            vals.resize(rows, None);
            let ints: Option<Vec<Option<i64>>> =
                vals.iter().map(|v| v.map_or(Some(None), |s| int_value(s).map(Some))).collect();
            let column = match ints {
                Some(ints) => FrameColumn::Int(ints),
                None => FrameColumn::Text(vals.into_iter().map(|v| v.map(str::to_string)).collect()),
            };
            self.frame.fields.push((name.to_string(), column));
        }
        self.frame
    }
}

/// The tables of ftrace-format `text` (ftrace, trace-cmd report, perf script).
pub fn frames_of(text: &str) -> TraceFrames {
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut building: Vec<Building<'_>> = Vec::new();
    let mut skipped = 0u64;
    for (line_no, line) in text.lines().enumerate() {
        let parsed = split_head(line).and_then(|h| {
            let task = comm_pid(h.task)?;
            let cpu = i64::try_from(h.cpu).ok()?;
            Some((h, task, cpu))
        });
        let Some((h, task, cpu)) = parsed else {
            skipped += 1;
            continue;
        };
        let at = *by_name.entry(h.event).or_insert_with(|| {
            building.push(Building {
                frame: EventFrame { name: h.event.to_string(), ..Default::default() },
                ..Default::default()
            });
            building.len() - 1
        });
        // ns / 1e9 rounds once, to the double nearest the decimal written.
        let time_s = h.time as f64 / 1e9;
        building[at].push_line(time_s, cpu, task, line_no as u64, h.payload);
    }
    TraceFrames { events: building.into_iter().map(Building::finish).collect(), skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_columns_of_every_tool() {
        assert_eq!(comm_pid("<idle>-0"), Some(("<idle>", 0)));
        assert_eq!(comm_pid("kworker/u8:1-77"), Some(("kworker/u8:1", 77)));
        assert_eq!(comm_pid("my-app -x-123"), Some(("my-app -x", 123)));
        assert_eq!(comm_pid("bash-4101 (   4101)"), Some(("bash", 4101)));
        assert_eq!(comm_pid("perf thread  4242"), Some(("perf thread", 4242)));
        assert_eq!(comm_pid("nopid"), None);
        assert_eq!(comm_pid("-12"), None);
        assert_eq!(comm_pid("99999999999999999999-1x"), None);
    }

    #[test]
    fn fields_as_key_value_runs() {
        let mut got = Vec::new();
        fields("prev_comm=a b prev_pid=3 ==> next_comm=x=y [action=NET_RX] n=", |k, v| {
            got.push((k.to_string(), v.to_string()))
        });
        let want = [("prev_comm", "a"), ("prev_pid", "3"), ("next_comm", "x=y"), ("action", "NET_RX]"), ("n", "")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }

    #[test]
    fn tables_per_event_with_typed_columns() {
        let text = "# tracer: nop\n\
            \x20         <idle>-0     [001] d..2.   10.000001: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=w next_pid=7 next_prio=120\n\
            \x20              w-7     [001] d..3.   10.000002: sched_waking: comm=r pid=8 prio=120 target_cpu=002\n\
            \x20              w-7     [001] d..2.   10.5: sched_switch: prev_comm=w prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=-1\n\
            \x20              w-7     [001] ....    10.6: tracing_mark_write: hello x=1\n\
            \x20              w-7     [001] ....    10.7: tracing_mark_write: x=two y=3\n\
            garbage\n";
        let f = frames_of(text);
        assert_eq!(f.skipped, 2);
        let names: Vec<&str> = f.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["sched_switch", "sched_waking", "tracing_mark_write"]);
        let sw = &f.events[0];
        assert_eq!(sw.time_s, [10.000001, 10.5]);
        assert_eq!(sw.pid, [0, 7]);
        assert_eq!(sw.comm, ["<idle>", "w"]);
        assert_eq!(sw.line, [1, 3]);
        let keys: Vec<&str> = sw.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"]);
        assert_eq!(sw.fields[6].1, FrameColumn::Int(vec![Some(120), Some(-1)]));
        assert_eq!(sw.fields[3].1, FrameColumn::Text(vec![Some("R".into()), Some("S".into())]));
        // `target_cpu=002` is the integer 2.
        assert_eq!(f.events[1].fields[3].1, FrameColumn::Int(vec![Some(2)]));
        let mark = &f.events[2];
        assert_eq!(mark.fields[0].1, FrameColumn::Text(vec![Some("1".into()), Some("two".into())]));
        assert_eq!(mark.fields[1].1, FrameColumn::Int(vec![None, Some(3)]));
    }

    #[test]
    fn a_simulated_trace_reads_back_whole() {
        use crate::ids::{CpuId, TaskId};
        use crate::trace::{write_ftrace, Event, PrevState, TimedEvent};
        let ev = |time, ev| TimedEvent { time, ev };
        let (a, cpu) = (TaskId(0), CpuId(1));
        let events = [
            ev(1_000, Event::Wakeup { task: a, cpu, new: true }),
            ev(2_000, Event::Switch { cpu, prev: None, prev_state: PrevState::Runnable, next: Some(a) }),
            ev(3_000, Event::Switch { cpu, prev: Some(a), prev_state: PrevState::Dead, next: None }),
            ev(3_000, Event::Exit { task: a }),
        ];
        let text = write_ftrace(vec!["t0".into()], 2, &events);
        let f = frames_of(&text);
        let lines = text.lines().filter(|l| !l.starts_with('#')).count();
        let total: usize = f.events.iter().map(|e| e.time_s.len()).sum();
        assert_eq!((total, f.skipped as usize), (lines, text.lines().count() - lines), "{text}");
        let sw = f.events.iter().find(|e| e.name == "sched_switch").unwrap();
        assert_eq!(sw.cpu, [1, 1]);
        assert_eq!(sw.time_s, [2e-6, 3e-6]);
    }
}
