//! `schedlab topo show`: a machine and its sched domains, as text for people
//! and as JSON for scripts. Both carry the same content: a header with the
//! counts, the CPUs compressed into ranges per LLC and core type, the NUMA
//! distances, and per domain level its depth, span weight, an example span
//! and its groups, flags, imbalance_pct and balance intervals.

use crate::cpumask::CpuMask;
use crate::ids::CpuId;
use crate::topology::domains::{Domains, SchedDomain, SdLevel, SD_FLAG_NAMES};
use crate::topology::machine::Machine;
use serde_json::{json, Value};

/// Groups listed in full up to this many; beyond, the first few and a count.
const MAX_GROUPS_SHOWN: usize = 8;

/// Flag names of `flags`, in bit order.
pub fn flag_names(flags: u32) -> Vec<&'static str> {
    SD_FLAG_NAMES.iter().enumerate().filter(|(i, _)| flags & (1 << i) != 0).map(|(_, n)| *n).collect()
}

/// One row of the CPU table: the CPUs of one LLC with one core type.
struct CpuRow {
    llc: u32,
    node: u32,
    package: u32,
    core_type: u16,
    cpus: CpuMask,
}

fn cpu_rows(m: &Machine) -> Vec<CpuRow> {
    let mut rows: Vec<CpuRow> = Vec::new();
    for c in &m.cpus {
        match rows.iter_mut().find(|r| r.llc == c.llc && r.core_type == c.core_type) {
            Some(r) => r.cpus.set(c.id),
            None => rows.push(CpuRow {
                llc: c.llc,
                node: c.node,
                package: c.package,
                core_type: c.core_type,
                cpus: CpuMask::from_cpus([c.id]),
            }),
        }
    }
    rows
}

/// A level's summary: the domain shown as its example (the one in CPU 0's
/// chain, else the first built) and what varies across its domains.
struct LevelSummary<'a> {
    level: SdLevel,
    example: &'a SchedDomain,
    depths: Vec<u32>,
    weights: Vec<u32>,
    nr_domains: usize,
}

fn levels(d: &Domains) -> Vec<LevelSummary<'_>> {
    let mut lv: Vec<SdLevel> = d.sds.iter().map(|s| s.level).collect();
    lv.sort();
    lv.dedup();
    let cpu0: Vec<&SchedDomain> = d.cpu_sd.first().map(|c| c.iter().map(|&id| d.sd(id)).collect()).unwrap_or_default();
    lv.into_iter()
        .map(|level| {
            let all: Vec<&SchedDomain> = d.sds.iter().filter(|s| s.level == level).collect();
            let example = cpu0.iter().copied().find(|s| s.level == level).unwrap_or(all[0]);
            let mut depths: Vec<u32> = all.iter().map(|s| s.depth).collect();
            depths.sort_unstable();
            depths.dedup();
            let mut weights: Vec<u32> = all.iter().map(|s| s.span_weight).collect();
            weights.sort_unstable();
            weights.dedup();
            LevelSummary { level, example, depths, weights, nr_domains: all.len() }
        })
        .collect()
}

fn list_u32(v: &[u32]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn groups_text(groups: &[CpuMask]) -> String {
    let shown: Vec<String> =
        groups.iter().take(MAX_GROUPS_SHOWN).map(|g| format!("{{{}}}", g.to_list_string())).collect();
    let mut s = shown.join(" ");
    if groups.len() > MAX_GROUPS_SHOWN {
        s.push_str(&format!(" ... ({} more)", groups.len() - MAX_GROUPS_SHOWN));
    }
    s
}

fn header(m: &Machine) -> String {
    let threads = m.core_cpus.iter().map(|c| c.weight()).max().unwrap_or(1);
    format!(
        "{}: {} CPUs, {} cores, {} clusters{}, {} LLCs, {} nodes, {} packages, {} thread(s) per core, HZ={}",
        m.name,
        m.nr_cpus(),
        m.nr_cores,
        m.nr_clusters,
        if m.has_clusters { "" } else { " (= LLCs, no CLS level)" },
        m.nr_llcs,
        m.nr_nodes,
        m.nr_packages,
        threads,
        m.hz
    )
}

/// Render `m` and its domains as text.
pub fn render_text(m: &Machine, d: &Domains) -> String {
    let mut out = String::new();
    out.push_str(&header(m));
    out.push('\n');
    if !m.description.is_empty() {
        out.push_str(&format!("  {}\n", m.description));
    }
    out.push_str("CPUs:\n");
    for r in cpu_rows(m) {
        let ct = &m.core_types[r.core_type as usize];
        out.push_str(&format!(
            "  package {} node {} llc {}: {} (capacity {}, {} MHz): cpus {}\n",
            r.package,
            r.node,
            r.llc,
            ct.name,
            ct.capacity,
            ct.nominal_freq_khz / 1000,
            r.cpus.to_list_string()
        ));
    }
    if m.nr_nodes > 1 {
        out.push_str("NUMA distance:\n");
        for row in &m.numa_distance {
            out.push_str(&format!("  {}\n", row.iter().map(|x| format!("{x:>3}")).collect::<String>()));
        }
    }
    out.push_str(&format!("sched domains ({} levels on the longest chain):\n", d.nr_levels));
    for l in levels(d) {
        let e = l.example;
        let ex_cpu = if e.span.test(CpuId(0)) { 0 } else { e.span.first().map_or(0, |c| c.0) };
        out.push_str(&format!(
            "  {:<6} depth {:<4} weight {:<8} span(cpu {}) {}\n",
            l.level.name(),
            list_u32(&l.depths),
            list_u32(&l.weights),
            ex_cpu,
            e.span.to_list_string()
        ));
        out.push_str(&format!("         {} groups: {}\n", e.groups.len(), groups_text(&e.groups)));
        out.push_str(&format!("         flags {}\n", flag_names(e.flags).join("|")));
        out.push_str(&format!(
            "         imbalance_pct {}  interval {}..{} ms  busy_factor {}  cache_nice_tries {}  ({} distinct domains)\n",
            e.imbalance_pct, e.min_interval_ms, e.max_interval_ms, e.busy_factor, e.cache_nice_tries, l.nr_domains
        ));
    }
    out
}

/// Render `m` and its domains as JSON (same content as [`render_text`], with
/// every domain listed).
pub fn render_json(m: &Machine, d: &Domains) -> Value {
    let cpus: Vec<Value> = cpu_rows(m)
        .iter()
        .map(|r| {
            json!({"package": r.package, "node": r.node, "llc": r.llc,
                   "core_type": m.core_types[r.core_type as usize].name, "cpus": r.cpus.to_list_string()})
        })
        .collect();
    let core_types: Vec<Value> = m
        .core_types
        .iter()
        .map(|t| {
            json!({"name": t.name, "capacity": t.capacity, "nominal_freq_khz": t.nominal_freq_khz,
                   "smt_speed_pct": t.smt_speed_pct,
                   "opps": t.opps.iter().map(|o| json!({"freq_khz": o.freq_khz, "power_mw": o.power_mw})).collect::<Vec<_>>(),
                   "idle_states": t.idle_states.iter().map(|s| json!({"name": s.name,
                        "exit_latency_ns": s.exit_latency_ns, "actual_exit_latency_ns": s.actual_exit_latency_ns,
                        "target_residency_ns": s.target_residency_ns,
                        "power_mw": s.power_mw, "level": s.level.name()})).collect::<Vec<_>>()})
        })
        .collect();
    let sd_json = |s: &SchedDomain| {
        json!({"level": s.level.name(), "depth": s.depth, "span": s.span.to_list_string(),
               "span_weight": s.span_weight,
               "groups": s.groups.iter().map(|g| g.to_list_string()).collect::<Vec<_>>(),
               "flags": flag_names(s.flags), "imbalance_pct": s.imbalance_pct,
               "min_interval_ms": s.min_interval_ms, "max_interval_ms": s.max_interval_ms,
               "busy_factor": s.busy_factor, "cache_nice_tries": s.cache_nice_tries,
               "parent": s.parent.map(|p| p.0), "child": s.child.map(|c| c.0)})
    };
    let lv: Vec<Value> = levels(d)
        .iter()
        .map(|l| {
            json!({"name": l.level.name(), "depths": l.depths, "span_weights": l.weights,
                   "nr_domains": l.nr_domains, "example": sd_json(l.example)})
        })
        .collect();
    let c = &m.cost;
    json!({
        "machine": {"name": m.name, "description": m.description, "hz": m.hz,
                    "nr_cpus": m.nr_cpus(), "nr_cores": m.nr_cores, "nr_clusters": m.nr_clusters,
                    "has_clusters": m.has_clusters, "nr_llcs": m.nr_llcs, "nr_nodes": m.nr_nodes,
                    "nr_packages": m.nr_packages},
        "cpus": cpus,
        // Each CPU's `Machine::distance` from CPU 0, by name, indexed by CPU
        // (calibrate picks its pairs of CPUs by it).
        "distance_from_cpu0": m.cpus.iter().map(|c| m.distance(CpuId(0), c.id).name()).collect::<Vec<_>>(),
        "core_types": core_types,
        "numa_distance": m.numa_distance,
        "cost": {"refill_ns_per_kib": c.refill_ns_per_kib, "ipi_ns": c.ipi_ns,
                 "scan_ns_per_cpu": c.scan_ns_per_cpu, "balance_ns_base": c.balance_ns_base,
                 "balance_ns_per_cpu": c.balance_ns_per_cpu, "context_switch_ns": c.context_switch_ns,
                 "wakeup_ns": c.wakeup_ns, "ipi_send_ns": c.ipi_send_ns,
                 "ttwu_queue_ns": c.ttwu_queue_ns, "pipe_write_ns": c.pipe_write_ns, "pipe_read_ns": c.pipe_read_ns,
                 "l2_kib": c.l2_kib, "llc_kib": c.llc_kib},
        "nr_levels": d.nr_levels,
        "levels": lv,
        "domains": d.sds.iter().map(sd_json).collect::<Vec<_>>(),
        "cpu_chains": d.cpu_sd.iter().map(|ch| ch.iter().map(|id| id.0).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{build_sched_domains, parse_machine};

    const TWO_LLC: &str = r#"
[machine]
name = "t"
[topology]
llcs_per_node = 2
cores_per_cluster = 2
threads_per_core = 2
[[core_type]]
name = "x"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
"#;

    #[test]
    fn text_and_json_agree() {
        let m = parse_machine(TWO_LLC, "toml", "t").unwrap();
        let d = build_sched_domains(&m).unwrap();
        let t = render_text(&m, &d);
        assert!(t.starts_with("t: 8 CPUs, 4 cores"), "{t}");
        assert!(t.contains("llc 0: x (capacity 1024, 2000 MHz): cpus 0-1,4-5"), "{t}");
        assert!(t.contains("SMT    depth 0"), "{t}");
        assert!(t.contains("PKG"), "{t}");
        assert!(t.contains("imbalance_pct 110"), "{t}");
        let j = render_json(&m, &d);
        assert_eq!(j["nr_levels"], 3);
        assert_eq!(j["levels"][2]["name"], "PKG");
        assert_eq!(j["levels"][2]["example"]["groups"][1], "2-3,6-7");
        assert_eq!(j["cpus"][1]["cpus"], "2-3,6-7");
        // Per CPU: CPU 4 is CPU 0's SMT sibling, CPU 1 another core of its
        // LLC, CPU 2 in the other LLC.
        let d = &j["distance_from_cpu0"];
        assert_eq!((d[0].as_str(), d[4].as_str(), d[1].as_str()), (Some("same"), Some("smt"), Some("llc")));
        assert_eq!((d[2].as_str(), d.as_array().map(Vec::len)), (Some("package"), Some(8)));
    }

    #[test]
    fn many_groups_elided() {
        let gs: Vec<CpuMask> = (0..10).map(|c| CpuMask::from_cpus([CpuId(c)])).collect();
        let s = groups_text(&gs);
        assert!(s.ends_with("... (2 more)"), "{s}");
        assert_eq!(flag_names(0b101), vec!["SD_BALANCE_NEWIDLE", "SD_BALANCE_FORK"]);
    }
}
