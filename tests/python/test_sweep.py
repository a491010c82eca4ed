"""Sweeps: spec expansion, the Parquet dataset, resume after SIGKILL, Dask."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import SchedlabError, SpecError
from schedlab._sweep_spec import expand, load_spec
from schedlab.sweep import SweepInterrupted, load, run_sweep

TINY_MACHINE = Path(__file__).parent / "fixtures" / "tiny-2c4t.toml"


SPEC = """\
machines = ["{machine}"]
policies = ["eevdf", "eevdf-WA_IDLE"]
seeds = {{ start = 3, count = 2 }}

[[workloads]]
parts = ["hackbench:fds=2,loops=10", "rt-periodic"]
[workloads.grid]
groups = [1, 2]
"1.count" = [1, 2]
"""

#: Runs long enough (~0.1 s each) that a kill lands mid-sweep.
SLOW_SPEC = """\
machines = ["{machine}"]
policies = ["eevdf", "eevdf-WA_IDLE"]
seeds = [0, 1]

[[workloads]]
parts = ["hackbench:groups=2,fds=4"]
[workloads.grid]
loops = [5000, 6000, 7000, 8000]
"""


def _spec(tmp_path: Path, text: str = SPEC, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text.format(machine=TINY_MACHINE), encoding="utf-8")
    return path


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("run-*.parquet"))}


def test_expansion_is_the_product_in_nesting_order(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert len(spec.runs) == 1 * 4 * 2 * 2
    assert spec.param_columns == ("groups", "1.count")
    first = spec.runs[0]
    assert first.workload == "hackbench:fds=2,loops=10,groups=1 + rt-periodic:count=1"
    assert [w.text for w in first.workload_srcs] == [
        "hackbench:fds=2,loops=10,groups=1",
        "rt-periodic:count=1",
    ]
    assert dict(first.params) == {"groups": 1, "1.count": 1}
    # policies inside the grid, seeds innermost
    assert [(r.policy, r.seed) for r in spec.runs[:4]] == [
        ("eevdf", 3),
        ("eevdf", 4),
        ("eevdf-WA_IDLE", 3),
        ("eevdf-WA_IDLE", 4),
    ]
    assert dict(spec.runs[4].params) == {"groups": 1, "1.count": 2}
    assert [r.index for r in spec.runs] == list(range(16))
    assert len({r.run_id for r in spec.runs}) == 16


def test_run_ids_depend_on_what_is_simulated_not_on_file_names(tmp_path: Path) -> None:
    a = load_spec(_spec(tmp_path))
    b = load_spec(_spec(tmp_path, name="other.toml"))
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs]
    c = load_spec(_spec(tmp_path, SPEC.replace("start = 3", "start = 4")))
    assert c.runs[0].run_id == a.runs[1].run_id  # seed 4 is the same run either way
    assert c.runs[0].run_id != a.runs[0].run_id


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('machines = ["x"]', "policies"),
        (SPEC.replace("[[workloads]]", "[[wl]]").replace("[workloads.grid]", "[wl.grid]"), "wl"),
        (SPEC.replace("policies", "policy"), "policy"),
        (SPEC.replace("count = 2 }", "count = 0 }"), "seeds"),
        (SPEC.replace('"1.count"', '"7.count"'), "workloads[0].grid.7.count"),
        (SPEC.replace("groups = [1, 2]", "loops = [1, 2]"), "workloads[0].grid.loops"),
        (SPEC.replace("groups = [1, 2]", "groups = []"), "workloads[0].grid.groups"),
        (SPEC.replace('["{machine}"]', '["nope-machine"]'), "machines"),
        (SPEC + "extra = 1\n", "extra"),
        (SPEC.replace("groups = [1, 2]", 'groups = [1, "2"]'), "grid key 'groups' mixes"),
        ("machines = [", "invalid TOML"),
    ],
)
def test_bad_spec_names_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = _spec(tmp_path, text)
    with pytest.raises(SchedlabError, match=rf"^{re.escape(str(path))}: .*{re.escape(key)}"):
        load_spec(path)
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab", "sweep", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {path}: ")
    assert key in lines[0]


def test_dataset_has_one_row_per_run_with_spec_and_metric_columns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_sweep(_spec(tmp_path), out, jobs=1) == 16
    df = load(out)
    assert len(df) == 16
    assert df["run_id"].is_unique
    assert list(df["index"]) == list(range(16))
    for col in ("machine", "workload", "policy", "seed", "groups", "1.count"):
        assert col in df.columns
    assert df["seed"].dtype == "uint64"
    assert df.attrs["primary"] == "completion_time_s"
    assert df.attrs["units"]["completion_time_s"] == "s"
    assert df.attrs["better"]["completion_time_s"] == "lower"
    assert set(df.attrs["units"]) <= set(df.columns)
    # a row is the run: the same values as schedlab.run of that spec
    import schedlab

    r = schedlab.run(
        TINY_MACHINE,
        ["hackbench:fds=2,loops=10,groups=2", "rt-periodic:count=2"],
        "eevdf-WA_IDLE",
        seed=4,
    )
    row = df[
        (df["groups"] == 2)
        & (df["1.count"] == 2)
        & (df["policy"] == "eevdf-WA_IDLE")
        & (df["seed"] == 4)
    ]
    assert len(row) == 1
    for name, value in r.metrics.items():
        assert row[name].iloc[0] == pytest.approx(value, nan_ok=True)


def test_a_full_directory_is_refused_without_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(_spec(tmp_path), out, jobs=1)
    with pytest.raises(SpecError, match="--resume"):
        run_sweep(_spec(tmp_path), out, jobs=1)
    assert run_sweep(_spec(tmp_path), out, jobs=1, resume=True) == 0


def test_pool_and_serial_give_identical_files_and_temp_files_are_ignored(tmp_path: Path) -> None:
    run_sweep(_spec(tmp_path), tmp_path / "a", jobs=1)
    run_sweep(_spec(tmp_path), tmp_path / "b", jobs=2)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    # what a killed writer leaves: a half-written temporary file
    (tmp_path / "b" / ".tmp-0123456789abcdef-1.parquet").write_bytes(b"PAR1 half")
    pd.testing.assert_frame_equal(load(tmp_path / "a"), load(tmp_path / "b"))


def test_stop_keeps_finished_runs_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done: list[int] = []
    with pytest.raises(SweepInterrupted) as info:
        run_sweep(
            _spec(tmp_path),
            out,
            jobs=1,
            progress=lambda d, _t: done.append(d),
            stop=lambda: len(done) > 5,
        )
    assert info.value.done == 5
    assert len(_files(out)) == 5
    assert run_sweep(_spec(tmp_path), out, jobs=1, resume=True) == 11
    run_sweep(_spec(tmp_path), tmp_path / "ref", jobs=1)
    assert _files(out) == _files(tmp_path / "ref")


def test_dask_local_cluster_gives_the_same_rows_as_the_pool(tmp_path: Path) -> None:
    import distributed  # in the test extra, so CI runs this test

    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        written = run_sweep(_spec(tmp_path), tmp_path / "dask", dask=cluster.scheduler_address)
    assert written == 16
    run_sweep(_spec(tmp_path), tmp_path / "pool", jobs=2)
    assert _files(tmp_path / "dask") == _files(tmp_path / "pool")
    pd.testing.assert_frame_equal(load(tmp_path / "dask"), load(tmp_path / "pool"))


def test_unreachable_dask_scheduler_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="--dask"):
        run_sweep(
            _spec(tmp_path), tmp_path / "x", dask="tcp://127.0.0.1:9", dask_connect_timeout_s=1
        )


def _sweep_proc(spec: Path, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    # Output to files, not pipes: after a SIGKILL the pool's workers would
    # hold a pipe open until they notice the sweep is gone.
    log = out.parent / "sweep.err"
    with open(log, "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "schedlab", "sweep", str(spec), "--out", str(out), *extra],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def _descendants(pid: int) -> set[int]:
    """Processes below ``pid`` (its pool's forkserver and workers), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait_for_rows(proc: subprocess.Popen[bytes], out: Path, n: int) -> None:
    deadline = time.monotonic() + 60
    while len(list(out.glob("run-*.parquet"))) < n:
        assert proc.poll() is None, "the sweep ended before the kill"
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigkill_then_resume_equals_an_uninterrupted_sweep(tmp_path: Path, jobs: str) -> None:
    spec = _spec(tmp_path, SLOW_SPEC)
    out = tmp_path / "killed"
    proc = _sweep_proc(spec, out, "--jobs", jobs)
    _wait_for_rows(proc, out, 2)
    below = _descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # the pool's processes notice the sweep is gone and exit (see _worker_init)
    deadline = time.monotonic() + 10
    while _alive(below) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(below), "processes of the killed sweep are left running"
    kept = _files(out)
    assert 2 <= len(kept) < 16, "the kill must land mid-sweep"
    resumed = subprocess.run(
        [sys.executable, "-m", "schedlab", "sweep", str(spec), "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{16 - len(kept)} runs written" in resumed.stdout
    run_sweep(spec, tmp_path / "ref", jobs=2)
    assert _files(out) == _files(tmp_path / "ref")
    assert {k: v for k, v in _files(out).items() if k in kept} == kept
    df = load(out)
    assert len(df) == 16
    assert df["run_id"].is_unique


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_sweep_with_one_line(tmp_path: Path, sig: int, code: int) -> None:
    spec = _spec(tmp_path, SLOW_SPEC)
    out = tmp_path / "out"
    proc = _sweep_proc(spec, out, "--jobs", "1")
    _wait_for_rows(proc, out, 1)
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == code
    err = (tmp_path / "sweep.err").read_text()
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: interrupted by {signal.Signals(sig).name}: sweep stopped")
    assert "--resume" in lines[0]
    assert 1 <= len(_files(out)) < 16
    run_sweep(spec, out, jobs=1, resume=True)
    assert len(load(out)) == 16


def test_readme_python_example_runs_as_a_script(tmp_path: Path) -> None:
    """The README's Python example, saved as a file and run with `python file.py`
    (its compare starts a process pool whose workers import the script)."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    _, _, rest = readme.partition("From Python (saved as a script")
    code = rest.split("```python\n", 1)[1].split("```", 1)[0]
    assert "schedlab.compare(" in code
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "completion_time_s" in proc.stdout
    assert "eevdf-WA_IDLE" in proc.stdout


def test_compare_refuses_a_second_machine(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "schedlab",
            "compare",
            "-m",
            str(TINY_MACHINE),
            "-m",
            "laptop-4c8t",
            "-w",
            "hackbench:groups=1,fds=2,loops=10",
            "-p",
            "eevdf",
            "-n",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: --machine: compare takes one machine, got 2")
    assert "schedlab sweep" in lines[0]
    assert proc.stdout == ""


def test_readme_sweep_spec_expands_as_the_readme_says(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    _, _, rest = readme.partition("## Sweeps")
    text = rest.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "machines").mkdir()
    (tmp_path / "machines" / "my-box.toml").write_bytes(TINY_MACHINE.read_bytes())
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    spec = load_spec(path)
    assert len(spec.runs) == 100  # the README's count
    assert spec.runs[5].workload == "hackbench:fds=10,loops=200,groups=1"
    assert spec.runs[30].workload == "schbench:runtime=1s + rt-periodic:cpus=4-7,count=2"


def test_cli_sweep_on_dask_writes_the_pool_rows(tmp_path: Path) -> None:
    import distributed

    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "schedlab",
                "sweep",
                str(_spec(tmp_path)),
                "--out",
                str(tmp_path / "dask"),
                "--dask",
                cluster.scheduler_address,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert "16 runs written" in proc.stdout
    run_sweep(_spec(tmp_path), tmp_path / "pool", jobs=2)
    assert _files(tmp_path / "dask") == _files(tmp_path / "pool")


def test_cli_json_reports_runs_and_resume_writes_none(tmp_path: Path) -> None:
    import json

    import schedlab

    cmd = [sys.executable, "-m", "schedlab", "sweep", str(_spec(tmp_path)), "--json"]
    first = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "s"  # default: the spec's path without .toml
    assert json.loads(first.stdout) == {"out": str(out), "runs": 16, "written": 16}
    again = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, check=False)
    assert json.loads(again.stdout)["written"] == 0
    assert len(schedlab.sweep.load(out)) == 16


@settings(max_examples=40, deadline=None)
@given(
    n_policies=st.integers(1, 3),
    seeds=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4, unique=True),
    groups=st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True),
    loops=st.lists(st.integers(1, 1000), min_size=1, max_size=3, unique=True),
)
def test_expansion_size_order_and_ids_hold_for_any_grid(
    n_policies: int, seeds: list[int], groups: list[int], loops: list[int]
) -> None:
    policies = ["eevdf", "eevdf-WA_IDLE", "eevdf-SIS_UTIL"][:n_policies]
    doc = {
        "machines": ["laptop-4c8t"],
        "policies": policies,
        "seeds": seeds,
        "workloads": [{"parts": ["hackbench:fds=2"], "grid": {"groups": groups, "loops": loops}}],
    }
    spec = expand(doc, "spec.toml", Path("."))
    assert len(spec.runs) == n_policies * len(seeds) * len(groups) * len(loops)
    assert len({r.run_id for r in spec.runs}) == len(spec.runs)
    assert [r.run_id for r in expand(doc, "other.toml", Path("/")).runs] == [
        r.run_id for r in spec.runs
    ]
    # seeds vary fastest, then policies, then the grid (last key fastest)
    expected = [(g, lo, p, s) for g in groups for lo in loops for p in policies for s in seeds]
    got = [(dict(r.params)["groups"], dict(r.params)["loops"], r.policy, r.seed) for r in spec.runs]
    assert got == expected


def test_the_largest_seed_round_trips(tmp_path: Path) -> None:
    text = SPEC.replace("seeds = {{ start = 3, count = 2 }}", f"seeds = [{2**64 - 1}]")
    text = text.replace('"1.count" = [1, 2]\n', "")
    run_sweep(_spec(tmp_path, text), tmp_path / "out", jobs=1)
    df = load(tmp_path / "out")
    assert len(df) == 4
    assert set(df["seed"]) == {2**64 - 1}


def test_int_and_float_grid_values_share_one_column(tmp_path: Path) -> None:
    import pyarrow as pa

    from schedlab.sweep import write_row

    out = tmp_path / "out"
    out.mkdir()
    write_row(out, "00", pa.table({"index": [0], "run_id": ["00"], "x": pa.array([1])}))
    write_row(out, "01", pa.table({"index": [1], "run_id": ["01"], "x": pa.array([2.5])}))
    assert list(load(out)["x"]) == [1.0, 2.5]
