"""schedlab: a deterministic simulator of Linux CPU-scheduler task placement.

Describe a machine and a workload, pick a policy, and get metrics::

    import schedlab
    r = schedlab.run(machine="laptop-4c8t", workload="hackbench:groups=2", policy="eevdf")
    r.metrics[r.primary]

    df = schedlab.compare("laptop-4c8t", "hackbench:groups=2", ["eevdf", "eevdf-WA_IDLE"], runs=5)
    schedlab.summarize(df)

Traces come back as pandas frames in LISA's ``df_event`` layout, for a run
(``schedlab.run(..., trace=True).events("sched_switch")``) and for a real
trace alike (``schedlab.trace.read("trace.txt").df_event("sched_switch")``).
Sweeps (machines x workloads x parameter grids x policies x seeds, written to
a resumable Parquet dataset) are in `schedlab.sweep`: ``run_sweep(spec, out)``
and ``load(out)``.

A list of workloads runs them together on one machine, e.g. a benchmark with
noise: ``workload=["hackbench:groups=1", "rt-periodic:count=4,cpus=4-7"]``.

Every error is a `SchedlabError`: `SpecError` (malformed input),
`UnknownNameError` (a name that does not exist) or `SimulationError` (a run
that failed; its subclass `RunInterrupted` when a stop was requested).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import sweep, trace
from ._compare import compare, summarize
from ._native import RunInterrupted, SchedlabError, SimulationError, SpecError, UnknownNameError
from ._resolve import list_machines
from ._result import RunResult, run

try:
    __version__ = version("schedlab")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "RunInterrupted",
    "RunResult",
    "SchedlabError",
    "SimulationError",
    "SpecError",
    "UnknownNameError",
    "__version__",
    "compare",
    "list_machines",
    "run",
    "summarize",
    "sweep",
    "trace",
]
