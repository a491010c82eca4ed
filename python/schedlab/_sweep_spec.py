"""A sweep spec (TOML) and its expansion into runs, each with a stable id.

The spec::

    machines = ["laptop-4c8t", "machines/tiny.toml"]   # presets or files
    policies = ["eevdf", "eevdf-WA_IDLE"]
    seeds = [0, 1, 2]                 # or { start = 0, count = 3 }

    [[workloads]]                     # one entry per workload
    parts = ["hackbench:fds=2,loops=10", "kworkers"]   # composed, as repeated -w
    [workloads.grid]                  # swept keys: one run per value
    groups = [1, 2]                   # key of the first part
    "1.count" = [1, 4]                # key of part 1 (0-based) of `parts`

The runs are the cartesian product machines x workloads (each workload
x its grid, keys in the order written) x policies x seeds, in that nesting
order. A swept key is appended to its part's spec string as ``key=value``;
a key both fixed in the part and swept is an error. File paths are relative
to the spec file. A run's id is a hash of what it simulates (machine and
workload texts, policy, seed), so the same spec gives the same ids.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._native import SchedlabError, SpecError
from ._resolve import Source, _looks_like_path, resolve_machine, resolve_workload
from ._result import check_u64

#: Keys a sweep spec may have at the top level and in a workload entry.
TOP_KEYS = ("machines", "workloads", "policies", "seeds")
WORKLOAD_KEYS = ("parts", "grid")

#: Hex digits of a run id: 64 bits, so an accidental clash needs ~4e9 runs.
ID_HEX = 16


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: what `run_sources` needs, plus its row's spec columns."""

    index: int
    run_id: str
    machine: str
    workload: str
    policy: str
    seed: int
    params: tuple[tuple[str, int | float | str], ...]
    machine_src: Source
    workload_srcs: tuple[Source, ...]


@dataclass(frozen=True)
class SweepSpec:
    """An expanded sweep: its runs in expansion order and every swept column."""

    origin: str
    runs: tuple[SweepRun, ...]
    param_columns: tuple[str, ...]


def _fail(origin: str, key: str, expectation: str) -> SpecError:
    return SpecError(f"{origin}: {key}: {expectation}")


def _str_list(doc: dict[str, Any], key: str, origin: str) -> list[str]:
    value = doc.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _fail(origin, key, f"expected a non-empty list of strings, found {value!r}")
    return list(value)


def _seeds(doc: dict[str, Any], origin: str) -> list[int]:
    value = doc.get("seeds")
    if isinstance(value, dict):
        extra = set(value) - {"start", "count"}
        start, count = value.get("start", 0), value.get("count")
        if extra or not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise _fail(origin, "seeds", "expected { start = N, count = M } with M >= 1")
        seeds = [start + i for i in range(count)] if isinstance(start, int) else [start]
    elif isinstance(value, list) and value:
        seeds = value
    else:
        raise _fail(
            origin, "seeds", f"expected a list of seeds or {{ start, count }}, found {value!r}"
        )
    for s in seeds:
        try:
            check_u64("seed", s)
        except SpecError:
            raise _fail(origin, "seeds", f"expected integers in 0..2^64-1, found {s!r}") from None
    if len(set(seeds)) != len(seeds):
        raise _fail(origin, "seeds", "expected distinct seeds")
    return list(seeds)


def _grid_target(key: str, n_parts: int, where: str, origin: str) -> tuple[int, str]:
    """``key`` -> (part index, parameter name); ``"1.count"`` is part 1's ``count``."""
    part, sep, name = key.partition(".")
    if not sep:
        return 0, key
    if not part.isdigit() or int(part) >= n_parts or not name:
        raise _fail(
            origin, f"{where}.grid.{key}", f"expected KEY or PART.KEY with PART in 0..{n_parts - 1}"
        )
    return int(part), name


def _spec_keys(part: str) -> set[str]:
    _, _, rest = part.partition(":")
    return {kv.partition("=")[0].strip() for kv in rest.split(",") if "=" in kv}


def _with_key(part: str, name: str, value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{part},{name}={text}" if ":" in part else f"{part}:{name}={text}"


def _workload_variants(
    entry: Any, where: str, origin: str
) -> list[tuple[list[str], tuple[tuple[str, Any], ...]]]:
    """Every (parts, swept values) of one workload entry, in grid order."""
    if isinstance(entry, str):
        entry = {"parts": [entry]}
    if not isinstance(entry, dict):
        raise _fail(
            origin, where, "expected a table with 'parts' (and optional 'grid') or a string"
        )
    unknown = [k for k in entry if k not in WORKLOAD_KEYS]
    if unknown:
        raise _fail(
            origin, f"{where}.{unknown[0]}", f"unknown key; valid: {', '.join(WORKLOAD_KEYS)}"
        )
    parts = _str_list(entry, "parts", f"{origin}: {where}")
    grid = entry.get("grid", {})
    if not isinstance(grid, dict):
        raise _fail(origin, f"{where}.grid", "expected a table of KEY = [values]")
    axes: list[tuple[str, int, str, list[Any]]] = []
    for key, values in grid.items():
        p, name = _grid_target(key, len(parts), where, origin)
        if not isinstance(values, list) or not values:
            raise _fail(
                origin, f"{where}.grid.{key}", f"expected a non-empty list, found {values!r}"
            )
        if any(isinstance(v, (dict, list)) for v in values):
            raise _fail(origin, f"{where}.grid.{key}", "expected numbers, strings or booleans")
        if _looks_like_path(parts[p]) or parts[p].endswith((".toml", ".json")):
            raise _fail(
                origin, f"{where}.grid.{key}", "a grid sweeps spec strings, not workload files"
            )
        if name in _spec_keys(parts[p]):
            raise _fail(origin, f"{where}.grid.{key}", f"'{name}' is also fixed in '{parts[p]}'")
        axes.append((key, p, name, values))
    out = []
    for combo in itertools.product(*(a[3] for a in axes)):
        swept = list(parts)
        for (_, p, name, _), value in zip(axes, combo, strict=True):
            swept[p] = _with_key(swept[p], name, value)
        out.append((swept, tuple((a[0], v) for a, v in zip(axes, combo, strict=True))))
    return out


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "booleans"
    return "numbers" if isinstance(value, (int, float)) else "strings"


def run_id(machine: Source, workloads: tuple[Source, ...], policy: str, seed: int) -> str:
    """The id of a run: a hash of the texts it simulates (not of file names),
    its policy and its seed."""
    doc = {
        "machine": [machine.format, machine.text],
        "workloads": [[w.format, w.text] for w in workloads],
        "policy": policy,
        "seed": seed,
    }
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:ID_HEX]


def _rebase(arg: str, base: Path) -> str:
    return str(base / arg) if _looks_like_path(arg) and not Path(arg).is_absolute() else arg


def expand(doc: dict[str, Any], origin: str, base: Path) -> SweepSpec:
    """The runs of a parsed spec (paths relative to ``base``)."""
    unknown = [k for k in doc if k not in TOP_KEYS]
    if unknown:
        raise _fail(origin, unknown[0], f"unknown key; valid: {', '.join(TOP_KEYS)}")
    machines = _str_list(doc, "machines", origin)
    policies = _str_list(doc, "policies", origin)
    seeds = _seeds(doc, origin)
    entries = doc.get("workloads")
    if not isinstance(entries, list) or not entries:
        raise _fail(origin, "workloads", "expected a non-empty list of [[workloads]] tables")
    variants = [
        v for i, e in enumerate(entries) for v in _workload_variants(e, f"workloads[{i}]", origin)
    ]
    machine_srcs = []
    for m in machines:
        try:
            machine_srcs.append(resolve_machine(_rebase(m, base)))
        except SchedlabError as e:  # the same kind, naming the spec and key
            raise type(e)(f"{origin}: machines: {e}") from None
    columns: list[str] = []
    kinds: dict[str, set[str]] = {}
    for _, swept in variants:
        columns += [k for k, _ in swept if k not in columns]
        for k, v in swept:
            kinds.setdefault(k, set()).add(_kind(v))
    for k, found in kinds.items():
        # one Parquet column per key: numbers (ints and floats) or strings or booleans
        if len(found) > 1:
            raise _fail(origin, "workloads", f"grid key '{k}' mixes {' and '.join(sorted(found))}")
    runs: list[SweepRun] = []
    seen: dict[str, int] = {}
    for m, msrc in zip(machines, machine_srcs, strict=True):
        for parts, swept in variants:
            try:
                wsrcs = tuple(resolve_workload(_rebase(p, base)) for p in parts)
            except SchedlabError as e:
                raise type(e)(f"{origin}: workloads: {e}") from None
            for policy, seed in itertools.product(policies, seeds):
                rid = run_id(msrc, wsrcs, policy, seed)
                if rid in seen:
                    raise _fail(origin, "workloads", f"run {len(runs)} repeats run {seen[rid]}")
                seen[rid] = len(runs)
                runs.append(
                    SweepRun(len(runs), rid, m, " + ".join(parts), policy, seed, swept, msrc, wsrcs)
                )
    return SweepSpec(origin, tuple(runs), tuple(columns))


def load_spec(path: Path) -> SweepSpec:
    """Reads and expands a sweep spec file; errors name the file and key."""
    origin = str(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{origin}: sweep spec not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{origin}: cannot read sweep spec: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{origin}: invalid TOML: {e}") from None
    return expand(doc, origin, path.parent)
