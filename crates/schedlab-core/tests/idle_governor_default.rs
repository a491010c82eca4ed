//! Why `avg_idle`, not the kernel's `menu`, is schedlab's default idle
//! governor (`cpuidle::IdleGovernor`, README "[cpuidle]"): under `menu` the
//! big.LITTLE presets' hackbench slows far more than their sleep states
//! should allow. When this stops holding (cluster states coupled, menu
//! checked against a kernel), the default and those docs must be revisited.

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
fn menu_doubles_pixel2_hackbench_and_slows_hikey960() {
    let pixel = completion("pixel2", "v4.14", "menu") / completion("pixel2", "v4.14", "avg_idle");
    assert!((1.8..2.4).contains(&pixel), "pixel2: menu / avg_idle = {pixel}");
    let hikey = completion("hikey960", "eevdf", "menu") / completion("hikey960", "eevdf", "avg_idle");
    assert!(hikey > 1.4, "hikey960: menu / avg_idle = {hikey}");
}
