"""User programs in TOML: the README's example is the shipped file and runs
from the command line; a mistake names its path (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "programs" / "prodcons.toml"


def test_readme_shows_the_shipped_example() -> None:
    body = "\n".join(ln for ln in EXAMPLE.read_text().splitlines() if not ln.startswith("#"))
    assert body.strip() in (ROOT / "README.md").read_text()


def test_the_example_runs_and_request_metrics_are_absent(tiny_machine: Path) -> None:
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)["metrics"]
    assert metrics["completion_time_s"] > 0.004
    # The program makes no request marks: those metrics do not apply.
    assert metrics["requests_per_s"] is None


def test_a_mistake_names_its_path(tmp_path: Path, tiny_machine: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[task]]\nname = "a"\nops = [ { recv = "nowhere" } ]\n')
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", str(bad)])
    assert result.exit_code == 2
    assert "program.task[0].ops[0].recv" in result.output
