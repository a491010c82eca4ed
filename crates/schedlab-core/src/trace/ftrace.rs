//! Writes the event stream as ftrace text, the format of
//! `/sys/kernel/tracing/trace` with the `nop` tracer, so Perfetto UI, trace-cmd
//! style parsers and [`crate::trace::ftrace_read::read_ftrace`] open it.
//!
//! One line per event:
//! `<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>`, where the
//! line's task is the one running on the line's CPU, as in the kernel. Field
//! formats follow the `TP_printk` strings of include/trace/events/sched.h:
//!
//! * `sched_switch: prev_comm= prev_pid= prev_prio= prev_state= ==> next_comm= next_pid= next_prio=`
//!   (`prev_state` is `R+` for a preempted task as kernels since 4.14 print it, `S` for
//!   a blocked one, `X` for a dead one);
//! * `sched_waking`, `sched_wakeup`, `sched_wakeup_new: comm= pid= prio= target_cpu=%03d`;
//! * `sched_migrate_task: comm= pid= prio= orig_cpu= dest_cpu=`;
//! * `sched_process_exit: comm= pid= prio=`.
//!
//! schedlab's own events have no kernel tracepoint; they use the same
//! `key=value` style under a `schedlab_` prefix:
//!
//! * `schedlab_place: comm= pid= prev_cpu= waker_cpu= cpu= path=idle_core scanned=5 capacity=1024`;
//! * `schedlab_balance: cpu= depth= kind=newidle|periodic|nohz_idle|active pulled=`;
//! * `schedlab_avg_idle: cpu= avg_idle_ns= max_ns=`;
//! * `schedlab_mark: comm= pid= kind=request_start|request_done|work_done value=`.
//!
//! Conventions: the pid of task `t` is `t + PID_BASE` (1000, so no simulated
//! task collides with the idle task 0 or with low kernel-thread pids); the idle
//! task is `<idle>-0` in the line prefix and `swapper/N` in `sched_switch`
//! fields, as the kernel prints it; `prio` is the task's `p->prio` (0..=98 for
//! RT tasks, 120 + nice for the others; 120 when not given); comms are
//! cut to 15 bytes (`TASK_COMM_LEN - 1`). Timestamps are `secs.usecs`, rounded
//! to the nearest microsecond as the kernel's `ns2usecs` does.
//!
//! Which CPU a line is on: `sched_switch`, `sched_waking` (the waker's CPU)
//! `schedlab_balance` and `schedlab_avg_idle` on their own CPU; `sched_wakeup*` on the target CPU
//! (the remote-wakeup path, where the target CPU activates the task);
//! `sched_migrate_task` on the destination; `schedlab_place` on the waker's
//! CPU; `sched_process_exit` and `schedlab_mark` on the task's CPU.

use std::fmt::{self, Write};

use crate::ids::{CpuId, Ns, TaskId};
use crate::trace::{BalanceKind, Event, PrevState, TimedEvent};
use crate::workload::MarkKind;

/// pid of task 0 in written traces; task `t` gets `t + PID_BASE`.
pub const PID_BASE: u32 = 1000;

/// pid of the first kernel thread in written traces: per-CPU kernel threads
/// (`ksoftirqd/N`, bound kworkers, `sugov:N`) get 10, 11, ... in task order,
/// below the workload's pids, as the kernel's boot-time threads have low pids.
pub const KTHREAD_PID_BASE: u32 = 10;

/// The pid written for each task: kernel threads from [`KTHREAD_PID_BASE`],
/// the others `task id + PID_BASE`.
pub fn trace_pids(kthreads: &[bool]) -> Vec<u32> {
    let mut next_k = KTHREAD_PID_BASE;
    kthreads
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            if k {
                next_k += 1;
                next_k - 1
            } else {
                i as u32 + PID_BASE
            }
        })
        .collect()
}

/// Priority printed for every task: `MAX_RT_PRIO + 20`, nice 0.
const PRIO_NICE_0: u32 = 120;

/// Longest comm the kernel keeps (`TASK_COMM_LEN - 1`).
const COMM_MAX: usize = 15;

/// Irq/preempt flags column. schedlab has no irq or preempt-count state, so
/// every line says what a `sched_switch` line says: irqs off, preempt depth 2.
const FLAGS: &str = "d..2.";

/// `cpu_idle`'s `state`: the state's index, or `PWR_EVENT_EXIT` (`(u32)-1`,
/// `include/trace/events/power.h`) when the CPU leaves idle.
pub fn cpu_idle_state(state: Option<u8>) -> u32 {
    state.map_or(u32::MAX, u32::from)
}

/// `sched_switch` state letter of a previous task.
pub fn prev_state_str(s: PrevState) -> &'static str {
    match s {
        PrevState::Runnable => "R+",
        PrevState::Sleeping => "S",
        PrevState::Dead => "X",
    }
}

/// Name of a balance kind in `schedlab_balance` lines.
pub fn balance_kind_name(k: BalanceKind) -> &'static str {
    match k {
        BalanceKind::NewIdle => "newidle",
        BalanceKind::Periodic => "periodic",
        BalanceKind::NohzIdle => "nohz_idle",
        BalanceKind::Active => "active",
    }
}

/// Name of a mark kind in `schedlab_mark` lines.
pub fn mark_kind_name(k: MarkKind) -> &'static str {
    match k {
        MarkKind::RequestStart => "request_start",
        MarkKind::RequestDone => "request_done",
        MarkKind::WorkDone => "work_done",
        MarkKind::WakeDone => "wake_done",
    }
}

/// Cut a name as the kernel cuts `comm` (on a char boundary).
fn kernel_comm(name: &str) -> String {
    let mut end = name.len().min(COMM_MAX);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Streaming ftrace writer. Keeps which task runs on each CPU and where each
/// task last was, to fill the line prefix; no allocation per event.
#[derive(Clone, Debug)]
pub struct FtraceWriter {
    comms: Vec<String>,
    /// `p->prio` per task (120 when not given: nice 0).
    prios: Vec<i32>,
    /// pid per task (`task id + PID_BASE` when not given).
    pids: Vec<u32>,
    curr: Vec<Option<TaskId>>,
    task_cpu: Vec<CpuId>,
    nr_cpus: usize,
}

impl FtraceWriter {
    /// A writer for tasks named `names` (indexed by `TaskId`; a task beyond
    /// the list is named `task<N>`) on `nr_cpus` CPUs.
    pub fn new(names: Vec<String>, nr_cpus: usize) -> Self {
        let comms: Vec<String> = names.iter().map(|n| kernel_comm(n)).collect();
        let n = comms.len();
        Self {
            comms,
            prios: Vec::new(),
            pids: Vec::new(),
            curr: vec![None; nr_cpus],
            task_cpu: vec![CpuId(0); n],
            nr_cpus,
        }
    }

    /// Write `prios[t]` as task `t`'s `prio` (0..=98 for RT tasks, 100..=139
    /// for the others) instead of nice 0's 120.
    pub fn with_prios(mut self, prios: Vec<i32>) -> Self {
        self.prios = prios;
        self
    }

    /// The `prio` written for `task`.
    #[inline]
    fn prio(&self, task: TaskId) -> i32 {
        self.prios.get(task.idx()).copied().unwrap_or(PRIO_NICE_0 as i32)
    }

    /// Write kernel threads (`kthreads[t]`) with low pids ([`trace_pids`]).
    pub fn with_kthreads(mut self, kthreads: &[bool]) -> Self {
        self.pids = trace_pids(kthreads);
        self
    }

    /// pid written for `task`.
    #[inline]
    pub fn pid_of(&self, task: TaskId) -> u32 {
        self.pids.get(task.idx()).copied().unwrap_or(task.0 + PID_BASE)
    }

    fn ensure(&mut self, cpu: CpuId, task: Option<TaskId>) {
        if cpu.idx() >= self.curr.len() {
            self.curr.resize(cpu.idx() + 1, None);
        }
        if let Some(t) = task {
            if t.idx() >= self.task_cpu.len() {
                self.task_cpu.resize(t.idx() + 1, CpuId(0));
            }
            if t.idx() >= self.comms.len() {
                // Rare (an unnamed task): allocate its name once.
                let start = self.comms.len();
                self.comms.extend((start..=t.idx()).map(|i| format!("task{i}")));
            }
        }
    }

    /// The file header: tracer, CPU count (`#P:`), and the column legend.
    /// `nr_entries` fills the entries line when known.
    pub fn write_header<W: Write>(&self, out: &mut W, nr_entries: Option<u64>) -> fmt::Result {
        writeln!(out, "# tracer: nop")?;
        writeln!(out, "#")?;
        let n = nr_entries.unwrap_or(0);
        writeln!(out, "# entries-in-buffer/entries-written: {n}/{n}   #P:{}", self.nr_cpus)?;
        writeln!(
            out,
            "# schedlab simulated trace: pid = task id + {PID_BASE}; kernel threads from {KTHREAD_PID_BASE}"
        )?;
        writeln!(out, "#")?;
        writeln!(out, "#                                _-----=> irqs-off/BH-disabled")?;
        writeln!(out, "#                               / _----=> need-resched")?;
        writeln!(out, "#                              | / _---=> hardirq/softirq")?;
        writeln!(out, "#                              || / _--=> preempt-depth")?;
        writeln!(out, "#                              ||| / _-=> migrate-disable")?;
        writeln!(out, "#                              |||| /     delay")?;
        writeln!(out, "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION")?;
        writeln!(out, "#              | |         |   |||||     |         |")
    }

    fn prefix<W: Write>(&self, out: &mut W, task: Option<TaskId>, cpu: CpuId, time: Ns) -> fmt::Result {
        // ns2usecs: round to the nearest microsecond.
        let us = time / 1000 + u64::from(time % 1000 >= 500);
        let (secs, usecs) = (us / 1_000_000, us % 1_000_000);
        match task {
            Some(t) => write!(out, "{:>16}-{:<7}", self.comms[t.idx()], self.pid_of(t))?,
            None => write!(out, "{:>16}-{:<7}", "<idle>", 0)?,
        }
        write!(out, " [{:03}] {FLAGS} {secs:>5}.{usecs:06}: ", cpu.0)
    }

    /// `comm=.. pid=..` of a task.
    fn comm_pid<W: Write>(&self, out: &mut W, key: &str, t: TaskId) -> fmt::Result {
        write!(out, "{key}comm={} {key}pid={}", self.comms[t.idx()], self.pid_of(t))
    }

    fn switch_side<W: Write>(&self, out: &mut W, key: &str, t: Option<TaskId>, cpu: CpuId) -> fmt::Result {
        let prio = match t {
            Some(t) => {
                self.comm_pid(out, key, t)?;
                self.prio(t)
            }
            None => {
                write!(out, "{key}comm=swapper/{} {key}pid=0", cpu.0)?;
                PRIO_NICE_0 as i32
            }
        };
        write!(out, " {key}prio={prio}")
    }

    /// Write one event as one line.
    pub fn write_event<W: Write>(&mut self, out: &mut W, te: &TimedEvent) -> fmt::Result {
        let time = te.time;
        match te.ev {
            Event::Switch { cpu, prev, prev_state, next } => {
                self.ensure(cpu, prev);
                self.ensure(cpu, next);
                self.prefix(out, prev, cpu, time)?;
                out.write_str("sched_switch: ")?;
                self.switch_side(out, "prev_", prev, cpu)?;
                let state = if prev.is_some() { prev_state_str(prev_state) } else { "R" };
                write!(out, " prev_state={state} ==> ")?;
                self.switch_side(out, "next_", next, cpu)?;
                self.curr[cpu.idx()] = next;
                if let Some(n) = next {
                    self.task_cpu[n.idx()] = cpu;
                }
            }
            Event::Waking { task, cpu } => {
                self.ensure(cpu, Some(task));
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                out.write_str("sched_waking: ")?;
                self.comm_pid(out, "", task)?;
                write!(out, " prio={} target_cpu={:03}", self.prio(task), self.task_cpu[task.idx()].0)?;
            }
            Event::Wakeup { task, cpu, new } => {
                self.ensure(cpu, Some(task));
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                out.write_str(if new { "sched_wakeup_new: " } else { "sched_wakeup: " })?;
                self.comm_pid(out, "", task)?;
                write!(out, " prio={} target_cpu={:03}", self.prio(task), cpu.0)?;
                self.task_cpu[task.idx()] = cpu;
            }
            Event::Migrate { task, orig, dest, .. } => {
                self.ensure(dest, Some(task));
                self.prefix(out, self.curr[dest.idx()], dest, time)?;
                out.write_str("sched_migrate_task: ")?;
                self.comm_pid(out, "", task)?;
                write!(out, " prio={} orig_cpu={} dest_cpu={}", self.prio(task), orig.0, dest.0)?;
                self.task_cpu[task.idx()] = dest;
            }
            Event::Place { task, prev, waker_cpu, cpu, path, scanned, capacity } => {
                self.ensure(waker_cpu, Some(task));
                self.prefix(out, self.curr[waker_cpu.idx()], waker_cpu, time)?;
                out.write_str("schedlab_place: ")?;
                self.comm_pid(out, "", task)?;
                write!(
                    out,
                    " prev_cpu={} waker_cpu={} cpu={} path={} scanned={scanned} capacity={capacity}",
                    prev.0,
                    waker_cpu.0,
                    cpu.0,
                    path.name()
                )?;
            }
            Event::Balance { cpu, depth, kind, pulled } => {
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                write!(
                    out,
                    "schedlab_balance: cpu={} depth={depth} kind={} pulled={pulled}",
                    cpu.0,
                    balance_kind_name(kind)
                )?;
            }
            Event::AvgIdle { cpu, avg_idle_ns, max_ns } => {
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                write!(out, "schedlab_avg_idle: cpu={} avg_idle_ns={avg_idle_ns} max_ns={max_ns}", cpu.0)?;
            }
            Event::SetScheduler { task, policy, prio } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                if let Some(p) = self.prios.get_mut(task.idx()) {
                    *p = prio;
                }
                self.prefix(out, Some(task), cpu, time)?;
                out.write_str("schedlab_setscheduler: ")?;
                self.comm_pid(out, "", task)?;
                write!(out, " policy={} prio={prio}", crate::workload::sched_keys::policy_word(policy))?;
            }
            Event::Mark { task, kind, value } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                self.prefix(out, Some(task), cpu, time)?;
                out.write_str("schedlab_mark: ")?;
                self.comm_pid(out, "", task)?;
                write!(out, " kind={} value={value}", mark_kind_name(kind))?;
            }
            Event::Irq { cpu, irq, entry } => {
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                if entry {
                    if irq == super::event::HOST_IRQ {
                        write!(out, "irq_handler_entry: irq={irq} name=host")?;
                    } else {
                        write!(out, "irq_handler_entry: irq={irq} name=irq{irq}")?;
                    }
                } else {
                    write!(out, "irq_handler_exit: irq={irq} ret=handled")?;
                }
            }
            Event::Softirq { cpu, entry } => {
                // schedlab's interrupt sources raise the network receive
                // softirq (NET_RX_SOFTIRQ, vector 3).
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                let what = if entry { "softirq_entry" } else { "softirq_exit" };
                write!(out, "{what}: vec=3 [action=NET_RX]")?;
            }
            Event::CpuFrequency { cpu, khz } => {
                // Written by the CPU that switched; schedlab has every CPU of
                // the policy write its own line.
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                write!(out, "cpu_frequency: state={khz} cpu_id={}", cpu.0)?;
            }
            Event::CpuIdle { cpu, state } => {
                self.ensure(cpu, None);
                self.prefix(out, self.curr[cpu.idx()], cpu, time)?;
                write!(out, "cpu_idle: state={} cpu_id={}", cpu_idle_state(state), cpu.0)?;
            }
            Event::Exit { task } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                self.prefix(out, Some(task), cpu, time)?;
                out.write_str("sched_process_exit: ")?;
                self.comm_pid(out, "", task)?;
                write!(out, " prio={}", self.prio(task))?;
            }
        }
        out.write_char('\n')
    }
}

/// Adapter to write into any [`std::io::Write`] (a file, a buffered stdout).
/// `fmt::Write` has no error payload, so the first I/O error is kept here.
pub struct IoWriter<W: std::io::Write> {
    /// The underlying writer.
    pub inner: W,
    /// The first I/O error, if any.
    pub error: Option<std::io::Error>,
}

impl<W: std::io::Write> IoWriter<W> {
    /// Wrap `inner`.
    pub fn new(inner: W) -> Self {
        Self { inner, error: None }
    }
}

impl<W: std::io::Write> Write for IoWriter<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.inner.write_all(s.as_bytes()).map_err(|e| {
            self.error.get_or_insert(e);
            fmt::Error
        })
    }
}

/// A whole trace as one string: header, then one line per event.
pub fn write_ftrace(names: Vec<String>, nr_cpus: usize, events: &[TimedEvent]) -> String {
    write_ftrace_tasks(names, Vec::new(), &[], nr_cpus, events)
}

/// [`write_ftrace`] with each task's `prio`.
pub fn write_ftrace_tasks(
    names: Vec<String>,
    prios: Vec<i32>,
    kthreads: &[bool],
    nr_cpus: usize,
    events: &[TimedEvent],
) -> String {
    let mut w = FtraceWriter::new(names, nr_cpus).with_prios(prios).with_kthreads(kthreads);
    let mut s = String::with_capacity(events.len() * 128 + 1024);
    // Writing into a String cannot fail.
    let _ = w.write_header(&mut s, Some(events.len() as u64));
    for e in events {
        let _ = w.write_event(&mut s, e);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::PlacePath;

    fn one(w: &mut FtraceWriter, time: Ns, ev: Event) -> String {
        let mut s = String::new();
        w.write_event(&mut s, &TimedEvent { time, ev }).unwrap();
        s
    }

    #[test]
    fn rt_tasks_show_their_kernel_prio() {
        let mut w = FtraceWriter::new(vec!["rt".into(), "fair".into()], 2).with_prios(vec![49, 125]);
        let l = one(
            &mut w,
            0,
            Event::Switch {
                cpu: CpuId(0),
                prev: Some(TaskId(1)),
                prev_state: PrevState::Runnable,
                next: Some(TaskId(0)),
            },
        );
        assert!(l.contains("prev_prio=125"), "{l}");
        assert!(l.contains("next_prio=49"), "{l}");
    }

    #[test]
    fn kernel_line_formats() {
        let mut w = FtraceWriter::new(vec!["a-very-long-task-name".into(), "b".into()], 4);
        let (a, b) = (TaskId(0), TaskId(1));
        let l = one(
            &mut w,
            1_234_567_499,
            Event::Switch { cpu: CpuId(3), prev: None, prev_state: PrevState::Sleeping, next: Some(a) },
        );
        assert_eq!(
            l,
            "          <idle>-0       [003] d..2.     1.234567: sched_switch: prev_comm=swapper/3 \
             prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a-very-long-tas next_pid=1000 \
             next_prio=120\n"
        );
        let l = one(&mut w, 2_000_000_500, Event::Waking { task: b, cpu: CpuId(3) });
        assert_eq!(
            l,
            " a-very-long-tas-1000    [003] d..2.     2.000001: sched_waking: comm=b pid=1001 \
             prio=120 target_cpu=000\n"
        );
        let l = one(&mut w, 3_000_000_000, Event::Wakeup { task: b, cpu: CpuId(2), new: true });
        assert!(l.ends_with("[002] d..2.     3.000000: sched_wakeup_new: comm=b pid=1001 prio=120 target_cpu=002\n"));
        let l = one(
            &mut w,
            4_000_000_000,
            Event::Switch { cpu: CpuId(3), prev: Some(a), prev_state: PrevState::Runnable, next: Some(b) },
        );
        assert!(l.contains("prev_pid=1000 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=1001 next_prio=120"));
        let l = one(
            &mut w,
            5_000_000_000,
            Event::Migrate { task: a, orig: CpuId(3), dest: CpuId(1), reason: crate::trace::MigrateReason::Balance },
        );
        assert!(l.ends_with("sched_migrate_task: comm=a-very-long-tas pid=1000 prio=120 orig_cpu=3 dest_cpu=1\n"));
        let l = one(
            &mut w,
            6_000_000_000,
            Event::Place {
                task: a,
                prev: CpuId(1),
                waker_cpu: CpuId(3),
                cpu: CpuId(2),
                path: PlacePath::IdleCore,
                scanned: 5,
                capacity: 1024,
            },
        );
        assert!(l.starts_with("               b-1001    [003]"), "{l}");
        assert!(l.ends_with(
            "schedlab_place: comm=a-very-long-tas pid=1000 prev_cpu=1 waker_cpu=3 cpu=2 path=idle_core scanned=5 capacity=1024\n"
        ));
        let l = one(&mut w, 7_000_000_000, Event::Exit { task: b });
        assert!(l.starts_with("               b-1001    [003]"), "{l}");
        assert!(l.ends_with("sched_process_exit: comm=b pid=1001 prio=120\n"));
    }

    #[test]
    fn header_and_io_adapter() {
        let mut out = IoWriter::new(Vec::new());
        let w = FtraceWriter::new(vec![], 8);
        w.write_header(&mut out, None).unwrap();
        let text = String::from_utf8(out.inner).unwrap();
        assert!(text.starts_with("# tracer: nop\n"));
        assert!(text.contains("#P:8"));
        let s = write_ftrace(vec![], 2, &[TimedEvent { time: 0, ev: Event::Exit { task: TaskId(3) } }]);
        assert!(s.contains("task3-1003"));
    }
}
