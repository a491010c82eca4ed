"""`schedlab reproduce --report DIR`: the cases that ran, as a page and a summary.

Writes, in DIR: ``index.html``; ``report.md`` (the same tables, figures
listed); ``results.json`` (what ``--json`` prints: every verdict, the
sensitivity tables, and each run's placement metrics); and per case, as PNG
and SVG, its published-against-simulated figure (`_repro_figures`), where
its wakeups were placed and its migrations by distance (`report`'s
figures), and the machine it ran on, drawn once per machine.

The page shows SVG, report.md names the PNG files. A case that did not
finish (a stop) is shown with the rows that did, marked incomplete.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from . import _native
from . import report as _report
from ._compare import fmt_mean_sd, fmt_num, fmt_pct
from ._repro_all import CaseRun
from ._repro_figures import machine_figure, save, verdict_figure
from ._resolve import resolve_machine
from ._result import json_safe
from .reproduce import Judged

__all__ = [
    "count",
    "placement_table",
    "results_doc",
    "verdict_rows",
    "verdict_text",
    "write_report",
]

#: Columns of a case's verdict table.
VERDICT_HEADER = ["row", "metric", "policy", "published", "pub %", "simulated", "sim %", "verdict"]

#: Columns of a case's sensitivity table.
SENSITIVITY_HEADER = ["row", "metric", "policy", "verdict", "holds", "where it changes"]

#: Cells break between words only (a metric or policy name stays whole, a
#: table too wide for the page scrolls in its box), figures not at all.
_STYLE = "td,th{overflow-wrap:normal}td{white-space:normal}th{white-space:nowrap}"

#: Verdict prefixes counted in the summary table, with their column names.
_COUNTED = (
    ("reproduced", "reproduced"),
    ("not reproduced", "not reproduced"),
    ("unresolved", "unresolved"),
    ("structural", "structural"),
    ("no published figure", "observed"),
)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def verdict_text(j: Judged) -> str:
    """The verdict as `schedlab reproduce` prints it, magnitude included."""
    if j.magnitude_within_2x is None:
        return j.verdict
    return j.verdict + (", magnitude within 2x" if j.magnitude_within_2x else ", magnitude off")


def verdict_rows(judged: list[Judged]) -> list[list[str]]:
    """The verdict table's cells, one list per judged comparison."""
    return [
        [
            j.row,
            j.metric,
            j.policy,
            "-" if j.published is None else fmt_num(j.published),
            "" if j.published_change_pct is None else fmt_pct(j.published_change_pct),
            fmt_mean_sd(j.sim_mean, j.sim_sd),
            "" if j.sim_change_pct is None else fmt_pct(j.sim_change_pct),
            verdict_text(j),
        ]
        for j in judged
    ]


def _mean(runs: pd.DataFrame, col: str) -> float:
    return float(runs[col].astype(float).mean()) if col in runs else math.nan


def placement_table(cr: CaseRun) -> tuple[list[str], list[list[str]]]:
    """Per policy, over every row and seed of the case: wakeups per run, the
    share of placements each ``select_task_rq`` path made (paths no policy
    used left out), and migrations per run in all and by distance."""
    runs = pd.DataFrame(cr.runs)
    policies = [p for p in cr.case.policies if not runs.empty and p in set(runs["policy"])]
    header = ["per run (mean over rows and seeds)", *policies]
    if not policies:
        return header, []
    by = {p: runs[runs["policy"] == p] for p in policies}
    paths = [
        c for c in runs.columns if c.startswith(_report.PLACE_PREFIX) and float(runs[c].sum()) > 0
    ]
    rows = [["wakeups", *(fmt_num(_mean(by[p], "wakeups")) for p in policies)]]
    for c in paths:
        cells = []
        for p in policies:
            total = float(by[p][paths].astype(float).sum().sum())
            share = float(by[p][c].astype(float).sum()) / total * 100 if total else math.nan
            cells.append("n/a" if math.isnan(share) else f"{share:.1f}%")
        rows.append([f"placed by {c.removeprefix(_report.PLACE_PREFIX)}", *cells])
    for c in ("migrations", *_report.MIGRATION_KINDS):
        if c in runs:
            label = "migrations" if c == "migrations" else f"migrations: {c[len('migrations_') :]}"
            rows.append([label, *(fmt_num(_mean(by[p], c)) for p in policies)])
    return header, rows


def _sensitivity_rows(cr: CaseRun) -> list[list[str]]:
    s = cr.sensitivity
    if s is None:
        return []
    return [
        [
            r["row"],
            r["metric"],
            r["policy"],
            r["verdict"],
            "yes" if r["holds"] else "no",
            "; ".join(f"{c}: {v}" for c, v in r["varied"].items() if v != r["verdict"]),
        ]
        for r in s.results
    ]


def _counts(judged: list[Judged]) -> list[str]:
    return [str(sum(1 for j in judged if j.verdict.startswith(prefix))) for prefix, _ in _COUNTED]


def results_doc(done: list[CaseRun], meta: dict[str, Any]) -> dict[str, Any]:
    """What ``--json`` prints and results.json holds."""
    return {
        **meta,
        "cases": [{**cr.to_dict(), "placement": cr.runs} for cr in done],
    }


def _formats(stem: Path) -> list[Path]:
    return [stem.with_suffix(".png"), stem.with_suffix(".svg")]


def _figures(cr: CaseRun, out: Path, machines: dict[str, Path]) -> list[tuple[Path, str]]:
    """The case's figures (PNG paths; an SVG beside each) with captions."""
    c = cr.case
    figs: list[tuple[Path, str]] = []
    if c.machine not in machines:
        src = resolve_machine(c.machine)
        doc = _native.topo_doc(src.text, src.format, src.origin)
        machines[c.machine] = save(machine_figure(doc), out / f"machine-{c.machine}")[0]
    figs.append((machines[c.machine], f"{c.machine}: the machine as the simulator built it"))
    fig = verdict_figure(cr.judged, c.policies, f"{c.name}: change against {c.policies[0]}")
    if fig is not None:
        png, _ = save(fig, out / f"{c.name}-verdicts")
        figs.append(
            (
                png,
                f"{c.name}: published change (hatched) and simulated change (solid, error bar: "
                "the run-to-run spread the verdict uses) of each policy against the first, per "
                "row; ✓ reproduced, ✗ not, s structural, ? unresolved",
            )
        )
    runs = pd.DataFrame(cr.runs)
    if runs.empty:
        return figs
    paths = [c for c in runs.columns if c.startswith(_report.PLACE_PREFIX)]
    stem = out / f"{c.name}-placement"
    title = "where wakeups were placed (all rows and seeds)"
    if _report._stacked_figure(runs, paths, title, _formats(stem)):
        figs.append((stem.with_suffix(".png"), f"{c.name}: share of placements by path"))
    stem = out / f"{c.name}-migrations"
    kinds = list(_report.MIGRATION_KINDS)
    title = "migrations by distance, mean per run (all rows)"
    if _report._heatmap_figure(runs, kinds, title, _formats(stem)):
        figs.append((stem.with_suffix(".png"), f"{c.name}: migrations by distance per policy"))
    return figs


def _case_parts(cr: CaseRun, figs: list[tuple[Path, str]]) -> tuple[list[str], list[str]]:
    """The case's section: (markdown lines, HTML fragments)."""
    c, esc = cr.case, html.escape
    head = f"{c.name} (idea {c.seed_idea}): {c.title}"
    state = (
        f"{cr.rows_done} of {len(c.rows)} rows, {cr.wall_s:.1f} s"
        if cr.complete
        else f"INCOMPLETE: {cr.rows_done} of {len(c.rows)} rows finished before the stop"
    )
    facts = f"Machine {c.machine}; policies {', '.join(c.policies)}; {state}."
    md = [f"## {head}", "", facts, "", c.notes, ""]
    parts = [f'<h2 id="{esc(c.name)}">{esc(head)}</h2>', f"<p>{esc(facts)}</p>"]
    parts.append(f"<p>{esc(c.notes)}</p>")
    md += ["### Verdicts", "", *_report.md_table(VERDICT_HEADER, verdict_rows(cr.judged)), ""]
    parts += [
        "<h3>Verdicts</h3>",
        _report.html_table(VERDICT_HEADER, verdict_rows(cr.judged), (0, 1, 2, 7)),
    ]
    header, rows = placement_table(cr)
    md += ["### Placement", "", *_report.md_table(header, rows), ""]
    parts += ["<h3>Placement</h3>", _report.html_table(header, rows, (0,))]
    md += ["### Sensitivity", ""]
    parts.append("<h3>Sensitivity</h3>")
    if cr.sensitivity is None:
        why = (
            "Not run: give --sensitivity (every knob value reruns the case), or "
            "--sensitivity-from a file that 'reproduce CASE --sensitivity --json' wrote."
        )
        md += [why, ""]
        parts.append(f"<p>{esc(why)}</p>")
    else:
        s = cr.sensitivity
        scale = "" if s.scale is None else f" at scale {s.scale:g}"
        src = f"From {s.source}{scale}; tried: {', '.join(s.columns)}."
        md += [src, "", *_report.md_table(SENSITIVITY_HEADER, _sensitivity_rows(cr)), ""]
        parts += [
            f"<p>{esc(src)}</p>",
            _report.html_table(SENSITIVITY_HEADER, _sensitivity_rows(cr), range(6)),
        ]
    md += ["### Figures", "", *(f"- `{p.name}`: {cap}" for p, cap in figs), ""]
    parts += [_report.html_figure(p.with_suffix(".svg").name, cap) for p, cap in figs]
    return md, parts


def write_report(done: list[CaseRun], out: Path, meta: dict[str, Any]) -> list[Path]:
    """Writes the report of the cases in ``done`` into ``out``; ``meta``
    (scale, runs, complete, ...) goes into results.json and the heading.
    Returns the figures written (PNG; an SVG beside each)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(json_safe(results_doc(done, meta)), indent=1))
    machines: dict[str, Path] = {}
    title = f"schedlab reproduce: {count(len(done), 'case')}"
    scale = f"scale {meta.get('scale')}, {meta.get('runs') or 'default'} runs per policy"
    state = meta.get("stopped") or "all cases finished"
    intro = f"{scale}; {state}; wall time {meta.get('wall_s', 0):.0f} s."
    summary_header = ["case", "idea", "machine", "rows", *(n for _, n in _COUNTED), "wall s"]
    summary = [
        [
            cr.case.name,
            cr.case.seed_idea,
            cr.case.machine,
            f"{cr.rows_done}/{len(cr.case.rows)}",
            *_counts(cr.judged),
            f"{cr.wall_s:.1f}",
        ]
        for cr in done
    ]
    md = [f"# {title}", "", intro, "", *_report.md_table(summary_header, summary), ""]
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(intro)}</p>",
        _report.html_table(summary_header, summary, (0, 1, 2)),
    ]
    figures: list[Path] = []
    for cr in done:
        figs = _figures(cr, out, machines)
        figures += [p for p, _ in figs if p not in figures]
        case_md, case_html = _case_parts(cr, figs)
        md += case_md
        parts += case_html
    (out / "report.md").write_text("\n".join(md) + "\n")
    (out / "index.html").write_text(_report.html_page(title, "\n".join(parts), _STYLE))
    return figures
