"""The policy that models a recorded kernel: profile by release, versioned
behaviours by release, sched features as the kernel printed them."""

import pytest

from schedlab import _native
from schedlab._kernel_profile import (
    kernel_notes,
    parse_sched_tunables,
    policy_for_kernel,
    preempt_model,
    tunable_notes,
)

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
        (
            "6.1.0-41-amd64",
            ["NO_SIS_PROP", "SIS_UTIL"],
            "v5.9+SIS_UTIL-SIS_PROP+migrate_se_pelt_lag+wa_idle_prev",
        ),
        # 6.18 has v6.14's pipe_read writer wakeup (only on a freed page), and
        # from 6.18.5 on the stable backport of NI_RANDOM (v6.19's).
        # v6.16's uclamp order as well.
        ("6.18.44-fc", [], "v6.12+NI_RANDOM+pipe_release_wakes_writer+uclamp_inc_before_enqueue"),
        ("6.18.4", [], "v6.12+pipe_release_wakes_writer+uclamp_inc_before_enqueue"),
        ("6.18.5", [], "v6.12+NI_RANDOM+pipe_release_wakes_writer+uclamp_inc_before_enqueue"),
        # v6.19: NI_RANDOM in mainline, a forked task's preemption and the
        # slow path's allowed-CPU statistics.
        (
            "6.19.0",
            [],
            "v6.12+NI_RANDOM+wakeup_preempt_no_fork+pipe_release_wakes_writer"
            "+wakeup_stats_allowed+uclamp_inc_before_enqueue",
        ),
        ("6.12.64", [], "v6.12"),
        ("6.12.65-amd64", [], "v6.12+NI_RANDOM"),
        # Printed features win over the sublevel's default.
        ("6.18.44", ["NO_NI_RANDOM"], "v6.12+pipe_release_wakes_writer+uclamp_inc_before_enqueue"),
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
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        policy_for_kernel("linux", [])


# This VM's kernel (a Firecracker 6.18): its command line carries a scheduler
# parameter that mainline does not have (`vcpu_pack_room` sits in its fair.c
# text, /proc/kallsyms), and its config builds PREEMPT_NONE.
FC_CMDLINE = (
    "mitigations=auto console=ttyS0 cpuidle_haltpoll.force=1 haltpoll.guest_halt_poll_ns=0 "
    "sched_vcpu_pack=15 rdinit=/process_api -- --firecracker-init --addr 0.0.0.0:2024"
)
FC_CONFIG = (
    "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\n"
    "CONFIG_PREEMPT_DYNAMIC=y\n"
)


def test_a_vendor_scheduler_parameter_and_preempt_none_are_named():
    model = preempt_model(FC_CMDLINE, FC_CONFIG)
    assert model == "none"
    notes = kernel_notes({"cmdline": FC_CMDLINE, "preempt_model": model})
    assert len(notes) == 2
    assert "sched_vcpu_pack=15 is not mainline's" in notes[0]
    assert notes[1].startswith("preemption model none")


def test_a_mainline_kernel_has_no_notes():
    cmdline = "console=ttyS0 panic=-1 sched_verbose nokaslr"
    assert kernel_notes({"cmdline": cmdline, "preempt_model": "full"}) == []
    # What follows `--` is init's, not the kernel's.
    assert kernel_notes({"cmdline": "quiet -- sched_whatever=1 isolcpus=1"}) == []


def test_unmodelled_mainline_parameters_are_named():
    notes = kernel_notes({"cmdline": "isolcpus=2,3 nohz_full=2,3 quiet"})
    assert notes == [
        "not modelled: isolcpus=2,3 (CPUs left out of the scheduler's domains); "
        "nohz_full=2,3 (CPUs that stop the tick while they run one task)"
    ]


@pytest.mark.parametrize(
    ("cmdline", "config", "debugfs", "want"),
    [
        # debugfs names the model in use in parentheses.
        ("", "", "none voluntary (full) lazy\n", "full"),
        # preempt= acts only on a PREEMPT_DYNAMIC kernel.
        ("preempt=full", FC_CONFIG, "", "full"),
        ("preempt=full", "CONFIG_PREEMPT_VOLUNTARY=y\n", "", "voluntary"),
        ("", "CONFIG_PREEMPT=y\n", "", "full"),
        ("", "CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n", "", "rt"),
        ("", "", "", None),
    ],
)
def test_preempt_model_from_debugfs_cmdline_or_config(cmdline, config, debugfs, want):
    assert preempt_model(cmdline, config, debugfs) == want


def test_sched_tunables_parse_from_the_guests_lines():
    text = "base_slice_ns 2100000\nnr_migrate 32\nverbose Y\nmigration_cost_ns x\n\n"
    assert parse_sched_tunables(text) == {"base_slice_ns": 2100000, "nr_migrate": 32}


def test_tunable_notes_say_equal_differ_or_unread():
    # Debian 6.12.95 on 4 vCPUs printed these (the model's: a 0.70 ms base slice).
    same = {"base_slice_ns": 2100000, "migration_cost_ns": 500000, "nr_migrate": 32}
    same["tunable_scaling"] = 1
    [note] = tunable_notes({"sched_tunables": same}, 4)
    assert note.startswith("the kernel's scheduler tunables (debugfs) are the simulation's")
    # v6.6 .. v6.14 as released: 0.75 ms, 2,250,000 ns on 4 CPUs.
    [note] = tunable_notes({"sched_tunables": {**same, "base_slice_ns": 2250000}}, 4)
    assert note == (
        "not modelled: the kernel's scheduler tunables differ: "
        "base_slice_ns 2250000 (simulated: 2100000)"
    )
    # The same recorded value is the model's on 4 CPUs but not on 8.
    [note] = tunable_notes({"sched_tunables": same}, 8)
    assert "base_slice_ns 2100000 (simulated: 2800000)" in note
    assert tunable_notes({"cmdline": ""}, 2) == []  # recorded before they were stored
    [note] = tunable_notes({"sched_tunables": {}}, 2)
    assert note.startswith("the kernel's scheduler tunables (debugfs) were not readable")
    assert "base_slice_ns 1400000" in note
