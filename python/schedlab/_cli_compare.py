"""`schedlab compare` and `schedlab demo`: policies against each other over
several seeds, as a table of mean ± sd and the change against the first.
Kept out of `schedlab.cli` for its length; the commands are registered on
its `app` when `schedlab.cli` imports this module, and use its error
handling, output and stop helpers like every other command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from . import _native, cli
from ._compare import (
    MatrixInterrupted,
    better_phrase,
    default_metrics,
    fmt_mean_sd,
    fmt_pct,
    results_frame,
    run_matrix,
    summarize,
)
from ._resolve import Source, resolve_machine, resolve_workloads
from ._result import U64_MAX, RunResult, check_u64
from .cli import (
    DEMO_MACHINE,
    DEMO_POLICIES,
    DEMO_RUNS,
    DEMO_WORKLOAD,
    JsonOpt,
    WorkloadOpt,
    _cli_errors,
    _echo_json,
    _err,
    _fail,
    _interruptible,
    _new_table,
    _out,
    _progress,
    _stop_exit_code,
    _stopped_by,
    _write_output,
    app,
)


def _compare_table(summary: Any, policies: list[str], title: str) -> Table:
    first = policies[0]
    table = _new_table(title, "metric", "unit")
    for k, p in enumerate(policies):
        table.add_column(escape(p), justify="right")
        if k > 0:
            table.add_column(f"% vs {escape(first)}", justify="right")
    table.add_column("better")
    for metric, group in summary.groupby("metric", sort=False):
        by_policy = {row.policy: row for row in group.itertuples()}
        cells = [str(metric), str(group["unit"].iloc[0])]
        for k, p in enumerate(policies):
            row = by_policy[p]
            cells.append(fmt_mean_sd(row.mean, row.sd))
            if k > 0:
                cells.append(fmt_pct(row.pct_vs_first))
        cells.append(better_phrase(str(group["better"].iloc[0])))
        table.add_row(*cells)
    return table


#: Metrics that need a power model of every frequency domain (absent, NaN,
#: without one: the energy meter in crates/schedlab-core/src/metrics/energy.rs).
_TOTAL_ENERGY_METRICS = ("energy_j", "power_mw")


def _unpowered_core_types(doc: dict[str, Any]) -> list[str]:
    """Core types of a `topo_doc` without any power figure (every OPP's and
    idle state's power_mw 0): their power is unknown, not zero."""
    return [
        str(ct["name"])
        for ct in doc.get("core_types", [])
        if not any(o.get("power_mw") for o in ct.get("opps", []))
        and not any(s.get("power_mw") for s in ct.get("idle_states", []))
    ]


def _check_power_model(machine_src: Source, metrics: list[str] | None) -> None:
    """Refuse, before any run, to compare energy on a machine without a power
    model: its energy would be absent in every run."""
    asked = [m for m in metrics or [] if m in _TOTAL_ENERGY_METRICS]
    if not asked:
        return
    doc = _native.topo_doc(machine_src.text, machine_src.format, machine_src.origin)
    missing = _unpowered_core_types(doc)
    if missing:
        _fail(
            f"--metric {asked[0]}: machine '{doc['machine']['name']}' has no power model "
            f"(core type {', '.join(missing)}: every power_mw is 0); give its [[core_type]] "
            "opps a power_mw per OPP (and idle_states a power_mw) to measure energy",
            2,
        )


def _do_compare(
    machine: str,
    workload: list[str],
    policies: list[str],
    runs: int,
    seed: int,
    jobs: int | None,
    metrics: list[str] | None,
    json_out: bool,
    csv: Path | None,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> None:
    machine_src = resolve_machine(machine)
    workload_src = resolve_workloads(workload)
    check_u64("--seed + --runs - 1", seed + runs - 1)
    _check_power_model(machine_src, metrics)
    seeds = [seed + i for i in range(runs)]
    total = len(policies) * runs
    err = _err()
    with _progress(err) as bar:
        task = bar.add_task("runs", total=total)
        interrupted: MatrixInterrupted | None = None
        try:
            results = _interruptible(
                run_matrix,
                machine_src,
                workload_src,
                policies,
                seeds,
                jobs=jobs,
                progress=lambda done, _total: bar.update(task, completed=done),
                stop=lambda: cli._stop_signal is not None,
                governor=governor,
                idle_governor=idle_governor,
            )
        except MatrixInterrupted as e:
            interrupted, results = e, e.results
    if interrupted is not None and interrupted.done == 0:
        _fail(
            f"{_stopped_by()}: compare stopped before any run finished; nothing written",
            _stop_exit_code(),
        )
    _show_compare(results, policies, seeds, runs, metrics, json_out, csv, interrupted is None)
    if interrupted is not None:
        kept = f"{csv} and " if csv is not None else ""
        _fail(
            f"{_stopped_by()}: compare stopped after {interrupted.done} of {interrupted.total} "
            f"runs; {kept}the output above hold the {interrupted.done} finished runs",
            _stop_exit_code(),
        )


def _show_compare(
    results: list[list[RunResult]],
    policies: list[str],
    seeds: list[int],
    runs: int,
    metrics: list[str] | None,
    json_out: bool,
    csv: Path | None,
    complete: bool,
) -> None:
    # An interrupted compare shows only the policies with a finished run.
    policies = [p for p, row in zip(policies, results, strict=True) if row]
    results = [row for row in results if row]
    df = results_frame(results)
    chosen = metrics or default_metrics(df)
    summary = summarize(df, chosen)
    if csv is not None:
        _write_output(csv, df.to_csv(index=False))
    if json_out:
        _echo_json(
            {
                "machine": str(df["machine"].iloc[0]),
                "workload": str(df["workload"].iloc[0]),
                "policies": policies,
                "seeds": seeds,
                "primary": df.attrs.get("primary"),
                "summary": summary.to_dict(orient="records"),
                "runs": df.to_dict(orient="records"),
                "complete": complete,
            }
        )
        return
    title = (
        f"{df['machine'].iloc[0]} · {df['workload'].iloc[0]} · "
        f"{runs} run{'s' if runs > 1 else ''} per policy (seeds {seeds[0]}..{seeds[-1]})"
    )
    _out().print(_compare_table(summary, policies, title))


@app.command("compare")
@_cli_errors
def compare_cmd(
    machine: Annotated[
        list[str],
        typer.Option(
            "--machine",
            "-m",
            help="Machine preset name (see 'schedlab topo list') or a TOML file. One machine: "
            "for several, write a sweep spec (schedlab sweep).",
        ),
    ],
    workload: WorkloadOpt,
    policy: Annotated[
        list[str],
        typer.Option(
            "--policy", "-p", help="A policy to compare; repeat it. The first is the baseline."
        ),
    ],
    runs: Annotated[int, typer.Option("--runs", "-n", min=1, help="Runs per policy.")] = 5,
    seed: Annotated[
        int, typer.Option("--seed", "-s", min=0, max=U64_MAX, help="Base seed: run i uses seed+i.")
    ] = 0,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count)."),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="A metric to show; repeat it. Default: primary and key."),
    ] = None,
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Write every run (one row each) to this CSV.")
    ] = None,
    governor: Annotated[
        str | None,
        typer.Option(
            "--governor",
            help="cpufreq governor for every run (performance, powersave, schedutil, "
            "ondemand, intel_pstate), overriding the machine's; adds the energy metrics "
            "(--metric energy_j), which need power figures (power_mw) in the machine: "
            "without them compare stops with exit 2.",
        ),
    ] = None,
    idle_governor: Annotated[
        str | None,
        typer.Option(
            "--idle-governor",
            help="idle governor of every CPU for every run (menu, teo or avg_idle), overriding "
            "the machine's [cpuidle] governor.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare policies over several seeds: mean ± sd and % vs the first policy."""
    if len(machine) > 1:
        # Click keeps only the last of a repeated single-value option; refuse
        # instead of dropping a machine without a word.
        _fail(
            f"--machine: compare takes one machine, got {len(machine)} "
            f"({', '.join(machine)}); compare several with 'schedlab sweep' "
            "(machines = [...] in the spec)",
            2,
        )
    _do_compare(
        machine[0],
        workload,
        policy,
        runs,
        seed,
        jobs,
        metric or None,
        json_out,
        csv,
        governor,
        idle_governor,
    )


@app.command("demo")
@_cli_errors
def demo_cmd(json_out: JsonOpt = False) -> None:
    """A short comparison on a built-in scenario, to see what schedlab does."""
    _do_compare(
        DEMO_MACHINE, [DEMO_WORKLOAD], list(DEMO_POLICIES), DEMO_RUNS, 0, None, None, json_out, None
    )
    if not json_out:
        _out().print(
            f"Shown: a work queue with 32 workers (half the hardware threads) simulated on "
            f"{DEMO_MACHINE} (32 cores / 64 threads, 8 CCX), under mainline EEVDF "
            f"({DEMO_POLICIES[0]}) and confined to one thread per core ({DEMO_POLICIES[1]}), "
            f"{DEMO_RUNS} seeds each: mean ± sd per metric and the change vs the first policy "
            "(SEEDS.md idea 2). Run 'schedlab compare --help' to compare your own."
        )
