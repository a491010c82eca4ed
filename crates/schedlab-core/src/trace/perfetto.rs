//! Writes the event stream as a native Perfetto trace (protobuf), streaming:
//! events are grouped per CPU into `FtraceEventBundle` packets of at most
//! [`BUNDLE_EVENTS`] events and written as they fill, so memory stays
//! bounded whatever the run's length or the machine's size.
//!
//! What goes where (the same conventions as the ftrace text writer,
//! `ftrace.rs`: pids are task id + 1000, the idle task is pid 0 `swapper/N`,
//! `prio` is `p->prio`, comms are cut to 15 bytes, each event on the CPU the
//! kernel would log it on):
//!
//! * a `ProcessTree` packet first: every task as a process of its own
//!   (`is_kthread` for per-CPU kernel threads) with its comm as a thread name;
//! * kernel tracepoints as ftrace events: `sched_switch`, `sched_waking`,
//!   `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`,
//!   `sched_process_exit`, `irq_handler_entry/exit`, `softirq_entry/exit`;
//!   `prev_state` as the kernel's bits (0 running/preempted, 1 sleeping,
//!   `EXIT_DEAD` 16 for an exit);
//! * schedlab's own decisions as instant track events on one track per CPU
//!   ("schedlab cpu N"): each placement (`place: <path>`, with the task, its
//!   previous CPU, the waker's CPU, the chosen CPU, CPUs scanned and the
//!   chosen CPU's capacity as debug annotations), each balance pass
//!   (`balance: <kind>`, depth and tasks pulled), each `avg_idle` sample and
//!   workload mark.

use std::io::Write;

use super::perfetto_proto as pb;
use crate::ids::{CpuId, Ns, TaskId};
use crate::trace::ftrace::{balance_kind_name, mark_kind_name, trace_pids, PID_BASE};
use crate::trace::{Event, PrevState, TimedEvent};

/// Events per `FtraceEventBundle` packet before it is written out.
pub const BUNDLE_EVENTS: usize = 4096;
/// Events buffered over all CPUs before every bundle is written out, so that
/// a 1024-CPU machine holds at most this many, not 1024 x `BUNDLE_EVENTS`.
pub const BUFFERED_EVENTS: usize = 1 << 15;

/// `trusted_packet_sequence_id` of every packet schedlab writes.
const SEQUENCE: u32 = 1;
/// Track uuids of the per-CPU decision tracks: this + cpu.
const TRACK_BASE: u64 = 0x5c4e_d1ab_0000_0000;
/// Longest comm the kernel keeps (`TASK_COMM_LEN - 1`).
const COMM_MAX: usize = 15;
/// `p->prio` of a nice-0 fair task, used when none was given.
const PRIO_NICE_0: i32 = 120;

fn kernel_comm(name: &str) -> String {
    let mut end = name.len().min(COMM_MAX);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// `prev_state` bits as `__trace_sched_switch_state` reports them.
fn prev_state_bits(s: PrevState) -> i64 {
    match s {
        PrevState::Runnable => 0,
        PrevState::Sleeping => 1,
        PrevState::Dead => 16,
    }
}

/// A streaming Perfetto writer over any [`Write`].
pub struct PerfettoWriter<W: Write> {
    out: W,
    comms: Vec<String>,
    prios: Vec<i32>,
    pids: Vec<u32>,
    curr: Vec<Option<TaskId>>,
    task_cpu: Vec<CpuId>,
    bundles: Vec<Vec<pb::FtraceEvent>>,
    first_track_event: bool,
    last_time: Ns,
    buffered: usize,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer for tasks `names` (with `p->prio` `prios`, and `kthreads`
    /// marking per-CPU kernel threads) on `nr_cpus` CPUs; writes the process
    /// tree and the decision tracks at once.
    pub fn new(
        mut out: W,
        names: &[String],
        prios: &[i32],
        kthreads: &[bool],
        nr_cpus: usize,
    ) -> std::io::Result<Self> {
        let comms: Vec<String> = names.iter().map(|n| kernel_comm(n)).collect();
        let mut kt = kthreads.to_vec();
        kt.resize(names.len(), false);
        let pids = trace_pids(&kt);
        let mut tree = pb::ProcessTree::default();
        for (i, comm) in comms.iter().enumerate() {
            let pid = pids[i] as i32;
            tree.processes.push(pb::Process {
                pid: Some(pid),
                ppid: Some(if kthreads.get(i).copied().unwrap_or(false) { 2 } else { 1 }),
                cmdline: vec![names[i].clone()],
                is_kthread: Some(kthreads.get(i).copied().unwrap_or(false)),
            });
            tree.threads.push(pb::Thread { tid: Some(pid), name: Some(comm.clone()), tgid: Some(pid) });
        }
        let packet = pb::TracePacket {
            timestamp: Some(0),
            trusted_packet_sequence_id: Some(SEQUENCE),
            process_tree: Some(tree),
            ..Default::default()
        };
        out.write_all(&pb::encode_packet(packet))?;
        for cpu in 0..nr_cpus {
            let packet = pb::TracePacket {
                timestamp: Some(0),
                trusted_packet_sequence_id: Some(SEQUENCE),
                track_descriptor: Some(pb::TrackDescriptor {
                    uuid: Some(TRACK_BASE + cpu as u64),
                    name: Some(format!("schedlab cpu {cpu}")),
                    description: Some("schedlab's placement and balancing decisions on this CPU".into()),
                }),
                ..Default::default()
            };
            out.write_all(&pb::encode_packet(packet))?;
        }
        Ok(Self {
            out,
            comms,
            prios: prios.to_vec(),
            pids,
            curr: vec![None; nr_cpus],
            task_cpu: vec![CpuId(0); names.len()],
            bundles: vec![Vec::new(); nr_cpus],
            first_track_event: true,
            last_time: 0,
            buffered: 0,
        })
    }

    fn pid(&self, t: TaskId) -> i32 {
        self.pids.get(t.idx()).copied().unwrap_or(t.0 + PID_BASE) as i32
    }

    fn comm(&self, t: TaskId) -> String {
        self.comms.get(t.idx()).cloned().unwrap_or_else(|| format!("task{}", t.0))
    }

    fn prio(&self, t: TaskId) -> i32 {
        self.prios.get(t.idx()).copied().unwrap_or(PRIO_NICE_0)
    }

    fn ensure(&mut self, cpu: CpuId, task: Option<TaskId>) {
        if cpu.idx() >= self.curr.len() {
            self.curr.resize(cpu.idx() + 1, None);
            self.bundles.resize(cpu.idx() + 1, Vec::new());
        }
        if let Some(t) = task {
            if t.idx() >= self.task_cpu.len() {
                self.task_cpu.resize(t.idx() + 1, CpuId(0));
            }
        }
    }

    fn wakeup_fields(&self, t: TaskId, target: CpuId) -> pb::SchedWakeup {
        pb::SchedWakeup {
            comm: Some(self.comm(t)),
            pid: Some(self.pid(t)),
            prio: Some(self.prio(t)),
            success: Some(1),
            target_cpu: Some(target.0 as i32),
        }
    }

    /// Queue an ftrace event on `cpu`'s bundle, writing the bundle when full.
    fn ftrace(
        &mut self,
        cpu: CpuId,
        time: Ns,
        running: Option<TaskId>,
        ev: pb::FtraceEventKind,
    ) -> std::io::Result<()> {
        let pid = running.map_or(0, |t| self.pid(t) as u32);
        let bundle = &mut self.bundles[cpu.idx()];
        bundle.push(pb::FtraceEvent { timestamp: Some(time), pid: Some(pid), event: Some(ev) });
        self.buffered += 1;
        if bundle.len() >= BUNDLE_EVENTS {
            self.flush_cpu(cpu.idx())?;
        }
        if self.buffered >= BUFFERED_EVENTS {
            for c in 0..self.bundles.len() {
                self.flush_cpu(c)?;
            }
        }
        Ok(())
    }

    fn flush_cpu(&mut self, cpu: usize) -> std::io::Result<()> {
        if self.bundles[cpu].is_empty() {
            return Ok(());
        }
        let event = std::mem::take(&mut self.bundles[cpu]);
        self.buffered -= event.len();
        let packet = pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            ftrace_events: Some(pb::FtraceEventBundle { cpu: Some(cpu as u32), event }),
            ..Default::default()
        };
        self.out.write_all(&pb::encode_packet(packet))
    }

    /// An instant event on `cpu`'s decision track.
    fn instant(&mut self, cpu: CpuId, time: Ns, name: String, args: Vec<pb::DebugAnnotation>) -> std::io::Result<()> {
        let flags = if std::mem::take(&mut self.first_track_event) { Some(1) } else { None };
        let packet = pb::TracePacket {
            timestamp: Some(time),
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: flags,
            track_event: Some(pb::TrackEvent {
                categories: vec!["schedlab".into()],
                name: Some(name),
                r#type: Some(pb::TRACK_EVENT_INSTANT),
                track_uuid: Some(TRACK_BASE + cpu.0 as u64),
                counter_value: None,
                debug_annotations: args,
            }),
            ..Default::default()
        };
        self.out.write_all(&pb::encode_packet(packet))
    }

    /// Write events (in time order, as the engine emits them).
    pub fn write_events(&mut self, events: &[TimedEvent]) -> std::io::Result<()> {
        for te in events {
            self.write_event(te)?;
        }
        Ok(())
    }

    fn write_event(&mut self, te: &TimedEvent) -> std::io::Result<()> {
        use pb::FtraceEventKind as K;
        let time = te.time;
        self.last_time = time;
        let int = |name: &str, v: i64| pb::DebugAnnotation {
            name: Some(name.into()),
            int_value: Some(v),
            string_value: None,
        };
        match te.ev {
            Event::Switch { cpu, prev, prev_state, next } => {
                self.ensure(cpu, prev);
                self.ensure(cpu, next);
                let side = |t: Option<TaskId>| match t {
                    Some(t) => (self.comm(t), self.pid(t), self.prio(t)),
                    None => (format!("swapper/{}", cpu.0), 0, PRIO_NICE_0),
                };
                let (pc, pp, ppr) = side(prev);
                let (nc, np, npr) = side(next);
                let state = if prev.is_some() { prev_state_bits(prev_state) } else { 0 };
                let ev = K::SchedSwitch(pb::SchedSwitch {
                    prev_comm: Some(pc),
                    prev_pid: Some(pp),
                    prev_prio: Some(ppr),
                    prev_state: Some(state),
                    next_comm: Some(nc),
                    next_pid: Some(np),
                    next_prio: Some(npr),
                });
                self.ftrace(cpu, time, prev, ev)?;
                self.curr[cpu.idx()] = next;
                if let Some(n) = next {
                    self.task_cpu[n.idx()] = cpu;
                }
            }
            Event::Waking { task, cpu } => {
                self.ensure(cpu, Some(task));
                let ev = K::SchedWaking(self.wakeup_fields(task, self.task_cpu[task.idx()]));
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
            }
            Event::Wakeup { task, cpu, new } => {
                self.ensure(cpu, Some(task));
                let fields = self.wakeup_fields(task, cpu);
                let ev = if new { K::SchedWakeupNew(fields) } else { K::SchedWakeup(fields) };
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
                self.task_cpu[task.idx()] = cpu;
            }
            Event::Migrate { task, orig, dest, .. } => {
                self.ensure(dest, Some(task));
                let ev = K::SchedMigrateTask(pb::SchedMigrateTask {
                    comm: Some(self.comm(task)),
                    pid: Some(self.pid(task)),
                    prio: Some(self.prio(task)),
                    orig_cpu: Some(orig.0 as i32),
                    dest_cpu: Some(dest.0 as i32),
                });
                self.ftrace(dest, time, self.curr[dest.idx()], ev)?;
                self.task_cpu[task.idx()] = dest;
            }
            Event::Exit { task } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                let ev = K::SchedProcessExit(pb::SchedProcessExit {
                    comm: Some(self.comm(task)),
                    pid: Some(self.pid(task)),
                    tgid: Some(self.pid(task)),
                    prio: Some(self.prio(task)),
                });
                self.ftrace(cpu, time, Some(task), ev)?;
            }
            Event::Irq { cpu, irq, entry } => {
                self.ensure(cpu, None);
                let ev = if entry {
                    let name = if irq == super::event::HOST_IRQ { "host".to_string() } else { format!("irq{irq}") };
                    K::IrqHandlerEntry(pb::IrqHandlerEntry { irq: Some(irq as i32), name: Some(name) })
                } else {
                    // IRQ_HANDLED
                    K::IrqHandlerExit(pb::IrqHandlerExit { irq: Some(irq as i32), ret: Some(1) })
                };
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
            }
            Event::Softirq { cpu, entry } => {
                // NET_RX_SOFTIRQ (vector 3), as the ftrace writer says.
                self.ensure(cpu, None);
                let v = pb::Softirq { vec: Some(3) };
                let ev = if entry { K::SoftirqEntry(v) } else { K::SoftirqExit(v) };
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
            }
            Event::CpuFrequency { cpu, khz } => {
                // As the kernel logs it: on the CPU, state = the new frequency in kHz.
                self.ensure(cpu, None);
                let ev = K::CpuFrequency(pb::CpuState { state: Some(khz), cpu_id: Some(cpu.0) });
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
            }
            Event::CpuIdle { cpu, state } => {
                self.ensure(cpu, None);
                let state = crate::trace::ftrace::cpu_idle_state(state);
                let ev = K::CpuIdle(pb::CpuState { state: Some(state), cpu_id: Some(cpu.0) });
                self.ftrace(cpu, time, self.curr[cpu.idx()], ev)?;
            }
            Event::Place { task, prev, waker_cpu, cpu, path, scanned, capacity } => {
                self.ensure(waker_cpu, Some(task));
                let args = vec![
                    int("pid", self.pid(task) as i64),
                    pb::DebugAnnotation {
                        name: Some("comm".into()),
                        int_value: None,
                        string_value: Some(self.comm(task)),
                    },
                    int("prev_cpu", prev.0 as i64),
                    int("waker_cpu", waker_cpu.0 as i64),
                    int("cpu", cpu.0 as i64),
                    int("scanned", scanned as i64),
                    int("capacity", capacity as i64),
                ];
                self.instant(waker_cpu, time, format!("place: {}", path.name()), args)?;
            }
            Event::Balance { cpu, depth, kind, pulled } => {
                self.ensure(cpu, None);
                let args = vec![int("depth", depth as i64), int("pulled", pulled as i64)];
                self.instant(cpu, time, format!("balance: {}", balance_kind_name(kind)), args)?;
            }
            Event::AvgIdle { cpu, avg_idle_ns, max_ns } => {
                self.ensure(cpu, None);
                let args = vec![int("avg_idle_ns", avg_idle_ns as i64), int("max_ns", max_ns as i64)];
                self.instant(cpu, time, "avg_idle".into(), args)?;
            }
            Event::SetScheduler { task, policy, prio } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                if let Some(p) = self.prios.get_mut(task.idx()) {
                    *p = prio;
                }
                let args = vec![int("pid", self.pid(task) as i64), int("prio", prio as i64)];
                let name = format!("setscheduler: {}", crate::workload::sched_keys::policy_word(policy));
                self.instant(cpu, time, name, args)?;
            }
            Event::Mark { task, kind, value } => {
                self.ensure(CpuId(0), Some(task));
                let cpu = self.task_cpu[task.idx()];
                self.ensure(cpu, None);
                let args = vec![int("pid", self.pid(task) as i64), int("value", value as i64)];
                self.instant(cpu, time, format!("mark: {}", mark_kind_name(kind)), args)?;
            }
        }
        Ok(())
    }

    /// Record that the run did not finish: an instant event on CPU 0's
    /// decision track, after every event written so far.
    pub fn mark_incomplete(&mut self, why: &str) -> std::io::Result<()> {
        let last = self.last_time;
        let note = pb::DebugAnnotation { name: Some("error".into()), int_value: None, string_value: Some(why.into()) };
        self.instant(CpuId(0), last, "schedlab: INCOMPLETE trace, the run did not finish".into(), vec![note])
    }

    /// Write what is still buffered and hand back the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        for cpu in 0..self.bundles.len() {
            self.flush_cpu(cpu)?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::PlacePath;
    use prost::Message;

    fn decode(bytes: &[u8]) -> pb::Trace {
        pb::Trace::decode(bytes).expect("a valid Trace")
    }

    fn ev(time: Ns, ev: Event) -> TimedEvent {
        TimedEvent { time, ev }
    }

    #[test]
    fn events_land_in_their_cpu_bundle_with_kernel_fields() {
        let names = vec!["a".to_string(), "a-very-long-task-name".to_string()];
        let mut w = PerfettoWriter::new(Vec::new(), &names, &[120, 49], &[false, false], 2).unwrap();
        let (a, b) = (TaskId(0), TaskId(1));
        w.write_events(&[
            ev(1_000, Event::Switch { cpu: CpuId(0), prev: None, prev_state: PrevState::Sleeping, next: Some(a) }),
            ev(2_000, Event::Waking { task: b, cpu: CpuId(0) }),
            ev(
                2_100,
                Event::Place {
                    task: b,
                    prev: CpuId(1),
                    waker_cpu: CpuId(0),
                    cpu: CpuId(1),
                    path: PlacePath::IdleCore,
                    scanned: 3,
                    capacity: 1024,
                },
            ),
            ev(3_000, Event::Wakeup { task: b, cpu: CpuId(1), new: false }),
            ev(4_000, Event::Switch { cpu: CpuId(0), prev: Some(a), prev_state: PrevState::Runnable, next: None }),
        ])
        .unwrap();
        let t = decode(&w.finish().unwrap());
        let tree = t.packet.iter().find_map(|p| p.process_tree.as_ref()).expect("process tree");
        assert_eq!(tree.threads[1].name.as_deref(), Some("a-very-long-tas"), "cut to 15 bytes");
        assert_eq!(tree.threads[1].tid, Some(1001));
        let bundles: Vec<&pb::FtraceEventBundle> = t.packet.iter().filter_map(|p| p.ftrace_events.as_ref()).collect();
        let cpu0: Vec<&pb::FtraceEvent> = bundles.iter().filter(|b| b.cpu == Some(0)).flat_map(|b| &b.event).collect();
        assert_eq!(cpu0.len(), 3, "switch, waking, switch on CPU 0");
        match &cpu0[2].event {
            Some(pb::FtraceEventKind::SchedSwitch(s)) => {
                assert_eq!((s.prev_pid, s.prev_state, s.next_pid), (Some(1000), Some(0), Some(0)));
                assert_eq!(s.next_comm.as_deref(), Some("swapper/0"));
            }
            other => panic!("expected a switch, got {other:?}"),
        }
        // The waking line names the wakee's CPU as its target and runs on the waker's.
        match &cpu0[1].event {
            Some(pb::FtraceEventKind::SchedWaking(s)) => assert_eq!((s.pid, s.prio), (Some(1001), Some(49))),
            other => panic!("expected waking, got {other:?}"),
        }
        let place = t.packet.iter().find_map(|p| p.track_event.as_ref()).expect("a placement");
        assert_eq!(place.name.as_deref(), Some("place: idle_core"));
        assert_eq!(place.track_uuid, Some(TRACK_BASE));
    }

    #[test]
    fn buffered_events_stay_bounded_on_many_cpus() {
        let nr_cpus = 1024;
        let names = vec!["t".to_string()];
        let mut w = PerfettoWriter::new(Vec::new(), &names, &[120], &[false], nr_cpus).unwrap();
        for i in 0..(3 * BUFFERED_EVENTS) {
            let cpu = CpuId((i % nr_cpus) as u32);
            w.write_events(&[ev(i as Ns, Event::Irq { cpu, irq: 0, entry: true })]).unwrap();
            assert!(w.buffered < BUFFERED_EVENTS, "{} buffered", w.buffered);
        }
        let t = decode(&w.finish().unwrap());
        let n: usize = t.packet.iter().filter_map(|p| p.ftrace_events.as_ref()).map(|b| b.event.len()).sum();
        assert_eq!(n, 3 * BUFFERED_EVENTS, "nothing lost");
    }
}
