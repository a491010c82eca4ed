"""The cache refill part of ``schedlab calibrate``: ``cost.refill_ns_per_kib``.

``schedlab-wl refillcost`` (crates/schedlab-wl/src/refillcost.rs) times a
read pass over a task's footprint (one word per line, in a shuffled order,
the loads independent) warm on one CPU, right after moving to another, warm
there, and back on the first after a large buffer pushed it out of the
caches. For each distance this
machine has from CPU 0 (an SMT sibling, another core of the cluster or of the
LLC, another LLC of the node, another node) the probe runs between CPU 0 and
the first CPU at that distance, and the median over rounds of (moved - warm
there) per KiB is that distance's refill cost (on CPUs of different speeds,
the second CPU's own warm pass is the base): what the engine charges per KiB of a
task's footprint when the task moves that far (``engine/cost.rs``,
``refill_work_ns``). The engine also prices a footprint the LLC lost at
``package``'s figure (memory): on a machine with no second LLC in a node, the
evicted pass's median per KiB is written there.

What the figures hang on: the probe's loads overlap as freely as the core
allows, so a task whose accesses depend on each other (pointer chasing) pays
more per KiB; the footprint (``footprint_kib``: half the L2, at most 256 KiB)
fits in the private caches, so a move refills all of it. Distances this
machine does not have keep the spec's defaults. Under TCG (a QEMU guest) the
guest's memory goes through the emulator's soft MMU and every vCPU shares
its host's caches: not measurable there, so guests do not run it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import _native

#: The probe's spec.
REFILL_PROBE = "refillcost:kib={kib},evict={evict},rounds={rounds},from={src},to={dst}"
#: Rounds per pair: each is three passes over the footprint and one over the
#: eviction buffer (about 10-20 ms for 128 MiB), so 100 take one to two seconds.
REFILL_ROUNDS = 100
#: Distances a pair can be at, closest first (`Machine::distance`'s names).
DISTANCES = ("smt", "cluster", "llc", "package", "node")


def pairs(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """For each distance the machine (a `topo_doc`, whose ``distance_from_cpu0``
    is `Machine::distance`'s) has from CPU 0, the pair (0, the lowest-numbered
    CPU at that distance)."""
    out: dict[str, tuple[int, int]] = {}
    for cpu, dist in enumerate(doc["distance_from_cpu0"]):
        if cpu > 0:
            out.setdefault(dist, (0, cpu))
    return {d: out[d] for d in DISTANCES if d in out}


def footprint_kib(doc: dict[str, Any]) -> int:
    """The probe's footprint: half the L2 (it must stay in the private
    caches between passes), at most 256 KiB, at least 16."""
    l2 = int(doc["cost"].get("l2_kib") or 512)
    return max(16, min(256, l2 // 2))


def evict_kib(doc: dict[str, Any]) -> int:
    """The eviction buffer: four LLCs' worth, at least 64 MiB."""
    llc = int(doc["cost"].get("llc_kib") or 0)
    return max(64 * 1024, 4 * llc)


def _probe_file(d: Path, dist: str) -> Path:
    return d / f"probe-refill-{dist}.json"


def refill_stored(d: Path) -> bool:
    """Whether `d` holds a refill probe's output (any distance)."""
    return any(_probe_file(d, x).is_file() for x in DISTANCES)


def run_refill_probes(
    machine_toml: str,
    d: Path,
    wl: Sequence[str] = ("schedlab-wl",),
    rounds: int = REFILL_ROUNDS,
) -> None:
    """Runs the refill probe for each distance `machine_toml` has from CPU 0
    and stores each output in `d` (``probe-refill-<distance>.json``)."""
    from ._calibrate import run_probe

    for dist in DISTANCES:
        _probe_file(d, dist).unlink(missing_ok=True)
    doc = _native.topo_doc(machine_toml, "toml", "probe machine")
    kib, evict = footprint_kib(doc), evict_kib(doc)
    for dist, (src, dst) in pairs(doc).items():
        spec = REFILL_PROBE.format(kib=kib, evict=evict, rounds=rounds, src=src, dst=dst)
        got = run_probe([*wl, spec], f"refill ({dist})")
        _probe_file(d, dist).write_text(json.dumps(got, indent=2) + "\n")


def read_refill_probes(d: Path) -> dict[str, dict[str, Any]]:
    """The refill probes' outputs stored in `d`, by distance."""
    out: dict[str, dict[str, Any]] = {}
    for dist in DISTANCES:
        f = _probe_file(d, dist)
        if not f.is_file():
            continue
        try:
            out[dist] = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise _native.SpecError(f"{f}: line {e.lineno}: not JSON ({e.msg})") from e
        for key in ("moved_ns_per_kib", "evicted_ns_per_kib", "kib", "rounds"):
            if not isinstance(out[dist].get(key), int | float):
                raise _native.SpecError(f"{f}: {key}: expected a number (a refillcost output)")
    return out


def refill_costs(probes: dict[str, dict[str, Any]], tag: str) -> tuple[dict[str, int], str]:
    """``refill_ns_per_kib``'s measured entries (by distance) and how they
    were measured, from the stored probes: each distance's median moved
    pass beyond the warm one, per KiB; ``package`` from the evicted pass
    when no pair was at that distance (the engine's memory figure)."""
    values: dict[str, int] = {}
    how: list[str] = []
    for dist, p in probes.items():
        values[dist] = max(0, round(p["moved_ns_per_kib"]))
        how.append(
            f"{dist} {values[dist]} (CPUs {p['from']} -> {p['to']}: moved "
            f"{p['moved']['p50_ns']} ns against warm there {p['warm_there']['p50_ns']} ns, medians)"
        )
    if probes and "package" not in probes:
        first = next(iter(probes.values()))
        values["package"] = max(0, round(first["evicted_ns_per_kib"]))
        how.append(
            f"package {values['package']} (memory: the same footprint after reading "
            f"{first['evict_kib'] // 1024} MiB of another buffer, {first['evicted']['p50_ns']} ns "
            f"against warm {first['warm']['p50_ns']} ns; no second LLC in the node to move to)"
        )
    if not probes:
        return values, ""
    first = next(iter(probes.values()))
    return values, (
        f"{tag} ns per KiB of a {first['kib']} KiB footprint read in a shuffled order with "
        f"independent loads (schedlab-wl refillcost, {first['rounds']} rounds per pair): "
        + "; ".join(how)
        + ". A task whose loads depend on each other pays more; distances not listed keep "
        "the spec's defaults"
    )


def inline_table(values: dict[str, int]) -> str:
    """`values` as a TOML inline table."""
    return "{ " + ", ".join(f"{k} = {v}" for k, v in values.items()) + " }"
