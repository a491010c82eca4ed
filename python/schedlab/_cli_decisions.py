"""`schedlab kernel-decisions record|check`: a real kernel's wakeup decisions,
recorded with kprobes in a QEMU guest, replayed decision by decision through
the model's `select_task_rq_fair` (`_kernel_decisions.py`). Registered on
`schedlab.cli`'s app when it imports this module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .cli import JsonOpt, _cli_errors, _echo_json, _fail, _interruptible, _new_table, _out, app

decisions_app = typer.Typer(
    help="A real kernel's wakeup decisions (select_task_rq_fair), recorded with kprobes in a "
    "QEMU guest and replayed one by one through the model: the rule checked against the "
    "kernel on the kernel's own state.",
    no_args_is_help=True,
)
app.add_typer(decisions_app, name="kernel-decisions")


@decisions_app.command("record")
@_cli_errors
def record_cmd(
    qemu: Annotated[
        str,
        typer.Option(
            "--qemu",
            help="The guest: sockets=,cores=,threads=[,nodes=][,kernel=6.12] (at most 10 CPUs).",
        ),
    ],
    wl_bin: Annotated[Path, typer.Option("--wl-bin", help="The static schedlab-wl binary.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Directory for decisions.csv and the recording beside it."
        ),
    ] = Path("kernel-decisions"),
    workload: Annotated[
        str,
        typer.Option("--workload", help="The schedlab-wl spec the guest runs while probed."),
    ] = "hackbench:groups=2,fds=20,loops=100,ipc=pipe,mode=thread",
) -> None:
    """Record a workload in a QEMU guest with kprobes on select_task_rq_fair and its return:
    every CPU's load, nr_running and capacity, the waker's and wakee's loads and flips, what
    the idle search reads (pending wakeups, the idle task, the LLC's has_idle_cores and
    nr_idle_scan, the wakee's recent_used_cpu), and the CPU chosen, read through per-CPU
    pointers at the offsets of the guest kernel's BTF
    (fetched once with an extra boot). Writes OUT/decisions.csv (one row per WF_TTWU
    decision between the workload's threads) beside OUT/trace.txt, machine.toml and
    kernel.json; `schedlab kernel-decisions check OUT` replays it."""
    from . import _guest, _kernel_decisions
    from ._btf import BtfError

    shape = _guest.GuestShape.parse(qemu)
    try:
        path = _interruptible(_kernel_decisions.record, shape, wl_bin, out, workload)
    except BtfError as e:
        _fail(f"--qemu {qemu}: the guest kernel's BTF: {e}", 1)
    n = max(0, len(path.read_text().splitlines()) - 1)
    info = json.loads((out / "kernel.json").read_text())
    left_out = int(info.get("decision_probe_lines_left_out", 0))
    # kernel.json's overruns: the per-CPU buffers' "overrun: N" lines, split
    lost = [o for o in info.get("overruns", []) if o.isdigit() and o != "0"]
    _out().print(
        f"recorded {n} wakeup decisions of `{workload}` in {shape.describe()} into {path}"
        + (f"; {left_out} incomplete probe lines left out" if left_out else "")
        + ("; the trace buffer overran: some decisions are missing" if lost else "")
    )


@decisions_app.command("check")
@_cli_errors
def check_cmd(
    directory: Annotated[
        Path,
        typer.Argument(
            help="A directory from `kernel-decisions record` (decisions.csv, machine.toml, "
            "kernel.json), or a decisions.csv with --machine."
        ),
    ],
    machine: Annotated[
        Path | None,
        typer.Option(
            "--machine", "-m", help="The machine the table was recorded on (default: beside it)."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="The policy to replay under (default: the one modelling the recorded kernel, "
            "from kernel.json; else v6.12).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay a recorded table of kernel decisions through the model's record_wakee and
    select_task_rq_fair, each row's state written into a machine of the recorded topology,
    and count where the model chose the kernel's CPU: over all rows, rows with no CPU idle,
    rows with an idle CPU (where the idle search decides), and by the kernel's choice."""
    from . import _kernel_decisions

    table = directory / "decisions.csv" if directory.is_dir() else directory
    where = table.parent
    machine = machine or where / "machine.toml"
    if policy is None:
        policy = _kernel_decisions.recorded_policy(where / "kernel.json")
    report = _kernel_decisions.check(machine, table, policy)
    if json_out:
        _echo_json({"policy": policy, "table": str(table), **report})
        return
    t = _new_table(
        f"{table} · {policy}",
        "rows",
        "decisions",
        "model agrees",
        "share",
        right=("decisions", "model agrees", "share"),
    )
    for key, label in _kernel_decisions.REPORT_ROWS:
        a = report[key]
        t.add_row(label, str(a["rows"]), str(a["agree"]), _kernel_decisions.share(a))
    _out().print(t)
    if report["disagreements"]:
        listed = ", ".join(
            f"line {ln}: kernel {k}, model {m}" for ln, k, m in report["disagreements"][:5]
        )
        _out().print(f"first disagreements: {listed}")
