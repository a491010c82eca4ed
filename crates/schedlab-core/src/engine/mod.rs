//! The engine: the clock, the event queue, CPUs and tasks, and the glue that
//! calls the sched class hooks at the points the kernel does.
//!
//! ```text
//!   Ev::TaskStart ─► wake_up_new_task ─► select_task_rq(WF_FORK) ─► enqueue
//!   Ev::RunDone   ─► the task's action finished ─► step its program
//!                      ├─ Compute/Sleep/Send/Recv/... (exec.rs)
//!                      └─ blocks ─► dequeue ─► schedule() ─► pick or newidle balance
//!   Ev::Timer     ─► try_to_wake_up ─► select_task_rq ─► (IPI) ─► enqueue ─► preempt?
//!   Ev::Tick      ─► update_curr, slice expiry, PELT, periodic / NOHZ balance
//! ```
//!
//! Ordering guarantees: events at the same time run in the order they were
//! scheduled (`EventQueue`); within one handler, side effects happen in
//! program order; so a run is a pure function of (machine, workload, policy,
//! seed).

pub mod build;
pub mod check;
pub mod core;
pub mod cost;
pub mod exec;
pub mod host;
pub mod idle;
pub mod ipc;
pub mod irq;
pub mod rq;
pub mod rqs;
pub mod setsched;
pub mod task;
pub mod tasks;
pub mod tick;
pub mod timed_work;
pub mod timers;
pub mod uclamp;

use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::features::Features;
use crate::ids::{CpuId, Ns, TaskId};
use crate::metrics::Collector;
pub use crate::policy::ClassKind;
use crate::sim::{EventQueue, Rng};
use crate::topology::{Domains, Machine};
use crate::trace::{Event, TimedEvent};
use ipc::{Barrier, Chan, Cond, Sem};

/// Engine events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A task is created (fork) or first woken.
    TaskStart(TaskId),
    /// Re-evaluate the running task of `cpu`: its piece of work is done, or
    /// the CPU has paid a delay (idle exit, a charged cost) and can go on.
    RunDone {
        /// CPU.
        cpu: CpuId,
        /// `Rq::run_gen` when scheduled.
        gen: u64,
    },
    /// The scheduler tick of `cpu`.
    Tick {
        /// CPU.
        cpu: CpuId,
        /// `Rq::tick_gen` when scheduled.
        gen: u64,
    },
    /// The high-resolution slice timer of `cpu` fired (`hrtick`).
    HrTick(CpuId),
    /// A sleeping task's timer fired.
    Timer {
        /// Task.
        task: TaskId,
        /// `Task::timer_gen` when armed.
        gen: u64,
    },
    /// A queued remote wakeup reaches its CPU (the IPI was handled).
    TtwuArrive {
        /// Task.
        task: TaskId,
        /// Target CPU.
        cpu: CpuId,
        /// The wakeup moved it to `cpu` (`p->sched_remote_wakeup`: WF_MIGRATED).
        migrated: bool,
    },
    /// A reschedule IPI reaches `cpu`.
    Resched(CpuId),
    /// The RT bandwidth period timer (`sched_rt_period_timer`).
    RtPeriodTimer,
    /// An RT push IPI (RT_PUSH_IPI chain) reaches a CPU.
    RtPushIpi(CpuId),
    /// An interrupt of IRQ stream `stream` (`Sim::irq_streams`).
    Irq {
        /// Stream index.
        stream: u32,
    },
    /// An interrupt of stream `stream` that waited for a running handler.
    IrqWaited {
        /// Stream index.
        stream: u32,
    },
    /// The hard handler of an interrupt returns.
    IrqExit {
        /// CPU.
        cpu: CpuId,
        /// Interrupt number.
        irq: u16,
        /// Handler time just spent, ns.
        hardirq_ns: Ns,
        /// Softirq work it raised, ns at full speed.
        softirq_ns: Ns,
    },
    /// The inline softirq run at interrupt exit ends.
    SoftirqExit {
        /// CPU.
        cpu: CpuId,
        /// Softirq time just spent, ns.
        softirq_ns: Ns,
    },
    /// The irq_work of `sugov_deferred_update` runs: wake the policy's
    /// `sugov:N` thread.
    SugovIrqWork {
        /// Frequency domain.
        domain: u32,
        /// The CPU that queued it.
        cpu: CpuId,
    },
    /// A frequency request of `ondemand` or `intel_pstate` takes effect,
    /// the driver's transition latency after it was made.
    CpufreqTransition {
        /// Frequency domain.
        domain: u32,
    },
    /// The irq_work of ondemand's `dbs_update_util_handler` runs on `cpu`:
    /// its work item wakes the CPU's kworker (`dbs_irq_work`).
    DbsIrqWork {
        /// CPU.
        cpu: CpuId,
    },
    /// A vCPU has run a host slice (`engine/host.rs`).
    HostSlice {
        /// The vCPU.
        cpu: CpuId,
        /// `Host::slice_gen` when armed.
        gen: u64,
    },
    /// One of the host's other threads takes a host CPU.
    HostOther,
    /// A run of the host's other threads ends.
    HostOtherEnd,
    /// The workload's duration has elapsed.
    Stop,
}

/// Number of event-queue keys for `nr_cpus` CPUs and `nr_tasks` tasks: each
/// CPU's `RunDone`, `Tick` and `HrTick`, each task's `Timer`, and each
/// vCPU's `HostSlice` (`host.rs`) replace their own pending event
/// (`sim::queue`) instead of leaving it stale.
pub(crate) fn ev_keys(nr_cpus: usize, nr_tasks: usize) -> u32 {
    (4 * nr_cpus + nr_tasks) as u32
}

/// The queue key of task `p`'s `Timer` on a machine of `nr_cpus` CPUs.
#[inline]
pub(crate) fn key_timer(nr_cpus: usize, p: TaskId) -> u32 {
    (3 * nr_cpus) as u32 + p.0
}

/// The event queue's FIFO lanes (`sim::lane`): events that are pushed in
/// the order they are due skip the heap. Each lane takes an event only if
/// it keeps the lane sorted; the others go to the heap, so a lane is a hint
/// about cost, never about order.
/// Ticks: every CPU's tick is armed at the next tick boundary (ticks are
/// aligned), so they come in time order.
pub(crate) const LANE_TICK: usize = 0;
/// IPIs (a remote wakeup's `TtwuArrive`, a remote `Resched`): each lands
/// the machine's fixed `ipi_ns` after it is sent.
pub(crate) const LANE_IPI: usize = 1;
/// Events due now (a local `Resched`).
pub(crate) const LANE_NOW: usize = 2;

/// Counters the engine keeps about itself.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    /// Events popped from the queue (stale ones included).
    pub events: u64,
    /// Events handled (stale ones excluded).
    pub handled: u64,
}

/// Receives the events of a run in order, in batches (see `Sim::drain_trace`).
pub(crate) type TraceSink = Box<dyn FnMut(&[TimedEvent]) -> std::io::Result<()>>;

/// Kept events that trigger a drain to the trace sink: large enough that
/// writing is batched, small enough that a trace never fills memory.
pub(crate) const TRACE_FLUSH_EVENTS: usize = 1 << 16;

/// What the hot path reads of a CPU, in one record: its SMT siblings other
/// than itself and its core type's SMT speed factor
/// (`CoreType::smt_speed_pct`), which `cpu_speed` reads when it finds a
/// sibling busy, with the record in hand instead of two lookups through the
/// machine's CPU and core-type tables; and the CPU's core, LLC and core-type
/// ids, which every switch reads for the cache-pressure bookkeeping
/// (`leave_cpu`, `arrive_on_cpu`, `refill_work_ns`) and the idle path for
/// its idle states.
#[derive(Clone, Debug)]
pub(crate) struct CpuRecord {
    /// The SMT siblings.
    pub(crate) siblings: Vec<CpuId>,
    /// The speed of a thread whose sibling runs, percent.
    pub(crate) speed_pct: u32,
    /// Its core's id (`Machine::cpus[cpu].core`), for the cache pressure
    /// a switch reads and adds to (`core_pressure`): with the record in
    /// hand, not a lookup in the machine's CPU table.
    pub(crate) core: u32,
    /// Its LLC's id, likewise (`llc_pressure`).
    pub(crate) llc: u32,
    /// Its core type (`Machine::cpus[cpu].core_type`), whose idle states
    /// the idle path reads at every entry and exit (`cpuidle_idle_call`,
    /// `cpuidle_exit_state`): one lookup in the core types, not two.
    pub(crate) core_type: u16,
}

/// The whole simulated system.
///
/// Private fields are the engine's own (its submodules see them). The
/// `pub(crate)` ones are what the kernel's classes share with core code, each
/// doc saying which shared structure it stands for and who reads it; a
/// class's own global state is one field (`fair`, `rt`, `peer`) that the
/// engine holds and never reads. The run's outputs (`collector`, `trace`,
/// `trace_sink`, `stats`, `alive`, `check_invariants`) are crate-visible for
/// `api` and tests; they stand for no kernel state. Users go through `api`
/// (or the methods below).
pub struct Sim {
    /// The machine: topology data (`cpu_smt_mask`, `arch_scale_cpu_capacity`,
    /// the energy model, costs), read by every class.
    pub(crate) machine: Machine,
    /// Its sched domains (`struct sched_domain`, `sd_llc`,
    /// `sd_asym_cpucapacity`): topology the fair and RT classes walk.
    pub(crate) domains: Domains,
    /// Switched-on features (`sched_feat`), tested by every class.
    pub(crate) features: Features,
    /// The class that runs SCHED_OTHER/BATCH/IDLE tasks
    /// (`class::SchedClass::normal`): the class table dispatches on it.
    pub(crate) normal_class: crate::class::SchedClass,
    /// Tasks whose class is not `normal_class` (RT ones, set at build and
    /// by `sched_setscheduler`). While 0, `task_class` answers with
    /// `normal_class` without reading the task: the class hooks ask at
    /// every enqueue, dequeue, pick, tick and clock update.
    pub(crate) nr_off_normal: u32,
    /// Runqueues, by CPU (`struct rq`): the core's fields (`nr_running`,
    /// `curr`, clocks, PELT of RT and IRQ) and each class's per-CPU part
    /// (`rq.cfs`, `rq.rt`), which its class reads and writes.
    pub(crate) rqs: rqs::Rqs,
    /// Tasks, by id (`struct task_struct`): the core's fields (`on_rq`,
    /// `cpu`, `prio`, affinity) and the PELT averages every class reads.
    pub(crate) tasks: tasks::Tasks,
    /// Current time (the time of the event being handled): `rq_clock`'s
    /// source, read by every class.
    pub(crate) now: Ns,
    /// Tick period, ns (`TICK_NSEC`): the fair class's balance intervals and
    /// NOHZ rate limits are in jiffies, the idle governors read it too.
    pub(crate) tick_ns: Ns,
    /// Per CPU, its record ([`CpuRecord`]): its SMT siblings other than
    /// itself (`cpu_smt_mask` as a short list where the machine's mask is 16
    /// words at 1024 CPUs), its core type's SMT speed factor and its core,
    /// LLC and core-type ids: topology, read on every segment change, every
    /// switch and by the fair class's idle-core update on idle entry. An
    /// [`IdTable`](crate::id_table::IdTable), one entry per CPU of the
    /// machine, indexed without a bounds test (its module says why that is
    /// sound).
    pub(crate) cpu_rec: crate::id_table::IdTable<CpuRecord>,
    /// `rd->overloaded` (`struct root_domain`): set by the core's
    /// `add_nr_running` when a CPU gets a second task, read and cleared by
    /// the fair class's balancer (newly-idle balance skips when it is clear).
    pub(crate) rd_overloaded: bool,
    /// The scheduler's random stream (`get_random_u32` as NI_RANDOM's dice
    /// in the fair class's newly-idle balance).
    pub(crate) sched_rng: Rng,
    /// The fair class's global state (`fair::state::FairState`): its
    /// entities, `sd_llc_shared`, NOHZ, EAS, the balancer's groups and sums.
    pub(crate) fair: crate::fair::state::FairState,
    /// The RT class's global state (`rt::class`: cpupri, the RT overload
    /// mask, bandwidth).
    pub(crate) rt: crate::rt::class::RtState,
    /// Runtime state of a peer class (`policies`), `None` under the fair class.
    pub(crate) peer: crate::policies::PeerState,
    /// Frequencies and the cpufreq governor: an engine-level model in its own
    /// module (`cpufreq/`, which reads and writes it); the classes reach it
    /// only through `cpufreq_update_util`, as the kernel's do.
    pub(crate) cpufreq: crate::cpufreq::CpufreqState,
    /// Metrics, fed every event (output, not kernel state).
    pub(crate) collector: Collector,
    /// Every event, when a trace was asked for (output).
    pub(crate) trace: Option<Vec<TimedEvent>>,
    /// Where `trace` is drained to while the run goes (a trace file written
    /// as it is produced), every [`TRACE_FLUSH_EVENTS`] kept events.
    pub(crate) trace_sink: Option<TraceSink>,
    /// Tasks not yet exited (`api` tells an unfinished run by it).
    pub(crate) alive: u32,
    /// Self counters (output).
    pub(crate) stats: EngineStats,
    /// Check invariants after every event (slow; tests).
    pub(crate) check_invariants: bool,
    /// Channels.
    chans: Vec<Chan>,
    /// Barriers.
    barriers: Vec<Barrier>,
    /// Condition variables.
    conds: Vec<Cond>,
    /// Semaphores.
    sems: Vec<Sem>,
    /// Masks `SetAffinity` names, already cut to the machine and the cpuset.
    affinity_masks: Vec<CpuMask>,
    /// `cpumask_any_and_distribute`'s rotor: the last CPU an affinity change
    /// moved a task to.
    distribute_prev: u32,
    /// Cache pressure per core: KiB of footprint brought in, cumulative.
    /// By the machine's core ids (numbered `0..nr_cores` at its build, one
    /// entry each): an [`IdTable`](crate::id_table::IdTable), read and
    /// written at every switch without a bounds test.
    core_pressure: crate::id_table::IdTable<u64>,
    /// Cache pressure per LLC, cumulative KiB (by LLC id, as `core_pressure`).
    llc_pressure: crate::id_table::IdTable<u64>,
    /// Event queue (owns the clock).
    queue: EventQueue<Ev>,
    /// The run was stopped.
    stopped: bool,
    /// Whether the run loop must look at the run's end or the invariants
    /// after an event: `check_invariants`, or `stopped` or `alive == 0`
    /// maybe (set where either happens, and at the start of `run`): one
    /// test per event instead of three.
    attention: bool,
    /// Popped events not handled (stale, or deferred: a stalled CPU's, a
    /// vCPU its host holds), counted where the handler returns without
    /// handling; `stats.events` is `stats.handled + unhandled`.
    unhandled: u64,
    /// Popped events left before the run loop's next stop check (from
    /// `STOP_CHECK_EVENTS` down).
    poll_in: u32,
    /// How each task starts.
    workload_start: Vec<crate::workload::StartKind>,
    /// Interrupt sources of the workload.
    irq_specs: Vec<crate::workload::IrqSpec>,
    /// One stream per (source, CPU).
    irq_streams: Vec<irq::IrqStream>,
    /// IRQ state per CPU.
    irq: Vec<irq::CpuIrq>,
    /// Some CPU can be stalled: a source's interrupts are not accounted
    /// (the `stall` family) or a host holds the vCPUs (`overcommit`). Else
    /// `stalled`, asked at every tick, slice timer and task timer, answers
    /// without reading the CPU's IRQ state.
    may_stall: bool,
    /// The host time-sharing the CPUs as vCPUs (`overcommit`), if any.
    host: Option<Box<host::Host>>,
    /// Per CPU, kernel work timed with `sched_clock` (`timed_work.rs`);
    /// empty where nothing can take a CPU's time (no interrupt source, no
    /// stall, no host).
    pub(crate) timed: Vec<timed_work::TimedWork>,
    /// CPUs running a task (not idle): what a `busy_cpus` interrupt source
    /// (`IrqSpec::busy_cpus`) is gated on. Kept by `context_switch`.
    nr_busy: u32,
    /// Per CPU, the cpuidle device and its governor's data (`cpuidle`).
    idle_devs: Vec<crate::cpuidle::CpuidleDevice>,
    /// Per cluster, its CPUs' cluster-state requests (`cpuidle/cluster.rs`).
    cluster_idle: Vec<crate::cpuidle::cluster::ClusterIdle>,
    /// Pending sleep timers per CPU (the governor's next timer event).
    timers: timers::TimerQueues,
    /// `sched_uclamp_used`: some task asked for a clamp (`engine::uclamp`).
    uclamp_used: bool,
}

impl Sim {
    /// Emit an event: to the metrics, and to the trace if one is kept.
    /// Always inlined with `Collector::on_event` (see there).
    #[inline(always)]
    pub fn emit(&mut self, ev: Event) {
        let te = TimedEvent { time: self.now, ev };
        self.collector.on_event(&te);
        if let Some(t) = self.trace.as_mut() {
            t.push(te);
        }
    }

    /// A popped event not handled (counted in `unhandled`).
    #[inline(always)]
    fn not_handled(&mut self) -> Result<()> {
        self.unhandled += 1;
        Ok(())
    }

    /// Hand the kept events to the trace sink once there are at least `min`.
    pub(crate) fn drain_trace(&mut self, min: usize) -> Result<()> {
        let (Some(sink), Some(events)) = (self.trace_sink.as_mut(), self.trace.as_mut()) else { return Ok(()) };
        if events.len() < min.max(1) {
            return Ok(());
        }
        sink(events).map_err(|e| SchedlabError::Runtime(format!("cannot write the trace: {e}")))?;
        events.clear();
        Ok(())
    }

    /// The queue key of `cpu`'s pending `RunDone` (its run segment's end).
    #[inline]
    pub(crate) fn key_run_done(&self, cpu: CpuId) -> u32 {
        cpu.0
    }

    /// The queue key of `cpu`'s pending `Tick`.
    #[inline]
    pub(crate) fn key_tick(&self, cpu: CpuId) -> u32 {
        self.rqs.len() as u32 + cpu.0
    }

    /// The queue key of `cpu`'s pending `HrTick` (`rq->hrtick_timer`).
    #[inline]
    pub(crate) fn key_hrtick(&self, cpu: CpuId) -> u32 {
        2 * self.rqs.len() as u32 + cpu.0
    }

    /// The queue key of `p`'s pending `Timer`.
    #[inline]
    pub(crate) fn key_timer(&self, p: TaskId) -> u32 {
        key_timer(self.rqs.len(), p)
    }

    /// The queue key of vCPU `cpu`'s pending `HostSlice` (after the tasks'
    /// timers: the tasks are fixed when the run is built).
    #[inline]
    pub(crate) fn key_host_slice(&self, cpu: CpuId) -> u32 {
        (3 * self.rqs.len() + self.tasks.len()) as u32 + cpu.0
    }

    /// Schedule an engine event at `time`.
    #[inline]
    pub fn at(&mut self, time: Ns, ev: Ev) {
        self.queue.push(time.max(self.now), ev);
    }

    /// Schedule an engine event at `time`, in FIFO lane `lane` of the queue
    /// if it keeps the lane's order (see [`LANE_TICK`]).
    #[inline]
    pub(crate) fn at_in(&mut self, lane: usize, time: Ns, ev: Ev) {
        self.queue.push_in(lane, time.max(self.now), ev);
    }

    /// Run until the workload finishes, the stop time, or `max_time_ns`.
    pub fn run(&mut self, max_time_ns: Ns) -> Result<()> {
        let r = self.run_loop(max_time_ns);
        // Every popped event was handled or not (stale, deferred).
        self.stats.events = self.stats.handled + self.unhandled;
        r
    }

    /// [`Sim::run`]'s loop (its one caller, inlined).
    #[inline(always)]
    fn run_loop(&mut self, max_time_ns: Ns) -> Result<()> {
        self.attention = self.check_invariants || self.stopped || self.alive == 0;
        // Leave events after `max_time_ns` queued, so a run can be resumed.
        while let Some((t, ev)) = self.queue.pop_due(max_time_ns) {
            debug_assert!(t >= self.now, "time went back");
            self.now = t;
            // Every STOP_CHECK_EVENTS popped events (a countdown: one
            // decrement and a branch per event, where counting the events
            // and testing the count took five instructions; the count is
            // `handled + unhandled`, each pop being one or the other).
            self.poll_in -= 1;
            if self.poll_in == 0 {
                self.poll_in = crate::api::STOP_CHECK_EVENTS as u32;
                if crate::api::stop_requested() {
                    // This event is popped and left unhandled.
                    self.unhandled += 1;
                    return Err(SchedlabError::Interrupted { events: self.stats.handled + self.unhandled });
                }
                crate::api::note_progress(self.now);
                self.drain_trace(TRACE_FLUSH_EVENTS)?;
            }
            self.handle(ev)?;
            if self.attention {
                if self.check_invariants {
                    if let Err(e) = self.check() {
                        return Err(SchedlabError::Runtime(format!("invariant broken at {} ns: {e}", self.now)));
                    }
                }
                if self.stopped || self.alive == 0 {
                    break;
                }
                self.attention = self.check_invariants;
            }
        }
        if self.queue.peek_time().is_some() && !self.stopped && self.alive > 0 {
            self.now = self.now.max(max_time_ns);
        }
        if self.alive > 0 && !self.stopped && self.queue.is_empty() {
            let blocked: Vec<String> = self
                .tasks
                .iter()
                .filter(|t| t.state == task::TaskState::Blocked)
                .take(5)
                .map(|t| format!("{}({})", t.name, t.id))
                .collect();
            return Err(SchedlabError::Runtime(format!(
                "the workload can never finish: {} tasks are blocked with nothing left to wake them (e.g. {})",
                self.alive,
                blocked.join(", ")
            )));
        }
        Ok(())
    }

    /// Handle one popped event. Always inlined into the run loop, its only
    /// caller: out of line, every event paid its prologue and epilogue (six
    /// registers and the frame saved and restored) and the event's copy
    /// into the call (10.2 M of the standard bench, 23 instructions per
    /// handled event; round 19).
    #[inline(always)]
    fn handle(&mut self, ev: Ev) -> Result<()> {
        match ev {
            Ev::TaskStart(p) => {
                self.stats.handled += 1;
                self.task_start(p)
            }
            Ev::RunDone { cpu, gen } => {
                if self.rqs[cpu.idx()].run_gen != gen {
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.run_done(cpu)
            }
            Ev::Tick { cpu, gen } => {
                if self.rqs[cpu.idx()].tick_gen != gen {
                    return self.not_handled();
                }
                // A stalled vCPU takes its tick when it runs again.
                if let Some(t) = self.stalled(cpu) {
                    if self.host_hold(cpu, ev) {
                        return self.not_handled();
                    }
                    self.queue.push_key_in(LANE_TICK, self.key_tick(cpu), t, Ev::Tick { cpu, gen });
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.sched_tick(cpu)
            }
            Ev::HrTick(cpu) => {
                if let Some(t) = self.stalled(cpu) {
                    if self.host_hold(cpu, ev) {
                        return self.not_handled();
                    }
                    self.queue.push_key(self.key_hrtick(cpu), t, Ev::HrTick(cpu));
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.hrtick(cpu)
            }
            Ev::Timer { task, gen } => {
                if self.tasks[task.idx()].timer_gen != gen {
                    return self.not_handled();
                }
                let cpu = self.tasks[task.idx()].cpu;
                // The hrtimer fires on the CPU the task slept on: a stalled
                // vCPU takes its interrupt when it runs again.
                if let Some(t) = self.stalled(cpu) {
                    if self.host_hold(cpu, ev) {
                        return self.not_handled();
                    }
                    self.queue.push_key(self.key_timer(task), t, ev);
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.try_to_wake_up(task, 0, cpu, None)
            }
            Ev::TtwuArrive { task, cpu, migrated } => {
                if self.defer_ipi_if_stalled(cpu, ev) {
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.sched_ttwu_pending(task, cpu, migrated)
            }
            Ev::Resched(cpu) => {
                if self.defer_ipi_if_stalled(cpu, ev) {
                    return self.not_handled();
                }
                self.stats.handled += 1;
                // An IPI that finds its CPU in charged kernel work: the
                // switch waits for the preemption point.
                let at = self.preemption_point(cpu);
                if at > self.now {
                    self.at(at, ev);
                    return Ok(());
                }
                self.scheduler_ipi(cpu)
            }
            Ev::RtPushIpi(cpu) => {
                if self.defer_ipi_if_stalled(cpu, ev) {
                    return self.not_handled();
                }
                self.stats.handled += 1;
                self.rt_push_ipi(cpu)
            }
            Ev::RtPeriodTimer => {
                self.stats.handled += 1;
                self.sched_rt_period_timer()
            }
            Ev::Irq { stream } => {
                self.stats.handled += 1;
                self.irq_raise(stream)
            }
            Ev::IrqWaited { stream } => {
                self.stats.handled += 1;
                self.irq_waited(stream)
            }
            Ev::IrqExit { cpu, irq, hardirq_ns, softirq_ns } => {
                self.stats.handled += 1;
                self.irq_exit(cpu, irq, hardirq_ns, softirq_ns)
            }
            Ev::SoftirqExit { cpu, softirq_ns } => {
                self.stats.handled += 1;
                self.softirq_exit(cpu, softirq_ns)
            }
            Ev::SugovIrqWork { domain, cpu } => {
                self.stats.handled += 1;
                self.sugov_irq_work(domain, cpu)
            }
            Ev::CpufreqTransition { domain } => {
                self.stats.handled += 1;
                self.cpufreq_transition_done(domain);
                Ok(())
            }
            Ev::DbsIrqWork { cpu } => {
                self.stats.handled += 1;
                self.dbs_irq_work(cpu)
            }
            Ev::HostSlice { cpu, gen } => {
                if self.host_slice(cpu, gen) {
                    self.stats.handled += 1;
                } else {
                    self.unhandled += 1;
                }
                Ok(())
            }
            Ev::HostOther => {
                self.stats.handled += 1;
                self.host_other();
                Ok(())
            }
            Ev::HostOtherEnd => {
                self.stats.handled += 1;
                self.host_other_end();
                Ok(())
            }
            Ev::Stop => {
                self.stats.handled += 1;
                self.stopped = true;
                self.attention = true;
                Ok(())
            }
        }
    }

    /// Index of `cpu`'s LLC (the machine's id, from the CPU's engine record:
    /// no bounds test).
    #[inline]
    pub fn llc_of(&self, cpu: CpuId) -> usize {
        self.cpu_rec[cpu.idx()].llc as usize
    }
}

#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod idle_tests;
#[cfg(test)]
mod ipc_tests;
#[cfg(test)]
mod irq_tests;
#[cfg(test)]
mod preempt_tests;
