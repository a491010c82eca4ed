"""`schedlab validate --suite`: the published validation in one command.

Three topologies, each with every validation case (`_validate.default_cases`):
this host, calibrated here first (`schedlab calibrate`'s probes into
``OUT/this-vm/calibrate``); a QEMU guest with 1 socket of 2 cores x 2 SMT
threads; a guest with 2 sockets of 2 cores x 2 threads on 2 NUMA nodes. Each
guest is calibrated inside itself (one more boot: costs and vCPU stalls) and
simulated beside its measured stalls, as `validate --qemu` does by default.
The markdown starts with a summary (rows passing per topology, and every miss)
and then has one section per topology, the tables `docs/validation.md`
publishes; it is rewritten after each topology, so an interrupted suite keeps
the sections that finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _validate

#: `wakee_flips` every simulated task of this host's cases inherits. This
#: host has no kprobes to read what its launcher passes; 4 is what the
#: launching shell passed in the guests' fork probe (docs/kernel-probes.md,
#: "Work queue across NUMA nodes"), an assumption here: `--parent-wakee-flips`
#: changes it and the tables name it.
HOST_FLIPS = 4


@dataclass(frozen=True)
class Topology:
    """One topology of the suite: its directory under OUT, its `--qemu`
    shape (None: this host) and its section title."""

    name: str
    qemu: str | None
    title: str


SUITE = (
    Topology("this-vm", None, "This VM, calibrated here"),
    Topology(
        "guest-1s2c2t",
        "sockets=1,cores=2,threads=2",
        "Guest: 1 socket x 2 cores x 2 threads (Debian 6.12), calibrated inside the guest",
    ),
    Topology(
        "guest-2s2c2t-2n",
        "sockets=2,cores=2,threads=2,nodes=2",
        "Guest: 2 sockets x 2 cores x 2 threads, 2 NUMA nodes (Debian 6.12), calibrated "
        "inside the guest",
    ),
)


def run_suite(
    out: Path,
    wl_bin: Path | None,
    reps: int = 3,
    seeds: int = 3,
    scale: float = 1.0,
    cases: Sequence[_validate.Case] | None = None,
    reuse: bool = False,
    parent_wakee_flips: int | None = None,
    stalls: bool = True,
    stall_model: str = "host",
    noise: Sequence[str] = (),
    topologies: Sequence[Topology] = SUITE,
    on_section: Callable[[list[tuple[Topology, list[dict[str, Any]]]]], None] | None = None,
    decisions: bool = True,
) -> list[tuple[Topology, list[dict[str, Any]]]]:
    """Validates every topology in turn into ``out/<name>``; `on_section` is
    called with the sections done so far after each one (the CLI rewrites
    its markdown there). `parent_wakee_flips` is this host's count (default
    `HOST_FLIPS`); in a guest it is the recordings' own unless given. With
    `decisions`, each guest also checks the wakeup rule decision by decision
    (`_kernel_decisions.suite_entry`, one more boot, into
    ``out/<name>/kernel-decisions``)."""
    done: list[tuple[Topology, list[dict[str, Any]]]] = []
    for topo in topologies:
        flips = parent_wakee_flips
        if topo.qemu is None and flips is None:
            flips = HOST_FLIPS
        results = _validate.validate(
            out / topo.name,
            reps=reps,
            seeds=seeds,
            scale=scale,
            cases=cases,
            parent_wakee_flips=flips,
            qemu=topo.qemu,
            wl_bin=wl_bin if topo.qemu is not None else None,
            reuse=reuse,
            calibrate=True,
            stalls=stalls,
            stall_model=stall_model,
            noise=noise,
        )
        if decisions and topo.qemu is not None and wl_bin is not None:
            from ._kernel_decisions import suite_entry

            where = out / topo.name / "kernel-decisions"
            results = [*results, suite_entry(where, topo.qemu, wl_bin, reuse)]
        done.append((topo, results))
        if on_section is not None:
            on_section(done)
    return done


def tally(results: Sequence[dict[str, Any]]) -> tuple[int, int, list[str]]:
    """Rows passing, rows compared (pass or MISS) and the misses
    (``case metric``, with ``*`` where the simulated value lies within the
    recordings' own range) of one topology's results."""
    passed = compared = 0
    misses: list[str] = []
    for r in results:
        for row in r.get("rows", ()):
            if row["verdict"] == "pass":
                passed += 1
                compared += 1
            elif row["verdict"] == "MISS":
                compared += 1
                star = "*" if _validate.in_real_range(row) else ""
                misses.append(f"{r['case']} {row['metric']}{star}")
    return passed, compared, misses


def suite_markdown(sections: Sequence[tuple[Topology, list[dict[str, Any]]]], title: str) -> str:
    """A summary table of every topology, then each topology's tables."""
    lines = [
        f"## {title}",
        "",
        "| topology | rows passing (of compared) | misses (`*`: simulated within the recordings' "
        "range) | wakeup decisions the model makes as the kernel did |",
        "|---|---|---|---|",
    ]
    for topo, results in sections:
        passed, compared, misses = tally(results)
        skipped = [r["case"] for r in results if "skipped" in r]
        missed = ", ".join(misses) or "none"
        if skipped:
            missed += "; skipped: " + ", ".join(skipped)
        agreed = next((_agreed(r["decisions"]["all"]) for r in results if "decisions" in r), "-")
        lines.append(f"| {topo.title} | {passed} of {compared} | {missed} | {agreed} |")
    lines.append("")
    body: list[str] = []
    for topo, results in sections:
        body.append(_demote(_validate.markdown(results, topo.title)))
    return "\n".join(lines) + "\n" + "".join(body)


def _agreed(a: dict[str, int]) -> str:
    share = f" ({100 * a['agree'] / a['rows']:.1f}%)" if a["rows"] else ""
    return f"{a['agree']:,} of {a['rows']:,}{share}"


def _demote(section: str) -> str:
    """One level down for every heading of a topology's section, so that
    it sits under the suite's heading."""
    return "\n".join("#" + ln if ln.startswith("#") else ln for ln in section.split("\n"))
