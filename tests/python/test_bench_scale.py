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
        # none (null in the JSON, NaN in the table) when the two wall times
        # were too close to tell, as on a loaded machine.
        for key in ("run_handled_events_per_s", "run_sim_per_wall"):
            assert _none_or_positive(r[key]), r
    # Whether a size's two wall times are far enough apart for a figure
    # depends on the machine's load (three test runs at once on two cores
    # left even the 1024-CPU row without one): not asserted, as no timing is
    # in the default suite; the figures are the bench's, not the tests'.


def _none_or_positive(v: float | None) -> bool:
    return v is None or math.isnan(v) or v > 0


def test_scale_machines_have_the_stated_shape() -> None:
    text = _bench_scale.machine_toml(1024)
    assert "packages = 16" in text
    assert "cores_per_cluster = 32" in text
    assert _bench_scale.workload(1024) == "schbench:runtime=200ms,message_threads=16"
    assert _bench_scale.workload(8) == "schbench:runtime=2000ms,message_threads=1"
    assert _bench_scale.workload(1024, 2) == "schbench:runtime=400ms,message_threads=16"
