"""Figures of a run, drawn with matplotlib (Agg, no display needed).

`cpu_timeline` draws which task ran on which CPU over time, from the
``sched_switch`` frame of a trace (simulated or real): one row per CPU, one
colour per task (idle left blank), the busiest tasks named in the legend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .trace import TraceFrames

#: Tasks named in the legend (the ones that ran longest).
LEGEND_TASKS = 12


def _intervals(
    frames: TraceFrames,
) -> tuple[dict[int, list[tuple[float, float, int]]], dict[int, str], float, float]:
    """Per CPU, ``(start, length, pid)`` of every stretch a task ran, the
    comm of each pid, and the trace's first and last timestamps."""
    sw = frames.df_event("sched_switch")
    per_cpu: dict[int, list[tuple[float, float, int]]] = {}
    comms: dict[int, str] = {}
    if sw.empty:
        return per_cpu, comms, 0.0, 0.0
    times = sw.index.to_numpy()
    t0, t1 = float(times[0]), float(times[-1])
    running: dict[int, tuple[float, int]] = {}
    for t, cpu, pid, comm in zip(times, sw["__cpu"], sw["next_pid"], sw["next_comm"], strict=True):
        cpu, pid, t = int(cpu), int(pid), float(t)
        prev = running.get(cpu)
        if prev is not None and prev[1] != 0:
            per_cpu.setdefault(cpu, []).append((prev[0], t - prev[0], prev[1]))
        running[cpu] = (t, pid)
        if pid != 0:
            comms[pid] = str(comm)  # the last name: threads rename themselves (prctl)
    for cpu, (start, pid) in running.items():
        if pid != 0 and t1 > start:
            per_cpu.setdefault(cpu, []).append((start, t1 - start, pid))
    return per_cpu, comms, t0, t1


def cpu_timeline(
    frames: TraceFrames, out: Path, title: str = "", nr_cpus: int | None = None
) -> dict[str, Any]:
    """Draw the per-CPU timeline of `frames` into the PNG `out`; returns a
    summary (CPUs drawn, stretches, tasks)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_cpu, comms, t0, t1 = _intervals(frames)
    cpus = nr_cpus if nr_cpus is not None else (max(per_cpu) + 1 if per_cpu else 1)
    busy: dict[int, float] = {}
    for rows in per_cpu.values():
        for _, length, pid in rows:
            busy[pid] = busy.get(pid, 0.0) + length
    order = sorted(busy, key=lambda p: (-busy[p], p))
    cmap = plt.get_cmap("tab20")
    colour = {pid: cmap(i % 20) for i, pid in enumerate(order)}
    height = min(max(3.2, 0.6 + 0.22 * cpus), 40.0)
    fig, ax = plt.subplots(figsize=(12, height))
    for cpu, rows in per_cpu.items():
        ax.broken_barh(
            [(s - t0, w) for s, w, _ in rows],
            (cpu - 0.4, 0.8),
            facecolors=[colour[p] for _, _, p in rows],
            linewidth=0,
        )
    ax.set_ylim(-0.6, cpus - 0.4)
    ax.set_xlim(0, max(t1 - t0, 1e-9))
    ax.invert_yaxis()
    ax.set_xlabel(f"time since the first event (s; trace from {t0:.6f} s)")
    ax.set_ylabel("CPU")
    if cpus <= 64:
        ax.set_yticks(range(cpus))
    ax.set_title(title or "which task ran where")
    handles = [
        matplotlib.patches.Patch(color=colour[p], label=f"{comms.get(p, p)}-{p}")
        for p in order[:LEGEND_TASKS]
    ]
    if handles:
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            frameon=False,
        )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return {"cpus": cpus, "stretches": sum(len(r) for r in per_cpu.values()), "tasks": len(busy)}
