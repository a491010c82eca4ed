"""`schedlab record`, `calibrate`, `validate` and `analyze`: the commands
that face a real kernel (tracefs recordings, probes of this machine, QEMU
guests, real traces). Kept out of `schedlab.cli` for its length; they are
registered on its `app` when `schedlab.cli` imports this module, and use its
error handling, output and stop helpers like every other command.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from . import _native, cli
from ._resolve import resolve_machine
from .cli import (
    JsonOpt,
    _cli_errors,
    _echo_json,
    _err,
    _fail,
    _interruptible,
    _metrics_table,
    _new_table,
    _out,
    _stop_exit_code,
    _write_output,
    app,
)


@app.command(
    "record",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@_cli_errors
def record_cmd(
    ctx: typer.Context,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Directory for trace.txt, machine.toml and kernel.json."),
    ] = Path("record"),
    buffer_kb: Annotated[
        int,
        typer.Option(
            "--buffer-kb",
            min=64,
            help="Per-CPU trace buffer, KiB (raise it if kernel.json shows overruns).",
        ),
    ] = 16384,
    json_out: JsonOpt = False,
) -> None:
    """Run a command under the kernel's sched tracepoints (root; a tracefs instance of its own):
    `schedlab record -o DIR -- CMD ARGS...` writes DIR/trace.txt, DIR/machine.toml (this
    machine, imported from /sys), DIR/kernel.json and DIR/workload.stdout (the command's
    output, also shown), for `schedlab analyze DIR/trace.txt
    --machine DIR/machine.toml`."""
    from . import _tracefs

    argv = list(ctx.args)
    info = _tracefs.record(argv, out, buffer_kb=buffer_kb, stop_signal=lambda: cli._stop_signal)
    if info["stopped_by"]:
        _fail(
            f"interrupted by {info['stopped_by']}: the command was stopped; "
            f"the recording so far is kept in {out}",
            _stop_exit_code(),
        )
    if json_out:
        _echo_json(info)
        return
    overruns = info["overruns"]
    lost = [o for o in overruns if o != "0"] if isinstance(overruns, list) else []
    _out().print(
        f"recorded {' '.join(argv)} (exit {info['exit_status']}) into {out}/trace.txt, "
        "machine.toml, kernel.json"
        + (f"; WARNING: {len(lost)} CPUs lost events (raise --buffer-kb)" if lost else "")
    )


@app.command("calibrate")
@_cli_errors
def calibrate_cmd(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Directory for the probes' recordings and machine.toml."),
    ] = Path("calibrate"),
    chunks: Annotated[int, typer.Option("--chunks", min=50, help="Wakeups per probe.")] = 400,
    pipe_ops: Annotated[
        int,
        typer.Option("--pipe-ops", min=256, help="Pipe writes (and reads) the pipe probe times."),
    ] = 200_000,
    json_out: JsonOpt = False,
) -> None:
    """Measure this machine's wakeup and pipe syscall costs (root: two schedlab-wl probes under
    tracing, one timing pipe writes and reads, one timing writes that wake a reader on the
    same CPU) and write OUT/machine.toml: this machine imported from /sys with
    cost.context_switch_ns, cost.ipi_ns, cost.pipe_write_ns, cost.pipe_read_ns,
    cost.wakeup_ns (the local wakeup's work on the waker's CPU, beyond the write) and
    cost.ipi_send_ns (the waker's side: a timed pipe write that wakes a worker on another,
    idle CPU, less the bare write and wakeup_ns) and cost.ttwu_queue_ns (that write less the
    bare write: the waker's whole cost of a queued remote wakeup) set from the measurements,
    and the idle state's actual_exit_latency_us when a third probe (a wakeup of a busy CPU)
    separates the IPI's flight from the idle exit, and cost.refill_ns_per_kib from an untraced
    probe that times a task's footprint read right after it moves from CPU 0 to a CPU at each
    distance the machine has (SMT sibling, cluster, LLC, another LLC, another node) and after
    eviction (memory), each with a comment saying how it was measured. Needs a quiet machine."""
    from . import _calibrate

    figures = _interruptible(_calibrate.calibrate, out, chunks=chunks, pipe_ops=pipe_ops)
    if json_out:
        _echo_json(figures)
        return
    _out().print(
        f"same-CPU wakeup-to-run p50 {figures['same']['p50_ns']} ns, cross-CPU to an idle CPU p50 "
        f"{figures['split']['p50_ns']} ns, pipe write p50 {figures['pipe_write_ns']} ns, read p50 "
        f"{figures['pipe_read_ns']} ns -> context_switch_ns {figures['context_switch_ns']}, "
        f"ipi_ns {figures['ipi_ns']} (idle exit {figures['idle_exit_ns']} ns), pipe_write_ns "
        f"{figures['pipe_write_ns']}, pipe_read_ns {figures['pipe_read_ns']}"
        + (
            f", wakeup_ns {figures['wakeup_ns']} (local waking write p50 "
            f"{round(figures['wake']['wake_write']['p50_ns'])} ns)"
            if figures.get("wakeup_ns") is not None
            else ""
        )
        + (
            f", ipi_send_ns {figures['ipi_send_ns']} (waking write p50 "
            f"{round(figures['reply_write']['p50_ns'])} ns)"
            if figures.get("ipi_send_ns") is not None
            else ""
        )
        + (
            f", ttwu_queue_ns {figures['ttwu_queue_ns']}"
            if figures.get("ttwu_queue_ns") is not None
            else ""
        )
        + (
            ", refill_ns_per_kib "
            + " ".join(f"{k}={v}" for k, v in figures["refill_ns_per_kib"].items())
            if figures.get("refill_ns_per_kib")
            else ""
        )
        + f"; wrote {out / 'machine.toml'}"
    )


@app.command("validate")
@_cli_errors
def validate_cmd(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Directory for the recordings (one per case and repetition)."
        ),
    ] = Path("validate"),
    reps: Annotated[int, typer.Option("--reps", min=1, help="Real recordings per case.")] = 3,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Simulated seeds per case.")] = 3,
    scale: Annotated[
        float,
        typer.Option("--scale", min=0.001, help="Workload size factor (1 = the cases' defaults)."),
    ] = 1.0,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Also write the tables as markdown here.")
    ] = None,
    parent_wakee_flips: Annotated[
        int | None,
        typer.Option(
            "--parent-wakee-flips",
            min=0,
            max=1_000_000,
            help="One wakee_flips count every simulated task inherits (an assumption on a host "
            "without kprobes). Default: each recording's own, per thread where a guest's fork "
            "probe measured it (parent_wakee_flips=N;N;...), else 0.",
        ),
    ] = None,
    title: Annotated[
        str, typer.Option("--title", help="Heading of the --markdown section.")
    ] = "This VM",
    qemu: Annotated[
        str | None,
        typer.Option(
            "--qemu",
            help="Record inside a QEMU guest instead of this host: sockets=,cores=,threads=,nodes=,"
            "kernel=6.12|6.1,mem= (Debian's kernel package, downloaded once into "
            "~/.cache/schedlab).",
        ),
    ] = None,
    wl_bin: Annotated[
        Path | None, typer.Option("--wl-bin", help="The static schedlab-wl binary for --qemu.")
    ] = None,
    machine: Annotated[
        Path | None,
        typer.Option(
            "--machine",
            "-m",
            help="Simulate on this machine file instead of the recording's import (e.g. what "
            "`schedlab calibrate` wrote: then completion times are compared too, within 15%).",
        ),
    ] = None,
    case: Annotated[
        list[str] | None,
        typer.Option(
            "--case",
            help="Run only this case (repeatable): ping-pong, hackbench-saturated, work-queue, "
            "schbench.",
        ),
    ] = None,
    reuse: Annotated[
        bool,
        typer.Option(
            "--reuse",
            help="Analyze and simulate the recordings already in --out (trace.txt, machine.toml, "
            "kernel.json per case and repetition) instead of recording again; a case missing any "
            "of them is recorded. For a guest, whose recordings take minutes under TCG.",
        ),
    ] = False,
    calibrate: Annotated[
        bool | None,
        typer.Option(
            "--calibrate/--no-calibrate",
            help="Run `schedlab calibrate`'s three probes where the cases run (with --qemu inside "
            "the guest: one extra boot) and simulate on OUT/calibrate/machine.toml, the imported "
            "machine with the measured context switch, IPI and pipe costs, each with how it was "
            "measured; completion times are then compared too. Default: on with --qemu, because "
            "an emulated guest runs 20-60x slower than any preset machine and its own machine "
            "file exists only in OUT (skip with --no-calibrate to save the boot); off on the "
            "host, whose `schedlab calibrate` machine is made once and given with --machine. "
            "--reuse reuses the stored probe outputs too.",
        ),
    ] = None,
    noise: Annotated[
        list[str] | None,
        typer.Option(
            "--noise",
            help="A noise workload simulated beside every case (repeatable), e.g. the guest's vCPU "
            "stalls: --noise stall:interval=exp:10ms,duration=exp:6ms (each table's notes give "
            "the recordings' share of runs past slice and tick, which stalls leave).",
        ),
    ] = None,
    stalls: Annotated[
        bool,
        typer.Option(
            "--stalls/--no-stalls",
            help="With --qemu and its calibration: simulate every case beside the vCPU stalls the "
            "guest's stall probe measured (the spec is in the notes). "
            "--no-stalls simulates a machine that never stalls.",
        ),
    ] = True,
    stall_model: Annotated[
        str,
        typer.Option(
            "--stall-model",
            metavar="host|probes|independent",
            help="How a guest's measured stalls are simulated: host (vCPUs time-shared by the "
            "recording host's CPUs, the overcommit noise family, as the host's own trace of the "
            "vCPU threads during each recording measured it, kept as host.json when recording as "
            "root; else as its stall probes fit), probes (the probes' fit always) or independent "
            "(one busy-gated stall source per count of busy vCPUs, each CPU on its own).",
        ),
    ] = "host",
    suite: Annotated[
        bool,
        typer.Option(
            "--suite",
            help="The published validation in one command: this host (calibrated here first, "
            "into OUT/this-vm), then a QEMU guest of 1 socket x 2 cores x 2 threads and one of 2 "
            "sockets x 2 cores x 2 threads on 2 NUMA nodes (each calibrated inside, simulated "
            "beside its stalls), every case; needs --wl-bin and root. --markdown gets a summary "
            "and the three sections, rewritten as each topology finishes.",
        ),
    ] = False,
    decisions: Annotated[
        bool,
        typer.Option(
            "--decisions/--no-decisions",
            help="With --suite: each guest also records the saturated hackbench with kprobes on "
            "select_task_rq_fair and replays every wakeup decision through the model (`schedlab "
            "kernel-decisions`; one more boot per guest, OUT/<guest>/kernel-decisions, reused "
            "with --reuse); the summary gives the share the model decides as the kernel did.",
        ),
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """Run each validation case natively here under tracing (root) and in the simulator on
    this machine's imported description, with the policy that models this kernel; print
    real vs simulated per metric with the difference and the verdict against the targets
    (placement fractions within 5 points, migrations per wakeup within 25% or 0.01, context
    switches within 10%; completion times within 15% on a calibrated machine: --calibrate,
    the default with --qemu, or --machine from `schedlab calibrate`)."""
    from . import _validate

    cases = _validate.select_cases(case, scale) if case else None
    if suite:
        _validate_suite_cmd(
            out, reps, seeds, scale, cases, parent_wakee_flips, qemu, wl_bin, machine, reuse,
            calibrate, noise or (), stalls, markdown, title, json_out, stall_model, decisions,
        )  # fmt: skip
        return
    results = _interruptible(
        _validate.validate,
        out,
        cases=cases,
        reps=reps,
        seeds=seeds,
        scale=scale,
        parent_wakee_flips=parent_wakee_flips,
        qemu=qemu,
        wl_bin=wl_bin,
        machine_file=machine,
        reuse=reuse,
        calibrate=calibrate,
        noise=noise or (),
        stalls=stalls,
        stall_model=stall_model,
    )
    if markdown is not None:
        _write_output(markdown, _validate.markdown(results, title))
    if json_out:
        _echo_json(results)
        return
    cal = next((r["calibration"] for r in results if r.get("calibration")), None)
    if cal:
        where = str(cal["where"]).strip().rstrip(":") or "on this host"
        _out().print(
            f"calibrated {where}: context_switch_ns {cal['context_switch_ns']}, ipi_ns "
            f"{cal['ipi_ns']}, pipe_write_ns {cal['pipe_write_ns']}, pipe_read_ns "
            f"{cal['pipe_read_ns']} -> {out / 'calibrate' / 'machine.toml'}"
        )
    for r in results:
        if "skipped" in r:
            _out().print(f"{r['case']}: skipped ({r['skipped']})")
            continue
        table = _new_table(
            f"{r['case']} · real: {r['native']} · sim: {r['policy']}",
            "metric", "real", "real's range", "simulated", "sim - real", "verdict",
            right=("real", "real's range", "simulated", "sim - real"),
        )  # fmt: skip
        for row in r["rows"]:
            table.add_row(
                row["metric"],
                _validate._fmt(row["real"]),
                _validate._range(row),
                _validate._fmt(row["sim"]),
                _validate._fmt(row["diff"]),
                row["verdict"],
            )
        _out().print(table)


def _validate_suite_cmd(
    out: Path,
    reps: int,
    seeds: int,
    scale: float,
    cases: Any,
    parent_wakee_flips: int | None,
    qemu: str | None,
    wl_bin: Path | None,
    machine: Path | None,
    reuse: bool,
    calibrate: bool | None,
    noise: Sequence[str],
    stalls: bool,
    markdown: Path | None,
    title: str,
    json_out: bool,
    stall_model: str = "host",
    decisions: bool = True,
) -> None:
    """`validate --suite`: the three topologies of `_validate_suite.SUITE`."""
    from . import _validate_suite

    for given, name in ((qemu, "--qemu"), (machine, "--machine")):
        if given is not None:
            _fail(
                f"{name}: --suite chooses its topologies and machines itself; leave {name} out", 2
            )
    if calibrate is False:
        _fail("--no-calibrate: --suite calibrates every topology; leave --no-calibrate out", 2)
    if wl_bin is None:
        _fail("--wl-bin: --suite boots QEMU guests and needs the static schedlab-wl binary", 2)
    heading = title if title != "This VM" else "Validation suite: this VM and two guests"
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if not reuse and load > cpus / 2:
        _err().print(
            f"[yellow]warning:[/yellow] this host is busy (load average {load:.1f} on {cpus} "
            "CPUs): its other work stalls the guests' vCPUs and moves their figures; run the "
            "suite on a quiet host, or ahead of that work (nice -n -15)",
            soft_wrap=True,
        )

    def write(done: list[tuple[Any, list[dict[str, Any]]]]) -> None:
        if markdown is not None:
            _write_output(markdown, _validate_suite.suite_markdown(done, heading))

    sections = _interruptible(
        _validate_suite.run_suite,
        out,
        wl_bin,
        reps=reps,
        seeds=seeds,
        scale=scale,
        cases=cases,
        reuse=reuse,
        parent_wakee_flips=parent_wakee_flips,
        stalls=stalls,
        stall_model=stall_model,
        noise=noise,
        on_section=write,
        decisions=decisions,
    )
    if json_out:
        _echo_json({topo.name: results for topo, results in sections})
        return
    for topo, results in sections:
        passed, compared, misses = _validate_suite.tally(results)
        check = next((r["decisions"]["all"] for r in results if "decisions" in r), None)
        _out().print(
            f"{topo.title}: {passed} of {compared} rows pass"
            + (f"; misses: {', '.join(misses)}" if misses else "")
            + (
                f"; the model decides {check['agree']} of {check['rows']} wakeups as the kernel did"
                if check
                else ""
            )
        )


def _report_trace_problems(trace: Path, doc: Any, strict: bool) -> None:
    """Malformed lines and reversed timestamps: one warning line each on
    stderr, or with ``--strict`` the first of them is an error (exit 2)."""
    if not isinstance(doc, dict):
        return
    problems = []
    bad = int(doc.get("bad_lines") or 0)
    if bad:
        problems.append(
            f"{trace}: line {doc.get('first_bad_line')}: {bad} malformed line(s) skipped "
            f"(first at line {doc.get('first_bad_line')})"
        )
    rev = int(doc.get("reversed_lines") or 0)
    if rev:
        problems.append(
            f"{trace}: line {doc.get('first_reversed_line')}: {rev} line(s) with a timestamp "
            f"before the previous event's (first at line {doc.get('first_reversed_line')}); "
            "events were sorted by time"
        )
    if strict and problems:
        _fail(problems[0] + " (--strict)", 2)
    for p in problems:
        _err().print(f"[yellow]warning:[/yellow] {escape(p)}", soft_wrap=True)
    lost = int(doc.get("inferred_switches") or 0)
    if lost:
        # Not a malformed trace: a kernel that dropped lines (docs/validation.md).
        _err().print(
            f"note: {escape(str(trace))}: {lost} sched_switch(es) missing from the trace were "
            "recovered from the task column of later lines (the task a CPU runs)",
            soft_wrap=True,
        )


@app.command("analyze")
@_cli_errors
def analyze_cmd(
    trace: Annotated[Path, typer.Argument(help="An ftrace text file (real or simulated).")],
    json_out: JsonOpt = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Make malformed lines and out-of-order timestamps an error (exit 2) "
            "instead of a warning.",
        ),
    ] = False,
    machine: Annotated[
        str | None,
        typer.Option(
            "--machine",
            "-m",
            help="The machine the trace was taken on (preset, TOML file, or what `schedlab record` "
            "wrote): migration distances and placement fractions follow its topology.",
        ),
    ] = None,
    comm: Annotated[
        list[str] | None,
        typer.Option(
            "--comm",
            help="Count only tasks whose comm matches (shell pattern, repeatable); their "
            "first event to their last exit is the completion time.",
        ),
    ] = None,
    pid: Annotated[
        list[int] | None, typer.Option("--pid", help="Count only these pids (repeatable).")
    ] = None,
) -> None:
    """Metrics of a real or simulated ftrace text, by the same code as simulated runs:
    context switches, migrations by distance, wakeup placement fractions (previous CPU,
    SMT sibling, same LLC, other LLC, other node, waker's CPU), latencies. Times count
    from the trace's first event; with --comm/--pid the completion time runs from the
    selected tasks' first event to their last exit. Switches the kernel did not record
    are recovered from later lines' task columns (noted on stderr)."""
    text = trace.read_text(encoding="utf-8", errors="replace")
    src = resolve_machine(machine) if machine is not None else None
    mtuple = (src.text, src.format, src.origin) if src is not None else None
    doc = _native.analyze_trace(text, str(trace), mtuple, list(comm or []), list(pid or []))
    _report_trace_problems(trace, doc, strict)
    if json_out:
        _echo_json(doc)
        return
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if isinstance(metrics, list):
        rows = [
            (
                str(m["name"]),
                math.nan if m["value"] is None else float(m["value"]),
                str(m.get("unit", "")),
                str(m.get("better", "neither")),
            )
            for m in metrics
        ]
        _out().print(_metrics_table(f"analyze: {trace}", rows))
    else:
        _echo_json(doc)
