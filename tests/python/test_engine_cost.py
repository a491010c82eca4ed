"""The engine's instruction counts stay within what the READMEs claim
(benchmarks/engine_cost.py --check: callgrind, so the counts repeat exactly
on any machine). Slow: a few minutes (a dist build with LTO, then the
runs); needs cargo and valgrind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("cargo") is None,
    reason="needs valgrind and cargo",
)
def test_engine_cost_within_the_claimed_limits() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "engine_cost.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 stale" in out.stdout
