"""`schedlab calibrate`: this machine's wakeup and pipe syscall costs,
measured, written into its imported machine description.

Two probes run under `schedlab record` (root), each a manager and one worker
of ``schedlab-wl workqueue`` with 200 us chunks:

* ``pin=split`` (manager on one CPU, worker on another): every wakeup goes to
  a CPU that is idle. From ``sched_waking`` on the waker's CPU to the wakee's
  ``sched_switch`` in on its own: the IPI's flight, the idle exit and the
  switch. The model charges the same path as ``ipi_ns`` + the idle state's
  exit latency + ``context_switch_ns``.
* ``pin=same`` (both on one CPU): from ``sched_waking`` to the wakee's switch
  in on the same CPU, the waker finishes its write, enters its read, blocks
  and the CPU switches. The model charges the workload's ``read`` cost (the
  work queue's default 1 us) + ``context_switch_ns``. Its
  ``sched_waking``-to-``sched_wakeup`` on the waker's CPU is the waker's
  ``try_to_wake_up`` (the enqueue and the preemption check) in situ, shown
  beside ``wakeup_ns`` (the mean between the 10th and 90th percentiles).

Two probes need no tracing. ``schedlab-wl wakecost`` times single 4-byte
pipe writes that wake a ``SCHED_IDLE`` reader blocked on the writer's own
CPU: a local wakeup, with no IPI and no preemption (a normal task's wakeup
of an idle-policy one never preempts), so the median minus one clock read
and ``pipe_write_ns`` is ``wakeup_ns``, the rest of ``try_to_wake_up`` the
engine charges the waker (enqueue, the preemption check; a pinned wakee
skips ``select_task_rq_fair``, whose cost the engine prices apart). Its
writer sleeps before each timed write; in a TCG guest that write costs
several times the in-situ ``try_to_wake_up`` (27.6 us against 8 us in the
4-vCPU guest; suspected: the vCPU thread woken on its host first, cold), so
the comment also gives the in-situ figure. And
``schedlab-wl pipecost`` times batches of
4-byte pipe writes and reads on one thread and its own pipe, so that no write
wakes anyone and no read waits. The medians over batches of the mean time per
call are ``pipe_write_ns`` and ``pipe_read_ns``, the CPU work the pipe-based
workload families charge per write and read when theirs are ``auto`` (the
engine prices the wakeups on top).

The split probe's manager also times each reply ``write()``, which wakes the
worker blocked on the other, idle CPU (``reply_write_ns`` in its output): the
waker's side of a cross-CPU wakeup, in situ: the write, ``try_to_wake_up``
and the IPI it sends. So ``ipi_send_ns`` = its median - ``pipe_write_ns`` -
``wakeup_ns`` (measured by ``wakecost``; the machine's value when probe
outputs predate it): what the engine charges a CPU per IPI it sends (the wake
list's, a remote ``resched_curr``'s). On this VM that send is a VM exit.
Probe outputs made before the timing existed (a guest's older
``schedlab-wl``) leave ``ipi_send_ns`` at the machine's value.

A fourth probe, ``pin=busy`` (on this host; a guest's older binary has no
such mode), is ``split`` with a ``SCHED_IDLE`` spinner on the worker's CPU:
every wakeup reaches a running CPU, which the wakee preempts at once, so its
median wakeup-to-run is the IPI's flight and the switch, with no idle exit.
With it, ``ipi_ns`` = median(busy) - ``context_switch_ns``, and what the
wakeup of an idle CPU takes beyond that is the idle state's real exit: it
is written as that state's ``actual_exit_latency_us`` (the delay the engine
charges; the governors keep reading the driver's declared
``exit_latency_us``). On this VM the driver declares 1 us for its halt, and
a halted vCPU takes about 20 us to run again. Without the busy probe (or
without an idle state to carry it) ``ipi_ns`` takes the whole remainder, as
below.

So ``context_switch_ns`` = median(same-CPU hand-over) - ``pipe_read_ns`` (the
read the model charges there; the work queue's read is the machine's), and
``ipi_ns`` = median(cross-CPU wakeup of an idle CPU) - ``context_switch_ns`` -
the exit latency of the idle state the model's governor picks for a 200 us
idle period. Each value is written with how it was measured; nothing else of
the machine changes.

The cache refill probe (``schedlab-wl refillcost``, `_calibrate_refill`) runs
untraced on this host for each distance the machine has from CPU 0 and sets
``refill_ns_per_kib`` (guests under TCG do not run it: their caches are the
emulator's host's).

The probes' outputs are stored in one directory layout (`WAKEUP_PROBES`)
wherever they ran, and `costs_from_probes` is the only arithmetic: on this
host `calibrate` runs them; inside a QEMU guest `_guest_calibrate.calibrate_in_guest`
runs the same three in one boot (for `schedlab validate --qemu`), and the
guest's imported machine gets its own costs, each comment saying which guest
measured it.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import _calibrate_refill, _native, _tracefs
from .trace import parse

PROBE = "workqueue:threads=1,chunks={chunks},chunk=200us,pin={pin}"
#: The syscall probe: 4-byte writes and reads (the pipe family's token), in
#: batches of 256 (1 KiB in the pipe at most).
PIPE_PROBE = "pipecost:count={count},size=4,batch=256"
#: The local wakeup probe: timed writes that wake a SCHED_IDLE reader blocked
#: on the writer's CPU (no IPI, no preemption), for ``wakeup_ns``.
WAKE_PROBE = "wakecost:count={count}"
#: The probe's idle period (its chunk), for picking the idle state.
IDLE_PERIOD_US = 200


def wake_to_run_ns(
    trace_lines: list[str], comm: str, same_cpu: bool, busy: bool = False
) -> list[int]:
    """For each ``sched_waking`` of a task whose comm starts with `comm`, the
    time until that task's next ``sched_switch`` in: on the waker's CPU when
    `same_cpu`, else on another CPU that was idle (its last switch was to the
    idle task), or with `busy` on another CPU that ran a task."""
    frames = parse(trace_lines)
    rows: list[tuple[float, str, int, dict[str, Any]]] = []
    for name in ("sched_waking", "sched_switch"):
        df = frames.df_event(name)
        for t, r in zip(df.index, df.to_dict("records"), strict=True):
            rows.append((float(t), name, int(r["__cpu"]), r))
    rows.sort(key=lambda x: x[0])
    idle: dict[int, bool] = {}
    pending: dict[int, tuple[float, int]] = {}
    out: list[int] = []
    for t, name, cpu, r in rows:
        if name == "sched_waking":
            if str(r.get("comm", "")).startswith(comm):
                pending[int(r["pid"])] = (t, cpu)
            continue
        nxt = int(r["next_pid"])
        was_idle = idle.get(cpu, False)
        idle[cpu] = nxt == 0
        w = pending.pop(nxt, None)
        if w is None:
            continue
        t_w, waker_cpu = w
        other = not same_cpu and cpu != waker_cpu
        # The switch's previous task: a task (the busy probe's spinner) or idle.
        preempted = int(r.get("prev_pid", 0) or 0) != 0
        if (
            (same_cpu and cpu == waker_cpu)
            or (other and not busy and was_idle)
            or (other and busy and preempted)
        ):
            out.append(round((t - t_w) * 1e9))
    return out


def ttwu_in_situ_ns(trace_lines: list[str], comm: str) -> list[int]:
    """For each ``sched_waking`` of a task whose comm starts with `comm`
    that is followed by its ``sched_wakeup`` on the waker's own CPU, the time
    between the two: ``try_to_wake_up``'s enqueue and preemption check, as
    the waker ran them inside the probe (``sched_wakeup`` is emitted after
    ``wakeup_preempt``)."""
    frames = parse(trace_lines)
    rows: list[tuple[float, str, int, int]] = []
    for name in ("sched_waking", "sched_wakeup"):
        df = frames.df_event(name)
        for t, r in zip(df.index, df.to_dict("records"), strict=True):
            if str(r.get("comm", "")).startswith(comm):
                rows.append((float(t), name, int(r["__cpu"]), int(r["pid"])))
    rows.sort(key=lambda x: x[0])
    waking: dict[int, tuple[float, int]] = {}
    out: list[int] = []
    for t, name, cpu, pid in rows:
        if name == "sched_waking":
            waking[pid] = (t, cpu)
            continue
        w = waking.pop(pid, None)
        if w is not None and w[1] == cpu:
            out.append(round((t - w[0]) * 1e9))
    return out


def trimmed_mean_ns(values: list[int]) -> int:
    """The mean of `values` between their 10th and 90th percentiles (the
    trace clock's microsecond steps average out; outliers, an interrupt
    inside a wakeup, do not weigh); 0 for none."""
    v = sorted(values)
    if not v:
        return 0
    lo, hi = len(v) // 10, len(v) - len(v) // 10
    mid = v[lo:hi] or v
    return round(sum(mid) / len(mid))


_STATE_LINE = re.compile(
    r'^(\s*\{\s*name\s*=\s*"([^"]*)",\s*exit_latency_us\s*=\s*(\d+),\s*'
    r"target_residency_us\s*=\s*(\d+))(.*?)(\s*\},?\s*)$"
)


def _probe_state_line(machine_toml: str) -> int | None:
    """Line index of the idle state the probe's 200 us idle periods use: the
    deepest CPU state whose target residency fits them (menu's choice once
    the probe's regular periods make its typical interval; no timer is
    armed), in the one-state-per-line form `topo import` writes; None when
    the machine lists none that way."""
    best, best_res = None, -1
    for i, line in enumerate(machine_toml.splitlines()):
        m = _STATE_LINE.match(line)
        if m and "level" not in m.group(5):
            res = int(m.group(4))
            if res <= IDLE_PERIOD_US and res > best_res:
                best, best_res = i, res
    return best


def _set_actual_exit(machine_toml: str, line: int, exit_ns: int, comment: str) -> str:
    """`machine_toml` with idle-state line `line` given ``actual_exit_latency_us``
    (replacing an earlier one) and a comment line above it."""
    lines = machine_toml.splitlines()
    if line > 0 and lines[line - 1].lstrip().startswith("# schedlab calibrate:"):
        del lines[line - 1]
        line -= 1
    m = _STATE_LINE.match(lines[line])
    assert m is not None, lines[line]
    rest = re.sub(r",\s*actual_exit_latency_us\s*=\s*\d+", "", m.group(5))
    us = round(exit_ns / 1000)
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
    lines[line] = f"{m.group(1)}{rest}, actual_exit_latency_us = {us}{m.group(6)}"
    lines.insert(line, f"{indent}# {comment}")
    return "\n".join(lines) + "\n"


#: The line `topo import` writes where sysfs cannot give a core type's
#: SMT speed (the spec's default then: 60 with SMT, 100 without).
_SMT_ASSUMPTION = "# Assumption: smt_speed_pct is not in sysfs; the spec's default."


def _tcg_smt_speed(machine_toml: str, tag: str) -> str:
    """A TCG guest's machine with ``smt_speed_pct = 100`` where `topo
    import` assumed the spec's default. The guest's SMT siblings are two of
    the emulator's threads on the host and share no core: one does not slow
    the other while both run. What they contend for is the host's CPUs,
    which `validate` simulates as the `overcommit` host."""
    out = []
    for line in machine_toml.splitlines():
        if line.strip() != _SMT_ASSUMPTION:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += [
            f"{indent}# {tag} the guest's SMT siblings are separate threads of QEMU's TCG on the "
            "host, sharing no core (their contention for the host's CPUs is the overcommit "
            "host validate simulates): 100, not the spec's default of 60",
            f"{indent}smt_speed_pct = 100",
        ]
    return "\n".join(out) + "\n"


def _idle_exit_ns(machine_toml: str) -> int:
    """Declared exit latency of the idle state the probe's 200 us idle
    periods use (`_probe_state_line`), ns; 0 without one."""
    line = _probe_state_line(machine_toml)
    if line is None:
        return 0
    m = _STATE_LINE.match(machine_toml.splitlines()[line])
    return int(m.group(3)) * 1000 if m else 0


def _set_cost(machine_toml: str, values: dict[str, tuple[int | str, str]]) -> str:
    """`machine_toml` with `[cost]` keys set (added under the table, with a
    comment each), replacing earlier values of the same keys."""
    lines = [
        ln for ln in machine_toml.splitlines() if not re.match(rf"\s*({'|'.join(values)})\s*=", ln)
    ]
    block = []
    for key, (v, how) in values.items():
        block += [f"# {how}", f"{key} = {v}"]
    if "[cost]" not in lines:
        lines += ["", "[cost]"]
    i = lines.index("[cost]") + 1
    return "\n".join(lines[:i] + block + lines[i:]) + "\n"


def pipe_costs(count: int, wl: Sequence[str] = ("schedlab-wl",)) -> dict[str, Any]:
    """Runs the pipe syscall probe (`wl` is the schedlab-wl command); its
    JSON (``write`` and ``read``, each with ``p10_ns``, ``p50_ns``,
    ``p90_ns`` and ``batches``)."""
    return run_probe([*wl, PIPE_PROBE.format(count=count)], "pipe")


def wake_costs(count: int, wl: Sequence[str] = ("schedlab-wl",)) -> dict[str, Any]:
    """Runs the local wakeup probe; its JSON (``wake_write`` with ``p10_ns``,
    ``p50_ns``, ``p90_ns``; ``clock_ns``, ``count``, ``skipped``)."""
    return run_probe([*wl, WAKE_PROBE.format(count=count)], "wakeup")


def run_probe(argv: list[str], what: str) -> dict[str, Any]:
    wl = argv[:1]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    except FileNotFoundError as e:
        raise _native.SimulationError(
            f"calibrate: '{wl[0]}' not found (it comes with schedlab)"
        ) from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        raise _native.SimulationError(
            f"calibrate: the {what} probe failed (exit {done.returncode}): {last}"
        )
    doc: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return doc


#: The stored probe outputs a calibration directory holds (host or guest):
#: ``probe-pipe.json`` (the pipe probe's JSON; a guest recording directory
#: ``probe-pipe/`` with it as the last line of ``workload.stdout`` is read too)
#: and one recording per wakeup probe (``probe-split/``, ``probe-same/``: its
#: ``trace.txt``; ``probe-split/machine.toml`` is the machine the costs go into).
WAKEUP_PROBES = (("split", False), ("same", True))
#: The optional probe of a wakeup reaching a running CPU (``probe-busy/``),
#: run by `calibrate` on a host.
BUSY_PROBE = "busy"
#: Fewest usable wakeups a probe must give for its median to be taken.
MIN_WAKEUPS = 20


def read_pipe_probe(d: Path) -> dict[str, Any] | None:
    """The pipe probe's JSON stored in calibration directory `d`, or None."""
    f = d / "probe-pipe.json"
    if f.is_file():
        doc: dict[str, Any] = json.loads(f.read_text())
        return doc
    stdout = d / "probe-pipe" / "workload.stdout"
    if stdout.is_file():
        for line in reversed(stdout.read_text(errors="replace").splitlines()):
            if line.startswith("{"):
                got: dict[str, Any] = json.loads(line)
                return got
    return None


def read_wake_probe(d: Path) -> dict[str, Any] | None:
    """The local wakeup probe's JSON stored in `d` (``probe-wake.json``), or
    None when it was not run (probe outputs of a schedlab-wl without it)."""
    f = d / "probe-wake.json"
    if not f.is_file():
        return None
    try:
        doc: dict[str, Any] = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise _native.SpecError(f"{f}: line {e.lineno}: not JSON ({e.msg})") from e
    return doc


def _stall_probe(f: Path) -> tuple[int, float, int, float, int] | None:
    """One stall probe's figures stored in `f`: gaps, gaps per CPU-second,
    mean gap (ns), stalled fraction and threshold (ns); None without it."""
    if not f.is_file():
        return None
    try:
        doc: dict[str, Any] = json.loads(f.read_text())
        return (
            int(doc["gaps"]),
            float(doc["per_s"]),
            int(doc["mean_ns"]),
            float(doc.get("stalled_fraction", 0)),
            int(doc.get("threshold_ns", 0)),
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise _native.SpecError(f"{f}: not the stall probe's JSON ({e})") from e


def _stall_probe_files(d: Path) -> list[tuple[int, Path]]:
    """The per-count stall probes stored in `d` (``probe-stalls-K.json``),
    by K."""
    files = d.glob("probe-stalls-*.json")
    counts = ((f.name[len("probe-stalls-") : -len(".json")], f) for f in files)
    return sorted((int(k), f) for k, f in counts if k.isdigit())


def stall_shares(d: Path) -> list[tuple[int, float]]:
    """(busy vCPUs, stalled fraction) of each per-count stall probe stored
    in `d` (``probe-stalls-K.json``), by K."""
    return [(k, got[3]) for k, f in _stall_probe_files(d) if (got := _stall_probe(f)) is not None]


def stall_noise(d: Path) -> tuple[list[str], str] | None:
    """The `stall` noise specs the stall probes stored in `d` and how they
    were measured, or None without a probe or with no gap. Stalls start
    every 1/rate (exponential, as independent preemptions by the host are)
    and last the gaps' mean (exponential).

    A guest's calibration stores ``probe-stalls-K.json`` for K = 1 to N
    vCPUs spinning: one source per K, acting only while K CPUs run tasks
    (`busy=K`), since a host stalls a busy vCPU more the more of them are
    busy and a halted one is idle, not stalled. An older calibration's
    ``probe-stalls.json`` (every vCPU spinning) gives one source that
    always acts."""
    found = _stall_probe_files(d)
    if not found and (d / "probe-stalls.json").is_file():
        found = [(0, d / "probe-stalls.json")]
    specs: list[str] = []
    parts: list[str] = []
    threshold_ns = 0
    for k, f in found:
        got = _stall_probe(f)
        if got is None:
            continue
        gaps, per_s, mean_ns, fraction, threshold_ns = got
        busy = f"{k} busy: " if k else ""
        parts.append(
            f"{busy}{gaps} gaps ({per_s:.0f} per CPU-second, mean {mean_ns / 1e6:.1f} ms, "
            f"{100 * fraction:.0f}% of the time)"
        )
        if gaps == 0 or per_s <= 0:
            continue
        interval_us = max(1, round(1e6 / per_s))
        mean_us = max(1, round(mean_ns / 1e3))
        gate = f"busy={k}," if k else ""
        specs.append(f"stall:{gate}interval=exp:{interval_us}us,duration=exp:{mean_us}us")
    if not specs:
        return None
    spinning = (
        "1 to N vCPUs spinning (taskset), gated on as many busy CPUs"
        if found[0][0]
        else "a spinning thread on every vCPU"
    )
    how = f"gaps over {threshold_ns / 1e3:.0f} us in the clocks of {spinning}: " + "; ".join(parts)
    return specs, how


def read_reply_writes(d: Path) -> dict[str, Any] | None:
    """The split probe's timed reply writes (``reply_write_ns``: p10, p50,
    p90, n) stored in calibration directory `d`, or None when its program
    did not time them."""
    stdout = d / "probe-split" / "workload.stdout"
    if not stdout.is_file():
        return None
    for line in reversed(stdout.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                got = json.loads(line).get("reply_write_ns")
            except json.JSONDecodeError:
                return None
            return got if isinstance(got, dict) and got.get("n") else None
    return None


def probes_stored(d: Path) -> bool:
    """Whether `d` holds every probe's output (so nothing needs running)."""
    return (
        read_pipe_probe(d) is not None
        and (d / "probe-split" / "machine.toml").is_file()
        and all((d / f"probe-{pin}" / "trace.txt").is_file() for pin, _ in WAKEUP_PROBES)
    )


def _where(d: Path) -> str:
    """Where the probes ran, from the split probe's kernel.json: a guest's
    shape and kernel, or nothing for this host."""
    f = d / "probe-split" / "kernel.json"
    try:
        info = json.loads(f.read_text()) if f.is_file() else {}
    except json.JSONDecodeError as e:
        raise _native.SpecError(f"{f}: line {e.lineno}: not JSON ({e.msg})") from e
    if not isinstance(info, dict) or info.get("source") != "qemu":
        return ""
    sh = info.get("shape") or {}
    numa = f", {sh.get('nodes')} nodes" if int(sh.get("nodes", 1)) > 1 else ""
    return (
        f" inside a QEMU guest (TCG; {sh.get('sockets')}s x {sh.get('cores')}c x "
        f"{sh.get('threads')}t{numa}, kernel {info.get('kernel_release', '?')}):"
    )


def costs_from_probes(d: Path) -> dict[str, Any]:
    """The costs from the probe outputs stored in `d` (see `WAKEUP_PROBES`),
    measured on this host by `calibrate` or inside a guest by
    `_guest_calibrate.calibrate_in_guest`: writes `d/machine.toml` (the split probe's
    machine with the costs set, each with how it was measured) and returns
    the figures."""
    pipe = read_pipe_probe(d)
    if pipe is None:
        raise _native.SpecError(
            f"{d}/probe-pipe.json: calibrate: the pipe probe's output is missing"
        )
    write_ns = round(pipe["write"]["p50_ns"])
    read_ns = round(pipe["read"]["p50_ns"])
    figures: dict[str, Any] = {"pipe": pipe, "pipe_write_ns": write_ns, "pipe_read_ns": read_ns}
    same_lines: list[str] = []
    for pin, same in WAKEUP_PROBES:
        rec = d / f"probe-{pin}"
        lines = (rec / "trace.txt").read_text(errors="replace").splitlines()
        if same:
            same_lines = lines
        lat = wake_to_run_ns(lines, "wl-wq", same)
        if len(lat) < MIN_WAKEUPS:
            why = " (the other CPU was busy: calibrate needs a quiet machine)" if not same else ""
            raise _native.SimulationError(
                f"calibrate: only {len(lat)} usable wakeups in the {pin} probe ({rec}){why}"
            )
        figures[pin] = {
            "n": len(lat),
            "p50_ns": int(statistics.median(lat)),
            "p90_ns": int(statistics.quantiles(lat, n=10)[-1]),
        }
    busy_trace = d / f"probe-{BUSY_PROBE}" / "trace.txt"
    if busy_trace.is_file():
        lat = wake_to_run_ns(
            busy_trace.read_text(errors="replace").splitlines(), "wl-wq", False, busy=True
        )
        if len(lat) >= MIN_WAKEUPS:
            figures[BUSY_PROBE] = {
                "n": len(lat),
                "p50_ns": int(statistics.median(lat)),
                "p90_ns": int(statistics.quantiles(lat, n=10)[-1]),
            }
    machine = (d / "probe-split" / "machine.toml").read_text()
    exit_ns = _idle_exit_ns(machine)
    cs = max(0, figures["same"]["p50_ns"] - read_ns)
    where = _where(d)
    tag = f"schedlab calibrate:{where}"
    if where:
        machine = _tcg_smt_speed(machine, tag)
    state_line = _probe_state_line(machine)
    split_p50 = figures["split"]["p50_ns"]
    actual_exit: int | None = None
    if BUSY_PROBE in figures and state_line is not None:
        # The flight to a running CPU; the rest of an idle CPU's wakeup is
        # its idle state's real exit.
        busy_p50 = figures[BUSY_PROBE]["p50_ns"]
        ipi = max(0, busy_p50 - cs)
        actual_exit = max(0, split_p50 - cs - ipi)
        ipi_how = (
            f"{tag} median cross-CPU wakeup-to-run of a busy CPU {busy_p50} ns "
            f"(n={figures[BUSY_PROBE]['n']}, the wakee preempting a SCHED_IDLE spinner) minus "
            "context_switch_ns"
        )
        machine = _set_actual_exit(
            machine,
            state_line,
            actual_exit,
            f"{tag} median cross-CPU wakeup-to-run of this idle CPU {split_p50} ns "
            f"(n={figures['split']['n']}) minus ipi_ns and context_switch_ns: this state's "
            f"real exit (declared {exit_ns // 1000} us, which the governors keep reading)",
        )
    else:
        ipi = max(0, split_p50 - cs - exit_ns)
        ipi_how = (
            f"{tag} median cross-CPU wakeup-to-run of an idle CPU "
            f"{split_p50} ns (n={figures['split']['n']}) minus "
            f"context_switch_ns and the {exit_ns} ns idle exit"
        )
    figures.update(
        {
            "context_switch_ns": cs,
            "ipi_ns": ipi,
            "idle_exit_ns": exit_ns,
            "actual_exit_ns": actual_exit,
            "where": where,
        }
    )
    costs: dict[str, tuple[int | str, str]] = {}
    refill = _calibrate_refill.read_refill_probes(d)
    figures["refill"] = refill or None
    figures["refill_ns_per_kib"] = None
    if refill:
        values, how = _calibrate_refill.refill_costs(refill, tag)
        figures["refill_ns_per_kib"] = values
        costs["refill_ns_per_kib"] = (_calibrate_refill.inline_table(values), how)
    wake = read_wake_probe(d)
    figures["wake"] = wake
    figures["wakeup_ns"] = None
    wakeup = int(_native.topo_doc(machine, "toml", "probe machine")["cost"]["wakeup_ns"])
    wakeup_how = f"the machine's wakeup_ns ({wakeup} ns, not measured)"
    in_situ = ttwu_in_situ_ns(same_lines, "wl-wq")
    figures["ttwu_in_situ"] = None
    situ = ""
    if len(in_situ) >= MIN_WAKEUPS:
        # The waker's try_to_wake_up as the same-CPU probe's manager ran it
        # (sched_waking to sched_wakeup on its CPU), shown beside wakeup_ns:
        # in a TCG guest the wake probe's write, after its writer slept,
        # costs several times more (suspected: its vCPU thread woken on its
        # host first, cold).
        mean = trimmed_mean_ns(in_situ)
        figures["ttwu_in_situ"] = {"n": len(in_situ), "mean_ns": mean}
        situ = (
            f"; in situ, sched_waking to sched_wakeup on the waker's CPU in the same-CPU probe: "
            f"{mean} ns (mean of the 10th-90th percentile, n={len(in_situ)})"
        )
    if wake is not None:
        ww = wake["wake_write"]
        wakeup = max(0, round(ww["p50_ns"]) - round(wake["clock_ns"]) - write_ns)
        figures["wakeup_ns"] = wakeup
        wakeup_how = f"wakeup_ns ({wakeup} ns, measured)"
        costs["wakeup_ns"] = (
            wakeup,
            f"{tag} median write() that wakes a SCHED_IDLE reader blocked on the same CPU "
            f"{round(ww['p50_ns'])} ns (n={wake['count']}; p10 {round(ww['p10_ns'])}, p90 "
            f"{round(ww['p90_ns'])} ns; schedlab-wl wakecost: no IPI, no preemption) minus one "
            f"clock read ({round(wake['clock_ns'])} ns) and pipe_write_ns{situ}",
        )
    replies = read_reply_writes(d)
    figures["reply_write"] = replies
    figures["ipi_send_ns"] = None
    figures["ttwu_queue_ns"] = None
    if replies is not None:
        reply = (
            f"{tag} median reply write() that wakes a worker blocked on another, idle CPU "
            f"{round(replies['p50_ns'])} ns (n={replies['n']}; p10 {round(replies['p10_ns'])}, "
            f"p90 {round(replies['p90_ns'])} ns)"
        )
        send = max(0, round(replies["p50_ns"]) - write_ns - wakeup)
        figures["ipi_send_ns"] = send
        costs["ipi_send_ns"] = (send, f"{reply} minus pipe_write_ns and {wakeup_how}")
        if figures["wakeup_ns"] is not None:
            # With the local wakeup measured too, the queued remote wakeup is
            # priced as measured: the engine would otherwise charge its waker
            # wakeup_ns + ipi_send_ns, which is the local wakeup's enqueue
            # plus the send; where the local one costs more than the whole
            # remote write (TCG guests) that overcharges the waker.
            queued = max(0, round(replies["p50_ns"]) - write_ns)
            figures["ttwu_queue_ns"] = queued
            costs["ttwu_queue_ns"] = (
                queued,
                f"{reply} minus pipe_write_ns: the waker's whole cost of a wakeup queued "
                "on another CPU's wake list (select_task_rq, the list add, the IPI)",
            )
    machine = _set_cost(
        machine,
        costs
        | {
            "context_switch_ns": (
                cs,
                f"{tag} median same-CPU wakeup-to-run {figures['same']['p50_ns']} ns "
                f"(n={figures['same']['n']}) minus the measured pipe read ({read_ns} ns)",
            ),
            "ipi_ns": (ipi, ipi_how),
            "pipe_write_ns": (
                write_ns,
                f"{tag} median over {pipe['write']['batches']} batches of 256 "
                f"4-byte pipe writes on one thread, nobody woken (schedlab-wl pipecost; p10 "
                f"{pipe['write']['p10_ns']:.0f}, p90 {pipe['write']['p90_ns']:.0f} ns)",
            ),
            "pipe_read_ns": (
                read_ns,
                f"{tag} median over {pipe['read']['batches']} batches of 256 "
                f"4-byte pipe reads that find their data (schedlab-wl pipecost; p10 "
                f"{pipe['read']['p10_ns']:.0f}, p90 {pipe['read']['p90_ns']:.0f} ns)",
            ),
        },
    )
    (d / "machine.toml").write_text(machine)
    _native.topo_show(machine, "toml", str(d / "machine.toml"))  # it must still load
    return figures


def calibrate(
    out: Path,
    chunks: int = 400,
    pipe_ops: int = 200_000,
    reuse: bool = False,
    wake_ops: int = 2_000,
) -> dict[str, Any]:
    """Runs the probes on this host into `out` (with `reuse`, only those whose
    outputs `out` does not hold already); writes `out/machine.toml`
    (this machine, imported, with the measured costs) and returns the
    figures."""
    out.mkdir(parents=True, exist_ok=True)
    if not (reuse and probes_stored(out)):
        pipe = pipe_costs(pipe_ops)
        (out / "probe-pipe.json").write_text(json.dumps(pipe, indent=2) + "\n")
        wake = wake_costs(wake_ops)
        (out / "probe-wake.json").write_text(json.dumps(wake, indent=2) + "\n")
        for pin in (*(p for p, _ in WAKEUP_PROBES), BUSY_PROBE):
            rec = out / f"probe-{pin}"
            info = _tracefs.record(["schedlab-wl", PROBE.format(chunks=chunks, pin=pin)], rec)
            if info.get("exit_status") != 0:
                raise _native.SimulationError(
                    f"calibrate: the {pin} probe failed (exit {info.get('exit_status')})"
                )
    if not (reuse and _calibrate_refill.refill_stored(out)):
        # Also on --reuse of probes stored before the refill probe existed.
        machine = (out / "probe-split" / "machine.toml").read_text()
        _calibrate_refill.run_refill_probes(machine, out)
    return costs_from_probes(out)
