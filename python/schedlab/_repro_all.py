"""`schedlab reproduce --all` (and ``--report``): several cases in a row,
with what the report needs beyond the verdicts.

Each case is run as `reproduce.run_case` runs it; besides its verdicts this
keeps, per run, the metrics that say where wakeups were placed and how far
tasks moved (``place_*``, ``migrations*``, ``wakeups``, ``wake_*``), which
every run measures and the verdicts do not use. With ``sensitivity`` each
case is then run again on its changed machines (`_sensitivity`), reusing the
verdicts just made as the unchanged column.

A stop keeps what finished: the cases done, and the rows of the case under
way that finished (`AllInterrupted`). A stop during a case's sensitivity
runs keeps that case's verdicts without a sensitivity table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _sensitivity
from ._native import SpecError
from ._result import RunResult
from .reproduce import DEFAULT_NO_CHANGE_PCT, Case, CaseInterrupted, Judged, run_case

__all__ = [
    "AllInterrupted",
    "CaseRun",
    "SensitivityTable",
    "load_sensitivity",
    "planned_runs",
    "run_all",
]

#: Metric name prefixes the report's placement statistics read.
PLACEMENT_PREFIXES = ("place_", "migrations", "wakeups", "wake_")

#: Called as runs finish: (case name, runs finished since the last call).
Advance = Callable[[str, int], None]


@dataclass
class SensitivityTable:
    """A case's sensitivity results and where they come from."""

    columns: list[str]
    results: list[dict[str, Any]]
    #: "run with this report", or the file it was read from.
    source: str
    scale: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CaseRun:
    """One case as far as it ran."""

    case: Case
    judged: list[Judged]
    rows_done: int
    wall_s: float
    #: One dict per run: row, policy, seed and the placement metrics.
    runs: list[dict[str, Any]] = field(default_factory=list)
    sensitivity: SensitivityTable | None = None

    @property
    def complete(self) -> bool:
        return self.rows_done == len(self.case.rows)

    def to_dict(self) -> dict[str, Any]:
        c = self.case
        return {
            "case": c.name,
            "title": c.title,
            "seed_idea": c.seed_idea,
            "machine": c.machine,
            "policies": list(c.policies),
            "complete": self.complete,
            "rows_done": self.rows_done,
            "rows_total": len(c.rows),
            "wall_s": round(self.wall_s, 3),
            "results": [j.to_dict() for j in self.judged],
            "sensitivity": None if self.sensitivity is None else self.sensitivity.to_dict(),
        }


class AllInterrupted(Exception):
    """A stop ended `run_all`; ``done`` holds every case that finished at
    least one row (the last one maybe partly)."""

    def __init__(self, done: list[CaseRun], cases_total: int) -> None:
        super().__init__(f"{len(done)} of {cases_total} cases ran")
        self.done = done
        self.cases_total = cases_total


def planned_runs(case: Case, runs: int | None, sensitivity: bool) -> int:
    """Runs (policy x seed x row) the case takes, with its sensitivity runs."""
    n = (runs or case.default_runs) * len(case.policies) * len(case.rows)
    return n * (1 + _sensitivity.variants(case)) if sensitivity else n


def _keep(row: str, policy: str, result: RunResult) -> dict[str, Any]:
    kept = {k: v for k, v in result.metrics.items() if k.startswith(PLACEMENT_PREFIXES)}
    return {"row": row, "policy": policy, "seed": result.seed, **kept}


def _counter(name: str, advance: Advance | None) -> Callable[[int, int], None] | None:
    """A `run_case` progress callback (done, total within one run of the
    case, starting again with the next) turned into increments."""
    if advance is None:
        return None
    last = 0

    def report(done: int, _total: int) -> None:
        nonlocal last
        step = done - last if done >= last else done
        last = done
        if step > 0:
            advance(name, step)

    return report


def _one(
    case: Case,
    runs: int | None,
    scale: float,
    jobs: int | None,
    no_change_pct: float,
    verdict: bool,
    advance: Advance | None,
    stop: Callable[[], bool] | None,
) -> CaseRun:
    kept: list[dict[str, Any]] = []

    def on_row(ri: int, results: list[list[RunResult]]) -> None:
        row = case.rows[ri].label
        for policy, per_seed in zip(case.policies, results, strict=True):
            kept.extend(_keep(row, policy, r) for r in per_seed)

    started = time.monotonic()
    try:
        judged = run_case(
            case,
            runs=runs,
            scale=scale,
            jobs=jobs,
            no_change_pct=no_change_pct,
            progress=_counter(case.name, advance),
            stop=stop,
            verdict=verdict,
            on_row=on_row,
        )
        rows_done = len(case.rows)
    except CaseInterrupted as e:
        done = CaseRun(case, e.judged, e.rows_done, time.monotonic() - started, kept)
        raise AllInterrupted([done] if e.rows_done else [], 0) from None
    return CaseRun(case, judged, rows_done, time.monotonic() - started, kept)


def run_all(
    cases: Sequence[Case],
    *,
    runs: int | None = None,
    scale: float = 1.0,
    jobs: int | None = None,
    no_change_pct: float = DEFAULT_NO_CHANGE_PCT,
    verdict: bool = True,
    sensitivity: bool = False,
    advance: Advance | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[CaseRun]:
    """Each of ``cases`` in turn (and, with ``sensitivity``, on its changed
    machines). ``advance`` hears of every finished run. A stop raises
    `AllInterrupted` with what finished."""
    out: list[CaseRun] = []
    for case in cases:
        try:
            done = _one(case, runs, scale, jobs, no_change_pct, verdict, advance, stop)
        except AllInterrupted as e:
            raise AllInterrupted(out + e.done, len(cases)) from None
        if sensitivity:
            started = time.monotonic()
            try:
                results, columns = _sensitivity.run_sensitivity(
                    case,
                    runs=runs,
                    scale=scale,
                    jobs=jobs,
                    stop=stop,
                    base=done.judged,
                    progress=_counter(case.name, advance),
                )
            except CaseInterrupted:
                raise AllInterrupted([*out, done], len(cases)) from None
            done.wall_s += time.monotonic() - started
            rows = [r.to_dict() for r in results]
            done.sensitivity = SensitivityTable(columns, rows, "run with this report", scale)
        out.append(done)
    return out


def load_sensitivity(paths: Sequence[Path]) -> dict[str, SensitivityTable]:
    """Sensitivity tables by case from files `reproduce CASE --sensitivity
    --json` wrote, or from a report's ``results.json``; a directory stands for
    the ``*.json`` files in it. A later file's table for a case replaces an
    earlier one's."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    tables: dict[str, SensitivityTable] = {}
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except ValueError as e:
            raise SpecError(f"{f}: not JSON: {e}") from e
        except OSError as e:
            raise OSError(e.errno, e.strerror or str(e), str(f)) from e
        if isinstance(doc, dict) and "cases" in doc:
            for c in doc["cases"]:
                if c.get("sensitivity"):
                    s = c["sensitivity"]
                    tables[c["case"]] = SensitivityTable(
                        s["columns"], s["results"], f"{f} ({s['source']})", s.get("scale")
                    )
        elif isinstance(doc, dict) and {"case", "columns", "results"} <= doc.keys():
            tables[doc["case"]] = SensitivityTable(
                doc["columns"], doc["results"], str(f), doc.get("scale")
            )
        else:
            raise SpecError(
                f"{f}: expected what 'schedlab reproduce CASE --sensitivity --json' writes, or a "
                "report's results.json"
            )
    return tables
