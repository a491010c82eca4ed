"""`schedlab report`: the page names every figure it embeds, and every PNG
decodes."""

import re
from pathlib import Path

import matplotlib.image as mpimg
from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()


def _compare(tmp_path: Path, fmt: str) -> Path:
    out = tmp_path / f"cmp.{fmt}"
    args = [
        "compare",
        "-m",
        "laptop-4c8t",
        "-w",
        "hackbench:groups=1,loops=20",
        "-p",
        "eevdf",
        "-p",
        "eevdf-WA_IDLE",
    ]
    args += ["--runs", "2", "--jobs", "1"]
    if fmt == "json":
        res = runner.invoke(app, [*args, "--json"])
        assert res.exit_code == 0, res.output
        out.write_text(res.stdout)
    else:
        res = runner.invoke(app, [*args, "--csv", str(out)])
        assert res.exit_code == 0, res.output
    return out


def _check(out: Path) -> list[str]:
    page = (out / "index.html").read_text()
    embedded = re.findall(r'<img src="([^"]+)"', page)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert sorted(embedded) == pngs
    assert pngs
    for name in pngs:
        img = mpimg.imread(out / name)
        assert img.shape[0] > 100 and img.shape[1] > 100, name
    md = (out / "report.md").read_text()
    for name in pngs:
        assert f"`{name}`" in md
    return pngs


def test_report_from_compare_json(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    trace = tmp_path / "run.txt"
    res = runner.invoke(
        app, ["run", "-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=5", "--trace", str(trace)]
    )
    assert res.exit_code == 0, res.output
    cmp = _compare(tmp_path, "json")
    res = runner.invoke(app, ["report", str(cmp), "-o", str(out), "--trace", str(trace)])
    assert res.exit_code == 0, res.output
    pngs = _check(out)
    assert {
        "metric-completion_time_s.png",
        "wakeup-latency.png",
        "placement.png",
        "migrations.png",
        "timeline-0.png",
    } <= set(pngs)
    page = (out / "index.html").read_text()
    assert "eevdf-WA_IDLE" in page
    assert "completion_time_s" in page


def test_report_from_compare_csv_with_chosen_metrics(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    res = runner.invoke(
        app, ["report", str(_compare(tmp_path, "csv")), "-o", str(out), "--metric", "migrations"]
    )
    assert res.exit_code == 0, res.output
    pngs = _check(out)
    assert [p for p in pngs if p.startswith("metric-")] == ["metric-migrations.png"]


def test_report_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = runner.invoke(app, ["report", str(bad)])
    assert res.exit_code == 2
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1
    res = runner.invoke(app, ["report", str(_compare(tmp_path, "json")), "--metric", "nope"])
    assert res.exit_code == 2
    assert "nope" in res.output
    res = runner.invoke(app, ["report", str(bad), "--trace", str(tmp_path / "none.txt")])
    assert res.exit_code == 2
    assert "none.txt" in res.output


def test_report_from_a_sweep_dataset(tmp_path: Path) -> None:
    from schedlab import sweep

    spec = tmp_path / "s.toml"
    spec.write_text(
        'machines = ["laptop-4c8t"]\npolicies = ["eevdf", "eevdf-WA_IDLE"]\nseeds = [0, 1]\n'
        '[[workloads]]\nparts = ["hackbench:groups=1,loops=10"]\n'
    )
    data = tmp_path / "data"
    assert sweep.run_sweep(spec, data, jobs=1) == 4
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(data), "-o", str(out)])
    assert res.exit_code == 0, res.output
    pngs = _check(out)
    assert "metric-completion_time_s.png" in pngs
    assert "eevdf-WA_IDLE" in (out / "index.html").read_text()
