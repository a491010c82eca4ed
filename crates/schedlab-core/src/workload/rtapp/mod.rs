//! rt-app JSON files as workloads (`-w file.json`, recognised by its `tasks`
//! object, or `-w rtapp:file=file.json`).
//!
//! Each thread object becomes `instance` tasks running one [`Ops`] program:
//! the initial `delay` (which also anchors the thread's timers, rt-app's
//! `t_first`), then the phases in file order, each `loop` times, the whole
//! `loop` times (-1 = until `global.duration`). Events map to operations as
//! rt-app's `run_event` (src/rt-app.c) performs them:
//!
//! | event | operation |
//! |---|---|
//! | `run` | work: `n` us on the calibration CPU (scales with capacity and frequency) |
//! | `runtime` | wall time: 32 us chunks of work until `n` us have passed |
//! | `sleep` | `nanosleep` |
//! | `timer` | `clock_nanosleep` to the timer's next expiry (relative or absolute mode) |
//! | `lock`, `unlock` | a pthread mutex (a capacity-1 channel) |
//! | `wait`, `signal`, `broad`, `sync` | `pthread_cond_wait` / `_signal` / `_broadcast` / signal then wait |
//! | `suspend`, `resume` | lock, cond wait / broadcast, unlock on the named resource |
//! | `barrier` | all threads that name it meet (users = instances of the threads naming it) |
//! | `mem`, `iorun` | work: memset at [`MEM_BYTES_PER_US`]; one `write` to /dev/null per buffer at [`IO_WRITE_NS`] |
//!
//! | `yield` | `sched_yield` |
//!
//! | `fork` | create the named thread (pre-made, started from here by the fork path) |
//!
//! What would change scheduling but is not modelled is refused with the key
//! and its path: a fork without bound, SCHED_DEADLINE, uclamp keys of a
//! phase (a thread's `util_min`/`util_max` are its clamps from the start,
//! `sched_setattr(SCHED_FLAG_UTIL_CLAMP)`), `hold_ns`, task groups, memory binding, a phase priority without its
//! policy, priority-inheritance mutexes, timers shared between threads. A
//! phase's `policy` (and `priority`) is set with `sched_setattr` at the
//! start of each of its loops, as rt-app's `set_thread_param` does. rt-app's own
//! logging keys are accepted: they change nothing a scheduler sees.

mod events;
pub(crate) mod json;

use events::EVENTS;

use super::ops::{Op, OpsBuilder};
use super::{forked_task, intern, BarrierSpec, ChanSpec, PrimaryMetric, Program, SchedPolicy, Workload};
use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::ids::{CpuId, Ns};
use crate::topology::Machine;
use json::JVal;

/// Bytes `memset` writes per microsecond for a `mem` event: 10 GB/s, one
/// core filling a buffer of rt-app's default 4 MiB (`mem_buffer_size`), which
/// lives in the LLC or memory. Single-core store bandwidth is 10-20 GB/s on
/// current x86 and arm64 server cores, 5-10 GB/s on phone cores.
pub const MEM_BYTES_PER_US: u64 = 10_000;

/// CPU time of one `write` of a buffer to `/dev/null` (`iorun`): the syscall
/// entry and exit and the fd lookup; `/dev/null` copies nothing. About
/// 0.2-1 us with current speculation mitigations; 1 us taken.
pub const IO_WRITE_NS: Ns = 1_000;

/// rt-app's default `mem_buffer_size`, bytes.
const DEFAULT_MEM_BUFFER: u64 = 4 * 1024 * 1024;

/// rt-app's default RT priority when a thread with an RT policy gives none.
const RTAPP_DEFAULT_RT_PRIORITY: i64 = 10;

const NS_PER_US: Ns = 1_000;

/// `schedlab workload list`/`show` entry of rt-app input (a file, not a
/// family with keys: its one parameter is the file the front end reads).
pub(crate) fn family_doc() -> super::FamilyDoc {
    super::FamilyDoc {
        name: "rtapp".into(),
        summary: "an rt-app JSON file (-w file.json, or -w rtapp:file=PATH for any file name); completion time".into(),
        structure: "one task per thread instance running its phases in file order; events: run (work on the \
            calibration CPU), runtime (wall time), sleep, timer (relative|absolute), lock, unlock, wait, signal, \
            broad, sync, suspend, resume, barrier, mem, iorun, yield, fork (a countable number of times). Refused (not \
            modelled): unbounded forks, SCHED_DEADLINE, \
            util_min/util_max of a phase (a thread's are its clamps), hold_ns, taskgroup, nodes_membind, a phase priority without its policy, timers shared \
            between threads, pi_enabled. A phase's policy/priority is set at each of its loops (sched_setattr)."
            .into(),
        source: "rt-app doc/tutorial.txt and src/rt-app.c (run_event, thread_body)".into(),
        params: vec![super::ParamDoc {
            name: "file".into(),
            unit: "path".into(),
            default: "required".into(),
            doc: "the rt-app JSON file (C comments allowed, as rt-app's json-c parser allows them).".into(),
        }],
    }
}

/// Whether `text` is an rt-app description: JSON (comments allowed) whose
/// top level has a `tasks` object.
pub(crate) fn is_rtapp(text: &str) -> bool {
    matches!(json::parse(text), Ok(JVal::Obj(items)) if items.iter().any(|(k, _)| k == "tasks"))
}

/// Builds the workload an rt-app file describes on `machine`.
pub(crate) fn build(text: &str, origin: &str, machine: &Machine) -> Result<Workload> {
    let doc = json::parse(text).map_err(|e| err(origin, "", format!("rt-app JSON: {e}")))?;
    // Repeated event keys run in order (workgen numbers them); any other
    // key twice is a mistake.
    if let Some(dup) = repeated_setting(&doc, "") {
        return Err(err(origin, &dup, "each setting once (only events may repeat)".into()));
    }
    let JVal::Obj(top) = doc else { return Err(err(origin, "", "a JSON object with `tasks`".into())) };
    let mut b = Builder::new(origin, machine);
    let mut tasks = None;
    for (k, v) in &top {
        match k.as_str() {
            "global" => b.global(v)?,
            "tasks" => tasks = Some(v),
            // Kept by rt-app for old files; resources are made on first use.
            "resources" => {}
            _ => return Err(err(origin, k, "one of global, tasks, resources".into())),
        }
    }
    let Some(JVal::Obj(tasks)) = tasks else { return Err(err(origin, "tasks", "an object of threads".into())) };
    if tasks.is_empty() {
        return Err(err(origin, "tasks", "at least one thread".into()));
    }
    let mut defs = Vec::new();
    for (name, t) in tasks {
        defs.push(b.thread(name, t)?);
    }
    b.check_timers()?;
    let mut w = Workload {
        name: format!("rtapp:{origin}"),
        chans: vec![ChanSpec::queue(1); b.mutexes.len()],
        barriers: b.barrier_users.iter().map(|&parties| BarrierSpec { parties }).collect(),
        conds: b.conds.len() as u32,
        masks: b.masks.clone(),
        duration_ns: b.duration_ns,
        ..Workload::of(Vec::new(), PrimaryMetric::CompletionTime)
    };
    // Threads created at start, in file order, then the forked ones: for
    // each instance of a forking thread and each fork event, the threads it
    // will create, named as rt-app names them (`<name>-<index>-<fork>`).
    let mut starts = Vec::new();
    for (di, d) in defs.iter().enumerate() {
        for _ in 0..d.instances {
            starts.push((di, w.tasks.len()));
            w.tasks.push(thread_task(d, format!("{}-{}", d.name, w.tasks.len()), d.program.clone()));
        }
    }
    for (di, first_task) in starts {
        let d = &defs[di];
        if d.forks.is_empty() {
            continue;
        }
        let mut program = d.program.clone();
        let mut firsts = Vec::new();
        for &req in &d.forks {
            let (template, path, n) = &b.forks[req];
            let Some(t) = defs.iter().find(|x| &x.name == template) else {
                return Err(err(origin, path, format!("the name of a thread in tasks, got '{template}'")));
            };
            if t.forever && b.duration_ns.is_none() {
                return Err(err(
                    origin,
                    &format!("tasks.{template}.loop"),
                    "a finite loop count, or a global.duration: a forked thread that loops forever never ends".into(),
                ));
            }
            let uses_barrier = t.program.code().iter().any(|op| matches!(op, Op::Barrier { .. }));
            if !t.forks.is_empty() || uses_barrier {
                return Err(err(
                    origin,
                    path,
                    format!("a thread without fork or barrier events to fork ('{template}' has some: not modelled)"),
                ));
            }
            firsts.push(w.tasks.len() as u32);
            for k in 0..*n {
                let name = format!("{}-{}-{:04}", t.name, w.tasks.len(), k);
                let mut child = thread_task(t, name, t.program.clone());
                child.start = super::StartKind::Spawned;
                w.tasks.push(child);
            }
        }
        program.set_spawn_targets(|req| firsts[d.forks.iter().position(|&r| r as u32 == req).unwrap_or(0)]);
        w.tasks[first_task].program = Program::Ops(program);
    }
    if w.tasks.is_empty() {
        return Err(err(origin, "tasks", "at least one thread with instance >= 1".into()));
    }
    if w.duration_ns.is_none() {
        if let Some(d) = defs.iter().find(|d| d.forever && d.instances > 0) {
            return Err(err(
                origin,
                &format!("tasks.{}.loop", d.name),
                "a finite loop count, or a global.duration: this thread loops forever (-1, the default) and \
                 the run would never end"
                    .into(),
            ));
        }
    }
    Ok(w)
}

/// A task running thread `d`'s program.
fn thread_task(d: &ThreadDef, name: String, program: super::ops::Ops) -> super::TaskSpec {
    let mut t = forked_task(&name, Program::Ops(program), 0);
    t.policy = d.policy;
    t.rt_priority = d.rt_priority;
    t.nice = d.nice;
    t.allowed = d.allowed;
    t.uclamp = d.uclamp;
    t
}

fn err(origin: &str, path: &str, expected: String) -> SchedlabError {
    let key = if path.is_empty() { "rtapp".to_string() } else { format!("rtapp.{path}") };
    SchedlabError::spec(origin, key, format!("expected {expected}"))
}

/// One thread object, compiled.
struct ThreadDef {
    name: String,
    instances: u32,
    program: super::ops::Ops,
    /// Fork requests its program makes (indexes into `Builder::forks`).
    forks: Vec<usize>,
    /// Whether it loops forever (`loop` -1).
    forever: bool,
    policy: SchedPolicy,
    rt_priority: u32,
    nice: i32,
    allowed: Option<CpuMask>,
    /// The thread's `util_min` / `util_max`.
    uclamp: super::UclampReq,
}

/// Named resources and global settings gathered while compiling.
struct Builder<'a> {
    origin: &'a str,
    machine: &'a Machine,
    duration_ns: Option<Ns>,
    default_policy: Option<SchedPolicy>,
    /// Capacity of the calibration CPU: `run` of n us is n us of work on it.
    calib_capacity: u64,
    mem_buffer: u64,
    mutexes: Vec<String>,
    conds: Vec<String>,
    barriers: Vec<String>,
    /// Threads (instances) naming each barrier.
    barrier_users: Vec<u32>,
    /// Per timer name: the threads using it and their instance counts.
    timer_users: Vec<(String, Vec<(String, u32)>)>,
    /// CPU masks of phases (`SetAffinity` indexes).
    masks: Vec<CpuMask>,
    /// Fork events: (template name, path of the event, threads it creates
    /// per instance of the forking thread).
    forks: Vec<(String, String, u64)>,
    /// How many times the events being compiled run per instance (the
    /// enclosing loops' product); `None` = without bound.
    mult: Option<u64>,
}

/// The first key other than an event's that appears twice in an object (a
/// task name, a thread or phase property, a global key), with its path.
fn repeated_setting(v: &JVal, at: &str) -> Option<String> {
    let JVal::Obj(items) = v else { return None };
    let join = |k: &str| if at.is_empty() { k.to_string() } else { format!("{at}.{k}") };
    for (i, (k, x)) in items.iter().enumerate() {
        let event = EVENTS.iter().any(|e| k.starts_with(e)) && !matches!(k.as_str(), "resources");
        if !event && items[..i].iter().any(|(k2, _)| k2 == k) {
            return Some(join(k));
        }
        if let Some(d) = repeated_setting(x, &join(k)) {
            return Some(d);
        }
    }
    None
}

impl<'a> Builder<'a> {
    fn new(origin: &'a str, machine: &'a Machine) -> Self {
        Builder {
            origin,
            machine,
            duration_ns: None,
            default_policy: None,
            // rt-app's default calibration is "CPU0".
            calib_capacity: machine.capacity_orig(CpuId(0)) as u64,
            mem_buffer: DEFAULT_MEM_BUFFER,
            mutexes: Vec::new(),
            conds: Vec::new(),
            barriers: Vec::new(),
            barrier_users: Vec::new(),
            timer_users: Vec::new(),
            masks: Vec::new(),
            forks: Vec::new(),
            mult: Some(1),
        }
    }

    fn machine(&self) -> &'a Machine {
        self.machine
    }

    fn e(&self, path: &str, expected: impl Into<String>) -> SchedlabError {
        err(self.origin, path, expected.into())
    }

    fn global(&mut self, v: &JVal) -> Result<()> {
        let JVal::Obj(items) = v else { return Err(self.e("global", "an object")) };
        for (k, v) in items {
            let path = format!("global.{k}");
            match (k.as_str(), v) {
                ("duration", JVal::Int(-1)) => self.duration_ns = None,
                ("duration", JVal::Int(s)) if *s > 0 => self.duration_ns = Some(*s as Ns * 1_000_000_000),
                ("duration", _) => return Err(self.e(&path, "seconds, a whole number > 0, or -1 (no limit)")),
                ("default_policy", JVal::Str(s)) => self.default_policy = Some(self.policy(&path, s)?),
                ("calibration", JVal::Str(s)) => {
                    let cpu = s
                        .strip_prefix("CPU")
                        .and_then(|n| n.parse::<usize>().ok())
                        .filter(|n| *n < self.machine().nr_cpus())
                        .ok_or_else(|| {
                            self.e(
                                &path,
                                format!("CPUn with n a CPU of the machine (0-{})", self.machine().nr_cpus() - 1),
                            )
                        })?;
                    self.calib_capacity = self.machine().capacity_orig(CpuId(cpu as u32)) as u64;
                }
                // ns per loop measured on some other machine: taken as this
                // machine's full-capacity CPU.
                ("calibration", JVal::Int(n)) if *n > 0 => self.calib_capacity = 1024,
                ("calibration", _) => return Err(self.e(&path, "\"CPUn\" or a positive ns-per-loop integer")),
                ("pi_enabled", JVal::Bool(false)) => {}
                ("pi_enabled", _) => {
                    return Err(self.e(&path, "false: priority-inheritance mutexes are not modelled yet"));
                }
                ("mem_buffer_size", JVal::Int(n)) if *n > 0 => self.mem_buffer = *n as u64,
                ("mem_buffer_size", _) => return Err(self.e(&path, "a buffer size in bytes > 0")),
                // rt-app's logging, tracing and memory locking: nothing the
                // scheduler sees changes.
                ("lock_pages" | "logdir" | "log_basename" | "log_size" | "ftrace" | "gnuplot" | "io_device", _)
                | ("cumulative_slack", _) => {}
                // In rt-app's shipped use-case examples (mp3-short.json,
                // video-short.json) but not read by its current parser.
                ("frag", _) => {}
                _ => {
                    return Err(self.e(
                        &path,
                        "a global key of rt-app: duration, calibration, default_policy, pi_enabled, lock_pages, \
                         logdir, log_basename, log_size, ftrace, gnuplot, io_device, mem_buffer_size, cumulative_slack",
                    ))
                }
            }
        }
        Ok(())
    }

    fn policy(&self, path: &str, s: &str) -> Result<SchedPolicy> {
        match s {
            "SCHED_OTHER" => Ok(SchedPolicy::Normal),
            "SCHED_BATCH" => Ok(SchedPolicy::Batch),
            "SCHED_IDLE" => Ok(SchedPolicy::Idle),
            "SCHED_FIFO" => Ok(SchedPolicy::Fifo),
            "SCHED_RR" => Ok(SchedPolicy::Rr),
            "SCHED_DEADLINE" => Err(self.e(
                path,
                "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO or SCHED_RR: SCHED_DEADLINE is not modelled yet",
            )),
            _ => Err(self.e(path, format!("SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO or SCHED_RR, got '{s}'"))),
        }
    }

    fn cpus(&self, path: &str, v: &JVal) -> Result<CpuMask> {
        let nr = self.machine().nr_cpus();
        let expected = || format!("an array of CPU numbers of the machine (0-{})", nr - 1);
        let JVal::Arr(items) = v else { return Err(self.e(path, expected())) };
        let mut mask = CpuMask::new();
        for x in items {
            match x {
                JVal::Int(c) if *c >= 0 && (*c as usize) < nr => mask.set(CpuId(*c as u32)),
                _ => return Err(self.e(path, expected())),
            }
        }
        if mask.is_empty() {
            return Err(self.e(path, expected()));
        }
        Ok(mask)
    }

    /// A thread object.
    fn thread(&mut self, name: &str, v: &JVal) -> Result<ThreadDef> {
        let at = format!("tasks.{name}");
        let JVal::Obj(items) = v else { return Err(self.e(&at, "a thread object")) };
        let mut instances = 1u32;
        let mut delay = 0;
        let mut thread_loop: i64 = -1;
        let mut policy = None;
        let mut priority = None;
        let mut allowed = None;
        let mut uclamp = super::UclampReq::default();
        let mut phases: Vec<(String, &Vec<(String, JVal)>)> = Vec::new();
        let mut inline = Vec::new();
        for (k, v) in items {
            let path = format!("{at}.{k}");
            match k.as_str() {
                "instance" => instances = self.count(&path, v, 0, 100_000)? as u32,
                "delay" => delay = self.count(&path, v, 0, i64::MAX as u64 / NS_PER_US)? * NS_PER_US,
                "loop" => thread_loop = self.loop_count(&path, v)?,
                "policy" => policy = Some(self.string(&path, v).and_then(|s| self.policy(&path, s))?),
                "priority" => priority = Some(self.int(&path, v)?),
                "cpus" => allowed = Some(self.cpus(&path, v)?),
                "util_min" => uclamp.min = Some(self.count(&path, v, 0, 1024)? as u32),
                "util_max" => uclamp.max = Some(self.count(&path, v, 0, 1024)? as u32),
                "phases" => {
                    let JVal::Obj(ps) = v else { return Err(self.e(&path, "an object of phases")) };
                    for (pn, pv) in ps {
                        let JVal::Obj(p) = pv else { return Err(self.e(&format!("{path}.{pn}"), "a phase object")) };
                        phases.push((pn.clone(), p));
                    }
                }
                _ => {
                    self.refuse_unmodelled(&path, k)?;
                    inline.push((k.clone(), v.clone()));
                }
            }
        }
        if !phases.is_empty() && !inline.is_empty() {
            return Err(self.e(
                &format!("{at}.{}", inline[0].0),
                "a thread key (instance, delay, loop, policy, priority, cpus): the events of a thread with `phases` \
                 belong in its phases",
            ));
        }
        let policy = policy.or(self.default_policy).unwrap_or(SchedPolicy::Normal);
        let (rt_priority, nice) = self.priority(&format!("{at}.priority"), policy, priority)?;
        if let (Some(lo), Some(hi)) = (uclamp.min, uclamp.max) {
            if lo > hi {
                return Err(self.e(&format!("{at}.util_min"), format!("at most util_max ({hi}), got {lo}")));
            }
        }
        let mut ops = OpsBuilder::new();
        let mut timers: Vec<(String, u16)> = Vec::new();
        ops.push(Op::Start { delay });
        let body = ops.len();
        // rt-app runs the phases while thread_loop != loop: -1 forever, 0 never.
        match thread_loop {
            0 => {
                ops.push(Op::Exit);
                ops.begin_loop(1);
            }
            n if n < 0 => {
                ops.begin_forever();
            }
            n => {
                ops.begin_loop(n as u64);
            }
        }
        // Affinity changes between phases only when some phase sets cpus.
        let per_phase_cpus = phases.iter().any(|(_, p)| p.iter().any(|(k, _)| k == "cpus"));
        let thread_mult = if thread_loop < 0 { None } else { Some(thread_loop as u64) };
        let forks_before = self.forks.len();
        if phases.is_empty() {
            self.mult = thread_mult;
            self.events(&at, name, &inline, &mut ops, &mut timers, instances)?;
        } else {
            for (pn, p) in &phases {
                let path = format!("{at}.phases.{pn}");
                let mut phase_loop = 1;
                let mut phase_cpus = None;
                let (mut phase_policy, mut phase_priority) = (None, None);
                let mut events = Vec::new();
                for (k, v) in p.iter() {
                    let kp = format!("{path}.{k}");
                    match k.as_str() {
                        "loop" => {
                            phase_loop = self.count(&kp, v, 1, u64::MAX >> 1)?;
                        }
                        "cpus" => phase_cpus = Some(self.cpus(&kp, v)?),
                        "policy" => phase_policy = Some(self.string(&kp, v).and_then(|s| self.policy(&kp, s))?),
                        "priority" => phase_priority = Some(self.int(&kp, v)?),
                        _ => {
                            self.refuse_unmodelled(&kp, k)?;
                            events.push((k.clone(), v.clone()));
                        }
                    }
                }
                // set_thread_param at each phase loop: a phase with a policy
                // (its priority defaulting as the thread's does) sets it with
                // sched_setattr; one without keeps what the thread runs with.
                let phase_sched =
                    match (phase_policy, phase_priority) {
                        (Some(pol), given) => {
                            let (rt_priority, nice) = self.priority(&format!("{path}.priority"), pol, given)?;
                            Some((pol, if pol.is_rt() { rt_priority as i32 } else { nice }))
                        }
                        (None, Some(_)) => return Err(self.e(
                            &format!("{path}.priority"),
                            "a phase priority with the phase's policy beside it (rt-app would apply it to whatever \
                             policy the thread runs with then; not modelled)",
                        )),
                        (None, None) => None,
                    };
                ops.begin_loop(phase_loop);
                if let Some((policy, priority)) = phase_sched {
                    ops.push(Op::SetScheduler { policy, priority });
                }
                if per_phase_cpus {
                    // set_thread_affinity at each phase loop: the phase's
                    // cpus, else the thread's, else every CPU.
                    let m = phase_cpus.or(allowed).unwrap_or_else(|| self.machine().all_cpus());
                    ops.push(Op::SetAffinity(intern(&mut self.masks, m)));
                }
                self.mult = thread_mult.map(|m| m.saturating_mul(phase_loop));
                self.events(&path, name, &events, &mut ops, &mut timers, instances)?;
                ops.end_loop();
            }
        }
        if thread_loop < 0 && !ops.takes_time_since(body) {
            return Err(
                self.e(&at, "events that run, sleep or wait: these take no time, and looping them would spin in place")
            );
        }
        ops.end_loop();
        Ok(ThreadDef {
            name: name.to_string(),
            instances,
            program: ops.build(),
            forks: (forks_before..self.forks.len()).collect(),
            forever: thread_loop < 0,
            policy,
            rt_priority,
            nice,
            allowed,
            uclamp,
        })
    }

    /// rt-app's `priority`: the RT priority of a FIFO/RR thread (default 10),
    /// the nice value of a SCHED_OTHER one (default 0; rt-app calls
    /// `setpriority`), unused for SCHED_IDLE.
    fn priority(&self, path: &str, policy: SchedPolicy, given: Option<i64>) -> Result<(u32, i32)> {
        match policy {
            SchedPolicy::Fifo | SchedPolicy::Rr => {
                let p = given.unwrap_or(RTAPP_DEFAULT_RT_PRIORITY);
                if !(1..=99).contains(&p) {
                    return Err(self.e(path, format!("an RT priority 1..99, got {p}")));
                }
                Ok((p as u32, 0))
            }
            SchedPolicy::Normal | SchedPolicy::Batch => {
                let n = given.unwrap_or(0);
                if !(-20..=19).contains(&n) {
                    return Err(self.e(path, format!("a nice value -20..19 for SCHED_OTHER, got {n}")));
                }
                Ok((0, n as i32))
            }
            SchedPolicy::Idle => Ok((0, 0)),
        }
    }

    /// Keys rt-app knows that change scheduling in ways not modelled.
    fn refuse_unmodelled(&self, path: &str, k: &str) -> Result<()> {
        let why = match k {
            "util_min" | "util_max" => {
                "no util_min/util_max in a phase: clamps changed between phases are not modelled; give them on the thread"
            }
            "hold_ns" => "no hold_ns: not modelled",
            "taskgroup" => "no taskgroup: cgroup task groups are not modelled yet",
            "nodes_membind" => "no nodes_membind: memory placement is not modelled",
            "dl-runtime" | "dl-period" | "dl-deadline" => {
                "no SCHED_DEADLINE parameters: SCHED_DEADLINE is not modelled yet"
            }
            _ => return Ok(()),
        };
        Err(self.e(path, why))
    }

    fn int(&self, path: &str, v: &JVal) -> Result<i64> {
        match v {
            JVal::Int(n) => Ok(*n),
            other => Err(self.e(path, format!("an integer, got {}", other.kind()))),
        }
    }

    fn count(&self, path: &str, v: &JVal, min: u64, max: u64) -> Result<u64> {
        match v {
            JVal::Int(n) if *n >= 0 && (min..=max).contains(&(*n as u64)) => Ok(*n as u64),
            other => Err(self.e(path, format!("a whole number from {min} to {max}, got {}", show(other)))),
        }
    }

    fn loop_count(&self, path: &str, v: &JVal) -> Result<i64> {
        match v {
            JVal::Int(n) if *n == -1 || *n >= 0 => Ok(*n),
            other => Err(self.e(path, format!("a loop count >= 0, or -1 for forever, got {}", show(other)))),
        }
    }

    fn string<'v>(&self, path: &str, v: &'v JVal) -> Result<&'v str> {
        match v {
            JVal::Str(s) => Ok(s),
            other => Err(self.e(path, format!("a string, got {}", other.kind()))),
        }
    }
}

fn show(v: &JVal) -> String {
    match v {
        JVal::Int(n) => n.to_string(),
        other => other.kind().to_string(),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
