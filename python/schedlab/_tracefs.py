"""`schedlab record`: a command run under the kernel's sched tracepoints.

The recording uses a tracefs *instance* of its own
(``/sys/kernel/tracing/instances/schedlab-<pid>``), so the global buffer and
whatever else traces on the machine are untouched, and removes it afterwards.
It writes three files into the output directory:

* ``trace.txt``: the instance's ``trace`` (ftrace text, what ``schedlab
  analyze`` and ``schedlab.trace.read`` take);
* ``machine.toml``: this machine imported from ``/sys`` (``topo import``);
* ``kernel.json``: kernel release, command line, preemption model, trace
  clock, CPU count, the sched features when debugfs lets us read them, the
  events enabled, the
  per-CPU overrun counts, the command and its exit status;
* ``workload.stdout``: the command's standard output (passed through to ours
  as well), where schedlab-wl prints its own metric, as a guest recording
  keeps it.

Recording needs root and tracefs; each missing piece is a one-line error.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from . import _native
from ._kernel_profile import SCHED_TUNABLES, parse_sched_tunables, preempt_model
from ._native import SpecError

TRACEFS = Path("/sys/kernel/tracing")
#: Events recorded when the kernel has them; the sched ones are required.
SCHED_EVENTS = (
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
)
OPTIONAL_EVENTS = ("power/cpu_idle", "power/cpu_frequency")
DEFAULT_BUFFER_KB = 16384


class RecordError(SpecError):
    """Recording is not possible here (not root, no tracefs, ...)."""


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise RecordError(f"cannot write {path}: {e.strerror or e}") from e


def find_tracefs(root: Path = TRACEFS, mount: bool = True) -> Path:
    """The tracefs mount point, mounting it when it is not (as root)."""
    if (root / "instances").is_dir():
        return root
    if not mount:
        raise RecordError(f"no tracefs at {root}")
    if os.geteuid() != 0:
        raise RecordError("schedlab record needs root: tracefs and its sched events are root-only")
    done = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(root)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not (root / "instances").is_dir():
        last = (done.stderr.strip().splitlines() or ["not mounted"])[-1]
        raise RecordError(f"tracefs is not available at {root} and could not be mounted: {last}")
    return root


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _pump(stream: IO[bytes], into: list[bytes]) -> None:
    """Copies the command's output to ours, keeping it (a tee)."""
    for line in iter(stream.readline, b""):
        into.append(line)
        sys.stdout.write(line.decode(errors="replace"))
        sys.stdout.flush()


def _preempt_model(cmdline: str) -> str | None:
    """The preemption model (`_kernel_profile.preempt_model`) from debugfs,
    the command line and `/proc/config.gz`, whichever this kernel lets us
    read."""
    try:
        config = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        config = ""
    return preempt_model(cmdline, config, _read(Path("/sys/kernel/debug/sched/preempt")))


def _sched_features() -> list[str]:
    """`/sys/kernel/debug/sched/features`, when debugfs lets us read it
    (lockdown kernels do not)."""
    return _read(Path("/sys/kernel/debug/sched/features")).split()


def _sched_tunables() -> dict[str, int]:
    """The fair class's tunables that schedlab models, from
    `/sys/kernel/debug/sched/`, when debugfs lets us read them."""
    lines = (f"{t} {_read(Path('/sys/kernel/debug/sched') / t).strip()}" for t in SCHED_TUNABLES)
    return parse_sched_tunables("\n".join(lines))


def own_autogroup_nice(pid: int) -> None:
    """Gives process `pid`, which leads a session of its own, the nice value
    of this process as its autogroup's. With autogroups on
    (`/proc/sys/kernel/sched_autogroup_enabled`), a thread's nice value
    weighs it only against the threads of its own session: QEMU's vCPU
    threads under `nice -n -15 schedlab ...` got no more of the host than one
    nice-10 compiler in another session (found in a host trace of a guest
    recording, 2026-11-24: a `rustc` took 0.5-1.0 of this host's 2 CPUs
    while the guest ran hackbench). Lowering an autogroup's nice needs
    CAP_SYS_NICE; without it, or without autogroups, nothing changes."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(mine))


def record(
    argv: Sequence[str],
    out: Path,
    buffer_kb: int = DEFAULT_BUFFER_KB,
    tracefs: Path | None = None,
    sysfs: Path = Path("/sys"),
    stop_signal: Callable[[], int | None] = lambda: None,
) -> dict[str, object]:
    """Runs `argv` under the sched tracepoints; writes the three files into
    `out` and returns what ``kernel.json`` holds. When `stop_signal` returns
    a signal (the CLI's SIGINT/SIGTERM handler sets it), that signal is sent
    to the command, and what was recorded up to then is kept."""
    if not argv:
        raise RecordError(
            "schedlab record: give the command after --, e.g. schedlab record -- sleep 1"
        )
    if buffer_kb < 64:
        raise RecordError(f"--buffer-kb: expected at least 64, got {buffer_kb}")
    root = tracefs if tracefs is not None else find_tracefs()
    if not os.access(root / "instances", os.W_OK):
        raise RecordError(
            f"cannot create a tracefs instance under {root / 'instances'}: "
            "permission denied (not root?)"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RecordError(f"cannot create {out}: {e.strerror or e}") from e
    inst = root / "instances" / f"schedlab-{os.getpid()}"
    try:
        inst.mkdir()
    except OSError as e:
        raise RecordError(f"cannot create the tracefs instance {inst}: {e.strerror or e}") from e
    enabled: list[str] = []
    output: list[bytes] = []
    status: int | None = None
    stopped_by: str | None = None
    started = time.time()
    try:
        (inst / "buffer_size_kb").write_text(str(buffer_kb))
        for ev in (*SCHED_EVENTS, *OPTIONAL_EVENTS):
            ctl = inst / "events" / ev / "enable"
            if not ctl.exists():
                if ev in SCHED_EVENTS:
                    raise RecordError(f"the kernel has no {ev} tracepoint ({ctl} missing)")
                continue
            ctl.write_text("1")
            enabled.append(ev)
        (inst / "trace").write_text("")
        (inst / "tracing_on").write_text("1")
        # The command in a session (and so an autogroup) of its own, niced as
        # we are: alone in its group, as from a shell of its own, and not
        # outweighed by other sessions when run under `nice -n -N`.
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, start_new_session=True)
        own_autogroup_nice(proc.pid)
        assert proc.stdout is not None
        pump = threading.Thread(target=_pump, args=(proc.stdout, output), daemon=True)
        pump.start()
        while (status := proc.poll()) is None:
            sig = stop_signal()
            if sig is not None and stopped_by is None:
                stopped_by = signal.Signals(sig).name
                proc.send_signal(sig)
                try:
                    status = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    status = proc.wait()
                break
            time.sleep(0.02)
        (inst / "tracing_on").write_text("0")
        pump.join(timeout=5)
        # The pipe is ours to close once the tee has read it to its end.
        with contextlib.suppress(OSError):
            proc.stdout.close()
        trace = _read(inst / "trace")
        overruns = [
            ln.split(":", 1)[1].strip()
            for cpu in sorted((inst / "per_cpu").glob("cpu*"))
            for ln in _read(cpu / "stats").splitlines()
            if ln.startswith("overrun:")
        ]
        # `trace_clock` lists the clocks with the one in use in brackets.
        clocks = _read(inst / "trace_clock")
        clock = clocks[clocks.find("[") + 1 : clocks.find("]")] if "[" in clocks else clocks.strip()
    except FileNotFoundError as e:
        raise RecordError(f"the command could not start: {e.filename}: no such file") from e
    except PermissionError as e:
        raise RecordError(f"tracefs refused a write ({e.filename}): not root?") from e
    finally:
        for ev in enabled:
            with contextlib.suppress(OSError):
                (inst / "events" / ev / "enable").write_text("0")
        with contextlib.suppress(OSError):
            inst.rmdir()
    _write(out / "trace.txt", trace)
    _write(out / "workload.stdout", b"".join(output).decode(errors="replace"))
    try:
        machine = _native.topo_import(str(sysfs))
    except _native.SchedlabError as e:
        machine = f"# this machine could not be imported from {sysfs}: {e}\n"
    _write(out / "machine.toml", machine)
    info: dict[str, object] = {
        "source": "host",
        "kernel_release": platform.release(),
        "kernel_version": platform.version(),
        "cmdline": _read(Path("/proc/cmdline")).strip(),
        "preempt_model": _preempt_model(_read(Path("/proc/cmdline"))),
        "trace_clock": clock,
        "nr_cpus": os.cpu_count(),
        "sched_features": _sched_features(),
        "sched_tunables": _sched_tunables(),
        "events": enabled,
        "overruns": overruns,
        "argv": list(argv),
        "exit_status": status,
        "stopped_by": stopped_by,
        "started_unix_s": started,
        "buffer_kb": buffer_kb,
    }
    _write(out / "kernel.json", json.dumps(info, indent=2) + "\n")
    return info
