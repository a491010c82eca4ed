"""`schedlab run --plot`: a per-CPU timeline PNG from the run's trace."""

from pathlib import Path

from typer.testing import CliRunner

from schedlab import plot, trace
from schedlab.cli import app

runner = CliRunner()

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_run_plot_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "tl.png"
    res = runner.invoke(
        app, ["run", "-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=20", "--plot", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_plot_refuses_a_perfetto_trace_in_one_line(tmp_path: Path) -> None:
    args = ["run", "-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=20"]
    res = runner.invoke(
        app, [*args, "--trace", str(tmp_path / "x.pftrace"), "--plot", str(tmp_path / "p.png")]
    )
    assert res.exit_code == 2
    assert "--plot reads the trace as ftrace text" in res.output


def test_timeline_counts_running_stretches_per_cpu(tmp_path: Path) -> None:
    # CPU 0 runs pid 10 from 1.0 to 1.5 s, then idles; CPU 1 runs pid 11
    # (renamed after its first switch) from 1.2 s to the end (2.0 s).
    lines = [
        "<idle>-0 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120",
        "<idle>-0 [001] d..2. 1.200000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=11 next_prio=120",
        "a-10 [000] d..2. 1.500000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        "b-11 [001] d..2. 1.600000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=b2 next_pid=11 next_prio=120",
        "<idle>-0 [000] d..2. 2.000000: sched_waking: comm=a pid=10 prio=120 target_cpu=000",
    ]
    frames = trace.parse(lines)
    per_cpu, comms, t0, t1 = plot._intervals(frames)
    assert (t0, t1) == (1.0, 1.6)
    assert per_cpu[0] == [(1.0, 0.5, 10)]
    assert [round(w, 6) for _, w, _ in per_cpu[1]] == [0.4]
    assert comms[11] == "b2"
    summary = plot.cpu_timeline(frames, tmp_path / "t.png")
    assert summary == {"cpus": 2, "stretches": 2, "tasks": 2}
