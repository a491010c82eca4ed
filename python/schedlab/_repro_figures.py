"""The figures of `schedlab reproduce --report`: a case's published against
simulated changes, and the machine it ran on.

Published and simulated figures rarely share a unit (roy-saturation's
published seconds are totals over 5 runs, the simulated ones per run), so a
case's figure compares what the verdict compares: each policy's change
against the case's first policy, in percent, the simulated one with the
run-to-run spread the verdict judges it against (`reproduce.judge`: the
larger standard deviation of the two policies, at least 1% of the baseline
mean) as its error bar. A bar whose error bar crosses zero is a difference
within the spread.

The machine is drawn from what the core built (`_native.topo_doc`), not
from the preset's text: packages, NUMA nodes (where a package holds more
than one), LLCs, clusters (where the machine has a cluster level), cores
(where SMT puts several CPUs on one) and CPUs, coloured by core type.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .reproduce import DEFAULT_RESOLUTION_PCT, Judged

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["machine_figure", "parse_cpulist", "save", "verdict_figure"]

#: Policy colours (matplotlib's tab10 without its grey).
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")

#: One character above a simulated bar for its verdict; the table has the words.
_MARKS = (
    ("reproduced", "✓"),
    ("not reproduced", "✗"),
    ("structural", "s"),
    ("unresolved", "?"),
)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Figure, stem: Path) -> tuple[Path, Path]:
    """``stem``.png (for report.md and image viewers) and ``stem``.svg (for
    the page: sharp at any zoom); closes the figure."""
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    fig.savefig(png, dpi=100)
    # No embedded timestamp: the same results give the same file.
    fig.savefig(svg, metadata={"Date": None})
    _pyplot().close(fig)
    return png, svg


def spread_pct(j: Judged, base: Judged) -> float | None:
    """The spread `reproduce.judge` held ``j``'s difference against, as a
    percentage of the baseline mean (None when that mean is 0)."""
    if base.sim_mean == 0:
        return None
    floor = abs(base.sim_mean) * DEFAULT_RESOLUTION_PCT / 100
    return max(j.sim_sd, base.sim_sd, floor) / abs(base.sim_mean) * 100


def _mark(verdict: str) -> str:
    for prefix, mark in _MARKS:
        if verdict.startswith(prefix):
            return mark
    return ""


def _wrap(label: str, width: int = 22) -> str:
    return "\n".join(textwrap.wrap(label, width)) or label


#: Inches above the panels for the title and the legend (before its rows).
_TOP_IN = 0.4
#: Inches per row of the legend (three entries to a row).
_LEGEND_ROW_IN = 0.2


def verdict_figure(judged: list[Judged], policies: tuple[str, ...], title: str) -> Figure | None:
    """One panel per metric: for each row, each policy's published change
    (hatched) and simulated change (solid, ± the spread) against the first
    policy, with the verdict's mark above. None when no row finished."""
    metrics = list(dict.fromkeys(j.metric for j in judged))
    if not metrics:
        return None
    plt = _pyplot()
    others = list(policies[1:])
    rows = list(dict.fromkeys(j.row for j in judged))
    top = _TOP_IN + _LEGEND_ROW_IN * math.ceil((len(others) + 1) / 3)
    height = top + 3.0 * len(metrics)
    width = 0.8 / max(1, 2 * len(others))
    fig_w = max(6.5, 1.6 + len(rows) * max(1.2, 0.5 * len(others)))
    fig, axes = plt.subplots(len(metrics), 1, figsize=(min(fig_w, 15.0), height), squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics, strict=True):
        cells = [j for j in judged if j.metric == metric]
        bases = {j.row: j for j in cells if j.verdict == "baseline"}
        for k, policy in enumerate(others):
            colour = _COLOURS[k % len(_COLOURS)]
            for i, row in enumerate(rows):
                j = next((c for c in cells if c.row == row and c.policy == policy), None)
                if j is None or row not in bases:
                    continue
                x = i - 0.4 + width * (2 * k + 0.5)
                if j.published_change_pct is not None:
                    ax.bar(
                        x,
                        j.published_change_pct,
                        width,
                        color="white",
                        edgecolor=colour,
                        hatch="///",
                    )
                sim = j.sim_change_pct
                if sim is None or math.isnan(sim):
                    ax.text(x + width, 0, "n/a", ha="center", va="bottom", fontsize="x-small")
                    continue
                spread = spread_pct(j, bases[row])
                ax.bar(
                    x + width,
                    sim,
                    width,
                    color=colour,
                    yerr=spread,
                    capsize=3,
                    error_kw={"elinewidth": 1},
                )
                mark = _mark(j.verdict)
                if mark:
                    end = sim + (spread or 0) if sim >= 0 else sim - (spread or 0)
                    ax.annotate(
                        mark,
                        (x + width, end),
                        ha="center",
                        va="bottom" if sim >= 0 else "top",
                        fontsize="small",
                    )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([_wrap(r) for r in rows], fontsize="x-small")
        ax.set_ylabel(f"% vs {policies[0]}", fontsize="small")
        ax.set_title(metric, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
    # Panels first, in the figure below the band the title and legend take
    # (laid out after them, tight_layout would also try to fit those).
    fig.tight_layout(rect=(0, 0, 1, 1 - top / height))
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=_COLOURS[k % len(_COLOURS)]) for k in range(len(others))
    ]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="grey", hatch="///"))
    labels = [f"{p} (simulated ± spread)" for p in others] + ["published"]
    fig.suptitle(title, fontsize="medium", y=1 - 0.08 / height, va="top")
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=min(3, len(labels)),
        fontsize="x-small",
        frameon=False,
        bbox_to_anchor=(0.5, 1 - 0.3 / height),
    )
    return cast("Figure", fig)


# ---- the machine ------------------------------------------------------------


def parse_cpulist(text: str) -> list[int]:
    """A kernel cpulist ("0-3,32-35") as CPU numbers."""
    cpus: list[int] = []
    for part in text.split(","):
        if not part.strip():
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


@dataclass
class _Box:
    """One level of the drawing and what it holds; sizes in CPU cells."""

    label: str
    kind: str
    children: list[_Box] = field(default_factory=list)
    cpu: int | None = None
    core_type: str = ""
    w: float = 1.0
    h: float = 1.0
    cols: int = 1


def _spans(doc: dict[str, Any], level: str) -> list[list[int]]:
    return [parse_cpulist(d["span"]) for d in doc["domains"] if d["level"] == level]


def _group(cpus: list[int], spans: list[list[int]]) -> list[list[int]]:
    """``cpus`` split by the spans that hold them (each CPU outside every
    span alone), in order of each group's first CPU."""
    where = {c: i for i, span in enumerate(spans) for c in span}
    groups: dict[Any, list[int]] = {}
    for c in cpus:
        groups.setdefault(where.get(c, ("alone", c)), []).append(c)
    return sorted(groups.values(), key=lambda g: g[0])


def _llc(label: str, cpus: list[int], types: dict[int, str], doc: dict[str, Any]) -> _Box:
    """An LLC's box: its clusters (with a CLS level), their cores (with an
    SMT level; a CPU outside every SMT span is a core of its own), their CPUs."""
    smt, cls = _spans(doc, "SMT"), _spans(doc, "CLS")
    box = _Box(label, "llc")
    for cl in _group(cpus, cls) if cls else [cpus]:
        holder = box
        if cls:
            holder = _Box(f"CLS {cl[0]}-{cl[-1]}", "cluster")
            box.children.append(holder)
        for core in _group(cl, smt):
            threads = [_Box(str(c), "cpu", cpu=c, core_type=types[c]) for c in core]
            holder.children.extend([_Box("", "core", threads)] if smt else threads)
    return box


def _tree(doc: dict[str, Any]) -> _Box:
    """Machine, packages, nodes (drawn only where a package has several),
    LLCs and below, from the core's per-CPU package, node and LLC."""
    m = doc["machine"]
    where: dict[int, tuple[int, int, int]] = {}
    types: dict[int, str] = {}
    for entry in doc["cpus"]:
        for c in parse_cpulist(entry["cpus"]):
            where[c] = (entry["package"], entry["node"], entry["llc"])
            types[c] = str(entry["core_type"])
    show_nodes = int(m["nr_nodes"]) > int(m["nr_packages"])
    root = _Box(str(m["name"]), "machine")
    for pkg in sorted({v[0] for v in where.values()}):
        nodes = sorted({v[1] for v in where.values() if v[0] == pkg})
        named = "" if show_nodes else f" · node {', '.join(map(str, nodes))}"
        pbox = _Box(f"package {pkg}{named}", "package")
        root.children.append(pbox)
        for node in nodes:
            holder = pbox
            if show_nodes:
                holder = _Box(f"node {node}", "node")
                pbox.children.append(holder)
            for llc in sorted({v[2] for v in where.values() if v[:2] == (pkg, node)}):
                cpus = sorted(c for c, v in where.items() if v == (pkg, node, llc))
                holder.children.append(_llc(f"LLC {llc}", cpus, types, doc))
    return root


#: Padding around a box's children and the band its label takes, in cells.
_PAD = {"machine": 0.0, "package": 0.35, "node": 0.3, "llc": 0.3, "cluster": 0.2, "core": 0.08}
_HEAD = {"machine": 0.0, "package": 0.7, "node": 0.6, "llc": 0.6, "cluster": 0.45, "core": 0.0}
#: Width over height each level aims for: wide rows of packages, squarer inside.
_ASPECT = {"machine": 3.0, "package": 1.6, "node": 1.4, "llc": 1.6, "cluster": 1.2, "core": 9.0}


def _measure(box: _Box) -> None:
    """Sizes every box bottom-up: a box's children (all alike) go into the
    grid whose shape comes closest to the level's aspect ratio."""
    if box.kind == "cpu":
        return
    for child in box.children:
        _measure(child)
    n = len(box.children)
    cw = max(c.w for c in box.children)
    ch = max(c.h for c in box.children)
    pad, head = _PAD[box.kind], _HEAD[box.kind]

    def size(cols: int) -> tuple[float, float]:
        rows = math.ceil(n / cols)
        return cols * cw + (cols + 1) * pad, rows * ch + (rows + 1) * pad + head

    def score(cols: int) -> float:
        # Off the aspect ratio, and empty places in the last row of the grid.
        w, h = size(cols)
        empty = (cols * math.ceil(n / cols) - n) / n
        return abs(math.log(w / h / _ASPECT[box.kind])) + empty

    box.cols = min(range(1, n + 1), key=score)
    box.w, box.h = size(box.cols)


_FILL = ("#cfe0f3", "#f8d9b8", "#d5ecd0", "#ecd0e4")
_EDGE = {
    "package": "#333333",
    "node": "#6a4c93",
    "llc": "#2c5d8f",
    "cluster": "#2a7f62",
    "core": "#888888",
}


def _draw(ax: Any, box: _Box, x: float, y: float, types: list[str], font: float) -> None:
    """Draws ``box`` with its top-left corner at (x, y), y growing downward."""
    plt = _pyplot()
    if box.kind == "cpu":
        fill = _FILL[types.index(box.core_type) % len(_FILL)]
        ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=fill, edgecolor="#555555", lw=0.4))
        ax.text(x + 0.5, y + 0.52, box.label, ha="center", va="center", fontsize=font * 0.8)
        return
    if box.kind != "machine":
        ax.add_patch(
            plt.Rectangle(
                (x, y),
                box.w,
                box.h,
                fill=False,
                edgecolor=_EDGE[box.kind],
                lw=1.3 if box.kind == "package" else 0.8,
            )
        )
    if _HEAD[box.kind]:
        ax.text(
            x + _PAD[box.kind],
            y + _HEAD[box.kind] * 0.55,
            box.label,
            ha="left",
            va="center",
            fontsize=font,
            color=_EDGE[box.kind],
        )
    pad = _PAD[box.kind]
    cw = max(c.w for c in box.children)
    ch = max(c.h for c in box.children)
    for i, child in enumerate(box.children):
        r, c = divmod(i, box.cols)
        _draw(
            ax,
            child,
            x + pad + c * (cw + pad),
            y + _HEAD[box.kind] + pad + r * (ch + pad),
            types,
            font,
        )


def machine_figure(doc: dict[str, Any]) -> Figure:
    """The machine of a `_native.topo_doc` document, drawn as nested boxes."""
    plt = _pyplot()
    root = _tree(doc)
    _measure(root)
    # About 0.3 in per CPU cell, the whole drawing at most 15 in wide.
    inch = min(0.3, 15.0 / root.w, 9.0 / root.h)
    fig = plt.figure(figsize=(max(root.w * inch, 6.5), root.h * inch + 0.6))
    ax = fig.add_axes((0, 0, 1, root.h * inch / (root.h * inch + 0.6)))
    types = [str(t["name"]) for t in doc["core_types"]]
    font = max(3.5, min(8.0, inch * 26))
    _draw(ax, root, 0, 0, types, font)
    ax.set_xlim(-0.1, max(root.w, 6.5 / inch) + 0.1)
    ax.set_ylim(root.h + 0.1, -0.1)
    ax.set_aspect("equal", adjustable="box")
    ax.axis("off")
    m = doc["machine"]
    kinds = ", ".join(f"{t['name']} (capacity {t['capacity']})" for t in doc["core_types"])
    if len(types) > 1:
        handles = [
            plt.Rectangle((0, 0), 1, 1, facecolor=_FILL[i % len(_FILL)], edgecolor="#555555")
            for i in range(len(types))
        ]
        fig.legend(handles, types, loc="lower center", ncol=len(types), fontsize=7, frameon=False)
    fig.suptitle(
        f"{m['name']}: {m['nr_packages']} packages, {m['nr_nodes']} nodes, {m['nr_llcs']} LLCs, "
        f"{m['nr_cores']} cores, {m['nr_cpus']} CPUs\ncore types: {kinds}",
        fontsize=8,
        y=0.99,
        va="top",
    )
    return cast("Figure", fig)
