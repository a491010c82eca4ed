"""Traces as pandas data frames, in the layout LISA's ``df_event`` uses.

``schedlab.trace.read(path)`` reads an ftrace text trace, real (``schedlab
record``, ``trace-cmd report`` text, ``/sys/kernel/tracing/trace``) or
simulated (``schedlab run --trace``), and ``RunResult.events()`` gives the
same frames for a run kept in memory, so that the same analysis code runs on
both::

    t = schedlab.trace.read("record/trace.txt")
    sw = t.df_event("sched_switch")   # index Time (s); __cpu, __pid, __comm, prev_comm, ...

One frame per event name: the index is ``Time`` in seconds, then
``__cpu``, ``__pid`` and ``__comm`` (the line's CPU and running task), then
the event's ``key=value`` fields in the order they appear, integers as
integers. ``sched_switch``'s ``==>`` is dropped; irq/softirq annotations in
brackets (``[action=NET_RX]``) are dropped too. Lines that are not events
(comments, headers) are skipped and counted in ``skipped``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["TraceFrames", "parse", "read"]

# `<comm>-<pid> [<cpu>] <flags?> <secs>.<frac>: <event>: <fields>`; comm may
# hold spaces and dashes, so the pid is the last `-digits` before the CPU.
_LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:[\w.]{4,5}\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>[\w:]+):\s?(?P<fields>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S*)")


def _value(text: str) -> Any:
    if text.lstrip("-").isdigit():
        return int(text)
    return text


class TraceFrames:
    """The events of one trace, grouped by event name."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]], skipped: int) -> None:
        self._rows = rows
        self.skipped = skipped
        self._frames: dict[str, pd.DataFrame] = {}

    @property
    def events(self) -> list[str]:
        """Event names present, in order of first appearance."""
        return list(self._rows)

    def df_event(self, name: str) -> pd.DataFrame:
        """The frame of event ``name`` (empty, with the fixed columns, when
        the trace has none)."""
        if name not in self._frames:
            rows = self._rows.get(name, [])
            df = pd.DataFrame(
                rows, columns=None if rows else ["Time", "__cpu", "__pid", "__comm", "__seq"]
            )
            # The line number only orders df_all among equal timestamps.
            self._frames[name] = df.drop(columns="__seq").set_index("Time")
        return self._frames[name]

    def df_all(self) -> pd.DataFrame:
        """Every event in one frame, in trace order: the fixed columns, an
        ``event`` column, then the union of all fields (missing where an
        event lacks one)."""
        rows = [dict(r, event=name) for name, rs in self._rows.items() for r in rs]
        rows.sort(key=lambda r: (r["Time"], r["__seq"]))
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame(columns=["__cpu", "__pid", "__comm", "event"]).rename_axis("Time")
        front = ["Time", "__cpu", "__pid", "__comm", "event"]
        rest = [c for c in df.columns if c not in front and c != "__seq"]
        return df[front + rest].set_index("Time")


def parse(lines: Iterable[str]) -> TraceFrames:
    """Frames of ftrace text ``lines``."""
    rows: dict[str, list[dict[str, Any]]] = {}
    skipped = 0
    for seq, line in enumerate(lines):
        m = _LINE.match(line)
        if m is None:
            skipped += 1
            continue
        row: dict[str, Any] = {
            "Time": float(m["ts"]),
            "__cpu": int(m["cpu"]),
            "__pid": int(m["pid"]),
            "__comm": m["comm"].strip(),
            "__seq": seq,
        }
        for key, val in _FIELD.findall(m["fields"]):
            row.setdefault(key, _value(val))
        rows.setdefault(m["event"].split(":")[-1], []).append(row)
    return TraceFrames(rows, skipped)


def read(path: str | Path) -> TraceFrames:
    """Frames of the ftrace text trace at ``path``."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f)
