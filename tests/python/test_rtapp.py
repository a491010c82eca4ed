"""rt-app JSON files as workloads, through the CLI and the Python API: a file
written here from rt-app's format description runs, an unknown event fails
naming its path in the file (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app

runner = CliRunner()

# A 10 ms-period thread running 2 ms each period, and a consumer woken by a
# producer through a condition variable, 20 times.
PERIODIC_AND_PAIR = """
/* written for schedlab's tests from rt-app's doc/tutorial.txt format */
{
  "global": {"duration": -1, "default_policy": "SCHED_OTHER", "logdir": "./"},
  "tasks": {
    "periodic": {"loop": 20, "run": 2000, "timer": {"ref": "unique", "period": 10000}},
    "consumer": {"loop": 20, "lock": "m", "wait": {"ref": "c", "mutex": "m"},
                 "unlock": "m", "run": 500},
    "producer": {"loop": 20, "delay": 1000, "run": 1000, "lock": "m", "signal": "c",
                 "unlock": "m", "sleep": 9000}
  }
}
"""


def _write(tmp_path: Path, text: str, name: str = "uc.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_rtapp_file_runs_from_the_cli(tmp_path: Path, tiny_machine: Path) -> None:
    path = _write(tmp_path, PERIODIC_AND_PAIR)
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    completion = doc["metrics"]["completion_time_s"]
    # 20 periods of 10 ms: the periodic thread sets the pace.
    assert 0.199 < completion < 0.21, completion
    # The same file named by rtapp:file= (any file name).
    other = _write(tmp_path, PERIODIC_AND_PAIR, "usecase.rtapp")
    result2 = runner.invoke(
        app, ["run", "-m", str(tiny_machine), "-w", f"rtapp:file={other}", "--json"]
    )
    assert result2.exit_code == 0, result2.output
    assert json.loads(result2.output)["metrics"] == doc["metrics"]


def test_an_unknown_event_fails_with_its_path(tmp_path: Path, tiny_machine: Path) -> None:
    bad = _write(
        tmp_path, '{"tasks": {"t": {"loop": 1, "phases": {"p1": {"run": 10, "teleport": 3}}}}}'
    )
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", str(bad)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert str(bad) in lines[0], lines[0]
    assert "rtapp.tasks.t.phases.p1.teleport" in lines[0], lines[0]


def test_rtapp_spec_needs_exactly_a_file(tiny_machine: Path) -> None:
    with pytest.raises(schedlab.SpecError, match="rtapp:file=PATH"):
        schedlab.run(str(tiny_machine), "rtapp:path=x.json")
