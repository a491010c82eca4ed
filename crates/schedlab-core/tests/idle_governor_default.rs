//! Why `avg_idle`, not the kernel's `menu`, is still schedlab's default idle
//! governor (`cpuidle::IdleGovernor`, README "[cpuidle]"). Before cluster
//! states were coupled (`cpuidle/cluster.rs`), menu doubled the big.LITTLE
//! presets' hackbench time: each CPU entered the ms-exit cluster state on
//! its own. With the coupling most of that gap is gone, but not all of it
//! on every policy; when these figures move again (menu checked against a
//! kernel, or the rest of the gap explained), revisit the default and
//! those docs.

use schedlab_core::api::run;
use schedlab_core::testkit::{metric, preset_source, run_spec};

/// Mean hackbench completion time over seeds 0-4.
fn completion(machine: &str, policy: &str, governor: &str) -> f64 {
    let mut sum = 0.0;
    for seed in 0..5 {
        let mut s = run_spec(preset_source(machine), "hackbench:groups=1,fds=8,loops=300", policy, seed, false);
        s.options.idle_governor = Some(governor.into());
        s.options.check_invariants = false;
        let r = run(&s).unwrap_or_else(|e| panic!("{machine} {governor}: {e}"));
        sum += metric(&r, "completion_time_s");
    }
    sum / 5.0
}

#[test]
fn coupled_cluster_states_close_most_of_menus_hackbench_gap() {
    // pixel2 v4.14: 0.052 s under menu without the coupling, against
    // avg_idle's 0.0254 s. With it, 0.0257 s while socket writers were
    // woken one per read; since they are woken together once the socket
    // drains to a quarter (unix_write_space), 0.0327 s against 0.0250; since
    // a preempting wakeup's cost stays the waker's (the preemption point),
    // 0.0234 s against 0.0218: menu is still slower, by far less than the
    // uncoupled double.
    let pixel = completion("pixel2", "v4.14", "menu") / completion("pixel2", "v4.14", "avg_idle");
    assert!((1.03..1.5).contains(&pixel), "pixel2 v4.14: menu / avg_idle = {pixel}");
    // What is left under eevdf (with HRTICK, the socket rule and the
    // preemption point): hikey960 0.0274 s against 0.0205 (34% slower under
    // menu), pixel2 0.0243 against 0.0218 (12%), where menu doubled them
    // before the coupling.
    for m in ["hikey960", "pixel2"] {
        let rest = completion(m, "eevdf", "menu") / completion(m, "eevdf", "avg_idle");
        assert!((1.05..1.4).contains(&rest), "{m} eevdf: menu / avg_idle = {rest}");
    }
}
