"""`schedlab reproduce CASE --sensitivity`: does a verdict hang on an assumption?

A case runs on a machine preset whose figures are partly measured (topology,
cache sizes) and partly assumed (how fast two SMT threads run together, what
an IPI costs, how long an idle state takes to leave). Each knob below is one
such assumption with a plausible range; the case is run again with the
machine changed to each value of each knob, everything else as the preset
has it, and every judged row says whether its verdict held across the range.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._compare import Progress
from ._resolve import Source, resolve_machine
from .reproduce import DEFAULT_RESOLUTION_PCT, Case, Judged, run_case

__all__ = [
    "CASE_KNOBS",
    "KNOBS",
    "Knob",
    "Sensitivity",
    "knobs_for",
    "run_sensitivity",
    "variants",
]

Doc = dict[str, Any]


@dataclass(frozen=True)
class Knob:
    """One assumed machine parameter and its plausible range."""

    name: str
    values: tuple[float, ...]
    #: Where the range comes from.
    why: str
    #: Sets the value in a parsed machine TOML.
    apply: Callable[[Doc, float], None]
    #: Whether the knob means anything on this machine.
    applies: Callable[[Doc], bool] = lambda doc: True


def _core_types(doc: Doc) -> list[Doc]:
    return list(doc.get("core_type", []))


def _set_smt(doc: Doc, pct: float) -> None:
    for ct in _core_types(doc):
        ct["smt_speed_pct"] = int(pct)


def _set_ipi(doc: Doc, ns: float) -> None:
    doc.setdefault("cost", {})["ipi_ns"] = int(ns)


def _scale_exit(doc: Doc, factor: float) -> None:
    # A state's target residency is never below its exit latency (the CPU
    # cannot gain from a state it is still leaving; machine files are held to
    # it): a longer exit raises the residency with it where it would.
    for ct in _core_types(doc):
        for state in ct.get("idle_states", []):
            exit_us = round(state["exit_latency_us"] * factor)
            state["exit_latency_us"] = exit_us
            if "target_residency_us" in state:
                state["target_residency_us"] = max(state["target_residency_us"], exit_us)


def _has_smt(doc: Doc) -> bool:
    return int(doc.get("topology", {}).get("threads_per_core", 1)) > 1


def _has_idle_states(doc: Doc) -> bool:
    return any(ct.get("idle_states") for ct in _core_types(doc))


KNOBS: tuple[Knob, ...] = (
    Knob(
        "smt_speed_pct",
        (50, 60, 70, 80, 100),
        "each of two busy SMT threads runs at this share of its solo speed: SMT gains of "
        "1.0-1.6x per core on mixed server code put it at 50-80%; 100 = no SMT penalty",
        _set_smt,
        _has_smt,
    ),
    Knob(
        "cost.ipi_ns",
        (500, 1500, 5000, 30000),
        "a reschedule IPI's delivery: ~1-2 us on bare-metal x86, 0.5 us at best; tens of us "
        "in a VM (29 us measured on this project's VM, docs/validation.md)",
        _set_ipi,
    ),
    Knob(
        "idle exit latency x",
        (0.5, 2.0),
        "every idle state's exit latency scaled: firmware tables (_CST, intel_idle) differ "
        "by about 2x between parts and BIOS versions",
        _scale_exit,
        _has_idle_states,
    ),
)


def _set_scan(doc: Doc, ns: float) -> None:
    doc.setdefault("cost", {})["scan_ns_per_cpu"] = int(ns)


def _set_refill(distance: str) -> Callable[[Doc, float], None]:
    def apply(doc: Doc, ns_per_kib: float) -> None:
        cost = doc.setdefault("cost", {})
        cost.setdefault("refill_ns_per_kib", {})[distance] = int(ns_per_kib)

    return apply


def _has_clusters(doc: Doc) -> bool:
    return int(doc.get("topology", {}).get("clusters_per_llc", 1)) > 1


def _has_several_llcs_per_node(doc: Doc) -> bool:
    topo = doc.get("topology", {})
    return int(topo.get("llcs_per_node", 1)) > 1


def _set_idle_power(doc: Doc, pct: float) -> None:
    # The shallowest state (WFI: clocks gated, the core still powered) draws
    # `pct`% of the core type's lowest-OPP active power; the deeper ones
    # (power-gated core or cluster) a tenth of that.
    for ct in _core_types(doc):
        opps = ct.get("opps", [])
        if not opps:
            continue
        lowest = min(o.get("power_mw", 0) for o in opps)
        for i, state in enumerate(ct.get("idle_states", [])):
            share = pct if i == 0 else pct / 10
            state["power_mw"] = round(lowest * share / 100)


def _has_opp_power(doc: Doc) -> bool:
    return any(o.get("power_mw") for ct in _core_types(doc) for o in ct.get("opps", []))


#: Knobs only some cases are tried with, because only their figures can hang
#: on them; a case names them in ``Case.knobs``. Defaults are in
#: crates/schedlab-core/src/topology/spec.rs (`default_cost`).
CASE_KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob(
            "cost.scan_ns_per_cpu",
            (10, 50, 100, 200),
            "what the waker pays per CPU select_idle_cpu examines (default 20 ns: one remote "
            "runqueue line from the LLC); a line another core holds modified costs a snoop, "
            "~50-100 ns on a large mesh or ring, and a check that also reads idle state and "
            "utilisation touches several lines: up to ~200 ns",
            _set_scan,
        ),
        Knob(
            "cost.refill_ns_per_kib.cluster",
            (5, 20, 30),
            "cache refill per KiB after a move to another core of the same cluster (default 10: "
            "L1 refilled from the shared L2 or L3 tag); 30 is the default for another cluster "
            "of the LLC, i.e. a cluster that saves nothing",
            _set_refill("cluster"),
            _has_clusters,
        ),
        Knob(
            "cost.refill_ns_per_kib.package",
            (75, 300),
            "cache refill per KiB after a move to another LLC of the node (default 150: a "
            "line from another CCX or DRAM, ~100 ns, ~10 in flight); half to twice that covers "
            "parts whose cross-LLC path is faster (same die) or slower (IO die, far quadrant)",
            _set_refill("package"),
            _has_several_llcs_per_node,
        ),
        Knob(
            "idle_states.power_pct_of_lowest_opp",
            (0, 10, 30),
            "idle power where a preset gives none (hikey960): the shallowest state "
            "(WFI, clocks gated, leakage and the always-on logic remain) at this share of the "
            "core type's lowest-OPP active power, deeper (power-gated) states at a tenth of it; "
            "0 is the presets' default, 10-30% brackets WFI's share on ARM cores (an estimate: "
            "no measured table is in the presets)",
            _set_idle_power,
            _has_opp_power,
        ),
    )
}


def knobs_for(case: Case) -> tuple[Knob, ...]:
    """The knobs every case is tried with, then those the case names."""
    return KNOBS + tuple(CASE_KNOBS[name] for name in case.knobs)


@dataclass
class Sensitivity:
    """One judged comparison and its verdict at each knob value."""

    row: str
    metric: str
    policy: str
    verdict: str
    #: ``knob=value`` -> verdict there.
    varied: dict[str, str]

    @property
    def holds(self) -> bool:
        """The verdict is the same at every value tried."""
        return all(v == self.verdict for v in self.varied.values())

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "holds": self.holds}


def _label(j: Judged, base: Judged) -> str:
    """The verdict with the magnitude test where it applies. An observation
    (nothing published) has no verdict to hold, so its label is the
    simulated direction against ``base`` (the baseline policy's figure of the
    same row and metric), by the spread rule of `reproduce.judge`."""
    if j.verdict == "no published figure":
        spread = max(j.sim_sd, base.sim_sd, abs(base.sim_mean) * DEFAULT_RESOLUTION_PCT / 100)
        diff = j.sim_mean - base.sim_mean
        if abs(diff) <= spread:
            return "observed: within spread"
        return f"observed: {'higher' if diff > 0 else 'lower'}"
    if j.magnitude_within_2x is None:
        return j.verdict
    return f"{j.verdict}, {'within' if j.magnitude_within_2x else 'beyond'} 2x"


def _labelled(judged: list[Judged]) -> list[tuple[Judged, str]]:
    """Each comparison (the baseline policy's rows left out) with its label."""
    bases = {(j.row, j.metric): j for j in judged if j.verdict == "baseline"}
    return [(j, _label(j, bases[j.row, j.metric])) for j in judged if j.verdict != "baseline"]


def variants(case: Case) -> int:
    """How many changed machines `run_sensitivity` runs the case on (besides
    the case as it is), for a progress bar's total."""
    doc = _machine_doc(case)
    return sum(len(k.values) for k in knobs_for(case) if k.applies(doc))


def _machine_doc(case: Case) -> Doc:
    src = resolve_machine(case.machine)
    return tomllib.loads(src.text)


def run_sensitivity(
    case: Case,
    runs: int | None = None,
    scale: float = 1.0,
    jobs: int | None = None,
    knobs: tuple[Knob, ...] | None = None,
    stop: Callable[[], bool] | None = None,
    base: list[Judged] | None = None,
    progress: Progress | None = None,
) -> tuple[list[Sensitivity], list[str]]:
    """The case as it is (or ``base``, its verdicts from a run already
    made with the same runs and scale), then once per value of every knob
    (default: `knobs_for` the case) that applies to its machine; returns the
    comparisons (the baseline policy's rows left out) and the ``knob=value``
    columns tried. ``progress`` is handed to each of those runs of the case
    in turn, so its count starts again with each. A stop (``stop()`` true)
    raises `CaseInterrupted` from the run under way."""
    if base is None:
        base = run_case(case, runs=runs, scale=scale, jobs=jobs, stop=stop, progress=progress)
    judged = _labelled(base)
    doc = _machine_doc(case)
    out = [Sensitivity(j.row, j.metric, j.policy, label, {}) for j, label in judged]
    columns: list[str] = []
    for knob in knobs_for(case) if knobs is None else knobs:
        if not knob.applies(doc):
            continue
        for value in knob.values:
            changed = copy.deepcopy(doc)
            knob.apply(changed, value)
            column = f"{knob.name}={value:g}"
            columns.append(column)
            varied = _judged_on(case, changed, runs, scale, jobs, stop, progress)
            for s, (_, label) in zip(out, varied, strict=True):
                s.varied[column] = label
    return out, columns


def _judged_on(
    case: Case,
    machine: Doc,
    runs: int | None,
    scale: float,
    jobs: int | None,
    stop: Callable[[], bool] | None,
    progress: Progress | None = None,
) -> list[tuple[Judged, str]]:
    src: Source = resolve_machine(machine)
    src = Source(src.text, src.format, f"{case.machine} (changed)")
    judged = run_case(
        case, runs=runs, scale=scale, jobs=jobs, machine=src, stop=stop, progress=progress
    )
    return _labelled(judged)
