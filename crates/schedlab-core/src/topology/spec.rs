//! Machine descriptions: parse a TOML file (or the JSON form of a Python
//! dict), validate every value, and build a sealed [`Machine`].
//!
//! Both formats are turned into one `serde_json::Value` tree and walked by one
//! code path, so a TOML file and a Python dict give the same errors. Every
//! error names the origin (file or preset), the dotted key and what was
//! expected; unknown keys are errors that list the valid keys of their table.
//! Nothing here panics on input.
//!
//! The schema and every default, with the reasoning behind it:
//!
//! ```toml
//! [machine]
//! name = "..."            # required
//! description = "..."     # default ""
//! hz = 250                # CONFIG_HZ; default 250, the x86 distro default
//! [topology]              # required; every count >= 1
//! cores_per_cluster       # required: no default core count is a safe guess
//! packages, nodes_per_package, llcs_per_node, clusters_per_llc,
//! threads_per_core        # default 1 each: one package, one node per package,
//!                         # one LLC per node, no clusters, no SMT
//! smt_numbering = "split" # "split": cpu = thread * nr_cores + core, how Linux
//!                         # enumerates x86 (all first threads, then siblings);
//!                         # "adjacent": cpu = core * threads + thread
//! numa_distance = [[..]]  # node x node; default 10 local (LOCAL_DISTANCE),
//!                         # 21 remote (REMOTE_DISTANCE, what ACPI SLIT-less
//!                         # x86 machines report)
//! [[core_type]]           # one or more; `cores` = global core ranges or "all"
//! name, cores, capacity (1..=1024, the largest type exactly 1024),
//! nominal_freq_mhz, smt_speed_pct (default 60; 100 without SMT), opps, idle_states
//! [freq_domain]
//! per = "package"         # cpu | core | cluster | llc | package
//! governor = "schedutil"  # performance | powersave | schedutil | ondemand |
//!                         # intel_pstate; absent: no
//!                         # cpufreq model (nominal frequency, no energy)
//! transition_latency_us   # default 0; rate_limit_us, fast_switch,
//!                         # sugov_work_us, dbs_work_us, turbo_mhz,
//!                         # turbo_inactive_state: see `parse_cpufreq`
//! [cpuidle]               # governor = "menu" | "teo", latency_req_us:
//!                         # see `spec_cpuidle.rs` (idle_states too)
//! [cost]                  # see `CostParams` defaults in `default_cost`
//! ```

use crate::cpumask::{CpuMask, MAX_CPUS};
use crate::error::{Result, SchedlabError};
use crate::ids::{CpuId, Ns};
use crate::topology::machine::{CoreType, CostParams, CpuInfo, Distance, FreqDomain, Machine, Opp};
use serde_json::{Map, Value};

#[path = "spec_cpufreq.rs"]
mod spec_cpufreq;
use spec_cpufreq::parse_cpufreq;
pub use spec_cpufreq::set_governor;
#[path = "spec_cpuidle.rs"]
mod spec_cpuidle;
pub use spec_cpuidle::set_idle_governor;
use spec_cpuidle::{parse_cpuidle, parse_idle_states};

/// `LOCAL_DISTANCE` in include/linux/topology.h.
const LOCAL_DISTANCE: u32 = 10;
/// `REMOTE_DISTANCE` in include/linux/topology.h: the default for nodes
/// whose firmware gives no distance table.
const REMOTE_DISTANCE: u32 = 21;
/// The kernel stores distances in `DISTANCE_BITS` (8) bits.
const MAX_DISTANCE: u32 = 255;

/// Parse a machine description. `format` is `"toml"` or `"json"`; `origin`
/// names the file or preset in error messages.
pub fn parse_machine(text: &str, format: &str, origin: &str) -> Result<Machine> {
    let root: Value = match format {
        "toml" => {
            let t: toml::Value = toml::from_str(text)
                .map_err(|e| SchedlabError::spec(origin, "(file)", format!("valid TOML: {}", e.message())))?;
            serde_json::to_value(t)
                .map_err(|e| SchedlabError::spec(origin, "(file)", format!("plain TOML values: {e}")))?
        }
        "json" => {
            serde_json::from_str(text).map_err(|e| SchedlabError::spec(origin, "(file)", format!("valid JSON: {e}")))?
        }
        other => return Err(SchedlabError::spec(origin, "(format)", format!("\"toml\" or \"json\", got \"{other}\""))),
    };
    let p = P { origin };
    let top = p.table(&root, "")?;
    p.keys(top, "", &["machine", "topology", "core_type", "freq_domain", "cpuidle", "cost"])?;
    build(&p, top)
}

/// The origin, carried through the walk for error messages.
struct P<'a> {
    origin: &'a str,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

impl P<'_> {
    fn err(&self, key: &str, expected: impl Into<String>) -> SchedlabError {
        SchedlabError::spec(self.origin, key, expected)
    }

    fn table<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Map<String, Value>> {
        v.as_object().ok_or_else(|| self.err(path, format!("a table, got {}", kind(v))))
    }

    /// Reject keys of `t` not in `valid`.
    fn keys(&self, t: &Map<String, Value>, path: &str, valid: &[&str]) -> Result<()> {
        for k in t.keys() {
            if !valid.contains(&k.as_str()) {
                return Err(self.err(&join(path, k), format!("a known key; valid keys here: {}", valid.join(", "))));
            }
        }
        Ok(())
    }

    fn opt_table<'v>(
        &self,
        t: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Result<Option<&'v Map<String, Value>>> {
        t.get(key).map(|v| self.table(v, &join(path, key))).transpose()
    }

    fn opt_u64(&self, t: &Map<String, Value>, path: &str, key: &str, lo: u64, hi: u64) -> Result<Option<u64>> {
        let Some(v) = t.get(key) else { return Ok(None) };
        let k = join(path, key);
        let range = if hi == u64::MAX { format!(">= {lo}") } else { format!("in {lo}..={hi}") };
        match v.as_u64() {
            Some(n) if n >= lo && n <= hi => Ok(Some(n)),
            _ => {
                let got = match v {
                    Value::Number(n) => n.to_string(),
                    other => kind(other).to_string(),
                };
                Err(self.err(&k, format!("an integer {range}, got {got}")))
            }
        }
    }

    fn u64_or(&self, t: &Map<String, Value>, path: &str, key: &str, lo: u64, hi: u64, default: u64) -> Result<u64> {
        Ok(self.opt_u64(t, path, key, lo, hi)?.unwrap_or(default))
    }

    fn req_u64(&self, t: &Map<String, Value>, path: &str, key: &str, lo: u64, hi: u64) -> Result<u64> {
        self.opt_u64(t, path, key, lo, hi)?.ok_or_else(|| self.err(&join(path, key), "a value (the key is required)"))
    }

    fn opt_str<'v>(&self, t: &'v Map<String, Value>, path: &str, key: &str) -> Result<Option<&'v str>> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(&join(path, key), format!("a string, got {}", kind(v)))),
        }
    }

    fn req_str<'v>(&self, t: &'v Map<String, Value>, path: &str, key: &str) -> Result<&'v str> {
        match self.opt_str(t, path, key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(self.err(&join(path, key), "a non-empty string")),
            None => Err(self.err(&join(path, key), "a value (the key is required)")),
        }
    }

    fn opt_array<'v>(&self, t: &'v Map<String, Value>, path: &str, key: &str) -> Result<Option<&'v Vec<Value>>> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.err(&join(path, key), format!("an array, got {}", kind(v)))),
        }
    }
}

/// The counts of `[topology]`.
struct Shape {
    packages: u32,
    nodes_per_package: u32,
    llcs_per_node: u32,
    clusters_per_llc: u32,
    cores_per_cluster: u32,
    threads_per_core: u32,
    split: bool,
}

fn build(p: &P, top: &Map<String, Value>) -> Result<Machine> {
    let mt =
        p.opt_table(top, "", "machine")?.ok_or_else(|| p.err("machine", "a [machine] table with at least `name`"))?;
    p.keys(mt, "machine", &["name", "description", "hz"])?;
    let name = p.req_str(mt, "machine", "name")?.to_string();
    let description = p.opt_str(mt, "machine", "description")?.unwrap_or("").to_string();
    // CONFIG_HZ: 250 is the common distro default; 100..=1000 are the values
    // Kconfig offers.
    let hz = p.u64_or(mt, "machine", "hz", 100, 1000, 250)? as u32;

    let tt = p
        .opt_table(top, "", "topology")?
        .ok_or_else(|| p.err("topology", "a [topology] table with at least `cores_per_cluster`"))?;
    let tk = [
        "packages",
        "nodes_per_package",
        "llcs_per_node",
        "clusters_per_llc",
        "cores_per_cluster",
        "threads_per_core",
        "smt_numbering",
        "numa_distance",
    ];
    p.keys(tt, "topology", &tk)?;
    let count = |k: &str| -> Result<u32> { Ok(p.u64_or(tt, "topology", k, 1, MAX_CPUS as u64, 1)? as u32) };
    let shape = Shape {
        packages: count("packages")?,
        nodes_per_package: count("nodes_per_package")?,
        llcs_per_node: count("llcs_per_node")?,
        clusters_per_llc: count("clusters_per_llc")?,
        // Required: a missing count used to default to 1, a silently tiny
        // machine (one core per cluster) that still ran.
        cores_per_cluster: p.req_u64(tt, "topology", "cores_per_cluster", 1, MAX_CPUS as u64)? as u32,
        threads_per_core: count("threads_per_core")?,
        split: match p.opt_str(tt, "topology", "smt_numbering")?.unwrap_or("split") {
            "split" => true,
            "adjacent" => false,
            other => return Err(p.err("topology.smt_numbering", format!("\"split\" or \"adjacent\", got \"{other}\""))),
        },
    };
    let nr_cpus = [
        shape.packages,
        shape.nodes_per_package,
        shape.llcs_per_node,
        shape.clusters_per_llc,
        shape.cores_per_cluster,
        shape.threads_per_core,
    ]
    .iter()
    .try_fold(1u64, |acc, &n| acc.checked_mul(n as u64).filter(|&v| v <= MAX_CPUS as u64));
    let Some(nr_cpus) = nr_cpus else {
        return Err(p.err("topology", format!("at most {MAX_CPUS} CPUs in total (the product of the counts)")));
    };
    let nr_cpus = nr_cpus as u32;
    let nr_cores = nr_cpus / shape.threads_per_core;
    let nr_nodes = shape.packages * shape.nodes_per_package;
    let numa_distance = parse_distance(p, tt, nr_nodes)?;

    let core_types_raw = match top.get("core_type") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(v) => return Err(p.err("core_type", format!("one or more [[core_type]] tables, got {}", kind(v)))),
        None => return Err(p.err("core_type", "one or more [[core_type]] tables")),
    };
    let mut core_types = Vec::new();
    let mut core_of_type: Vec<Option<u16>> = vec![None; nr_cores as usize];
    for (i, v) in core_types_raw.iter().enumerate() {
        let path = format!("core_type[{i}]");
        let (ct, cores) = parse_core_type(p, v, &path, nr_cores, shape.threads_per_core)?;
        for c in cores.iter() {
            if let Some(prev) = core_of_type[c.idx()] {
                return Err(p.err(
                    &format!("{path}.cores"),
                    format!("each core in exactly one core_type; core {c} is already in core_type[{prev}]"),
                ));
            }
            core_of_type[c.idx()] = Some(i as u16);
        }
        core_types.push(ct);
    }
    if let Some(c) = core_of_type.iter().position(|t| t.is_none()) {
        return Err(p.err("core_type", format!("core types covering every core 0-{}; core {c} has none", nr_cores - 1)));
    }
    if core_types.iter().map(|t| t.capacity).max() != Some(1024) {
        return Err(p.err("core_type", "the biggest core type to have capacity 1024 (capacities are relative to it)"));
    }

    let fdt = p.opt_table(top, "", "freq_domain")?;
    let per = match fdt {
        Some(ft) => {
            p.keys(
                ft,
                "freq_domain",
                &[
                    "per",
                    "governor",
                    "transition_latency_us",
                    "rate_limit_us",
                    "fast_switch",
                    "sugov_work_us",
                    "dbs_work_us",
                    "turbo_mhz",
                    "turbo_inactive_state",
                ],
            )?;
            p.opt_str(ft, "freq_domain", "per")?.unwrap_or("package")
        }
        None => "package",
    };
    let cpufreq = match fdt {
        Some(ft) => parse_cpufreq(p, ft, &core_types, nr_cores / shape.packages)?,
        None => crate::topology::CpufreqParams::default(),
    };
    if !["cpu", "core", "cluster", "llc", "package"].contains(&per) {
        return Err(p.err("freq_domain.per", format!("one of cpu, core, cluster, llc, package; got \"{per}\"")));
    }
    let cost = parse_cost(p, top)?;
    let cpuidle = parse_cpuidle(p, top)?;

    let mut m = Machine {
        name,
        description,
        cpus: Vec::with_capacity(nr_cpus as usize),
        core_types,
        freq_domains: Vec::new(),
        cpufreq,
        cpuidle,
        numa_distance,
        cost,
        hz,
        nr_cores,
        nr_clusters: nr_cores / shape.cores_per_cluster,
        nr_llcs: nr_cores / (shape.cores_per_cluster * shape.clusters_per_llc),
        nr_nodes,
        nr_packages: shape.packages,
        has_clusters: shape.clusters_per_llc > 1,
        core_cpus: vec![CpuMask::new(); nr_cores as usize],
        cluster_cpus: Vec::new(),
        llc_cpus: Vec::new(),
        node_cpus: vec![CpuMask::new(); nr_nodes as usize],
        package_cpus: vec![CpuMask::new(); shape.packages as usize],
    };
    m.cluster_cpus = vec![CpuMask::new(); m.nr_clusters as usize];
    m.llc_cpus = vec![CpuMask::new(); m.nr_llcs as usize];
    let mut fd_of_key: Vec<Option<u32>> = Vec::new();
    for cpu in 0..nr_cpus {
        let (core, _thread) = if shape.split {
            (cpu % nr_cores, cpu / nr_cores)
        } else {
            (cpu / shape.threads_per_core, cpu % shape.threads_per_core)
        };
        let cluster = core / shape.cores_per_cluster;
        let llc = cluster / shape.clusters_per_llc;
        let node = llc / shape.llcs_per_node;
        let package = node / shape.nodes_per_package;
        let key = match per {
            "cpu" => cpu,
            "core" => core,
            "cluster" => cluster,
            "llc" => llc,
            _ => package,
        } as usize;
        if fd_of_key.len() <= key {
            fd_of_key.resize(key + 1, None);
        }
        let fd = *fd_of_key[key].get_or_insert_with(|| {
            m.freq_domains.push(FreqDomain { span: CpuMask::new() });
            (m.freq_domains.len() - 1) as u32
        });
        let id = CpuId(cpu);
        m.freq_domains[fd as usize].span.set(id);
        m.core_cpus[core as usize].set(id);
        m.cluster_cpus[cluster as usize].set(id);
        m.llc_cpus[llc as usize].set(id);
        m.node_cpus[node as usize].set(id);
        m.package_cpus[package as usize].set(id);
        let core_type = core_of_type[core as usize].unwrap_or(0);
        m.cpus.push(CpuInfo { id, core, cluster, llc, node, package, core_type, freq_domain: fd });
    }
    spec_cpuidle::check_cluster_states(p, &m)?;
    Ok(m)
}

fn parse_distance(p: &P, tt: &Map<String, Value>, n: u32) -> Result<Vec<Vec<u32>>> {
    let n = n as usize;
    let Some(rows) = p.opt_array(tt, "topology", "numa_distance")? else {
        return Ok((0..n)
            .map(|i| (0..n).map(|j| if i == j { LOCAL_DISTANCE } else { REMOTE_DISTANCE }).collect())
            .collect());
    };
    let key = "topology.numa_distance";
    if rows.len() != n {
        return Err(p.err(key, format!("a {n} x {n} matrix (one row per node), got {} rows", rows.len())));
    }
    let mut d = vec![vec![0u32; n]; n];
    for (i, row) in rows.iter().enumerate() {
        let row = row
            .as_array()
            .filter(|r| r.len() == n)
            .ok_or_else(|| p.err(&format!("{key}[{i}]"), format!("a row of {n} integers")))?;
        for (j, v) in row.iter().enumerate() {
            let x = v
                .as_u64()
                .filter(|&x| (LOCAL_DISTANCE as u64..=MAX_DISTANCE as u64).contains(&x))
                .ok_or_else(|| p.err(&format!("{key}[{i}][{j}]"), format!("an integer in 10..=255, got {v}")))?;
            d[i][j] = x as u32;
        }
    }
    for (i, row) in d.iter().enumerate() {
        if row[i] != LOCAL_DISTANCE {
            return Err(p.err(&format!("{key}[{i}][{i}]"), format!("10 on the diagonal, got {}", row[i])));
        }
        for (j, &x) in row.iter().enumerate() {
            if x != d[j][i] {
                return Err(p.err(
                    &format!("{key}[{i}][{j}]"),
                    format!("a symmetric matrix; [{i}][{j}] = {x} but [{j}][{i}] = {}", d[j][i]),
                ));
            }
            if i != j && x == LOCAL_DISTANCE {
                return Err(p.err(&format!("{key}[{i}][{j}]"), "a remote distance > 10"));
            }
        }
    }
    Ok(d)
}

fn parse_core_type(p: &P, v: &Value, path: &str, nr_cores: u32, threads: u32) -> Result<(CoreType, CpuMask)> {
    let t = p.table(v, path)?;
    p.keys(t, path, &["name", "cores", "capacity", "nominal_freq_mhz", "smt_speed_pct", "opps", "idle_states"])?;
    let name = p.req_str(t, path, "name")?.to_string();
    let cores_s = p.req_str(t, path, "cores")?;
    let cores = if cores_s.trim() == "all" {
        CpuMask::first_n(nr_cores as usize)
    } else {
        let m = CpuMask::parse_list(cores_s)
            .map_err(|e| p.err(&join(path, "cores"), format!("\"all\" or core ranges like \"0-3,8\": {e}")))?;
        if let Some(c) = m.iter().find(|c| c.0 >= nr_cores) {
            return Err(p.err(&join(path, "cores"), format!("core indices below {nr_cores}, got {c}")));
        }
        m
    };
    let capacity = p.req_u64(t, path, "capacity", 1, 1024)? as u32;
    let nominal_mhz = p.req_u64(t, path, "nominal_freq_mhz", 1, 100_000)? as u32;
    // Assumption: a hardware thread runs at ~60% of its solo speed while its
    // sibling is busy (two threads together ~1.2x one core, typical for SMT-2
    // on throughput code). Irrelevant without SMT.
    let smt_speed_pct = p.u64_or(t, path, "smt_speed_pct", 1, 100, if threads > 1 { 60 } else { 100 })? as u32;
    let mut opps = Vec::new();
    if let Some(a) = p.opt_array(t, path, "opps")? {
        for (i, o) in a.iter().enumerate() {
            let op = format!("{path}.opps[{i}]");
            let ot = p.table(o, &op)?;
            p.keys(ot, &op, &["freq_mhz", "power_mw"])?;
            let f = p.req_u64(ot, &op, "freq_mhz", 1, 100_000)? as u32;
            let pw = p.req_u64(ot, &op, "power_mw", 0, 1_000_000)? as u32;
            if opps.last().is_some_and(|l: &Opp| l.freq_khz >= f * 1000) {
                return Err(p.err(&join(&op, "freq_mhz"), "OPPs in strictly ascending frequency"));
            }
            opps.push(Opp { freq_khz: f * 1000, power_mw: pw });
        }
    }
    if opps.is_empty() {
        // Without an energy model, one OPP at the nominal frequency with
        // unknown (0) power: the model runs at a fixed frequency anyway.
        opps.push(Opp { freq_khz: nominal_mhz * 1000, power_mw: 0 });
    }
    if opps.last().is_some_and(|l| l.freq_khz < nominal_mhz * 1000) {
        return Err(p.err(&join(path, "nominal_freq_mhz"), "a frequency no higher than the highest OPP"));
    }
    let idle_states = parse_idle_states(p, t, path)?;
    let ct = CoreType { name, capacity, opps, nominal_freq_khz: nominal_mhz * 1000, smt_speed_pct, idle_states };
    Ok((ct, cores))
}

/// Default cost parameters, each with its reasoning.
pub fn default_cost() -> CostParams {
    let mut refill = [0 as Ns; 6];
    // SMT siblings share L1 and L2: nothing to refill.
    refill[Distance::Smt as usize] = 0;
    // Cores of one cluster share an L2 (or L3 tag): refilling L1 from a
    // shared L2 is ~15 cycles per line with good prefetch, ~0.6 ns/line at
    // 3 GHz with ~4 in flight -> ~10 ns/KiB.
    refill[Distance::Cluster as usize] = 10;
    // Another cluster of the LLC: L3 hit ~40 cycles, ~8 misses in flight ->
    // ~1.7 ns per 64-byte line -> ~27 ns/KiB; rounded to 30.
    refill[Distance::Llc as usize] = 30;
    // Another LLC of the node: cross-LLC or DRAM ~100 ns/line, ~10 in flight
    // -> ~10 ns/line -> ~160 ns/KiB; 150.
    refill[Distance::Package as usize] = 150;
    // Another node: remote memory ~150 ns/line, ~10 in flight -> ~240 ns/KiB; 250.
    refill[Distance::Node as usize] = 250;
    CostParams {
        refill_ns_per_kib: refill,
        // A reschedule IPI from send to the target running the handler: ~1-2 us on x86.
        ipi_ns: 1500,
        // select_idle_cpu reads one remote runqueue line per CPU: ~20 ns.
        scan_ns_per_cpu: 20,
        // One sched_balance_rq pass: ~2 us fixed (locks, find_busiest_group
        // setup) plus ~100 ns per CPU of statistics gathered.
        balance_ns_base: 2000,
        balance_ns_per_cpu: 100,
        // A context switch (save/restore, pick, TLB/cache disturbance) ~1.5 us.
        context_switch_ns: 1500,
        // try_to_wake_up on the waker: lock, select_task_rq, enqueue ~0.7 us.
        wakeup_ns: 700,
        // Sending an IPI: an APIC register write, ~100-300 cycles on bare
        // metal, counted inside wakeup_ns; 0 here. A VM's send traps to the
        // hypervisor (several us): calibrate measures it there.
        ipi_send_ns: 0,
        // A queued remote wakeup costs the waker wakeup_ns + ipi_send_ns
        // unless a machine measured it (see CostParams::ttwu_queue_ns).
        ttwu_queue_ns: None,
        // A small pipe write: syscall entry and exit (~100-200 ns with the
        // speculation mitigations), pipe mutex, copy into the page and the
        // wait-queue check ~1.5 us; a read that finds its data, a little less
        // (no page allocation) ~1 us. Estimates, the values the pipe-based
        // families used before these keys existed; `schedlab calibrate`
        // measures both on a real machine.
        pipe_write_ns: 1500,
        pipe_read_ns: 1000,
        // A typical server core's private L2: 512 KiB (Zen 2/3); 1-2 MiB on
        // recent Intel parts, set per preset.
        l2_kib: 512,
        // One LLC: 16 MiB (a Zen 2 CCX); set per preset.
        llc_kib: 16384,
    }
}

fn parse_cost(p: &P, top: &Map<String, Value>) -> Result<CostParams> {
    let mut c = default_cost();
    let Some(ct) = p.opt_table(top, "", "cost")? else {
        return Ok(c);
    };
    let keys = [
        "refill_ns_per_kib",
        "ipi_ns",
        "scan_ns_per_cpu",
        "balance_ns_base",
        "balance_ns_per_cpu",
        "context_switch_ns",
        "wakeup_ns",
        "ipi_send_ns",
        "ttwu_queue_ns",
        "pipe_write_ns",
        "pipe_read_ns",
        "l2_kib",
        "llc_kib",
    ];
    p.keys(ct, "cost", &keys)?;
    if let Some(rt) = p.opt_table(ct, "cost", "refill_ns_per_kib")? {
        let path = "cost.refill_ns_per_kib";
        p.keys(rt, path, &["smt", "cluster", "llc", "package", "node"])?;
        for d in Distance::MIGRATION {
            if let Some(v) = p.opt_u64(rt, path, d.name(), 0, 1_000_000)? {
                c.refill_ns_per_kib[d as usize] = v;
            }
        }
    }
    let ns = |k: &str, d: Ns| p.u64_or(ct, "cost", k, 0, 1_000_000_000, d);
    c.ipi_ns = ns("ipi_ns", c.ipi_ns)?;
    c.scan_ns_per_cpu = ns("scan_ns_per_cpu", c.scan_ns_per_cpu)?;
    c.balance_ns_base = ns("balance_ns_base", c.balance_ns_base)?;
    c.balance_ns_per_cpu = ns("balance_ns_per_cpu", c.balance_ns_per_cpu)?;
    c.context_switch_ns = ns("context_switch_ns", c.context_switch_ns)?;
    c.wakeup_ns = ns("wakeup_ns", c.wakeup_ns)?;
    c.ipi_send_ns = ns("ipi_send_ns", c.ipi_send_ns)?;
    c.ttwu_queue_ns = p.opt_u64(ct, "cost", "ttwu_queue_ns", 0, 1_000_000_000)?;
    c.pipe_write_ns = ns("pipe_write_ns", c.pipe_write_ns)?;
    c.pipe_read_ns = ns("pipe_read_ns", c.pipe_read_ns)?;
    c.l2_kib = p.u64_or(ct, "cost", "l2_kib", 1, 1 << 30, c.l2_kib as u64)? as u32;
    c.llc_kib = p.u64_or(ct, "cost", "llc_kib", 1, 1 << 30, c.llc_kib as u64)? as u32;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"
[machine]
name = "mini"
[topology]
packages = 2
llcs_per_node = 2
cores_per_cluster = 2
threads_per_core = 2
[[core_type]]
name = "x"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
"#;

    fn err_of(text: &str) -> SchedlabError {
        parse_machine(text, "toml", "f.toml").unwrap_err()
    }

    #[test]
    fn parses_and_numbers_split() {
        let m = parse_machine(MINI, "toml", "f.toml").unwrap();
        assert_eq!(m.nr_cpus(), 16);
        assert_eq!((m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_packages), (8, 4, 2, 2));
        // split numbering: cpu 8 is the sibling of cpu 0
        assert_eq!(m.smt_mask(CpuId(0)).to_list_string(), "0,8");
        assert_eq!(m.llc_cpus[0].to_list_string(), "0-1,8-9");
        assert_eq!(m.node_cpus[1].to_list_string(), "4-7,12-15");
        assert_eq!(m.freq_domains.len(), 2);
        assert_eq!(m.numa_distance, vec![vec![10, 21], vec![21, 10]]);
        assert!(!m.has_clusters);
        assert_eq!(m.core_types[0].idle_states.len(), 1);
    }

    #[test]
    fn adjacent_numbering_and_json() {
        let json = r#"{"machine":{"name":"j"},"topology":{"cores_per_cluster":2,"threads_per_core":2,
            "smt_numbering":"adjacent"},"core_type":[{"name":"x","cores":"all","capacity":1024,
            "nominal_freq_mhz":1000}]}"#;
        let m = parse_machine(json, "json", "dict").unwrap();
        assert_eq!(m.smt_mask(CpuId(0)).to_list_string(), "0-1");
    }

    #[test]
    fn errors_name_file_and_key() {
        let e = err_of(&MINI.replace("threads_per_core = 2", "threads_per_core = 0"));
        assert_eq!(e, SchedlabError::spec("f.toml", "topology.threads_per_core", "an integer in 1..=1024, got 0"));
        let e = err_of(&MINI.replace("packages = 2", "packages = 2\nsockets = 1"));
        let SchedlabError::Spec { key, expected, .. } = e else { panic!() };
        assert_eq!(key, "topology.sockets");
        assert!(expected.contains("llcs_per_node"));
        let e = err_of(&MINI.replace("capacity = 1024", "capacity = 512"));
        assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "core_type"));
        let e = err_of(&MINI.replace("packages = 2", "packages = 2\nnuma_distance = [[10, 20], [30, 10]]"));
        assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "topology.numa_distance[0][1]"));
        let e = err_of(&MINI.replace("cores = \"all\"", "cores = \"0-3\""));
        assert!(e.to_string().contains("core 4 has none"), "{e}");
        let e = err_of(
            &MINI.replace("packages = 2", "packages = 64").replace("cores_per_cluster = 2", "cores_per_cluster = 64"),
        );
        assert!(e.to_string().contains("at most 1024"), "{e}");
        assert!(parse_machine("not toml [", "toml", "x").is_err());
        assert!(parse_machine("[]", "json", "x").is_err());
        assert!(parse_machine(MINI, "yaml", "x").is_err());
    }

    #[test]
    fn missing_required_keys_are_named() {
        let e = err_of(&MINI.replace("cores_per_cluster = 2\n", ""));
        assert_eq!(e, SchedlabError::spec("f.toml", "topology.cores_per_cluster", "a value (the key is required)"));
        let no_topology = "[machine]\nname = \"m\"\n[[core_type]]\nname = \"x\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 1\n";
        assert!(matches!(err_of(no_topology), SchedlabError::Spec { ref key, .. } if key == "topology"));
        let e = err_of(&MINI.replace("name = \"mini\"\n", ""));
        assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "machine.name"), "{e}");
        let e = err_of(&MINI.replace("nominal_freq_mhz = 2000\n", ""));
        assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "core_type[0].nominal_freq_mhz"), "{e}");
        // The documented defaults still apply: packages etc. may be left out.
        let m = parse_machine(&MINI.replace("packages = 2\n", ""), "toml", "f.toml").unwrap();
        assert_eq!(m.nr_packages, 1);
    }

    #[test]
    fn cost_overrides() {
        let t = format!("{MINI}\n[cost]\nipi_ns = 900\nrefill_ns_per_kib = {{ node = 400 }}\n");
        let m = parse_machine(&t, "toml", "f").unwrap();
        assert_eq!(m.cost.ipi_ns, 900);
        assert_eq!(m.cost.refill_ns_per_kib[Distance::Node as usize], 400);
        assert_eq!(m.cost.refill_ns_per_kib[Distance::Llc as usize], 30);
        let t = format!("{MINI}\n[cost]\npipe_write_ns = 437\npipe_read_ns = 441\n");
        let m = parse_machine(&t, "toml", "f").unwrap();
        assert_eq!((m.cost.pipe_write_ns, m.cost.pipe_read_ns), (437, 441));
        let m = parse_machine(MINI, "toml", "f").unwrap();
        assert_eq!((m.cost.pipe_write_ns, m.cost.pipe_read_ns), (1500, 1000), "the families' former estimates");
        let e = err_of(&format!("{MINI}\n[cost]\nrefill_ns_per_kib = {{ l3 = 4 }}\n"));
        assert!(matches!(e, SchedlabError::Spec { ref key, .. } if key == "cost.refill_ns_per_kib.l3"));
    }
}
