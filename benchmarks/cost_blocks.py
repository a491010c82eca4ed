"""Where the standard bench's instructions go, by block of the engine, for
the "Where the instructions go now" lines of
crates/schedlab-core/src/engine/README.md (round 16 on).

    python benchmarks/cost_blocks.py                      # the blocks
    python benchmarks/cost_blocks.py --lines fair/sg_sums.rs --top 20
    python benchmarks/cost_blocks.py --json

It builds the `bench` example in the `dist` profile (as
benchmarks/engine_cost.py does), runs it under
`valgrind --tool=callgrind --dump-instr=yes`, and gives every executed
instruction of the binary to the innermost frame of this crate that
`addr2line -i` names for it (inlined code counts where its source is, not
in the function it was inlined into), then sums by block: a block is a
set of source files (BLOCKS). Instructions whose innermost frame is the
standard library's slice indexing (bounds tests, addresses) are also
counted apart, whatever crate frame they belong to. Needs cargo, valgrind
and binutils; takes about a minute after the build.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from bounds_sites import (  # this directory: run as a script
    CRATE,
    bench_parser,
    inlined_frames,
    run_counts,
)
from engine_cost import bench_binary

# Blocks of the engine, by source file (path under crates/schedlab-core/src/).
BLOCKS: dict[str, tuple[str, ...]] = {
    "event queue": ("sim/queue.rs",),
    "queue lanes": ("sim/lane.rs",),
    "PELT": ("pelt.rs",),
    "balance sums and statistics": ("fair/sg_sums.rs", "fair/lb_stats.rs"),
    "balance passes": (
        "fair/balance.rs",
        "fair/busiest.rs",
        "fair/newidle.rs",
        "fair/periodic.rs",
        "fair/nohz.rs",
        "fair/local_group.rs",
        "fair/capacity.rs",
    ),
    "runqueue indexing": ("engine/rqs.rs",),
    "collector and occupancy": ("metrics/collector.rs", "metrics/occupancy.rs"),
    "idle path": ("engine/idle.rs", "cpuidle/", "engine/timers.rs"),
}
SLICE_INDEX = "library/core/src/slice/index.rs"


def frames_of(binary: Path, addrs: list[int]) -> dict[int, tuple[str, str]]:
    """For each address: its innermost frame (any crate) and its innermost
    frame in this crate (path:line under src/, or "")."""
    out: dict[int, tuple[str, str]] = {}
    for a, locs in inlined_frames(binary, addrs).items():
        ours = [loc.split(CRATE, 1)[1] for loc in locs if CRATE in loc]
        out[a] = (locs[0] if locs else "", ours[0] if ours else "")
    return out


def block_of(path: str) -> str:
    for name, files in BLOCKS.items():
        if path.startswith(files):
            return name
    return "elsewhere in the crate" if path else "outside the crate"


def measure(binary: Path, bench_args: list[str]) -> dict[str, object]:
    counts = run_counts(binary, bench_args)
    frames = frames_of(binary, sorted(counts))
    blocks: dict[str, int] = defaultdict(int)
    lines: dict[str, int] = defaultdict(int)
    slice_index = 0
    for a, n in counts.items():
        inner, crate = frames.get(a, ("", ""))
        blocks[block_of(crate.rsplit(":", 1)[0])] += n
        lines[crate or "?"] += n
        if SLICE_INDEX in inner:
            slice_index += n
    return {
        "instructions": sum(counts.values()),
        "blocks": dict(sorted(blocks.items(), key=lambda kv: -kv[1])),
        "slice_index": slice_index,
        "lines": dict(sorted(lines.items(), key=lambda kv: -kv[1])),
    }


def main() -> int:
    ap = bench_parser(__doc__)
    ap.add_argument("--lines", metavar="PREFIX", help="also list the lines of files under PREFIX")
    ap.add_argument("--top", type=int, default=30, help="lines to list")
    a = ap.parse_args()
    doc = measure((a.binary or bench_binary()).resolve(), a.bench_args)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    total, slice_index = doc["instructions"], doc["slice_index"]
    blocks, lines = doc["blocks"], doc["lines"]
    assert isinstance(total, int)
    assert isinstance(slice_index, int)
    assert isinstance(blocks, dict)
    assert isinstance(lines, dict)
    print(f"{total:,} instructions in the binary, by the innermost frame of this crate:")
    for name, n in blocks.items():
        print(f"{n:>13,} {100 * n / total:5.1f}%  {name}")
    share = 100 * slice_index / total
    print(f"{slice_index:>13,} {share:5.1f}%  (in the standard library's slice indexing)")
    if a.lines:
        shown = [(k, n) for k, n in lines.items() if k.startswith(a.lines)][: a.top]
        print(f"-- lines under {a.lines}")
        for k, n in shown:
            print(f"{n:>13,} {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
