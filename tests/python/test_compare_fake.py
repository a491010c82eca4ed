"""compare -> summarize -> the CLI table, with the native run replaced by a
fake that answers with the native `RunOutput`'s attributes (no engine needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab import _result
from schedlab.cli import app

runner = CliRunner()


def fake_run(
    machine_text: str,
    machine_format: str,
    machine_origin: str,
    workload: str,
    workload_format: str,
    policy: str,
    seed: int,
    trace: bool = False,
    check_invariants: bool = False,
    max_time_ns: int = 0,
) -> SimpleNamespace:
    # The second policy is 10% faster; seeds add a spread.
    ct = (1.0 if policy == "eevdf" else 0.9) + 0.01 * seed
    metric = SimpleNamespace
    return SimpleNamespace(
        machine="fake",
        workload=workload,
        workloads=[workload],
        policy=policy,
        seed=seed,
        primary="completion_time_s",
        metrics=[
            metric(name="completion_time_s", unit="s", value=ct, better="lower"),
            metric(name="wakeup_latency_p99_us", unit="us", value=50.0, better="lower"),
            metric(name="migrations", unit="count", value=float(seed), better="neither"),
            metric(name="wasted_idle_pct", unit="pct", value=0.0, better="lower"),
            metric(name="context_switches", unit="count", value=3.0, better="neither"),
        ],
        events_processed=10,
        events_handled=10,
        sim_time_ns=1000,
        trace="fake trace\n" if trace else None,
    )


def fake_run_to_file(
    machine_text: str,
    machine_format: str,
    machine_origin: str,
    workload: str,
    workload_format: str,
    policy: str,
    seed: int,
    trace_path: str,
    trace_format: str,
    check_invariants: bool = False,
    max_time_ns: int = 0,
) -> SimpleNamespace:
    # As the native writer: the trace goes to the file while the run goes.
    Path(trace_path).write_text(f"fake {trace_format} trace\n")
    return fake_run(
        machine_text, machine_format, machine_origin, workload, workload_format, policy, seed
    )


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_result._native, "run", fake_run)
    monkeypatch.setattr(_result._native, "run_to_file", fake_run_to_file)


@pytest.mark.usefixtures("fake_engine")
def test_compare_frame_shape(tiny_machine: Path) -> None:
    df = schedlab.compare(tiny_machine, "hackbench", ["eevdf", "eevdf+x"], runs=3, seed=10, jobs=1)
    assert list(df["policy"]) == ["eevdf"] * 3 + ["eevdf+x"] * 3
    assert list(df["seed"]) == [10, 11, 12] * 2
    assert df.attrs["primary"] == "completion_time_s"
    s = schedlab.summarize(df, ["completion_time_s"])
    assert s.iloc[1]["pct_vs_first"] == pytest.approx(-100 * 0.1 / 1.11)


@pytest.mark.usefixtures("fake_engine")
def test_cli_compare_table_and_json(tiny_machine: Path, tmp_path: Path) -> None:
    args = ["compare", "-m", str(tiny_machine), "-w", "hackbench", "-p", "eevdf", "-p", "eevdf+x"]
    table = runner.invoke(app, [*args, "--runs", "2", "--jobs", "1"])
    assert table.exit_code == 0, table.output
    out = table.stdout
    # Primary first, then the default secondary metrics; others left out.
    assert out.index("completion_time_s") < out.index("wakeup_latency_p99_us")
    assert out.index("wakeup_latency_p99_us") < out.index("migrations")
    assert "context_switches" not in out
    assert "% vs eevdf" in out
    assert "lower is better" in out
    assert re.search(r"-(9\.9|10\.0)%", out)  # (0.905 - 1.005) / 1.005
    doc = json.loads(
        runner.invoke(
            app, [*args, "--runs", "2", "--jobs", "1", "--json", "--metric", "context_switches"]
        ).stdout
    )
    assert doc["seeds"] == [0, 1]
    assert [r["metric"] for r in doc["summary"]] == ["context_switches"] * 2
    assert doc["summary"][0]["pct_vs_first"] is None
    assert len(doc["runs"]) == 4


@pytest.mark.usefixtures("fake_engine")
def test_cli_run_table_and_trace(tiny_machine: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    result = runner.invoke(
        app, ["run", "-m", str(tiny_machine), "-w", "hackbench", "--trace", str(trace)]
    )
    assert result.exit_code == 0, result.output
    assert "completion_time_s" in result.stdout
    assert trace.read_text() == "fake ftrace trace\n"
