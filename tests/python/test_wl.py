"""The `schedlab-wl` console script: native workloads installed with the package."""

import json
import shutil
import subprocess
import sys

import pytest


def _wl(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("schedlab-wl")
    cmd = (
        [exe, *args]
        if exe
        else [sys.executable, "-c", "from schedlab.wl import main; main()", *args]
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_pipe_prints_its_metric_as_one_json_line() -> None:
    done = _wl("pipe:loops=1000")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["family"] == "pipe"
    assert doc["usecs_per_op"] > 0


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("hackbench:groups=0", "groups: expected a count"),
        ("nope", "unknown family"),
        ("schbench:runtime=0", "schbench: runtime: expected a duration from 1ms to 3600s"),
    ],
)
def test_bad_spec_is_one_line_exit_2(spec: str, needle: str) -> None:
    done = _wl(spec)
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_schbench_prints_schbench_units() -> None:
    done = _wl("schbench:threads=1,runtime=100ms,sleep=0,operations=1,op=50us")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["family"] == "schbench"
    assert doc["requests_per_s"] > 0
    assert set(doc["wakeup_latency_us"]) >= {"p50", "p90", "p99", "p99.9", "min", "max", "samples"}
