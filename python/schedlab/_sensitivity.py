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

from ._resolve import Source, resolve_machine
from .reproduce import Case, Judged, run_case

__all__ = ["KNOBS", "Knob", "Sensitivity", "run_sensitivity"]

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
    for ct in _core_types(doc):
        for state in ct.get("idle_states", []):
            state["exit_latency_us"] = round(state["exit_latency_us"] * factor)


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


def _label(j: Judged) -> str:
    """The verdict with the magnitude test where it applies."""
    if j.magnitude_within_2x is None:
        return j.verdict
    return f"{j.verdict}, {'within' if j.magnitude_within_2x else 'beyond'} 2x"


def _machine_doc(case: Case) -> Doc:
    src = resolve_machine(case.machine)
    return tomllib.loads(src.text)


def run_sensitivity(
    case: Case,
    runs: int | None = None,
    scale: float = 1.0,
    jobs: int | None = None,
    knobs: tuple[Knob, ...] = KNOBS,
    stop: Callable[[], bool] | None = None,
) -> tuple[list[Sensitivity], list[str]]:
    """The case as it is, then once per value of every knob that applies to
    its machine; returns the comparisons (the baseline policy's rows left
    out) and the ``knob=value`` columns tried. A stop (``stop()`` true)
    raises `CaseInterrupted` from the run under way."""
    judged = run_case(case, runs=runs, scale=scale, jobs=jobs, stop=stop)
    base = [j for j in judged if j.verdict != "baseline"]
    doc = _machine_doc(case)
    out = [Sensitivity(j.row, j.metric, j.policy, _label(j), {}) for j in base]
    columns: list[str] = []
    for knob in knobs:
        if not knob.applies(doc):
            continue
        for value in knob.values:
            changed = copy.deepcopy(doc)
            knob.apply(changed, value)
            column = f"{knob.name}={value:g}"
            columns.append(column)
            varied = _judged_on(case, changed, runs, scale, jobs, stop)
            for s, j in zip(out, varied, strict=True):
                s.varied[column] = _label(j)
    return out, columns


def _judged_on(
    case: Case,
    machine: Doc,
    runs: int | None,
    scale: float,
    jobs: int | None,
    stop: Callable[[], bool] | None,
) -> list[Judged]:
    src: Source = resolve_machine(machine)
    src = Source(src.text, src.format, f"{case.machine} (changed)")
    judged = run_case(case, runs=runs, scale=scale, jobs=jobs, machine=src, stop=stop)
    return [j for j in judged if j.verdict != "baseline"]
