"""End-to-end tests through the engine: runs, compare, traces, demo, bench."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app

runner = CliRunner()


def test_run_returns_primary_metric(tiny_machine: Path, small_workload: str) -> None:
    r = schedlab.run(machine=tiny_machine, workload=small_workload, policy="eevdf", seed=1)
    assert r.primary in r.metrics
    assert set(r.units) == set(r.metrics) == set(r.better)
    assert r.events_processed > 0
    assert r.sim_time_ns > 0
    assert r.seed == 1
    assert r.trace is None


def test_same_seed_same_result_and_trace(tiny_machine: Path, small_workload: str) -> None:
    a = schedlab.run(tiny_machine, small_workload, seed=5, trace=True, check_invariants=True)
    b = schedlab.run(tiny_machine, small_workload, seed=5, trace=True, check_invariants=True)
    assert a.to_dict() == b.to_dict()
    assert a.trace
    assert a.trace == b.trace


def test_workload_file_and_dict(tiny_machine: Path, fixtures_dir: Path) -> None:
    f = schedlab.run(tiny_machine, fixtures_dir / "hackbench-small.toml")
    d = schedlab.run(tiny_machine, {"family": "hackbench", "groups": 1, "fds": 2, "loops": 10})
    assert f.metrics == d.metrics


def test_compare_in_process_equals_pool(tiny_machine: Path, small_workload: str) -> None:
    policies = ["eevdf", "eevdf-WA_IDLE"]
    one = schedlab.compare(tiny_machine, small_workload, policies, runs=2, seed=7, jobs=1)
    two = schedlab.compare(tiny_machine, small_workload, policies, runs=2, seed=7, jobs=2)
    pd.testing.assert_frame_equal(one, two)
    assert list(one["policy"]) == ["eevdf", "eevdf", "eevdf-WA_IDLE", "eevdf-WA_IDLE"]
    assert list(one["seed"]) == [7, 8, 7, 8]
    s = schedlab.summarize(one)
    assert s.iloc[0]["metric"] == one.attrs["primary"]


def test_cli_run_json_and_trace(tmp_path: Path, tiny_machine: Path, small_workload: str) -> None:
    trace = tmp_path / "run.trace"
    result = runner.invoke(
        app, ["run", "-m", str(tiny_machine), "-w", small_workload, "--json", "--trace", str(trace)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["primary"] in doc["metrics"]
    assert trace.read_text()


def test_cli_compare_deterministic_across_jobs(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    base = [
        "compare",
        "-m",
        str(tiny_machine),
        "-w",
        small_workload,
        "-p",
        "eevdf",
        "-p",
        "eevdf-WA_IDLE",
        "--runs",
        "2",
    ]
    a = runner.invoke(app, [*base, "--jobs", "1", "--json", "--csv", str(tmp_path / "a.csv")])
    b = runner.invoke(app, [*base, "--jobs", "2", "--json"])
    assert a.exit_code == 0, a.output
    assert b.exit_code == 0, b.output
    assert a.stdout == b.stdout
    assert len(pd.read_csv(tmp_path / "a.csv")) == 4
    table = runner.invoke(app, [*base, "--jobs", "1"])
    assert table.exit_code == 0, table.output
    assert "% vs eevdf" in table.stdout
    assert "±" in table.stdout


def test_cli_compare_unknown_metric_exits_2(tiny_machine: Path, small_workload: str) -> None:
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
            "--runs",
            "1",
            "--jobs",
            "1",
            "--metric",
            "no_such_metric",
        ],
    )
    assert result.exit_code == 2
    assert "no_such_metric" in result.stderr


def test_cli_analyze_reads_simulated_trace(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    trace = tmp_path / "sim.trace"
    assert (
        runner.invoke(
            app, ["run", "-m", str(tiny_machine), "-w", small_workload, "--trace", str(trace)]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["analyze", str(trace), "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


def test_demo_runs() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Shown:" in result.stdout


def test_bench_json() -> None:
    result = runner.invoke(app, ["bench", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["events_processed"] > 0
    assert doc["handled_events_per_s"] > 0
    assert doc["stale_events"] >= 0
    assert doc["handled_events"] <= doc["events_processed"]


# The scheduler metrics a trace carries exactly (counts and fractions);
# latencies differ by the trace's microsecond timestamps.
ROUND_TRIP_METRICS = (
    "context_switches",
    "migrations",
    "migrations_smt",
    "migrations_llc",
    "migrations_package",
    "migrations_node",
    "wakeups",
    "migrations_per_wakeup",
    "wake_prev_cpu_pct",
    "wake_smt_sibling_pct",
    "wake_same_llc_pct",
    "wake_other_llc_pct",
    "wake_other_node_pct",
    "wake_on_waker_cpu_pct",
    "place_fallback",
    "newidle_balance_calls",
)


@pytest.mark.parametrize("machine", ["laptop-4c8t", "xeon-2s-20c"])
def test_analyze_of_a_simulated_trace_gives_the_runs_metrics(tmp_path: Path, machine: str) -> None:
    r = schedlab.run(machine, "hackbench:groups=2,loops=30", trace=True)
    trace = tmp_path / "sim.trace"
    trace.write_text(r.trace or "")
    result = runner.invoke(app, ["analyze", str(trace), "--machine", machine, "--json"])
    assert result.exit_code == 0, result.output
    got = {m["name"]: m["value"] for m in json.loads(result.stdout)["metrics"]}
    for name in ROUND_TRIP_METRICS:
        assert got[name] == pytest.approx(r.metrics[name], abs=1e-9), name
    assert r.metrics["wakeups"] > 100
    assert r.metrics["wake_prev_cpu_pct"] < 100


def test_analyze_comm_filter_counts_only_matching_tasks(tmp_path: Path) -> None:
    r = schedlab.run(
        "laptop-4c8t",
        ["hackbench:groups=1,loops=30", "kworkers:period=4ms,runtime=100us"],
        trace=True,
    )
    trace = tmp_path / "sim.trace"
    trace.write_text(r.trace or "")

    def wakeups(*args: str) -> float:
        res = runner.invoke(
            app, ["analyze", str(trace), "--machine", "laptop-4c8t", "--json", *args]
        )
        assert res.exit_code == 0, res.output
        return {m["name"]: m["value"] for m in json.loads(res.stdout)["metrics"]}["wakeups"]

    everything = wakeups()
    bench = wakeups("--comm", "hackbench")
    kworkers = wakeups("--comm", "kworker/*")
    assert everything == bench + kworkers
    assert bench > 0
    assert kworkers > 0
