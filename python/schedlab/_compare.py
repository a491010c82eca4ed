"""Many runs (policies x seeds) and the seed-style summary: mean +- sd, % vs first.

Runs go to a local process pool; results are stored by (policy, run) index,
so the output never depends on which worker finished first.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from ._native import RunInterrupted, SimulationError, UnknownNameError
from ._resolve import MachineArg, Source, WorkloadsArg, resolve_machine, resolve_workloads
from ._result import RunResult, check_u64, run_sources

if TYPE_CHECKING:
    import pandas as pd

#: Metrics shown after the primary one when none are asked for: the ones every
#: seed idea reports or explains its result with.
DEFAULT_SECONDARY = ("wakeup_latency_p99_us", "migrations", "wasted_idle_pct")

#: Columns of `compare`'s DataFrame that are not metrics.
ID_COLUMNS = ("policy", "run", "seed", "machine", "workload", "events_processed", "sim_time_ns")

#: Called after each finished run with (runs done, runs in all).
Progress = Callable[[int, int], None]


def _run_one(
    machine: Source,
    workload: Source | Sequence[Source],
    policy: str,
    seed: int,
    check: bool,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> RunResult:
    """One run in a worker process (module level so that it pickles)."""
    return run_sources(
        machine,
        workload,
        policy,
        seed,
        check_invariants=check,
        governor=governor,
        idle_governor=idle_governor,
    )


def _pool_context() -> multiprocessing.context.BaseContext:
    # forkserver (where it exists) forks workers from a clean single-threaded
    # server, so a progress-bar thread in the parent is never forked.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class MatrixInterrupted(Exception):
    """A stop request ended `run_matrix` early; ``results`` holds the runs
    that finished (same shape as `run_matrix`'s answer, rows maybe shorter)."""

    def __init__(self, results: list[list[RunResult]], done: int, total: int) -> None:
        super().__init__(f"{done} of {total} runs finished")
        self.results = results
        self.done = done
        self.total = total


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops the pool (a
    terminal sends SIGINT to the whole process group)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    # ProcessPoolExecutor has no public way to end running tasks; terminate
    # its processes so a stop takes effect now, not after the runs in flight.
    # Queued futures are not cancelled: the pool's manager thread fails them
    # with BrokenProcessPool when it sees its workers gone, and a cancelled
    # one would make it raise InvalidStateError instead.
    for proc in list(getattr(pool, "_processes", {}).values()):
        proc.terminate()
    pool.shutdown(wait=False)


def run_matrix(
    machine: Source,
    workload: Source | Sequence[Source],
    policies: Sequence[str],
    seeds: Sequence[int],
    *,
    jobs: int | None = None,
    check_invariants: bool = False,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> list[list[RunResult]]:
    """Every policy x seed; ``out[p][i]`` is policy ``p`` with seed ``seeds[i]``.
    When ``stop()`` turns true (or an in-process run is interrupted) raises
    `MatrixInterrupted` with the runs that finished."""
    tasks = [(p, i) for p in range(len(policies)) for i in range(len(seeds))]
    out: list[list[RunResult | None]] = [[None] * len(seeds) for _ in policies]
    total = len(tasks)
    workers = min(jobs if jobs else (os.cpu_count() or 1), total)
    done = 0

    def finished() -> list[list[RunResult]]:
        return [[r for r in row if r is not None] for row in out]

    def args(p: int, i: int) -> tuple[Any, ...]:
        """`_run_one`'s arguments for policy ``p`` and seed ``i``."""
        return (machine, workload, policies[p], seeds[i], check_invariants, governor, idle_governor)

    if workers <= 1:
        for n, (p, i) in enumerate(tasks, 1):
            try:
                out[p][i] = _run_one(*args(p, i))
            except RunInterrupted:
                raise MatrixInterrupted(finished(), n - 1, total) from None
            if progress:
                progress(n, total)
            if stop and stop():
                raise MatrixInterrupted(finished(), n, total)
    else:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=_pool_context(), initializer=_ignore_sigint
        ) as pool:
            futures: dict[Future[RunResult], tuple[int, int]] = {
                pool.submit(_run_one, *args(p, i)): (p, i) for p, i in tasks
            }
            pending = set(futures)
            try:
                while pending:
                    # Short waits so a stop request is seen within ~0.1 s.
                    ready, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                    for fut in ready:
                        p, i = futures[fut]
                        out[p][i] = fut.result()
                        done += 1
                        if progress:
                            progress(done, total)
                    if stop and stop() and pending:
                        _stop_workers(pool)
                        break
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    if done < total and workers > 1:
        raise MatrixInterrupted(finished(), done, total)
    return finished()


def results_frame(results: list[list[RunResult]]) -> pd.DataFrame:
    """One row per policy x run, in policy order then run order."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    first: RunResult | None = None
    for row in results:
        for i, r in enumerate(row):
            first = first or r
            rows.append(
                {
                    "policy": r.policy,
                    "run": i,
                    "seed": r.seed,
                    "machine": r.machine,
                    "workload": r.workload,
                    "events_processed": r.events_processed,
                    "sim_time_ns": r.sim_time_ns,
                    **r.metrics,
                }
            )
    df = pd.DataFrame(rows)
    if first is not None:
        df.attrs.update(
            {"primary": first.primary, "units": dict(first.units), "better": dict(first.better)}
        )
    return df


def compare(
    machine: MachineArg,
    workload: WorkloadsArg,
    policies: Sequence[str],
    runs: int = 5,
    seed: int = 0,
    jobs: int | None = None,
    check_invariants: bool = False,
    progress: Progress | None = None,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> pd.DataFrame:
    """Runs every policy ``runs`` times (run ``i`` uses seed ``seed + i`` for
    every policy) and returns one row per policy x run. Metric units, better
    directions and the primary metric are in ``df.attrs``; `summarize` turns
    the frame into the seed-style table. ``jobs`` defaults to the CPU count;
    ``jobs=1`` runs in this process. ``governor`` overrides the machine's
    cpufreq governor for every run (energy metrics then appear),
    ``idle_governor`` its idle governor (menu, teo or avg_idle)."""
    if not policies:
        raise ValueError("compare needs at least one policy")
    if runs < 1:
        raise ValueError("runs must be at least 1")
    check_u64("seed", seed)
    check_u64("seed + runs - 1", seed + runs - 1)
    seeds = [seed + i for i in range(runs)]
    try:
        results = run_matrix(
            resolve_machine(machine),
            resolve_workloads(workload),
            list(policies),
            seeds,
            jobs=jobs,
            check_invariants=check_invariants,
            progress=progress,
            governor=governor,
            idle_governor=idle_governor,
        )
    except BrokenProcessPool as e:
        raise SimulationError(broken_pool_message(e)) from e
    return results_frame(results)


def broken_pool_message(e: BaseException) -> str:
    """What a dead process pool most often means from a script: the workers
    import ``__main__`` again, and an unguarded call there starts a pool anew."""
    return (
        f"a worker process died ({e}); a script that calls schedlab.compare or a sweep "
        "must call it under 'if __name__ == \"__main__\":' (its workers import the script)"
    )


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns of a `compare` frame, primary first."""
    units = df.attrs.get("units")
    cols = list(units) if units else [c for c in df.columns if c not in ID_COLUMNS]
    cols = [c for c in cols if c in df.columns]
    primary = df.attrs.get("primary")
    if primary in cols:
        cols.remove(primary)
        cols.insert(0, primary)
    return cols


def default_metrics(df: pd.DataFrame) -> list[str]:
    """Primary metric, then `DEFAULT_SECONDARY` where present."""
    available = metric_columns(df)
    wanted = [df.attrs.get("primary"), *DEFAULT_SECONDARY]
    chosen = [m for m in wanted if m in available]
    return list(dict.fromkeys(chosen)) or available


def summarize(df: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per metric and policy: ``n``, ``mean``, ``sd`` (sample, ddof=1; NaN for a
    single run), ``pct_vs_first`` (change of the mean relative to the first
    policy's mean, in percent; NaN for the first policy or a zero baseline),
    ``unit`` and ``better``. Rows follow ``metrics`` (default: every metric,
    primary first), then policy order of first appearance in ``df``."""
    import pandas as pd

    available = metric_columns(df)
    chosen = list(metrics) if metrics else available
    unknown = [m for m in chosen if m not in available]
    if unknown:
        raise UnknownNameError(f"unknown metric '{unknown[0]}'; valid: {', '.join(available)}")
    policies = list(dict.fromkeys(df["policy"]))
    units: dict[str, str] = df.attrs.get("units", {})
    better: dict[str, str] = df.attrs.get("better", {})
    rows: list[dict[str, Any]] = []
    for metric in chosen:
        base = math.nan
        for k, policy in enumerate(policies):
            values = df.loc[df["policy"] == policy, metric].astype(float)
            n = len(values)
            mean = float(values.mean()) if n else math.nan
            sd = float(values.std(ddof=1)) if n > 1 else math.nan
            if k == 0:
                base = mean
                pct = math.nan
            else:
                pct = (mean - base) / abs(base) * 100.0 if base else math.nan
            rows.append(
                {
                    "metric": metric,
                    "policy": policy,
                    "n": n,
                    "mean": mean,
                    "sd": sd,
                    "pct_vs_first": pct,
                    "unit": units.get(metric, ""),
                    "better": better.get(metric, "neither"),
                }
            )
    return pd.DataFrame(
        rows,
        columns=["metric", "policy", "n", "mean", "sd", "pct_vs_first", "unit", "better"],
    )


def fmt_num(x: float) -> str:
    """Four significant digits, no exponent below a million."""
    if math.isnan(x):
        return "n/a"
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.3e}"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


def fmt_mean_sd(mean: float, sd: float) -> str:
    """``mean ± sd`` (``± n/a`` for a single run): the sd with two significant
    digits, and the mean to the same decimal place (no digits the spread
    makes meaningless, none dropped that it resolves); a mean in exponent
    form keeps its own four digits."""
    # An sd at rounding-error size (identical runs whose float mean is off
    # in the last bit) is a zero spread, not twelve decimal places.
    if sd <= 1e-12 * abs(mean):
        sd = 0.0
    if math.isnan(mean) or math.isnan(sd) or sd == 0 or abs(mean) >= 1e6:
        return f"{fmt_num(mean)} ± {fmt_num(sd)}"
    # Decimal place of the sd's second significant digit.
    place = 1 - math.floor(math.log10(abs(sd)))
    if place <= 0:
        return f"{round(mean, place):.0f} ± {round(sd, place):.0f}"
    place = min(place, 12)
    return f"{mean:.{place}f} ± {sd:.{place}f}"


def fmt_pct(pct: float) -> str:
    """Signed percentage with one decimal, ``n/a`` when undefined."""
    return "n/a" if math.isnan(pct) else f"{pct:+.1f}%"


def better_phrase(better: str) -> str:
    """The words the table shows for a better direction."""
    return {"lower": "lower is better", "higher": "higher is better"}.get(better, "descriptive")
