"""Traces as pandas data frames, in the layout LISA's ``df_event`` uses.

``schedlab.trace.read(path)`` reads an ftrace text trace, real (``schedlab
record``, ``trace-cmd report`` text, ``perf script`` output,
``/sys/kernel/tracing/trace``) or simulated (``schedlab run --trace``), and
``RunResult.events()`` gives the same frames for a run kept in memory, so that
the same analysis code runs on both::

    t = schedlab.trace.read("record/trace.txt")
    sw = t.df_event("sched_switch")   # index Time (s); __cpu, __pid, __comm, prev_comm, ...
    t.arrow("sched_switch")           # the same table as a pyarrow.RecordBatch

The text is read by the native core into one Arrow record batch per event
name: ``Time`` in seconds, ``__cpu``, ``__pid`` and ``__comm`` (the line's
CPU and running task), then the event's ``key=value`` fields in the order
they first appear; a field whose every value is an integer is an integer
column (float with NaN where some lines lack it, as pandas does), any other
is text. ``sched_switch``'s ``==>`` is dropped. Lines that are not events
(comments, headers) are skipped and counted in ``skipped``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa

from . import _native

__all__ = ["TraceFrames", "from_text", "parse", "read"]

#: The columns every frame has before its fields (``__line`` orders
#: ``df_all`` among equal times and is not shown).
_FIXED = ["Time", "__cpu", "__pid", "__comm"]


class TraceFrames:
    """The events of one trace, grouped by event name."""

    def __init__(self, tables: list[tuple[str, pa.RecordBatch]], skipped: int) -> None:
        self._tables = dict(tables)
        self.skipped = skipped
        self._frames: dict[str, pd.DataFrame] = {}

    @property
    def events(self) -> list[str]:
        """Event names present, in order of first appearance."""
        return list(self._tables)

    def arrow(self, name: str) -> pa.RecordBatch:
        """The table of event ``name`` as the core built it (with its
        ``__line`` column); a KeyError when the trace has none."""
        return self._tables[name]

    def df_event(self, name: str) -> pd.DataFrame:
        """The frame of event ``name`` (empty, with the fixed columns, when
        the trace has none)."""
        if name not in self._frames:
            batch = self._tables.get(name)
            if batch is None:
                df = pd.DataFrame(columns=_FIXED)
            else:
                df = batch.to_pandas().drop(columns="__line")
            self._frames[name] = df.set_index("Time")
        return self._frames[name]

    def df_all(self) -> pd.DataFrame:
        """Every event in one frame, in trace order: the fixed columns, an
        ``event`` column, then the union of all fields (missing where an
        event lacks one)."""
        parts = [b.to_pandas().assign(event=name) for name, b in self._tables.items() if b.num_rows]
        if not parts:
            return pd.DataFrame(columns=["__cpu", "__pid", "__comm", "event"]).rename_axis("Time")
        df = pd.concat(parts, ignore_index=True).sort_values(["Time", "__line"], kind="stable")
        front = [*_FIXED, "event"]
        rest = [c for c in df.columns if c not in front and c != "__line"]
        return df[front + rest].set_index("Time")


def from_text(text: str) -> TraceFrames:
    """Frames of ftrace text."""
    tables, skipped = _native.trace_frames(text)
    return TraceFrames(tables, skipped)


def parse(lines: Iterable[str]) -> TraceFrames:
    """Frames of ftrace text ``lines``."""
    return from_text("\n".join(line.rstrip("\n") for line in lines))


def read(path: str | Path) -> TraceFrames:
    """Frames of the ftrace text trace at ``path``."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return from_text(f.read())
