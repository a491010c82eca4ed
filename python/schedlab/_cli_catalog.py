"""`schedlab topo`, `policy` and `workload`: the commands that list and show
what schedlab knows (machine presets and their sched domains, policies and
sched features, workload families). Kept out of `schedlab.cli` for its
length; they are registered on its sub-apps when `schedlab.cli` imports this
module, and use its error handling and output helpers like every other
command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from . import _native
from ._native import SchedlabError, UnknownNameError
from ._resolve import list_machines, resolve_machine
from .cli import (
    JsonOpt,
    _cli_errors,
    _echo_json,
    _new_table,
    _out,
    _write_output,
    policy_app,
    topo_app,
    workload_app,
)


@topo_app.command("list")
@_cli_errors
def topo_list_cmd(json_out: JsonOpt = False) -> None:
    """List the machine presets: name, CPUs, description."""
    entries = []
    for preset in list_machines():
        try:
            shown = _native.topo_doc(preset.text, "toml", f"preset {preset.name}")
            cpus: int | None = int(shown["machine"]["nr_cpus"])
        except (SchedlabError, KeyError, TypeError, ValueError):
            cpus = None  # the core cannot build it (yet): still list it
        entries.append({"name": preset.name, "cpus": cpus, "description": preset.description})
    if json_out:
        _echo_json(entries)
        return
    table = _new_table("machine presets", "name", "CPUs", "description", right=("CPUs",))
    for e in entries:
        table.add_row(
            str(e["name"]), "?" if e["cpus"] is None else str(e["cpus"]), str(e["description"])
        )
    _out().print(table)


@topo_app.command("show")
@_cli_errors
def topo_show_cmd(
    machine: Annotated[str, typer.Argument(help="A preset name or a machine TOML file.")],
    json_out: JsonOpt = False,
) -> None:
    """Show a machine's CPUs and sched domains."""
    src = resolve_machine(machine)
    if json_out:
        _echo_json(_native.topo_doc(src.text, src.format, src.origin))
        return
    typer.echo(_native.topo_show(src.text, src.format, src.origin).rstrip("\n"))


@topo_app.command("import")
@_cli_errors
def topo_import_cmd(
    sysfs: Annotated[
        Path,
        typer.Option(
            "--sysfs",
            help="A copy of /sys: the directory holding devices/system/cpu "
            "(and devices/system/node).",
        ),
    ] = Path("/sys"),
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the TOML here instead of to stdout."),
    ] = None,
) -> None:
    """Write a machine TOML from sysfs (this machine's /sys, or a stored copy).

    Reads topology, caches, cpu_capacity, cpufreq policies, cpuidle states and
    NUMA nodes; every value is commented with the file it came from, and values
    sysfs does not give stay at the spec's defaults, marked as assumptions.
    A tree the machine spec cannot express (irregular counts or CPU numbering)
    is refused with one line saying what is irregular.
    """
    text = _native.topo_import(str(sysfs))
    if output is None:
        typer.echo(text.rstrip("\n"))
    else:
        _write_output(output, text)


@policy_app.command("list")
@_cli_errors
def policy_list_cmd(json_out: JsonOpt = False) -> None:
    """List policies, kernel profiles and sched features with their defaults and the metric
    that shows each feature acting."""
    entries = _native.policy_list()
    if json_out:
        _echo_json(entries)
        return
    table = _new_table(
        "policies, profiles and features", "name", "kind", "default", "summary", "shown by"
    )
    for e in entries:
        default = ("on" if e["default_on"] else "off") if e["kind"] == "feature" else ""
        table.add_row(
            escape(str(e["name"])),
            str(e["kind"]),
            default,
            escape(str(e["summary"])),
            escape(str(e.get("shown_by", ""))),
        )
    _out().print(table)


@policy_app.command("show")
@_cli_errors
def policy_show_cmd(
    policy: Annotated[
        str, typer.Argument(help="A policy string, e.g. v5.9+wa_idle_prev or cosmos:slice=2ms.")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Show what a policy string expands to: class, cpuset and features."""
    doc = _native.policy_show(policy)
    if json_out:
        _echo_json(doc)
        return
    out = _out()
    cls = dict(doc["class"])
    name = cls.pop("name")
    params = ", ".join(f"{k}={v}" for k, v in cls.items())
    out.print(
        f"[bold]{escape(doc['policy'])}[/bold]: base {doc['base']}, class {name}"
        + (f" ({params})" if params else "")
    )
    if doc["cpuset"]:
        out.print(f"cpuset: {doc['cpuset']}")
    changed = doc["changed_from_mainline"]
    if not doc["features_apply"]:
        out.print("sched features: not used (a peer class replaces the fair class)")
        return
    out.print("differs from mainline: " + (" ".join(changed) if changed else "nothing"))
    table = _new_table("sched features", "feature", "state", "mainline", "summary")
    for f in doc["features"]:
        table.add_row(
            f["name"],
            "on" if f["on"] else "off",
            "on" if f["mainline"] else "off",
            escape(f["summary"]),
        )
    out.print(table)


@workload_app.command("list")
@_cli_errors
def workload_list_cmd(json_out: JsonOpt = False) -> None:
    """List workload families and their parameters (unit, default, meaning)."""
    families = _native.workload_list()
    if json_out:
        _echo_json(families)
        return
    table = _new_table("workload families", "family / parameter", "default", "unit", "description")
    for fam in families:
        table.add_row(f"[bold]{escape(fam['name'])}[/bold]", "", "", escape(fam["summary"]))
        for p in fam["params"]:
            table.add_row(
                f"  {escape(p['name'])}",
                escape(str(p["default"])),
                escape(p["unit"]),
                escape(p["doc"]),
            )
    _out().print(table)


@workload_app.command("show")
@_cli_errors
def workload_show_cmd(
    name: Annotated[
        str, typer.Argument(help="Family name (see 'schedlab workload list'), or rtapp.")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Show one workload family: what it models, its structure (tasks, how they block
    and wake), the source it was modelled on, and its parameters with units and
    defaults."""
    families = _native.workload_list()
    fam = next((f for f in families if f["name"] == name), None)
    if fam is None:
        valid = ", ".join(f["name"] for f in families)
        raise UnknownNameError(f"unknown workload '{name}'; valid: {valid}")
    if json_out:
        _echo_json(fam)
        return
    out = _out()
    out.print(f"[bold]{escape(fam['name'])}[/bold]: {escape(fam['summary'])}")
    out.print(f"structure: {escape(fam['structure'])}")
    out.print(f"source: {escape(fam['source'])}")
    table = _new_table(f"{fam['name']} parameters", "parameter", "default", "unit", "description")
    for p in fam["params"]:
        row = (p["name"], str(p["default"]), p["unit"], p["doc"])
        table.add_row(*(escape(x) for x in row))
    out.print(table)
