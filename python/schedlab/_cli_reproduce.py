"""`schedlab reproduce`: the seed experiments of SEEDS.md, one case or
several, with their verdicts and, with ``--sensitivity``, how they move when
the model's assumptions do. Kept out of `schedlab.cli` for its length; the
command is registered on its `app` when `schedlab.cli` imports this module,
and uses its error handling, output and stop helpers like every other
command (`--all` and `--report` go on in `_repro_cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from . import cli, reproduce
from .cli import (
    JsonOpt,
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
    app,
)


@app.command("reproduce")
@_cli_errors
def reproduce_cmd(
    case: Annotated[
        list[str] | None,
        typer.Argument(
            help="Case to run (see --list); several run one after the other, like --all.",
            show_default=False,
        ),
    ] = None,
    list_cases: Annotated[bool, typer.Option("--list", help="List the cases and exit.")] = False,
    runs: Annotated[
        int | None,
        typer.Option("--runs", "-n", min=1, help="Seeds per policy (default: the case's)."),
    ] = None,
    scale: Annotated[
        float,
        typer.Option("--scale", min=0.0001, help="Workload size factor (1 = the case's default)."),
    ] = 1.0,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count)."),
    ] = None,
    no_change_pct: Annotated[
        float,
        typer.Option(
            "--no-change-pct",
            min=0.0,
            help="Published changes below this percent count as 'no change'.",
        ),
    ] = reproduce.DEFAULT_NO_CHANGE_PCT,
    no_verdict: Annotated[
        bool,
        typer.Option(
            "--no-verdict",
            help=f"Figures only, no verdict: allows fewer than {reproduce.MIN_VERDICT_RUNS} runs "
            "(a verdict needs a run-to-run spread).",
        ),
    ] = False,
    sensitivity: Annotated[
        bool,
        typer.Option(
            "--sensitivity",
            help="Also run the case with each assumed machine parameter (SMT speed, IPI cost, "
            "idle exit latencies, and those the case names: scan or refill costs) moved over its "
            "plausible range, and say per row whether the verdict holds across it. With several "
            "cases, each one: 7 to 16 times their runs.",
        ),
    ] = False,
    all_cases: Annotated[
        bool, typer.Option("--all", help="Run every case, one after the other (see --list).")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Also write DIR/index.html and DIR/report.md: per case a figure of published vs "
            "simulated changes (error bars: the seeds' spread), the machine drawn, placement "
            "statistics per policy, the verdict table and, with --sensitivity or "
            "--sensitivity-from, the sensitivity table; figures as PNG and SVG, and "
            "DIR/results.json (what --json prints). On Ctrl-C the finished cases are written.",
            metavar="DIR",
        ),
    ] = None,
    sensitivity_from: Annotated[
        list[Path] | None,
        typer.Option(
            "--sensitivity-from",
            help="With --report: sensitivity tables from files 'reproduce CASE --sensitivity "
            "--json' wrote, or a report's results.json (a directory: its *.json), for the cases "
            "not run with --sensitivity now (repeatable).",
            metavar="PATH",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Run a published experiment of SEEDS.md: published vs simulated figures, with a verdict
    (at least 3 seeds per policy; --no-verdict for figures from fewer). --all runs every case;
    --report DIR writes a page and a markdown summary of what ran."""
    if all_cases and case:
        _fail(f"give cases or --all, not both (got '{' '.join(case)}' and --all)", 2)
    if sensitivity_from and report is None:
        _fail("--sensitivity-from goes into a report: add --report DIR", 2)
    if list_cases or (not case and not all_cases):
        if json_out:
            _echo_json(
                [
                    {
                        "name": c.name,
                        "seed_idea": c.seed_idea,
                        "title": c.title,
                        "machine": c.machine,
                        "policies": list(c.policies),
                    }
                    for c in reproduce.CASES.values()
                ]
            )
            return
        table = Table(title="reproduction cases (SEEDS.md)")
        for col in ("case", "idea", "machine", "policies", "what"):
            table.add_column(col)
        for c in reproduce.CASES.values():
            table.add_row(c.name, c.seed_idea, c.machine, ", ".join(c.policies), c.title)
        _out().print(table)
        return
    cases = list(reproduce.CASES.values())
    if case:
        unknown = [c for c in case if c not in reproduce.CASES]
        if unknown:
            _fail(f"unknown case '{unknown[0]}'; valid: {', '.join(reproduce.CASES)}", 2)
        cases = [reproduce.CASES[c] for c in dict.fromkeys(case)]
    for c in cases:
        n_runs = runs or c.default_runs
        if not no_verdict and n_runs < reproduce.MIN_VERDICT_RUNS:
            _fail(
                f"--runs {n_runs}: a verdict needs at least {reproduce.MIN_VERDICT_RUNS} runs per "
                "policy (one seed has no spread); add --no-verdict for figures only",
                2,
            )
    if sensitivity and no_verdict:
        _fail("--sensitivity compares verdicts: it cannot go with --no-verdict", 2)
    if len(cases) > 1 or report is not None:
        from . import _repro_cli

        _repro_cli.reproduce_many(
            _repro_cli.Options(
                cases, runs, scale, jobs, no_change_pct, not no_verdict, sensitivity, report
            ),
            sensitivity_from or [],
            json_out,
        )
        return
    chosen = cases[0]
    if sensitivity:
        _reproduce_sensitivity(chosen, runs, scale, jobs, json_out)
        return
    err = _err()
    interrupted: reproduce.CaseInterrupted | None = None
    with _progress(err) as bar:
        task = bar.add_task(chosen.name, total=None)
        try:
            judged = _interruptible(
                reproduce.run_case,
                chosen,
                runs=runs,
                scale=scale,
                jobs=jobs,
                no_change_pct=no_change_pct,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                stop=lambda: cli._stop_signal is not None,
                verdict=not no_verdict,
            )
        except reproduce.CaseInterrupted as e:
            interrupted, judged = e, e.judged
    if interrupted is not None and interrupted.rows_done == 0:
        _fail(
            f"{_stopped_by()}: reproduce stopped before any row finished; nothing written",
            _stop_exit_code(),
        )
    _show_reproduce(chosen, judged, scale, runs, json_out, interrupted is None)
    if interrupted is not None:
        _fail(
            f"{_stopped_by()}: reproduce stopped after {interrupted.rows_done} of "
            f"{interrupted.rows_total} rows; the output above holds the finished rows",
            _stop_exit_code(),
        )


def _reproduce_sensitivity(
    chosen: reproduce.Case, runs: int | None, scale: float, jobs: int | None, json_out: bool
) -> None:
    from . import _sensitivity

    try:
        results, columns = _interruptible(
            _sensitivity.run_sensitivity,
            chosen,
            runs=runs,
            scale=scale,
            jobs=jobs,
            stop=lambda: cli._stop_signal is not None,
        )
    except reproduce.CaseInterrupted:
        _fail(f"{_stopped_by()}: --sensitivity stopped; nothing written", _stop_exit_code())
    if json_out:
        _echo_json(
            {
                "case": chosen.name,
                "scale": scale,
                "knobs": [
                    {"name": k.name, "values": list(k.values), "why": k.why}
                    for k in _sensitivity.knobs_for(chosen)
                ],
                "columns": columns,
                "results": [r.to_dict() for r in results],
            }
        )
        return
    _show_sensitivity(
        f"{chosen.name}: sensitivity · {chosen.machine} · scale {scale}",
        [r.to_dict() for r in results],
        columns,
    )


def _show_sensitivity(title: str, results: list[dict[str, Any]], columns: list[str]) -> None:
    """A sensitivity table (`_sensitivity.Sensitivity.to_dict` rows)."""
    table = _new_table(title, "row", "policy", "verdict", "holds", "where it changes")
    for r in results:
        changes = "; ".join(f"{c}: {v}" for c, v in r["varied"].items() if v != r["verdict"])
        table.add_row(r["row"], r["policy"], r["verdict"], "yes" if r["holds"] else "no", changes)
    _out().print(table)
    _out().print("tried: " + ", ".join(columns))


def _show_reproduce(
    chosen: reproduce.Case,
    judged: list[reproduce.Judged],
    scale: float,
    runs: int | None,
    json_out: bool,
    complete: bool,
) -> None:
    if json_out:
        _echo_json(
            {
                "case": chosen.name,
                "scale": scale,
                "runs": runs or chosen.default_runs,
                "results": [j.to_dict() for j in judged],
                "complete": complete,
            }
        )
        return
    table = Table(title=f"{chosen.name}: {chosen.title} · {chosen.machine} · scale {scale}")
    for col in ("row", "metric", "policy", "published", "pub %", "simulated", "sim %", "verdict"):
        table.add_column(
            col, justify="right" if col in ("published", "pub %", "simulated", "sim %") else "left"
        )
    # The report's cells: the terminal and the HTML/markdown tables agree.
    from ._repro_report import verdict_rows

    for cells in verdict_rows(judged):
        table.add_row(*cells)
    _out().print(table)
    if chosen.notes:
        _out().print(chosen.notes)
