//! The launcher's `wakee_flips`, inherited at fork, decides `wake_wide()` for
//! tasks that wake no one: the mechanism behind the saturated-hackbench gap
//! measured against a Debian 6.12 guest (docs/validation.md). There, on a
//! 2-core x 2-thread guest, every hackbench thread started with
//! `wakee_flips = 8` (copied from the shell), receivers kept it, so
//! `wake_wide()` held (8 >= LLC size 4, the senders' flips >= 4 x 8) and
//! 97.8% of wakees stayed on their previous CPU (0.026 migrations per
//! wakeup). With flips taken as 0, schedlab ran `wake_affine` and sent about
//! a tenth of the wakees to the waker's CPU.

use schedlab_core::api::run;
use schedlab_core::api::MachineSource;
use schedlab_core::testkit::{inline_source, metric, preset_source, run_spec};

/// The guest's shape, 1 package of 2 cores x 2 SMT threads in one LLC, with
/// the laptop preset's per-core parameters (SMT speed, idle states, costs).
fn guest_2c2t() -> MachineSource {
    let laptop = preset_source("laptop-4c8t");
    assert!(laptop.text.contains("cores_per_cluster = 4"));
    // The turbo table has one entry per core of the package: keep two.
    let turbo = "turbo_mhz = [4000, 3700, 3700, 3700]";
    assert!(laptop.text.contains(turbo));
    let text = laptop.text.replace("cores_per_cluster = 4", "cores_per_cluster = 2");
    inline_source(&text.replace(turbo, "turbo_mhz = [4000, 3700]"))
}

fn migrations_per_wakeup(flips: u32) -> f64 {
    let w = format!("hackbench:groups=2,fds=20,loops=100,ipc=pipe,mode=thread,parent_wakee_flips={flips}");
    let r = run(&run_spec(guest_2c2t(), &w, "v6.12", 1, false)).unwrap();
    metric(&r, "migrations") / metric(&r, "wakeups")
}

#[test]
fn inherited_flips_at_llc_size_keep_saturated_wakees_on_their_cpu() {
    let quiet = migrations_per_wakeup(0);
    let shell = migrations_per_wakeup(8);
    // Below the LLC size (4) the receivers' count cannot make wake_wide hold.
    let below = migrations_per_wakeup(3);
    assert!(below > 0.05, "flips 3 < LLC size 4 still wakes affine: {below}");
    assert!(quiet > 0.05, "without inherited flips wake_affine moves wakees: {quiet}");
    assert!(shell < quiet / 3.0, "with flips 8 wake_wide keeps them: {shell} vs {quiet}");
}
