"""The schedlab policy that models a recorded kernel.

A trace from a real kernel is compared with simulations of *that* kernel: its
release picks the nearest kernel profile, its version-dependent behaviours
(which schedlab names as lower-case features) follow the release, and every
sched feature the kernel printed in ``/sys/kernel/debug/sched/features``
(``NAME`` on, ``NO_NAME`` off) overrides the profile's default. Distribution
kernels backport: Debian's 6.12.95 prints ``NI_RANDOM``, which v6.12 as
released did not have, so its policy is ``v6.12+NI_RANDOM``. Where a kernel
hides its features, the stable sublevel decides what stable lines took
(``_STABLE_BACKPORTS``: 6.18.44 has NI_RANDOM, 6.18.4 does not).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from . import _native

# Behaviours that are not sched_feat()s in the kernel but changed with a
# release: (schedlab feature, first release with the behaviour, last release
# with it or None). Sources are in each feature's summary (`schedlab policy
# list`); the releases are when the change reached mainline.
_VERSIONED: tuple[tuple[str, tuple[int, int], tuple[int, int] | None], ...] = (
    ("EEVDF", (6, 6), None),
    ("wa_idle_prev", (5, 10), None),
    ("migrate_se_pelt_lag", (6, 0), None),
    # A sched_feat, but its default changed with v7.1 (9213aa4784cf, where
    # hrtimer rearming is deferred: x86); a kernel's printed features win.
    ("HRTICK", (7, 1), None),
    ("legacy_find_idlest_group", (0, 0), (5, 4)),
    ("capacity_spare_wake_current", (4, 15), None),
    ("wake_cap", (4, 9), (5, 6)),
    ("UTIL_EST", (4, 17), None),
    ("rt_bandwidth", (0, 0), (6, 11)),
    ("fair_server", (6, 12), None),
    ("avg_idle_put_prev", (7, 0), None),
    # fs/pipe.c, "pipe_read: don't wake up the writer if the pipe is still
    # full" (Oleg Nesterov, Jan 2025).
    ("pipe_release_wakes_writer", (6, 14), None),
    # c6dcd97c8be7 went to sched/urgent in Sept 2026, after v7.2 was out.
    ("avg_idle_stamp_guard", (7, 3), None),
    # 33cf66d88306 "sched/fair: Proportional newidle balance" (Nov 2025, the
    # v6.19 merge window), a fix for v6.18-rc's newidle regression; stable
    # lines took it too (_STABLE_BACKPORTS).
    ("NI_RANDOM", (6, 19), None),
    # 90ca9410dab2 "sched/uclamp: Align uclamp and util_est and call before
    # freq update" (tip sched/core for v6.16, May 2025).
    ("uclamp_inc_before_enqueue", (6, 16), None),
    # "sched/fair: Reimplement NEXT_BUDDY to align with EEVDF goals" (v6.19).
    ("wakeup_preempt_no_fork", (6, 19), None),
    # 82d6e01a0699 "sched/fair: Only update stats for allowed CPUs when
    # looking for dst group" (tip sched/core, Oct 2025: v6.19); stable lines
    # took it in July 2026 at sublevels not checked here.
    ("wakeup_stats_allowed", (6, 19), None),
)

# Stable kernels that took a versioned behaviour before its mainline release:
# feature -> {(major, minor): first sublevel with it}. A kernel whose sched
# features are readable (debugfs) prints them and they win; this is for
# kernels that hide them, such as this development VM's 6.18.44.
#   NI_RANDOM: v6.18.5 (its shortlog, v6.18.4..v6.18.5, carries "sched/fair:
#   Proportional newidle balance"); v6.12.65 (Debian's 6.12.95 prints
#   NI_RANDOM). v6.6.y took it as well, at a sublevel not checked here, so a
#   6.6 kernel that hides its features keeps the profile's default (off).
_STABLE_BACKPORTS: dict[str, dict[tuple[int, int], int]] = {
    "NI_RANDOM": {(6, 18): 5, (6, 12): 65},
}


# Behaviours that act only under another one: left as the profile has them
# when the other is off (switching them alone is refused or inert).
_ONLY_WITH: dict[str, str] = {
    "avg_idle_stamp_guard": "avg_idle_put_prev",
}


def _release(text: str) -> tuple[int, int]:
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"kernel release: expected MAJOR.MINOR..., got '{text}'")
    return int(m.group(1)), int(m.group(2))


def _sublevel(text: str) -> int:
    """The stable sublevel of a release (44 in ``6.18.44-fc``), 0 if none."""
    m = re.match(r"\s*\d+\.\d+\.(\d+)", text)
    return int(m.group(1)) if m else 0


def _has(name: str, first: tuple[int, int], last: tuple[int, int] | None,
         rel: tuple[int, int], sub: int) -> bool:  # fmt: skip
    """Whether a kernel release (`rel`, stable sublevel `sub`) has the
    versioned behaviour `name`: in mainline from `first` to `last`, or in a
    stable line from the sublevel that took it."""
    if rel >= first and (last is None or rel <= last):
        return True
    since = _STABLE_BACKPORTS.get(name, {}).get(rel)
    return since is not None and sub >= since


def _base_profile(rel: tuple[int, int]) -> str:
    if rel >= (7, 3):
        return "eevdf"
    if rel >= (7, 0):
        return "v7.1"
    if rel >= (6, 6):
        return "v6.12"
    if rel >= (5, 5):
        return "v5.9"
    return "v4.14"


def policy_for_kernel(release: str, sched_features: Sequence[str]) -> tuple[str, list[str]]:
    """The policy string for a kernel of `release` that printed
    `sched_features`, and notes on what the kernel had that schedlab does
    not model (its features unknown to schedlab)."""
    rel = _release(release)
    sub = _sublevel(release)
    base = _base_profile(rel)
    shown = _native.policy_show(base)
    state = {f["name"]: bool(f["on"]) for f in shown["features"]}
    want = dict(state)
    for name, first, last in _VERSIONED:
        want[name] = _has(name, first, last, rel, sub)
    for name, needs in _ONLY_WITH.items():
        if not want[needs]:
            want[name] = state[name]
    unknown: list[str] = []
    for raw in sched_features:
        on = not raw.startswith("NO_")
        name = raw[3:] if not on else raw
        if name in want and name.isupper():
            want[name] = on
        elif name not in want:
            unknown.append(raw)
    changes = [("+" if want[n] else "-") + n for n in state if want[n] != state[n]]
    notes = [f"not modelled: {', '.join(unknown)}"] if unknown else []
    return base + "".join(changes), notes


# Mainline's boot parameters named `sched_*` (Documentation/admin-guide/
# kernel-parameters.txt, linux-next of 2026). A `sched_*` parameter outside
# this set belongs to a scheduler patch that mainline does not carry.
_MAINLINE_SCHED_PARAMS = frozenset(
    {"sched_verbose", "sched_thermal_decay_shift", "sched_proxy_exec"}
)

# Mainline boot parameters that change the scheduler's decisions and that the
# simulated policy does not follow, with what they change.
_BOOT_NOT_MODELLED = {
    "isolcpus": "CPUs left out of the scheduler's domains",
    "nohz_full": "CPUs that stop the tick while they run one task",
    "relax_domain_level": "how wide wakeups and newly idle balance search",
    "idle": "the idle loop (idle=poll or halt) instead of the cpuidle states",
    "sched_proxy_exec": "proxy execution (a mutex owner runs on its waiter's time)",
}

# What schedlab's engine does with a reschedule request: the switch happens at
# once (`resched_curr` queues it for the same instant), as under full
# preemption, where the wakeup's `preempt_enable()` switches inside the system
# call. Under none or voluntary the switch waits until the task returns to
# user space or reaches a `cond_resched()`.
_MODELLED_PREEMPT = ("full", "lazy")


def preempt_model(cmdline: str, config: str, debugfs: str = "") -> str | None:
    """The kernel's preemption model: from `/sys/kernel/debug/sched/preempt`
    (the one in parentheses) when readable, else `preempt=` on the command
    line of a PREEMPT_DYNAMIC kernel, else the model its config built in."""
    m = re.search(r"\((\w+)\)", debugfs)
    if m:
        return m.group(1)
    opts = {line.partition("=")[0]: line.partition("=")[2] for line in config.splitlines()}
    if opts.get("CONFIG_PREEMPT_RT") == "y":
        return "rt"
    arg = re.search(r"(?:^|\s)preempt=(\w+)", cmdline)
    if arg and opts.get("CONFIG_PREEMPT_DYNAMIC") == "y":
        return arg.group(1)
    for key, model in (("CONFIG_PREEMPT_NONE", "none"), ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                       ("CONFIG_PREEMPT_LAZY", "lazy"), ("CONFIG_PREEMPT", "full")):  # fmt: skip
        if opts.get(key) == "y":
            return model
    return None


def kernel_notes(info: dict[str, object]) -> list[str]:
    """What a recorded kernel (its ``kernel.json``) does that the simulated
    policy does not: boot parameters that change scheduling decisions, a
    scheduler patch mainline does not have, a preemption model other than
    the one schedlab applies."""
    notes: list[str] = []
    vendor: list[str] = []
    unmodelled: list[str] = []
    for arg in str(info.get("cmdline", "")).split():
        if arg == "--":
            break  # what follows is init's arguments
        name = arg.partition("=")[0]
        if name.startswith("sched_") and name not in _MAINLINE_SCHED_PARAMS:
            vendor.append(arg)
        elif name in _BOOT_NOT_MODELLED:
            unmodelled.append(f"{arg} ({_BOOT_NOT_MODELLED[name]})")
    if vendor:
        notes.append(
            f"not modelled: the boot parameter {', '.join(vendor)} is not mainline's: this kernel "
            "carries a scheduler patch whose decisions the simulation does not make"
        )
    if unmodelled:
        notes.append(f"not modelled: {'; '.join(unmodelled)}")
    model = info.get("preempt_model")
    if isinstance(model, str) and model not in _MODELLED_PREEMPT:
        notes.append(
            f"preemption model {model}: a wakeup that preempts a task running in the kernel "
            "switches when it leaves the kernel; the simulation switches at once"
        )
    return notes


# The fair class's tunables in /sys/kernel/debug/sched/ (where v5.13 moved the
# sysctls) that the model sets, by their file names: `_native.kernel_tunables`
# gives the model's values for a CPU count; a recording stores the kernel's
# (``sched_tunables`` in kernel.json) where debugfs is readable.
SCHED_TUNABLES = ("base_slice_ns", "migration_cost_ns", "nr_migrate", "tunable_scaling")


def parse_sched_tunables(text: str) -> dict[str, int]:
    """``name value`` lines (what the guest's /init writes) as a dict of the
    tunables in `SCHED_TUNABLES`; other names and non-integer values are
    left out."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if name in SCHED_TUNABLES and value.strip().isdigit():
            found[name] = int(value)
    return found


def tunable_notes(info: dict[str, object], nr_cpus: int) -> list[str]:
    """One note on the recorded kernel's scheduler tunables against the
    simulation's on a machine of `nr_cpus` CPUs: equal, different (each
    named), or not readable (the simulation's defaults then assumed); none
    for a recording made before schedlab stored them."""
    if "sched_tunables" not in info:
        return []
    model = _native.kernel_tunables(nr_cpus)
    shown = ", ".join(f"{k} {model[k]}" for k in SCHED_TUNABLES)
    raw = info.get("sched_tunables")
    recorded = (
        {str(k): v for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
    )
    if not recorded:
        unread = "the kernel's scheduler tunables (debugfs) were not readable"
        return [f"{unread}: the simulation assumes {shown}"]
    differ = [
        f"{k} {recorded[k]} (simulated: {model[k]})"
        for k in SCHED_TUNABLES
        if k in recorded and recorded[k] != model[k]
    ]
    if differ:
        return [f"not modelled: the kernel's scheduler tunables differ: {', '.join(differ)}"]
    return [f"the kernel's scheduler tunables (debugfs) are the simulation's: {shown}"]


def _printed_domains(lines: Sequence[object]) -> dict[int, list[tuple[str, frozenset[str]]]]:
    """The kernel's sched domains per CPU from kernel.json's ``sched_domains``
    (``/sys/kernel/debug/sched/domains/cpuC/domainL NAME FLAGS...`` lines),
    lowest level first."""
    found: dict[int, list[tuple[int, str, frozenset[str]]]] = {}
    for line in lines:
        words = str(line).split()
        if len(words) < 2:
            continue  # no name: not a line the guest's /init writes
        path, name, *flags = words
        m = re.search(r"cpu(\d+)/domain(\d+)", path)
        if m:
            level = (int(m.group(2)), name, frozenset(flags))
            found.setdefault(int(m.group(1)), []).append(level)
    return {cpu: [(n, f) for _, n, f in sorted(chain)] for cpu, chain in found.items()}


def domain_notes(info: dict[str, object], machine_text: str) -> list[str]:
    """Whether the machine the simulation runs on builds the sched domains
    the recorded kernel printed in debugfs (names and flags, CPU by CPU; the
    kernel names every NUMA level ``NUMA``, schedlab numbers them): one note,
    none when the recording has no listing (this VM's kernel hides debugfs)."""
    raw = info.get("sched_domains")
    printed = _printed_domains(raw) if isinstance(raw, list) else {}
    if not printed:
        return []
    doc = _native.topo_doc(machine_text, "toml", "machine.toml")
    differ: list[str] = []
    for cpu, chain in enumerate(doc["cpu_chains"]):
        built = [
            (
                re.sub(r"^NUMA\d+$", "NUMA", doc["domains"][i]["level"]),
                frozenset(doc["domains"][i]["flags"]),
            )
            for i in chain
        ]
        if built != printed.get(cpu, []):
            names = " ".join(n for n, _ in built) or "none"
            theirs = " ".join(n for n, _ in printed.get(cpu, [])) or "none"
            differ.append(f"CPU {cpu}: {names} against the kernel's {theirs}")
    if differ:
        return [
            f"not modelled: the machine's sched domains (names and flags) differ from those the "
            f"kernel printed on {len(differ)} CPUs ({differ[0]})"
        ]
    levels = " ".join(n for n, _ in printed.get(0, []))
    same = "the machine builds the sched domains the kernel printed (debugfs), flags included"
    return [f"{same}, on every CPU: {levels}"]
