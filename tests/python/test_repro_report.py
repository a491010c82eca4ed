"""`schedlab reproduce --report DIR` (and --all, several cases): the files,
figures and tables it writes, checked against the verdicts its JSON gives.

The cases run at the smallest scale: the checks are on what the report
shows of the verdicts, not on the verdicts themselves (test_reproduce.py).
Three cases cover what a report can hold: published figures with several
policies on an SMT machine (roy-saturation), structural rows
(joel-ping-hackbench) and an observation on a machine with clusters
(cluster-first-jacobsville).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest
from typer.testing import CliRunner

from schedlab import _native, _repro_all, _repro_report, reproduce
from schedlab._repro_figures import _tree, parse_cpulist
from schedlab._resolve import resolve_machine
from schedlab.cli import app

runner = CliRunner()

CASES = ("roy-saturation", "joel-ping-hackbench", "cluster-first-jacobsville")
SMALL = ["--scale", "0.01", "-j", "1"]


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _html_tables(page: str, header: list[str]) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return [t[1:] for t in parser.tables if t and t[0] == header]


def _md_tables(md: str, header: list[str]) -> list[list[list[str]]]:
    """The markdown tables whose header row is ``header``."""
    head = "| " + " | ".join(header) + " |"
    tables = []
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line == head:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("| "):
                    break
                rows.append([c.strip() for c in row[2:-2].split(" | ")])
            tables.append(rows)
    return tables


def _expected_verdicts(case: dict[str, Any]) -> list[list[str]]:
    """row, metric, policy, verdict of each JSON result, as the CLI words it."""
    out = []
    for r in case["results"]:
        verdict = r["verdict"]
        if r["magnitude_within_2x"] is not None:
            verdict += ", magnitude within 2x" if r["magnitude_within_2x"] else ", magnitude off"
        out.append([r["row"], r["metric"], r["policy"], verdict])
    return out


def _report(out: Path, *args: str) -> dict[str, Any]:
    res = runner.invoke(app, ["reproduce", *args, *SMALL, "--report", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_report_shows_the_json_verdicts_with_figures_and_tables(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    doc = _report(out, *CASES)
    assert doc["complete"] is True
    assert [c["case"] for c in doc["cases"]] == list(CASES)
    # results.json is what --json printed.
    assert json.loads((out / "results.json").read_text()) == doc

    md = (out / "report.md").read_text()
    page = (out / "index.html").read_text()
    header = _repro_report.VERDICT_HEADER
    md_verdicts, html_verdicts = _md_tables(md, header), _html_tables(page, header)
    assert len(md_verdicts) == len(html_verdicts) == len(CASES)
    for case, md_rows, html_rows in zip(doc["cases"], md_verdicts, html_verdicts, strict=True):
        expected = _expected_verdicts(case)
        assert expected, case["case"]
        assert [[r[0], r[1], r[2], r[7]] for r in html_rows] == expected
        # Markdown escapes nothing in these labels; cells are the same text.
        assert [[r[0], r[1], r[2], r[7]] for r in md_rows] == expected
    assert "structural (cannot move: not counted)" in page
    assert "no published figure" in page

    # Per case: the verdict figure, placement and migration figures, and the
    # machine, each as PNG and SVG; the page shows the SVG, report.md the PNG.
    for case in doc["cases"]:
        name, machine = case["case"], case["machine"]
        for stem in (f"{name}-verdicts", f"{name}-placement", f"machine-{machine}"):
            for ext in ("png", "svg"):
                assert (out / f"{stem}.{ext}").stat().st_size > 1000, stem
            assert f'<img src="{stem}.svg"' in page
            assert f"`{stem}.png`" in md
    for png in out.glob("*.png"):
        img = mpimg.imread(png)
        assert min(img.shape[:2]) > 100, png.name
    embedded = set(re.findall(r'<img src="([^"]+)"', page))
    assert embedded == {p.name for p in out.glob("*.svg")}

    # Placement per policy: one column per policy, the paths and distances.
    placement = _html_tables(
        page, ["per run (mean over rows and seeds)", *reproduce.CASES[CASES[0]].policies]
    )
    assert placement, "no placement table for roy-saturation"
    labels = [r[0] for r in placement[0]]
    assert labels[0] == "wakeups"
    assert any(label.startswith("placed by ") for label in labels)
    assert "migrations" in labels
    assert "migrations: smt" in labels
    # Placement shares of each policy add up to 100%.
    for col in range(1, len(placement[0][0])):
        shares = [float(r[col].rstrip("%")) for r in placement[0] if r[0].startswith("placed by")]
        assert sum(shares) == pytest.approx(100, abs=0.2)

    # No sensitivity asked for: the section says how to get one.
    assert md.count("Not run: give --sensitivity") == len(CASES)

    # The summary counts the verdicts of each case.
    summary = _html_tables(page, ["case", "idea", "machine", "rows", "reproduced",
                                  "not reproduced", "unresolved", "structural", "observed",
                                  "wall s"])  # fmt: skip
    assert [r[0] for r in summary[0]] == list(CASES)
    joel = summary[0][1]
    assert joel[7] == str(len(reproduce.CASES["joel-ping-hackbench"].rows))


def test_sensitivity_table_comes_from_a_run_or_from_json(tmp_path: Path) -> None:
    case = "joel-ping-hackbench"
    ran = _report(tmp_path / "ran", case, "--sensitivity")
    table = ran["cases"][0]["sensitivity"]
    assert table["source"] == "run with this report"
    assert table["columns"]
    assert len(table["results"]) == len(reproduce.CASES[case].rows)
    md = (tmp_path / "ran" / "report.md").read_text()
    rows = _md_tables(md, _repro_report.SENSITIVITY_HEADER)
    assert len(rows) == 1
    assert [r[:4] for r in rows[0]] == [
        [r["row"], r["metric"], r["policy"], r["verdict"]] for r in table["results"]
    ]

    # What 'reproduce CASE --sensitivity --json' writes, read back.
    res = runner.invoke(app, ["reproduce", case, "--sensitivity", "--json", *SMALL])
    assert res.exit_code == 0, res.output
    saved = tmp_path / "sens.json"
    saved.write_text(res.stdout)
    read = _report(tmp_path / "read", case, "--sensitivity-from", str(saved))
    got = read["cases"][0]["sensitivity"]
    assert got["source"] == str(saved)
    assert got["results"] == json.loads(res.stdout)["results"]
    # A report's results.json serves as well (a directory: its *.json).
    again = _report(tmp_path / "again", case, "--sensitivity-from", str(tmp_path / "ran"))
    assert again["cases"][0]["sensitivity"]["results"] == table["results"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--all", "roy-saturation"], "not both"),
        (["roy-saturation", "--sensitivity-from", "x.json"], "add --report"),
        (["nope", "--report", "r"], "unknown case 'nope'"),
    ],
)
def test_report_usage_errors_exit_2(args: list[str], message: str) -> None:
    res = runner.invoke(app, ["reproduce", *args])
    assert res.exit_code == 2
    assert message in res.output


def test_a_file_that_is_not_a_sensitivity_result_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": []}')
    res = runner.invoke(
        app,
        [
            "reproduce",
            "roy-saturation",
            "--report",
            str(tmp_path / "r"),
            "--sensitivity-from",
            str(bad),
        ],
    )
    assert res.exit_code == 2
    assert "expected what 'schedlab reproduce CASE --sensitivity --json' writes" in res.output
    assert not (tmp_path / "r").exists(), "the file is read before anything runs"


def test_a_stop_keeps_the_finished_cases_and_rows(tmp_path: Path) -> None:
    cases = [reproduce.CASES[n] for n in ("joel-ping-hackbench", "roy-saturation")]
    first = len(cases[0].rows) * len(cases[0].policies) * 3
    calls = 0

    def stop() -> bool:
        # Asked after each run (jobs=1): the whole first case, then one row
        # (5 policies x 3 seeds) of the second.
        nonlocal calls
        calls += 1
        return calls >= first + 15

    with pytest.raises(_repro_all.AllInterrupted) as info:
        _repro_all.run_all(cases, runs=3, scale=0.01, jobs=1, stop=stop)
    done = info.value.done
    assert [cr.case.name for cr in done] == [c.name for c in cases]
    assert done[0].complete
    assert done[1].rows_done == 1
    assert not done[1].complete
    assert len(done[1].runs) == 15
    _repro_report.write_report(done, tmp_path, {"scale": 0.01, "stopped": "stopped"})
    md = (tmp_path / "report.md").read_text()
    assert "INCOMPLETE: 1 of 3 rows finished before the stop" in md


@pytest.mark.parametrize("machine", ["kunpeng920", "threadripper-3970x", "pixel2"])
def test_the_machine_drawn_holds_every_cpu_core_and_cluster(machine: str) -> None:
    src = resolve_machine(machine)
    doc = _native.topo_doc(src.text, src.format, src.origin)
    m = doc["machine"]
    found: dict[str, list[Any]] = {}

    def walk(box: Any) -> None:
        found.setdefault(box.kind, []).append(box)
        for child in box.children:
            walk(child)

    walk(_tree(doc))
    assert sorted(b.cpu for b in found["cpu"]) == list(range(m["nr_cpus"]))
    assert len(found["package"]) == m["nr_packages"]
    assert len(found["llc"]) == m["nr_llcs"]
    assert len(found.get("cluster", [])) == (m["nr_clusters"] if m["has_clusters"] else 0)
    smt = m["nr_cpus"] > m["nr_cores"]
    assert len(found.get("core", [])) == (m["nr_cores"] if smt else 0)
    # Each LLC box holds the CPUs the core put in that LLC.
    for entry in doc["cpus"]:
        llc = next(b for b in found["llc"] if b.label == f"LLC {entry['llc']}")
        cpus: list[int] = []

        def leaves(box: Any, into: list[int] = cpus) -> None:
            if box.kind == "cpu":
                into.append(box.cpu)
            for child in box.children:
                leaves(child)

        leaves(llc)
        assert sorted(cpus) == parse_cpulist(entry["cpus"])


@pytest.mark.slow
def test_sigint_writes_the_report_of_the_finished_cases(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "rep"
    # At scale 0.3 roy-saturation takes about a second, ni-retry-schbench
    # (second) tens of seconds: the signal comes during the second case.
    args = ["reproduce", "--all", "--scale", "0.3", "-j", "1", "--report", str(out), "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedlab", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(10)
    assert proc.poll() is None, "the suite finished before the signal"
    proc.send_signal(signal.SIGINT)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "reproduce stopped" in lines[0]
    assert f"report in {out}" in lines[0]
    doc = json.loads(stdout)
    assert doc["complete"] is False
    assert doc["cases"][0]["complete"] is True
    assert json.loads((out / "results.json").read_text()) == doc
    names = [c["case"] for c in doc["cases"]]
    assert 1 <= len(names) < len(reproduce.CASES)
    md = (out / "report.md").read_text()
    for name in names:
        assert f"## {name} (idea" in md
