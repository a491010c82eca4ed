"""`schedlab calibrate`'s cache refill costs: the pairs of CPUs it measures,
the arithmetic on stored probe outputs, and the probe itself."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from schedlab import _calibrate, _calibrate_refill, _native

PRESETS = Path(_calibrate.__file__).parent / "presets" / "machines"
GUEST_PROBES = Path(__file__).parent / "fixtures" / "recorded" / "guest-2c2t-calibrate"
# `cost.refill_ns_per_kib`'s entries, in the order of the engine's `Distance`.
ORDER = ("same", "smt", "cluster", "llc", "package", "node")


def _doc(name: str) -> dict:
    return _native.topo_doc((PRESETS / name).read_text(), "toml", name)


@pytest.mark.parametrize(
    ("preset", "want"),
    [
        # SMT siblings numbered a socket's core count apart; one LLC per socket and node.
        ("xeon-2s-20c.toml", {"smt": (0, 20), "llc": (0, 1), "node": (0, 10)}),
        # Four-core clusters sharing an L3 tag, an LLC per die, a node per die.
        ("kunpeng920.toml", {"cluster": (0, 1), "llc": (0, 4), "node": (0, 24)}),
        # CCXs of four cores, each its own LLC, one node.
        ("threadripper-3970x.toml", {"smt": (0, 32), "llc": (0, 1), "package": (0, 4)}),
        # big.LITTLE: the two clusters are two LLCs.
        ("hikey960.toml", {"llc": (0, 1), "package": (0, 4)}),
    ],
)
def test_one_pair_per_distance_the_machine_has_from_cpu_0(preset: str, want: dict) -> None:
    assert _calibrate_refill.pairs(_doc(preset)) == want


def test_the_footprint_stays_in_the_private_cache_and_the_eviction_exceeds_the_llc() -> None:
    doc = _doc("xeon-2s-20c.toml")
    l2, llc = doc["cost"]["l2_kib"], doc["cost"]["llc_kib"]
    assert _calibrate_refill.footprint_kib(doc) == min(256, l2 // 2)
    assert _calibrate_refill.evict_kib(doc) >= 4 * llc


def _probe(src: int, dst: int, moved: float, evicted: float) -> dict:
    """A refillcost output (what the probe prints), by hand."""
    return {
        "family": "refillcost",
        "kib": 256,
        "evict_kib": 131072,
        "from": src,
        "to": dst,
        "rounds": 100,
        "moved_ns_per_kib": moved,
        "evicted_ns_per_kib": evicted,
        "warm": {"p10_ns": 1200, "p50_ns": 1300, "p90_ns": 1500},
        "moved": {"p10_ns": 3000, "p50_ns": 3300, "p90_ns": 4100},
        "warm_there": {"p10_ns": 1200, "p50_ns": 1300, "p90_ns": 1500},
        "evicted": {"p10_ns": 9000, "p50_ns": 10300, "p90_ns": 13000},
    }


def test_each_distance_is_its_moves_cost_and_memory_goes_to_package_without_a_second_llc() -> None:
    values, how = _calibrate_refill.refill_costs(
        {"smt": _probe(0, 4, -0.4, 35.2), "llc": _probe(0, 1, 7.6, 34.9)}, "tag:"
    )
    # A sibling's refill measured below the warm pass is none; memory from
    # the first pair's evicted pass, the engine's figure for an evicted footprint.
    assert values == {"smt": 0, "llc": 8, "package": 35}
    assert how.startswith("tag: ns per KiB of a 256 KiB footprint")
    assert "llc 8 (CPUs 0 -> 1: moved 3300 ns against warm there 1300 ns" in how
    assert "package 35 (memory:" in how
    # With a second LLC in the node, package is that move's.
    values, _ = _calibrate_refill.refill_costs(
        {"llc": _probe(0, 1, 7.6, 34.9), "package": _probe(0, 4, 61.2, 90.0)}, "tag:"
    )
    assert values == {"llc": 8, "package": 61}
    assert _calibrate_refill.refill_costs({}, "tag:") == ({}, "")


def test_stored_refill_probes_set_the_machines_refill_table(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    before = _calibrate.costs_from_probes(d)
    assert before["refill_ns_per_kib"] is None  # not measured: the defaults stay
    default = _native.topo_doc((d / "machine.toml").read_text(), "toml", "t")["cost"]
    (d / "probe-refill-smt.json").write_text(json.dumps(_probe(0, 1, 0.2, 40.4)))
    (d / "probe-refill-llc.json").write_text(json.dumps(_probe(0, 2, 12.4, 41.0)))
    fig = _calibrate.costs_from_probes(d)
    assert fig["refill_ns_per_kib"] == {"smt": 0, "llc": 12, "package": 40}
    text = (d / "machine.toml").read_text()
    assert "refill_ns_per_kib = { smt = 0, llc = 12, package = 40 }" in text
    assert "schedlab-wl refillcost, 100 rounds per pair" in text
    got = _native.topo_doc(text, "toml", "t")["cost"]["refill_ns_per_kib"]
    want = dict(zip(ORDER, default["refill_ns_per_kib"], strict=True))
    want |= {"smt": 0, "llc": 12, "package": 40}
    assert got == [want[k] for k in ORDER]
    # Computed again from the same outputs: the same file.
    _calibrate.costs_from_probes(d)
    assert (d / "machine.toml").read_text() == text


def test_a_damaged_refill_output_names_its_file_and_key(tmp_path: Path) -> None:
    bad = _probe(0, 1, 7.6, 34.9)
    del bad["moved_ns_per_kib"]
    (tmp_path / "probe-refill-llc.json").write_text(json.dumps(bad))
    with pytest.raises(_native.SpecError, match=r"probe-refill-llc.json: moved_ns_per_kib: "):
        _calibrate_refill.read_refill_probes(tmp_path)
    (tmp_path / "probe-refill-llc.json").write_text("{")
    with pytest.raises(_native.SpecError, match=r"probe-refill-llc.json: line 1: not JSON"):
        _calibrate_refill.read_refill_probes(tmp_path)


def _wl() -> list[str]:
    exe = shutil.which("schedlab-wl")
    return [exe] if exe else [sys.executable, "-c", "from schedlab.wl import main; main()"]


def test_the_probe_runs_for_each_pair_of_this_machine(tmp_path: Path) -> None:
    # No root needed: two pinned passes and a move, untraced.
    if len(os.sched_getaffinity(0)) < 2 or 1 not in os.sched_getaffinity(0):
        pytest.skip("the probe moves between CPUs 0 and 1, which this test may not both use")
    machine = _native.topo_import("/sys")
    doc = _native.topo_doc(machine, "toml", "this machine")
    _calibrate_refill.run_refill_probes(machine, tmp_path, wl=_wl(), rounds=3)
    got = _calibrate_refill.read_refill_probes(tmp_path)
    assert set(got) == set(_calibrate_refill.pairs(doc))
    for p in got.values():
        assert (p["family"], p["rounds"], p["from"]) == ("refillcost", 3, 0)
        assert 0 < p["warm"]["p50_ns"] < 1e8
