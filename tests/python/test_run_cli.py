"""The foundation's promises, through the CLI as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app

WORKLOAD = "workqueue:threads=6,chunks=60,jitter=30"


def _run(machine: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(
        app, ["run", "--machine", str(machine), "--workload", WORKLOAD, "--json", *extra]
    )
    return res.exit_code, res.output


def test_run_json_is_byte_identical_for_a_seed_and_differs_across_seeds(tiny_machine: Path) -> None:
    a = _run(tiny_machine, "--seed", "3")
    b = _run(tiny_machine, "--seed", "3")
    c = _run(tiny_machine, "--seed", "4")
    assert a[0] == b[0] == c[0] == 0, a[1]
    assert a[1] == b[1]
    assert a[1] != c[1]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--policy", "eevdf+no_such_feature"], "no_such_feature"),
        (["--policy", "cfs"], "cfs"),
        (["--workload", "workqueue:threads=0"], "workload.threads"),
        (["--workload", "workqueue:threads=2,cpus=0-99"], "workload.cpus"),
        (["--workload", "schbench:runtime=-1s"], "workload.runtime"),
    ],
)
def test_bad_values_exit_2_with_one_line(tiny_machine: Path, args: list[str], needle: str) -> None:
    cmd = ["run", "--machine", str(tiny_machine), "--workload", WORKLOAD, *args]
    res = CliRunner().invoke(app, cmd)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_unfinished_workload_is_a_run_failure_exit_1(tiny_machine: Path) -> None:
    cmd = ["run", "--machine", str(tiny_machine), "--workload", "sieve:threads=1,work=7200s"]
    res = CliRunner().invoke(app, cmd)
    assert res.exit_code == 1, res.output
    assert "did not finish" in res.output


def test_a_long_run_shows_its_simulated_time_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as _time

    from schedlab import cli

    shown: list[str] = []

    class FakeStatus:
        def __init__(self, what: str) -> None:
            shown.append(what)

        def start(self) -> None:
            pass

        def update(self, what: str) -> None:
            shown.append(what)

        def stop(self) -> None:
            shown.append("stopped")

    class FakeConsole:
        is_terminal = True

        def status(self, what: str) -> FakeStatus:
            return FakeStatus(what)

    monkeypatch.setattr(cli, "_err", lambda: FakeConsole())
    monkeypatch.setattr(cli._native, "run_progress", lambda: (1_500_000_000, 2_000_000_000))
    assert cli._interruptible(lambda: (_time.sleep(1.3), 7)[1], _progress=True) == 7
    assert shown[0] == "simulated 1.500 s of 2.000 s"
    assert shown[-1] == "stopped"
    # Without the flag (or off a terminal) nothing is shown.
    shown.clear()
    assert cli._interruptible(lambda: (_time.sleep(1.2), 8)[1]) == 8
    assert shown == []
