"""Spec errors name the user's file and key: a required machine key left out
(it used to become a 2-CPU machine) and a workload file's bad value."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app

runner = CliRunner()


def _one_error_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    return lines[0]


def test_missing_cores_per_cluster_exits_2_naming_file_and_key(
    tmp_path: Path, tiny_machine: Path, small_workload: str
) -> None:
    text = tiny_machine.read_text()
    assert "cores_per_cluster" in text
    bad = tmp_path / "no-cores.toml"
    bad.write_text("\n".join(ln for ln in text.splitlines() if "cores_per_cluster" not in ln))
    result = runner.invoke(app, ["run", "-m", str(bad), "-w", small_workload])
    assert result.exit_code == 2
    line = _one_error_line(result.output)
    assert str(bad) in line
    assert "topology.cores_per_cluster" in line
    assert "required" in line


def test_missing_topology_table_is_an_error(tmp_path: Path, small_workload: str) -> None:
    bad = tmp_path / "no-topology.toml"
    bad.write_text(
        '[machine]\nname = "m"\n[[core_type]]\nname = "c"\ncores = "all"\n'
        "capacity = 1024\nnominal_freq_mhz = 1000\n"
    )
    with pytest.raises(schedlab.SpecError, match=r"no-topology\.toml: topology"):
        schedlab.run(str(bad), small_workload)


def test_every_preset_still_loads() -> None:
    presets = schedlab.list_machines()
    assert presets
    for preset in presets:
        result = runner.invoke(app, ["topo", "show", preset.name])
        assert result.exit_code == 0, (preset.name, result.output)


def test_workload_file_errors_name_its_path(tmp_path: Path, tiny_machine: Path) -> None:
    bad = tmp_path / "my-workload.toml"
    bad.write_text('family = "hackbench"\ngroups = 0\n')
    result = runner.invoke(app, ["run", "-m", str(tiny_machine), "-w", str(bad)])
    assert result.exit_code == 2
    line = _one_error_line(result.output)
    assert f"{bad}: " in line
    assert "groups" in line
    assert "workload file" not in line
    # A later file of a composed run named its path already; the first now does too.
    with pytest.raises(schedlab.SpecError, match=r"my-workload\.toml: "):
        schedlab.run(str(tiny_machine), [str(bad), "kworkers"])
