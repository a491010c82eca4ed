"""The host a guest's stall probes fit (`_hostshare`, the `overcommit` family)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schedlab
from schedlab import _hostshare, _native

MS = 1_000_000


def _write_probes(
    d: Path, host: int, share: float, slice_ns: int, run_ns: int, vcpus: int, per_busy: float = 0
) -> None:
    """The stall probes a host of `host` CPUs would give, its own threads
    taking `share` + `per_busy` K of them in runs of `run_ns` with K busy,
    its slice `slice_ns`: with K spinning, each stalls 1 - (host - share -
    per_busy K) / K of 1 s; at K = host the gaps are the other threads'
    runs, above it the slices' turns."""
    d.mkdir(parents=True, exist_ok=True)
    for k in range(1, vcpus + 1):
        f = max(0.0, 1 - (host - share - per_busy * k) / k)
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
    assert got == (2, 4 * MS, [0.5] * 4, 5 * MS)
    # The probe below the host's count (1 spinning) is the model's check.
    assert fit.predicted(1) == 0.0
    assert "1 busy 0% (model 0%), 2 busy 25% (model 25%)" in fit.describe()
    assert fit.spec() == (
        "overcommit:host_cpus=2,slice=uniform:2000us-6000us,"
        "other_share=0.5;0.5;0.5;0.5,other_run=exp:5000us"
    )


def test_host_threads_that_grow_with_the_busy_vcpus_are_fitted(tmp_path: Path) -> None:
    # 8 vCPUs on 2 host CPUs whose own threads take 0.3 + 0.1 per busy vCPU
    # (the 8-vCPU guest's probes look like this: 0.56 with 2 spinning, 1.28
    # with 8); below 2 the probes cannot see them: the 2-busy share stands.
    _write_probes(tmp_path, 2, 0.3, 3 * MS, 5 * MS, 8, per_busy=0.1)
    fit = _hostshare.fit(tmp_path, 2)
    assert fit is not None
    want = [0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1]
    assert fit.other_share == pytest.approx(want, abs=0.002)
    assert fit.predicted(6) == pytest.approx(1 - (2 - 0.9) / 6, abs=0.001)
    assert "other_share=0.5;0.5;0.6;0.7;0.8;0.9;1;1.1,other_run=exp:5000us" in fit.spec()
    assert "take 0.50, 0.50, 0.60" in fit.describe()


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
    # asked for by the host's threads: (2 - 0.25) / 4 of each vCPU is left
    # (a little more, since a run that comes while both host CPUs run
    # others is lost), so the same work takes about 4 / 1.75 = 2.3 times as
    # long.
    _write_probes(tmp_path, host=2, share=0.25, slice_ns=4 * MS, run_ns=3 * MS, vcpus=4)
    fit = _hostshare.fit(tmp_path, 2)
    assert fit is not None
    work = "sieve:threads=4,work=200ms"
    machine = str(tiny_machine)
    alone = schedlab.run(machine, [work], seed=1).metrics["completion_time_s"]
    shared = schedlab.run(machine, [work, fit.spec()], seed=1).metrics["completion_time_s"]
    assert 2.0 < shared / alone < 2.6, (alone, shared)


def _wake_trace(latencies_us: list[int]) -> str:
    """A split probe's trace: the manager on CPU 2 wakes the worker on idle
    CPU 3, which runs after each latency and blocks again."""
    lines, t = [], 1.0
    sw = (
        "  {c}-{p} [003] d..2. {t:.6f}: sched_switch: prev_comm={c} prev_pid={p} prev_prio=120 "
        "prev_state={s} ==> next_comm={n} next_pid={q} next_prio=120"
    )
    lines.append(sw.format(c="wl-wq-w0", p=101, t=t, s="S", n="swapper/3", q=0))
    for lat in latencies_us:
        t += 0.01
        lines.append(
            f"  wl-wq-mgr-100 [002] d..2. {t:.6f}: sched_waking: comm=wl-wq-w0 pid=101 "
            "prio=120 target_cpu=003"
        )
        ran = t + lat / 1e6
        lines.append(sw.format(c="swapper/3", p=0, t=ran, s="R", n="wl-wq-w0", q=101))
        lines.append(sw.format(c="wl-wq-w0", p=101, t=ran + 0.0002, s="S", n="swapper/3", q=0))
    return "\n".join(lines) + "\n"


def test_the_host_wake_probe_gives_the_share_that_ran_at_once(tmp_path: Path) -> None:
    # With the host free every wakeup runs in 40 us; with every host CPU
    # taken, 10 of 30 still do and 20 wait a slice (3 ms): 33%.
    assert _hostshare.wake_preempt_pct(tmp_path) is None  # no probes
    for name, lat in (("split", [40] * 30), ("hostwake", [40] * 10 + [3000] * 20)):
        (tmp_path / f"probe-{name}").mkdir()
        (tmp_path / f"probe-{name}" / "trace.txt").write_text(_wake_trace(lat))
    assert _hostshare.wake_preempt_pct(tmp_path) == 33
    # The fit carries it into the spec and its description.
    _write_probes(tmp_path, host=2, share=0.5, slice_ns=4 * MS, run_ns=5 * MS, vcpus=4)
    fit = _hostshare.fit(tmp_path, 2, _hostshare.wake_preempt_pct(tmp_path))
    assert fit is not None
    assert fit.spec().endswith(",wake_preempt=33")
    assert "ran at once in 33% of wakeups" in fit.describe()


def test_the_guest_calibration_runs_the_host_wake_probe_where_it_fits() -> None:
    from schedlab import _guest_calibrate

    # 4 vCPUs on a 2-CPU host: vCPUs 0-1 spin, the split probe runs on 2-3.
    job = _guest_calibrate._calibrate_job(400, 1000, 16384, 4, 2).splitlines()
    assert any(line.startswith("taskset 0x3 /wl 'stalls:duration=8s") for line in job)
    probe = [line for line in job if line.startswith("taskset 0xc /wl 'workqueue:")]
    assert len(probe) == 1
    assert "pin=split" in probe[0]
    assert "cat $T/trace > /out/hostwake.trace" in job
    # Too few vCPUs to take every host CPU and keep two for the probe.
    assert "hostwake" not in _guest_calibrate._calibrate_job(400, 1000, 16384, 3, 2)


def test_an_unknown_stall_model_is_refused(tmp_path: Path) -> None:
    from schedlab import _validate

    with pytest.raises(_native.SpecError, match=r"--stall-model: expected host, probes, independent, got .bogus."):
        _validate.validate(tmp_path, stall_model="bogus")
