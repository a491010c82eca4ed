"""`schedlab reproduce --all` and `reproduce CASE --report DIR`: the command
line around `_repro_all.run_all` and `_repro_report.write_report`.

Kept out of `schedlab.cli` (already long); it uses that module's progress
bar, stop handling and error lines, so that a stop behaves as it does for
every other command: the finished cases are printed (and written, with
``--report``), then one ``error:`` line says what stopped and what was kept,
with exit status 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import TaskID

from . import _cli_reproduce, _repro_all, _repro_report, cli
from .reproduce import Case


@dataclass(frozen=True)
class Options:
    """What to run, as the command line gave it."""

    cases: list[Case]
    runs: int | None
    scale: float
    jobs: int | None
    no_change_pct: float
    verdict: bool
    sensitivity: bool
    report: Path | None


def _run(opts: Options) -> tuple[list[_repro_all.CaseRun], _repro_all.AllInterrupted | None]:
    """Runs the cases under a progress bar: one line for all of them, one
    for the case under way (its sensitivity runs included)."""
    planned = {c.name: _repro_all.planned_runs(c, opts.runs, opts.sensitivity) for c in opts.cases}
    with cli._progress(cli._err()) as bar:
        overall = bar.add_task(
            _repro_report.count(len(opts.cases), "case"), total=sum(planned.values())
        )
        current: dict[str, TaskID] = {}

        def advance(name: str, n: int) -> None:
            if name not in current:
                for task in current.values():
                    bar.remove_task(task)
                current.clear()
                current[name] = bar.add_task(name, total=planned[name])
            bar.update(current[name], advance=n)
            bar.update(overall, advance=n)

        try:
            done = cli._interruptible(
                _repro_all.run_all,
                opts.cases,
                runs=opts.runs,
                scale=opts.scale,
                jobs=opts.jobs,
                no_change_pct=opts.no_change_pct,
                verdict=opts.verdict,
                sensitivity=opts.sensitivity,
                advance=advance,
                stop=lambda: cli._stop_signal is not None,
            )
        except _repro_all.AllInterrupted as e:
            return e.done, e
    return done, None


def _stopped(done: list[_repro_all.CaseRun], total: int) -> str:
    """What a stop kept, in words."""
    finished = sum(1 for cr in done if cr.complete)
    text = f"{finished} of {total} cases finished"
    last = done[-1] if done else None
    if last is not None and not last.complete:
        text += f", and {last.rows_done} of {len(last.case.rows)} rows of {last.case.name}"
    return text


def reproduce_many(opts: Options, sensitivity_from: list[Path], json_out: bool) -> None:
    """Runs ``opts.cases``, prints their tables (or one JSON document), and
    with ``opts.report`` writes the report; exits as the CLI does on a stop."""
    # Read before the runs: a bad file should not wait for an hour of them.
    cached = _repro_all.load_sensitivity(sensitivity_from)
    started = time.monotonic()
    done, stop = _run(opts)
    for cr in done:
        if cr.sensitivity is None and cr.case.name in cached:
            cr.sensitivity = cached[cr.case.name]
    if stop is not None and not done:
        cli._fail(
            f"{cli._stopped_by()}: reproduce stopped before any row finished; nothing written",
            cli._stop_exit_code(),
        )
    meta: dict[str, Any] = {
        "scale": opts.scale,
        "runs": opts.runs,
        "jobs": opts.jobs,
        "complete": stop is None,
        "stopped": None if stop is None else f"stopped: {_stopped(done, len(opts.cases))}",
        "wall_s": round(time.monotonic() - started, 3),
    }
    if opts.report is not None:
        # Drawing every case's figures takes a second or so each.
        err = cli._err()
        if err.is_terminal:
            with err.status(f"writing the report into {opts.report}"):
                figures = _repro_report.write_report(done, opts.report, meta)
        else:
            figures = _repro_report.write_report(done, opts.report, meta)
    if json_out:
        cli._echo_json(_repro_report.results_doc(done, meta))
    else:
        for cr in done:
            _cli_reproduce._show_reproduce(
                cr.case, cr.judged, opts.scale, opts.runs, False, cr.complete
            )
            if cr.sensitivity is not None:
                title = f"{cr.case.name}: sensitivity ({cr.sensitivity.source})"
                _cli_reproduce._show_sensitivity(
                    title, cr.sensitivity.results, cr.sensitivity.columns
                )
        if opts.report is not None:
            cli._out().print(
                f"wrote {opts.report / 'index.html'} and {opts.report / 'report.md'} with "
                f"{len(figures)} figures (PNG and SVG), and {opts.report / 'results.json'}"
            )
    if stop is not None:
        where = "the output above"
        if opts.report is not None:
            where += f" and the report in {opts.report}"
        cli._fail(
            f"{cli._stopped_by()}: reproduce stopped: {_stopped(done, len(opts.cases))}; "
            f"{where} hold what finished",
            cli._stop_exit_code(),
        )
