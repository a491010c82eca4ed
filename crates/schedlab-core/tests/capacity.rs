//! End-to-end runs of seed ideas 5 and 6 (CAS, EAS, per-domain
//! overutilized) with invariant checks, on the big.LITTLE presets.

use schedlab_core::api::{run, MachineSource, RunOptions, RunResult, RunSpec};

fn preset(name: &str) -> MachineSource {
    let path = format!("{}/../../python/schedlab/presets/machines/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    MachineSource { text: std::fs::read_to_string(&path).unwrap(), format: "toml".into(), origin: path }
}

fn go(machine: &str, workload: &str, policy: &str) -> RunResult {
    let spec = RunSpec {
        machine: preset(machine),
        workload: workload.into(),
        workload_format: "spec".into(),
        policy: policy.into(),
        seed: 3,
        options: RunOptions { trace: false, check_invariants: true, max_time_ns: 0 },
    };
    run(&spec).unwrap_or_else(|e| panic!("{machine} {policy}: {e}"))
}

fn metric(r: &RunResult, name: &str) -> f64 {
    r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
}

#[test]
fn cas_and_eas_run_clean_on_pixel2() {
    let w = "hackbench:groups=2,fds=4,loops=20";
    for policy in ["eevdf+cas", "eevdf+eas+sd_overutilized", "eevdf+eas+sd_overutilized+eas_cluster_candidates"] {
        let r = go("pixel2", w, policy);
        assert!(metric(&r, "completion_time_s") > 0.0, "{policy}");
    }
}

#[test]
fn eas_runs_clean_and_places_on_hikey960() {
    // hikey960 has OPP power figures, so EAS is active there (pixel2's preset has none).
    let w = "hackbench:groups=1,fds=2,loops=300";
    let base = metric(&go("hikey960", w, "eevdf"), "place_idle_capacity");
    for policy in ["eevdf+eas", "eevdf+eas+sd_overutilized", "eevdf+eas+eas_cluster_candidates+cas"] {
        let r = go("hikey960", w, policy);
        assert!(metric(&r, "completion_time_s") > 0.0, "{policy}");
        // EAS decisions are reported as capacity-aware placements.
        // (select_idle_capacity shares the name; EAS adds every wakeup it decides).
        let n = metric(&r, "place_idle_capacity");
        assert!(n > base, "{policy}: EAS never placed a wakeup ({n} vs {base})");
    }
}
