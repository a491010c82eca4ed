//! The streaming metrics collector: one pass over the event stream, O(1) work
//! per event (O(mask weight) when an affinity-restricted task starts or stops
//! waiting), no allocation per event and no stored events. The engine feeds a
//! simulated run through it; `read_ftrace` output feeds a real trace.

use crate::api::MetricValue;
use crate::cpumask::CpuMask;
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_SEC, NSEC_PER_USEC};
use crate::topology::machine::Distance;
use crate::trace::{BalanceKind, Event, PrevState, TimedEvent};

use crate::workload::MarkKind;

use super::context::MetricsContext;
use super::energy::EnergyMeter;
use super::grown::grown_at;
use super::hist::LatencyHist;
use super::idle_ref::IdleRef;
use super::occupancy::CpuOccupancy;
use super::registry::METRICS;

/// What the collector knows about a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    /// Not seen yet (real traces start mid-flight).
    Unknown,
    /// Sleeping.
    Blocked,
    /// Runnable on `cpu`'s runqueue, not running.
    Waiting { cpu: CpuId },
    /// Running on `cpu`.
    Running { cpu: CpuId },
    /// Exited.
    Dead,
}

/// Sentinel for "no pending sched_waking".
const NO_WAKING: Ns = Ns::MAX;

#[derive(Clone, Copy, Debug)]
struct TaskRec {
    state: TaskState,
    /// When the current wait began (wakeup or preemption), ns.
    wait_since: Ns,
    /// Time of the pending `sched_waking`, or `NO_WAKING`.
    waking: Ns,
    /// Whether its affinity excludes some CPU (then `Collector::allowed` has it).
    restricted: bool,
    exited: bool,
    /// The CPU it last ran on, or `NO_CPU`.
    last_cpu: u32,
    /// The CPU of its pending `sched_waking` (the waker's), or `NO_CPU`.
    waker_cpu: u32,
}

/// `task` (whose record is `rec`) starts (`up`) or stops waiting on
/// `cpu`: the occupancy sees it, with its affinity when restricted. A
/// function of the fields it needs, so that a caller holding the record
/// does not index it again.
#[inline(always)]
fn wait_change(occ: &mut CpuOccupancy, ctx: &MetricsContext, rec: &TaskRec, task: TaskId, cpu: CpuId, up: bool) {
    let mask = if rec.restricted { ctx.allowed.get(task.idx()) } else { None };
    occ.waiting(cpu, mask, up);
}

/// `last_cpu` / `waker_cpu` when unknown.
const NO_CPU: u32 = u32::MAX;

/// `tasks[task]`, the records grown first when a real trace names a task
/// for the first time (see [`grown_at`]).
#[inline(always)]
fn rec_at(tasks: &mut Vec<TaskRec>, task: TaskId) -> &mut TaskRec {
    grown_at(tasks, task.idx(), &TaskRec::NEW)
}

/// Workload metrics of one measured part (see [`MetricsContext::parts`]).
#[derive(Clone, Debug)]
struct PartStats {
    request_lat: LatencyHist,
    /// Benchmark-measured wakeup latency (`WakeDone` marks), whole microseconds.
    app_wakeup_lat: LatencyHist,
    requests: u64,
    /// The part made request marks (started or finished), warm-up included:
    /// its request metrics apply (a benchmark without requests has them absent).
    has_requests: bool,
    /// The part made `WakeDone` marks, warm-up included.
    has_app_wakeups: bool,
    nr_exited: u64,
    last_exit: Ns,
}

impl PartStats {
    fn new() -> Self {
        PartStats {
            request_lat: LatencyHist::new(),
            app_wakeup_lat: LatencyHist::new(),
            requests: 0,
            has_requests: false,
            has_app_wakeups: false,
            nr_exited: 0,
            last_exit: 0,
        }
    }
}

/// The metrics each measured part reports on its own, in registry order:
/// the main part under these names, others under `wN.` + name.
pub const PART_METRICS: [&str; 6] = [
    "completion_time_s",
    "requests_per_s",
    "request_latency_p50_us",
    "request_latency_p99_us",
    "app_wakeup_latency_p50_us",
    "app_wakeup_latency_p99_us",
];

impl TaskRec {
    const NEW: TaskRec = TaskRec {
        state: TaskState::Unknown,
        wait_since: 0,
        waking: NO_WAKING,
        restricted: false,
        exited: false,
        last_cpu: NO_CPU,
        waker_cpu: NO_CPU,
    };
}

/// Streaming metrics over an event stream.
#[derive(Clone, Debug)]
pub struct Collector {
    ctx: MetricsContext,
    occ: CpuOccupancy,
    tasks: Vec<TaskRec>,
    /// Start of the counted window: `max(warmup, 0 or first event)`.
    window_start: Ns,
    /// Energy and frequency accounting, when the context has an energy model.
    pub(crate) energy: Option<EnergyMeter>,
    /// Idle-state residency, when the context knows the machine's states.
    idle_res: Option<super::idle_states::IdleResidency>,
    last_t: Ns,
    started: bool,
    /// Whether [`Collector::first_selected`] is tracked: a real trace read
    /// with a task selection (a simulation's parts know their start).
    track_first_selected: bool,
    /// When a selected task first appears: the selected program's start,
    /// where its completion time counts from (the trace itself starts
    /// earlier, with the recorder).
    first_selected: Option<Ns>,
    /// Workload metrics, indexed like `ctx.parts`.
    parts: Vec<PartStats>,
    wakeup_lat: LatencyHist,
    rq_delay: LatencyHist,
    /// Per CPU: whether an RT (fifo/rr) task runs there.
    rt_running: Vec<bool>,
    /// CPUs running an RT task now.
    nr_rt_running: u64,
    /// Some task has (or had) an RT policy: else no switch can start an RT
    /// task, and a switch does not look up its next task's policy.
    rt_policies: bool,
    /// CPU time spent running RT tasks in the measured window, ns.
    rt_ns: u128,
    context_switches: u64,
    /// Indexed by `Distance as usize - 1` (Smt..Node).
    migrations: [u64; 5],
    wakeups: u64,
    /// Wakeups of tasks that ran before, by where they landed: previous CPU,
    /// SMT sibling, same LLC, other LLC of the node, other node.
    wake_dist: [u64; 5],
    /// Wakeups with a known waker CPU, and those onto the waker's CPU.
    wake_known_waker: u64,
    wake_on_waker: u64,
    place: [u64; 12],
    scanned_sum: u64,
    placements: u64,
    newidle_calls: u64,
    /// Indexed by `BalanceKind as usize`.
    pulls: [u64; 4],
    /// Per CPU, the `avg_idle_error_us` reference.
    idle_ref: Vec<IdleRef>,
    /// Sum of |avg_idle - reference| over counted `AvgIdle` events, ns.
    avg_idle_err_sum: u128,
    avg_idle_samples: u64,
    /// Per CPU, handlers running (hard and soft) and since when the
    /// outermost began.
    irq_depth: Vec<(u8, Ns)>,
    /// Interrupt handler time (hard and inline soft) in the window, ns.
    irq_ns: u128,
    /// `capacity_of` of chosen CPUs over counted placements that recorded
    /// it: minimum, sum and count.
    placed_cap: (u16, u64, u64),
}

impl Collector {
    /// A collector for a run described by `ctx`.
    pub fn new(ctx: MetricsContext) -> Self {
        let occ = CpuOccupancy::new(ctx.nr_cpus, ctx.cpus_start_idle);
        let window_start = if ctx.cpus_start_idle { ctx.warmup_ns } else { Ns::MAX };
        let mut c = Self {
            occ,
            tasks: Vec::new(),
            window_start,
            last_t: 0,
            started: false,
            track_first_selected: ctx.has_selection() && !ctx.cpus_start_idle,
            first_selected: None,
            parts: vec![PartStats::new(); ctx.parts.len().max(1)],
            wakeup_lat: LatencyHist::new(),
            rq_delay: LatencyHist::new(),
            rt_running: vec![false; ctx.nr_cpus],
            nr_rt_running: 0,
            rt_policies: ctx.policy.as_ref().is_some_and(|p| p.iter().any(|p| p.is_rt())),
            rt_ns: 0,
            context_switches: 0,
            migrations: [0; 5],
            wakeups: 0,
            wake_dist: [0; 5],
            wake_known_waker: 0,
            wake_on_waker: 0,
            place: [0; 12],
            scanned_sum: 0,
            placements: 0,
            newidle_calls: 0,
            pulls: [0; 4],
            irq_depth: vec![(0, 0); ctx.nr_cpus],
            irq_ns: 0,
            placed_cap: (u16::MAX, 0, 0),
            idle_ref: vec![IdleRef::NEW; ctx.nr_cpus],
            avg_idle_err_sum: 0,
            avg_idle_samples: 0,
            energy: ctx.energy.clone().map(EnergyMeter::new),
            idle_res: ctx.idle_states.clone().map(super::idle_states::IdleResidency::new),
            ctx,
        };
        let n = c.ctx.allowed.len();
        c.tasks.resize(n, TaskRec::NEW);
        for t in 0..n {
            c.tasks[t].restricted = !c.covers_all(&c.ctx.allowed[t]);
        }
        c
    }

    /// Attributes tasks to the parts of a composed workload (see
    /// [`MetricsContext::set_parts`]). Call before the first event.
    pub fn set_parts(&mut self, task_part: &[u32], part_prefixes: &[Option<String>]) {
        debug_assert!(!self.started, "parts are set before the first event");
        self.ctx.set_parts(task_part, part_prefixes);
        self.parts = vec![PartStats::new(); self.ctx.parts.len().max(1)];
    }

    /// What the collector knows about the run (the engine reads which tasks
    /// are noise from it).
    #[inline]
    pub fn context(&self) -> &MetricsContext {
        &self.ctx
    }

    fn covers_all(&self, m: &CpuMask) -> bool {
        CpuMask::first_n(self.ctx.nr_cpus).is_subset(m)
    }

    /// Set (or change) a task's affinity; a task not yet known is added.
    pub fn set_allowed(&mut self, task: TaskId, mask: CpuMask) {
        self.ensure_task(task);
        let waiting_on = match self.tasks[task.idx()].state {
            TaskState::Waiting { cpu } => Some(cpu),
            _ => None,
        };
        if let Some(cpu) = waiting_on {
            self.wait_change(task, cpu, false);
        }
        if self.ctx.allowed.len() <= task.idx() {
            self.ctx.allowed.resize(task.idx() + 1, CpuMask::first_n(self.ctx.nr_cpus));
        }
        self.tasks[task.idx()].restricted = !self.covers_all(&mask);
        self.ctx.allowed[task.idx()] = mask;
        if let Some(cpu) = waiting_on {
            self.wait_change(task, cpu, true);
        }
    }

    #[inline]
    fn ensure_task(&mut self, task: TaskId) {
        rec_at(&mut self.tasks, task);
    }

    #[inline]
    fn wait_change(&mut self, task: TaskId, cpu: CpuId, up: bool) {
        wait_change(&mut self.occ, &self.ctx, &self.tasks[task.idx()], task, cpu, up);
    }

    /// Task starts waiting on `cpu` at `t` (keeping `since` when it moves).
    fn start_wait(&mut self, task: TaskId, cpu: CpuId, since: Ns) {
        self.wait_change(task, cpu, true);
        let rec = &mut self.tasks[task.idx()];
        rec.state = TaskState::Waiting { cpu };
        rec.wait_since = since;
    }

    /// Leave whatever runqueue the task waits on; returns when it began waiting.
    fn stop_wait(&mut self, task: TaskId) -> Option<Ns> {
        if let TaskState::Waiting { cpu } = self.tasks[task.idx()].state {
            self.wait_change(task, cpu, false);
            self.tasks[task.idx()].state = TaskState::Blocked;
            Some(self.tasks[task.idx()].wait_since)
        } else {
            None
        }
    }

    /// Integrate occupancy up to `t`, counting only time after the window
    /// start. `on_event` calls it only when time moved (or at the first
    /// event): a handled event often emits several at one instant.
    #[inline(never)]
    fn advance_to(&mut self, t: Ns) {
        if !self.started {
            self.started = true;
            if !self.ctx.cpus_start_idle {
                self.window_start = self.ctx.warmup_ns.max(t);
            }
            self.last_t = t;
        }
        if t <= self.last_t {
            return;
        }
        let from = self.last_t.max(self.window_start);
        let to = t.max(self.window_start);
        self.occ.advance(to - from);
        // RT time accrues only while an RT task runs (most runs have none).
        if self.nr_rt_running != 0 {
            self.rt_ns += self.nr_rt_running as u128 * (to - from) as u128;
        }
        self.last_t = t;
    }

    /// Feed one event. Events must come in time order (a late event is
    /// applied at the latest time seen).
    ///
    /// Always inlined, as `Sim::emit` is: each of the engine's emit sites
    /// passes one known variant, so the match folds away and only that
    /// arm's code lands there (no call, no dispatch, no spill of the whole
    /// function's registers per event; 2.1% of the standard bench's
    /// instructions, for 3 KB of code).
    #[inline(always)]
    pub fn on_event(&mut self, te: &TimedEvent) {
        let t = te.time;
        if t > self.last_t || !self.started {
            self.advance_to(t);
        }
        let counted = t >= self.ctx.warmup_ns;
        match te.ev {
            Event::Switch { cpu, prev, prev_state, next } => {
                if let Some(e) = self.energy.as_mut() {
                    e.set_busy(t, self.window_start, cpu, next.is_some());
                }
                self.on_switch(t, counted, cpu, prev, prev_state, next)
            }
            Event::CpuFrequency { cpu, khz } => {
                if let Some(e) = self.energy.as_mut() {
                    e.set_freq(t, self.window_start, cpu, khz);
                }
            }
            // A vCPU waiting for its host is not interrupt time.
            Event::Irq { irq: crate::trace::event::HOST_IRQ, .. } => {}
            Event::Irq { cpu, entry, .. } | Event::Softirq { cpu, entry } => self.on_irq(t, cpu, entry),
            // Idle time is measured from the switches; the states set the
            // idle power and their residency.
            Event::CpuIdle { cpu, state } => {
                if let Some(e) = self.energy.as_mut() {
                    e.set_idle_state(t, self.window_start, cpu, state);
                }
                if let Some(r) = self.idle_res.as_mut() {
                    r.on_cpu_idle(t, self.window_start, cpu, state);
                }
            }
            // RT time follows the task's policy from now on.
            Event::SetScheduler { task, policy, .. } => {
                self.ctx.set_policy(task.idx(), policy);
                self.rt_policies |= policy.is_rt();
                if let Some(TaskState::Running { cpu }) = self.tasks.get(task.idx()).map(|r| r.state) {
                    let rt = self.ctx.is_rt(task.idx());
                    self.set_rt_running(cpu, rt);
                }
            }
            Event::Waking { task, cpu } => {
                self.note_selected(t, task);
                let rec = rec_at(&mut self.tasks, task);
                rec.waker_cpu = cpu.0;
                // A real trace can show sched_waking before the wakee's own
                // switch-out (ttwu spins on p->on_cpu), so a running task's
                // waking is kept; a sched_wakeup while it still runs, or its
                // preemption, drops it.
                if !matches!(rec.state, TaskState::Waiting { .. } | TaskState::Dead) && rec.waking == NO_WAKING {
                    rec.waking = t;
                }
            }
            Event::Wakeup { task, cpu, new } => self.on_wakeup(t, counted, task, cpu, new),
            Event::Migrate { task, orig, dest, .. } => {
                self.ensure_task(task);
                if orig != dest {
                    if counted && self.ctx.selected(task.idx()) {
                        let d = self.ctx.distance(orig, dest);
                        if d != Distance::Same {
                            self.migrations[d as usize - 1] += 1;
                        }
                    }
                    if let TaskState::Waiting { cpu } = self.tasks[task.idx()].state {
                        if cpu != dest {
                            let since = self.tasks[task.idx()].wait_since;
                            self.stop_wait(task);
                            self.start_wait(task, dest, since);
                        }
                    }
                }
            }
            Event::Place { path, scanned, capacity, .. } => {
                if counted && capacity > 0 {
                    let pc = &mut self.placed_cap;
                    pc.0 = pc.0.min(capacity);
                    pc.1 += capacity as u64;
                    pc.2 += 1;
                }
                if counted {
                    self.place[path as usize] += 1;
                    self.scanned_sum += scanned as u64;
                    self.placements += 1;
                }
            }
            Event::Balance { kind, pulled, .. } => {
                if counted {
                    if kind == BalanceKind::NewIdle {
                        self.newidle_calls += 1;
                    }
                    self.pulls[kind as usize] += pulled as u64;
                }
            }
            Event::AvgIdle { cpu, avg_idle_ns, max_ns } => {
                let err = self.idle_ref_mut(cpu).error_of(avg_idle_ns, max_ns);
                if counted {
                    self.avg_idle_err_sum += err as u128;
                    self.avg_idle_samples += 1;
                }
            }
            Event::Mark { task, kind, value } => {
                // A mark counts for the workload of the task that made it.
                let Some(part) = self.parts.get_mut(self.ctx.part_of(task.idx()) as usize) else {
                    return;
                };
                match kind {
                    MarkKind::RequestStart | MarkKind::RequestDone => part.has_requests = true,
                    MarkKind::WakeDone => part.has_app_wakeups = true,
                    MarkKind::WorkDone => {}
                }
                match kind {
                    MarkKind::RequestDone if counted => {
                        part.requests += 1;
                        part.request_lat.record(t.saturating_sub(value));
                    }
                    MarkKind::WakeDone if counted => {
                        // As schbench's tvdelta: the difference of two
                        // microsecond gettimeofday stamps; a zero is not recorded.
                        let us = (t / NSEC_PER_USEC).saturating_sub(value / NSEC_PER_USEC);
                        if us > 0 {
                            part.app_wakeup_lat.record(us);
                        }
                    }
                    _ => {}
                }
            }
            Event::Exit { task } => {
                self.ensure_task(task);
                self.stop_wait(task);
                let rec = &mut self.tasks[task.idx()];
                if !matches!(rec.state, TaskState::Running { .. }) {
                    rec.state = TaskState::Dead;
                }
                rec.waking = NO_WAKING;
                let first_exit = !rec.exited;
                rec.exited = true;
                // With a selection, only the selected tasks end the program.
                let part =
                    if self.ctx.selected(task.idx()) { self.ctx.part_of(task.idx()) as usize } else { usize::MAX };
                if let Some(part) = self.parts.get_mut(part) {
                    if first_exit {
                        part.nr_exited += 1;
                    }
                    part.last_exit = part.last_exit.max(t);
                }
            }
        }
    }

    /// CPU `cpu`'s reference, grown first for a CPU a real trace names
    /// late (see [`grown_at`]).
    #[inline]
    fn idle_ref_mut(&mut self, cpu: CpuId) -> &mut IdleRef {
        grown_at(&mut self.idle_ref, cpu.idx(), &IdleRef::NEW)
    }

    /// A CPU goes idle or leaves idle: the `avg_idle` reference sees the boundary.
    fn idle_boundary(&mut self, t: Ns, cpu: CpuId, was_busy: bool, now_busy: bool) {
        self.idle_ref_mut(cpu).boundary(t, was_busy, now_busy);
    }

    #[inline(always)]
    fn on_switch(
        &mut self,
        t: Ns,
        counted: bool,
        cpu: CpuId,
        prev: Option<TaskId>,
        prev_state: PrevState,
        next: Option<TaskId>,
    ) {
        if counted
            && (prev.is_some_and(|p| self.ctx.selected(p.idx()))
                || next.is_some_and(|n| self.ctx.selected(n.idx()))
                || !self.ctx.has_selection())
        {
            self.context_switches += 1;
        }
        // Each task's record is indexed once, the occupancy and the context
        // reached beside it (`stop_wait` and `start_wait` written out): the
        // methods each indexed it again, a bounds test and reloads each.
        if let Some(p) = prev {
            self.note_selected(t, p);
            let rec = rec_at(&mut self.tasks, p);
            // `stop_wait`: only an inconsistent trace has it waiting.
            if let TaskState::Waiting { cpu: w } = rec.state {
                wait_change(&mut self.occ, &self.ctx, rec, p, w, false);
                rec.state = TaskState::Blocked;
            }
            match prev_state {
                PrevState::Runnable => {
                    // `start_wait` at `t`.
                    wait_change(&mut self.occ, &self.ctx, rec, p, cpu, true);
                    rec.state = TaskState::Waiting { cpu };
                    rec.wait_since = t;
                    rec.waking = NO_WAKING;
                }
                PrevState::Sleeping => rec.state = TaskState::Blocked,
                PrevState::Dead => rec.state = TaskState::Dead,
            }
        }
        if let Some(n) = next {
            self.note_selected(t, n);
            let rec = rec_at(&mut self.tasks, n);
            match rec.state {
                TaskState::Waiting { cpu: w } => {
                    // `stop_wait`.
                    wait_change(&mut self.occ, &self.ctx, rec, n, w, false);
                    rec.state = TaskState::Blocked;
                    if counted {
                        self.rq_delay.record(t.saturating_sub(rec.wait_since));
                    }
                }
                TaskState::Running { cpu: c2 } if c2 != cpu => {
                    // A lost switch-out in a real trace: the other CPU must
                    // have switched away from it.
                    self.occ.set_busy(c2, true, false);
                }
                _ => {}
            }
            if rec.waking != NO_WAKING {
                if counted {
                    self.wakeup_lat.record(t.saturating_sub(rec.waking));
                }
                rec.waking = NO_WAKING;
            }
            rec.state = TaskState::Running { cpu };
            rec.last_cpu = cpu.0;
        }
        let rt = self.rt_policies && next.is_some_and(|n| self.ctx.is_rt(n.idx()));
        // With no RT task running anywhere every CPU's flag is clear, so a
        // switch to a task that is not RT changes nothing: the usual run has
        // no RT task, and this spares the per-CPU flag at every switch.
        if rt || self.nr_rt_running != 0 {
            self.set_rt_running(cpu, rt);
        }
        self.idle_boundary(t, cpu, prev.is_some(), next.is_some());
        self.occ.set_busy(cpu, prev.is_some(), next.is_some());
    }

    /// Note `task`'s appearance at `t` for [`Collector::first_selected`].
    #[inline]
    fn note_selected(&mut self, t: Ns, task: TaskId) {
        if self.track_first_selected && self.first_selected.is_none() && self.ctx.selected(task.idx()) {
            self.first_selected = Some(t);
        }
    }

    /// Whether `cpu` now runs an RT task (RT time is counted per CPU).
    fn set_rt_running(&mut self, cpu: CpuId, rt: bool) {
        if cpu.idx() >= self.rt_running.len() {
            self.rt_running.resize(cpu.idx() + 1, false);
        }
        self.nr_rt_running = self.nr_rt_running + rt as u64 - self.rt_running[cpu.idx()] as u64;
        self.rt_running[cpu.idx()] = rt;
    }

    #[inline(always)]
    fn on_wakeup(&mut self, t: Ns, counted: bool, task: TaskId, cpu: CpuId, new: bool) {
        self.note_selected(t, task);
        let rec = rec_at(&mut self.tasks, task);
        if counted && !new && self.ctx.selected(task.idx()) {
            self.wakeups += 1;
            if rec.last_cpu != NO_CPU {
                let i = self.ctx.wake_distance(CpuId(rec.last_cpu), cpu);
                self.wake_dist[i] += 1;
            }
            if rec.waker_cpu != NO_CPU {
                self.wake_known_waker += 1;
                self.wake_on_waker += (rec.waker_cpu == cpu.0) as u64;
            }
        }
        if !new {
            rec.waker_cpu = NO_CPU;
        }
        // As in `on_switch`, the record indexed once (`stop_wait` and
        // `start_wait` written out).
        match rec.state {
            TaskState::Running { .. } => rec.waking = NO_WAKING,
            TaskState::Waiting { cpu: w } => {
                if w != cpu {
                    // Moved while waiting: its wait goes on, on `cpu`.
                    wait_change(&mut self.occ, &self.ctx, rec, task, w, false);
                    wait_change(&mut self.occ, &self.ctx, rec, task, cpu, true);
                    rec.state = TaskState::Waiting { cpu };
                }
            }
            TaskState::Blocked | TaskState::Unknown | TaskState::Dead => {
                wait_change(&mut self.occ, &self.ctx, rec, task, cpu, true);
                rec.state = TaskState::Waiting { cpu };
                rec.wait_since = t;
                if new {
                    rec.waking = NO_WAKING;
                } else if rec.waking == NO_WAKING {
                    // No sched_waking in the trace: the wakeup is the best start.
                    rec.waking = t;
                }
            }
        }
    }

    /// A handler starts (`entry`) or ends on `cpu`: time inside the
    /// outermost handler counts as IRQ time, from the window's start.
    fn on_irq(&mut self, t: Ns, cpu: CpuId, entry: bool) {
        let Some(d) = self.irq_depth.get_mut(cpu.idx()) else { return };
        if entry {
            if d.0 == 0 {
                d.1 = t;
            }
            d.0 = d.0.saturating_add(1);
        } else if d.0 > 0 {
            d.0 -= 1;
            if d.0 == 0 {
                let from = d.1.max(self.window_start);
                self.irq_ns += t.saturating_sub(from) as u128;
            }
        }
    }
}

#[path = "collector_values.rs"]
mod values;

#[cfg(test)]
#[path = "collector_tests.rs"]
mod tests;
