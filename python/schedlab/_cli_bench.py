"""`schedlab bench`: the engine's speed on the standard scenario, and with
`--scale` on built machines of 8 to 1024 CPUs. Kept out of `schedlab.cli`
for its length; registered on its app when `schedlab.cli` imports this
module.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any

import typer

from . import _native
from ._resolve import resolve_machine, resolve_workload
from ._result import RunResult
from .cli import (
    BENCH_MACHINE,
    BENCH_WORKLOAD,
    JsonOpt,
    _cli_errors,
    _echo_json,
    _new_table,
    _out,
    app,
)


@app.command("bench")
@_cli_errors
def bench_cmd(
    json_out: JsonOpt = False,
    scale: Annotated[
        bool,
        typer.Option(
            "--scale",
            help="Instead, run full-load schbench on machines of 8, 64, 192, 512 and 1024 CPUs "
            "(packages of 32 cores x 2 threads, one LLC each; 2 s down to 200 ms simulated, "
            "about the same events each) and print handled events/s and simulated time per "
            "wall time for each size: for the whole run, and for the run alone (a run twice as "
            "long less this one, which leaves out building the machine and its tasks' forks).",
        ),
    ] = False,
) -> None:
    """Time the engine on the standard scenario (schbench, 2 simulated s, intel-4n-192),
    or with --scale on machines of 8 to 1024 CPUs. Counts handled events; stale
    ones (popped and dropped) apart."""
    if scale:
        _bench_scale(json_out)
        return
    machine = resolve_machine(BENCH_MACHINE)
    workload = resolve_workload(BENCH_WORKLOAD)
    t0 = time.perf_counter()
    out = _native.run(
        machine.text, machine.format, machine.origin, workload.text, workload.format, "eevdf", 0
    )
    wall_s = time.perf_counter() - t0
    result = RunResult.from_native(out)
    doc = _bench_row(result, wall_s)
    if json_out:
        _echo_json(doc)
        return
    table = _new_table(
        f"bench: {result.machine} · {result.workload} · eevdf · seed 0",
        "measure",
        "value",
        right=("value",),
    )
    table.add_row("events handled", f"{result.events_handled:,}")
    table.add_row("stale events (popped, dropped)", f"{doc['stale_events']:,}")
    table.add_row("wall time", f"{wall_s:.3f} s")
    table.add_row("handled events per second", f"{doc['handled_events_per_s']:,.0f}")
    table.add_row("simulated time / wall time", f"{doc['sim_per_wall']:.3f}")
    _out().print(table)


def _bench_row(result: RunResult, wall_s: float) -> dict[str, Any]:
    sim_s = result.sim_time_ns / 1e9
    return {
        "machine": result.machine,
        "workload": result.workload,
        "events_processed": result.events_processed,
        "handled_events": result.events_handled,
        "stale_events": result.events_processed - result.events_handled,
        "wall_s": wall_s,
        "handled_events_per_s": result.events_handled / wall_s if wall_s > 0 else math.nan,
        "sim_time_s": sim_s,
        "sim_per_wall": sim_s / wall_s if wall_s > 0 else math.nan,
    }


def _bench_scale(json_out: bool) -> None:
    from . import _bench_scale as bs

    def timed(cpus: int, times: int, tries: int = 1) -> tuple[RunResult, float]:
        """The run and its shortest wall time over `tries` identical runs."""
        best = math.inf
        for _ in range(tries):
            t0 = time.perf_counter()
            origin = f"bench --scale {cpus}"
            spec = bs.workload(cpus, times)
            out = _native.run(bs.machine_toml(cpus), "toml", origin, spec, "spec", "eevdf", 0)
            best = min(best, time.perf_counter() - t0)
        return RunResult.from_native(out), best

    rows = []
    for cpus in bs.SIZES:
        result, wall_s = timed(cpus, 1)
        row: dict[str, Any] = {"cpus": cpus, **_bench_row(result, wall_s)}
        # The run alone: what a run twice as long adds, so building the
        # machine (domains, runqueues, forking every task through the slow
        # path) is left out, as in benchmarks/engine_cost.py's marginal count.
        # A difference of wall times doubles their noise: the shortest of
        # three runs of each length.
        _, short_wall_s = timed(cpus, 1, tries=2)
        wall_s_best = min(wall_s, short_wall_s)
        longer, longer_wall_s = timed(cpus, 2, tries=3)
        d_wall = longer_wall_s - wall_s_best
        d_events = longer.events_handled - result.events_handled
        d_sim_s = (longer.sim_time_ns - result.sim_time_ns) / 1e9
        # The longer run should take at least a quarter more than the short
        # one (half, without building costs); less is noise (the small
        # machines' runs last milliseconds): no figure (NaN, shown as -).
        clear = d_wall > 0.25 * longer_wall_s
        row["run_handled_events_per_s"] = d_events / d_wall if clear else math.nan
        row["run_sim_per_wall"] = d_sim_s / d_wall if clear else math.nan
        rows.append(row)
    if json_out:
        _echo_json(rows)
        return
    columns = (
        "cpus",
        "handled events",
        "stale",
        "wall s",
        "handled events/s",
        "simulated / wall",
        "run alone: events/s",
        "run alone: simulated / wall",
    )
    table = _new_table("bench --scale: full-load schbench, eevdf, seed 0", *columns, right=columns)

    def alone(x: float, fmt: str) -> str:
        return "-" if math.isnan(x) else format(x, fmt)

    for r in rows:
        table.add_row(
            str(r["cpus"]),
            f"{r['handled_events']:,}",
            f"{r['stale_events']:,}",
            f"{r['wall_s']:.2f}",
            f"{r['handled_events_per_s']:,.0f}",
            f"{r['sim_per_wall']:.3f}",
            alone(r["run_handled_events_per_s"], ",.0f"),
            alone(r["run_sim_per_wall"], ".3f"),
        )
    _out().print(table)
