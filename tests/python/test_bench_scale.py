"""`schedlab bench --scale`: one row per machine size, each with its CPUs and
handled events per second, on machines built for the bench."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from schedlab import _bench_scale
from schedlab.cli import app

runner = CliRunner()


def test_scale_reports_each_size() -> None:
    result = runner.invoke(app, ["bench", "--scale", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["cpus"] for r in rows] == [8, 64, 192, 512, 1024]
    for r in rows:
        assert r["handled_events_per_s"] > 0
        assert r["handled_events"] > 10_000, r
        assert r["machine"] == f"scale-{r['cpus']}"
        # The run alone (twice as long, less this run): a positive rate, or
        # none (NaN) when the two wall times were too close to tell.
        assert math.isnan(r["run_handled_events_per_s"]) or r["run_handled_events_per_s"] > 0
        assert math.isnan(r["run_sim_per_wall"]) or r["run_sim_per_wall"] > 0
    # The large machines' runs last long enough for a figure.
    assert not math.isnan(rows[-1]["run_sim_per_wall"]), rows[-1]


def test_scale_machines_have_the_stated_shape() -> None:
    text = _bench_scale.machine_toml(1024)
    assert "packages = 16" in text
    assert "cores_per_cluster = 32" in text
    assert _bench_scale.workload(1024) == "schbench:runtime=200ms,message_threads=16"
    assert _bench_scale.workload(8) == "schbench:runtime=2000ms,message_threads=1"
    assert _bench_scale.workload(1024, 2) == "schbench:runtime=400ms,message_threads=16"
