"""A guest's host, fitted from its stall probes: the `overcommit` noise.

A QEMU TCG guest's vCPUs are threads of a host with fewer CPUs. Its
calibration runs the stall probe with K = 1 to N vCPUs spinning
(``probe-stalls-K.json``: gaps over a threshold in each spinning vCPU's
clock, their count, total and mean). The host that `overcommit` models has H
CPUs (the host's CPU count, stored with the recording), gives a vCPU a slice
S before a waiting one runs, and runs other threads of its own that take
B(K) of its CPUs while K vCPUs are busy (the emulator's own work grows with
the vCPUs it runs: in the 8-vCPU guest from 0.6 host CPUs with 2 spinning to
1.3 with 8), in runs of about D. Then K busy vCPUs get H - B(K) CPUs between
them, so each stalls a share 1 - (H - B(K)) / K of the time. Measured:

- B(K) = H - K (1 - f_K), what the K spinning vCPUs did not get (share
  stalled f_K), from each probe with K >= H; below H the host's threads take
  idle host CPUs and the probes cannot see them, so B(H) stands for those;
- S = the mean run between two gaps with every vCPU spinning (spinning time
  over gaps);
- D = the mean gap with K = H vCPUs spinning, where the vCPUs alone fit the
  host and only its own threads stall them (S when that probe saw no gap).

Whether a halted vCPU woken while every host CPU is taken preempts a running
one or waits its turn is measured apart, once per calibration
(`wake_preempt_pct`): the split wakeup probe on two vCPUs while H others
spin, against the same probe with the host free.

What the fit does not use checks it: the probes below H, and the stalls'
footprint in a trace (`_stalls.py`), which `validate` measures in each
recording and in its simulation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _native


@dataclass
class Probe:
    """One stall probe: K vCPUs spinning for `duration_ns`."""

    busy: int
    duration_ns: int
    gaps: int
    total_ns: int
    mean_ns: int
    fraction: float


@dataclass
class HostFit:
    """The fitted host and the probes it came from."""

    host_cpus: int
    slice_ns: int
    #: B(K) for K = 1, 2, ... N busy vCPUs: host CPUs its own threads take.
    other_share: list[float]
    other_run_ns: int
    probes: list[Probe]
    #: Percent of wakeups of a halted vCPU that preempt while every host CPU
    #: is taken (`wake_preempt_pct`), or None: the family's default.
    wake_preempt: int | None = None

    def other(self, busy: int) -> float:
        """B(K): host CPUs its own threads take with `busy` vCPUs busy."""
        return self.other_share[min(max(busy, 1), len(self.other_share)) - 1]

    def predicted(self, busy: int) -> float:
        """The share of time a vCPU stalls with `busy` vCPUs busy."""
        room = self.host_cpus - self.other(busy)
        return max(0.0, 1.0 - room / busy) if busy else 0.0

    def spec(self) -> str:
        """The `overcommit` noise spec. A host preempts a CPU-bound thread at
        the first tick past its slice, so runs spread over about a tick:
        uniform from S/2 to 3S/2 (mean S). The other threads' runs start as a
        Poisson stream and last exponentially long (mean D)."""
        s = max(1, round(self.slice_ns / 1e3))
        parts = [
            f"overcommit:host_cpus={self.host_cpus}",
            f"slice=uniform:{s // 2}us-{s * 3 // 2}us",
        ]
        if any(b > 0 for b in self.other_share):
            shares = ";".join(f"{b:g}" for b in self.other_share)
            d = max(1, round(self.other_run_ns / 1e3))
            parts += [f"other_share={shares}", f"other_run=exp:{d}us"]
        if self.wake_preempt is not None:
            parts.append(f"wake_preempt={self.wake_preempt}")
        return ",".join(parts)

    def describe(self) -> str:
        """How it was fitted, and each probe measured against the model."""
        shares = ", ".join(f"{b:.2f}" for b in self.other_share)
        checks = ", ".join(
            f"{p.busy} busy {100 * p.fraction:.0f}% (model {100 * self.predicted(p.busy):.0f}%)"
            for p in self.probes
        )
        return (
            f"host of {self.host_cpus} CPUs (the recording host's count); slice "
            f"{self.slice_ns / 1e6:.1f} ms (mean run between gaps with every vCPU spinning); the "
            f"host's own threads take {shares} of its CPUs with 1, 2, ... vCPUs busy (what as "
            f"many spinning vCPUs did not get, from {self.host_cpus} up) in runs of "
            f"{self.other_run_ns / 1e6:.1f} ms (the mean gap with {self.host_cpus} spinning); "
            f"share of time stalled, measured (model): {checks}"
            + (
                f"; a halted vCPU woken with every host CPU taken ran at once in "
                f"{self.wake_preempt}% of wakeups (the host wake probe)"
                if self.wake_preempt is not None
                else ""
            )
        )


def read_probes(d: Path) -> list[Probe]:
    """The per-count stall probes stored in `d` (found as
    `_calibrate.stall_noise` finds them), by count."""
    from ._calibrate import _stall_probe_files

    found = []
    for k, f in _stall_probe_files(d):
        try:
            doc: dict[str, Any] = json.loads(f.read_text())
            found.append(
                Probe(
                    k,
                    int(doc["duration_ns"]),
                    int(doc["gaps"]),
                    int(doc["total_ns"]),
                    int(doc["mean_ns"]),
                    float(doc["stalled_fraction"]),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise _native.SpecError(f"{f}: not the stall probe's JSON ({e})") from e
    return found


def wake_preempt_pct(d: Path) -> int | None:
    """The share of wakeups of a halted vCPU, while every host CPU is taken,
    that ran at once, in percent, from calibration directory `d`: the host
    wake probe's wakeup-to-run times (``probe-hostwake/trace.txt``) against
    twice the 90th percentile of the same probe with the host free
    (``probe-split/trace.txt``), which a wakeup that had to wait a host slice
    (milliseconds) far exceeds. None without both probes."""
    from . import _calibrate

    busy_f, free_f = d / "probe-hostwake" / "trace.txt", d / "probe-split" / "trace.txt"
    if not (busy_f.is_file() and free_f.is_file()):
        return None
    busy = _calibrate.wake_to_run_ns(
        busy_f.read_text(errors="replace").splitlines(), "wl-wq", False
    )
    free = sorted(
        _calibrate.wake_to_run_ns(free_f.read_text(errors="replace").splitlines(), "wl-wq", False)
    )
    if len(busy) < _calibrate.MIN_WAKEUPS or len(free) < _calibrate.MIN_WAKEUPS:
        return None
    limit = 2 * free[min(len(free) - 1, int(0.9 * len(free)))]
    return round(100 * sum(1 for ns in busy if ns <= limit) / len(busy))


def fit(d: Path, host_cpus: int, wake_preempt: int | None = None) -> HostFit | None:
    """The host fitted from the probes in `d` (module doc), or None without
    probes, with a host as large as the guest, or with no gap at all;
    `wake_preempt` is the calibration's `wake_preempt_pct`."""
    probes = read_probes(d)
    if not probes or host_cpus < 1:
        return None
    top = probes[-1]
    if top.busy <= host_cpus or top.gaps == 0:
        return None
    running_ns = top.busy * top.duration_ns - top.total_ns
    slice_ns = max(1, running_ns // top.gaps)
    seen = {p.busy: host_cpus - p.busy * (1.0 - p.fraction) for p in probes if p.busy >= host_cpus}
    first = seen[min(seen)]
    shares = [seen.get(k, first) if k >= host_cpus else first for k in range(1, top.busy + 1)]
    shares = [round(min(max(0.0, b), host_cpus - 0.01), 3) for b in shares]
    at_host = next((p for p in probes if p.busy == host_cpus and p.gaps > 0), None)
    run_ns = at_host.mean_ns if at_host is not None else slice_ns
    return HostFit(host_cpus, slice_ns, shares, run_ns, probes, wake_preempt)
