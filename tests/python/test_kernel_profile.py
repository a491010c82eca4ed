"""The policy that models a recorded kernel: profile by release, versioned
behaviours by release, sched features as the kernel printed them."""

import pytest

from schedlab import _native
from schedlab._kernel_profile import policy_for_kernel

# /sys/kernel/debug/sched/features of Debian's 6.12.95 (bookworm-backports),
# read in a QEMU guest.
DEBIAN_6_12_95 = [
    "PLACE_LAG",
    "PLACE_DEADLINE_INITIAL",
    "PLACE_REL_DEADLINE",
    "RUN_TO_PARITY",
    "PREEMPT_SHORT",
    "NO_NEXT_BUDDY",
    "PICK_BUDDY",
    "CACHE_HOT_BUDDY",
    "DELAY_DEQUEUE",
    "DELAY_ZERO",
    "WAKEUP_PREEMPTION",
    "NO_HRTICK",
    "NO_HRTICK_DL",
    "NO_DOUBLE_TICK",
    "NONTASK_CAPACITY",
    "TTWU_QUEUE",
    "SIS_UTIL",
    "NO_WARN_DOUBLE_CLOCK",
    "RT_PUSH_IPI",
    "NO_RT_RUNTIME_SHARE",
    "NO_LB_MIN",
    "ATTACH_AGE_LOAD",
    "WA_IDLE",
    "WA_WEIGHT",
    "WA_BIAS",
    "UTIL_EST",
    "NO_LATENCY_WARN",
    "NI_RANDOM",
]


def test_a_backported_feature_joins_the_release_profile():
    policy, notes = policy_for_kernel("6.12.95+deb12-amd64", DEBIAN_6_12_95)
    assert policy == "v6.12+NI_RANDOM"
    assert "NO_HRTICK" in notes[0]
    assert "ATTACH_AGE_LOAD" in notes[0]


@pytest.mark.parametrize(
    ("release", "features", "want"),
    [
        # Debian 12's CFS kernel: SIS_UTIL (v5.20), the idle-prev check (v5.10) and the
        # wakeup-migration PELT decay (v6.0).
        ("6.1.0-41-amd64", ["NO_SIS_PROP", "SIS_UTIL"], "v5.9+SIS_UTIL-SIS_PROP+migrate_se_pelt_lag+wa_idle_prev"),
        # 6.18 has v6.14's pipe_read writer wakeup (only on a freed page).
        ("6.18.44-fc", [], "v6.12+pipe_release_wakes_writer"),
        ("7.1.0", [], "v7.1"),
        ("7.3.0-rc1", [], "eevdf"),
        ("4.14.0", [], "v4.14"),
        ("5.4.0", [], "v4.14+UTIL_EST+capacity_spare_wake_current"),
        ("5.9.0", [], "v5.9"),
        # A feature the kernel switched off wins over the profile.
        ("6.12.0", ["NO_TTWU_QUEUE"], "v6.12-TTWU_QUEUE"),
    ],
)
def test_release_and_features_give_a_policy_schedlab_accepts(release, features, want):
    policy, _ = policy_for_kernel(release, features)
    assert policy == want
    _native.policy_show(policy)  # accepted by the policy parser


def test_a_release_that_is_not_one_is_an_error():
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        policy_for_kernel("linux", [])
