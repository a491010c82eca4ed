//! hackbench (rt-tests `hackbench.c`, also `perf bench sched messaging`):
//! groups of senders spraying small messages at receivers over pipes or
//! unix stream sockets. Judged by completion time. See README.md.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::PrimaryMetric;
use super::{forked_task, Action, BarrierId, BarrierSpec, ChanId, ChanSpec, ProgCtx, Program, Workload};
use crate::error::Result;
use crate::ids::Ns;
use crate::sim::Rng;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str =
    "groups x (fds senders + fds receivers), one pipe or socketpair per receiver. Each sender writes \
`loops` rounds of one message to every receiver of its group; each receiver reads fds*loops messages. Writes wake \
the reader with WF_SYNC; a full buffer blocks the writer, which reads wake by the pipe's or socket's rule. All tasks start together through a ready barrier.";

/// What it was modelled on.
pub(crate) const SOURCE: &str =
    "rt-tests src/hackbench/hackbench.c (sender, receiver, group, ready); fs/pipe.c; net/unix/af_unix.c";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str =
    "groups of `fds` senders each writing `loops` messages to each of `fds` receivers (pipe or unix socket); completion time";

const NS_PER_US: Ns = 1_000;

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "groups",
        kind: Kind::Count { min: 1, max: 100_000 },
        default: "10",
        unit: "count",
        doc: "groups (-g); each has `fds` senders and `fds` receivers. Default 10 as in hackbench.c.",
    },
    ParamDef {
        name: "fds",
        kind: Kind::Count { min: 1, max: 10_000 },
        default: "20",
        unit: "count",
        doc: "senders and receivers per group (-f). Default 20 as in hackbench.c.",
    },
    ParamDef {
        name: "loops",
        kind: Kind::Count { min: 1, max: 100_000_000 },
        default: "100",
        unit: "count",
        doc: "messages each sender writes to each receiver (-l). Default 100 as in hackbench.c; the number \
              of simulated messages, hence run time, grows with groups*fds*fds*loops.",
    },
    ParamDef {
        name: "ipc",
        kind: Kind::Choice(&["socket", "pipe"]),
        default: "socket",
        unit: "socket|pipe",
        doc: "unix stream socketpair (default, as hackbench.c) or pipe (-p). Changes the buffer capacity and \
              the syscall costs; both wake the reader with WF_SYNC.",
    },
    ParamDef {
        name: "mode",
        kind: Kind::Choice(&["process", "thread"]),
        default: "process",
        unit: "process|thread",
        doc: "process (default, fork) or thread (-T, pthread_create). Modelled only through the default \
              footprint: processes carry their own page tables and libc state.",
    },
    ParamDef {
        name: "datasize",
        kind: Kind::Count { min: 1, max: 4096 },
        default: "100",
        unit: "bytes",
        doc: "message size (-s). Default 100 as in hackbench.c. At most one page: larger writes would be \
              split into several buffers, which is not modelled.",
    },
    ParamDef {
        name: "buf",
        kind: Kind::Count { min: 1, max: 1_000_000 },
        default: AUTO,
        unit: "messages",
        doc: "auto: the kernel's buffer. pipe = 16 pages (PIPE_DEF_BUFFERS) into which writes merge while \
              the last page has room (640 messages at 100 B); a read wakes one blocked writer, with WF_SYNC, \
              when it frees a page of a full pipe (v6.14+; on a read begun on a full pipe before). socket = \
              writes while the queued skbs' truesize (kmalloc-rounded data+shared info, plus the sk_buff: \
              768 B at 100 B) is below wmem_default 212992 B (278 messages at 100 B); blocked writers all wake, \
              with WF_SYNC, once it drains to a quarter (unix_writable). A number: a plain queue of that many \
              messages instead, each read waking one blocked writer without WF_SYNC.",
    },
    ParamDef {
        name: "write",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000_000 },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one write() syscall, excluding the wakeup the engine prices. auto: pipe = the \
              machine's cost.pipe_write_ns (1500ns by default), socket 3us (skb allocation, copy, queueing). \
              Estimates, not measurements; higher values make the run more CPU-bound.",
    },
    ParamDef {
        name: "read",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 0, max_ns: 1_000_000_000 },
        default: AUTO,
        unit: "us",
        doc: "CPU work of one read() syscall that returns a message. auto: pipe = the machine's \
              cost.pipe_read_ns (1us by default), socket 2us (skb \
              dequeue, copy, free). Estimates, as for write.",
    },
    ParamDef {
        name: "footprint",
        kind: Kind::Count { min: 0, max: 1 << 30 },
        default: AUTO,
        unit: "KiB",
        doc: "cache footprint of each task, refilled after a migration. auto: process 64 KiB (stack, \
              message buffer, socket/pipe state, own page tables), thread 32 KiB (page tables shared).",
    },
];

/// Pipe buffer: PIPE_DEF_BUFFERS pages (`alloc_pipe_info`); small writes
/// merge into the last page while they fit (`pipe_write`, engine/ipc.rs).
const PIPE_DEF_BUFFERS: u64 = 16;
/// `sysctl_wmem_default`: the socket send buffer a unix stream writer may fill.
const WMEM_DEFAULT: u64 = 212_992;
/// `sizeof(struct skb_shared_info)` and `sizeof(struct sk_buff)`, x86-64, rounded to cache lines.
const SKB_SHINFO_BYTES: u64 = 320;
const SKB_STRUCT_BYTES: u64 = 256;

/// `skb->truesize` of one `datasize`-byte message on a unix stream socket.
fn skb_truesize(datasize: u64) -> u64 {
    // skb head = kmalloc(SKB_DATA_ALIGN(size) + shared info), rounded by kmalloc to a power of two.
    (datasize.div_ceil(64) * 64 + SKB_SHINFO_BYTES).next_power_of_two() + SKB_STRUCT_BYTES
}

/// The channel behind one receiver: its kernel buffer (a pipe of
/// PIPE_DEF_BUFFERS pages, or a unix stream socket with `wmem_default`), or,
/// with `buf` set, a plain queue of `buf` messages.
fn channel(ipc: &str, datasize: u64, buf: Option<u64>) -> ChanSpec {
    match buf {
        Some(b) => ChanSpec::queue(b.min(u32::MAX as u64) as u32),
        None if ipc == "pipe" => ChanSpec::pipe(PIPE_DEF_BUFFERS as u32, datasize as u32),
        None => ChanSpec::unix_stream(WMEM_DEFAULT as u32, skb_truesize(datasize) as u32),
    }
}

/// Most tasks a hackbench spec may create (each is a simulated task).
const MAX_TASKS: u64 = 1_000_000;

/// Builds the workload from its parameters.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let groups = p.count("groups")?;
    let fds = p.count("fds")?;
    let loops = p.count("loops")?;
    let ipc = p.choice("ipc")?;
    let mode = p.choice("mode")?;
    let datasize = p.count("datasize")?;
    let buf = if p.is_auto("buf") { None } else { Some(p.count("buf")?) };
    let cost = &p.machine.cost;
    let (w_ns, r_ns) = if ipc == "pipe" { (cost.pipe_write_ns, cost.pipe_read_ns) } else { (3_000, 2_000) };
    let write_ns = p.duration_or("write", Some(w_ns))?;
    let read_ns = p.duration_or("read", Some(r_ns))?;
    let footprint = p.count_or("footprint", if mode == "process" { 64 } else { 32 })?;
    if groups * fds * 2 > MAX_TASKS {
        return Err(p.invalid("groups", &format!("groups*fds*2 tasks at most {MAX_TASKS}")));
    }
    let footprint_kib = u32::try_from(footprint).map_err(|_| p.invalid("footprint", "a smaller footprint"))?;
    let (groups, fds) = (groups as u32, fds as u32);
    let mut tasks = Vec::with_capacity((groups * fds * 2) as usize);
    let gate = BarrierId(0);
    for g in 0..groups {
        // hackbench.c creates a group's receivers first, then its senders.
        for r in 0..fds {
            let prog = Receiver {
                chan: ChanId(g * fds + r),
                remaining: fds as u64 * loops,
                read_ns,
                phase: RecvPhase::Gate,
                gate,
            };
            tasks.push(forked_task("hackbench", Program::HackbenchReceiver(prog), footprint_kib));
        }
        for s in 0..fds {
            let prog = Sender {
                first_chan: g * fds,
                fds,
                loops,
                write_ns,
                msg: (g * fds + s) as u64,
                i: 0,
                j: 0,
                phase: SendPhase::Gate,
                gate,
            };
            tasks.push(forked_task("hackbench", Program::HackbenchSender(prog), footprint_kib));
        }
    }
    let parties = tasks.len() as u32;
    Ok(Workload {
        chans: vec![channel(ipc, datasize, buf); (groups * fds) as usize],
        barriers: vec![BarrierSpec { parties }],
        ..Workload::of(tasks, PrimaryMetric::CompletionTime)
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendPhase {
    Gate,
    Write,
    Send,
}

/// A sender: waits for the start signal, then writes `loops` rounds of one
/// message to each receiver of its group in turn, then exits.
#[derive(Clone, Debug)]
pub struct Sender {
    first_chan: u32,
    fds: u32,
    loops: u64,
    write_ns: Ns,
    msg: u64,
    i: u64,
    j: u32,
    phase: SendPhase,
    gate: BarrierId,
}

impl Sender {
    /// Shifts its channel and barrier ids (composition; see `compose.rs`).
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        self.first_chan += off.chan;
        self.gate = off.barrier(self.gate);
    }

    pub(crate) fn step(&mut self, _ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        loop {
            match self.phase {
                SendPhase::Gate => {
                    // ready(): every child reports ready and polls the start fd;
                    // main writes one byte when all are ready, waking them all.
                    self.phase = SendPhase::Write;
                    return Action::Barrier { id: self.gate, spin_ns: 0 };
                }
                SendPhase::Write => {
                    if self.i == self.loops {
                        return Action::Exit;
                    }
                    self.phase = SendPhase::Send;
                    if self.write_ns > 0 {
                        return Action::Compute(self.write_ns);
                    }
                }
                SendPhase::Send => {
                    let chan = ChanId(self.first_chan + self.j);
                    self.j += 1;
                    if self.j == self.fds {
                        self.j = 0;
                        self.i += 1;
                    }
                    self.phase = SendPhase::Write;
                    // pipe_write and sock_def_readable both wake with
                    // wake_up_interruptible_sync_poll, although the sender goes on writing.
                    return Action::Send { chan, msg: self.msg, sync: true };
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvPhase {
    Gate,
    Recv,
    Read,
}

/// A receiver: waits for the start signal, then reads `fds * loops`
/// messages from its channel, then exits.
#[derive(Clone, Debug)]
pub struct Receiver {
    chan: ChanId,
    remaining: u64,
    read_ns: Ns,
    phase: RecvPhase,
    gate: BarrierId,
}

impl Receiver {
    /// Shifts its channel and barrier ids (composition; see `compose.rs`).
    pub(crate) fn offset_ids(&mut self, off: &super::compose::IdOffset) {
        self.chan = off.chan(self.chan);
        self.gate = off.barrier(self.gate);
    }

    pub(crate) fn step(&mut self, _ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        loop {
            match self.phase {
                RecvPhase::Gate => {
                    self.phase = RecvPhase::Recv;
                    return Action::Barrier { id: self.gate, spin_ns: 0 };
                }
                RecvPhase::Recv => {
                    if self.remaining == 0 {
                        return Action::Exit;
                    }
                    self.phase = RecvPhase::Read;
                    return Action::Recv { chan: self.chan };
                }
                RecvPhase::Read => {
                    // The copy out of the buffer happens after the data arrived.
                    self.remaining -= 1;
                    self.phase = RecvPhase::Recv;
                    if self.read_ns > 0 {
                        return Action::Compute(self.read_ns);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::spec::build_workload;
    use crate::workload::testdrv::{run, test_machine};
    use crate::workload::ChanKind;

    fn hb(spec: &str) -> Workload {
        build_workload(spec, "spec", "test", &test_machine(8)).unwrap()
    }

    #[test]
    fn buffer_capacities() {
        assert_eq!(channel("pipe", 100, None).kind, ChanKind::Pipe { max_usage: 16, msg_bytes: 100 });
        assert_eq!(channel("pipe", 100, None).capacity(), 640);
        // 768 B skbs: 277 fit below 212992 B, and the 278th write still goes.
        assert_eq!(channel("socket", 100, None).kind, ChanKind::UnixStream { sndbuf: 212_992, truesize: 768 });
        assert_eq!(channel("socket", 100, None).capacity(), 278);
        assert_eq!(channel("pipe", 4096, None).capacity(), 16);
        assert_eq!(channel("socket", 100, Some(8)).kind, ChanKind::Queue { capacity: 8 });
    }

    #[test]
    fn defaults_are_hackbench_c() {
        let w = hb("hackbench");
        assert_eq!(
            w.name,
            "hackbench:groups=10,fds=20,loops=100,ipc=socket,mode=process,datasize=100,buf=auto,write=3us,read=2us,footprint=64"
        );
        assert_eq!(w.tasks.len(), 400);
        assert_eq!(w.chans.len(), 200);
        assert_eq!(w.primary, PrimaryMetric::CompletionTime);
        assert_eq!(hb("hackbench:mode=thread,ipc=pipe").tasks[0].footprint_kib, 32);
    }

    #[test]
    fn every_message_sent_is_received() {
        for spec in ["hackbench:groups=3,fds=5,loops=7,ipc=pipe", "hackbench:groups=2,fds=4,loops=50,buf=2"] {
            let w = hb(spec);
            let out = run(&w, 1, Ns::MAX);
            assert_eq!(out.exited, w.tasks.len(), "{spec}: every task exits");
            assert_eq!(out.blocked, 0);
            let (g, f, l): (u64, u64, u64) = if spec.contains("groups=3") { (3, 5, 7) } else { (2, 4, 50) };
            assert_eq!(out.sent.iter().sum::<u64>(), g * f * f * l);
            assert_eq!(out.sent, out.received);
            // Each receiver got `loops` messages from each sender of its group.
            for (t, inbox) in out.inbox.iter().enumerate() {
                if !matches!(w.tasks[t].program, Program::HackbenchReceiver(_)) {
                    continue;
                }
                assert_eq!(inbox.len() as u64, f * l);
                let group = (t as u64) / (2 * f);
                for s in 0..f {
                    assert_eq!(inbox.iter().filter(|&&m| m == group * f + s).count() as u64, l);
                }
            }
        }
    }
}
