"""`schedlab record`: error paths on fake tracefs trees, and a real
recording where tracefs is available (root)."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab import _tracefs
from schedlab.cli import app

runner = CliRunner()


def test_no_tracefs_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(_tracefs.RecordError, match="no tracefs at"):
        _tracefs.find_tracefs(tmp_path, mount=False)


def test_missing_sched_tracepoint_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "tracing"
    (fake / "instances").mkdir(parents=True)
    with pytest.raises(_tracefs.RecordError, match=r"no sched/sched_switch tracepoint"):
        _tracefs.record(["true"], tmp_path / "out", tracefs=fake)
    # (On a real tracefs the instance is removed; the slow test checks it.)


def test_an_empty_command_is_refused(tmp_path: Path) -> None:
    with pytest.raises(_tracefs.RecordError, match="give the command after --"):
        _tracefs.record([], tmp_path / "out", tracefs=tmp_path)


def _tracefs_usable() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    try:
        _tracefs.find_tracefs()
    except _tracefs.RecordError as e:
        return str(e)
    return None


@pytest.mark.slow
def test_a_real_recording_analyzes_with_its_machine(tmp_path: Path) -> None:
    why = _tracefs_usable()
    if why:
        pytest.skip(f"tracefs unavailable here: {why}")
    out = tmp_path / "rec"
    code = "import threading,os\nr,w=os.pipe()\n" \
           "t=threading.Thread(target=lambda:[os.read(r,1) for _ in range(200)])\nt.start()\n" \
           "[os.write(w,b'x') for _ in range(200)]\nt.join()\n"  # fmt: skip
    res = runner.invoke(app, ["record", "-o", str(out), "--", sys.executable, "-c", code])
    assert res.exit_code == 0, res.output
    info = json.loads((out / "kernel.json").read_text())
    assert info["exit_status"] == 0
    assert "sched/sched_switch" in info["events"]
    assert "sched_switch:" in (out / "trace.txt").read_text()
    assert "[topology]" in (out / "machine.toml").read_text()
    res = runner.invoke(
        app, ["analyze", str(out / "trace.txt"), "--machine", str(out / "machine.toml"), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert not [
        d for d in Path("/sys/kernel/tracing/instances").iterdir() if d.name.startswith("schedlab-")
    ]


def test_record_needs_a_command_in_the_cli(tmp_path: Path) -> None:
    if shutil.which("true") is None:
        pytest.skip("no 'true'")
    res = runner.invoke(app, ["record", "-o", str(tmp_path / "r")])
    assert res.exit_code == 2
    assert "give the command after --" in res.output
