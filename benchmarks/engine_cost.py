"""Instruction counts of the engine, which repeat to within a few hundred
instructions (callgrind; the process's address layout moves a little), for
the figures the README and crates/schedlab-core/src/engine/README.md quote.

    python benchmarks/engine_cost.py            # print the table
    python benchmarks/engine_cost.py --check    # and fail past the limits

It builds the `bench` example in the `dist` profile (release with fat LTO,
what `pip install .` ships), then counts under
`valgrind --tool=callgrind`:
- the standard bench (schbench, 2 simulated s, intel-4n-192): instructions,
  handled events, stale events;
- for each size of `schedlab bench --scale` asked (8 and 1024 CPUs by
  default), full-load schbench for the bench's run time and for twice as
  long: the marginal instructions per handled event (the difference of the
  two runs over the difference of their handled events), which leaves out
  building the machine.

`--check` fails (exit 1) when the standard bench spends more than
`--max-std` instructions per handled event, pops a stale event, or when the
marginal cost at the largest size exceeds `--max-ratio` times the smallest's.
Needs cargo and valgrind; takes a few minutes (the dist build's LTO step,
then the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from schedlab._bench_scale import machine_toml, runtime_ms, workload

ROOT = Path(__file__).resolve().parent.parent


def bench_binary() -> Path:
    """The `dist` build of the bench example (built here; also used by bounds_sites.py)."""
    subprocess.run(
        ["cargo", "build", "-q", "--profile", "dist", "--example", "bench", "-p", "schedlab-core"],
        cwd=ROOT,
        check=True,
    )
    # Where cargo put it: CARGO_TARGET_DIR when set (a worktree with its own
    # target directory), else the workspace's target/.
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return target / "dist" / "examples" / "bench"


def _count(binary: Path, *args: str) -> tuple[int, int, int]:
    """(instructions, handled events, stale events) of one bench run."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(binary), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    text = out.stdout + out.stderr
    m = re.search(r"(\d+) handled events \((\d+) stale\)", text)
    ir = re.search(r"refs:\s+([\d,]+)", text)
    if not m or not ir:
        raise SystemExit(f"engine_cost: cannot read the bench's output:\n{text[-2000:]}")
    return int(ir.group(1).replace(",", "")), int(m.group(1)), int(m.group(2))


def _schbench(cpus: int, ms: int) -> str:
    """`schedlab bench --scale`'s workload for `cpus`, run for `ms`."""
    return workload(cpus).replace(f"runtime={runtime_ms(cpus)}ms", f"runtime={ms}ms")


def measure(sizes: list[int]) -> dict[str, object]:
    binary = bench_binary()
    ir, handled, stale = _count(binary)
    doc: dict[str, object] = {
        "standard": {
            "instructions": ir,
            "handled_events": handled,
            "stale_events": stale,
            "per_handled_event": ir / handled,
        }
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            machine = Path(tmp) / f"m{n}.toml"
            machine.write_text(machine_toml(n))
            ms = runtime_ms(n)
            i1, e1, _ = _count(binary, str(machine), _schbench(n, ms))
            i2, e2, _ = _count(binary, str(machine), _schbench(n, 2 * ms))
            rows.append(
                {
                    "cpus": n,
                    "whole_run_per_handled_event": i2 / e2,
                    "marginal_per_handled_event": (i2 - i1) / max(1, e2 - e1),
                }
            )
    doc["scale"] = rows
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="8,1024", help="CPU counts, comma-separated")
    ap.add_argument("--check", action="store_true", help="fail past the limits")
    # Limits: issue 14's (at most 1,300 instructions per handled event on
    # the standard bench, at most 1.5 times the 8-CPU marginal cost at
    # 1024 CPUs), which the README claims are met (1,297 and 1.04 after
    # round 20, the nineteenth session): a regression past either fails.
    ap.add_argument("--max-std", type=float, default=1300.0)
    ap.add_argument("--max-ratio", type=float, default=1.5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    doc = measure([int(s) for s in a.sizes.split(",")])
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        std = doc["standard"]
        assert isinstance(std, dict)
        print(
            f"standard bench: {std['instructions']:,} instructions, "
            f"{std['handled_events']:,} handled, {std['stale_events']:,} stale, "
            f"{std['per_handled_event']:,.0f} per handled event"
        )
        for r in doc["scale"]:  # type: ignore[attr-defined]
            print(
                f"{r['cpus']:>5} CPUs: {r['whole_run_per_handled_event']:,.0f} per handled event "
                f"(whole run), {r['marginal_per_handled_event']:,.0f} (marginal)"
            )
    if not a.check:
        return 0
    failures = []
    std = doc["standard"]
    assert isinstance(std, dict)
    if std["per_handled_event"] > a.max_std:
        per = std["per_handled_event"]
        failures.append(f"standard bench {per:.0f} > {a.max_std:.0f} per handled event")
    if std["stale_events"] != 0:
        failures.append(f"{std['stale_events']} stale events")
    scale = doc["scale"]
    assert isinstance(scale, list)
    if len(scale) >= 2:
        ratio = scale[-1]["marginal_per_handled_event"] / scale[0]["marginal_per_handled_event"]
        if ratio > a.max_ratio:
            failures.append(f"marginal cost ratio {ratio:.2f} > {a.max_ratio}")
    for f in failures:
        print(f"engine_cost: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
