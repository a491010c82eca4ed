//! A real kernel's wakeup decisions replayed through schedlab's own
//! `select_task_rq_fair`.
//!
//! Each row of a decisions table is one `select_task_rq_fair` call a kernel
//! made for a wakeup (`WF_TTWU`), with what that call read: every CPU's root
//! `cfs_rq` load, `nr_running` and `cpu_capacity`, the waker's load, flips,
//! decay stamp and last wakee, the wakee's load and flips, what the idle
//! search reads (where the table has it), and the CPU the kernel returned.
//! `python/schedlab/_kernel_decisions.py` records such rows in a QEMU guest
//! with kprobes. Here each row's state is written into a
//! simulated machine of the same topology and the model's
//! `record_wakee` + `select_task_rq_fair` decide; the report counts where
//! the two CPUs agree. A row is checked on its own: no simulated history
//! enters, so a disagreement is a difference in the decision rules, or in
//! state the table does not carry (tables without the idle search's
//! columns; rows with an idle CPU are counted apart).

use serde::Serialize;

use crate::engine::build::SimConfig;
use crate::engine::core::{WF_SYNC, WF_TTWU};
use crate::engine::Sim;
use crate::error::{Result, SchedlabError};
use crate::fair::wakeup::WakeCtx;
use crate::ids::{CpuId, TaskId, NSEC_PER_SEC};
use crate::topology::Machine;
use crate::trace::PlacePath;
use crate::workload::{Action, PrimaryMetric, Program, Script, Workload};

/// One kernel decision and the state it read.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionRow {
    /// Line in the table (1-based, the header is line 1).
    pub line: usize,
    /// The waking CPU (`smp_processor_id()`).
    pub this: u32,
    /// The wakee's previous CPU (`prev_cpu`).
    pub prev: u32,
    /// `WF_SYNC` was set.
    pub sync: bool,
    /// The waker's `wakee_flips` before `record_wakee`.
    pub waker_flips: u32,
    /// `record_wakee` halved the waker's flips (its stamp was over a second old).
    pub waker_decay_due: bool,
    /// The waker's `last_wakee` was this wakee (no flip).
    pub waker_last_is_wakee: bool,
    /// The wakee's `wakee_flips`.
    pub wakee_flips: u32,
    /// The wakee's `se.avg.load_avg`.
    pub wakee_load: u64,
    /// The waker's (`current`'s) `se.avg.load_avg`.
    pub waker_load: u64,
    /// Each CPU's root `cfs_rq->avg.load_avg`.
    pub load: Vec<u64>,
    /// Each CPU's `rq->nr_running`.
    pub nr_running: Vec<u32>,
    /// Each CPU's `cfs_rq->h_nr_delayed` (0 where the table has no such column).
    pub nr_delayed: Vec<u32>,
    /// Each CPU's `rq->cpu_capacity`.
    pub capacity: Vec<u32>,
    /// What the idle search reads, where the table has it: each CPU's
    /// current task is its idle task, its `rq->ttwu_pending`, and its LLC's
    /// `sd_llc_shared->has_idle_cores` and `nr_idle_scan`; the wakee's
    /// `recent_used_cpu`.
    pub idle_state: Option<IdleState>,
    /// The CPU the kernel returned.
    pub kernel_cpu: u32,
}

/// The idle search's inputs of one row (see [`DecisionRow::idle_state`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleState {
    /// Each CPU runs its idle task.
    pub idle: Vec<bool>,
    /// Each CPU's `rq->ttwu_pending`.
    pub ttwu_pending: Vec<u32>,
    /// `has_idle_cores` of each CPU's LLC.
    pub has_idle_cores: Vec<bool>,
    /// `nr_idle_scan` of each CPU's LLC.
    pub nr_idle_scan: Vec<u32>,
    /// The wakee's `recent_used_cpu`.
    pub wakee_recent_cpu: u32,
}

impl DecisionRow {
    /// Some CPU was idle as `available_idle_cpu` sees it (no task, none
    /// pending; where the table says, running its idle task).
    pub fn has_idle_cpu(&self) -> bool {
        (0..self.nr_running.len()).any(|k| match &self.idle_state {
            Some(s) => s.idle[k] && self.nr_running[k] == 0 && s.ttwu_pending[k] == 0,
            None => self.nr_running[k] == 0,
        })
    }
}

/// Agreement over a set of rows.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Agreement {
    /// Rows.
    pub rows: u64,
    /// Rows where the model chose the kernel's CPU.
    pub agree: u64,
}

impl Agreement {
    fn add(&mut self, ok: bool) {
        self.rows += 1;
        self.agree += ok as u64;
    }
}

/// What a replay found.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ReplayReport {
    /// Every row.
    pub all: Agreement,
    /// Rows where no CPU was idle (no idle search can succeed).
    pub all_busy: Agreement,
    /// Rows with an idle CPU (the idle search decides; older tables lack
    /// its bookkeeping).
    pub with_idle: Agreement,
    /// Rows whose wakee's previous CPU was the waking CPU.
    pub colocated: Agreement,
    /// By the kernel's choice: the waking CPU, the previous CPU, another.
    pub kernel_chose_this: Agreement,
    /// See `kernel_chose_this`.
    pub kernel_chose_prev: Agreement,
    /// See `kernel_chose_this`.
    pub kernel_chose_other: Agreement,
    /// The first disagreements: (line, kernel's CPU, model's CPU).
    pub disagreements: Vec<(usize, u32, u32)>,
}

/// Disagreements listed in a report at most.
const LISTED: usize = 20;

/// The wakee, the waker and, from `FIRST_CURR`, one task per CPU to be its `curr`.
const WAKEE: TaskId = TaskId(0);
const WAKER: TaskId = TaskId(1);
const FIRST_CURR: u32 = 2;
/// The simulated clock at every decision: far enough from 0 that a decay
/// stamp one second and more in the past exists.
const NOW: u64 = 10 * NSEC_PER_SEC;

/// The table's columns of one decision, in the order a table has them.
pub const COLUMNS: [&str; 10] = [
    "this",
    "prev",
    "sync",
    "waker_flips",
    "waker_decay_due",
    "waker_last_is_wakee",
    "wakee_flips",
    "wakee_load",
    "waker_load",
    "kernel_cpu",
];
/// The wakee's `recent_used_cpu`, one of the idle search's columns.
pub const RECENT_COLUMN: &str = "wakee_recent_cpu";
/// The per-CPU columns, `{prefix}{cpu}`, by prefix: `load`, `nr` and `cap`
/// are required, `delayed` may be absent (0), the last four (the idle
/// search's, with [`RECENT_COLUMN`]) are all there or none.
pub const PER_CPU_COLUMNS: [&str; 8] =
    ["load", "nr", "cap", "delayed", "idle", "ttwu_pending", "has_idle_cores", "nr_idle_scan"];

/// A whole table's header for `nr_cpus` CPUs: what
/// `_kernel_decisions.table` writes, every column there.
pub fn columns(nr_cpus: usize) -> Vec<String> {
    let fixed = COLUMNS.iter().chain([&RECENT_COLUMN]).map(|c| c.to_string());
    fixed.chain(PER_CPU_COLUMNS.iter().flat_map(|p| (0..nr_cpus).map(move |k| format!("{p}{k}")))).collect()
}

/// Parses a decisions table (CSV with a header) for a machine of `nr_cpus`
/// CPUs; `origin` names it in errors.
pub fn parse_rows(text: &str, origin: &str, nr_cpus: usize) -> Result<Vec<DecisionRow>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let col = |name: &str| -> Result<usize> {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            SchedlabError::spec(
                origin,
                "line 1",
                format!("a header with a column `{name}` (the kernel_decisions layout)"),
            )
        })
    };
    let per_cpu = |prefix: &str, required: bool| -> Result<Option<Vec<usize>>> {
        let cols: Vec<Option<usize>> =
            (0..nr_cpus).map(|k| header.iter().position(|h| *h == format!("{prefix}{k}"))).collect();
        if cols.iter().all(Option::is_none) && !required {
            return Ok(None);
        }
        cols.iter()
            .enumerate()
            .map(|(k, c)| {
                c.ok_or_else(|| {
                    SchedlabError::spec(
                        origin,
                        "line 1",
                        format!("a column `{prefix}{k}` (one per CPU of the {nr_cpus}-CPU machine)"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    };
    let idx: Vec<usize> = COLUMNS.iter().map(|n| col(n)).collect::<Result<_>>()?;
    let [load, nr, cap, delayed, idle, pending, idle_cores, idle_scan] = PER_CPU_COLUMNS;
    let (load, nr, cap) = (per_cpu(load, true)?, per_cpu(nr, true)?, per_cpu(cap, true)?);
    let (load, nr, cap) = (load.unwrap_or_default(), nr.unwrap_or_default(), cap.unwrap_or_default());
    let delayed = per_cpu(delayed, false)?;
    let idle_cols = match (
        per_cpu(idle, false)?,
        per_cpu(pending, false)?,
        per_cpu(idle_cores, false)?,
        per_cpu(idle_scan, false)?,
        header.iter().position(|h| *h == RECENT_COLUMN),
    ) {
        (Some(i), Some(t), Some(h), Some(n), Some(r)) => Some((i, t, h, n, r)),
        (None, None, None, None, None) => None,
        _ => {
            return Err(SchedlabError::spec(
                origin,
                "line 1",
                "all of the idle search's columns (idle, ttwu_pending, has_idle_cores, nr_idle_scan per CPU, \
                 wakee_recent_cpu) or none",
            ))
        }
    };
    /// Each CPU's value of one per-CPU column, parsed by `parse`.
    fn each<T>(cols: &[usize], prefix: &str, parse: impl Fn(usize, &str) -> Result<T>) -> Result<Vec<T>> {
        cols.iter().enumerate().map(|(k, &c)| parse(c, &format!("{prefix}{k}"))).collect()
    }
    let mut rows = Vec::new();
    for (i, text) in lines.enumerate() {
        let line = i + 2;
        if text.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        let num = |c: usize, name: &str| -> Result<u64> {
            let v = fields.get(c).ok_or_else(|| {
                SchedlabError::spec(
                    origin,
                    format!("line {line}"),
                    format!("{} fields, found {}", header.len(), fields.len()),
                )
            })?;
            v.parse::<u64>().map_err(|_| {
                SchedlabError::spec(
                    origin,
                    format!("line {line}: {name}"),
                    format!("a non-negative integer, found `{v}`"),
                )
            })
        };
        let cpu = |c: usize, name: &str| -> Result<u32> {
            let v = num(c, name)?;
            if v as usize >= nr_cpus {
                return Err(SchedlabError::spec(
                    origin,
                    format!("line {line}: {name}"),
                    format!("a CPU of the {nr_cpus}-CPU machine, found {v}"),
                ));
            }
            Ok(v as u32)
        };
        let small = |c: usize, name: &str| -> Result<u32> {
            u32::try_from(num(c, name)?).map_err(|_| {
                SchedlabError::spec(origin, format!("line {line}: {name}"), "a count below 2^32".to_string())
            })
        };
        let flag = |c: usize, name: &str| -> Result<bool> {
            match num(c, name)? {
                0 => Ok(false),
                1 => Ok(true),
                v => Err(SchedlabError::spec(origin, format!("line {line}: {name}"), format!("0 or 1, found {v}"))),
            }
        };
        let names = COLUMNS;
        rows.push(DecisionRow {
            line,
            this: cpu(idx[0], names[0])?,
            prev: cpu(idx[1], names[1])?,
            sync: flag(idx[2], names[2])?,
            waker_flips: small(idx[3], names[3])?,
            waker_decay_due: flag(idx[4], names[4])?,
            waker_last_is_wakee: flag(idx[5], names[5])?,
            wakee_flips: small(idx[6], names[6])?,
            wakee_load: num(idx[7], names[7])?,
            waker_load: num(idx[8], names[8])?,
            kernel_cpu: cpu(idx[9], names[9])?,
            load: each(&load, PER_CPU_COLUMNS[0], num)?,
            nr_running: each(&nr, PER_CPU_COLUMNS[1], small)?,
            capacity: each(&cap, PER_CPU_COLUMNS[2], small)?,
            nr_delayed: match &delayed {
                Some(d) => each(d, PER_CPU_COLUMNS[3], small)?,
                None => vec![0; nr_cpus],
            },
            idle_state: match &idle_cols {
                Some((i, t, h, n, r)) => Some(IdleState {
                    idle: each(i, PER_CPU_COLUMNS[4], flag)?,
                    ttwu_pending: each(t, PER_CPU_COLUMNS[5], small)?,
                    has_idle_cores: each(h, PER_CPU_COLUMNS[6], |c, name| Ok(num(c, name)? != 0))?,
                    nr_idle_scan: each(n, PER_CPU_COLUMNS[7], small)?,
                    wakee_recent_cpu: cpu(*r, RECENT_COLUMN)?,
                }),
                None => None,
            },
        });
    }
    Ok(rows)
}

/// The simulated machine the rows are written into: `machine`'s topology,
/// under `policy`, with a wakee, a waker and one `curr` per CPU (tasks that
/// never run: the replay never advances the clock).
pub(crate) fn replay_sim(machine: Machine, policy: &str) -> Result<Sim> {
    let policy = crate::policy::parse_policy(policy)?;
    let cfg = SimConfig {
        features: policy.features,
        class: policy.class,
        seed: 1,
        trace: false,
        check_invariants: false,
        cpuset: None,
    };
    let n = machine.nr_cpus() as u32;
    let domains = crate::topology::build_sched_domains(&machine)?;
    let idle = |i: u32| {
        let program = Program::Script(Script::new(vec![Action::Compute(1_000_000)], 1));
        crate::workload::forked_task(&format!("t{i}"), program, 0)
    };
    let tasks = (0..FIRST_CURR + n).map(idle).collect();
    let w = Workload { name: "kernel-decisions".into(), ..Workload::of(tasks, PrimaryMetric::CompletionTime) };
    Sim::build(machine, domains, &w, cfg)
}

impl Sim {
    /// Writes `row`'s state into the machine and returns the CPU the model's
    /// `record_wakee` + `select_task_rq_fair` choose for it.
    ///
    /// Panics if one of the row's CPUs is not the machine's: the
    /// runqueues are indexed without bounds tests (`IdTable::get`), so a row
    /// built by hand is checked here as `parse_rows` checks a table's.
    pub fn replay_decision(&mut self, row: &DecisionRow) -> CpuId {
        let n = self.rqs.len();
        let recent = row.idle_state.as_ref().map_or(row.prev, |s| s.wakee_recent_cpu);
        assert!(
            [row.this, row.prev, recent].iter().all(|&c| (c as usize) < n),
            "decisions row at line {}: a CPU outside the {n}-CPU machine",
            row.line
        );
        // The runqueues' `curr` tasks, indexed without bounds tests too
        // (`IdTable::get`): the sim must be one from `replay_sim`.
        assert!(self.tasks.len() >= (FIRST_CURR as usize) + n, "a sim from replay_sim: a task per CPU");
        self.now = NOW;
        for k in 0..self.rqs.len() {
            let rq = &mut self.rqs[k];
            let nr = if k == row.this as usize { row.nr_running[k].max(1) } else { row.nr_running[k] };
            rq.cfs_avg.load_avg = row.load[k];
            rq.nr_running = nr;
            let delayed = row.nr_delayed[k].min(nr);
            rq.cfs.nr_queued = nr;
            rq.cfs.h_nr_runnable = nr - delayed;
            rq.cpu_capacity = row.capacity[k];
            let running = match &row.idle_state {
                Some(s) => !s.idle[k],
                None => nr > 0,
            };
            rq.ttwu_pending = row.idle_state.as_ref().map_or(0, |s| s.ttwu_pending[k]);
            rq.curr = running.then_some(TaskId(FIRST_CURR + k as u32));
            if let Some(s) = &row.idle_state {
                let llc = self.llc_of(CpuId(k as u32));
                self.set_llc_idle_search_state(llc, s.has_idle_cores[k], s.nr_idle_scan[k]);
            }
        }
        self.rqs[row.this as usize].curr = Some(WAKER);
        let waker = &mut self.tasks[WAKER.idx()];
        waker.cpu = CpuId(row.this);
        waker.avg.load_avg = row.waker_load;
        waker.wakee_flips = row.waker_flips;
        waker.wakee_flip_decay_ts = if row.waker_decay_due { 0 } else { NOW };
        waker.last_wakee = row.waker_last_is_wakee.then_some(WAKEE);
        let wakee = &mut self.tasks[WAKEE.idx()];
        wakee.cpu = CpuId(row.prev);
        wakee.avg.load_avg = row.wakee_load;
        wakee.wakee_flips = row.wakee_flips;
        // Where the table lacks it, the previous CPU makes `recent_used_cpu` a no-op.
        wakee.recent_used_cpu = CpuId(row.idle_state.as_ref().map_or(row.prev, |s| s.wakee_recent_cpu));
        self.record_wakee(WAKER, WAKEE);
        let mut ctx = WakeCtx { this_cpu: CpuId(row.this), path: PlacePath::Fallback, scanned: 0 };
        let flags = WF_TTWU | if row.sync { WF_SYNC } else { 0 };
        self.select_task_rq_fair(WAKEE, CpuId(row.prev), flags, &mut ctx)
    }
}

/// Replays every row on `sim` (from [`replay_sim`]) and counts agreement.
pub fn replay(sim: &mut Sim, rows: &[DecisionRow]) -> ReplayReport {
    let mut r = ReplayReport::default();
    for row in rows {
        let got = sim.replay_decision(row).0;
        let ok = got == row.kernel_cpu;
        r.all.add(ok);
        if row.has_idle_cpu() {
            r.with_idle.add(ok);
        } else {
            r.all_busy.add(ok);
        }
        if row.this == row.prev {
            r.colocated.add(ok);
        }
        match row.kernel_cpu {
            c if c == row.this => r.kernel_chose_this.add(ok),
            c if c == row.prev => r.kernel_chose_prev.add(ok),
            _ => r.kernel_chose_other.add(ok),
        }
        if !ok && r.disagreements.len() < LISTED {
            r.disagreements.push((row.line, row.kernel_cpu, got));
        }
    }
    r
}

#[cfg(test)]
#[path = "decision_replay_tests.rs"]
mod tests;
