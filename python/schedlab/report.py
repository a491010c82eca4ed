"""`schedlab report`: an HTML page and a markdown summary of a comparison.

Input: what ``schedlab compare --json`` or ``--csv`` wrote (one row per run:
policy, seed, metrics). Output, in one directory: ``index.html`` (figures and
the summary table), ``report.md`` (the same table and figure list), and one
PNG per figure drawn with matplotlib:

* per metric, each policy's mean with its standard deviation as an error
  bar, every seed's value as a dot beside it;
* the wakeup latency distribution per policy, drawn as a CDF from each
  run's ``wakeup_latency_dist.pQ`` quantiles (mean over seeds per quantile);
* where the wakeups were placed (the ``place_*`` paths) per policy, as
  shares of all placements;
* migrations by topological distance (SMT, cluster, LLC, package, node) per
  policy, as a heat map of the mean per run;
* with ``--trace``, each trace's per-CPU timeline (which task ran where).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ._compare import default_metrics
from ._native import SpecError

PLACE_PREFIX = "place_"
LATENCY_PREFIX = "wakeup_latency_dist.p"
MIGRATION_KINDS = (
    "migrations_smt",
    "migrations_cluster",
    "migrations_llc",
    "migrations_package",
    "migrations_node",
)


#: Where a figure goes: one file, or several (one per format: .png, .svg).
Outputs = Path | Sequence[Path]


def _save(fig: Any, out: Outputs) -> None:
    """Saves ``fig`` to each of ``out`` (format from the suffix), then closes
    it: drawn once, written as often as asked."""
    import matplotlib.pyplot as plt

    for path in [out] if isinstance(out, Path) else out:
        fig.savefig(path, dpi=100)
    plt.close(fig)


def load(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The runs of a compare result (JSON or CSV) or of a sweep dataset (a
    directory), and what they say about themselves (machine, workload,
    primary metric, units, better directions). A sweep over several machines
    or workloads is drawn as one comparison whose "policy" is the policy
    with the machine and workload it ran on."""
    if path.is_dir():
        from . import sweep

        runs = sweep.load(path)
        if runs.empty:
            raise SpecError(f"{path}: a sweep dataset with no runs yet")
        if runs["machine"].nunique() > 1 or runs["workload"].nunique() > 1:
            runs = runs.assign(
                policy=runs["policy"] + " · " + runs["machine"] + " · " + runs["workload"]
            )
        meta = {
            "machine": ", ".join(dict.fromkeys(runs["machine"].astype(str))),
            "workload": ", ".join(dict.fromkeys(runs["workload"].astype(str))),
            "primary": runs.attrs.get("primary") or "",
            "units": dict(runs.attrs.get("units") or {}),
            "better": dict(runs.attrs.get("better") or {}),
        }
        return runs, meta
    try:
        text = path.read_text()
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(path)) from e
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
            runs = pd.DataFrame(doc["runs"])
        except (ValueError, KeyError, TypeError) as e:
            raise SpecError(f"{path}: expected schedlab compare --json output: {e}") from e
        units = {r["metric"]: r.get("unit", "") for r in doc.get("summary", [])}
        better = {r["metric"]: r.get("better", "") for r in doc.get("summary", [])}
        meta = {
            "machine": doc.get("machine", ""),
            "workload": doc.get("workload", ""),
            "primary": doc.get("primary", ""),
            "units": units,
            "better": better,
        }
    else:
        try:
            runs = pd.read_csv(path)
        except (ValueError, pd.errors.ParserError) as e:
            raise SpecError(f"{path}: expected schedlab compare --csv output: {e}") from e
        meta = {"machine": "", "workload": "", "primary": "", "units": {}, "better": {}}
        if not runs.empty:
            meta["machine"] = str(runs["machine"].iloc[0]) if "machine" in runs else ""
            meta["workload"] = str(runs["workload"].iloc[0]) if "workload" in runs else ""
    if runs.empty or "policy" not in runs:
        raise SpecError(f"{path}: no runs with a 'policy' column")
    return runs, meta


def _policies(runs: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(runs["policy"]))


def _metric_figure(runs: pd.DataFrame, metric: str, unit: str, better: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = _policies(runs)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(policies), 3.4))
    for i, p in enumerate(policies):
        vals = runs.loc[runs["policy"] == p, metric].astype(float)
        sd = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        ax.bar(i, float(vals.mean()), yerr=sd, capsize=4, color="#8fb3d9", edgecolor="#2c5d8f")
        ax.plot([i + 0.3] * len(vals), vals, "o", color="#2c5d8f", markersize=3)
    ax.set_xticks(range(len(policies)))
    ax.set_xticklabels(policies, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
    ax.set_title(metric + (f"\n({better} is better)" if better else ""), fontsize="medium")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def _stacked_figure(runs: pd.DataFrame, cols: list[str], title: str, out: Outputs) -> bool:
    """Per policy, the mean of each of ``cols`` as a share of their sum."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [c for c in cols if c in runs and float(runs[c].sum()) > 0]
    if not cols:
        return False
    policies = _policies(runs)
    means = runs.groupby("policy", sort=False)[cols].mean().reindex(policies)
    totals = means.sum(axis=1).replace(0, math.nan)
    means = means.div(totals, axis=0) * 100
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(policies) + 2.4, 3.6))
    bottom = [0.0] * len(policies)
    cmap = plt.get_cmap("tab20")
    for j, c in enumerate(cols):
        vals = [float(v) if not math.isnan(v) else 0.0 for v in means[c]]
        ax.bar(range(len(policies)), vals, bottom=bottom, label=c, color=cmap(j % 20))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(range(len(policies)))
    ax.set_xticklabels(policies, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("% of placements")
    ax.set_title(title, fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small", frameon=False)
    fig.tight_layout()
    _save(fig, out)
    return True


def _latency_figure(runs: pd.DataFrame, out: Path) -> bool:
    """The wakeup latency CDF of each policy: quantile against latency (log
    axis), the mean over seeds of each quantile. False when no run has one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [c for c in runs.columns if c.startswith(LATENCY_PREFIX)]
    cols = [c for c in cols if runs[c].astype(float).notna().any()]
    if not cols:
        return False
    quantiles = [float(c[len(LATENCY_PREFIX) :]) for c in cols]
    means = runs.groupby("policy", sort=False)[cols].mean().reindex(_policies(runs))
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for policy, row in means.iterrows():
        pts = sorted(
            (float(v), q) for v, q in zip(row, quantiles, strict=True) if not math.isnan(v)
        )
        if pts:
            # A latency of 0 has no place on a log axis: drawn at the axis' floor.
            xs = [max(v, 0.01) for v, _ in pts]
            ax.step(xs, [q / 100 for _, q in pts], where="post", marker=".", label=str(policy))
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("wakeup latency (us)")
    ax.set_ylabel("fraction of wakeups at or below")
    ax.set_title("wakeup latency distribution (mean over seeds per quantile)", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="x-small")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return True


def _heatmap_figure(runs: pd.DataFrame, cols: list[str], title: str, out: Outputs) -> bool:
    """Policies x ``cols`` as a heat map of the mean per run, each cell
    written out. False when every mean is 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [c for c in cols if c in runs]
    policies = _policies(runs)
    if not cols:
        return False
    means = runs.groupby("policy", sort=False)[cols].mean().reindex(policies).fillna(0.0)
    if float(means.to_numpy().sum()) <= 0:
        return False
    fig, ax = plt.subplots(figsize=(2.5 + 1.3 * len(cols), 1.4 + 0.45 * len(policies)))
    im = ax.imshow(means.to_numpy(), cmap="Blues", aspect="auto")
    peak = float(means.to_numpy().max())
    for i in range(len(policies)):
        for j in range(len(cols)):
            v = float(means.iat[i, j])
            colour = "white" if v > 0.6 * peak else "black"
            ax.text(j, i, f"{v:.4g}", ha="center", va="center", fontsize="small", color=colour)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([c.removeprefix("migrations_") for c in cols], fontsize="small")
    ax.set_yticks(range(len(policies)))
    ax.set_yticklabels(policies, fontsize="small")
    ax.set_title(title, fontsize="medium")
    fig.colorbar(im, ax=ax, label="per run")
    fig.tight_layout()
    _save(fig, out)
    return True


def _summary(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    policies = _policies(runs)
    rows = []
    for m in metrics:
        base = float(runs.loc[runs["policy"] == policies[0], m].astype(float).mean())
        for p in policies:
            vals = runs.loc[runs["policy"] == p, m].astype(float)
            mean = float(vals.mean())
            pct = None if p == policies[0] or base == 0 else 100 * (mean - base) / abs(base)
            sd = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
            rows.append(
                {
                    "metric": m,
                    "policy": p,
                    "n": len(vals),
                    "mean": mean,
                    "sd": sd,
                    "pct_vs_first": pct,
                }
            )
    return pd.DataFrame(rows)


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


#: The pages' style sheet: long labels wrap rather than widen the page, and a
#: table too wide for it scrolls inside its own box.
PAGE_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1100px}"
    "h1,h2,h3,td{overflow-wrap:anywhere}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "figure{margin:1.5em 0}figure img{max-width:100%}"
    ".wide{overflow-x:auto;max-width:100%}"
)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines (``|`` in a cell escaped)."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(r) for r in rows)]


def html_table(header: list[str], rows: list[list[str]], left: Collection[int] = ()) -> str:
    """An HTML table of text cells, escaped; the columns numbered in ``left``
    are left-aligned (labels, words), the rest right-aligned (figures).
    Wrapped in a box that scrolls sideways if the table is wider than the page."""
    esc = html.escape
    align = ' style="text-align:left"'

    def cells(tag: str, row: list[str]) -> str:
        return "".join(
            f"<{tag}{align if i in left else ''}>{esc(c)}</{tag}>" for i, c in enumerate(row)
        )

    body = "\n".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return f'<div class="wide"><table><tr>{cells("th", header)}</tr>\n{body}\n</table></div>'


def html_figure(src: str, caption: str) -> str:
    """A figure whose image is ``src`` (relative to the page)."""
    esc = html.escape
    return (
        f'<figure><img src="{esc(src)}" alt="{esc(caption)}">'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def html_page(title: str, body: str, style: str = "") -> str:
    """A whole page around ``body`` (already HTML); ``style`` is added to
    `PAGE_STYLE`."""
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>\n<style>{PAGE_STYLE}{style}</style></head>\n"
        f"<body>{body}\n</body></html>\n"
    )


def write_report(
    runs: pd.DataFrame,
    meta: dict[str, Any],
    out: Path,
    metrics: list[str] | None = None,
    traces: list[Path] | None = None,
) -> list[Path]:
    """Write the report into `out`; returns the figure files written. Each
    of ``traces`` (ftrace text, real or simulated) adds its per-CPU timeline."""
    out.mkdir(parents=True, exist_ok=True)
    numeric = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c])]
    if metrics is None:
        frame = runs.copy()
        frame.attrs["primary"] = meta.get("primary") or (
            "completion_time_s" if "completion_time_s" in runs else ""
        )
        metrics = [m for m in default_metrics(frame) if m in numeric]
        metrics = (
            metrics
            or [c for c in numeric if c not in ("run", "seed", "events_processed", "sim_time_ns")][
                :4
            ]
        )
    missing = [m for m in metrics if m not in runs]
    if missing:
        raise SpecError(f"--metric: not in the results: {', '.join(missing)}")
    figures: list[tuple[Path, str]] = []
    for m in metrics:
        f = out / f"metric-{m}.png"
        _metric_figure(runs, m, meta["units"].get(m, ""), meta["better"].get(m, ""), f)
        figures.append((f, f"{m}: mean and standard deviation per policy, each seed a dot"))
    f = out / "wakeup-latency.png"
    if _latency_figure(runs, f):
        figures.append((f, "wakeup latency: CDF per policy, from each run's quantiles"))
    place_cols = [c for c in runs.columns if c.startswith(PLACE_PREFIX)]
    f = out / "placement.png"
    if _stacked_figure(runs, place_cols, "where wakeups were placed (select_task_rq paths)", f):
        figures.append((f, "placement paths: share of all placements per policy"))
    f = out / "migrations.png"
    if _heatmap_figure(runs, list(MIGRATION_KINDS), "migrations by distance, mean per run", f):
        figures.append((f, "migrations by topological distance: heat map of the mean per run"))
    for i, trace in enumerate(traces or []):
        from . import plot as _plot
        from . import trace as _trace

        f = out / f"timeline-{i}.png"
        _plot.cpu_timeline(_trace.read(trace), f, title=f"which task ran where: {trace.name}")
        figures.append((f, f"per-CPU timeline of {trace}"))
    summary = _summary(runs, metrics)
    title = f"schedlab report: {meta.get('machine', '')} · {meta.get('workload', '')}"
    seeds = sorted({int(s) for s in runs["seed"]}) if "seed" in runs else []
    header = ["metric", "policy", "n", "mean", "sd", "% vs first"]
    table_rows = [
        [r.metric, r.policy, r.n, r.mean, r.sd, r.pct_vs_first] for r in summary.itertuples()
    ]
    md = [f"# {title}", "", f"Policies: {', '.join(_policies(runs))}; seeds: {seeds}.", ""]
    md += md_table(header, [[_fmt(v) for v in row] for row in table_rows])
    md += ["", "Figures:", ""] + [f"- `{p.name}`: {cap}" for p, cap in figures]
    (out / "report.md").write_text("\n".join(md) + "\n")
    esc = html.escape
    body = [
        f"<h1>{esc(title)}</h1>",
        f"<p>Policies: {esc(', '.join(_policies(runs)))}; seeds: {esc(str(seeds))}.</p>",
        html_table(header, [[_fmt(v) for v in row] for row in table_rows]),
        *(html_figure(p.name, cap) for p, cap in figures),
    ]
    page = html_page(title, "\n".join(body))
    (out / "index.html").write_text(page)
    return [p for p, _ in figures]
