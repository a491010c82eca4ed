"""What a reproduction case is: its rows, its policies, its machine.

The cases themselves live with the ideas they reproduce (`schedlab.reproduce`
for ideas 1, 2, 3, 5 and 7, `_cases_idea1` for idea 1's no-harm rows,
`_cases_idea4`, `_cases_idea5` and `_cases_idea6` for the later ones);
`schedlab.reproduce` registers them all in `CASES` and runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Row:
    """One published configuration."""

    label: str
    #: Workload spec (or specs, run together) as a function of the scale factor.
    workload: Callable[[float], str | Sequence[str]]
    #: Published figure per policy (same order as the case's policies); None = not published.
    published: dict[str, float]
    #: Why the row cannot move under the policies compared, if it cannot (its
    #: verdict is then "structural", never counted as reproduced).
    structural: str | None = None
    #: cpufreq governor of this row's runs (`--governor`), when the row's
    #: published configuration names one; overrides the case's.
    governor: str | None = None
    #: Where the publication reports "no change" in words, without figures:
    #: those words. The row is judged as a published change of 0% (the
    #: no-change rule: the simulated difference must stay within the spread).
    no_change: str | None = None


@dataclass(frozen=True)
class Case:
    """One reproduction case."""

    name: str
    title: str
    seed_idea: str
    machine: str
    policies: tuple[str, ...]
    #: Metrics judged, with the published direction of "better".
    metrics: tuple[str, ...]
    rows: tuple[Row, ...]
    default_runs: int
    #: Which metric each row's ``published`` dict refers to, per metric name.
    published_by_metric: dict[str, tuple[dict[str, float], ...]] = field(default_factory=dict)
    #: The smallest step a metric can show, in its unit, where it is coarse
    #: (schbench's latencies are whole microseconds): a difference below it,
    #: simulated or published, is "unresolved", not a change or its absence.
    resolution: dict[str, float] = field(default_factory=dict)
    #: Assumed machine parameters this case's figures may hang on beyond the
    #: knobs every case is tried with: names of `_sensitivity.CASE_KNOBS`.
    knobs: tuple[str, ...] = ()
    notes: str = ""
    #: cpufreq governor the case runs under (`--governor`), when its idea
    #: acts through frequency (energy-aware placement needs schedutil).
    governor: str | None = None


def scaled(n: float, scale: float, minimum: int = 1) -> int:
    """``n`` times the scale factor, rounded, at least ``minimum``."""
    return max(minimum, round(n * scale))


def hackbench_rows(
    policies: tuple[str, ...],
    published: Mapping[int, tuple[float, ...]],
    per_group: int,
    label: str,
    bench: str,
    loops: int,
    noise: str,
    structural: str | None = None,
    no_change: str | None = None,
) -> tuple[Row, ...]:
    """One row per hackbench group count of ``published`` (the figures per
    policy, or ``()`` where none were published): hackbench ``bench``
    (``{groups}`` and ``{loops}`` filled in, ``loops`` at scale 1) beside
    ``noise``; ``label`` may name ``{groups}`` and ``{tasks}`` (``per_group``
    tasks in each group). ``structural`` and ``no_change`` (`Row`'s) apply
    to every row."""

    def spec(groups: int) -> Callable[[float], str | Sequence[str]]:
        def at(s: float) -> str | Sequence[str]:
            return [bench.format(groups=groups, loops=scaled(loops, s, 2)), noise]

        return at

    return tuple(
        Row(
            label.format(groups=g, tasks=per_group * g),
            spec(g),
            dict(zip(policies, pub, strict=True)) if pub else {},
            structural,
            no_change=no_change,
        )
        for g, pub in published.items()
    )
