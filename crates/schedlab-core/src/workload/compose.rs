//! Composed workloads: several workloads on one machine at once (`-w A -w B`),
//! merged into one [`Workload`] the engine runs.
//!
//! Each part's ids are shifted past the previous parts' (task ids are
//! positions in `Workload.tasks`, channel and barrier ids positions in
//! `chans`/`barriers`), so every part keeps its own pipes, futex words and
//! barriers; programs learn their new ids through [`Program::offset_ids`].
//!
//! Merged fields:
//! * `irqs`: concatenated;
//! * `host`: the one part's that has it (`overcommit`); two hosts, or a host
//!   beside a `stall` source (two models of the same stalls), are refused;
//! * `duration_ns`: the longest of the parts' durations (a part without one
//!   ends when its tasks exit; the run ends when every non-noise task has
//!   exited or the longest duration has passed);
//! * `warmup_ns`, `primary`: the main part's (below);
//! * `name`: the parts' normalised names joined by ` + `.
//!
//! Metrics: the *main* part is the first one that is not noise (all of whose
//! tasks are `noise`, or which has none: `irq`); its workload metrics keep
//! their names. Every further non-noise part's workload metrics are reported
//! again under the prefix `wN.`, N its 1-based position in the list
//! (`w2.completion_time_s`). Noise parts contribute no workload metric.
//! System metrics (latencies of every task, migrations, idle time) cover the
//! whole machine.

use super::{Action, BarrierId, ChanId, CondId, PrimaryMetric, Program, SemId, Workload};
use crate::error::{Result, SchedlabError};
use crate::ids::TaskId;
use crate::topology::Machine;

/// How far one part's ids move in the composed workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdOffset {
    /// Added to every `TaskId`.
    pub task: u32,
    /// Added to every `ChanId`.
    pub chan: u32,
    /// Added to every `BarrierId`.
    pub barrier: u32,
    /// Added to every `CondId`.
    pub cond: u32,
    /// Added to every `SemId`.
    pub sem: u32,
    /// Added to every mask index of `SetAffinity`.
    pub mask: u32,
}

impl IdOffset {
    /// A channel id of the part, in the composed workload.
    #[inline]
    pub fn chan(&self, c: ChanId) -> ChanId {
        ChanId(c.0 + self.chan)
    }

    /// A barrier id of the part, in the composed workload.
    #[inline]
    pub fn barrier(&self, b: BarrierId) -> BarrierId {
        BarrierId(b.0 + self.barrier)
    }

    /// A condition variable id of the part, in the composed workload.
    #[inline]
    pub fn cond(&self, c: CondId) -> CondId {
        CondId(c.0 + self.cond)
    }

    /// A semaphore id of the part, in the composed workload.
    #[inline]
    pub fn sem(&self, s: SemId) -> SemId {
        SemId(s.0 + self.sem)
    }

    /// A task id of the part, in the composed workload.
    #[inline]
    pub fn task(&self, t: TaskId) -> TaskId {
        TaskId(t.0 + self.task)
    }

    /// An action with its ids shifted.
    pub fn action(&self, a: Action) -> Action {
        match a {
            Action::Send { chan, msg, sync } => Action::Send { chan: self.chan(chan), msg, sync },
            Action::Recv { chan } => Action::Recv { chan: self.chan(chan) },
            Action::Wake { task, sync } => Action::Wake { task: self.task(task), sync },
            Action::Barrier { id, spin_ns } => Action::Barrier { id: self.barrier(id), spin_ns },
            Action::CondWait { cond } => Action::CondWait { cond: self.cond(cond) },
            Action::CondSignal { cond, all } => Action::CondSignal { cond: self.cond(cond), all },
            Action::SemWait { sem, spin_ns } => Action::SemWait { sem: self.sem(sem), spin_ns },
            Action::SemPost { sem } => Action::SemPost { sem: self.sem(sem) },
            Action::SetAffinity { mask } => Action::SetAffinity { mask: mask + self.mask },
            Action::Spawn { task } => Action::Spawn { task: self.task(task) },
            other => other,
        }
    }
}

impl Program {
    /// Shifts every task, channel and barrier id the program holds (or will
    /// compute) by `off`. Must be called before the program's first step.
    pub fn offset_ids(&mut self, off: &IdOffset) {
        match self {
            Program::Script(s) => s.actions.iter_mut().for_each(|a| *a = off.action(*a)),
            Program::HackbenchSender(p) => p.offset_ids(off),
            Program::HackbenchReceiver(p) => p.offset_ids(off),
            Program::SchbenchMessage(p) => p.offset_ids(off),
            Program::SchbenchWorker(p) => p.offset_ids(off),
            Program::WorkqueueManager(p) => p.offset_ids(off),
            Program::WorkqueueWorker(p) => p.offset_ids(off),
            Program::Ksoftirqd(p) => p.chan = off.chan(p.chan),
            Program::Ops(p) => p.offset_ids(off),
            Program::ChameneosBroker(p) => p.offset_ids(off),
            Program::KvServer(p) => p.offset_ids(off),
            Program::KvClient(p) => p.offset_ids(off),
            Program::Sieve(_) | Program::Periodic(_) => {}
        }
    }
}

/// One part of a composed workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadPart {
    /// Its normalised spec.
    pub name: String,
    /// All its tasks are noise (or it has none): no workload metric.
    pub noise: bool,
    /// Prefix of its workload metrics: `""` for the main part, `wN.` for
    /// another non-noise part, `None` for a noise part.
    pub metric_prefix: Option<String>,
    /// Its primary metric.
    pub primary: PrimaryMetric,
}

/// A composed workload and where each task came from.
#[derive(Clone, Debug)]
pub struct Composed {
    /// The merged workload.
    pub workload: Workload,
    /// The parts, in the order given.
    pub parts: Vec<WorkloadPart>,
    /// Index into `parts` of each task, indexed by `TaskId`.
    pub task_part: Vec<u32>,
    /// Index of the main part.
    pub main: usize,
}

/// Merges built workloads into one (see the module doc). Errors when every
/// part is noise: nothing would end the run.
pub fn compose(parts: Vec<Workload>) -> Result<Composed> {
    let is_noise = |w: &Workload| w.tasks.iter().all(|t| t.noise);
    let Some(main) = parts.iter().position(|w| !is_noise(w)) else {
        return Err(SchedlabError::spec(
            "workload",
            "workload",
            "expected at least one workload whose tasks end (a benchmark), got only noise \
             (rt-periodic, kworkers, irq, stall, overcommit)",
        ));
    };
    let mut out = Workload { warmup_ns: parts[main].warmup_ns, ..Workload::of(Vec::new(), parts[main].primary) };
    let mut info = Vec::with_capacity(parts.len());
    let mut task_part = Vec::new();
    let mut names = Vec::with_capacity(parts.len());
    for (i, w) in parts.into_iter().enumerate() {
        let noise = is_noise(&w);
        let metric_prefix = match (noise, i == main) {
            (true, _) => None,
            (false, true) => Some(String::new()),
            (false, false) => Some(format!("w{}.", i + 1)),
        };
        info.push(WorkloadPart { name: w.name.clone(), noise, metric_prefix, primary: w.primary });
        let off = IdOffset {
            task: out.tasks.len() as u32,
            chan: out.chans.len() as u32,
            barrier: out.barriers.len() as u32,
            cond: out.conds,
            sem: out.sems.len() as u32,
            mask: out.masks.len() as u32,
        };
        for mut t in w.tasks {
            t.program.offset_ids(&off);
            out.tasks.push(t);
            task_part.push(i as u32);
        }
        out.chans.extend(w.chans);
        out.barriers.extend(w.barriers);
        out.conds += w.conds;
        out.sems.extend(w.sems);
        out.masks.extend(w.masks);
        out.irqs.extend(w.irqs);
        if w.host.is_some() {
            if out.host.is_some() {
                return Err(SchedlabError::spec("workload", "overcommit", "at most one overcommit host, got two"));
            }
            out.host = w.host;
        }
        out.duration_ns = match (out.duration_ns, w.duration_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        names.push(w.name);
    }
    if out.host.is_some() && out.irqs.iter().any(|q| !q.accounted) {
        return Err(SchedlabError::spec(
            "workload",
            "overcommit",
            "either an overcommit host or stall sources (two models of a vCPU's stalls), not both",
        ));
    }
    out.name = names.join(" + ");
    Ok(Composed { workload: out, parts: info, task_part, main })
}

/// Builds every workload of one source. A spec string is one workload. A
/// TOML / JSON document is one workload (a table with `family`), or several:
/// an array of tables under `workload` (`[[workload]]` in TOML), or an array
/// under `workloads` whose items are spec strings or tables. Items' errors
/// name `origin workload[i]` (1-based).
pub fn build_workloads(text: &str, format: &str, origin: &str, machine: &Machine) -> Result<Vec<Workload>> {
    let doc: serde_json::Value = match format {
        "toml" => match toml::from_str::<toml::Table>(text) {
            Ok(t) => serde_json::to_value(t).unwrap_or(serde_json::Value::Null),
            Err(_) => return Ok(vec![super::build_workload(text, format, origin, machine)?]),
        },
        "json" => match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => return Ok(vec![super::build_workload(text, format, origin, machine)?]),
        },
        _ => return Ok(vec![super::build_workload(text, format, origin, machine)?]),
    };
    let list = doc.as_object().and_then(|o| match (o.get("workload"), o.get("workloads")) {
        (Some(serde_json::Value::Array(a)), None) | (None, Some(serde_json::Value::Array(a))) => Some((a, o.len())),
        _ => None,
    });
    let Some((items, nr_keys)) = list else {
        return Ok(vec![super::build_workload(text, format, origin, machine)?]);
    };
    if nr_keys != 1 {
        return Err(SchedlabError::spec(
            origin,
            "workload",
            "expected only the workload list (`[[workload]]` tables or `workloads = [...]`), got other keys beside it",
        ));
    }
    if items.is_empty() {
        return Err(SchedlabError::spec(origin, "workload", "expected at least one workload, got an empty list"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let o = format!("{origin} workload[{}]", i + 1);
            match item {
                serde_json::Value::String(s) => super::build_workload(s, "spec", &o, machine),
                serde_json::Value::Object(_) => super::build_workload(&item.to_string(), "json", &o, machine),
                _ => Err(SchedlabError::spec(&o, "workload", "expected a spec string or a table")),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
