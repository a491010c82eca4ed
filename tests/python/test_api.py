"""Python API pieces that need no engine: resolving specs, the result type,
the exception hierarchy."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import schedlab
from schedlab import SchedlabError, SimulationError, SpecError, UnknownNameError
from schedlab._resolve import list_machines, preset_names, resolve_machine, resolve_workload
from schedlab._result import RunResult

# The attributes of the native `RunOutput` (a stand-in: no engine needed).
NATIVE_RESULT = SimpleNamespace(
    machine="tiny-2c4t",
    workload="hackbench:groups=1,fds=2,loops=10",
    workloads=["hackbench:groups=1,fds=2,loops=10"],
    policy="eevdf",
    seed=3,
    primary="completion_time_s",
    metrics=[
        SimpleNamespace(name="completion_time_s", unit="s", value=0.25, better="lower"),
        SimpleNamespace(name="requests_per_s", unit="1/s", value=4.0, better="higher"),
        SimpleNamespace(name="migrations", unit="count", value=7.0, better="neither"),
    ],
    events_processed=1234,
    events_handled=1200,
    sim_time_ns=250_000_000,
    trace="trace text",
)


def test_exception_hierarchy_matches_core_variants() -> None:
    # One Python class per SchedlabError variant (Spec, UnknownName, Runtime).
    for cls in (SpecError, UnknownNameError, SimulationError):
        assert issubclass(cls, SchedlabError)
        assert cls.__module__ == "schedlab"
    assert issubclass(SchedlabError, Exception)
    assert set(schedlab.__all__) >= {
        "SchedlabError",
        "SpecError",
        "UnknownNameError",
        "SimulationError",
    }


def test_run_result_from_native() -> None:
    r = RunResult.from_native(NATIVE_RESULT)  # type: ignore[arg-type]
    assert r.metrics == {"completion_time_s": 0.25, "requests_per_s": 4.0, "migrations": 7.0}
    assert r.better == {
        "completion_time_s": "lower",
        "requests_per_s": "higher",
        "migrations": "neither",
    }
    assert r.units["requests_per_s"] == "1/s"
    assert r.trace == "trace text"
    d = r.to_dict()
    assert "trace" not in d
    assert d["seed"] == 3
    df = r.to_pandas()
    assert len(df) == 1
    assert list(df.columns) == [
        "machine",
        "workload",
        "policy",
        "seed",
        "completion_time_s",
        "requests_per_s",
        "migrations",
    ]
    assert df.attrs["primary"] == "completion_time_s"


def test_resolve_machine_file_dict_and_errors(tiny_machine: Path, fixtures_dir: Path) -> None:
    src = resolve_machine(str(tiny_machine))
    assert (src.format, src.origin) == ("toml", str(tiny_machine))
    assert resolve_machine(tiny_machine).text == src.text
    d = resolve_machine({"machine": {"name": "x"}})
    assert d.format == "json"
    assert json.loads(d.text) == {"machine": {"name": "x"}}
    with pytest.raises(SpecError, match=r"malformed\.toml"):
        resolve_machine(str(fixtures_dir / "malformed.toml"))
    with pytest.raises(UnknownNameError, match="no-such-box"):
        resolve_machine("no-such-box")


def test_resolve_workload_forms(fixtures_dir: Path) -> None:
    assert resolve_workload("hackbench:groups=2").format == "spec"
    f = resolve_workload(str(fixtures_dir / "hackbench-small.toml"))
    assert f.format == "toml"
    assert resolve_workload({"family": "hackbench"}).format == "json"


def test_presets_listed_with_descriptions() -> None:
    presets = list_machines()
    assert [p.name for p in presets] == preset_names()
    for p in presets:
        assert p.description
        assert resolve_machine(p.name).origin == f"preset {p.name}"


def test_run_with_unknown_machine_lists_valid_ones(small_workload: str) -> None:
    with pytest.raises(UnknownNameError) as e:
        schedlab.run(machine="no-such-box", workload=small_workload)
    for name in preset_names():
        assert name in str(e.value)


@pytest.mark.parametrize("seed", [-1, 2**64, "7"])
def test_out_of_range_seed_is_a_schedlab_error(
    tiny_machine: Path, small_workload: str, seed: object
) -> None:
    with pytest.raises(schedlab.SpecError, match="seed"):
        schedlab.run(tiny_machine, small_workload, seed=seed)  # type: ignore[arg-type]
    with pytest.raises(schedlab.SchedlabError, match="seed"):
        schedlab.compare(tiny_machine, small_workload, ["eevdf"], runs=2, seed=2**64 - 1, jobs=1)
