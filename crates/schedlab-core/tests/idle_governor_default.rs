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

fn completion(machine: &str, policy: &str, governor: &str) -> f64 {
    let mut s = run_spec(preset_source(machine), "hackbench:groups=1,fds=8,loops=300", policy, 3, false);
    s.options.idle_governor = Some(governor.into());
    s.options.check_invariants = false;
    let r = run(&s).unwrap_or_else(|e| panic!("{machine} {governor}: {e}"));
    metric(&r, "completion_time_s")
}

#[test]
fn coupled_cluster_states_close_most_of_menus_hackbench_gap() {
    // pixel2 v4.14: 0.052 s under menu without the coupling, 0.0257 s with
    // it, against avg_idle's 0.0254 s.
    let pixel = completion("pixel2", "v4.14", "menu") / completion("pixel2", "v4.14", "avg_idle");
    assert!((0.95..1.1).contains(&pixel), "pixel2 v4.14: menu / avg_idle = {pixel}");
    // hikey960 eevdf: 0.036 -> 0.023 s (avg_idle 0.024 s).
    let hikey = completion("hikey960", "eevdf", "menu") / completion("hikey960", "eevdf", "avg_idle");
    assert!(hikey < 1.1, "hikey960: menu / avg_idle = {hikey}");
    // What is left: pixel2 under eevdf is still a third slower under menu
    // (0.047 -> 0.024 s against avg_idle's 0.018 s).
    let rest = completion("pixel2", "eevdf", "menu") / completion("pixel2", "eevdf", "avg_idle");
    assert!((1.2..1.5).contains(&rest), "pixel2 eevdf: menu / avg_idle = {rest}");
}
