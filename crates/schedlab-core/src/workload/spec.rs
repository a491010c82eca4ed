//! Workload specs: `family:key=value,...`, or a TOML / JSON table with
//! `family = "..."` and the same keys, turned into a [`Workload`].
//!
//! Each family declares its parameters in a table of [`ParamDef`]s (name,
//! kind, default, unit, doc); parsing, validation, error messages, the
//! normalised name and `schedlab workload list` all come from that table, so
//! a parameter cannot be documented one way and parsed another.

use super::dist::{format_dist, parse_dist};
use super::sched_keys::{take_sched_keys, PolicyDefault, SCHED_KEY_DOCS};
use super::wakee_flips::{apply_parent_wakee_flips, build_order, take_parent_wakee_flips, ForkOrder};
use super::{
    android, chameneos, dbquery, hackbench, irq, kvcache, nas, noise, ompbarrier, overcommit, pgbench, pipe, schbench,
    sieve, stall, video, workqueue, Dist, Workload,
};
use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::ids::Ns;
use crate::topology::Machine;

/// Key/value pairs of a spec, in the order given.
type Pairs = Vec<(String, String)>;

/// One parameter of a workload family, for `schedlab workload list`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ParamDoc {
    /// Key, as written in a spec.
    pub name: String,
    /// Unit or accepted form (`count`, `count|N%`, `us`, `KiB`, `pipe|socket` ...).
    pub unit: String,
    /// Default value (`auto` = derived from other parameters or the machine; see doc).
    pub default: String,
    /// What it means, and the trade-off of changing it.
    pub doc: String,
}

/// A workload family, for `schedlab workload list`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FamilyDoc {
    /// Family name, the part before `:` in a spec.
    pub name: String,
    /// One line saying what it models.
    pub summary: String,
    /// Its tasks and how they block and wake, in a few lines.
    pub structure: String,
    /// The program or document it was modelled on.
    pub source: String,
    /// Its parameters, in the order of the normalised spec.
    pub params: Vec<ParamDoc>,
}

/// How a parameter's text is read.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A whole number in `[min, max]`.
    Count {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A number of threads, `N` or `P%` of the machine's hardware threads
    /// (rounded to nearest), at least 1 and at most `max`.
    Threads {
        /// Largest accepted count.
        max: u64,
    },
    /// A duration with a unit suffix (`ns`, `us`, `ms`, `s`); a bare number is
    /// in `default_unit_ns` units. Must lie in `[min_ns, max_ns]`.
    Duration {
        /// Nanoseconds per unit of a bare number.
        default_unit_ns: Ns,
        /// Smallest accepted value, ns.
        min_ns: Ns,
        /// Largest accepted value, ns.
        max_ns: Ns,
    },
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A list of non-negative numbers separated by `;` (`0.4;0.6;0.3`), each
    /// at most `max`, at most `max_len` of them.
    Shares {
        /// Largest accepted value.
        max: f64,
        /// Most values accepted.
        max_len: usize,
    },
    /// A duration distribution (`2us`, `exp:25us`, `uniform:1us-3us`; see
    /// [`super::dist::parse_dist`]) whose values lie in `[0, max_ns]`.
    Dist {
        /// Nanoseconds per unit of a bare number.
        default_unit_ns: Ns,
        /// Largest accepted value (the mean for `exp`), ns.
        max_ns: Ns,
    },
}

/// A parameter declaration of a family.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParamDef {
    /// Key.
    pub name: &'static str,
    /// How its value is read.
    pub kind: Kind,
    /// Default text, or `auto` when the family derives it.
    pub default: &'static str,
    /// Unit shown in the documentation.
    pub unit: &'static str,
    /// Documentation: meaning, default's source, trade-off.
    pub doc: &'static str,
}

/// The default text meaning "derived by the family builder".
pub(crate) const AUTO: &str = "auto";

/// One nanosecond-denominated unit of a duration.
const UNITS: [(&str, Ns); 4] = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)];

/// A workload family: its name, summary, parameters and builder.
struct Family {
    name: &'static str,
    summary: &'static str,
    structure: &'static str,
    source: &'static str,
    params: &'static [ParamDef],
    build: fn(&mut Params) -> Result<Workload>,
    /// What `policy`/`priority`/`nice` default to (or whether they are accepted).
    policy: PolicyDefault,
    /// Its forked tasks in its native program's fork order, for a
    /// per-task `parent_wakee_flips` list.
    fork_order: ForkOrder,
}

const FAIR: PolicyDefault = PolicyDefault::Fair;

#[rustfmt::skip]
const FAMILIES: [Family; 19] = [
    Family { name: "hackbench", summary: hackbench::SUMMARY, structure: hackbench::STRUCTURE, source: hackbench::SOURCE,
             params: hackbench::PARAMS, build: hackbench::build, policy: FAIR, fork_order: build_order },
    Family { name: "schbench", summary: schbench::SUMMARY, structure: schbench::STRUCTURE, source: schbench::SOURCE,
             params: schbench::PARAMS, build: schbench::build, policy: FAIR, fork_order: build_order },
    Family { name: "workqueue", summary: workqueue::SUMMARY, structure: workqueue::STRUCTURE, source: workqueue::SOURCE,
             params: workqueue::PARAMS, build: workqueue::build, policy: FAIR,
             fork_order: workqueue::native_fork_order },
    Family { name: "sieve", summary: sieve::SUMMARY, structure: sieve::STRUCTURE, source: sieve::SOURCE,
             params: sieve::PARAMS, build: sieve::build, policy: FAIR, fork_order: build_order },
    Family { name: "pipe", summary: pipe::SUMMARY, structure: pipe::STRUCTURE, source: pipe::SOURCE,
             params: pipe::PARAMS, build: pipe::build, policy: FAIR, fork_order: build_order },
    Family { name: "barrier", summary: ompbarrier::SUMMARY, structure: ompbarrier::STRUCTURE, source: ompbarrier::SOURCE,
             params: ompbarrier::PARAMS, build: ompbarrier::build, policy: FAIR, fork_order: build_order },
    Family { name: "nas", summary: nas::SUMMARY, structure: nas::STRUCTURE, source: nas::SOURCE,
             params: nas::PARAMS, build: nas::build, policy: FAIR, fork_order: build_order },
    Family { name: "chameneos", summary: chameneos::SUMMARY, structure: chameneos::STRUCTURE, source: chameneos::SOURCE,
             params: chameneos::PARAMS, build: chameneos::build, policy: FAIR, fork_order: build_order },
    Family { name: "kv-cache", summary: kvcache::SUMMARY, structure: kvcache::STRUCTURE, source: kvcache::SOURCE,
             params: kvcache::PARAMS, build: kvcache::build, policy: FAIR, fork_order: build_order },
    Family { name: "pgbench", summary: pgbench::SUMMARY, structure: pgbench::STRUCTURE, source: pgbench::SOURCE,
             params: pgbench::PARAMS, build: pgbench::build, policy: FAIR, fork_order: build_order },
    Family { name: "db-query", summary: dbquery::SUMMARY, structure: dbquery::STRUCTURE, source: dbquery::SOURCE,
             params: dbquery::PARAMS, build: dbquery::build, policy: FAIR, fork_order: build_order },
    Family { name: "video-enc", summary: video::ENC_SUMMARY, structure: video::ENC_STRUCTURE, source: video::ENC_SOURCE,
             params: video::ENC_PARAMS, build: video::build_enc, policy: FAIR, fork_order: build_order },
    Family { name: "video-dec", summary: video::DEC_SUMMARY, structure: video::DEC_STRUCTURE, source: video::DEC_SOURCE,
             params: video::DEC_PARAMS, build: video::build_dec, policy: FAIR, fork_order: build_order },
    Family { name: "android", summary: android::SUMMARY, structure: android::STRUCTURE, source: android::SOURCE,
             params: android::PARAMS, build: android::build, policy: FAIR, fork_order: build_order },
    Family { name: "rt-periodic", summary: noise::RT_SUMMARY, structure: noise::RT_STRUCTURE, source: noise::RT_SOURCE,
             params: noise::RT_PARAMS, build: noise::build_rt_periodic,
             policy: PolicyDefault::Rt { priority: noise::RT_DEFAULT_PRIORITY }, fork_order: build_order },
    Family { name: "kworkers", summary: noise::KW_SUMMARY, structure: noise::KW_STRUCTURE, source: noise::KW_SOURCE,
             params: noise::KW_PARAMS, build: noise::build_kworkers, policy: FAIR, fork_order: build_order },
    Family { name: "irq", summary: irq::SUMMARY, structure: irq::STRUCTURE, source: irq::SOURCE,
             params: irq::PARAMS, build: irq::build, policy: PolicyDefault::NoTasks, fork_order: build_order },
    Family { name: "stall", summary: stall::SUMMARY, structure: stall::STRUCTURE, source: stall::SOURCE,
             params: stall::PARAMS, build: stall::build, policy: PolicyDefault::NoTasks, fork_order: build_order },
    Family { name: "overcommit", summary: overcommit::SUMMARY, structure: overcommit::STRUCTURE,
             source: overcommit::SOURCE, params: overcommit::PARAMS, build: overcommit::build,
             policy: PolicyDefault::NoTasks, fork_order: build_order },
];

/// The `cpus`/`preferred` and policy keys every family takes, as documented
/// for `f` (its own defaults; none for a family without tasks).
fn common_param_docs(f: &Family) -> Vec<ParamDoc> {
    // irq fires on CPU 0 unless told otherwise (one device queue); stall and
    // the families with tasks act on every CPU.
    let cpus_default = if f.name == "irq" { "0" } else { "all" };
    let mut v = vec![
        ParamDoc {
            name: "cpus".into(),
            unit: "cpu list".into(),
            default: cpus_default.into(),
            doc: "CPUs every task may run on (taskset -c), the kernel's list format with ';' between ranges \
                  (0-3;8). Noise families read it as the CPUs they act on (see their own doc)."
                .into(),
        },
        ParamDoc {
            name: "preferred".into(),
            unit: "cpu list".into(),
            default: "none".into(),
            doc: "soft affinity (cpus_preferred) of every task; read only with the soft_affinity feature.".into(),
        },
        ParamDoc {
            name: "start".into(),
            unit: "duration".into(),
            default: "0".into(),
            doc: "the workload's tasks start this long after the run does (a benchmark started on a machine \
                  whose noise already runs: composed with rt-periodic or kworkers); its metrics count from \
                  then. Interrupt sources always fire from the start."
                .into(),
        },
    ];
    if f.policy != PolicyDefault::NoTasks {
        v.push(ParamDoc {
            name: "parent_wakee_flips".into(),
            unit: "count|N;N;...".into(),
            default: "0".into(),
            doc: "wakee_flips of the process that forks the tasks (the launcher); each forked task inherits it, \
                  as the kernel copies it at fork, and keeps it until it wakes others. It decides wake_wide() \
                  for wakeups of tasks that wake no one (hackbench receivers): at or above the LLC size it \
                  keeps them on their previous CPU. Measured 8 for busybox sh in a Debian 6.12 guest. \
                  N;N;... gives each forked task its own count (a main thread whose count moves between \
                  forks), one per task in the order the family's native program (schedlab-wl) forks its \
                  threads, as a guest recording's fork probe lists them; the length must match."
                .into(),
        });
    }
    let defaults = match f.policy {
        PolicyDefault::NoTasks => return v,
        PolicyDefault::Fair => ["other".to_string(), "none".into(), "0".into(), "none".into(), "none".into()],
        PolicyDefault::Rt { priority } => {
            ["fifo".to_string(), priority.to_string(), "none".into(), "none".into(), "none".into()]
        }
    };
    for ((name, unit, doc), default) in SCHED_KEY_DOCS.iter().zip(defaults) {
        // An RT family takes only the RT policies.
        let unit = match (f.policy, *name) {
            (PolicyDefault::Rt { .. }, "policy") => "fifo|rr",
            _ => unit,
        };
        v.push(ParamDoc { name: name.to_string(), unit: unit.to_string(), default, doc: doc.to_string() });
    }
    v
}

/// Every workload family with its parameters, for `schedlab workload list`.
pub fn workload_families() -> Vec<FamilyDoc> {
    FAMILIES
        .iter()
        .map(|f| FamilyDoc {
            name: f.name.to_string(),
            summary: f.summary.to_string(),
            structure: f.structure.to_string(),
            source: f.source.to_string(),
            params: f
                .params
                .iter()
                .map(|p| ParamDoc {
                    name: p.name.to_string(),
                    unit: p.unit.to_string(),
                    default: p.default.to_string(),
                    doc: p.doc.to_string(),
                })
                .chain(common_param_docs(f))
                .collect(),
        })
        .chain(std::iter::once(super::rtapp::family_doc()))
        .collect()
}

/// Builds a workload from its spec. `format` is `spec` (`family:key=value,...`),
/// `toml` or `json` (a table with `family` and the same keys); `origin` names
/// the file or string in error messages. `%` thread counts and machine-derived
/// defaults resolve against `machine`. The result's `name` is the normalised
/// spec with every default filled in.
pub fn build_workload(text: &str, format: &str, origin: &str, machine: &Machine) -> Result<Workload> {
    if format == "json" && super::rtapp::is_rtapp(text) {
        return super::rtapp::build(text, origin, machine);
    }
    if format == "toml" && super::usertoml::is_program(text) {
        return super::usertoml::build(text, origin, machine);
    }
    let (family, pairs) = match format {
        "spec" => split_spec(text, origin)?,
        "toml" => {
            let table: toml::Table = toml::from_str(text)
                .map_err(|e| SchedlabError::spec(origin, "workload", format!("expected a TOML table: {e}")))?;
            table_pairs(table.into_iter().map(|(k, v)| (k, toml_scalar(&v))), origin)?
        }
        "json" => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| SchedlabError::spec(origin, "workload", format!("expected a JSON object: {e}")))?;
            let serde_json::Value::Object(map) = value else {
                return Err(SchedlabError::spec(origin, "workload", "expected a JSON object"));
            };
            table_pairs(map.into_iter().map(|(k, v)| (k, json_scalar(&v))), origin)?
        }
        other => {
            return Err(SchedlabError::UnknownName {
                kind: "workload format".into(),
                name: other.into(),
                valid: "spec, toml, json".into(),
            })
        }
    };
    if family == "rtapp" {
        return Err(SchedlabError::spec(
            origin,
            "workload.rtapp",
            "the rt-app file's JSON text (format json): rtapp:file=PATH is read by the command line and the \
             Python API",
        ));
    }
    let Some(fam) = FAMILIES.iter().find(|f| f.name == family) else {
        return Err(SchedlabError::UnknownName {
            kind: "workload".into(),
            name: family,
            valid: FAMILIES.iter().map(|f| f.name).collect::<Vec<_>>().join(", "),
        });
    };
    let (cpus, pairs) = take_cpus(pairs, "cpus", origin, machine)?;
    let (preferred, pairs) = take_cpus(pairs, "preferred", origin, machine)?;
    let (sched, pairs) = take_sched_keys(pairs, origin, fam.name, fam.policy)?;
    let (start_ns, pairs) = take_start(pairs, origin)?;
    let (parent_flips, pairs) = take_parent_wakee_flips(pairs, origin, fam.policy)?;
    let mut params = Params::new(origin, fam.name, fam.params, machine, pairs)?;
    params.cpus = cpus;
    let mut w = (fam.build)(&mut params)?;
    w.name = params.normalised();
    if let Some(mask) = cpus {
        // `taskset`-style affinity for every task of the workload.
        for t in &mut w.tasks {
            t.allowed = Some(t.allowed.map_or(mask, |a| a.and(&mask)));
        }
        w.name.push_str(&format!(",cpus={}", mask.to_list_string().replace(',', ";")));
    }
    if let Some(mask) = preferred {
        // Soft affinity (`cpus_preferred`) for every task; read only with the
        // `soft_affinity` feature, and clipped to each task's allowed CPUs.
        for t in &mut w.tasks {
            t.preferred = Some(mask);
        }
        w.name.push_str(&format!(",preferred={}", mask.to_list_string().replace(',', ";")));
    }
    sched.apply(&mut w);
    if let Some(flips) = &parent_flips {
        apply_parent_wakee_flips(&mut w, flips, fam.fork_order, fam.name, origin)?;
    }
    if start_ns > 0 {
        delay_workload(&mut w, start_ns);
        w.name.push_str(&format!(",start={}", format_duration(start_ns)));
    }
    Ok(w)
}

/// The `start` key every family accepts: the workload begins this long
/// after the run (a benchmark started on a machine whose noise, e.g. RT
/// tasks or interrupts, is already running). Its metrics count from then.
fn take_start(pairs: Vec<(String, String)>, origin: &str) -> Result<(Ns, Pairs)> {
    let mut start = None;
    let mut rest = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if k != "start" {
            rest.push((k, v));
            continue;
        }
        if start.is_some() {
            return Err(SchedlabError::spec(origin, "workload.start", "expected each key once, got 'start' twice"));
        }
        let ns = parse_duration(&v, 1).ok_or_else(|| {
            SchedlabError::spec(origin, "workload.start", format!("a duration such as 500ms or 1s, got '{v}'"))
        })?;
        start = Some(ns);
    }
    Ok((start.unwrap_or(0), rest))
}

/// Shift every task, the duration and the warm-up of `w` by `start_ns`.
fn delay_workload(w: &mut Workload, start_ns: Ns) {
    for t in &mut w.tasks {
        t.start_ns += start_ns;
    }
    if let Some(d) = w.duration_ns.as_mut() {
        *d += start_ns;
    }
    w.warmup_ns += start_ns;
}

/// The `cpus` key every family accepts: the CPUs all its tasks may run on
/// (like `taskset -c`), in the kernel's list format. In the `family:k=v`
/// form, where ',' separates keys, ranges are separated by ';' (`cpus=0-15;32-47`).
/// The `preferred` key (soft affinity, `cpus_preferred`) takes the same format.
fn take_cpus(
    pairs: Vec<(String, String)>,
    key: &str,
    origin: &str,
    machine: &Machine,
) -> Result<(Option<CpuMask>, Pairs)> {
    let mut cpus = None;
    let mut rest = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if k != key {
            rest.push((k, v));
            continue;
        }
        let list = v.replace(';', ",");
        let mask = CpuMask::parse_list(&list).map_err(|e| {
            SchedlabError::spec(origin, format!("workload.{key}"), format!("expected a CPU list like 0-15;32-47: {e}"))
        })?;
        let nr = machine.nr_cpus();
        if let Some(bad) = mask.iter().find(|c| c.idx() >= nr) {
            return Err(SchedlabError::spec(
                origin,
                format!("workload.{key}"),
                format!("CPUs of the machine (0-{}), got CPU {bad}", nr - 1),
            ));
        }
        if mask.is_empty() {
            return Err(SchedlabError::spec(origin, format!("workload.{key}"), "at least one CPU"));
        }
        cpus = Some(mask);
    }
    Ok((cpus, rest))
}

/// Splits `family:k=v,k=v` into the family and its pairs.
fn split_spec(text: &str, origin: &str) -> Result<(String, Vec<(String, String)>)> {
    let text = text.trim();
    let (family, rest) = text.split_once(':').unwrap_or((text, ""));
    let mut pairs = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(SchedlabError::spec(
                origin,
                format!("workload.{item}"),
                format!("expected key=value, got '{item}'"),
            ));
        };
        pairs.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((family.trim().to_string(), pairs))
}

/// Separates `family` from the other keys of a TOML / JSON table.
fn table_pairs(
    items: impl Iterator<Item = (String, std::result::Result<String, &'static str>)>,
    origin: &str,
) -> Result<(String, Vec<(String, String)>)> {
    let mut family = None;
    let mut pairs = Vec::new();
    for (k, v) in items {
        let v = v.map_err(|what| {
            SchedlabError::spec(origin, format!("workload.{k}"), format!("expected a string or a number, got {what}"))
        })?;
        if k == "family" {
            family = Some(v);
        } else {
            pairs.push((k, v));
        }
    }
    let family =
        family.ok_or_else(|| SchedlabError::spec(origin, "workload.family", "expected a family name, got nothing"))?;
    Ok((family, pairs))
}

fn toml_scalar(v: &toml::Value) -> std::result::Result<String, &'static str> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Datetime(_) => Err("a date"),
        toml::Value::Array(_) => Err("an array"),
        toml::Value::Table(_) => Err("a table"),
    }
}

fn json_scalar(v: &serde_json::Value) -> std::result::Result<String, &'static str> {
    match v {
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        serde_json::Value::Null => Err("null"),
        serde_json::Value::Array(_) => Err("an array"),
        serde_json::Value::Object(_) => Err("an object"),
    }
}

/// The parameters given for one family, read on demand by its builder. Every
/// value read is recorded in canonical form for the normalised name.
pub(crate) struct Params<'a> {
    origin: &'a str,
    family: &'static str,
    defs: &'static [ParamDef],
    /// Text given by the user, indexed like `defs`.
    given: Vec<Option<String>>,
    /// Canonical text of the value used, indexed like `defs`.
    resolved: Vec<Option<String>>,
    /// The machine `%` and machine-derived defaults resolve against.
    pub machine: &'a Machine,
    /// The `cpus` key, when given (applied as every task's affinity after the
    /// build; noise families also read it as the CPUs they act on).
    pub cpus: Option<CpuMask>,
}

impl<'a> Params<'a> {
    fn new(
        origin: &'a str,
        family: &'static str,
        defs: &'static [ParamDef],
        machine: &'a Machine,
        pairs: Vec<(String, String)>,
    ) -> Result<Self> {
        let mut given = vec![None; defs.len()];
        for (k, v) in pairs {
            // `key=auto` for an `auto` parameter (as a normalised name shows
            // one left to be derived) is the same as not giving it.
            if v == AUTO && defs.iter().any(|d| d.name == k && d.default == AUTO) {
                continue;
            }
            let Some(i) = defs.iter().position(|d| d.name == k) else {
                let valid: Vec<&str> = defs.iter().map(|d| d.name).collect();
                return Err(SchedlabError::spec(
                    origin,
                    format!("workload.{k}"),
                    format!("expected one of the {family} keys {}, got unknown key '{k}'", valid.join(", ")),
                ));
            };
            if given[i].is_some() {
                return Err(SchedlabError::spec(
                    origin,
                    format!("workload.{k}"),
                    format!("expected each key once, got '{k}' twice"),
                ));
            }
            given[i] = Some(v);
        }
        Ok(Params { origin, family, defs, given, resolved: vec![None; defs.len()], machine, cpus: None })
    }

    fn index(&self, name: &str) -> usize {
        // A builder asking for a key its own table lacks is a programming error.
        self.defs.iter().position(|d| d.name == name).unwrap_or_else(|| panic!("{}: no param {name}", self.family))
    }

    /// The text to parse: the given value, else the default (`None` when the default is `auto`).
    fn text(&self, i: usize) -> Option<String> {
        match &self.given[i] {
            Some(v) => Some(v.clone()),
            None if self.defs[i].default == AUTO => None,
            None => Some(self.defs[i].default.to_string()),
        }
    }

    fn error(&self, i: usize, expected: String, got: &str) -> SchedlabError {
        SchedlabError::spec(
            self.origin,
            format!("workload.{}", self.defs[i].name),
            format!("expected {expected}, got '{got}'"),
        )
    }

    fn value<T>(
        &mut self,
        name: &str,
        auto: Option<T>,
        parse: impl Fn(&Self, usize, &str) -> Result<(T, String)>,
    ) -> Result<T> {
        let i = self.index(name);
        let (v, canon) = match (self.text(i), auto) {
            (Some(t), _) => parse(self, i, &t)?,
            (None, Some(a)) => return Ok(a),
            (None, None) => panic!("{}: param {name} is auto but the builder gave no value", self.family),
        };
        self.resolved[i] = Some(canon);
        Ok(v)
    }

    /// Whether `name` was left to its `auto` default.
    pub fn is_auto(&self, name: &str) -> bool {
        let i = self.index(name);
        self.given[i].is_none() && self.defs[i].default == AUTO
    }

    /// Records the value an `auto` parameter resolved to, for the normalised name.
    pub fn set_resolved(&mut self, name: &str, canon: String) {
        let i = self.index(name);
        self.resolved[i] = Some(canon);
    }

    /// A whole-number parameter.
    pub fn count(&mut self, name: &str) -> Result<u64> {
        self.value(name, None, |p, i, t| {
            let Kind::Count { min, max } = p.defs[i].kind else { panic!("{name} is not a count") };
            match t.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok((n, n.to_string())),
                _ => Err(p.error(i, format!("a whole number from {min} to {max}"), t)),
            }
        })
    }

    /// A thread count: `N` or `P%` of the machine's hardware threads.
    pub fn threads(&mut self, name: &str) -> Result<u32> {
        let nr_cpus = self.machine.nr_cpus() as u64;
        self.value(name, None, |p, i, t| {
            let Kind::Threads { max } = p.defs[i].kind else { panic!("{name} is not a thread count") };
            let expected = || format!("a thread count from 1 to {max}, or a percentage in (0%, 100%] of the machine's {nr_cpus} hardware threads");
            let n = if let Some(pct) = t.strip_suffix('%') {
                // Percent in units of 1e-4 %, so 31.25% is exact.
                let pct_e4 = parse_fixed(pct.trim(), 4).ok_or_else(|| p.error(i, expected(), t))?;
                if pct_e4 == 0 || pct_e4 > 100 * 10_000 {
                    return Err(p.error(i, expected(), t));
                }
                (nr_cpus * pct_e4 + 500_000) / 1_000_000
            } else {
                t.parse::<u64>().map_err(|_| p.error(i, expected(), t))?
            };
            if n == 0 || n > max {
                return Err(p.error(i, expected(), t));
            }
            Ok((n as u32, n.to_string()))
        })
    }

    /// A duration, ns; `auto` resolves to `derived` when given.
    pub fn duration_or(&mut self, name: &str, derived: Option<Ns>) -> Result<Ns> {
        if let (true, Some(d)) = (self.is_auto(name), derived) {
            self.set_resolved(name, format_duration(d));
        }
        self.value(name, derived, |p, i, t| {
            let Kind::Duration { default_unit_ns, min_ns, max_ns } = p.defs[i].kind else {
                panic!("{name} is not a duration")
            };
            let expected = || {
                format!(
                    "a duration from {} to {} such as 10ms, 50us, 2s (a bare number is in {})",
                    format_duration(min_ns),
                    format_duration(max_ns),
                    p.defs[i].unit
                )
            };
            let d = parse_duration(t, default_unit_ns).ok_or_else(|| p.error(i, expected(), t))?;
            if d < min_ns || d > max_ns {
                return Err(p.error(i, expected(), t));
            }
            Ok((d, format_duration(d)))
        })
    }

    /// A duration without an `auto` default, ns.
    pub fn duration(&mut self, name: &str) -> Result<Ns> {
        self.duration_or(name, None)
    }

    /// A count whose `auto` default resolves to `derived`.
    pub fn count_or(&mut self, name: &str, derived: u64) -> Result<u64> {
        if self.is_auto(name) {
            self.set_resolved(name, derived.to_string());
            return Ok(derived);
        }
        self.count(name)
    }

    /// One of a fixed set of words.
    pub fn choice(&mut self, name: &str) -> Result<&'static str> {
        self.value(name, None, |p, i, t| {
            let Kind::Choice(words) = p.defs[i].kind else { panic!("{name} is not a choice") };
            match words.iter().find(|w| **w == t) {
                Some(w) => Ok((*w, w.to_string())),
                None => Err(p.error(i, format!("one of {}", words.join(", ")), t)),
            }
        })
    }

    /// A `;`-separated list of numbers (see [`Kind::Shares`]).
    pub fn shares(&mut self, name: &str) -> Result<Vec<f64>> {
        self.value(name, None, |p, i, t| {
            let Kind::Shares { max, max_len } = p.defs[i].kind else { panic!("{name} is not a share list") };
            let expected = || format!("up to {max_len} numbers from 0 to {max} separated by ';' (0.4;0.6)");
            let v: Vec<f64> = t
                .split(';')
                .map(|s| s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && (0.0..=max).contains(x)))
                .collect::<Option<_>>()
                .ok_or_else(|| p.error(i, expected(), t))?;
            if v.is_empty() || v.len() > max_len {
                return Err(p.error(i, expected(), t));
            }
            let canon = v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(";");
            Ok((v, canon))
        })
    }

    /// A duration distribution (see [`Kind::Dist`]); `auto` resolves to `derived`.
    pub fn dist_or(&mut self, name: &str, derived: Option<Dist>) -> Result<Dist> {
        if let (true, Some(d)) = (self.is_auto(name), derived) {
            self.set_resolved(name, format_dist(&d));
        }
        self.value(name, derived, |p, i, t| {
            let Kind::Dist { default_unit_ns, max_ns } = p.defs[i].kind else { panic!("{name} is not a dist") };
            let expected = || {
                format!(
                    "a duration up to {} such as 2us, exp:25us (exponential, that mean) or uniform:1us-3us \
                     (a bare number is in {})",
                    format_duration(max_ns),
                    p.defs[i].unit
                )
            };
            let d = parse_dist(t, default_unit_ns).ok_or_else(|| p.error(i, expected(), t))?;
            let top = match d {
                Dist::Fixed(v) => v,
                Dist::Exp { mean } => mean,
                Dist::Uniform { hi, .. } => hi,
            };
            if top > max_ns {
                return Err(p.error(i, expected(), t));
            }
            Ok((d, format_dist(&d)))
        })
    }

    /// Whether the user gave `name` (rather than leaving its default).
    pub fn is_given(&self, name: &str) -> bool {
        self.given[self.index(name)].is_some()
    }

    /// An error about parameter `name` (for checks spanning several parameters).
    pub fn invalid(&self, name: &str, expected: &str) -> SchedlabError {
        let i = self.index(name);
        let got = self.resolved[i].clone().or_else(|| self.text(i)).unwrap_or_default();
        self.error(i, expected.to_string(), &got)
    }

    /// `family:key=value,...` with every parameter in table order.
    fn normalised(&self) -> String {
        let parts: Vec<String> = (0..self.defs.len())
            .map(|i| {
                let v = self.resolved[i].clone().or_else(|| self.text(i)).unwrap_or_else(|| AUTO.to_string());
                format!("{}={}", self.defs[i].name, v)
            })
            .collect();
        format!("{}:{}", self.family, parts.join(","))
    }
}

/// Parses `123` or `12.345` as a fixed-point number with `decimals` digits
/// after the point (`12.345`, 4 -> 123450). `None` on anything else.
fn parse_fixed(t: &str, decimals: u32) -> Option<u64> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > decimals as usize {
        return None;
    }
    let scale = 10u64.pow(decimals);
    let int: u64 = int.parse().ok()?;
    let frac_val: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let frac_scaled = frac_val * 10u64.pow(decimals - frac.len() as u32);
    int.checked_mul(scale)?.checked_add(frac_scaled)
}

/// Parses `10ms`, `1.5us`, `2s`, `100` (in `default_unit_ns`). `None` on
/// garbage, negative numbers and overflow.
pub(crate) fn parse_duration(t: &str, default_unit_ns: Ns) -> Option<Ns> {
    let t = t.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit_ns = if unit.is_empty() { default_unit_ns } else { UNITS.iter().find(|(u, _)| *u == unit)?.1 };
    // Nine decimals cover any fraction of a second down to 1 ns.
    let fixed = parse_fixed(num, 9)?;
    let ns = (fixed as u128 * unit_ns as u128) / 1_000_000_000;
    u64::try_from(ns).ok()
}

/// Canonical text of a duration: the largest unit that divides it exactly.
pub(crate) fn format_duration(ns: Ns) -> String {
    if ns == 0 {
        return "0".to_string();
    }
    let (u, per) = UNITS.iter().rev().find(|(_, per)| ns.is_multiple_of(*per)).copied().unwrap_or(("ns", 1));
    format!("{}{}", ns / per, u)
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
