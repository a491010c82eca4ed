"""`wake_wide()` replayed on a trace: how often a wakeup skipped `wake_affine`.

`select_task_rq_fair` calls `record_wakee(p)` for the waker (its
`wakee_flips` grow by one whenever it wakes another task than the last one
it woke, and halve once a second) and then skips `wake_affine` when
`wake_wide(p)` holds: with `master` the larger and `slave` the smaller of
the waker's and the wakee's flips, `slave >= sd_llc_size` and
`master >= slave * sd_llc_size` (kernel/sched/fair.c). Neither count is in a
trace, but every `sched_waking` line names the waker (the line's task) and
the wakee, so the counts can be replayed from the flips each thread started
with: measured at fork in a guest (the `fork_flips` probe lines), or the
count the simulated tasks inherit (`parent_wakee_flips`). The same replay
runs on a recording and on its simulation's trace, so the two shares compare
like with like; `validate` shows them beside its rows.

Approximations, the same on both sides: every `sched_waking` between two
selected threads counts as one `select_task_rq_fair` (the kernel skips it
for a wakee still queued: about 2% of hackbench's wakeups in a 6.12 guest,
`docs/kernel-probes.md`); the once-a-second decay is timed from the thread's
first wakeup of another (the kernel times it from a stamp copied at fork).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from . import _native

_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s.*?\s(\d+\.\d+): sched_waking: (.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
_WAKEUP_NEW = re.compile(r"sched_wakeup_new: comm=(\S+) pid=(\d+)")


def fork_flips(text: str) -> dict[int, int]:
    """Each thread's `wakee_flips` at fork, from a guest recording's
    `fork_flips` probe lines (`_guest`'s pattern; empty where the probe did
    not run)."""
    from ._guest import _FORK_FLIPS

    lines = (_FORK_FLIPS.match(line) for line in text.splitlines() if " fork_flips: " in line)
    return {int(m.group(2)): int(m.group(3)) for m in lines if m is not None}


def flips_in_start_order(text: str, comm: str, flips: list[int]) -> dict[int, int]:
    """A simulated trace's threads matching `comm`, in the order they were
    first woken (`sched_wakeup_new`: the order the simulated families give a
    `parent_wakee_flips` list to their tasks), with `flips` in that order."""
    pids: list[int] = []
    for m in _WAKEUP_NEW.finditer(text):
        pid = int(m.group(2))
        if fnmatch.fnmatchcase(m.group(1), comm) and pid not in pids:
            pids.append(pid)
    return {pid: flips[i] for i, pid in enumerate(pids[: len(flips)])}


def llc_sizes(machine_text: str) -> list[int]:
    """`sd_llc_size` of each CPU of a machine TOML: the CPUs sharing its LLC."""
    from ._repro_figures import parse_cpulist

    doc = _native.topo_doc(machine_text, "toml", "machine.toml")
    llc_of: dict[int, int] = {}
    for group in doc["cpus"]:
        for cpu in parse_cpulist(str(group["cpus"])):
            llc_of[cpu] = int(group["llc"])
    count: dict[int, int] = {}
    for llc in llc_of.values():
        count[llc] = count.get(llc, 0) + 1
    return [count[llc_of[c]] for c in sorted(llc_of)]


def wide_share(
    text: str, comm: str, start: Mapping[int, int] | int, llc_size: list[int]
) -> float | None:
    """The share of wakeups between threads matching `comm` in which
    `wake_wide()` held, replayed (module doc); `start` is each thread's
    flips at fork by pid, or one count for all. None without such wakeups."""
    flips: dict[int, int] = {}
    decay_at: dict[int, float] = {}
    last: dict[int, int] = {}
    selected: dict[str, bool] = {}

    def chosen(name: str) -> bool:
        if name not in selected:
            selected[name] = fnmatch.fnmatchcase(name, comm)
        return selected[name]

    def initial(pid: int) -> int:
        return start if isinstance(start, int) else start.get(pid, 0)

    wide = total = 0
    for line in text.splitlines():
        if "sched_waking:" not in line:
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        waker_comm, waker, cpu, ts, rest = m.groups()
        f = dict(_FIELD.findall(rest))
        if not (chosen(waker_comm) and chosen(f.get("comm", ""))):
            continue
        w, p, t = int(waker), int(f["pid"]), float(ts)
        if w == 0:  # woken from the idle task's interrupt: no waker thread
            continue
        flips.setdefault(w, initial(w))
        flips.setdefault(p, initial(p))
        # record_wakee
        if t > decay_at.setdefault(w, t) + 1.0:
            flips[w] >>= 1
            decay_at[w] = t
        if last.get(w) != p:
            last[w] = p
            flips[w] += 1
        # wake_wide
        factor = llc_size[int(cpu)] if int(cpu) < len(llc_size) else 1
        master, slave = max(flips[w], flips[p]), min(flips[w], flips[p])
        total += 1
        wide += not (slave < factor or master < slave * factor)
    return wide / total if total else None
