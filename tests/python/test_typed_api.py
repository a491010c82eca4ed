"""The native module's surface is typed: a run is a `RunOutput` of `Metric`s,
trace tables are Arrow record batches, documents are dicts and lists; no
JSON text crosses the boundary. The stubs cover every public name."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import schedlab
from schedlab import _native

REC = Path(__file__).parent / "fixtures" / "recorded"
# Shipped beside the module (a wheel without it has no types for mypy).
STUBS = Path(_native.__file__).with_name("_native.pyi")

#: The native functions whose answer is text by nature: `topo show`'s
#: rendering and `topo import`'s machine TOML.
TEXT_ANSWERS = {"topo_show", "topo_import"}


def _stub_returns() -> dict[str, str]:
    tree = ast.parse(STUBS.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = ast.unparse(node.returns) if node.returns else "None"
        elif isinstance(node, ast.ClassDef):
            out[node.name] = "class"
    return out


def test_stubs_cover_the_module_and_only_text_by_nature_returns_str() -> None:
    stubs = _stub_returns()
    public = {n for n in dir(_native) if not n.startswith("_")}
    assert public == set(stubs), public ^ set(stubs)
    returns_str = {n for n, r in stubs.items() if r == "str" or r.startswith("tuple[str")}
    assert returns_str == TEXT_ANSWERS


def test_a_run_is_a_typed_object(tiny_machine: Path) -> None:
    out = _native.run(
        tiny_machine.read_text(),
        "toml",
        str(tiny_machine),
        "hackbench:groups=1,fds=2,loops=10",
        "spec",
        "eevdf",
        4,
    )
    assert isinstance(out, _native.RunOutput)
    assert out.seed == 4
    assert out.trace is None
    assert out.events_handled <= out.events_processed
    names = [m.name for m in out.metrics]
    assert out.primary in names
    for m in out.metrics:
        assert isinstance(m, _native.Metric)
        assert isinstance(m.value, float)
        assert m.better in ("lower", "higher", "neither")
    # Requests are not marked by hackbench: absent, NaN (not 0).
    by_name = {m.name: m for m in out.metrics}
    assert math.isnan(by_name["requests_per_s"].value)
    r = schedlab.RunResult.from_native(out)
    assert r.metrics["requests_per_s"] is math.nan
    assert r.units[out.primary] == by_name[out.primary].unit


def test_documents_are_dicts_and_lists(tiny_machine: Path) -> None:
    policies = _native.policy_list()
    assert {"name", "kind", "default_on", "summary", "shown_by"} <= set(policies[0])
    shown = _native.policy_show("v5.9+wa_idle_prev")
    assert shown["base"] == "v5.9"
    assert {"name": "wa_idle_prev", "on": True} in [
        {k: f[k] for k in ("name", "on")} for f in shown["features"]
    ]
    families = _native.workload_list()
    assert "hackbench" in {f["name"] for f in families}
    topo = _native.topo_doc(tiny_machine.read_text(), "toml", "t")
    assert topo["machine"]["nr_cpus"] == 4
    trace = (REC / "host-pipe" / "trace.txt").read_text()
    doc = _native.analyze_trace(trace, "host-pipe")
    assert isinstance(doc["metrics"], list)
    assert {m["better"] for m in doc["metrics"]} <= {"lower", "higher", "neither"}


# The reference: the regular expressions schedlab.trace used before its
# tables came from the core, kept here to check the core against.
_LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:[\w.]{4,5}\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>[\w:]+):\s?(?P<fields>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S*)")


def _reference(text: str) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        row: dict[str, Any] = {
            "Time": float(m["ts"]),
            "__cpu": int(m["cpu"]),
            "__pid": int(m["pid"]),
            "__comm": m["comm"].strip(),
        }
        for key, val in _FIELD.findall(m["fields"]):
            row.setdefault(key, val)
        rows.setdefault(m["event"].split(":")[-1], []).append(row)
    return rows


def _as_text(value: object) -> str:
    """A field as text, integers written canonically (``002`` is ``2``)."""
    text = str(value)
    return str(int(text)) if re.fullmatch(r"-?\d+", text) else text


@pytest.mark.parametrize("recording", ["host-pipe", "guest-2c2t-workqueue"])
def test_tables_of_real_traces_match_the_reference_reader(recording: str) -> None:
    text = (REC / recording / "trace.txt").read_text()
    want = _reference(text)
    frames = schedlab.trace.from_text(text)
    assert frames.events == list(want)
    for name, rows in want.items():
        table = frames.arrow(name).to_pylist()
        assert len(table) == len(rows), name
        for got, ref in zip(table, rows, strict=True):
            for key, value in ref.items():
                if key in ("Time", "__cpu", "__pid", "__comm"):
                    assert got[key] == value, (name, key)
                else:
                    assert _as_text(got[key]) == _as_text(value), (name, key)
            assert set(got) == {*ref, "__line"}


def test_column_types_and_perf_script_lines() -> None:
    text = "\n".join(
        [
            "  hackbench  4242 [002]  1.000100:       sched:sched_switch: prev_comm=hackbench "
            "prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/2 next_pid=0 "
            "next_prio=120",
            "  hackbench  4243 [001]  1.000200:       sched:sched_waking: comm=hackbench "
            "pid=4242 prio=120 target_cpu=002",
        ]
    )
    t = schedlab.trace.from_text(text)
    assert t.events == ["sched_switch", "sched_waking"]
    schema = t.arrow("sched_switch").schema
    assert schema.field("prev_pid").type == pa.int64()
    assert schema.field("prev_state").type == pa.string()
    assert schema.field("Time").type == pa.float64()
    sw = t.df_event("sched_switch").iloc[0]
    assert (sw["__comm"], sw["__pid"], sw["__cpu"]) == ("hackbench", 4242, 2)
    assert t.df_event("sched_waking").iloc[0]["target_cpu"] == 2
