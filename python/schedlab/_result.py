"""One run: call the core, wrap its answer in a typed result."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from . import _native
from ._resolve import MachineArg, Source, WorkloadsArg, resolve_machine, resolve_workloads

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RunResult:
    """The result of one simulation run.

    ``metrics`` maps each metric's registry name (e.g. ``completion_time_s``)
    to its value; ``units`` and ``better`` (``lower``, ``higher`` or
    ``neither``) are keyed the same way, in the core's registry order. In a
    composed run, ``workload`` is the parts' specs joined by `` + ``,
    ``workloads`` lists them, and a further benchmark's workload metrics are
    named ``wN.<metric>`` (N its position in the list).
    """

    machine: str
    workload: str
    policy: str
    seed: int
    primary: str
    metrics: dict[str, float]
    units: dict[str, str]
    better: dict[str, str]
    events_processed: int
    events_handled: int
    sim_time_ns: int
    workloads: list[str] = field(default_factory=list)
    trace: str | None = field(default=None, repr=False)

    @classmethod
    def from_native(cls, out: _native.RunOutput) -> RunResult:
        """Builds a result from the `RunOutput` the native module returns.
        An absent metric (no wakeups to place, ...) is ``math.nan`` itself, so
        that two results with the same metrics compare equal."""
        return cls(
            machine=out.machine,
            workload=out.workload,
            policy=out.policy,
            seed=out.seed,
            primary=out.primary,
            metrics={m.name: math.nan if math.isnan(m.value) else m.value for m in out.metrics},
            units={m.name: m.unit for m in out.metrics},
            better={m.name: m.better for m in out.metrics},
            events_processed=out.events_processed,
            events_handled=out.events_handled,
            sim_time_ns=out.sim_time_ns,
            workloads=list(out.workloads),
            trace=out.trace,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (the trace left out), as ``--json`` prints it."""
        d = asdict(self)
        d.pop("trace")
        return d

    def events(self, event: str | None = None) -> pd.DataFrame:
        """The run's event stream as a DataFrame in LISA's ``df_event`` layout
        (index ``Time`` in seconds; ``__cpu``, ``__pid``, ``__comm``, then the
        event's fields): all events with an ``event`` column, or only
        ``event`` (``"sched_switch"``, ``"sched_wakeup"``, ...). The same
        frames `schedlab.trace.read` gives for a real trace. Needs a run with
        ``trace=True``."""
        from . import trace as _trace

        if self.trace is None:
            raise _native.SpecError("events(): this run kept no trace; run it with trace=True")
        frames = _trace.from_text(self.trace)
        return frames.df_all() if event is None else frames.df_event(event)

    def to_pandas(self) -> pd.DataFrame:
        """A one-row DataFrame: ``machine``, ``workload``, ``policy``, ``seed``,
        then one column per metric. Units, better directions and the primary
        metric are in ``df.attrs``."""
        import pandas as pd

        row: dict[str, Any] = {
            "machine": self.machine,
            "workload": self.workload,
            "policy": self.policy,
            "seed": self.seed,
        }
        row.update(self.metrics)
        df = pd.DataFrame([row])
        df.attrs.update(
            {"primary": self.primary, "units": dict(self.units), "better": dict(self.better)}
        )
        return df


#: Seeds and other u64 arguments of the core: checked here so an out-of-range
#: value is a `SpecError`, not the bindings' bare `OverflowError`.
U64_MAX = 2**64 - 1


def check_u64(name: str, value: int) -> int:
    """``value`` if it is an integer in 0..2^64-1, else a `SpecError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _native.SpecError(f"{name}: expected an integer, found {value!r}")
    if not 0 <= value <= U64_MAX:
        raise _native.SpecError(f"{name}: expected 0..{U64_MAX}, found {value}")
    return value


def run_sources(
    machine: Source,
    workload: Source | Sequence[Source],
    policy: str,
    seed: int,
    *,
    trace: bool = False,
    check_invariants: bool = False,
    max_time_ns: int = 0,
    trace_file: tuple[str, str] | None = None,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> RunResult:
    """Runs resolved sources through the core (used by `run` and by workers).
    Several workload sources run together, composed in order. With
    ``trace_file=(path, format)`` (format ``ftrace`` or ``perfetto``) the
    trace is written to ``path`` while the run goes and ``trace`` is ignored.
    ``governor`` overrides the machine's cpufreq governor, ``idle_governor``
    its idle governor."""
    first, *extra = (workload,) if isinstance(workload, Source) else tuple(workload)
    # Only a composed run passes the keyword (engines faked in tests need not know it).
    check_u64("seed", seed)
    check_u64("max_time_ns", max_time_ns)
    more: dict[str, Any] = (
        {"extra_workloads": [(w.text, w.format, w.origin) for w in extra]} if extra else {}
    )
    if governor is not None:
        more["governor"] = governor
    if idle_governor is not None:
        more["idle_governor"] = idle_governor
    if first.format != "spec":
        # A workload file's errors name its path (like the composed
        # keyword, passed only when needed: engines faked in tests omit it).
        more["workload_origin"] = first.origin
    if trace_file is not None:
        out = _native.run_to_file(
            machine.text,
            machine.format,
            machine.origin,
            first.text,
            first.format,
            policy,
            seed,
            trace_file[0],
            trace_file[1],
            check_invariants,
            max_time_ns,
            **more,
        )
        return RunResult.from_native(out)
    out = _native.run(
        machine.text,
        machine.format,
        machine.origin,
        first.text,
        first.format,
        policy,
        seed,
        trace,
        check_invariants,
        max_time_ns,
        **more,
    )
    return RunResult.from_native(out)


def run(
    machine: MachineArg,
    workload: WorkloadsArg,
    policy: str = "eevdf",
    seed: int = 0,
    trace: bool = False,
    check_invariants: bool = False,
    max_time_ns: int = 0,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> RunResult:
    """Runs one simulation.

    ``machine`` is a preset name (see ``schedlab topo list``), a path to a
    TOML file or a dict; ``workload`` a spec string such as
    ``hackbench:groups=2``, a path to a TOML file or a dict, or a list of
    these run together on the machine (``["hackbench:groups=1",
    "rt-periodic:count=4,cpus=4-7"]``); ``policy`` a
    policy string such as ``eevdf+prefer_prev_idle_core-SIS_UTIL``;
    ``governor`` (``performance``, ``powersave``, ``schedutil``, ``ondemand`` or
    ``intel_pstate``) overrides
    the machine's ``[freq_domain] governor``; ``idle_governor`` (``menu``,
    ``teo`` or ``avg_idle``) the machine's ``[cpuidle] governor``.
    Raises a subclass of `SchedlabError` on bad input or a failed run.
    """
    check_u64("seed", seed)
    check_u64("max_time_ns", max_time_ns)
    return run_sources(
        resolve_machine(machine),
        resolve_workloads(workload),
        policy,
        seed,
        trace=trace,
        check_invariants=check_invariants,
        max_time_ns=max_time_ns,
        governor=governor,
        idle_governor=idle_governor,
    )


def json_safe(obj: Any) -> Any:
    """NaN is not JSON: undefined numbers (sd of one run, % of a zero, a mean
    of no runs) become null, in any nesting of dicts, lists and tuples."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
