"""The host a guest's stall probes fit (`_hostshare`, the `overcommit` family)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schedlab
from schedlab import _hostshare, _native

MS = 1_000_000


def _write_probes(d: Path, host: int, share: float, slice_ns: int, run_ns: int, vcpus: int) -> None:
    """The stall probes a host of `host` CPUs would give, its own threads
    taking `share` of them in runs of `run_ns`, its slice `slice_ns`: with K
    spinning, each stalls 1 - (host - share) / K of 1 s; at K = host the gaps
    are the other threads' runs, above it the slices' turns."""
    d.mkdir(parents=True, exist_ok=True)
    for k in range(1, vcpus + 1):
        f = max(0.0, 1 - (host - share) / k)
        total = round(k * 1e9 * f)
        gaps = round(k * 1e9 * (1 - f) / slice_ns) if k > host else round(total / run_ns)
        doc = {"family": "stalls", "cpus": k, "duration_ns": 1_000_000_000, "gaps": gaps,
               "total_ns": total, "mean_ns": total // gaps if gaps else 0,
               "per_s": gaps / k, "stalled_fraction": f, "threshold_ns": 500_000}  # fmt: skip
        (d / f"probe-stalls-{k}.json").write_text(json.dumps(doc))


def test_the_fit_finds_the_host_that_made_the_probes(tmp_path: Path) -> None:
    _write_probes(tmp_path, host=2, share=0.5, slice_ns=4 * MS, run_ns=5 * MS, vcpus=4)
    fit = _hostshare.fit(tmp_path, 2)
    assert fit is not None
    got = (fit.host_cpus, fit.slice_ns, fit.other_share, fit.other_run_ns)
    assert got == (2, 4 * MS, 0.5, 5 * MS)
    # The probe it did not fit (3 spinning) is the model's check.
    assert fit.predicted(3) == pytest.approx(0.5)
    assert "3 busy 50% (model 50%)" in fit.describe()
    assert fit.spec() == (
        "overcommit:host_cpus=2,slice=uniform:2000us-6000us,"
        "other_interval=exp:10000us,other_run=exp:5000us"
    )


def test_no_fit_without_overcommit_or_probes(tmp_path: Path) -> None:
    assert _hostshare.fit(tmp_path, 2) is None  # no probe
    _write_probes(tmp_path, host=2, share=0.0, slice_ns=4 * MS, run_ns=5 * MS, vcpus=2)
    assert _hostshare.fit(tmp_path, 2) is None  # the vCPUs fit the host
    assert _hostshare.fit(tmp_path, 0) is None  # host CPUs unknown
    (tmp_path / "probe-stalls-3.json").write_text("{")
    with pytest.raises(_native.SpecError, match=r"probe-stalls-3.json: not the stall probe's JSON"):
        _hostshare.fit(tmp_path, 2)


def test_the_fitted_host_slows_a_busy_guest_as_the_probes_did(
    tmp_path: Path, tiny_machine: Path
) -> None:
    # 4 CPU-bound threads on 4 vCPUs over 2 host CPUs, a quarter of one
    # taken by the host's threads: (2 - 0.25) / 4 of each vCPU is left, so
    # the same work takes about 4 / 1.75 = 2.3 times as long.
    _write_probes(tmp_path, host=2, share=0.25, slice_ns=4 * MS, run_ns=3 * MS, vcpus=4)
    fit = _hostshare.fit(tmp_path, 2)
    assert fit is not None
    work = "sieve:threads=4,work=200ms"
    machine = str(tiny_machine)
    alone = schedlab.run(machine, [work], seed=1).metrics["completion_time_s"]
    shared = schedlab.run(machine, [work, fit.spec()], seed=1).metrics["completion_time_s"]
    assert 2.0 < shared / alone < 2.6, (alone, shared)
