"""A trace streams to disk: a 1024-CPU run writing a Perfetto trace peaks
under 200 MB resident (the issue's bound), and no higher than the same run
without a trace by more than a small constant (the writer's buffers), while
the trace it writes is several times that size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from schedlab._bench_scale import machine_toml

# Full load on 1024 CPUs for 1 simulated second: about 130 MB of Perfetto trace.
WORKLOAD = "schbench:runtime=1s,message_threads=16"

# Runs the CLI in a child and prints its peak resident set (KiB on Linux):
# RUSAGE_CHILDREN of a fresh process covers that child alone.
PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_mb(args: list[str]) -> float:
    cli = [sys.executable, "-m", "schedlab", *args]
    out = subprocess.run(
        [sys.executable, "-c", PEAK, *cli], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip()) / 1024


def test_a_1024_cpu_perfetto_trace_streams(tmp_path: Path) -> None:
    machine = tmp_path / "m1024.toml"
    machine.write_text(machine_toml(1024))
    run = ["run", "-m", str(machine), "-w", WORKLOAD]
    bare = _peak_mb(run)
    trace = tmp_path / "t.pftrace"
    traced = _peak_mb([*run, "--trace", str(trace)])
    size_mb = trace.stat().st_size / 2**20
    assert size_mb > 100, size_mb
    assert traced < 200, (traced, bare)
    assert traced - bare < 40, (traced, bare, size_mb)
