"""The ``schedlab`` command line (typer + rich).

Every command has ``--help`` and ``--json``. Errors are handled in one place,
`_cli_errors`: one red ``error: <message>`` line on stderr, exit status 2 for
bad input (SpecError, UnknownNameError, unreadable files, bad options) and 1
for a failed run (SimulationError); never a traceback.
"""

import functools
import json
import math
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar, cast

import typer
import typer.core
import typer.exceptions
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer._click import exceptions as click_errors

from . import _native
from ._compare import (
    better_phrase,
    fmt_num,
)
from ._guest import GuestError
from ._native import RunInterrupted, SchedlabError, SimulationError, SpecError
from ._resolve import resolve_machine, resolve_workloads
from ._result import U64_MAX, RunResult, json_safe, run_sources


# typer 0.29 vendors click as `typer._click`; its exceptions are not click's.
class _OneLineErrors(typer.core.TyperGroup):
    """Runs the CLI with click's own error printing off, so a usage error
    (bad value, unknown option, missing option) is one ``error:`` line and
    exit status 2, like every other error (see `_cli_errors`), instead of
    typer's boxed message."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except click_errors.NoArgsIsHelpError as e:
            # `schedlab topo` alone: help text, as before.
            typer.echo(e.ctx.get_help() if e.ctx else e.format_message())
            code = 2
        except click_errors.UsageError as e:
            where = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
            _print_error(e.format_message() + where)
            code = 2
        except click_errors.ClickException as e:
            _print_error(e.format_message())
            code = e.exit_code
        except typer.exceptions.Abort:
            _print_error("interrupted")
            code = 130
        else:
            code = rv if isinstance(rv, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)


app = typer.Typer(
    cls=_OneLineErrors,
    name="schedlab",
    help="Deterministic simulator of Linux CPU-scheduler task placement.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
topo_app = typer.Typer(help="Machine presets and their sched domains.", no_args_is_help=True)
policy_app = typer.Typer(help="Policies, kernel profiles and sched features.", no_args_is_help=True)
workload_app = typer.Typer(help="Workload families and their parameters.", no_args_is_help=True)
app.add_typer(topo_app, name="topo")
app.add_typer(policy_app, name="policy")
app.add_typer(workload_app, name="workload")

F = TypeVar("F", bound=Callable[..., Any])

#: The built-in demo: SEEDS.md idea 2's setting (a work queue at half the
#: hardware threads of a Threadripper 3970X, mainline vs one thread per core),
#: scaled down to 2000 chunks so it finishes in seconds.
DEMO_MACHINE = "threadripper-3970x"
DEMO_WORKLOAD = "workqueue:threads=50%,chunks=2000"
DEMO_POLICIES = ("eevdf", "pinned")
DEMO_RUNS = 3
#: The standard scenario of `schedlab bench`.
BENCH_MACHINE = "intel-4n-192"
BENCH_WORKLOAD = "schbench:runtime=2s"

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
MachineOpt = Annotated[
    str,
    typer.Option(
        "--machine", "-m", help="Machine preset name (see 'schedlab topo list') or a TOML file."
    ),
]
WorkloadOpt = Annotated[
    list[str],
    typer.Option(
        "--workload",
        "-w",
        help="Workload spec 'family:key=value,...' (see 'schedlab workload list') or a TOML file. "
        "Repeat it to run several at once (-w hackbench:groups=1 -w kworkers): the first "
        "benchmark keeps its metric names, a further one's come as wN.<metric>, noise "
        "(rt-periodic, kworkers, irq, stall) adds none.",
    ),
]


def _out() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped or captured output has no width to fit: rich would assume 80
        # columns and fold the tables; give them room instead.
        console = Console(highlight=False, width=max(console.width, 200))
    return console


def _err() -> Console:
    return Console(stderr=True, highlight=False)


def _print_error(message: str) -> None:
    line = " ".join(message.split())
    _err().print(f"[red]error:[/red] {escape(line)}", soft_wrap=True)


def _fail(message: str, code: int) -> NoReturn:
    _print_error(message)
    raise typer.Exit(code)


def _cli_errors(fn: F) -> F:
    """The one place where errors become an ``error:`` line and an exit status."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RunInterrupted as e:
            _fail(f"{_stopped_by()}: {e}; {_kept(e, 'nothing written')}", _stop_exit_code())
        except SimulationError as e:
            _fail(f"{e}; {_kept(e)}" if hasattr(e, "kept_trace") else str(e), 1)
        except SchedlabError as e:
            _fail(str(e), 2)
        except GuestError as e:  # a QEMU guest that did not boot or answer
            _fail(f"guest: {e}", 1)
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            _fail(f"{where}{e.strerror or e}", 2)

    return cast(F, wrapper)


#: The signal that asked the CLI to stop (set by `_on_stop_signal`).
_stop_signal: int | None = None


def _on_stop_signal(signum: int, _frame: Any) -> None:
    """SIGINT/SIGTERM: ask runs in progress to stop; they return within
    about a millisecond (the core checks every 4096 events) and the command
    reports what was kept."""
    global _stop_signal
    _stop_signal = signum
    _native.request_stop()


def _kept(e: BaseException, otherwise: str = "") -> str:
    kept = getattr(e, "kept_trace", None)
    return f"the trace so far is kept in {kept}, marked incomplete" if kept else otherwise


def _stopped_by() -> str:
    name = signal.Signals(_stop_signal).name if _stop_signal is not None else "a stop request"
    return f"interrupted by {name}"


def _stop_exit_code() -> int:
    """128 + the signal number, the shell's convention (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + (_stop_signal if _stop_signal is not None else signal.SIGINT)


def _install_stop_handlers() -> None:
    _native.clear_stop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_stop_signal)


def _interruptible(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Calls ``fn`` on a helper thread. The core runs with the GIL released
    but the main thread would sit inside it, and Python only runs signal
    handlers on the main thread between bytecodes; waiting in short joins
    keeps it free to take SIGINT/SIGTERM while the run goes on. With
    ``_progress=True`` and stderr a terminal, a run that takes over a second
    shows its simulated time (against its end, when known) on stderr."""
    show = bool(kwargs.pop("_progress", False)) and _err().is_terminal
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # re-raised on the main thread below
            box["error"] = e

    t = threading.Thread(target=target, name="schedlab-run", daemon=True)
    t.start()
    started = time.monotonic()
    status = None
    try:
        while t.is_alive():
            t.join(0.05)
            if show and time.monotonic() - started > 1.0:
                now_ns, end_ns = _native.run_progress()
                what = f"simulated {now_ns / 1e9:.3f} s" + (
                    f" of {end_ns / 1e9:.3f} s" if end_ns else ""
                )
                if status is None:
                    status = _err().status(what)
                    status.start()
                else:
                    status.update(what)
    finally:
        if status is not None:
            status.stop()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(json_safe(obj), indent=2))


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_output(path: Path, text: str) -> None:
    """Writes an output file (``--trace``, ``--csv``) the way a user expects.

    ``-`` is stdout. A symlink is followed and its target written (the link
    stays). A FIFO, character device or other non-regular file is written in
    place, since replacing it would break whoever reads it. A regular file is
    replaced atomically: written to a temporary file next to it and renamed
    over it, so it is never seen half written; the new file gets the old
    file's mode, or 0666 minus the umask like any other new file. Errors name
    ``path``, never the temporary file."""
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    real = Path(os.path.realpath(path))
    try:
        try:
            st: os.stat_result | None = os.stat(real)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(real, "w", encoding="utf-8") as f:
                f.write(text)
            return
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_current_umask()
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, mode)
            os.replace(tmp, real)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(path)) from e


def _new_table(title: str, *columns: str, right: Sequence[str] = ()) -> Table:
    """A rich table with these columns; those in ``right`` are right-aligned."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right" if col in right else "left")
    return table


def _progress(err: Console) -> Progress:
    """The progress bar of long commands, on stderr, only on a terminal."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )


def _metrics_table(title: str, rows: Sequence[tuple[str, float, str, str]]) -> Table:
    table = _new_table(title, "metric", "value", "unit", "better", right=("value",))
    for name, value, unit, better in rows:
        table.add_row(name, fmt_num(value), unit, better_phrase(better))
    return table


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """Deterministic simulator of Linux CPU-scheduler task placement: describe a
    machine and a workload, pick a policy, get the metrics."""


@app.command("run")
@_cli_errors
def run_cmd(
    machine: MachineOpt,
    workload: WorkloadOpt,
    policy: Annotated[
        str,
        typer.Option(
            "--policy", "-p", help="Policy string, e.g. eevdf or eevdf+prefer_prev_idle_core."
        ),
    ] = "eevdf",
    seed: Annotated[
        int, typer.Option("--seed", "-s", min=0, max=U64_MAX, help="Seed of the run.")
    ] = 0,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            help="Write the run's trace here while it runs: a Perfetto protobuf trace for a name "
            "ending in .pftrace (or .perfetto-trace), else ftrace text; - for ftrace on stdout. "
            "A failed or interrupted run keeps its trace so far, marked incomplete.",
        ),
    ] = None,
    check_invariants: Annotated[
        bool, typer.Option("--check-invariants", help="Check engine invariants (slower).")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Draw which task ran on which CPU over time into this PNG (with an ftrace "
            "--trace or none; the trace is then kept in memory).",
        ),
    ] = None,
    governor: Annotated[
        str | None,
        typer.Option(
            "--governor",
            help="cpufreq governor of every frequency domain, overriding the machine's "
            "[freq_domain] governor: performance, powersave, schedutil, ondemand (a per-CPU "
            "kworker samples the load every max(2 ticks, rate_limit_us)) or intel_pstate "
            "(intel_pstate active mode, powersave policy, no HWP: APERF/MPERF sampled every "
            "10 ms). With a governor the run reports energy_j, power_mw, freq_transitions "
            "and freq_residency.*; energy_j and power_mw are absent (null) where the machine "
            "gives no power_mw; a machine's turbo_mhz table applies only with one.",
        ),
    ] = None,
    idle_governor: Annotated[
        str | None,
        typer.Option(
            "--idle-governor",
            help="idle governor of every CPU, overriding the machine's [cpuidle] governor: "
            "menu (the kernel's default), teo, or avg_idle (schedlab's default: the deepest "
            "state fitting rq->avg_idle). The run reports idle_residency.<state>.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Run one simulation and print its metrics."""
    streamed = trace is not None and str(trace) != "-"
    if plot is not None and streamed and trace_format_of(trace) != "ftrace":  # type: ignore[arg-type]
        raise typer.BadParameter(
            "--plot reads the trace as ftrace text: give --trace a .txt name or leave it out"
        )
    if streamed:
        result = _run_streaming_trace(
            machine,
            workload,
            policy,
            seed,
            trace,  # type: ignore[arg-type]
            check_invariants,
            governor,
            idle_governor,
        )
    else:
        result = _run_keeping_trace(
            machine,
            workload,
            policy,
            seed,
            trace,
            check_invariants,
            keep=plot is not None,
            governor=governor,
            idle_governor=idle_governor,
        )
    if plot is not None:
        from . import plot as _plot
        from . import trace as _trace

        frames = _trace.read(trace) if streamed else _trace.from_text(result.trace or "")  # type: ignore[arg-type]
        title = f"{result.machine} · {result.policy} · seed {result.seed}"
        _plot.cpu_timeline(frames, plot, title=title)
    if json_out:
        _echo_json(result.to_dict())
        return
    title = f"{result.machine} · {result.workload} · {result.policy} · seed {result.seed}"
    # An absent metric (NaN: it does not apply, or the machine has no power
    # model for an energy figure) is left out of the table.
    rows = [
        (name, value, result.units[name], result.better[name])
        for name, value in result.metrics.items()
        if not math.isnan(value)
    ]
    _out().print(_metrics_table(title, rows))


def _run_keeping_trace(
    machine: str,
    workload: list[str],
    policy: str,
    seed: int,
    trace: Path | None,
    check: bool,
    keep: bool = False,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> RunResult:
    """A run whose trace (if any, or with ``keep``) comes back in memory:
    for ``--trace -`` and ``--plot``."""
    try:
        result: RunResult = _interruptible(
            run_sources,
            resolve_machine(machine),
            resolve_workloads(workload),
            policy,
            seed,
            _progress=True,
            trace=trace is not None or keep,
            check_invariants=check,
            governor=governor,
            idle_governor=idle_governor,
        )
    except SimulationError as e:
        partial = getattr(e, "partial_trace", None)
        if trace is not None and isinstance(partial, str):
            # Keep what led up to the failure, marked so nobody takes it for a full run.
            why = " ".join(str(e).split())
            marker = f"# schedlab: INCOMPLETE trace, the run did not finish: {why}\n"
            _write_output(trace, marker + partial)
            e.kept_trace = str(trace)  # type: ignore[attr-defined]
        raise
    if trace is not None:
        _write_output(trace, result.trace or "")
    return result


#: Suffixes that select a Perfetto protobuf trace; anything else is ftrace text.
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".perfetto")


def trace_format_of(path: Path) -> str:
    """``perfetto`` for a Perfetto file name, else ``ftrace``."""
    return "perfetto" if path.name.lower().endswith(PERFETTO_SUFFIXES) else "ftrace"


def _run_streaming_trace(
    machine: str,
    workload: list[str],
    policy: str,
    seed: int,
    trace: Path,
    check: bool,
    governor: str | None = None,
    idle_governor: str | None = None,
) -> RunResult:
    """A run that writes its trace to ``trace`` while it goes (memory stays
    bounded), with the output-file rules of `_write_output`: a regular file
    is written beside its target and renamed over it at the end; a FIFO or
    device is written in place; a symlink is followed. A run that fails or is
    interrupted keeps its trace so far, marked incomplete."""
    real = Path(os.path.realpath(trace))
    try:
        try:
            st: os.stat_result | None = os.stat(real)
        except FileNotFoundError:
            st = None
        direct = st is not None and not stat.S_ISREG(st.st_mode)
        if direct:
            target = str(real)
        else:
            fd, target = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.")
            os.close(fd)
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(trace)) from e
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_current_umask()

    def keep() -> None:
        if not direct:
            os.chmod(target, mode)
            os.replace(target, real)

    try:
        result: RunResult = _interruptible(
            run_sources,
            resolve_machine(machine),
            resolve_workloads(workload),
            policy,
            seed,
            _progress=True,
            check_invariants=check,
            trace_file=(target, trace_format_of(trace)),
            governor=governor,
            idle_governor=idle_governor,
        )
    except SimulationError as e:
        if not direct and os.path.getsize(target) > 0:
            keep()
            e.kept_trace = str(trace)  # type: ignore[attr-defined]
        elif not direct:
            Path(target).unlink(missing_ok=True)
        raise
    except BaseException:
        if not direct:
            Path(target).unlink(missing_ok=True)
        raise
    try:
        keep()
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(trace)) from e
    return result


@app.command("sweep")
@_cli_errors
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Sweep spec (TOML; see the README's 'Sweeps').")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Dataset directory (default: the spec's name, no .toml)."),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Local worker processes (default: CPU count)."),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option("--dask", help="Run on the Dask cluster whose scheduler is at this address."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue a sweep in --out: skip the runs it holds.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Run every machine x workload x grid x policy x seed of SPEC into a Parquet dataset
    (one file per run, written atomically; --resume skips finished runs)."""
    from . import sweep

    expanded = sweep.load_spec(spec)
    target = out if out is not None else spec.with_suffix("")
    if jobs is not None and dask is not None:
        _fail("--jobs: not used with --dask (the cluster's workers run the sweep)", 2)
    total = len(expanded.runs)
    with _progress(_err()) as bar:
        task = bar.add_task("sweep", total=total)
        try:
            written = _interruptible(
                sweep.run_sweep,
                expanded,
                target,
                jobs=jobs,
                dask=dask,
                resume=resume,
                progress=lambda done, _total: bar.update(task, completed=done),
                stop=lambda: _stop_signal is not None,
            )
        except sweep.SweepInterrupted as e:
            bar.stop()
            _fail(
                f"{_stopped_by()}: sweep stopped after {e.done} of {e.total} runs; the finished "
                f"runs are kept in {target}; rerun with --resume to continue",
                _stop_exit_code(),
            )
    if json_out:
        _echo_json({"out": str(target), "runs": total, "written": written})
        return
    _out().print(f"{written} runs written; {total} of {total} in {escape(str(target))}")


@app.command("report")
@_cli_errors
def report_cmd(
    results: Annotated[
        Path,
        typer.Argument(help="What `schedlab compare --json` or `--csv` wrote.", show_default=False),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Directory for index.html, report.md and the figures."),
    ] = Path("report"),
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="Metric to draw (repeatable; default: the primary and the usual secondaries).",
        ),
    ] = None,
    trace: Annotated[
        list[Path] | None,
        typer.Option(
            "--trace",
            help="An ftrace text trace (a run's --trace, or a real one) whose per-CPU timeline the "
            "report shows (repeatable).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Write an HTML page and a markdown summary of a comparison: per-metric bars with error
    bars per policy, the wakeup latency distribution, where wakeups were placed, a heat map of
    migrations by distance, per-CPU timelines of --trace files, and the table."""
    from . import report as _report

    for t in trace or []:
        if not t.is_file():
            raise SpecError(f"{t}: --trace: expected a trace file, got nothing there")
    runs, meta = _report.load(results)
    figures = _report.write_report(runs, meta, out, metric or None, traces=list(trace or []))
    if json_out:
        _echo_json({"out": str(out), "figures": [p.name for p in figures]})
        return
    _out().print(f"wrote {out / 'index.html'} and {out / 'report.md'} with {len(figures)} figures")


def main() -> None:
    """Entry point of the ``schedlab`` command and ``python -m schedlab``."""
    _install_stop_handlers()
    app(prog_name="schedlab")


# Commands kept in their own modules; importing them registers them on `app`.
from . import (  # noqa: E402, F401
    _cli_bench,
    _cli_catalog,
    _cli_compare,
    _cli_decisions,
    _cli_kernel,
    _cli_reproduce,
)
