//! The TOML text of `topo import` (see [`super::sysfs`]): counts, core
//! types, frequency domains, NUMA distances and cache sizes, each commented
//! with the sysfs file it came from or marked as an assumption.

use crate::cpumask::CpuMask;
use crate::error::Result;
use crate::ids::CpuId;
use crate::topology::machine::Machine;
use crate::topology::sysfs::{irregular, read_idle, Node, Sysfs, Tree};
use std::fmt::Write as _;
use std::path::Path;

/// The TOML text. With `m = None`, a probe with one core type and no NUMA
/// distances (their order depends on the numbering being checked).
pub(super) fn render(fs: &Sysfs, t: &Tree, numbering: &str, m: Option<&Machine>) -> Result<String> {
    let [wc, wcl, wl, wn, wp] = t.w;
    let mut s = String::new();
    let root = fs.base.parent().and_then(Path::parent).unwrap_or(&fs.base).display().to_string();
    let root = root.replace(['"', '\\'], "_");
    let _ = writeln!(s, "# Imported by `schedlab topo import` from {root}/devices/system/{{cpu,node}}.");
    let _ = writeln!(s, "# Paths in comments are relative to devices/system/cpu (node/... to devices/system).");
    let _ = writeln!(s, "[machine]\nname = \"imported\"\ndescription = \"imported from sysfs under {root}\"");
    let _ = writeln!(s, "# Assumption: CONFIG_HZ is not in sysfs; the spec's default.\nhz = 250\n");
    let _ = writeln!(s, "[topology]");
    let _ = writeln!(s, "# from cpu*/topology/physical_package_id ({} CPUs online, from online)", t.n);
    if t.packages_are_nodes {
        let _ = writeln!(s, "# A NUMA node spans several packages: as the kernel's PKG level, one package per node.");
    }
    let _ = writeln!(s, "packages = {}", t.n as u32 / wp);
    let _ = writeln!(s, "# from node/node*/cpulist\nnodes_per_package = {}", wp / wn);
    let llc =
        t.llc_src.as_deref().map_or("no caches listed: the package".to_string(), |x| format!("{x}/shared_cpu_list"));
    let _ = writeln!(s, "# from {llc}\nllcs_per_node = {}", wn / wl);
    let cls = if t.has_clusters { "from cpu0/topology/cluster_cpus_list" } else { "no cluster between core and LLC" };
    let _ = writeln!(s, "# {cls}\nclusters_per_llc = {}", wl / wcl);
    let _ = writeln!(s, "# the cluster's (or LLC's) CPUs over threads_per_core\ncores_per_cluster = {}", wcl / wc);
    let _ = writeln!(s, "# from cpu0/topology/thread_siblings_list\nthreads_per_core = {wc}");
    if wc > 1 {
        let _ = writeln!(s, "# from cpu*/topology/thread_siblings_list (the numbering that matches)");
        let _ = writeln!(s, "smt_numbering = \"{numbering}\"");
    }
    if let Some(m) = m.filter(|m| m.nr_nodes > 1) {
        render_distance(&mut s, t, m);
    }
    render_core_types(&mut s, t, m, fs)?;
    render_freq_domain(fs, &mut s, t)?;
    let _ = writeln!(s, "\n[cost]");
    let _ = writeln!(s, "# Assumption: every other [cost] parameter (refill, IPI, scan, balance, context switch,");
    let _ = writeln!(s, "# wakeup costs) is not in sysfs and stays at the spec's default.");
    if let Some((src, kib)) = &t.l2 {
        let _ = writeln!(s, "# from {src}/size\nl2_kib = {kib}");
    }
    if let (Some(src), Some(kib)) = (&t.llc_src, t.llc_kib) {
        let _ = writeln!(s, "# from {src}/size\nllc_kib = {kib}");
    }
    Ok(s)
}

fn render_distance(s: &mut String, t: &Tree, m: &Machine) {
    // Spec node i holds the CPUs of one sysfs node; a distance row has one
    // column per node directory (memory-only nodes included), in id order.
    let order: Vec<&Node> = (0..m.nr_nodes as usize)
        .filter_map(|i| m.node_cpus[i].first())
        .filter_map(|c| t.nodes.iter().find(|n| n.span.test(c)))
        .collect();
    let ids: Vec<String> = order.iter().map(|n| n.id.to_string()).collect();
    let _ = writeln!(s, "# from node/node*/distance (rows in the spec's node order: nodes {})", ids.join(", "));
    let _ = writeln!(s, "numa_distance = [");
    for a in &order {
        let row: Vec<String> = order
            .iter()
            .map(|b| {
                let col = t.node_dirs.iter().position(|&id| id == b.id).unwrap_or(usize::MAX);
                a.distance.get(col).map_or("0".into(), |d| d.to_string())
            })
            .collect();
        let _ = writeln!(s, "  [{}],", row.join(", "));
    }
    let _ = writeln!(s, "]");
}

fn render_core_types(s: &mut String, t: &Tree, m: Option<&Machine>, fs: &Sysfs) -> Result<()> {
    let caps: Vec<u64> = t.facts.iter().map(|f| f.capacity.unwrap_or(1024)).collect();
    if let Some(c) = caps.iter().position(|&c| c == 0) {
        return Err(fs.err(&format!("cpu{c}/cpu_capacity"), "a capacity of at least 1"));
    }
    let max = caps.iter().copied().max().unwrap_or(1024);
    let mut distinct: Vec<u64> = caps.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let Some(m) = m else {
        let _ =
            writeln!(s, "\n[[core_type]]\nname = \"probe\"\ncores = \"all\"\ncapacity = 1024\nnominal_freq_mhz = 1000");
        return Ok(());
    };
    for &cap in &distinct {
        let cpus: Vec<usize> = (0..t.n).filter(|&c| caps[c] == cap).collect();
        let cores = CpuMask::from_cpus(cpus.iter().map(|&c| CpuId(m.cpus[c].core)));
        let first = cpus[0];
        // Capacities are relative to the biggest core (1024); sysfs
        // normalises so already, rescale if it did not.
        let scaled = (cap * 1024 / max).max(1);
        let name = if distinct.len() == 1 { "core".to_string() } else { format!("cap{scaled}") };
        let _ = writeln!(s, "\n[[core_type]]\nname = \"{name}\"");
        let _ = writeln!(s, "# cores of the CPUs with this cpu_capacity, in the spec's core numbering");
        let _ = writeln!(s, "cores = \"{}\"", if distinct.len() == 1 { "all".into() } else { cores.to_list_string() });
        match t.facts[first].capacity {
            Some(_) if scaled == cap => {
                let _ = writeln!(s, "# from cpu{first}/cpu_capacity");
            }
            Some(_) => {
                let _ = writeln!(s, "# from cpu{first}/cpu_capacity ({cap}), scaled so the biggest is 1024");
            }
            None => {
                let _ = writeln!(s, "# Assumption: no cpu_capacity files: every CPU 1024");
            }
        }
        let _ = writeln!(s, "capacity = {scaled}");
        let freq = t
            .policies
            .iter()
            .filter(|p| cpus.iter().any(|&c| p.span.test(CpuId(c as u32))))
            .rev()
            .max_by_key(|p| p.max_khz); // rev: the first policy wins ties
        match freq {
            Some(p) => {
                let _ = writeln!(s, "# from {}\nnominal_freq_mhz = {}", p.src, (p.max_khz / 1000).min(100_000));
            }
            None => {
                let _ = writeln!(s, "# Assumption: no cpufreq policy covers these CPUs (a VM?); 2000 MHz");
                let _ = writeln!(s, "nominal_freq_mhz = 2000");
            }
        }
        let _ = writeln!(s, "# Assumption: smt_speed_pct is not in sysfs; the spec's default.");
        let idle = read_idle(fs, first as u32)?;
        if idle.is_empty() {
            let _ = writeln!(s, "# Assumption: no cpu{first}/cpuidle states; the spec's default C1.");
        } else {
            let _ = writeln!(s, "idle_states = [");
            for st in &idle {
                let _ = writeln!(s, "  # from {}/{{name,latency,residency}}", st.src);
                let _ = writeln!(
                    s,
                    "  {{ name = \"{}\", exit_latency_us = {}, target_residency_us = {} }},",
                    st.name, st.latency_us, st.residency_us
                );
            }
            let _ = writeln!(s, "]");
        }
    }
    Ok(())
}

fn render_freq_domain(fs: &Sysfs, s: &mut String, t: &Tree) -> Result<()> {
    let _ = writeln!(s, "\n[freq_domain]");
    if t.policies.is_empty() {
        let _ = writeln!(s, "# Assumption: no cpufreq policies; one frequency domain per package.\nper = \"package\"");
        return Ok(());
    }
    let span_of = |c: usize| t.policies.iter().find(|p| p.span.test(CpuId(c as u32))).map(|p| p.span);
    let single = |c: usize| CpuMask::from_cpus([CpuId(c as u32)]);
    let levels: [(&str, &dyn Fn(usize) -> CpuMask); 5] = [
        ("cpu", &single),
        ("core", &|c| t.lv.core[c]),
        ("cluster", &|c| t.lv.cluster[c]),
        ("llc", &|c| t.lv.llc[c]),
        ("package", &|c| t.lv.package[c]),
    ];
    for (name, f) in levels {
        if (0..t.n).all(|c| span_of(c) == Some(f(c))) {
            let _ = writeln!(s, "# from cpufreq/policy*/related_cpus\nper = \"{name}\"");
            return Ok(());
        }
    }
    let c = (0..t.n).find(|&c| span_of(c).is_none()).unwrap_or(0);
    Err(irregular(
        fs,
        format!(
            "cpufreq policies (cpu{c} in {}) match none of cpu, core, cluster, LLC, package",
            span_of(c).map_or("no policy".into(), |m| m.to_list_string())
        ),
    ))
}
