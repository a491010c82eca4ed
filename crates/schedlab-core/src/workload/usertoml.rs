//! User-defined programs in TOML: tasks written in the ops primitives
//! (`ops.rs`), recognised by a `[[task]]` array. See README.md ("User
//! programs") for the format and a worked example.
//!
//! ```toml
//! duration = "1s"                 # optional: stop the run then
//! primary = "completion_time"     # or "requests_per_s"
//! pipes = { q = 16 }              # name = capacity in messages
//! mutexes = ["m"]
//! conds = ["c"]
//! barriers = ["b"]                # parties: every task instance that names it
//! semaphores = { s = 0 }          # name = initial count
//!
//! [[task]]
//! name = "producer"
//! count = 1                       # instances
//! loop = 100                      # times around `ops`; 0 = until `duration`
//! ops = [
//!   { compute = "exp:50us" },
//!   { send = "q", sync = true },
//! ]
//! ```

use super::dist::parse_dist;
use super::ops::{Op, OpsBuilder};
use super::spec::parse_duration;
use super::{
    forked_task, BarrierId, BarrierSpec, ChanId, ChanSpec, CondId, MarkKind, PrimaryMetric, Program, SchedPolicy,
    SemId, Workload,
};
use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::ids::{Ns, TaskId};
use crate::topology::Machine;
use toml::{Table, Value};

/// Whether a TOML workload is a user program (has a `task` array).
pub(crate) fn is_program(text: &str) -> bool {
    matches!(toml::from_str::<Table>(text), Ok(t) if matches!(t.get("task"), Some(Value::Array(_))))
}

/// Spin budget of a `semwait` without `spin`: a pure busy-wait.
const BUSY_WAIT_NS: Ns = 1_000_000_000_000;

fn err(origin: &str, path: &str, expected: impl Into<String>) -> SchedlabError {
    SchedlabError::spec(origin, format!("program.{path}"), format!("expected {}", expected.into()))
}

/// Named objects of a program.
#[derive(Default)]
struct Names {
    pipes: Vec<(String, u32)>,
    mutexes: Vec<String>,
    conds: Vec<String>,
    barriers: Vec<String>,
    barrier_users: Vec<u32>,
    sems: Vec<(String, u64)>,
    tasks: Vec<(String, u32, u32)>,
    /// Masks of `cpus` ops (`SetAffinity` indexes).
    masks: Vec<CpuMask>,
    /// CPUs of the machine.
    nr_cpus: usize,
    /// Per task (`tasks`' order): created by a `fork` op (`forked = true`),
    /// not at the start.
    forked: Vec<bool>,
    /// The task being compiled.
    current: usize,
    /// How many times an op at this point of the current task runs in all
    /// (its loop counts multiplied), `None` inside an endless loop.
    mult: Option<u64>,
    /// `fork` ops: (forked task, op path, times it runs, forking task).
    forks: Vec<(usize, String, Option<u64>, usize)>,
}

/// Builds a user program on `machine`.
pub(crate) fn build(text: &str, origin: &str, machine: &Machine) -> Result<Workload> {
    let top: Table = toml::from_str(text).map_err(|e| err(origin, "", format!("a TOML program: {e}")))?;
    let mut n = Names { nr_cpus: machine.nr_cpus(), ..Names::default() };
    let mut duration_ns = None;
    let mut primary = PrimaryMetric::CompletionTime;
    let mut task_tables = Vec::new();
    for (k, v) in &top {
        match (k.as_str(), v) {
            ("duration", Value::String(s)) => {
                duration_ns = Some(
                    parse_duration(s, 1_000_000_000)
                        .filter(|d| *d > 0)
                        .ok_or_else(|| err(origin, k, format!("a duration such as 2s, got '{s}'")))?,
                )
            }
            ("primary", Value::String(s)) => {
                primary = match s.as_str() {
                    "completion_time" => PrimaryMetric::CompletionTime,
                    "requests_per_s" => PrimaryMetric::Throughput,
                    _ => return Err(err(origin, k, format!("completion_time or requests_per_s, got '{s}'"))),
                }
            }
            ("pipes", Value::Table(t)) => {
                for (name, cap) in t {
                    let c = cap.as_integer().filter(|c| (1..=1 << 24).contains(c)).ok_or_else(|| {
                        err(origin, &format!("pipes.{name}"), "a capacity in messages, 1 to 16777216")
                    })?;
                    n.pipes.push((name.clone(), c as u32));
                }
            }
            ("semaphores", Value::Table(t)) => {
                for (name, init) in t {
                    let c = init
                        .as_integer()
                        .filter(|c| *c >= 0)
                        .ok_or_else(|| err(origin, &format!("semaphores.{name}"), "an initial count >= 0"))?;
                    n.sems.push((name.clone(), c as u64));
                }
            }
            ("mutexes" | "conds" | "barriers", Value::Array(a)) => {
                for (i, x) in a.iter().enumerate() {
                    let s = x.as_str().ok_or_else(|| err(origin, &format!("{k}[{i}]"), "a name"))?.to_string();
                    match k.as_str() {
                        "mutexes" => n.mutexes.push(s),
                        "conds" => n.conds.push(s),
                        _ => {
                            n.barriers.push(s);
                            n.barrier_users.push(0);
                        }
                    }
                }
            }
            ("task", Value::Array(a)) => task_tables = a.iter().collect(),
            _ => return Err(err(
                origin,
                k,
                "one of duration, primary, pipes, mutexes, conds, barriers, semaphores, task (with its value's type)",
            )),
        }
    }
    // Task names first: `unpark` may name a task defined later.
    let mut first = 0u32;
    for (i, t) in task_tables.iter().enumerate() {
        let Value::Table(t) = t else { return Err(err(origin, &format!("task[{i}]"), "a table")) };
        let name = match t.get("name") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(err(origin, &format!("task[{i}].name"), "a task name")),
        };
        let count = match t.get("count") {
            None => 1,
            Some(v) => v
                .as_integer()
                .filter(|c| (1..=100_000).contains(c))
                .ok_or_else(|| err(origin, &format!("task[{i}].count"), "a count 1..100000"))?
                as u32,
        };
        if n.tasks.iter().any(|(x, _, _)| *x == name) {
            return Err(err(origin, &format!("task[{i}].name"), format!("a name used once, got '{name}' twice")));
        }
        n.forked.push(matches!(t.get("forked"), Some(Value::Boolean(true))));
        n.tasks.push((name, first, count));
        first += count;
    }
    if task_tables.is_empty() {
        return Err(err(origin, "task", "at least one [[task]]"));
    }
    let mut w = Workload {
        name: format!("program:{origin}"),
        conds: n.conds.len() as u32,
        sems: n.sems.iter().map(|(_, c)| *c).collect(),
        duration_ns,
        ..Workload::of(Vec::new(), primary)
    };
    w.chans.extend(n.pipes.iter().map(|(_, c)| ChanSpec::queue(*c)));
    w.chans.extend(n.mutexes.iter().map(|_| ChanSpec::queue(1)));
    for (i, t) in task_tables.iter().enumerate() {
        let Value::Table(t) = t else { unreachable!("checked above") };
        task(origin, i, t, &mut n, machine, &mut w)?;
    }
    check_forks(origin, &n)?;
    w.barriers = n.barrier_users.iter().map(|&parties| BarrierSpec { parties: parties.max(1) }).collect();
    w.masks = n.masks.clone();
    Ok(w)
}

fn task(origin: &str, i: usize, t: &Table, n: &mut Names, machine: &Machine, w: &mut Workload) -> Result<()> {
    let at = format!("task[{i}]");
    let (name, _, count) = n.tasks[i].clone();
    let mut repeat = 1u64;
    let mut nice = 0;
    let mut policy = SchedPolicy::Normal;
    let mut priority = None;
    let mut allowed = None;
    let mut start_ns = 0;
    let mut footprint = 64u32;
    let mut uclamp = super::UclampReq::default();
    let mut ops = None;
    for (k, v) in t {
        let path = format!("{at}.{k}");
        let int = |lo: i64, hi: i64| {
            v.as_integer()
                .filter(|x| (lo..=hi).contains(x))
                .ok_or_else(|| err(origin, &path, format!("a whole number {lo}..={hi}")))
        };
        match k.as_str() {
            "name" | "count" => {}
            "forked" => {
                v.as_bool().ok_or_else(|| err(origin, &path, "true or false"))?;
            }
            "loop" => repeat = int(0, i64::MAX)? as u64,
            "nice" => nice = int(-20, 19)? as i32,
            "priority" => priority = Some(int(1, 99)? as u32),
            "footprint" => footprint = int(0, 1 << 30)? as u32,
            "uclamp_min" => uclamp.min = Some(int(0, 1024)? as u32),
            "uclamp_max" => uclamp.max = Some(int(0, 1024)? as u32),
            "policy" => policy = policy_of(origin, &path, v)?,
            "cpus" => {
                allowed = Some(cpu_list(origin, &path, v, machine.nr_cpus())?);
            }
            "start" => {
                let s = v.as_str().ok_or_else(|| err(origin, &path, "a duration such as 10ms"))?;
                start_ns = parse_duration(s, 1).ok_or_else(|| err(origin, &path, "a duration such as 10ms"))?;
            }
            "ops" => ops = Some(v),
            _ => {
                return Err(err(
                    origin,
                    &path,
                    "one of name, count, loop, ops, cpus, nice, policy, priority, uclamp_min, uclamp_max, start, \
                     footprint, forked",
                ))
            }
        }
    }
    if policy.is_rt() != priority.is_some() {
        return Err(err(origin, &format!("{at}.priority"), "a priority 1..99 with policy fifo or rr, and only then"));
    }
    if let (Some(lo), Some(hi)) = (uclamp.min, uclamp.max) {
        if lo > hi {
            return Err(err(origin, &format!("{at}.uclamp_min"), format!("at most uclamp_max ({hi})")));
        }
    }
    let Some(Value::Array(list)) = ops else { return Err(err(origin, &format!("{at}.ops"), "an array of ops")) };
    if repeat == 0 && w.duration_ns.is_none() {
        return Err(err(origin, &format!("{at}.loop"), "a count > 0, or a top-level duration (loop = 0 is forever)"));
    }
    if n.forked[i] && start_ns != 0 {
        return Err(err(origin, &format!("{at}.start"), "no start time for a forked task: its fork starts it"));
    }
    let mut b = OpsBuilder::new();
    if repeat == 0 {
        b.begin_forever();
    } else {
        b.begin_loop(repeat);
    }
    n.current = i;
    n.mult = (repeat != 0).then_some(repeat);
    let mut named_barriers = Vec::new();
    let mut timers = Vec::new();
    compile(origin, &format!("{at}.ops"), list, n, &mut b, &mut named_barriers, &mut timers)?;
    if !b.takes_time_since(0) {
        return Err(err(origin, &format!("{at}.ops"), "ops that compute, sleep or block: these take no time"));
    }
    b.end_loop();
    for bar in named_barriers {
        n.barrier_users[bar] += count;
    }
    let program = b.build();
    for k in 0..count {
        let label = if count == 1 { name.clone() } else { format!("{name}-{k}") };
        let mut spec = forked_task(&label, Program::Ops(program.clone()), footprint);
        spec.nice = nice;
        spec.policy = policy;
        spec.rt_priority = priority.unwrap_or(0);
        spec.allowed = allowed;
        spec.uclamp = uclamp;
        spec.start_ns = start_ns;
        if n.forked[i] {
            spec.start = super::StartKind::Spawned;
        }
        w.tasks.push(spec);
    }
    Ok(())
}

/// A CPU list (`"0-3,8"`) of CPUs of a machine of `nr` CPUs, at `path`.
fn cpu_list(origin: &str, path: &str, v: &Value, nr: usize) -> Result<CpuMask> {
    let text = v.as_str().ok_or_else(|| err(origin, path, "a CPU list such as \"0-3,8\""))?;
    let m = CpuMask::parse_list(text).map_err(|e| err(origin, path, format!("a CPU list: {e}")))?;
    if m.is_empty() || m.iter().any(|c| c.idx() >= nr) {
        return Err(err(origin, path, format!("CPUs of the machine (0-{})", nr - 1)));
    }
    Ok(m)
}

fn find(names: &[String], name: &str) -> Option<u32> {
    names.iter().position(|n| n == name).map(|i| i as u32)
}

/// A policy word: other, batch, idle, fifo or rr.
fn policy_of(origin: &str, path: &str, v: &Value) -> Result<SchedPolicy> {
    Ok(match v.as_str() {
        Some("other") => SchedPolicy::Normal,
        Some("batch") => SchedPolicy::Batch,
        Some("idle") => SchedPolicy::Idle,
        Some("fifo") => SchedPolicy::Fifo,
        Some("rr") => SchedPolicy::Rr,
        _ => return Err(err(origin, path, "other, batch, idle, fifo or rr")),
    })
}

/// Compiles one list of ops (recursively for `loop` bodies).
fn compile(
    origin: &str,
    at: &str,
    list: &[Value],
    n: &mut Names,
    b: &mut OpsBuilder,
    barriers: &mut Vec<usize>,
    timers: &mut Vec<(Ns, u16)>,
) -> Result<()> {
    const KINDS: &str = "compute, runtime, sleep, timer, send, recv, lock, unlock, wait, signal, broadcast, \
                         barrier, semwait, sempost, park, unpark, yield, cpus, policy, request, fork, loop";
    for (j, op) in list.iter().enumerate() {
        let path = format!("{at}[{j}]");
        let Value::Table(t) = op else {
            return Err(err(origin, &path, format!("an op table {{ kind = ... }}: {KINDS}")));
        };
        let Some((kind, v)) = t.iter().find(|(k, _)| KINDS.split(", ").any(|x| x == k.as_str())) else {
            return Err(err(origin, &path, format!("one op key of {KINDS}")));
        };
        let kp = format!("{path}.{kind}");
        let allowed_mods: &[&str] = match kind.as_str() {
            "send" => &["sync"],
            "sleep" => &["io"],
            "wait" => &["mutex"],
            "barrier" | "semwait" => &["spin"],
            "timer" => &["mode"],
            "unpark" => &["sync"],
            "policy" => &["priority"],
            "loop" => &["do"],
            _ => &[],
        };
        if let Some((extra, _)) = t.iter().find(|(k, _)| *k != kind && !allowed_mods.contains(&k.as_str())) {
            return Err(err(
                origin,
                &format!("{path}.{extra}"),
                format!("only {kind} and {}", allowed_mods.join(", ")),
            ));
        }
        let s = |v: &Value| v.as_str().map(str::to_string).ok_or_else(|| err(origin, &kp, "a string"));
        let dur = |v: &Value| {
            v.as_str()
                .and_then(|x| parse_duration(x, 1_000))
                .ok_or_else(|| err(origin, &kp, "a duration such as 10us (a bare number is in us)"))
        };
        let dist = |v: &Value| {
            v.as_str()
                .and_then(|x| parse_dist(x, 1_000))
                .ok_or_else(|| err(origin, &kp, "a duration or distribution: 10us, exp:25us, uniform:1us-3us"))
        };
        let named = |list: &[String], what: &str| {
            let name = s(v)?;
            find(list, &name).ok_or_else(|| err(origin, &kp, format!("a {what} declared at the top, got '{name}'")))
        };
        let pipe = |name: &str| n.pipes.iter().position(|(p, _)| p == name).map(|i| ChanId(i as u32));
        let mutex = |name: &str| find(&n.mutexes, name).map(|i| ChanId(n.pipes.len() as u32 + i));
        let flag = |key: &str| {
            t.get(key).map(|x| x.as_bool().ok_or_else(|| err(origin, &format!("{path}.{key}"), "true or false")))
        };
        match kind.as_str() {
            "compute" => {
                b.push(Op::Compute(dist(v)?));
            }
            "runtime" => {
                b.push(Op::RunFor(dur(v)?));
            }
            "sleep" => {
                // `io = true`: an I/O wait (io_schedule), which schedutil's
                // iowait boost sees on the wakeup.
                let d = dist(v)?;
                b.push(if flag("io").transpose()?.unwrap_or(false) { Op::IoSleep(d) } else { Op::Sleep(d) });
            }
            "timer" => {
                let period = dur(v)?;
                if period == 0 {
                    return Err(err(origin, &kp, "a period > 0"));
                }
                let absolute = match t.get("mode").map(|m| m.as_str()) {
                    None | Some(Some("relative")) => false,
                    Some(Some("absolute")) => true,
                    _ => return Err(err(origin, &format!("{path}.mode"), "relative or absolute")),
                };
                // One timer per distinct period in a task.
                let slot = match timers.iter().find(|(p, _)| *p == period) {
                    Some(&(_, s)) => s,
                    None => {
                        let s = b.timer_slot();
                        timers.push((period, s));
                        s
                    }
                };
                b.push(Op::Timer { slot, period, absolute });
            }
            "send" | "recv" => {
                let name = s(v)?;
                let chan =
                    pipe(&name).ok_or_else(|| err(origin, &kp, format!("a pipe declared in pipes, got '{name}'")))?;
                if kind == "send" {
                    b.push(Op::Send { chan, sync: flag("sync").transpose()?.unwrap_or(false) });
                } else {
                    b.push(Op::Recv { chan });
                }
            }
            "lock" | "unlock" => {
                let name = s(v)?;
                let m = mutex(&name)
                    .ok_or_else(|| err(origin, &kp, format!("a mutex declared in mutexes, got '{name}'")))?;
                b.push(if kind == "lock" { Op::Lock(m) } else { Op::Unlock(m) });
            }
            "wait" => {
                let cond = CondId(named(&n.conds, "condition variable")?);
                let m = match t.get("mutex") {
                    None => None,
                    Some(x) => {
                        let name = x.as_str().unwrap_or_default();
                        Some(mutex(name).ok_or_else(|| err(origin, &format!("{path}.mutex"), "a declared mutex"))?)
                    }
                };
                b.push(Op::CondWait { cond, mutex: m });
            }
            "signal" | "broadcast" => {
                let cond = CondId(named(&n.conds, "condition variable")?);
                b.push(Op::Signal { cond, all: kind == "broadcast" });
            }
            "barrier" => {
                let id = named(&n.barriers, "barrier")?;
                let spin = match t.get("spin") {
                    Some(x) => x
                        .as_str()
                        .and_then(|d| parse_duration(d, 1_000))
                        .ok_or_else(|| err(origin, &format!("{path}.spin"), "a duration"))?,
                    None => 0,
                };
                if !barriers.contains(&(id as usize)) {
                    barriers.push(id as usize);
                }
                b.push(Op::Barrier { id: BarrierId(id), spin });
            }
            "semwait" | "sempost" => {
                let name = s(v)?;
                let sem = n.sems.iter().position(|(x, _)| *x == name).map(|i| SemId(i as u32));
                let sem =
                    sem.ok_or_else(|| err(origin, &kp, format!("a semaphore declared in semaphores, got '{name}'")))?;
                if kind == "sempost" {
                    b.push(Op::SemPost(sem));
                } else {
                    let spin = match t.get("spin") {
                        Some(x) => x
                            .as_str()
                            .and_then(|d| parse_duration(d, 1_000))
                            .ok_or_else(|| err(origin, &format!("{path}.spin"), "a duration"))?,
                        None => BUSY_WAIT_NS,
                    };
                    b.push(Op::SemWait { sem, spin });
                }
            }
            "park" => {
                b.push(Op::Wait);
            }
            "yield" => {
                b.push(Op::Yield);
            }
            "policy" => {
                // sched_setattr on itself: an RT priority for fifo/rr, a nice otherwise.
                let policy = policy_of(origin, &kp, v)?;
                let pp = format!("{path}.priority");
                let given = t.get("priority").map(|x| x.as_integer().ok_or_else(|| err(origin, &pp, "a whole number")));
                let priority = match (policy.is_rt(), given.transpose()?) {
                    (true, Some(p)) if (1..=99).contains(&p) => p,
                    (true, _) => return Err(err(origin, &pp, "an RT priority 1..99 with policy fifo or rr")),
                    (false, None) => 0,
                    (false, Some(p)) if (-20..=19).contains(&p) => p,
                    (false, Some(_)) => {
                        return Err(err(origin, &pp, "a nice value -20..19 with policy other, batch or idle"))
                    }
                };
                b.push(Op::SetScheduler { policy, priority: priority as i32 });
            }
            "cpus" => {
                let m = cpu_list(origin, &kp, v, n.nr_cpus)?;
                b.push(Op::SetAffinity(super::intern(&mut n.masks, m)));
            }
            "unpark" => {
                let name = s(v)?;
                let Some(&(_, first, count)) = n.tasks.iter().find(|(x, _, _)| *x == name) else {
                    return Err(err(origin, &kp, format!("a task name, got '{name}'")));
                };
                if count != 1 {
                    return Err(err(origin, &kp, format!("a task with count = 1 ('{name}' has {count})")));
                }
                b.push(Op::Wake { task: TaskId(first), sync: flag("sync").transpose()?.unwrap_or(false) });
            }
            "request" => {
                let mark = match v.as_str() {
                    Some("start") => MarkKind::RequestStart,
                    Some("done") => MarkKind::RequestDone,
                    _ => return Err(err(origin, &kp, "start or done")),
                };
                b.push(Op::Mark(mark));
            }
            "fork" => {
                let name = v.as_str().ok_or_else(|| err(origin, &kp, "the name of a [[task]] with forked = true"))?;
                let Some(ti) = n.tasks.iter().position(|(x, _, _)| x == name) else {
                    return Err(err(origin, &kp, format!("the name of a [[task]], got '{name}'")));
                };
                if !n.forked[ti] {
                    return Err(err(origin, &kp, format!("a task with forked = true ('{name}' starts by itself)")));
                }
                let (_, first, count) = n.tasks[ti].clone();
                n.forks.push((ti, kp.clone(), n.mult, n.current));
                let slot = b.counter_slot();
                b.push(Op::Spawn { first: TaskId(first), count, slot });
            }
            "loop" => {
                let times =
                    v.as_integer().filter(|x| *x >= 1).ok_or_else(|| err(origin, &kp, "a loop count >= 1"))? as u64;
                let Some(Value::Array(body)) = t.get("do") else {
                    return Err(err(origin, &format!("{path}.do"), "an array of ops"));
                };
                let from = b.len();
                b.begin_loop(times);
                let outer = n.mult;
                n.mult = outer.and_then(|m| m.checked_mul(times));
                compile(origin, &format!("{path}.do"), body, n, b, barriers, timers)?;
                n.mult = outer;
                if !b.takes_time_since(from) {
                    return Err(err(origin, &format!("{path}.do"), "ops that compute, sleep or block"));
                }
                b.end_loop();
            }
            _ => unreachable!("KINDS lists every op"),
        }
    }
    Ok(())
}

/// Every forked task is forked by exactly one `fork` op, in a task of one
/// instance (each instance would fork the same tasks), which runs exactly as
/// many times as the forked task has instances: schedlab makes the forked
/// tasks when it builds the workload, so their number must be known.
fn check_forks(origin: &str, n: &Names) -> Result<()> {
    for (ti, (name, _, count)) in n.tasks.iter().enumerate() {
        let ops: Vec<_> = n.forks.iter().filter(|f| f.0 == ti).collect();
        if !n.forked[ti] {
            continue;
        }
        let [(_, path, times, parent)] = ops.as_slice() else {
            return Err(err(
                origin,
                &format!("task[{ti}].forked"),
                format!("one fork op naming '{name}' (found {})", ops.len()),
            ));
        };
        if n.tasks[*parent].2 != 1 {
            return Err(err(
                origin,
                path,
                "a fork in a task of count 1: each of its instances would fork the same tasks",
            ));
        }
        match times {
            None => {
                return Err(err(
                    origin,
                    path,
                    "a fork with a known number of runs: not inside an endless loop (loop = 0 or a duration)",
                ))
            }
            Some(t) if *t != *count as u64 => {
                return Err(err(
                    origin,
                    path,
                    format!("as many forks as '{name}' has instances: the op runs {t} times, count = {count}"),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "usertoml_tests.rs"]
mod tests;
