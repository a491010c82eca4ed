//! `schedlab topo import`: write a machine TOML (the format of [`super::spec`])
//! from a Linux sysfs tree, this machine's `/sys` or a stored copy of it.
//!
//! `root` is a directory holding `devices/system/cpu/...` (and, on NUMA
//! machines, `devices/system/node/...`): `/sys` itself, or a copy of it.
//! Only online CPUs (`cpu/online`) are read, and they must be `0..n-1`.
//!
//! The tree is read into per-CPU masks, one per level the spec knows:
//!
//! ```text
//! core    = cpuN/topology/thread_siblings_list
//! cluster = cpuN/topology/cluster_cpus_list   (when core < cluster < LLC, else the LLC)
//! llc     = shared_cpu_list of the highest-level Unified cache in cpuN/cache/index*
//! node    = node/nodeM/cpulist of the node holding cpuN (one node if none)
//! package = the CPUs with cpuN's topology/physical_package_id
//! ```
//!
//! Each level must partition the CPUs into equal parts nested in the next
//! level, because the spec describes a machine by counts. The CPU numbering
//! is then checked by parsing the written TOML with [`parse_machine`] and
//! comparing every CPU's masks with sysfs, first with `split` numbering, then
//! with `adjacent`. Anything the spec cannot express is one error line saying
//! what is irregular. The text itself, with a comment naming the source of
//! every value, is written by `sysfs_toml`. Reading never panics: a missing required file, garbage
//! or an out-of-range number is a [`SchedlabError::Spec`] naming the file.

use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::ids::CpuId;
use crate::topology::machine::Machine;
use crate::topology::spec::parse_machine;
use crate::topology::sysfs_toml::render;

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Largest file read, bytes: sysfs attributes are one page (4 KiB); more is
/// garbage, not a sysfs file.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Most entries read from one directory (`cpuN/cache/index*`, `cpuidle/state*`).
const MAX_DIR_ENTRIES: usize = 4096;

/// Reads files under `<root>/devices/system`; `rel` paths are relative to
/// `devices/system/cpu` (`cpu0/topology/core_id`) or, starting with `node/`,
/// to `devices/system`.
pub(super) struct Sysfs {
    pub(super) base: PathBuf,
}

impl Sysfs {
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        if rel.starts_with("node/") || rel == "node" {
            self.base.join(rel)
        } else {
            self.base.join("cpu").join(rel)
        }
    }

    pub(super) fn err(&self, rel: &str, expected: impl Into<String>) -> SchedlabError {
        SchedlabError::spec(self.path(rel).display().to_string(), "(file)", expected)
    }

    /// The trimmed text of `rel`, `None` when it does not exist.
    fn opt(&self, rel: &str) -> Result<Option<String>> {
        let file = match std::fs::File::open(self.path(rel)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.err(rel, format!("a readable file: {e}"))),
        };
        let mut buf = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| self.err(rel, format!("a readable file: {e}")))?;
        if buf.len() as u64 > MAX_FILE_BYTES {
            return Err(self.err(rel, format!("a sysfs attribute of at most {MAX_FILE_BYTES} bytes")));
        }
        let text = String::from_utf8(buf).map_err(|_| self.err(rel, "UTF-8 text"))?;
        Ok(Some(text.trim().to_string()))
    }

    fn req(&self, rel: &str) -> Result<String> {
        self.opt(rel)?.ok_or_else(|| self.err(rel, "the file to exist"))
    }

    /// A CPU list (`0-3,8-11`); `related_cpus`-style space-separated lists too.
    fn list(&self, rel: &str, text: &str) -> Result<CpuMask> {
        let canon = text.split_whitespace().collect::<Vec<_>>().join(",");
        CpuMask::parse_list(&canon)
            .map_err(|e| self.err(rel, format!("a CPU list like 0-3,8-11, got \"{}\": {e}", clip(text))))
    }

    fn req_list(&self, rel: &str) -> Result<CpuMask> {
        let t = self.req(rel)?;
        self.list(rel, &t)
    }

    fn opt_list(&self, rel: &str) -> Result<Option<CpuMask>> {
        self.opt(rel)?.map(|t| self.list(rel, &t)).transpose()
    }

    fn int(&self, rel: &str, text: &str, hi: u64) -> Result<u64> {
        text.parse::<u64>()
            .ok()
            .filter(|&v| v <= hi)
            .ok_or_else(|| self.err(rel, format!("an integer in 0..={hi}, got \"{}\"", clip(text))))
    }

    fn req_int(&self, rel: &str, hi: u64) -> Result<u64> {
        let t = self.req(rel)?;
        self.int(rel, &t, hi)
    }

    fn opt_int(&self, rel: &str, hi: u64) -> Result<Option<u64>> {
        self.opt(rel)?.map(|t| self.int(rel, &t, hi)).transpose()
    }

    /// A cache size (`32K`, `1M`, or bytes) in KiB.
    fn size_kib(&self, rel: &str) -> Result<u64> {
        let t = self.req(rel)?;
        let (digits, mult_kib) = match t.strip_suffix(['K', 'k']) {
            Some(d) => (d, Some(1u64)),
            None => match t.strip_suffix('M') {
                Some(d) => (d, Some(1024)),
                None => match t.strip_suffix('G') {
                    Some(d) => (d, Some(1024 * 1024)),
                    None => (t.as_str(), None),
                },
            },
        };
        let n = digits.parse::<u64>().ok();
        let kib = match (n, mult_kib) {
            (Some(n), Some(m)) => n.checked_mul(m),
            (Some(n), None) => Some(n / 1024),
            _ => None,
        };
        kib.filter(|&k| (1..=1 << 30).contains(&k))
            .ok_or_else(|| self.err(rel, format!("a cache size like 32K of 1K..1T, got \"{}\"", clip(&t))))
    }

    /// The numeric suffixes of entries `<prefix>N` of directory `rel`, sorted.
    fn entries(&self, rel: &str, prefix: &str) -> Result<Vec<u32>> {
        let dir = match std::fs::read_dir(self.path(rel)) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.err(rel, format!("a readable directory: {e}"))),
        };
        let mut ids = Vec::new();
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(n) = name.to_str().and_then(|s| s.strip_prefix(prefix)) else { continue };
            if let Ok(id) = n.parse::<u32>() {
                ids.push(id);
            }
            if ids.len() > MAX_DIR_ENTRIES {
                return Err(self.err(rel, format!("at most {MAX_DIR_ENTRIES} {prefix}N entries")));
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }
}

/// At most 40 characters of `s`, for error messages.
fn clip(s: &str) -> String {
    let c: String = s.chars().take(40).collect();
    if c.len() < s.len() {
        format!("{c}...")
    } else {
        c
    }
}

/// One cache of `cpuN/cache/indexK`.
pub(super) struct Cache {
    src: String,
    level: u64,
    unified: bool,
    kib: u64,
    span: CpuMask,
}

/// One `cpuidle/stateK`.
pub(super) struct Idle {
    pub(super) src: String,
    pub(super) name: String,
    pub(super) latency_us: u64,
    pub(super) residency_us: u64,
}

/// What sysfs says about one online CPU.
pub(super) struct CpuFacts {
    pub(super) core: CpuMask,
    pub(super) package_id: u64,
    pub(super) cluster: Option<CpuMask>,
    pub(super) caches: Vec<Cache>,
    pub(super) capacity: Option<u64>,
}

/// One cpufreq policy.
pub(super) struct Policy {
    pub(super) src: String,
    pub(super) span: CpuMask,
    pub(super) max_khz: u64,
}

/// One NUMA node with CPUs.
pub(super) struct Node {
    pub(super) id: u32,
    pub(super) span: CpuMask,
    pub(super) distance: Vec<u64>,
}

fn read_cpu(fs: &Sysfs, cpu: u32, online: &CpuMask) -> Result<CpuFacts> {
    let t = format!("cpu{cpu}/topology");
    let core = fs.req_list(&format!("{t}/thread_siblings_list"))?.and(online);
    // core_id is read for validation only: thread_siblings_list already
    // groups the threads of a core.
    fs.opt_int(&format!("{t}/core_id"), u32::MAX as u64)?;
    // -1 (no package information) reads as u64::MAX and still groups CPUs.
    let pid_rel = format!("{t}/physical_package_id");
    let pid_text = fs.req(&pid_rel)?;
    let package_id = if pid_text == "-1" { u64::MAX } else { fs.int(&pid_rel, &pid_text, u32::MAX as u64)? };
    let cluster = fs.opt_list(&format!("{t}/cluster_cpus_list"))?.map(|m| m.and(online));
    let mut caches = Vec::new();
    for idx in fs.entries(&format!("cpu{cpu}/cache"), "index")? {
        let c = format!("cpu{cpu}/cache/index{idx}");
        caches.push(Cache {
            level: fs.req_int(&format!("{c}/level"), 16)?,
            unified: fs.req(&format!("{c}/type"))? == "Unified",
            kib: fs.size_kib(&format!("{c}/size"))?,
            span: fs.req_list(&format!("{c}/shared_cpu_list"))?.and(online),
            src: c,
        });
    }
    let capacity = fs.opt_int(&format!("cpu{cpu}/cpu_capacity"), 1 << 20)?;
    Ok(CpuFacts { core, package_id, cluster, caches, capacity })
}

pub(super) fn read_idle(fs: &Sysfs, cpu: u32) -> Result<Vec<Idle>> {
    let mut out = Vec::new();
    for k in fs.entries(&format!("cpu{cpu}/cpuidle"), "state")? {
        let s = format!("cpu{cpu}/cpuidle/state{k}");
        let raw = fs.req(&format!("{s}/name"))?;
        let name: String = raw.chars().filter(|c| !c.is_control() && *c != '"' && *c != '\\').collect();
        out.push(Idle {
            name: if name.trim().is_empty() { format!("state{k}") } else { name },
            latency_us: fs.req_int(&format!("{s}/latency"), 1_000_000)?,
            residency_us: fs.req_int(&format!("{s}/residency"), 10_000_000)?,
            src: s,
        });
    }
    // The spec wants the shallowest first; sysfs lists them so already.
    out.sort_by_key(|s| s.latency_us);
    Ok(out)
}

fn read_policies(fs: &Sysfs, online: &CpuMask) -> Result<Vec<Policy>> {
    let mut out = Vec::new();
    for p in fs.entries("cpufreq", "policy")? {
        let d = format!("cpufreq/policy{p}");
        let span = fs.req_list(&format!("{d}/related_cpus"))?.and(online);
        if span.is_empty() {
            continue;
        }
        let avail = format!("{d}/scaling_available_frequencies");
        let (src, max_khz) = match fs.opt(&avail)? {
            Some(t) if !t.is_empty() => {
                let mut max = 0;
                for f in t.split_whitespace() {
                    max = max.max(fs.int(&avail, f, 100_000_000)?);
                }
                (avail, max)
            }
            _ => {
                let r = format!("{d}/cpuinfo_max_freq");
                let v = fs.req_int(&r, 100_000_000)?;
                (r, v)
            }
        };
        if max_khz < 1000 {
            return Err(fs.err(&src, format!("a frequency of at least 1000 kHz, got {max_khz}")));
        }
        out.push(Policy { src, span, max_khz });
    }
    Ok(out)
}

fn read_nodes(fs: &Sysfs, online: &CpuMask) -> Result<Vec<Node>> {
    let ids = fs.entries("node", "node")?;
    let mut out = Vec::new();
    for &id in &ids {
        let span = fs.req_list(&format!("node/node{id}/cpulist"))?.and(online);
        if span.is_empty() {
            continue; // memory-only node: no sched domain sees it
        }
        let rel = format!("node/node{id}/distance");
        let text = fs.req(&rel)?;
        let row: Vec<u64> = text.split_whitespace().map(|d| fs.int(&rel, d, 255)).collect::<Result<_>>()?;
        if row.len() != ids.len() {
            return Err(fs.err(&rel, format!("{} distances (one per node directory), got {}", ids.len(), row.len())));
        }
        out.push(Node { id, span, distance: row });
    }
    Ok(out)
}

/// Per-CPU masks of every level, indexed by CPU.
pub(super) struct Levels {
    pub(super) core: Vec<CpuMask>,
    pub(super) cluster: Vec<CpuMask>,
    pub(super) llc: Vec<CpuMask>,
    pub(super) node: Vec<CpuMask>,
    pub(super) package: Vec<CpuMask>,
}

const LEVEL_NAMES: [&str; 5] = ["core (SMT siblings)", "cluster", "LLC", "NUMA node", "package"];

impl Levels {
    fn all(&self) -> [&Vec<CpuMask>; 5] {
        [&self.core, &self.cluster, &self.llc, &self.node, &self.package]
    }
}

/// Irregularity error: one line on what the spec cannot express.
pub(super) fn irregular(fs: &Sysfs, what: impl std::fmt::Display) -> SchedlabError {
    SchedlabError::spec(
        fs.base.join("cpu").display().to_string(),
        "topology",
        format!("a tree the machine spec can express; {what}"),
    )
}

/// Checks that every level partitions the CPUs into equal parts, each inside
/// one part of the next level; returns each level's part size.
/// Without clusters the cluster masks are the LLC's: checked as the LLC.
fn check_levels(fs: &Sysfs, lv: &Levels, n: usize, has_clusters: bool) -> Result<[u32; 5]> {
    let mut w = [0u32; 5];
    for (i, masks) in lv.all().iter().enumerate() {
        let name = LEVEL_NAMES[i];
        w[i] = masks[0].weight();
        if i == 1 && !has_clusters {
            continue;
        }
        for c in 0..n {
            let m = &masks[c];
            if !m.test(CpuId(c as u32)) {
                return Err(irregular(fs, format!("cpu{c} is not in its own {name} ({})", m.to_list_string())));
            }
            if m.weight() != w[i] {
                return Err(irregular(
                    fs,
                    format!("{name}s of different sizes: cpu0's has {} CPUs, cpu{c}'s {}", w[i], m.weight()),
                ));
            }
            if let Some(d) = m.iter().find(|d| masks[d.idx()] != *m) {
                return Err(irregular(fs, format!("cpu{c} and {d} disagree on their {name}")));
            }
            if i + 1 < 5 && !m.is_subset(&lv.all()[i + 1][c]) {
                return Err(irregular(
                    fs,
                    format!(
                        "cpu{c}'s {name} ({}) is not inside its {} ({})",
                        m.to_list_string(),
                        LEVEL_NAMES[i + 1],
                        lv.all()[i + 1][c].to_list_string()
                    ),
                ));
            }
        }
    }
    Ok(w)
}

/// Everything read, plus the derived counts.
pub(super) struct Tree {
    pub(super) n: usize,
    pub(super) facts: Vec<CpuFacts>,
    pub(super) lv: Levels,
    pub(super) w: [u32; 5],
    pub(super) llc_src: Option<String>,
    pub(super) llc_kib: Option<u64>,
    pub(super) l2: Option<(String, u64)>,
    pub(super) has_clusters: bool,
    /// One node spans several physical packages; packages counted per node.
    pub(super) packages_are_nodes: bool,
    pub(super) nodes: Vec<Node>,
    /// Every `node/nodeN` id, memory-only nodes included: the columns of a distance row.
    pub(super) node_dirs: Vec<u32>,
    pub(super) policies: Vec<Policy>,
}

/// The highest-level unified cache of a CPU: its LLC.
fn llc_of(f: &CpuFacts) -> Option<&Cache> {
    f.caches.iter().filter(|c| c.unified).max_by_key(|c| c.level)
}

fn read_tree(fs: &Sysfs) -> Result<Tree> {
    let online = fs.req_list("online")?;
    let n = online.weight() as usize;
    if n == 0 || online != CpuMask::first_n(n) {
        return Err(irregular(
            fs,
            format!("online CPUs are {} but the spec numbers CPUs 0..n-1 without gaps", online.to_list_string()),
        ));
    }
    let mut facts = Vec::with_capacity(n);
    for c in 0..n as u32 {
        facts.push(read_cpu(fs, c, &online)?);
    }
    // The LLC: the highest-level unified cache (kernel: cpu_coregroup_mask /
    // llc_shared_map). Without cache information, the package's CPUs.
    let package: Vec<CpuMask> = facts
        .iter()
        .map(|f| CpuMask::from_cpus((0..n).filter(|&d| facts[d].package_id == f.package_id).map(|d| CpuId(d as u32))))
        .collect();
    let nodes = read_nodes(fs, &online)?;
    let node: Vec<CpuMask> =
        (0..n).map(|c| nodes.iter().find(|nd| nd.span.test(CpuId(c as u32))).map_or(online, |nd| nd.span)).collect();
    // A node spanning several packages (NUMA off on a multi-socket machine):
    // the kernel's PKG level spans the node (cpu_cpu_mask), so the spec's
    // package is the node.
    let packages_are_nodes = (0..n).any(|c| package[c] != node[c] && package[c].is_subset(&node[c]));
    let package = if packages_are_nodes { node.clone() } else { package };
    let llc: Vec<CpuMask> = (0..n).map(|c| llc_of(&facts[c]).map_or(package[c].and(&node[c]), |x| x.span)).collect();
    let core: Vec<CpuMask> = facts.iter().map(|f| f.core).collect();
    // CLS exists when cluster_cpus_list lies strictly between the core and
    // the LLC (kernel: cpu_clustergroup_mask, degenerate otherwise).
    let is_cls = |c: usize| {
        facts[c]
            .cluster
            .is_some_and(|cl| core[c].is_subset(&cl) && cl != core[c] && cl.is_subset(&llc[c]) && cl != llc[c])
    };
    let has_clusters = (0..n).any(is_cls);
    let cluster: Vec<CpuMask> =
        (0..n).map(|c| if has_clusters { facts[c].cluster.unwrap_or(core[c]) } else { llc[c] }).collect();
    let lv = Levels { core, cluster, llc, node, package };
    let w = check_levels(fs, &lv, n, has_clusters)?;
    let llc0 = llc_of(&facts[0]);
    let l2 = facts[0].caches.iter().find(|c| c.level == 2 && c.unified).map(|c| (c.src.clone(), c.kib));
    let policies = read_policies(fs, &online)?;
    Ok(Tree {
        n,
        llc_src: llc0.map(|c| c.src.clone()),
        llc_kib: llc0.map(|c| c.kib),
        l2,
        has_clusters,
        packages_are_nodes,
        nodes,
        node_dirs: fs.entries("node", "node")?,
        policies,
        facts,
        lv,
        w,
    })
}

/// Import `<root>/devices/system/{cpu,node}` as machine TOML text.
pub fn import_sysfs(root: &Path) -> Result<String> {
    let fs = Sysfs { base: root.join("devices").join("system") };
    let cpu_dir = fs.base.join("cpu");
    if !cpu_dir.is_dir() {
        return Err(SchedlabError::spec(
            cpu_dir.display().to_string(),
            "(directory)",
            "a directory: give /sys or a copy of it, holding devices/system/cpu",
        ));
    }
    let t = read_tree(&fs)?;
    // Pass 1: a single core type, to learn the spec's numbering of cores and
    // nodes and check it against sysfs.
    let numberings: &[&str] = if t.w[0] > 1 { &["split", "adjacent"] } else { &["split"] };
    let mut first_err = None;
    for numbering in numberings {
        let probe = render(&fs, &t, numbering, None)?;
        let m = parse_machine(&probe, "toml", "imported")?;
        match compare(&t, &m) {
            Ok(()) => {
                let text = render(&fs, &t, numbering, Some(&m))?;
                parse_machine(&text, "toml", "imported")?; // the written file must parse
                return Ok(text);
            }
            Err(e) => {
                first_err.get_or_insert(format!("{e} with {numbering} numbering"));
            }
        }
    }
    let why = first_err.unwrap_or_default();
    Err(irregular(&fs, format!("its CPU numbering is neither split (siblings N and N+cores) nor adjacent: {why}")))
}

/// The first CPU whose masks in `m` differ from sysfs, as a message.
fn compare(t: &Tree, m: &Machine) -> std::result::Result<(), String> {
    if m.nr_cpus() != t.n {
        return Err(format!("{} CPUs in the spec, {} in sysfs", m.nr_cpus(), t.n));
    }
    for c in 0..t.n {
        let i = &m.cpus[c];
        let spec = [
            &m.core_cpus[i.core as usize],
            &m.cluster_cpus[i.cluster as usize],
            &m.llc_cpus[i.llc as usize],
            &m.node_cpus[i.node as usize],
            &m.package_cpus[i.package as usize],
        ];
        for (k, masks) in t.lv.all().iter().enumerate() {
            if *spec[k] != masks[c] {
                return Err(format!(
                    "cpu{c}'s {} is {} in sysfs but would be {}",
                    LEVEL_NAMES[k],
                    masks[c].to_list_string(),
                    spec[k].to_list_string()
                ));
            }
        }
    }
    Ok(())
}
