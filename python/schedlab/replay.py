"""Trace replay: a workload rebuilt from a real (or simulated) trace.

``-w replay:trace=FILE[,comm=REGEX]`` reads an ftrace text trace (``schedlab
record``, ``/sys/kernel/tracing/trace``, ``trace-cmd report``) or ``perf
script`` output and turns every task (or those whose comm matches REGEX) into
a user program (see the README, "User programs"), in the order things
happened:

- the time a task ran between blocking points becomes ``compute`` of that
  many nanoseconds (taken as work on a full-capacity CPU at its top
  frequency: replay on a different machine scales it by that machine's
  speed);
- a ``sched_waking`` of a replayed task by another replayed task becomes
  ``unpark`` in the waker, at that point of its run, and ``park`` in the
  wakee (a futex-like edge: a wake that comes early is kept);
- a wakeup from anywhere else (a timer, an interrupt, an untraced process)
  becomes ``sleep`` for as long as the task was blocked;
- a task forked during the trace starts then (``start``); its priority gives
  its nice value or, below 100, SCHED_FIFO priority 99 - prio.

Not in a scheduler trace, so not replayed: whether a wakeup was WF_SYNC,
affinity masks, and what a task waited on beyond who woke it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import trace as _trace
from ._native import SpecError

__all__ = ["program_from_trace"]


@dataclass
class _Task:
    pid: int
    comm: str
    prio: int = 120
    start_ns: int | None = None
    ops: list[str] = field(default_factory=list)
    run_since: int | None = None
    pending_ns: int = 0
    blocked_at: int | None = None
    dead: bool = False

    def flush(self, now: int) -> None:
        """Turn the time run up to ``now`` into a compute op."""
        if self.run_since is not None:
            self.pending_ns += now - self.run_since
            self.run_since = now
        if self.pending_ns > 0:
            self.ops.append(f'{{ compute = "{self.pending_ns}ns" }}')
            self.pending_ns = 0


def _events(path: Path) -> Iterator[tuple[int, int, str, dict[str, str]]]:
    """(time ns, running pid, event, fields as written) of each event line of
    the trace, in file order, as `schedlab.trace` reads them (ftrace,
    trace-cmd report, perf script)."""
    frames = _trace.read(path)
    rows: list[tuple[int, int, int, str, dict[str, str]]] = []
    for name in frames.events:
        cols = frames.arrow(name).to_pydict()
        keys = [k for k in cols if not k.startswith("__") and k != "Time"]
        for i, line in enumerate(cols["__line"]):
            fields = {k: str(cols[k][i]) for k in keys if cols[k][i] is not None}
            rows.append((line, round(cols["Time"][i] * 1e9), cols["__pid"][i], name, fields))
    rows.sort(key=lambda r: r[0])
    for _, ts, pid, event, fields in rows:
        yield ts, pid, event, fields


def program_from_trace(path: str | Path, comm: str | None = None) -> str:
    """The user-program TOML replaying the tasks of the trace at ``path``
    (those whose comm matches ``comm``, a regular expression, if given)."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: workload.replay.trace: expected a trace file, got nothing there")
    try:
        want = re.compile(comm) if comm else None
    except re.error as e:
        raise SpecError(
            f"{path}: workload.replay.comm: expected a regular expression: {e}"
        ) from None
    tasks: dict[int, _Task] = {}
    t0: int | None = None

    def tracked(pid: int, name: str) -> _Task | None:
        if pid == 0:
            return None
        t = tasks.get(pid)
        if t is None:
            if want is not None and not want.search(name):
                return None
            t = tasks[pid] = _Task(pid, name)
        return t

    events = list(_events(path))
    has_waking = any(ev == "sched_waking" for _, _, ev, _ in events)
    for ts, cur, ev, f in events:
        t0 = ts if t0 is None else t0
        if ev == "sched_switch":
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            p = tasks.get(prev)
            if p is not None and p.run_since is not None:
                p.pending_ns += ts - p.run_since
                p.run_since = None
                state = f.get("prev_state", "R")
                if not state.startswith("R"):
                    p.flush(ts)
                    if state.startswith(("X", "Z")):
                        p.dead = True
                    else:
                        p.blocked_at = ts
            n = tracked(nxt, f.get("next_comm", ""))
            if n is not None and not n.dead:
                n.comm = f.get("next_comm", n.comm)
                n.prio = int(f.get("next_prio", n.prio))
                if n.start_ns is None:
                    n.start_ns = ts
                n.run_since = ts
        elif ev in ("sched_waking", "sched_wakeup") and (ev == "sched_waking" or not has_waking):
            w = tracked(int(f.get("pid", -1)), f.get("comm", ""))
            if w is None or w.dead:
                continue
            if w.start_ns is None:
                w.start_ns = ts
                continue
            if w.blocked_at is None:
                continue
            waker = tasks.get(cur)
            if waker is not None and waker is not w and waker.run_since is not None:
                waker.flush(ts)
                waker.ops.append(f'{{ unpark = "{_name(w)}" }}')
                w.ops.append("{ park = true }")
            else:
                w.ops.append(f'{{ sleep = "{ts - w.blocked_at}ns" }}')
            w.blocked_at = None
        elif ev == "sched_wakeup_new":
            c = tracked(int(f.get("pid", -1)), f.get("comm", ""))
            if c is not None and c.start_ns is None:
                c.start_ns = ts
        elif ev == "sched_process_exit":
            p = tasks.get(int(f.get("pid", -1)))
            if p is not None:
                p.flush(ts)
                p.dead = True
    end = events[-1][0] if events else 0
    out = [f"# replay of {path} ({len(tasks)} tasks)"]
    kept = 0
    for t in tasks.values():
        t.flush(end)
        if not any(op.startswith("{ compute") for op in t.ops):
            continue
        kept += 1
        out += ["", "[[task]]", f'name = "{_name(t)}"']
        out.append(f'start = "{(t.start_ns or t0 or 0) - (t0 or 0)}ns"')
        if t.prio < 100:
            out += ['policy = "fifo"', f"priority = {max(1, min(99, 99 - t.prio))}"]
        elif t.prio != 120:
            out.append(f"nice = {max(-20, min(19, t.prio - 120))}")
        out.append("ops = [")
        out += [f"  {op}," for op in t.ops]
        out.append("]")
    if kept == 0:
        what = f"tasks whose comm matches '{comm}'" if comm else "tasks"
        raise SpecError(
            f"{path}: workload.replay: expected {what} that run in the trace, found none"
        )
    # An unpark may name a task that never ran (dropped above): drop the edge.
    names = {_name(t) for t in tasks.values() if any(op.startswith("{ compute") for op in t.ops)}
    text = "\n".join(
        ln
        for ln in out
        if not (ln.strip().startswith("{ unpark") and ln.split('"')[1] not in names)
    )
    return text + "\n"


def _name(t: _Task) -> str:
    clean = re.sub(r"[^\w.:/-]", "_", t.comm) or "task"
    return f"{clean}-{t.pid}"
