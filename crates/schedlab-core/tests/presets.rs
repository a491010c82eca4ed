//! Every shipped machine preset parses, builds sched domains that pass the
//! `sched_domain_debug_one` checks, and has the domain chain the kernel
//! builds on that machine.

use schedlab_core::topology::domains::*;
use schedlab_core::topology::{build_sched_domains, parse_machine, render_json, render_text, Distance, Machine};
use schedlab_core::CpuId;
use std::path::PathBuf;

fn presets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/schedlab/presets/machines")
}

fn load(name: &str) -> Machine {
    let path = presets_dir().join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_machine(&text, "toml", &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

/// `cpu`'s chain as (level name, span weight).
fn chain(d: &Domains, cpu: u32) -> Vec<(String, u32)> {
    d.chain(CpuId(cpu)).iter().map(|&id| (d.sd(id).level.name(), d.sd(id).span_weight)).collect()
}

fn names(v: &[(&str, u32)]) -> Vec<(String, u32)> {
    v.iter().map(|(n, w)| (n.to_string(), *w)).collect()
}

#[test]
fn every_preset_parses_and_builds() {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(presets_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let m = load(&stem);
        assert_eq!(m.name, stem, "preset name matches its file name");
        let d = build_sched_domains(&m).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert!(d.nr_levels >= 1, "{stem}");
        assert!(!render_text(&m, &d).is_empty());
        assert!(render_json(&m, &d)["levels"].is_array());
        n += 1;
    }
    assert_eq!(n, 10, "ten presets ship");
}

#[test]
fn threadripper_chain() {
    let m = load("threadripper-3970x");
    assert_eq!(m.nr_cpus(), 64);
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("SMT", 2), ("MC", 8), ("PKG", 64)]));
    assert_eq!(m.smt_mask(CpuId(0)).to_list_string(), "0,32");
    let pkg = d.sd(d.chain(CpuId(0))[2]);
    assert_eq!(pkg.groups.len(), 8);
    assert_eq!(pkg.imbalance_pct, 117);
    let smt = d.sd(d.chain(CpuId(0))[0]);
    assert_eq!((smt.imbalance_pct, smt.cache_nice_tries), (110, 0));
    assert!(smt.has(SD_SHARE_CPUCAPACITY) && smt.has(SD_SHARE_LLC) && smt.has(SD_PREFER_SIBLING));
    assert_eq!(d.sd_llc[0], Some(d.chain(CpuId(0))[1]));
    assert_eq!(d.sd_numa[0], None);
    assert_eq!(m.distance(CpuId(0), CpuId(4)), Distance::Package);
}

#[test]
fn xeon_e7_chain_and_distance() {
    let m = load("xeon-e7-8870v4");
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("SMT", 2), ("MC", 40), ("NUMA0", 160)]));
    let numa = d.sd(d.chain(CpuId(0))[2]);
    assert_eq!(numa.groups.len(), 4);
    assert!(numa.has(SD_NUMA) && numa.has(SD_SERIALIZE) && numa.has(SD_OVERLAP));
    // Distance 21 <= RECLAIM_DISTANCE: fork/exec balance and wake_affine stay.
    assert!(numa.has(SD_WAKE_AFFINE) && numa.has(SD_BALANCE_FORK));
    assert!(!numa.has(SD_PREFER_SIBLING));
    assert_eq!((numa.imbalance_pct, numa.cache_nice_tries), (117, 2));
    assert_eq!(d.sd_numa[0], Some(d.chain(CpuId(0))[2]));
    let c = CpuId;
    assert_eq!(m.distance(c(0), c(0)), Distance::Same);
    assert_eq!(m.distance(c(0), c(80)), Distance::Smt);
    assert_eq!(m.distance(c(0), c(1)), Distance::Llc);
    assert_eq!(m.distance(c(0), c(20)), Distance::Node);
}

#[test]
fn kunpeng920_chain_and_distance() {
    let m = load("kunpeng920");
    let d = build_sched_domains(&m).unwrap();
    // SLIT 10/12/20/22/24: for node 0 NUMA(<=12) spans nodes 0-1,
    // NUMA(<=20) nodes 0-2, NUMA(<=22) all.
    assert_eq!(chain(&d, 0), names(&[("CLS", 4), ("MC", 24), ("NUMA0", 48), ("NUMA1", 72), ("NUMA2", 96)]));
    // Node 1: NUMA(<=20) equals NUMA(<=12) and degenerates.
    assert_eq!(chain(&d, 24), names(&[("CLS", 4), ("MC", 24), ("NUMA0", 48), ("NUMA2", 72), ("NUMA3", 96)]));
    let cls = d.sd(d.chain(CpuId(0))[0]);
    assert!(cls.has(SD_CLUSTER) && cls.has(SD_SHARE_LLC));
    assert_eq!(cls.groups.len(), 4);
    assert_eq!(d.sd_llc[0], Some(d.chain(CpuId(0))[1]));
    let c = CpuId;
    assert_eq!(m.distance(c(0), c(1)), Distance::Cluster);
    assert_eq!(m.distance(c(0), c(4)), Distance::Llc);
    assert_eq!(m.distance(c(0), c(24)), Distance::Node);
    assert_eq!(m.distance(c(0), c(72)), Distance::Node);
}

#[test]
fn jacobsville_chain() {
    let d = build_sched_domains(&load("jacobsville")).unwrap();
    assert_eq!(chain(&d, 0), names(&[("CLS", 4), ("MC", 24)]));
    assert_eq!(d.sd(d.chain(CpuId(0))[1]).groups.len(), 6);
}

#[test]
fn pixel2_chain_asym() {
    let m = load("pixel2");
    assert!(m.asym_capacity());
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("MC", 4), ("PKG", 8)]));
    let (mc, pkg) = (d.sd(d.chain(CpuId(0))[0]), d.sd(d.chain(CpuId(0))[1]));
    assert!(pkg.has(SD_ASYM_CPUCAPACITY) && pkg.has(SD_ASYM_CPUCAPACITY_FULL));
    assert!(!mc.has(SD_ASYM_CPUCAPACITY));
    // Don't spread across CPUs of different capacities.
    assert!(!mc.has(SD_PREFER_SIBLING));
    assert_eq!(d.sd_asym_cpucapacity[0], Some(d.chain(CpuId(0))[1]));
    assert_eq!(m.capacity_orig(CpuId(0)), 528);
}

#[test]
fn hikey960_and_laptop_chains() {
    let d = build_sched_domains(&load("hikey960")).unwrap();
    assert_eq!(chain(&d, 7), names(&[("MC", 4), ("PKG", 8)]));
    let m = load("laptop-4c8t");
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("SMT", 2), ("MC", 8)]));
    assert_eq!(m.distance(CpuId(0), CpuId(4)), Distance::Smt);
}

#[test]
fn intel_4n_192_chain() {
    let m = load("intel-4n-192");
    assert_eq!(m.nr_cpus(), 192);
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("SMT", 2), ("MC", 48), ("NUMA0", 192)]));
    let m = load("xeon-2s-44c");
    let d = build_sched_domains(&m).unwrap();
    assert_eq!(chain(&d, 0), names(&[("SMT", 2), ("MC", 44), ("NUMA0", 88)]));
}

#[test]
#[ignore = "prints `topo show` for every preset; run with --ignored --nocapture"]
fn print_all() {
    for name in ["kunpeng920", "pixel2", "threadripper-3970x"] {
        let m = load(name);
        let d = build_sched_domains(&m).unwrap();
        println!("{}", render_text(&m, &d));
    }
}

#[test]
fn has_smt_matches_a_scan_of_the_cores_on_every_preset() {
    let dir = format!("{}/../../python/schedlab/presets/machines", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let m = schedlab_core::topology::parse_machine(&text, "toml", "p").unwrap();
        let scanned = m.core_cpus.iter().any(|c| c.weight() > 1);
        assert_eq!(m.has_smt(), scanned, "{}", path.display());
    }
}

#[test]
fn intel_presets_have_p_states_for_the_governors() {
    // A light periodic load (four tasks, 2 ms of work every 10 ms): under
    // schedutil the x86 presets run part of it at P-states below their
    // nominal frequency (the Xeons at their lowest, 40-50% of the time on
    // the 20- and 44-core ones), and it takes longer than at the performance
    // governor's turbo. (laptop-4c8t's 400 MHz was only ever reached in the
    // first tick, before the first task's attach called the cpufreq hook:
    // its lowest P-state in use is 1200 MHz, below its 1800 MHz nominal.)
    use schedlab_core::api::run;
    use schedlab_core::testkit::{metric, preset_source, run_spec};
    let per = "[[task]]\nname = \"per\"\ncount = 4\n\
               ops = [ { loop = 20, do = [ { compute = \"2ms\" }, { sleep = \"8ms\" } ] } ]\n";
    for (m, nominal_khz) in [
        ("xeon-2s-20c", 2_200_000),
        ("xeon-2s-44c", 2_200_000),
        ("intel-4n-192", 2_400_000),
        ("laptop-4c8t", 1_800_000),
    ] {
        let time = |governor: &str| {
            let mut s = run_spec(preset_source(m), per, "eevdf", 0, false);
            s.workload_format = "toml".into();
            s.options.governor = Some(governor.into());
            s.options.check_invariants = false;
            run(&s).unwrap_or_else(|e| panic!("{m} {governor}: {e}"))
        };
        let sugov = time("schedutil");
        let perf = time("performance");
        let below: f64 = sugov
            .metrics
            .iter()
            .filter_map(|x| x.name.strip_prefix("freq_residency.fd0.").map(|k| (k.parse::<u64>().unwrap(), x.value)))
            .filter(|&(khz, _)| khz < nominal_khz)
            .map(|(_, v)| v)
            .sum();
        assert!(below > 0.0, "{m}: no time below the nominal frequency under schedutil");
        assert!(metric(&sugov, "completion_time_s") > metric(&perf, "completion_time_s"), "{m}");
    }
}

#[test]
fn pixel2_energy_model_is_the_pixel2_kernels_with_the_cluster_cost_folded_in() {
    // pixel2.toml: per OPP, msm8998.dtsi's CPU_COST busy cost plus a
    // quarter of its CLUSTER_COST, rounded half up. Hand check of two
    // points: gold 2457.6 MHz, 1683 + 203 / 4 = 1733.75 -> 1734 mW; silver
    // 300 MHz, 11 + 17 / 4 = 15.25 -> 15 mW. Idle: WFI 4 + 31 / 4 and
    // 10 + 50 / 4, retention 0 + 31 / 4 and 0 + 50 / 4, power collapse 0.
    use schedlab_core::testkit::{machine_from_toml, preset_source};
    use schedlab_core::topology::Opp;
    let m = machine_from_toml(&preset_source("pixel2").text);
    let (silver, gold) = (&m.core_types[0], &m.core_types[1]);
    assert_eq!((silver.opps.len(), gold.opps.len()), (22, 31));
    assert_eq!(gold.opps.last(), Some(&Opp { freq_khz: 2_457_000, power_mw: 1734 }));
    assert_eq!(silver.opps[0], Opp { freq_khz: 300_000, power_mw: 15 });
    for t in [silver, gold] {
        // The top OPP is the nominal frequency: without a governor nothing moves.
        assert_eq!(t.opps.last().map(|o| o.freq_khz), Some(t.nominal_freq_khz), "{}", t.name);
        assert!(t.opps.iter().all(|o| o.power_mw > 0), "{}", t.name);
    }
    let idle = |t: &schedlab_core::topology::machine::CoreType| -> Vec<u32> {
        t.idle_states.iter().map(|s| s.power_mw).collect()
    };
    assert_eq!(idle(silver), [12, 8, 0]);
    assert_eq!(idle(gold), [23, 13, 0]);
    // Every OPP has power: the energy model EAS needs exists.
    assert!(schedlab_core::fair::eas::EnergyModel::from_machine(&m).is_some());
}

#[test]
fn pixel2_energy_splits_by_cluster_as_the_model_says() {
    // Two periodic tasks pinned to the gold CPUs under schedutil: the
    // clusters' energies add up to the total, the CPUs' too, and the idle
    // silver cluster draws at most its WFI power (12 mW a CPU), far below
    // the gold one.
    use schedlab_core::api::run;
    use schedlab_core::testkit::{metric, preset_source, run_spec};
    let per = "[[task]]\nname = \"per\"\ncount = 2\ncpus = \"4-7\"\n\
               ops = [ { loop = 20, do = [ { compute = \"2ms\" }, { sleep = \"8ms\" } ] } ]\n";
    let mut s = run_spec(preset_source("pixel2"), per, "eevdf", 0, false);
    s.workload_format = "toml".into();
    s.options.governor = Some("schedutil".into());
    let r = run(&s).unwrap();
    let e = metric(&r, "energy_j");
    assert!(e > 0.0);
    let (fd0, fd1) = (metric(&r, "energy_j.fd0"), metric(&r, "energy_j.fd1"));
    assert!((fd0 + fd1 - e).abs() < 1e-9 * e.max(1.0), "{fd0} + {fd1} != {e}");
    let cpus: f64 = (0..8).map(|c| metric(&r, &format!("energy_j.cpu{c}"))).sum();
    assert!((cpus - e).abs() < 1e-9 * e.max(1.0), "{cpus} != {e}");
    let window_s = e / (metric(&r, "power_mw") / 1e3);
    assert!(fd0 <= 4.0 * 12e-3 * window_s + 1e-12, "silver idle {fd0} J over {window_s} s");
    assert!(fd1 > 5.0 * fd0, "gold {fd1} J, silver {fd0} J");
}
