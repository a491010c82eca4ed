"""Trace replay (-w replay:trace=FILE): a simulated trace replayed on the
machine it came from gives back its totals of run time and wakeups; perf
script text is read too; a filter that matches nothing is an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app
from schedlab.replay import program_from_trace

runner = CliRunner()


def _metrics(args: list[str]) -> dict[str, float]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["metrics"]  # type: ignore[no-any-return]


def test_replaying_a_simulated_trace_gives_back_its_totals(tmp_path: Path) -> None:
    trace = tmp_path / "wq.txt"
    m = "laptop-4c8t"
    orig = _metrics(["run", "-m", m, "-w", "workqueue:threads=4,chunks=40", "--trace", str(trace)])
    again = _metrics(["run", "-m", m, "-w", f"replay:trace={trace}"])
    busy = lambda x: x["completion_time_s"] * x["cpu_util_pct"]  # noqa: E731
    assert abs(again["wakeups"] - orig["wakeups"]) <= 0.05 * orig["wakeups"], (orig, again)
    assert abs(busy(again) - busy(orig)) <= 0.10 * busy(orig), (busy(orig), busy(again))
    # Only the workers: the manager's wakeups become sleeps.
    text = program_from_trace(trace, "wq-worker")
    assert "wq-manager" not in text
    assert text.count("[[task]]") == 4


def test_perf_script_lines_are_read(tmp_path: Path) -> None:
    trace = tmp_path / "perf.txt"
    trace.write_text(
        "  a  11 [000] 1.000000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
        "prev_state=R ==> next_comm=a next_pid=11 next_prio=120\n"
        "  a  11 [000] 1.000200: sched:sched_switch: prev_comm=a prev_pid=11 prev_prio=120 "
        "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
        "  <idle>  0 [000] 1.001200: sched:sched_waking: comm=a pid=11 prio=120 target_cpu=000\n"
        "  <idle>  0 [000] 1.001210: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 "
        "prev_prio=120 prev_state=R ==> next_comm=a next_pid=11 next_prio=120\n"
        "  a  11 [000] 1.001310: sched:sched_switch: prev_comm=a prev_pid=11 prev_prio=120 "
        "prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
    )
    text = program_from_trace(trace)
    assert '{ compute = "200000ns" }' in text
    assert '{ sleep = "1000000ns" }' in text
    assert '{ compute = "100000ns" }' in text


def test_a_filter_matching_nothing_is_a_spec_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text("# nothing\n")
    with pytest.raises(schedlab.SpecError, match=r"workload\.replay"):
        schedlab.run("laptop-4c8t", f"replay:trace={trace},comm=nope")
