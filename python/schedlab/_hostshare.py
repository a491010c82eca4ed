"""A guest's host, fitted from its stall probes: the `overcommit` noise.

A QEMU TCG guest's vCPUs are threads of a host with fewer CPUs. Its
calibration runs the stall probe with K = 1 to N vCPUs spinning
(``probe-stalls-K.json``: gaps over a threshold in each spinning vCPU's
clock, their count, total and mean). The host that `overcommit` models has H
CPUs (the host's CPU count, stored with the recording), gives a vCPU a slice
S before a waiting one runs, and runs other threads of its own that take
about B of its CPUs in runs of about D. Then K busy vCPUs get H - B CPUs
between them, so each stalls a share 1 - (H - B) / K of the time, and none
while K <= H - B. Fitted, each from one probe:

- B = H - N (1 - f_N), from the probe with every vCPU spinning (share
  stalled f_N), when N > H (otherwise the host's own threads took idle host
  CPUs and the probes cannot see them: B = 0);
- S = the mean run between two gaps in that probe (spinning time over gaps);
- D = the mean gap of the probe with K = H vCPUs spinning, where the vCPUs
  alone fit the host and only the host's threads stall them (S when that
  probe saw no gap).

The other probes (K between) are not fitted: `validate` prints each one's
measured share beside the model's, which checks the model.
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
    other_share: float
    other_run_ns: int
    probes: list[Probe]

    def predicted(self, busy: int) -> float:
        """The share of time a vCPU stalls with `busy` vCPUs busy."""
        room = self.host_cpus - self.other_share
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
        if self.other_share > 0 and self.other_run_ns > 0:
            d = max(1, round(self.other_run_ns / 1e3))
            every = max(1, round(d / self.other_share))
            parts += [f"other_interval=exp:{every}us", f"other_run=exp:{d}us"]
        return ",".join(parts)

    def describe(self) -> str:
        """How it was fitted, and each probe measured against the model."""
        checks = ", ".join(
            f"{p.busy} busy {100 * p.fraction:.0f}% (model {100 * self.predicted(p.busy):.0f}%)"
            for p in self.probes
        )
        return (
            f"host of {self.host_cpus} CPUs (the recording host's count); slice "
            f"{self.slice_ns / 1e6:.1f} ms (mean run between gaps with every vCPU spinning); the "
            f"host's own threads take {self.other_share:.2f} of its CPUs (what every vCPU spinning "
            f"did not get) in runs of {self.other_run_ns / 1e6:.1f} ms (the mean gap with "
            f"{self.host_cpus} spinning); share of time stalled, measured (model): {checks}"
        )


def read_probes(d: Path) -> list[Probe]:
    """The per-count stall probes stored in `d`, by count."""
    found = []
    for f in d.glob("probe-stalls-*.json"):
        k = f.name[len("probe-stalls-") : -len(".json")]
        if not k.isdigit():
            continue
        try:
            doc: dict[str, Any] = json.loads(f.read_text())
            found.append(
                Probe(
                    int(k),
                    int(doc["duration_ns"]),
                    int(doc["gaps"]),
                    int(doc["total_ns"]),
                    int(doc["mean_ns"]),
                    float(doc["stalled_fraction"]),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise _native.SpecError(f"{f}: not the stall probe's JSON ({e})") from e
    return sorted(found, key=lambda p: p.busy)


def fit(d: Path, host_cpus: int) -> HostFit | None:
    """The host fitted from the probes in `d` (module doc), or None without
    probes, with a host as large as the guest, or with no gap at all."""
    probes = read_probes(d)
    if not probes or host_cpus < 1:
        return None
    top = probes[-1]
    if top.busy <= host_cpus or top.gaps == 0:
        return None
    running_ns = top.busy * top.duration_ns - top.total_ns
    slice_ns = max(1, running_ns // top.gaps)
    share = min(max(0.0, host_cpus - top.busy * (1.0 - top.fraction)), host_cpus - 0.01)
    at_host = next((p for p in probes if p.busy == host_cpus and p.gaps > 0), None)
    run_ns = at_host.mean_ns if at_host is not None else slice_ns
    return HostFit(host_cpus, slice_ns, round(share, 3), run_ns, probes)
