//! Tests of `topo import`: sysfs-shaped trees written into a temporary
//! directory from a compact description, imported, parsed and turned into
//! sched domains, whose levels and spans are checked against what the kernel
//! builds on such a machine.

use crate::cpumask::CpuMask;
use crate::error::SchedlabError;
use crate::ids::CpuId;
use crate::topology::{build_sched_domains, import_sysfs, parse_machine, Domains, Machine};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A cache level of the description: level, type, size text, and the CPUs
/// sharing the instance of a given CPU.
struct CacheDesc {
    level: u32,
    kind: &'static str,
    size: &'static str,
    shared: fn(u32) -> Vec<u32>,
}

/// A compact machine description, written out in sysfs formats.
struct Desc {
    nr_cpus: u32,
    /// Thread siblings of a CPU (itself included).
    siblings: fn(u32) -> Vec<u32>,
    package: fn(u32) -> u32,
    /// `cluster_cpus_list`, when the kernel exposes it.
    cluster: Option<fn(u32) -> Vec<u32>>,
    caches: Vec<CacheDesc>,
    /// `cpu_capacity` (arm64, recent x86).
    capacity: Option<fn(u32) -> u32>,
    /// cpufreq policies: related CPUs and available frequencies (kHz).
    policies: Vec<(Vec<u32>, Vec<u32>)>,
    /// cpuidle states of every CPU: name, exit latency us, target residency us.
    idle: Vec<(&'static str, u32, u32)>,
    /// NUMA nodes: CPUs and distance row. Empty: no `node` directory.
    nodes: Vec<(Vec<u32>, Vec<u32>)>,
}

/// The kernel's list format of sorted CPUs: `0-3,8-11`.
fn list(cpus: &[u32]) -> String {
    CpuMask::from_cpus(cpus.iter().map(|&c| CpuId(c))).to_list_string()
}

/// A temporary sysfs tree, removed on drop.
struct TempSys {
    root: PathBuf,
}

impl TempSys {
    fn new() -> TempSys {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let name = format!("schedlab-sysfs-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let root = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        TempSys { root }
    }

    fn put(&self, rel: &str, text: &str) {
        let p = self.root.join("devices/system").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    }

    fn write(desc: &Desc) -> TempSys {
        let t = TempSys::new();
        let n = desc.nr_cpus;
        let all: Vec<u32> = (0..n).collect();
        for f in ["online", "possible", "present"] {
            t.put(&format!("cpu/{f}"), &list(&all));
        }
        for c in 0..n {
            let tp = format!("cpu/cpu{c}/topology");
            let sib = (desc.siblings)(c);
            t.put(&format!("{tp}/thread_siblings_list"), &list(&sib));
            t.put(&format!("{tp}/core_id"), &(sib[0] % 64).to_string());
            t.put(&format!("{tp}/physical_package_id"), &(desc.package)(c).to_string());
            if let Some(cl) = desc.cluster {
                t.put(&format!("{tp}/cluster_cpus_list"), &list(&cl(c)));
            }
            for (i, k) in desc.caches.iter().enumerate() {
                let d = format!("cpu/cpu{c}/cache/index{i}");
                t.put(&format!("{d}/level"), &k.level.to_string());
                t.put(&format!("{d}/type"), k.kind);
                t.put(&format!("{d}/size"), k.size);
                t.put(&format!("{d}/shared_cpu_list"), &list(&(k.shared)(c)));
            }
            if let Some(cap) = desc.capacity {
                t.put(&format!("cpu/cpu{c}/cpu_capacity"), &cap(c).to_string());
            }
            for (i, (name, lat, res)) in desc.idle.iter().enumerate() {
                let d = format!("cpu/cpu{c}/cpuidle/state{i}");
                t.put(&format!("{d}/name"), name);
                t.put(&format!("{d}/latency"), &lat.to_string());
                t.put(&format!("{d}/residency"), &res.to_string());
            }
        }
        for (cpus, freqs) in &desc.policies {
            let d = format!("cpu/cpufreq/policy{}", cpus[0]);
            // related_cpus is space separated, unlike the *_list files.
            let rel: Vec<String> = cpus.iter().map(u32::to_string).collect();
            t.put(&format!("{d}/related_cpus"), &rel.join(" "));
            let f: Vec<String> = freqs.iter().map(u32::to_string).collect();
            t.put(&format!("{d}/scaling_available_frequencies"), &f.join(" "));
            t.put(&format!("{d}/cpuinfo_max_freq"), &freqs.iter().max().unwrap().to_string());
        }
        for (i, (cpus, dist)) in desc.nodes.iter().enumerate() {
            t.put(&format!("node/node{i}/cpulist"), &list(cpus));
            let d: Vec<String> = dist.iter().map(u32::to_string).collect();
            t.put(&format!("node/node{i}/distance"), &d.join(" "));
        }
        t
    }
}

impl Drop for TempSys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn import(root: &Path) -> (String, Machine, Domains) {
    let text = import_sysfs(root).unwrap_or_else(|e| panic!("import failed: {e}"));
    let m = parse_machine(&text, "toml", "imported").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let d = build_sched_domains(&m).unwrap();
    (text, m, d)
}

/// `cpu`'s domains bottom-up as (level, span).
fn chain(d: &Domains, cpu: u32) -> Vec<(String, String)> {
    d.chain(CpuId(cpu)).iter().map(|&id| (d.sd(id).level.name(), d.sd(id).span.to_list_string())).collect()
}

fn lv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn own(c: u32) -> Vec<u32> {
    vec![c]
}

/// This VM: 2 CPUs, private L1/L2, one shared L3, no SMT, no cpufreq, one node.
fn vm_desc() -> Desc {
    Desc {
        nr_cpus: 2,
        siblings: own,
        package: |_| 0,
        cluster: Some(own),
        caches: vec![
            CacheDesc { level: 1, kind: "Data", size: "32K", shared: own },
            CacheDesc { level: 1, kind: "Instruction", size: "32K", shared: own },
            CacheDesc { level: 2, kind: "Unified", size: "512K", shared: own },
            CacheDesc { level: 3, kind: "Unified", size: "32768K", shared: |_| vec![0, 1] },
        ],
        capacity: Some(|_| 1024),
        policies: vec![],
        idle: vec![("POLL", 0, 0), ("haltpoll idle", 1, 1)],
        nodes: vec![(vec![0, 1], vec![10])],
    }
}

#[test]
fn vm_two_cpus_one_llc() {
    let t = TempSys::write(&vm_desc());
    let (text, m, d) = import(&t.root);
    assert_eq!((m.nr_cpus(), m.nr_llcs, m.nr_nodes), (2, 1, 1));
    assert!(!m.has_smt() && !m.has_clusters);
    assert_eq!(m.cost.llc_kib, 32768);
    assert_eq!(m.cost.l2_kib, 512);
    assert_eq!(m.core_types[0].idle_states.len(), 2);
    assert!(text.contains("# from cpu0/cache/index3/size\nllc_kib = 32768"), "{text}");
    assert!(text.contains("Assumption"), "{text}");
    assert_eq!(chain(&d, 0), lv(&[("MC", "0-1")]));
}

/// 2 sockets x 4 cores x 2 threads, one node per socket, Intel numbering.
fn intel_desc() -> Desc {
    let pkg = |c: u32| (c % 8) / 4;
    Desc {
        nr_cpus: 16,
        siblings: |c| vec![c % 8, c % 8 + 8],
        package: pkg,
        cluster: None,
        caches: vec![
            CacheDesc { level: 1, kind: "Data", size: "48K", shared: |c| vec![c % 8, c % 8 + 8] },
            CacheDesc { level: 2, kind: "Unified", size: "2048K", shared: |c| vec![c % 8, c % 8 + 8] },
            CacheDesc {
                level: 3,
                kind: "Unified",
                size: "30M",
                shared: |c| (0..16).filter(|d| (d % 8) / 4 == (c % 8) / 4).collect(),
            },
        ],
        capacity: None,
        policies: (0..16).map(|c| (vec![c], vec![800_000, 3_500_000])).collect(),
        idle: vec![("POLL", 0, 0), ("C1", 2, 2), ("C6", 170, 600)],
        nodes: vec![(vec![0, 1, 2, 3, 8, 9, 10, 11], vec![10, 21]), (vec![4, 5, 6, 7, 12, 13, 14, 15], vec![21, 10])],
    }
}

#[test]
fn intel_two_sockets_smt_numa() {
    let t = TempSys::write(&intel_desc());
    let (text, m, d) = import(&t.root);
    assert!(text.contains("smt_numbering = \"split\""), "{text}");
    assert_eq!((m.nr_packages, m.nr_nodes, m.nr_cores), (2, 2, 8));
    assert_eq!(m.numa_distance, vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(m.core_types[0].nominal_freq_khz, 3_500_000);
    assert_eq!(m.freq_domains.len(), 16);
    // Kernel: SMT {0,8}, MC = the socket's LLC, PKG = the node (same span as
    // MC: degenerate), one NUMA level spanning both nodes.
    let c = chain(&d, 0);
    assert_eq!(c[..2], lv(&[("SMT", "0,8"), ("MC", "0-3,8-11")])[..]);
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c[2].0.starts_with("NUMA") && c[2].1 == "0-15", "{c:?}");
    assert_eq!(chain(&d, 13)[..2], lv(&[("SMT", "5,13"), ("MC", "4-7,12-15")])[..]);
}

/// Pixel 2 (MSM8998): 4 LITTLE (capacity 528) + 4 big, an L2 and a cpufreq
/// policy per cluster, no L3.
fn pixel2_desc() -> Desc {
    let cl = |c: u32| if c < 4 { vec![0, 1, 2, 3] } else { vec![4, 5, 6, 7] };
    Desc {
        nr_cpus: 8,
        siblings: own,
        package: |_| 0,
        cluster: Some(cl),
        caches: vec![
            CacheDesc { level: 1, kind: "Data", size: "32K", shared: own },
            CacheDesc { level: 1, kind: "Instruction", size: "64K", shared: own },
            CacheDesc { level: 2, kind: "Unified", size: "2048K", shared: cl },
        ],
        capacity: Some(|c| if c < 4 { 528 } else { 1024 }),
        policies: vec![
            (vec![0, 1, 2, 3], vec![300_000, 1_171_200, 1_900_800]),
            (vec![4, 5, 6, 7], vec![300_000, 1_574_400, 2_457_600]),
        ],
        idle: vec![("WFI", 1, 1), ("retention", 86, 504), ("power-collapse", 4562, 9183)],
        nodes: vec![],
    }
}

#[test]
fn pixel2_matches_preset_domains() {
    let t = TempSys::write(&pixel2_desc());
    let (_, m, d) = import(&t.root);
    assert_eq!(m.core_types.len(), 2);
    assert_eq!((m.capacity_orig(CpuId(0)), m.capacity_orig(CpuId(7))), (528, 1024));
    assert_eq!(m.core_types[1].nominal_freq_khz, 2_457_000);
    assert_eq!(m.freq_domains.len(), 2);
    assert_eq!(chain(&d, 0), lv(&[("MC", "0-3"), ("PKG", "0-7")]));
    let preset = include_str!("../../../../python/schedlab/presets/machines/pixel2.toml");
    let pm = parse_machine(preset, "toml", "pixel2").unwrap();
    let pd = build_sched_domains(&pm).unwrap();
    for c in 0..8 {
        assert_eq!(chain(&d, c), chain(&pd, c), "cpu{c}");
    }
    let flags = |d: &Domains| d.sds.iter().map(|s| (s.level, s.span, s.flags)).collect::<Vec<_>>();
    assert_eq!(flags(&d), flags(&pd));
}

/// One socket, 16 cores in one LLC, clusters of 4 cores sharing an L2.
fn cluster_desc() -> Desc {
    let cl = |c: u32| (c / 4 * 4..c / 4 * 4 + 4).collect();
    Desc {
        nr_cpus: 16,
        siblings: own,
        package: |_| 0,
        cluster: Some(cl),
        caches: vec![
            CacheDesc { level: 1, kind: "Data", size: "64K", shared: own },
            CacheDesc { level: 2, kind: "Unified", size: "512K", shared: own },
            CacheDesc { level: 3, kind: "Unified", size: "16384K", shared: |_| (0..16).collect() },
        ],
        capacity: Some(|_| 1024),
        policies: (0..4).map(|k| ((4 * k..4 * k + 4).collect(), vec![2_600_000])).collect(),
        idle: vec![("WFI", 1, 1)],
        nodes: vec![((0..16).collect(), vec![10])],
    }
}

#[test]
fn clusters_inside_one_llc() {
    let t = TempSys::write(&cluster_desc());
    let (text, m, d) = import(&t.root);
    assert!(m.has_clusters);
    assert!(text.contains("clusters_per_llc = 4"), "{text}");
    assert!(text.contains("per = \"cluster\""), "{text}");
    assert_eq!(chain(&d, 5), lv(&[("CLS", "4-7"), ("MC", "0-15")]));
}

#[test]
fn this_machine() {
    let sys = Path::new("/sys");
    if !sys.join("devices/system/cpu/online").exists() {
        eprintln!("skipped: /sys/devices/system/cpu is absent here");
        return;
    }
    match import_sysfs(sys) {
        Ok(text) => {
            let m = parse_machine(&text, "toml", "this machine").unwrap();
            build_sched_domains(&m).unwrap();
        }
        // An irregular machine is refused with a line saying why, never a panic.
        Err(SchedlabError::Spec { expected, .. }) => eprintln!("skipped: this machine is irregular: {expected}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn garbage_siblings_names_the_file() {
    let t = TempSys::write(&vm_desc());
    t.put("cpu/cpu1/topology/thread_siblings_list", "zz-q");
    let e = import_sysfs(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu1/topology/thread_siblings_list") && e.contains("CPU list"), "{e}");
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let cases: [(&str, &str, &str); 5] = [
        ("cpu/cpu0/cache/index3/size", "99999999999999999999K", "index3/size"),
        ("cpu/cpu0/cpu_capacity", "0", "cpu_capacity"),
        ("cpu/cpu0/cpuidle/state1/latency", "18446744073709551616", "state1/latency"),
        ("cpu/online", "0-1,9999999", "cpu/online"),
        ("node/node0/distance", "10 21", "node0/distance"),
    ];
    for (rel, text, want) in cases {
        let t = TempSys::write(&vm_desc());
        t.put(rel, text);
        let e = import_sysfs(&t.root).unwrap_err().to_string();
        assert!(e.contains(want), "{rel}: {e}");
    }
    let t = TempSys::write(&vm_desc());
    std::fs::remove_file(t.root.join("devices/system/cpu/cpu1/topology/physical_package_id")).unwrap();
    let e = import_sysfs(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu1/topology/physical_package_id"), "{e}");
    let e = import_sysfs(&t.root.join("nowhere")).unwrap_err().to_string();
    assert!(e.contains("devices/system/cpu"), "{e}");
}

#[test]
fn irregular_trees_are_refused_in_one_line() {
    // An SMT numbering neither split nor adjacent: siblings 0 and 2 of 4 CPUs
    // ... is split. Siblings {0,3} and {1,2} are neither.
    let mut d = vm_desc();
    d.nr_cpus = 4;
    d.siblings = |c| if c == 0 || c == 3 { vec![0, 3] } else { vec![1, 2] };
    d.cluster = None;
    d.caches[3].shared = |_| vec![0, 1, 2, 3];
    d.caches[2].shared = |c| if c == 0 || c == 3 { vec![0, 3] } else { vec![1, 2] };
    d.nodes = vec![];
    let t = TempSys::write(&d);
    let e = import_sysfs(&t.root).unwrap_err().to_string();
    assert!(e.contains("numbering") && !e.contains('\n'), "{e}");
    // LLCs of different sizes.
    let mut d = vm_desc();
    d.nr_cpus = 3;
    d.caches[3].shared = |c| if c < 2 { vec![0, 1] } else { vec![2] };
    d.nodes = vec![];
    let t = TempSys::write(&d);
    let e = import_sysfs(&t.root).unwrap_err().to_string();
    assert!(e.contains("LLCs of different sizes"), "{e}");
}

#[test]
fn one_node_over_two_sockets_is_one_package() {
    // NUMA off on the Intel box: the kernel's PKG level spans the node, the
    // whole machine, above one MC per socket.
    let mut d = intel_desc();
    d.nodes = vec![];
    let t = TempSys::write(&d);
    let (text, m, dom) = import(&t.root);
    assert!(text.contains("one package per node"), "{text}");
    assert_eq!((m.nr_packages, m.nr_llcs), (1, 2));
    assert_eq!(chain(&dom, 0), lv(&[("SMT", "0,8"), ("MC", "0-3,8-11"), ("PKG", "0-15")]));
}
