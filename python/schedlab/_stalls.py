"""Runs past the slice and a tick: the footprint of a stalled CPU in a recording.

The fair class preempts a task that used up its slice while others wait at the
next tick at the latest (`update_curr` -> `update_deadline` -> `resched_curr`
from `sched_tick`), so a task that runs longer than its slice plus a tick
while other tasks wait on its CPU was not running all that time: the CPU
itself stopped, with the kernel's clock going on. A QEMU guest under TCG does
this whenever the host deschedules a vCPU thread (no steal time there), and the
guest kernel charges the stall to whichever task it was running. schedlab's
machines do not stall, so `validate` names the share of the recorded threads'
CPU time spent in such runs next to its tables (on this development VM's real
vCPUs it is 0; in the TCG guests 47-95% under saturated hackbench).

Counted: a run of a selected thread (`comm` as `analyze --comm`) that ends
while another task waits on the same CPU and that overlapped that wait for
longer than the slice plus a tick; its whole length counts. The slice is the
kernel's default for the CPU count (`sysctl_sched_base_slice`, 0.7 ms scaled
by 1 + log2 of the CPUs, at most 8), the tick 1/HZ of the machine.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import _native, trace

_EVENTS = ("sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task")
# The fields read (`trace`'s columns; NaN where an event lacks one).
_COLUMNS = [
    "line_cpu",
    "event",
    "prev_pid",
    "prev_state",
    "next_comm",
    "next_pid",
    "pid",
    "target_cpu",
    "dest_cpu",
]


def base_slice_ns(nr_cpus: int) -> int:
    """The fair class's default slice on a machine of `nr_cpus` CPUs, as the
    model sets it (`sysctl_sched_base_slice`)."""
    return _native.kernel_tunables(nr_cpus)["base_slice_ns"]


@dataclass
class LongRuns:
    """What `long_runs` found."""

    #: Share of the selected threads' CPU time in runs past the limit, 0-1.
    share: float
    #: The limit: slice plus one tick, ns.
    limit_ns: int
    #: Runs counted, and all the selected threads' runs.
    runs: int
    total_runs: int


def long_runs(text: str, comm: str, nr_cpus: int, hz: int) -> LongRuns:
    """Scans an ftrace text recording (`schedlab record`'s trace.txt) for
    runs of threads matching `comm` longer than the slice plus a tick while
    another task waited on their CPU."""
    limit = base_slice_ns(nr_cpus) + 1_000_000_000 // max(hz, 1)
    waiting_on: dict[int, int] = {}  # pid -> CPU it waits on
    waiting: dict[int, int] = {}  # CPU -> tasks waiting there
    crowded_since: dict[int, int] = {}  # CPU -> when its wait queue last became non-empty
    running: dict[int, tuple[int, int]] = {}  # CPU -> (pid, run start) of a selected thread
    selected: dict[str, bool] = {}
    long_ns = total_ns = long_count = count = 0

    def wait(pid: int, cpu: int | None, t: int) -> None:
        old = waiting_on.pop(pid, None)
        if old is not None:
            waiting[old] -= 1
            if waiting[old] == 0:
                crowded_since.pop(old, None)
        if cpu is not None:
            waiting_on[pid] = cpu
            waiting[cpu] = waiting.get(cpu, 0) + 1
            crowded_since.setdefault(cpu, t)

    rows = trace.from_text(text).df_all()
    rows = (
        rows[rows["event"].isin(_EVENTS)]
        .rename(columns={"__cpu": "line_cpu"})
        .reindex(columns=_COLUMNS)
    )
    for time_s, r in zip(rows.index, rows.itertuples(index=False), strict=True):
        cpu, t, event = int(r.line_cpu), round(time_s * 1e9), r.event
        if event == "sched_switch":
            prev, nxt = int(r.prev_pid), int(r.next_pid)
            run = running.pop(cpu, None)
            if run is not None and run[0] == prev:
                length = t - run[1]
                total_ns += length
                count += 1
                since = crowded_since.get(cpu)
                if since is not None and t - max(run[1], since) > limit:
                    long_ns += length
                    long_count += 1
            preempted = str(r.prev_state).startswith("R") and prev != 0
            wait(prev, cpu if preempted else None, t)
            wait(nxt, None, t)
            # By name, not pid: a thread starts with its parent's name and
            # takes its own later (`wl` -> `wl-hb-r0.0`).
            name = str(r.next_comm)
            if name not in selected:
                selected[name] = fnmatch.fnmatchcase(name, comm)
            if selected[name] and nxt != 0:  # never the idle task (`*` selects all others)
                running[cpu] = (nxt, t)
        elif event == "sched_migrate_task":
            if not math.isnan(r.pid) and int(r.pid) in waiting_on:
                wait(int(r.pid), int(r.dest_cpu), t)
        elif not math.isnan(r.pid):  # a wakeup
            wait(int(r.pid), int(r.target_cpu), t)
    return LongRuns(long_ns / total_ns if total_ns else 0.0, limit, long_count, count)


def note(
    found: list[LongRuns], simulated: bool = False, sim_shares: Sequence[float] = ()
) -> str | None:
    """The validate note for a case's recordings, or None when no recording
    has as much as 1% of its threads' CPU time in such runs. `simulated`:
    the case is simulated beside stalls (`stall` or `overcommit` noise);
    `sim_shares`: the same share in each recording's simulated trace."""
    shares = [f.share for f in found]
    if not shares or max(shares) < 0.01:
        return None
    pct = ", ".join(f"{100 * s:.0f}%" for s in shares)
    sim_pct = ", ".join(f"{100 * s:.0f}%" for s in sim_shares)
    limit_ms = found[0].limit_ns / 1e6
    return (
        f"the recorded threads ran past the slice and a tick ({limit_ms:.1f} ms) with others "
        f"waiting on their CPU for {pct} of their CPU time (per recording): the kernel's tick "
        "preempts them before that, so the CPU stalled with the clock running (a vCPU the host "
        "descheduled, in a TCG guest) and the kernel charged the stall to them; "
        + (
            "the simulated machine stalls too (how: below)"
            + (
                f"; the simulated tasks' traces give {sim_pct} (per recording, its seeds' mean)"
                if sim_pct
                else ""
            )
            if simulated
            else "the simulated machine does not stall"
        )
    )


def stall_notes(
    rep_stalls: Sequence[tuple[str, ...]],
    own_shares: Sequence[Sequence[tuple[int, float]]],
    fallback: Sequence[str],
    host_fits: Sequence[tuple[int, str, str]] = (),
) -> list[str]:
    """How the recordings' simulations stalled: beside the stalls each
    measured after itself (its share stalled per count of busy vCPUs), or
    the host its stall probes fit (`host_fits`, each described), or beside
    the calibration's."""
    notes = []
    if host_fits:
        per = "; ".join(f"recording {i}: `{spec}`, {how}" for i, spec, how in host_fits)
        notes.append(
            "each recording simulated on vCPUs time-shared by its host (the `overcommit` noise), "
            "measured in the host's trace of the recording where one was kept, else fitted to its "
            f"stall probes (1 s with 1 to N vCPUs spinning, right after it in its boot): {per}"
        )
    if own_shares:
        per = "; ".join(
            f"recording {i}: " + ", ".join(f"{k} busy {100 * s:.0f}%" for k, s in shares)
            for i, shares in enumerate(own_shares)
        )
        notes.append(
            "each recording simulated beside the vCPU stalls measured right after it in its "
            "boot (the stall probe for 1 s with 1 to N vCPUs spinning, one busy-gated `stall` "
            f"source per count; the share of time stalled: {per})"
        )
    if fallback and any(s == tuple(fallback) for s in rep_stalls):
        notes.append(f"simulated beside the calibration's vCPU stalls `{' '.join(fallback)}`")
    return notes
