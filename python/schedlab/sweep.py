"""Sweeps: many runs (see `_sweep_spec` for the spec) into a Parquet dataset.

The dataset is a directory with one file per run, ``run-<id>.parquet``,
holding that run's one row. A file is written under a temporary name in the
same directory, flushed to disk and renamed, so it is either whole or absent:
a sweep killed at any moment (even by SIGKILL) leaves only whole rows, and
``resume`` skips the ids already present. `load` reads the rows back.

Runs go to a local process pool (`run_local`) or a Dask cluster
(`run_dask`); both compute the same rows, since a row depends only on the run.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._compare import _ignore_sigint, _pool_context, _stop_workers, broken_pool_message
from ._native import RunInterrupted, SimulationError, SpecError
from ._result import RunResult, run_sources
from ._sweep_spec import SweepRun, SweepSpec, load_spec

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["SweepInterrupted", "load", "load_spec", "run_sweep"]

#: Name of a finished run's file; anything else in the directory (a temporary
#: file a killed sweep left, say) is ignored by `load` and `done_ids`.
RUN_FILE = re.compile(r"^run-([0-9a-f]+)\.parquet$")
#: Columns of a row that are not metrics and not swept parameters.
SPEC_COLUMNS = ("run_id", "index", "machine", "workload", "policy", "seed")
INFO_COLUMNS = ("machine_name", "events_processed", "sim_time_ns")
#: Schema metadata keys (JSON values) for metric units, directions, primary.
META_UNITS, META_BETTER, META_PRIMARY = b"schedlab.units", b"schedlab.better", b"schedlab.primary"

#: Seconds to wait for the Dask scheduler before giving up: a scheduler
#: reached over SSH tunnels or a WAN answers within a few seconds; more
#: than this means a wrong address or a cluster that is not up.
DASK_CONNECT_TIMEOUT_S = 10.0

#: Called after each finished run with (runs done, runs in all).
Progress = Callable[[int, int], None]


class SweepInterrupted(Exception):
    """A stop request ended a sweep; the ``done`` finished runs are on disk."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"{done} of {total} runs finished")
        self.done = done
        self.total = total


def simulate(run: SweepRun) -> RunResult:
    """One run, in whichever process or Dask worker it lands (module level to pickle)."""
    return run_sources(run.machine_src, run.workload_srcs, run.policy, run.seed)


def row_table(run: SweepRun, result: RunResult, param_columns: Iterable[str]) -> pa.Table:
    """The one-row Arrow table of a run: spec columns, swept parameters (null
    where this run does not sweep one), then every metric; units, better
    directions and the primary metric in the schema metadata."""
    import pyarrow as pa

    params = dict(run.params)
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "index": run.index,
        "machine": run.machine,
        "workload": run.workload,
        "policy": run.policy,
        "seed": run.seed,
        **{c: params.get(c) for c in param_columns},
        "machine_name": result.machine,
        "events_processed": result.events_processed,
        "sim_time_ns": result.sim_time_ns,
        **result.metrics,
    }
    # Seeds are u64: typed as such, since inference would pick int64 and
    # fail above 2^63.
    columns = {
        k: pa.array([run.seed], pa.uint64()) if k == "seed" else pa.array([v])
        for k, v in row.items()
    }
    table = pa.table(columns)
    meta = {
        META_UNITS: json.dumps(result.units).encode(),
        META_BETTER: json.dumps(result.better).encode(),
        META_PRIMARY: json.dumps(result.primary).encode(),
    }
    return table.replace_schema_metadata(meta)


def write_row(out: Path, run_id: str, table: pa.Table) -> Path:
    """Writes a run's file atomically: temporary name, fsync, rename, fsync
    of the directory (so the rename itself survives a crash)."""
    import pyarrow.parquet as pq

    final = out / f"run-{run_id}.parquet"
    tmp = out / f".tmp-{run_id}-{os.getpid()}.parquet"
    with open(tmp, "wb") as f:
        pq.write_table(table, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return final


def done_ids(out: Path) -> set[str]:
    """Ids of the runs whose file is in ``out``."""
    if not out.is_dir():
        return set()
    return {m.group(1) for p in out.iterdir() if (m := RUN_FILE.match(p.name))}


def load(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The sweep dataset in ``path`` as a DataFrame: one row per run, in the
    spec's expansion order; ``df.attrs`` holds ``units``, ``better`` and
    ``primary`` (merged over the rows, for sweeps over several workloads)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(path)
    if not out.is_dir():
        raise SpecError(f"{out}: not a sweep dataset directory")
    files = sorted(p for p in out.iterdir() if RUN_FILE.match(p.name))
    tables = [pq.read_table(p) for p in files]
    units: dict[str, str] = {}
    better: dict[str, str] = {}
    primary = None
    for t in tables:
        meta = t.schema.metadata or {}
        units.update(json.loads(meta.get(META_UNITS, b"{}")))
        better.update(json.loads(meta.get(META_BETTER, b"{}")))
        primary = primary or json.loads(meta.get(META_PRIMARY, b"null"))
    if not tables:
        import pandas as pd

        return pd.DataFrame(columns=list(SPEC_COLUMNS))
    df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    df = df.sort_values("index", kind="stable").reset_index(drop=True)
    df.attrs.update({"units": units, "better": better, "primary": primary})
    return df


def _pending(spec: SweepSpec, out: Path, resume: bool) -> list[SweepRun]:
    present = done_ids(out)
    if present and not resume:
        raise SpecError(
            f"{out}: already holds {len(present)} runs; pass --resume to continue that sweep "
            "or choose another --out"
        )
    return [r for r in spec.runs if r.run_id not in present]


#: How often a pool worker checks that the sweep that started it still runs
#: (seconds): the delay before an orphaned worker exits.
PARENT_POLL_S = 0.5


def _watch_parent(pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # alive, under another user after pid reuse: keep going
            pass


def _worker_init(parent: int) -> None:
    """Pool workers leave Ctrl-C to the sweep, and exit when the sweep is gone:
    a SIGKILLed sweep cannot stop its pool, and its workers (children of the
    forkserver, not of the sweep) would otherwise wait for work forever."""
    _ignore_sigint()
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()


def run_local(
    runs: list[SweepRun], jobs: int | None, stop: Callable[[], bool]
) -> Iterator[tuple[SweepRun, RunResult]]:
    """Runs on a local process pool (``jobs`` workers, default the CPU
    count; 1 runs here), yielding each as it finishes."""
    workers = min(jobs or os.cpu_count() or 1, len(runs))
    if workers <= 1:
        for run in runs:
            if stop():
                return
            try:
                yield run, simulate(run)
            except RunInterrupted:
                return
        return
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_pool_context(),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    ) as pool:
        futures: dict[Future[RunResult], SweepRun] = {pool.submit(simulate, r): r for r in runs}
        pending = set(futures)
        try:
            while pending:
                ready, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for fut in sorted(ready, key=lambda f: futures[f].index):
                    try:
                        result = fut.result()
                    except BrokenProcessPool as e:
                        raise SimulationError(broken_pool_message(e)) from e
                    yield futures[fut], result
                if stop() and pending:
                    _stop_workers(pool)
                    return
        finally:
            for fut in pending:
                fut.cancel()


def run_dask(
    runs: list[SweepRun],
    address: str,
    stop: Callable[[], bool],
    connect_timeout_s: float = DASK_CONNECT_TIMEOUT_S,
) -> Iterator[tuple[SweepRun, RunResult]]:
    """Runs on the Dask cluster whose scheduler is at ``address``."""
    try:
        from distributed import Client
    except ImportError:
        raise SpecError(
            "--dask: dask.distributed is not installed (pip install 'schedlab[dist]')"
        ) from None
    try:
        client = Client(address, timeout=f"{connect_timeout_s}s")  # type: ignore[no-untyped-call]
    except OSError as e:
        raise SpecError(f"--dask: cannot reach the scheduler at {address}: {e}") from None
    with client:
        futures = client.map(simulate, runs, key=[f"schedlab-{r.run_id}" for r in runs])
        by_key = {f.key: r for f, r in zip(futures, runs, strict=True)}
        pending = set(futures)
        try:
            while pending:
                ready = {f for f in pending if f.done()}  # type: ignore[no-untyped-call]
                pending -= ready
                for fut in sorted(ready, key=lambda f: by_key[f.key].index):
                    yield by_key[fut.key], fut.result()
                if stop() and pending:
                    return
                if not ready:
                    # Polling keeps a stop request seen within 0.05 s.
                    time.sleep(0.05)
        finally:
            client.cancel(list(pending))  # type: ignore[no-untyped-call]


def run_sweep(
    spec: SweepSpec | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    dask: str | None = None,
    resume: bool = False,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    dask_connect_timeout_s: float = DASK_CONNECT_TIMEOUT_S,
) -> int:
    """Runs every run of ``spec`` not yet in ``out`` and writes each row as
    it finishes; returns the number of runs written. With ``resume=False``
    a directory that already holds runs is refused. Raises `SweepInterrupted`
    when ``stop()`` turns true (the finished runs stay on disk)."""
    if not isinstance(spec, SweepSpec):
        spec = load_spec(Path(spec))
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    todo = _pending(spec, target, resume)
    total = len(spec.runs)
    done = total - len(todo)
    if progress:
        progress(done, total)
    should_stop = stop or (lambda: False)
    if not todo:
        return 0
    source = (
        run_dask(todo, dask, should_stop, dask_connect_timeout_s)
        if dask
        else run_local(todo, jobs, should_stop)
    )
    written = 0
    for run, result in source:
        write_row(target, run.run_id, row_table(run, result, spec.param_columns))
        written += 1
        if progress:
            progress(done + written, total)
    if written < len(todo):
        raise SweepInterrupted(done + written, total)
    return written
