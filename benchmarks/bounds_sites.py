"""Where the standard bench runs bounds tests: every conditional jump of the
`dist` bench example that leads to `panic_bounds_check` or
`slice_index_fail`, with how often it ran and the source line it guards,
for the table of crates/schedlab-core/src/engine/README.md ("Round 15").

    python benchmarks/bounds_sites.py              # top sites and lines
    python benchmarks/bounds_sites.py --top 60 --json

It builds the `bench` example in the `dist` profile (as
benchmarks/engine_cost.py does), runs it under
`valgrind --tool=callgrind --dump-instr=yes` (per-instruction counts; in
callgrind's output a relative position is a decimal difference), reads the
disassembly (`objdump -d`), and names each site by `addr2line -i`: the
innermost frame of this crate and its two callers. A jump counts as a bounds
test when its target, or the instruction after it, reaches a call of one of
the panic functions within a few instructions without other control flow.
Each test is a compare and a branch (often with a length load). Needs cargo,
valgrind and binutils; takes about a minute after the build.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from engine_cost import bench_binary  # this directory: run as a script

ROOT = Path(__file__).resolve().parent.parent
PANICS = ("core::panicking::panic_bounds_check", "core::slice::index::slice_index_fail")
CRATE = "crates/schedlab-core/src/"
INSN = re.compile(r"\s+([0-9a-f]+):\s+(.*)$")
JCC = re.compile(r"^j(?!mp)[a-z]+\s+([0-9a-f]+) <")
JMP = re.compile(r"^jmp\s+([0-9a-f]+) <")


def instruction_counts(callgrind_out: Path, binary: Path) -> dict[int, int]:
    """Instructions executed at each address of `binary` (its object only)."""
    counts: dict[int, int] = defaultdict(int)
    names: dict[str, str] = {}
    obj = ""
    last = [0, 0]
    after_calls = False
    for line in callgrind_out.read_text().splitlines():
        if not line:
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            for i, p in enumerate(parts[:2]):
                if p.startswith("0x"):
                    last[i] = int(p, 16)
                elif p[0] in "+-":
                    last[i] += int(p)
                elif p != "*":
                    last[i] = int(p)
            # The line after `calls=` is the call's inclusive cost.
            if not after_calls and obj == str(binary) and len(parts) > 2:
                counts[last[0]] += int(parts[2])
            after_calls = False
            continue
        if line.startswith("calls="):
            after_calls = True
            continue
        m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?", line)
        if m:
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "ob":
                obj = names.get(ident, "")
    return counts


def bounds_jumps(binary: Path) -> list[int]:
    """Addresses of the conditional jumps that lead to a bounds panic."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C", "-M", "intel", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    insns = [
        (int(m.group(1), 16), m.group(2).strip()) for m in map(INSN.match, out.splitlines()) if m
    ]
    at = {a: i for i, (a, _) in enumerate(insns)}

    def panics(i: int, hops: int = 1) -> bool:
        for k in range(i, min(i + 10, len(insns))):
            text = insns[k][1]
            if text.startswith(("call", "jmp")):
                if any(p + ">" in text for p in PANICS):
                    return True
                m = JMP.match(text)
                target = int(m.group(1), 16) if m else -1
                return hops > 0 and k - i < 4 and target in at and panics(at[target], hops - 1)
            if text.startswith(("j", "ret", "ud2")):
                return False
        return False

    found = []
    for i, (a, text) in enumerate(insns):
        m = JCC.match(text)
        if m and ((int(m.group(1), 16) in at and panics(at[int(m.group(1), 16)])) or panics(i + 1)):
            found.append(a)
    return found


def inlined_frames(binary: Path, addrs: list[int]) -> dict[int, list[str]]:
    """For each address, the locations (path:line) of its inlined frames, any
    crate, innermost first (`addr2line -i`)."""
    out = subprocess.run(
        ["addr2line", "-i", "-a", "-e", str(binary)],
        input="\n".join(hex(a) for a in addrs),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    frames: dict[int, list[str]] = {}
    cur = -1
    for line in out.splitlines():
        if line.startswith("0x"):
            cur = int(line, 16)
            frames[cur] = []
        else:
            frames[cur].append(line.split(" ")[0])
    return frames


def crate_frames(binary: Path, addrs: list[int]) -> dict[int, list[str]]:
    """For each address, its inlined frames in this crate, innermost first."""
    return {
        a: [loc.split(CRATE, 1)[1] for loc in locs if CRATE in loc]
        for a, locs in inlined_frames(binary, addrs).items()
    }


def run_counts(binary: Path, bench_args: list[str]) -> dict[int, int]:
    """Executions per instruction address of `binary` run with `bench_args`
    under callgrind (`--dump-instr=yes`)."""
    with tempfile.TemporaryDirectory() as tmp:
        cg = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--dump-instr=yes",
                f"--callgrind-out-file={cg}",
                str(binary),
                *bench_args,
            ],
            capture_output=True,
            check=True,
        )
        return instruction_counts(cg, binary)


def measure(binary: Path, bench_args: list[str]) -> dict[str, object]:
    counts = run_counts(binary, bench_args)
    sites = sorted(((counts[a], a) for a in bounds_jumps(binary) if counts.get(a)), reverse=True)
    frames = crate_frames(binary, [a for _, a in sites])
    by_line: dict[str, int] = defaultdict(int)
    by_file: dict[str, int] = defaultdict(int)
    for n, a in sites:
        line = (frames.get(a) or ["?"])[0]
        by_line[line] += n
        by_file[line.rsplit(":", 1)[0]] += n
    tests = sum(n for n, _ in sites)
    instructions = sum(counts.values())
    return {
        "instructions": instructions,
        "tests": tests,
        "sites": [
            {"count": n, "address": hex(a), "frames": frames.get(a, [])[:3]} for n, a in sites
        ],
        "by_line": dict(sorted(by_line.items(), key=lambda kv: -kv[1])),
        "by_file": dict(sorted(by_file.items(), key=lambda kv: -kv[1])),
    }


def bench_parser(description: str | None) -> argparse.ArgumentParser:
    """The options both attributions take: the binary, --json and the
    bench's own arguments."""
    ap = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument(
        "--binary", type=Path, help="a bench binary built with debug info (default: build it)"
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "bench_args", nargs="*", help="the bench's arguments (default: the standard bench)"
    )
    return ap


def main() -> int:
    ap = bench_parser(__doc__)
    ap.add_argument("--top", type=int, default=30, help="sites and lines to print")
    a = ap.parse_args()
    doc = measure((a.binary or bench_binary()).resolve(), a.bench_args)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    tests, instructions = doc["tests"], doc["instructions"]
    assert isinstance(tests, int)
    assert isinstance(instructions, int)
    print(f"{tests:,} bounds tests run, {instructions:,} instructions in the binary")
    sites = doc["sites"]
    assert isinstance(sites, list)
    for s in sites[: a.top]:
        print(f"{s['count']:>11,} {s['address']:>9} {' <- '.join(s['frames'])}")
    for key in ("by_file", "by_line"):
        table = doc[key]
        assert isinstance(table, dict)
        print(f"-- {key.replace('_', ' ')}")
        for name, n in list(table.items())[: a.top]:
            print(f"{n:>11,} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
