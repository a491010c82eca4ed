//! End-to-end runs of seed ideas 5 and 6 (CAS, EAS, per-domain
//! overutilized) with invariant checks, on the big.LITTLE presets.

use schedlab_core::api::{run, RunResult};
use schedlab_core::testkit::{metric, preset_source, run_spec};

fn go(machine: &str, workload: &str, policy: &str) -> RunResult {
    let spec = run_spec(preset_source(machine), workload, policy, 3, false);
    run(&spec).unwrap_or_else(|e| panic!("{machine} {policy}: {e}"))
}

/// `go` under schedutil, where the kernel enables EAS.
fn go_schedutil(machine: &str, workload: &str, policy: &str) -> RunResult {
    let mut spec = run_spec(preset_source(machine), workload, policy, 3, false);
    spec.options.governor = Some("schedutil".into());
    run(&spec).unwrap_or_else(|e| panic!("{machine} {policy}: {e}"))
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
    // EAS is on by default where the kernel enables it (schedutil here).
    let base = metric(&go_schedutil("hikey960", w, "eevdf-eas"), "place_idle_capacity");
    let (on, off) = (go("hikey960", w, "eevdf"), go("hikey960", w, "eevdf-eas"));
    assert_eq!(
        metric(&on, "place_idle_capacity"),
        metric(&off, "place_idle_capacity"),
        "without schedutil EAS stays off, as sched_is_eas_possible says"
    );
    for policy in ["eevdf", "eevdf+sd_overutilized", "eevdf+eas_cluster_candidates+cas"] {
        let r = go_schedutil("hikey960", w, policy);
        assert!(metric(&r, "completion_time_s") > 0.0, "{policy}");
        // EAS decisions are reported as capacity-aware placements.
        // (select_idle_capacity shares the name; EAS adds every wakeup it decides).
        let n = metric(&r, "place_idle_capacity");
        assert!(n > base, "{policy}: EAS never placed a wakeup ({n} vs {base})");
    }
}
