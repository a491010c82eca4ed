"""--trace and --csv targets: symlinks, FIFOs, stdout, umask, error paths."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()


def _run_with_trace(machine: Path, workload: str, target: str) -> tuple[int, str, str]:
    result = runner.invoke(
        app, ["run", "-m", str(machine), "-w", workload, "--json", "--trace", target]
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_symlink_is_kept_and_its_target_written(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    target = tmp_path / "real.trace"
    target.write_text("old\n")
    link = tmp_path / "link.trace"
    link.symlink_to(target)
    code, _, err = _run_with_trace(tiny_machine, small_workload, str(link))
    assert code == 0, err
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert "sched_switch" in target.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.trace", "real.trace"]


def test_fifo_is_written_in_place(tmp_path: Path, tiny_machine: Path, small_workload: str) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    got: list[str] = []

    def reader() -> None:
        with open(fifo, encoding="utf-8") as f:
            got.append(f.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    code, _, err = _run_with_trace(tiny_machine, small_workload, str(fifo))
    t.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got
    assert "sched_switch" in got[0]


def test_dash_writes_to_stdout(tiny_machine: Path, small_workload: str) -> None:
    code, out, err = _run_with_trace(tiny_machine, small_workload, "-")
    assert code == 0, err
    assert "sched_switch" in out


def test_new_file_mode_follows_umask(
    tmp_path: Path, tiny_machine: Path, small_workload: str, umask_027: None
) -> None:
    trace = tmp_path / "new.trace"
    code, _, err = _run_with_trace(tiny_machine, small_workload, str(trace))
    assert code == 0, err
    assert stat.S_IMODE(trace.stat().st_mode) == 0o640


def test_existing_file_keeps_its_mode(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    trace = tmp_path / "shared.trace"
    trace.write_text("old\n")
    trace.chmod(0o644)
    code, _, err = _run_with_trace(tiny_machine, small_workload, str(trace))
    assert code == 0, err
    assert stat.S_IMODE(trace.stat().st_mode) == 0o644
    assert "sched_switch" in trace.read_text()


def test_error_names_the_users_path(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    target = tmp_path / "no-such-dir" / "out.csv"
    result = runner.invoke(
        app,
        [
            "compare",
            "-m",
            str(tiny_machine),
            "-w",
            small_workload,
            "-p",
            "eevdf",
            "-n",
            "1",
            "-j",
            "1",
            "--csv",
            str(target),
        ],
    )
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {target}: "), result.stderr
    assert ".out.csv." not in result.stderr


def test_failed_run_keeps_its_trace_marked_incomplete(tmp_path: Path, tiny_machine: Path) -> None:
    trace = tmp_path / "failed.trace"
    code, _, err = _run_with_trace(tiny_machine, "sieve:threads=1,work=7200s", str(trace))
    assert code == 1
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "did not finish" in lines[0], err
    assert f"the trace so far is kept in {trace}, marked incomplete" in lines[0]
    text = trace.read_text()
    # Written while the run went, so the mark comes at the end, after the
    # last event that happened.
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("# schedlab: INCOMPLETE trace, the run did not finish: "), last
    assert "did not finish within" in last
    assert "sched_switch" in text
