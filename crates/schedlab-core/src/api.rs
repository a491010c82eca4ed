//! The run-level API that the Python bindings call: build a run from specs,
//! run it, return results. Everything user-facing enters here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::Result;
use crate::trace::TimedEvent;

/// Set by a signal handler (through the bindings) to stop runs in progress.
/// Process-global on purpose: a signal is about the process, not a run. It
/// is only ever read by `Sim::run`, once every [`STOP_CHECK_EVENTS`] events,
/// so a run that is not stopped is byte-identical to one without the check.
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Events between two looks at [`STOP_REQUESTED`]: 4096 events take well
/// under a millisecond, so a stop is seen promptly, and one relaxed load per
/// 4096 events costs nothing measurable.
pub const STOP_CHECK_EVENTS: u64 = 4096;

/// Asks every run in this process to stop at its next check; they return
/// [`crate::SchedlabError::Interrupted`]. Safe to call from any thread.
pub fn request_stop() {
    STOP_REQUESTED.store(true, Ordering::Relaxed);
}

/// Clears a stop request, so later runs proceed.
pub fn clear_stop() {
    STOP_REQUESTED.store(false, Ordering::Relaxed);
}

/// Whether a stop has been requested.
#[inline]
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::Relaxed)
}

/// Simulated time of the last run to pass a stop check, ns, and the time it
/// will end at when known (0: it ends when its tasks do). Process-global, for
/// the CLI's progress line; written once every [`STOP_CHECK_EVENTS`] events.
static PROGRESS_NS: AtomicU64 = AtomicU64::new(0);
static PROGRESS_END_NS: AtomicU64 = AtomicU64::new(0);

/// Record a run's progress (called by `Sim::run` at its stop checks).
#[inline]
pub(crate) fn note_progress(now_ns: u64) {
    PROGRESS_NS.store(now_ns, Ordering::Relaxed);
}

/// `(simulated ns so far, end ns or 0)` of the run in progress in this
/// process (the last one to report).
pub fn progress() -> (u64, u64) {
    (PROGRESS_NS.load(Ordering::Relaxed), PROGRESS_END_NS.load(Ordering::Relaxed))
}

/// Where a machine description comes from.
#[derive(Clone, Debug)]
pub struct MachineSource {
    /// The description's text.
    pub text: String,
    /// `"toml"` or `"json"` (a Python dict serialised by the bindings).
    pub format: String,
    /// File path or preset name, used in error messages.
    pub origin: String,
}

/// Options of one run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every event and return an ftrace-format trace.
    pub trace: bool,
    /// Check engine invariants as the run goes (slower; on in tests).
    pub check_invariants: bool,
    /// Stop at this simulated time even if the workload has not finished, ns
    /// (0 = the workload's own end, with a safety cap of one simulated hour).
    pub max_time_ns: u64,
    /// Governor of every frequency domain, overriding the machine file's
    /// `[freq_domain] governor` (`--governor`): `performance`, `powersave`
    /// or `schedutil`.
    pub governor: Option<String>,
    /// Idle governor of every CPU, overriding the machine file's
    /// `[cpuidle] governor` (`--idle-governor`): `menu` or `teo`.
    pub idle_governor: Option<String>,
}

/// Where one further workload of a composed run comes from.
#[derive(Clone, Debug)]
pub struct WorkloadSource {
    /// Spec string, or TOML / JSON text.
    pub text: String,
    /// `"spec"`, `"toml"` or `"json"`.
    pub format: String,
    /// File path, or `workload` for a spec string; used in error messages.
    pub origin: String,
}

/// One run: machine, workload spec string or TOML, policy string, seed.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Machine.
    pub machine: MachineSource,
    /// Workload spec: `family:key=value,...`, or a TOML table text when
    /// `workload_format` is `"toml"`/`"json"` (which may also hold a list of
    /// workloads: `[[workload]]` tables or `workloads = [...]`).
    pub workload: String,
    /// `"spec"`, `"toml"` or `"json"`.
    pub workload_format: String,
    /// What errors in `workload` name: the file's path for a workload file.
    /// Empty: `workload` for a spec string, `workload file` otherwise.
    pub workload_origin: String,
    /// Further workloads run at the same time on the same machine (`-w A -w B`):
    /// composed after `workload`, in order (see `workload/compose.rs` for how
    /// ids, durations and metric names are merged). Empty for a plain run.
    pub extra_workloads: Vec<WorkloadSource>,
    /// Policy string, e.g. `eevdf`, `pinned`, `eevdf-SIS_UTIL`.
    pub policy: String,
    /// Seed of every random stream of the run.
    pub seed: u64,
    /// Options.
    pub options: RunOptions,
}

/// Whether a lower or a higher value of a metric is better (serialised as
/// the word Python and the CLI use: `lower`, `higher`, `neither`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better.
    Lower,
    /// Higher is better.
    Higher,
    /// Neither (a descriptive count).
    Neither,
}

/// One named metric value of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MetricValue {
    /// Registry name, e.g. `completion_time_s`, `wakeup_latency_p99_us`.
    pub name: String,
    /// Unit, e.g. `s`, `us`, `count`, `1/s`.
    pub unit: String,
    /// Value.
    pub value: f64,
    /// Better direction.
    pub better: Better,
}

/// The result of one run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunResult {
    /// Machine name.
    pub machine: String,
    /// Normalised workload spec; for a composed run, the parts' specs joined by ` + `.
    pub workload: String,
    /// Normalised spec of each part, in the order given (one for a plain run).
    pub workloads: Vec<String>,
    /// Policy string as given.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// Name of the workload's primary metric (one of `metrics`).
    pub primary: String,
    /// Every metric, in registry order.
    pub metrics: Vec<MetricValue>,
    /// Events processed by the engine (for `schedlab bench`).
    pub events_processed: u64,
    /// Events handled (`events_processed` less the stale ones: lazily
    /// cancelled run-segment ends, ticks and timers that were superseded).
    pub events_handled: u64,
    /// Simulated time at the end, ns.
    pub sim_time_ns: u64,
    /// ftrace-format trace, when asked for.
    #[serde(skip)]
    pub trace: Option<String>,
}

/// Safety cap on simulated time when a workload has no duration: one hour.
const MAX_SIM_TIME_NS: u64 = 3600 * crate::ids::NSEC_PER_SEC;

/// Events an interrupted run keeps in its trace (the last ones). Rendering
/// is about 1 µs per event (~100 bytes of text each), so 200 000 events are
/// ~0.2 s and ~20 MB: enough to see what the run was doing when stopped,
/// while a stop still ends the command well within a second.
const INTERRUPTED_TRACE_EVENTS: usize = 200_000;

/// The ftrace text of the last `cap` of `events`, with a comment line
/// saying how many were left out when some were.
fn render_trace_tail(
    names: Vec<String>,
    prios: Vec<i32>,
    kthreads: &[bool],
    nr_cpus: usize,
    events: &[TimedEvent],
    cap: usize,
) -> String {
    let keep = events.len().min(cap);
    let text =
        crate::trace::ftrace::write_ftrace_tasks(names, prios, kthreads, nr_cpus, &events[events.len() - keep..]);
    if keep < events.len() {
        format!("# schedlab: only the last {keep} of {} events are kept\n{text}", events.len())
    } else {
        text
    }
}

/// Run one simulation.
pub fn run(spec: &RunSpec) -> Result<RunResult> {
    run_keeping_trace(spec).map_err(|f| f.error)
}

/// A run that failed: its error and, when a trace was asked for and the
/// simulation had started, the trace up to the failure.
#[derive(Debug)]
pub struct FailedRun {
    /// Why the run failed.
    pub error: crate::SchedlabError,
    /// The ftrace text of the events before the failure.
    pub partial_trace: Option<String>,
}

impl From<crate::SchedlabError> for FailedRun {
    fn from(error: crate::SchedlabError) -> Self {
        FailedRun { error, partial_trace: None }
    }
}

/// [`run`], but a run that fails after it started keeps its trace so far,
/// for the user to see what led to the failure.
pub fn run_keeping_trace(spec: &RunSpec) -> std::result::Result<RunResult, FailedRun> {
    run_inner(spec, None)
}

/// [`run`] writing its trace to `file` while it goes (whatever
/// `spec.options.trace` says), so the trace never has to fit in memory;
/// the result's `trace` is `None`. A run that fails or is interrupted keeps
/// the trace so far, marked incomplete at its end.
pub fn run_to_trace_file(spec: &RunSpec, file: &crate::trace::TraceFile) -> std::result::Result<RunResult, FailedRun> {
    run_inner(spec, Some(file))
}

fn run_inner(spec: &RunSpec, file: Option<&crate::trace::TraceFile>) -> std::result::Result<RunResult, FailedRun> {
    let mut machine = crate::topology::parse_machine(&spec.machine.text, &spec.machine.format, &spec.machine.origin)?;
    if let Some(g) = &spec.options.governor {
        crate::topology::set_governor(&mut machine, g, "--governor")?;
    }
    if let Some(g) = &spec.options.idle_governor {
        crate::topology::set_idle_governor(&mut machine, g, "--idle-governor")?;
    }
    let domains = crate::topology::build_sched_domains(&machine)?;
    let (wl_text, wl_format) = (spec.workload.as_str(), spec.workload_format.as_str());
    let origin = match (spec.workload_origin.as_str(), wl_format) {
        ("", "spec") => "workload",
        ("", _) => "workload file",
        (given, _) => given,
    };
    let mut parts = crate::workload::build_workloads(wl_text, wl_format, origin, &machine)?;
    for (i, extra) in spec.extra_workloads.iter().enumerate() {
        // Spec strings are told apart by position, as `-w` gave them.
        let origin = if extra.format == "spec" { format!("workload {}", i + 2) } else { extra.origin.clone() };
        parts.extend(crate::workload::build_workloads(&extra.text, &extra.format, &origin, &machine)?);
    }
    let composed = crate::workload::compose(parts)?;
    let part_names: Vec<String> = composed.parts.iter().map(|p| p.name.clone()).collect();
    let prefixes: Vec<Option<String>> = composed.parts.iter().map(|p| p.metric_prefix.clone()).collect();
    let workload = composed.workload;
    let policy = crate::policy::parse_policy(&spec.policy)?;
    if policy.features.on(crate::features::Feat::remote_cpufreq_update)
        && machine.cpufreq.governor != Some(crate::topology::Governor::Schedutil)
    {
        return Err(crate::SchedlabError::spec(
            "policy",
            &spec.policy,
            "no remote_cpufreq_update without schedutil: it changes when schedutil updates a frequency request; \
             give the machine [freq_domain] governor = \"schedutil\" or run with --governor schedutil",
        )
        .into());
    }
    crate::engine::uclamp::check_uclamp_supported(&workload, &policy, &spec.policy)?;
    let cfg = crate::engine::build::SimConfig {
        features: policy.features,
        class: policy.class,
        seed: spec.seed,
        trace: spec.options.trace || file.is_some(),
        check_invariants: spec.options.check_invariants,
        cpuset: policy.cpuset(&machine),
    };
    let machine_name = machine.name.clone();
    let mut sim = crate::engine::Sim::build(machine, domains, &workload, cfg)?;
    sim.collector.set_parts(&composed.task_part, &prefixes);
    let writer = match file {
        Some(f) => Some(open_trace_file(&sim, f)?),
        None => None,
    };
    if let Some(w) = &writer {
        let w = std::rc::Rc::clone(w);
        sim.trace_sink = Some(Box::new(move |events| w.borrow_mut().write_events(events)));
    }
    let max = if spec.options.max_time_ns > 0 { spec.options.max_time_ns } else { MAX_SIM_TIME_NS };
    PROGRESS_NS.store(0, Ordering::Relaxed);
    let end = workload.duration_ns.map_or(spec.options.max_time_ns, |d| d.min(max));
    PROGRESS_END_NS.store(end, Ordering::Relaxed);
    let mut outcome = sim.run(max).and_then(|()| {
        if spec.options.max_time_ns == 0 && workload.duration_ns.is_none() && sim.alive > 0 {
            // The safety cap, not the workload, ended the run: its metrics would
            // describe an unfinished workload.
            return Err(crate::SchedlabError::Runtime(format!(
                "the workload did not finish within {} s of simulated time ({} tasks still alive); \
                 give it a duration or less work",
                MAX_SIM_TIME_NS / crate::ids::NSEC_PER_SEC,
                sim.alive
            )));
        }
        Ok(())
    });
    if let (Some(w), Some(f)) = (writer, file) {
        // Drain what the run kept since the last batch, then close the file.
        outcome = outcome.and_then(|()| sim.drain_trace(1));
        sim.trace_sink = None;
        let w = std::rc::Rc::try_unwrap(w).map_err(|_| runtime("the trace writer is still shared"))?.into_inner();
        let incomplete = outcome.as_ref().err().map(|e| e.to_string());
        if incomplete.is_some() {
            // Whatever the failure left unwritten still goes in, before the marker.
            let mut w = w;
            if let Some(events) = sim.trace.take() {
                let _ = w.write_events(&events);
            }
            let _ = w.finish(incomplete.as_deref());
        } else {
            w.finish(None).map_err(|e| runtime(format!("cannot write the trace to {}: {e}", f.path.display())))?;
        }
        if let Err(error) = outcome {
            return Err(FailedRun { error, partial_trace: None });
        }
        sim.trace = None;
        outcome = Ok(());
    }
    let nr_cpus = sim.machine.nr_cpus();
    // The engine's tasks: the workload's plus the kernel threads it adds (ksoftirqd/N).
    let names: Vec<String> = sim.tasks.iter().map(|t| t.name.clone()).collect();
    let prios: Vec<i32> = sim.tasks.iter().map(|t| t.prio).collect();
    let kthreads: Vec<bool> = sim.tasks.iter().map(|t| t.kthread).collect();
    // An interrupted run keeps only the tail of its trace: rendering millions
    // of events would take seconds, and the user asked to stop now.
    let interrupted = matches!(outcome, Err(crate::SchedlabError::Interrupted { .. }));
    let cap = if interrupted { INTERRUPTED_TRACE_EVENTS } else { usize::MAX };
    let trace = sim.trace.take().map(|events| render_trace_tail(names, prios, &kthreads, nr_cpus, &events, cap));
    if let Err(error) = outcome {
        return Err(FailedRun { error, partial_trace: trace });
    }
    let end = sim.now;
    let metrics = sim.collector.finish(end);
    let primary = match workload.primary {
        crate::workload::PrimaryMetric::CompletionTime => "completion_time_s",
        crate::workload::PrimaryMetric::Throughput => "requests_per_s",
    }
    .to_string();
    Ok(RunResult {
        machine: machine_name,
        workload: workload.name.clone(),
        workloads: part_names,
        policy: spec.policy.clone(),
        seed: spec.seed,
        primary,
        metrics,
        events_processed: sim.stats.events,
        events_handled: sim.stats.handled,
        sim_time_ns: end,
        trace,
    })
}

fn runtime(msg: impl Into<String>) -> FailedRun {
    FailedRun::from(crate::SchedlabError::Runtime(msg.into()))
}

/// Open `file` for the tasks of `sim`.
fn open_trace_file(
    sim: &crate::engine::Sim,
    file: &crate::trace::TraceFile,
) -> std::result::Result<std::rc::Rc<std::cell::RefCell<crate::trace::file::TraceFileWriter>>, FailedRun> {
    let names: Vec<String> = sim.tasks.iter().map(|t| t.name.clone()).collect();
    let prios: Vec<i32> = sim.tasks.iter().map(|t| t.prio).collect();
    let kthreads: Vec<bool> = sim.tasks.iter().map(|t| t.kthread).collect();
    let tasks = crate::trace::file::TraceTasks {
        names: &names,
        prios: &prios,
        kthreads: &kthreads,
        nr_cpus: sim.machine.nr_cpus(),
    };
    let w = crate::trace::file::TraceFileWriter::create(file, &tasks)
        .map_err(|e| runtime(format!("cannot write the trace to {}: {e}", file.path.display())))?;
    Ok(std::rc::Rc::new(std::cell::RefCell::new(w)))
}

/// `schedlab topo show`: the machine's CPUs and sched domains, as text
/// (`json = false`) or a JSON document.
pub fn topo_show(machine: &MachineSource, json: bool) -> Result<String> {
    let m = crate::topology::parse_machine(&machine.text, &machine.format, &machine.origin)?;
    let d = crate::topology::build_sched_domains(&m)?;
    if json {
        Ok(serde_json::to_string_pretty(&crate::topology::render_json(&m, &d)).unwrap_or_default())
    } else {
        Ok(crate::topology::render_text(&m, &d))
    }
}

/// `schedlab topo import`: a machine TOML from the sysfs tree under `root`
/// (`/sys`, or a copy of it holding `devices/system/cpu`); see
/// [`crate::topology::sysfs`] for what is read and what is refused.
pub fn topo_import(root: &str) -> Result<String> {
    crate::topology::import_sysfs(std::path::Path::new(root))
}

/// `schedlab kernel-decisions check`: a real kernel's wakeup decisions (the
/// table `python/schedlab/_kernel_decisions.py` writes) replayed through the
/// model's `select_task_rq_fair` on `machine` under `policy`; the report as
/// JSON ([`crate::decision_replay::ReplayReport`]).
pub fn replay_decisions(machine: &MachineSource, policy: &str, table: &str, table_origin: &str) -> Result<String> {
    let m = crate::topology::parse_machine(&machine.text, &machine.format, &machine.origin)?;
    let rows = crate::decision_replay::parse_rows(table, table_origin, m.nr_cpus())?;
    let mut sim = crate::decision_replay::replay_sim(m, policy)?;
    let report = crate::decision_replay::replay(&mut sim, &rows);
    Ok(serde_json::to_string(&report).unwrap_or_default())
}

/// The header of a decisions table for `nr_cpus` CPUs (what
/// `schedlab kernel-decisions record` writes and `replay_decisions` reads).
pub fn decision_columns(nr_cpus: usize) -> Vec<String> {
    crate::decision_replay::columns(nr_cpus)
}

/// One entry of `schedlab policy list`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PolicyEntry {
    /// Name.
    pub name: String,
    /// `"policy"`, `"profile"` or `"feature"`.
    pub kind: String,
    /// Default state for features (`true` = on in `eevdf`).
    pub default_on: bool,
    /// One line.
    pub summary: String,
    /// For features: the metric that shows it acting (empty for policies).
    pub shown_by: String,
}

/// The fair class's tunables as the model sets them on a machine of
/// `nr_cpus` CPUs, named as the kernel's `/sys/kernel/debug/sched/` files
/// name them, so that a recording of a real kernel (which stores those files
/// where debugfs is readable) can be checked against the simulation:
/// `base_slice_ns` (`sysctl_sched_base_slice`, 0.70 ms scaled by
/// `get_update_sysctl_factor`), `migration_cost_ns`, `nr_migrate`, and
/// `tunable_scaling` (1, `SCHED_TUNABLESCALING_LOG`, the only scaling
/// modelled).
pub fn kernel_tunables(nr_cpus: usize) -> Vec<(&'static str, u64)> {
    vec![
        ("base_slice_ns", crate::fair::eevdf::base_slice_ns(nr_cpus)),
        ("migration_cost_ns", crate::tunables::SYSCTL_SCHED_MIGRATION_COST_NS),
        ("nr_migrate", crate::fair::balance::SYSCTL_SCHED_NR_MIGRATE as u64),
        ("tunable_scaling", 1),
    ]
}

/// Policies, kernel profiles and features.
pub fn policy_list() -> Vec<PolicyEntry> {
    let mut v: Vec<PolicyEntry> = crate::policy::BASES
        .iter()
        .map(|b| PolicyEntry {
            name: b.name.into(),
            kind: b.kind.into(),
            default_on: false,
            summary: b.summary.into(),
            shown_by: String::new(),
        })
        .collect();
    for &f in crate::features::Feat::ALL {
        v.push(PolicyEntry {
            name: f.name().into(),
            kind: "feature".into(),
            default_on: f.default_on(),
            summary: f.summary().into(),
            shown_by: crate::feature_metrics::shown_by(f).into(),
        });
    }
    v
}

/// `schedlab policy show`: what a policy string expands to, as JSON: the base
/// policy or profile, the class and its parameters, the cpuset, every feature
/// with its state, and the features that differ from mainline (`eevdf`).
pub fn policy_show(policy: &str) -> Result<String> {
    let p = crate::policy::parse_policy(policy)?;
    let mainline = crate::features::Features::mainline();
    let is_fair = !p.class.is_peer();
    let features: Vec<serde_json::Value> = crate::features::Feat::ALL
        .iter()
        .map(|&f| {
            serde_json::json!({
                "name": f.name(),
                "on": p.features.on(f),
                "mainline": f.default_on(),
                "summary": f.summary(),
            })
        })
        .collect();
    let changed: Vec<String> = crate::features::Feat::ALL
        .iter()
        .filter(|&&f| p.features.on(f) != mainline.on(f))
        .map(|&f| format!("{}{}", if p.features.on(f) { "+" } else { "-" }, f.name()))
        .collect();
    let class = match p.class {
        crate::policy::ClassKind::Fair => serde_json::json!({"name": "fair"}),
        crate::policy::ClassKind::Cosmos(c) => serde_json::json!({
            "name": "cosmos",
            "slice_ns": c.slice_ns,
            "slice_lag_ns": c.slice_lag_ns,
            "busy_pct": c.busy_pct,
            "deferred_wakeup": c.deferred_wakeup,
        }),
        crate::policy::ClassKind::Bmq(b) => serde_json::json!({"name": "bmq", "slice_ns": b.slice_ns}),
    };
    let doc = serde_json::json!({
        "policy": p.name,
        "base": p.base,
        "class": class,
        "cpuset": match p.confine {
            crate::policy::Confine::None => serde_json::Value::Null,
            crate::policy::Confine::OneThreadPerCore => "one hardware thread per core".into(),
        },
        // Features steer the fair class only; under a peer class they are inert.
        "features_apply": is_fair,
        "changed_from_mainline": changed,
        "features": features,
    });
    Ok(doc.to_string())
}

/// `schedlab workload list`: the workload families and their parameters, as JSON.
pub fn workload_list() -> String {
    serde_json::to_string(&crate::workload::spec::workload_families()).unwrap_or_default()
}

/// `schedlab analyze`: the metrics of a real (or simulated) ftrace text, by
/// the same collector that measures simulated runs. Without a machine
/// description every CPU counts as its own core in one LLC. Returns JSON:
/// `{"metrics": [...], "events": N, "tasks": N, "nr_cpus": N, "bad_lines": N,
/// "first_bad_line": N|null, "reversed_lines": N, "first_reversed_line": N|null,
/// "inferred_switches": N}` (switches the trace lost, recovered from later
/// lines' task columns).
pub fn analyze_trace(text: &str, origin: &str) -> Result<String> {
    analyze_trace_on(text, origin, None, &TaskFilter::default())
}

/// Which tasks of a trace the scheduler metrics are about: a task counts
/// when its comm matches one of `comms` (shell-style `*` and `?`) or its pid
/// is one of `pids`; with neither, every task counts.
#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    /// Comm patterns.
    pub comms: Vec<String>,
    /// pids.
    pub pids: Vec<u32>,
}

impl TaskFilter {
    fn is_empty(&self) -> bool {
        self.comms.is_empty() && self.pids.is_empty()
    }

    fn matches(&self, comm: &str, pid: u32) -> bool {
        self.pids.contains(&pid) || self.comms.iter().any(|p| glob_match(p.as_bytes(), comm.as_bytes()))
    }
}

/// Shell-style match of `name` against `pat` (`*` any run, `?` one byte).
fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n, mut star, mut mark) = (0, 0, None, 0);
    while n < name.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// `schedlab analyze --machine M --comm ... --pid ...`: the metrics of a
/// trace with `machine`'s topology (migration distances, placement
/// fractions), the scheduler metrics restricted to the tasks `filter` keeps.
pub fn analyze_trace_on(
    text: &str,
    origin: &str,
    machine: Option<&MachineSource>,
    filter: &TaskFilter,
) -> Result<String> {
    let parsed = crate::trace::ftrace_read::read_ftrace(text, origin)?;
    let mut ctx = match machine {
        None => crate::metrics::MetricsContext::flat(parsed.nr_cpus),
        Some(m) => {
            let machine = crate::topology::parse_machine(&m.text, &m.format, &m.origin)?;
            if parsed.nr_cpus > machine.nr_cpus() {
                return Err(crate::SchedlabError::spec(
                    origin,
                    "cpu",
                    format!(
                        "CPUs below {} (machine {}), the trace has {}",
                        machine.nr_cpus(),
                        machine.name,
                        parsed.nr_cpus
                    ),
                ));
            }
            crate::metrics::MetricsContext::for_trace_on(&machine)
        }
    };
    if !filter.is_empty() {
        ctx.selection = parsed.names.iter().zip(&parsed.pids).map(|(n, &pid)| filter.matches(n, pid)).collect();
    }
    ctx.primary = crate::workload::PrimaryMetric::CompletionTime;
    let metrics = crate::metrics::collect(ctx, &parsed.events, None);
    let selected = (!filter.is_empty())
        .then(|| parsed.names.iter().zip(&parsed.pids).filter(|(n, p)| filter.matches(n, **p)).count());
    let doc = serde_json::json!({
        "metrics": metrics,
        "events": parsed.events.len(),
        "tasks": parsed.names.len(),
        "selected_tasks": selected,
        "nr_cpus": parsed.nr_cpus,
        "bad_lines": parsed.bad_lines,
        "first_bad_line": parsed.first_bad_line,
        "reversed_lines": parsed.reversed_lines,
        "first_reversed_line": parsed.first_reversed_line,
        "inferred_switches": parsed.inferred_switches,
    });
    Ok(doc.to_string())
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
