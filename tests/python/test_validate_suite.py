"""`schedlab validate --suite`: the three topologies in turn, each into its
own directory, calibrated, and one markdown with a summary (validate itself
is replaced: its own tests run it on recorded fixtures)."""

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedlab import _kernel_decisions, _validate, _validate_suite
from schedlab.cli import app

runner = CliRunner()


def _result(case: str, verdicts: list[str]) -> dict[str, Any]:
    # the recordings ranged over 0.9-1.2; the simulation gave 1.1, then 2.0
    rows = [
        {"metric": f"m{i}", "real": 1.0, "real_min": 0.9, "real_max": 1.2, "sim": 1.1 + i,
         "diff": 0.1 + i, "verdict": v}
        for i, v in enumerate(verdicts)
    ]  # fmt: skip
    return {
        "case": case,
        "native": "schedlab-wl x",
        "workload": "x",
        "reps": 1,
        "seeds": 1,
        "kernel": "6.12",
        "policy": "v6.12",
        "machine": "m.toml",
        "calibrated": True,
        "rows": rows,
        "notes": ["a note"],
    }


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def fake(out: Path, **kw: Any) -> list[dict[str, Any]]:
        seen.append({"out": out, **kw})
        if kw["qemu"] is None:
            return [_result("ping-pong", ["pass", "MISS", "not compared (uncalibrated)"])]
        return [_result("hackbench-saturated", ["pass", "pass"]), {"case": "x", "skipped": "why"}]

    monkeypatch.setattr(_validate, "validate", fake)

    def fake_decisions(out: Path, qemu: str, wl_bin: Path, reuse: bool) -> dict[str, Any]:
        seen.append({"decisions": out, "qemu": qemu, "reuse": reuse})
        a = {"rows": 2000, "agree": 1990}
        report = {k: a for k in ("all", "all_busy", "with_idle", "colocated")}
        report |= {f"kernel_chose_{k}": a for k in ("this", "prev", "other")}
        return {"case": "kernel-decisions", "native": "schedlab-wl h", "policy": "v6.12",
                "table": str(out / "decisions.csv"), "decisions": report}  # fmt: skip

    monkeypatch.setattr(_kernel_decisions, "suite_entry", fake_decisions)
    return seen


def test_each_topology_is_validated_in_its_directory_and_calibrated(
    tmp_path: Path, calls: list[dict[str, Any]]
) -> None:
    wl = tmp_path / "wl"
    done: list[int] = []
    sections = _validate_suite.run_suite(
        tmp_path, wl, reps=2, seeds=1, on_section=lambda s: done.append(len(s))
    )
    checks = [c for c in calls if "decisions" in c]
    calls = [c for c in calls if "decisions" not in c]
    assert [c["out"].name for c in calls] == [t.name for t in _validate_suite.SUITE]
    assert [c["qemu"] for c in calls] == [None, *[t.qemu for t in _validate_suite.SUITE[1:]]]
    assert all(c["calibrate"] for c in calls)
    # this host assumes the launcher's count; the guests measure their own
    assert [c["parent_wakee_flips"] for c in calls] == [_validate_suite.HOST_FLIPS, None, None]
    assert [c["wl_bin"] for c in calls] == [None, wl, wl]
    # each guest also checks its wakeup decisions, into its own directory
    assert [c["decisions"] for c in checks] == [
        tmp_path / t.name / "kernel-decisions" for t in _validate_suite.SUITE[1:]
    ]
    assert done == [1, 2, 3]
    assert len(sections) == 3


def test_the_markdown_sums_up_every_topology_then_nests_its_tables(
    tmp_path: Path, calls: list[dict[str, Any]]
) -> None:
    sections = _validate_suite.run_suite(tmp_path, tmp_path / "wl")
    md = _validate_suite.suite_markdown(sections, "Suite")
    assert md.startswith("## Suite\n")
    first = _validate_suite.SUITE[0].title
    assert f"| {first} | 1 of 2 | ping-pong m1 | - |" in md
    assert "| m0 | 1 | 0.9 - 1.2 | 1.1 | 0.1 | pass |" in md
    assert "| 2 of 2 | none; skipped: x | 1,990 of 2,000 (99.5%) |" in md
    assert "\n#### kernel-decisions\n" in md
    assert "| no CPU idle | 2000 | 99.5% |" in md
    assert f"\n### {first}\n" in md
    assert "\n#### ping-pong\n" in md
    assert "\n## " not in md.split("\n", 1)[1]


def test_the_cli_writes_the_markdown_and_refuses_a_topology_of_its_own(
    tmp_path: Path, calls: list[dict[str, Any]]
) -> None:
    wl = tmp_path / "wl"
    wl.write_bytes(b"")
    md = tmp_path / "suite.md"
    args = ["validate", "--suite", "-o", str(tmp_path), "--wl-bin", str(wl)]
    res = runner.invoke(app, [*args, "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    assert "1 of 2 rows pass; misses: ping-pong m1" in res.output
    assert "2 of 2 rows pass; the model decides 1990 of 2000 wakeups as the kernel did" in res.output

    assert "Validation suite: this VM and two guests" in md.read_text()
    for extra in (["--qemu", "sockets=1"], ["--no-calibrate"], ["-m", str(wl)]):
        res = runner.invoke(app, [*args, *extra])
        assert res.exit_code == 2, res.output
        assert "--suite" in res.output
    res = runner.invoke(app, ["validate", "--suite", "-o", str(tmp_path)])
    assert res.exit_code == 2
    assert "--wl-bin" in res.output


def test_a_miss_within_the_recordings_range_is_starred() -> None:
    row = {"metric": "m", "real": 1.0, "real_min": 0.9, "real_max": 1.2, "sim": 1.15,
           "diff": 0.15, "verdict": "MISS"}  # fmt: skip
    assert _validate_suite.tally([{"case": "c", "rows": [row]}]) == (0, 1, ["c m*"])
    assert _validate_suite.tally([{"case": "c", "rows": [dict(row, sim=1.3)]}])[2] == ["c m"]
    # a stored result from before the ranges were kept: no star
    old = {k: v for k, v in row.items() if not k.startswith("real_")}
    assert _validate_suite.tally([{"case": "c", "rows": [old]}])[2] == ["c m"]


def test_the_suite_warns_when_the_host_is_busy(
    tmp_path: Path, calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    wl = tmp_path / "wl"
    wl.write_bytes(b"")
    args = ["validate", "--suite", "-o", str(tmp_path), "--wl-bin", str(wl)]
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.4, 3.0, 2.0))
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "this host is busy (load average 3.4 on 2 CPUs)" in res.stderr
    assert "busy" not in runner.invoke(app, [*args, "--reuse"]).stderr  # nothing recorded
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.3, 0.2))
    assert "busy" not in runner.invoke(app, args).stderr

