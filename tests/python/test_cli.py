"""CLI end to end with typer's runner: help, exit statuses, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab._resolve import preset_names
from schedlab.cli import app

runner = CliRunner()

COMMANDS = [
    ["run"],
    ["compare"],
    ["demo"],
    ["bench"],
    ["analyze"],
    ["topo", "list"],
    ["topo", "show"],
    ["policy", "list"],
    ["policy", "show"],
    ["workload", "list"],
    ["reproduce"],
]


def _error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    assert lines[0].startswith("error: ")
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_has_help_and_json(cmd: list[str]) -> None:
    result = runner.invoke(app, [*cmd, "--help"])
    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout


def test_top_level_help() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("run", "compare", "demo", "bench", "analyze", "topo", "policy", "workload"):
        assert name in result.stdout


def test_console_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_unknown_machine_exits_2_naming_it_and_listing_presets(small_workload: str) -> None:
    result = runner.invoke(app, ["run", "-m", "no-such-box", "-w", small_workload])
    assert result.exit_code == 2
    line = _error_line(result.stderr)
    assert "no-such-box" in line
    for name in preset_names():
        assert name in line


def test_malformed_machine_file_exits_2_naming_file(
    fixtures_dir: Path, small_workload: str
) -> None:
    bad = fixtures_dir / "malformed.toml"
    result = runner.invoke(app, ["run", "-m", str(bad), "-w", small_workload])
    assert result.exit_code == 2
    line = _error_line(result.stderr)
    assert str(bad) in line
    assert "TOML" in line


def test_missing_machine_file_exits_2_naming_path(tmp_path: Path, small_workload: str) -> None:
    missing = tmp_path / "nowhere.toml"
    result = runner.invoke(app, ["run", "-m", str(missing), "-w", small_workload])
    assert result.exit_code == 2
    assert str(missing) in _error_line(result.stderr)


def test_topo_show_unknown_machine_exits_2() -> None:
    result = runner.invoke(app, ["topo", "show", "no-such-box"])
    assert result.exit_code == 2
    assert "no-such-box" in _error_line(result.stderr)


def test_bad_option_exits_2(tiny_machine: Path, small_workload: str) -> None:
    # compare without any --policy is a usage error.
    result = runner.invoke(app, ["compare", "-m", str(tiny_machine), "-w", small_workload])
    assert result.exit_code == 2
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", "x", "--seed", "-1"])
    assert result.exit_code == 2


def test_trace_not_written_on_error(
    tmp_path: Path, fixtures_dir: Path, small_workload: str
) -> None:
    trace = tmp_path / "out.trace"
    result = runner.invoke(
        app,
        [
            "run",
            "-m",
            str(fixtures_dir / "malformed.toml"),
            "-w",
            small_workload,
            "--trace",
            str(trace),
        ],
    )
    assert result.exit_code == 2
    assert not trace.exists()


def test_existing_trace_not_truncated_on_error(tmp_path: Path, tiny_machine: Path) -> None:
    trace = tmp_path / "keep.trace"
    trace.write_text("old contents\n")
    # An unknown policy fails in the core (or the unwired engine fails): either
    # way the run does not succeed and the old file must survive.
    result = runner.invoke(
        app,
        [
            "run",
            "-m",
            str(tiny_machine),
            "-w",
            "hackbench:groups=1",
            "-p",
            "no-such-policy",
            "--trace",
            str(trace),
        ],
    )
    assert result.exit_code in (1, 2)
    _error_line(result.stderr)
    assert trace.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.trace"]


def test_analyze_missing_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "none.trace"
    result = runner.invoke(app, ["analyze", str(missing)])
    assert result.exit_code == 2
    assert str(missing) in _error_line(result.stderr)


def test_topo_list_json_lists_every_preset() -> None:

    result = runner.invoke(app, ["topo", "list", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert [e["name"] for e in entries] == preset_names()
    for e in entries:
        assert e["description"], f"preset {e['name']} has no description"


def test_policy_and_workload_list_json_parse() -> None:

    for cmd in (["policy", "list", "--json"], ["workload", "list", "--json"]):
        result = runner.invoke(app, cmd)
        assert result.exit_code == 0, result.output
        assert isinstance(json.loads(result.stdout), list)


def test_topo_show(tiny_machine: Path) -> None:
    text = runner.invoke(app, ["topo", "show", str(tiny_machine)])
    assert text.exit_code == 0, text.output
    doc = runner.invoke(app, ["topo", "show", str(tiny_machine), "--json"])
    assert doc.exit_code == 0, doc.output
    assert json.loads(doc.stdout)


def test_policy_show_expands_profiles_and_peers() -> None:
    res = runner.invoke(app, ["policy", "show", "v5.9+wa_idle_prev", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["base"] == "v5.9"
    assert doc["class"]["name"] == "fair"
    assert "+SIS_PROP" in doc["changed_from_mainline"]
    assert "-SIS_UTIL" in doc["changed_from_mainline"]
    assert "+wa_idle_prev" not in doc["changed_from_mainline"]  # on in mainline too
    res = runner.invoke(app, ["policy", "show", "cosmos:slice=2ms", "--json"])
    doc = json.loads(res.stdout)
    assert doc["class"] == {
        "name": "cosmos",
        "slice_ns": 2_000_000,
        "slice_lag_ns": 50_000_000,
        "busy_pct": 0,
        "deferred_wakeup": False,
    }
    assert doc["features_apply"] is False
    res = runner.invoke(app, ["policy", "show", "eevdf+nope"])
    assert res.exit_code == 2
    assert "nope" in _error_line(res.stderr)


_GOOD_LINE = " bash-7 [001] 1.000000: sched_process_exit: comm=bash pid=7 prio=120\n"


@pytest.mark.parametrize(
    "bad",
    [
        " bash-7 [4000000000] 1.000001: sched_process_exit: comm=bash pid=7 prio=120\n",
        "#P:3000000000\n",
    ],
)
def test_analyze_impossible_cpu_exits_2_naming_file_and_line(tmp_path: Path, bad: str) -> None:
    trace = tmp_path / "huge.trace"
    trace.write_text(_GOOD_LINE + bad)
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab", "analyze", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    line = _error_line(proc.stderr)
    assert f"{trace}: line 2:" in line


def test_analyze_warns_on_bad_and_reversed_lines_and_strict_fails(tmp_path: Path) -> None:
    trace = tmp_path / "messy.trace"
    trace.write_text(
        " bash-7 [001] 2.000000: sched_process_exit: comm=bash pid=7 prio=120\n"
        "garbage\n"
        " sh-8 [001] 1.000000: sched_process_exit: comm=sh pid=8 prio=120\n"
    )
    result = runner.invoke(app, ["analyze", str(trace), "--json"])
    assert result.exit_code == 0, result.output
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 2
    assert "1 malformed line(s)" in warnings[0]
    assert "line 2" in warnings[0]
    assert "line 3" in warnings[1]
    strict = runner.invoke(app, ["analyze", str(trace), "--strict"])
    assert strict.exit_code == 2
    assert "line 2" in _error_line(strict.stderr)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "-w", "hackbench", "--seed", "-1"], "--seed"),
        (["run", "-w", "hackbench", "--seed", "99999999999999999999999"], "--seed"),
        (["compare", "-w", "hackbench", "-p", "eevdf", "--runs", "0"], "--runs"),
        (["run", "-w", "hackbench", "--no-such-option"], "--no-such-option"),
        (["run"], "--workload"),
        (
            ["compare", "-w", "hackbench", "-p", "eevdf", "--seed", str(2**64 - 1), "--runs", "2"],
            "seed",
        ),
    ],
)
def test_argument_errors_are_one_line_exit_2(
    tiny_machine: Path, args: list[str], needle: str
) -> None:
    """Click's usage errors go through the same one-line path as ours, in a
    real process (typer's boxed message and tracebacks come from its `main`)."""
    argv = [args[0], "-m", str(tiny_machine), *args[1:]]
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab", *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert needle in _error_line(proc.stderr)
    assert proc.stdout == ""


def test_argument_error_one_line_through_the_runner(tiny_machine: Path) -> None:
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", "x", "--seed", "-1"])
    assert result.exit_code == 2
    assert "--seed" in _error_line(result.stderr)


def test_help_still_exits_0() -> None:
    result = runner.invoke(app, ["run", "--help"])
    assert result.exit_code == 0
    assert "--seed" in result.stdout
