"""Reproduction cases of SEEDS.md idea 5 beyond those in `schedlab.reproduce`.

joel-ping-hackbench is the no-harm half of Joel Fernandes' capacity_spare_wake
series: the same two policies as joel-rt-hackbench, on a symmetric x86 server
with a ping flood instead of RT tasks on a phone.
"""

from __future__ import annotations

from ._case import Case, hackbench_rows

__all__ = ["JOEL_PING_HACKBENCH"]

_POLICIES = ("v4.14", "v4.14+capacity_spare_wake_current")

# Published (SEEDS.md idea 5): "within about 1-3% either way", no figures and
# no group counts. The rows are hackbench's group counts from 40 tasks to 320
# (8 tasks per CPU of the 40): an assumption, like cas-hackbench's.
_GROUPS: dict[int, tuple[float, ...]] = {1: (), 2: (), 4: (), 8: ()}

#: Why no row can move: v4.14 reads capacity_spare_wake only in
#: find_idlest_group, only for exec and wakeup balancing (never fork: a new
#: task has no utilisation), and a wakeup reaches find_idlest_group only
#: through SD_BALANCE_WAKE, which v4.14 sets only below a domain with
#: asymmetric capacities (wake_cap). This machine is symmetric and hackbench
#: never execs.
_NEVER_READ = (
    "capacity_spare_wake is never read: v4.14 reads it for exec and wakeup balancing only, "
    "wakeups on a symmetric machine take the fast path, and hackbench never execs"
)

JOEL_PING_HACKBENCH = Case(
    name="joel-ping-hackbench",
    title="capacity_spare_wake from capacity_of, no-harm: threaded hackbench beside a ping flood "
    "(2-socket 20-core x86)",
    seed_idea="5",
    machine="xeon-2s-20c",
    policies=_POLICIES,
    metrics=("completion_time_s",),
    # Threaded hackbench (-T) in groups of 40 (its default -f 20), -l not
    # published: the default 100 at scale 1. The flood is cas-hackbench's
    # (the irq family's pingflood preset) on CPUs 0 and 1, started 500 ms
    # before hackbench so that their avg_irq, hence capacity_of, has built up.
    rows=hackbench_rows(
        _POLICIES,
        _GROUPS,
        40,
        "groups={groups} ({tasks} threads) + ping flood on CPUs 0-1 (published: within 1-3%)",
        "hackbench:groups={groups},mode=thread,loops={loops},start=500ms",
        100,
        "irq:preset=pingflood,cpus=0-1",
        structural=_NEVER_READ,
        no_change="within about 1-3% either way (no figures)",
    ),
    default_runs=3,
    notes=(
        "Published: 'within about 1-3% either way', without figures or group counts (1, 2, 4 "
        "and 8 groups assumed). Every row is structural: in v4.14 capacity_spare_wake is read "
        "only by find_idlest_group for exec and wakeup balancing; fork skips it, and on a "
        "symmetric machine no wakeup takes the slow path (no SD_BALANCE_WAKE without "
        "asymmetric capacities). So the two policies run the same decisions, the simulated "
        "difference is exactly 0 (inside the published band), and the no-harm claim holds "
        "because the patch cannot act here, not because it acts harmlessly."
    ),
)
