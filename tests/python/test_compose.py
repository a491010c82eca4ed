"""Composed workloads (-w repeated, lists in the API and in TOML) and the noise families."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import schedlab
from schedlab.cli import app

runner = CliRunner()


def _error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    assert lines[0].startswith("error: ")
    return lines[0]


def test_run_hackbench_with_kworkers_on_a_laptop() -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "-w",
            "hackbench:groups=1",
            "-w",
            "kworkers:period=4ms",
            "-m",
            "laptop-4c8t",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["workloads"][0].startswith("hackbench:groups=1")
    assert doc["workloads"][1].startswith("kworkers:period=4ms")
    assert doc["workload"] == " + ".join(doc["workloads"])
    assert doc["metrics"]["completion_time_s"] > 0
    assert doc["metrics"]["rt_pct"] == 0
    # Noise adds no metric of its own (no wN. prefix for it).
    assert not any(name.startswith("w") and name[1].isdigit() for name in doc["metrics"])


def test_compare_with_repeated_workload(tiny_machine: Path) -> None:
    result = runner.invoke(
        app,
        [
            "compare",
            "-m",
            str(tiny_machine),
            "-w",
            "hackbench:groups=1,fds=2,loops=10",
            "-w",
            "rt-periodic:count=1,period=10ms,runtime=1ms",
            "-p",
            "eevdf",
            "-p",
            "eevdf-WA_IDLE",
            "-n",
            "2",
            "-j",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert " + rt-periodic:count=1" in doc["workload"]
    assert all(row["rt_pct"] > 0 for row in doc["runs"])


def test_bad_priority_exits_2_with_one_line(tiny_machine: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "-m",
            str(tiny_machine),
            "-w",
            "hackbench:groups=1",
            "-w",
            "rt-periodic:priority=0",
        ],
    )
    assert result.exit_code == 2
    line = _error_line(result.stderr)
    assert "workload.priority" in line
    assert "1 to 99" in line


def test_api_takes_a_list_and_reports_a_second_benchmark_under_its_prefix(
    tiny_machine: Path,
) -> None:
    r = schedlab.run(
        tiny_machine,
        [
            "sieve:threads=2,work=5ms",
            "rt-periodic:count=2,period=10ms,runtime=2ms",
            "sieve:threads=1",
        ],
    )
    assert len(r.workloads) == 3
    assert r.metrics["w3.completion_time_s"] > 0
    assert r.units["w3.completion_time_s"] == "s"
    assert r.metrics["rt_pct"] > 0
    # A single workload still works, with its one name in `workloads`.
    single = schedlab.run(tiny_machine, "sieve:threads=1")
    assert single.workloads == [single.workload]


def test_workload_toml_with_a_list(tmp_path: Path, tiny_machine: Path) -> None:
    f = tmp_path / "mix.toml"
    f.write_text(
        '[[workload]]\nfamily = "sieve"\nthreads = 2\n\n'
        '[[workload]]\nfamily = "irq"\npreset = "pingflood"\ncpus = "0-1"\n'
    )
    r = schedlab.run(tiny_machine, f)
    assert r.workloads[1].startswith("irq:preset=pingflood")


def test_only_noise_exits_2(tiny_machine: Path) -> None:
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", "kworkers"])
    assert result.exit_code == 2
    assert "only noise" in _error_line(result.stderr)


def test_workload_list_shows_the_noise_families_and_the_policy_keys() -> None:
    result = runner.invoke(app, ["workload", "list", "--json"])
    assert result.exit_code == 0, result.output
    families = {f["name"]: f for f in json.loads(result.stdout)}
    for name in ("rt-periodic", "kworkers", "irq"):
        assert name in families
    rt_keys = {p["name"]: p for p in families["rt-periodic"]["params"]}
    assert rt_keys["policy"]["default"] == "fifo"
    assert rt_keys["priority"]["default"] == "50"
    assert "policy" not in {p["name"] for p in families["irq"]["params"]}
