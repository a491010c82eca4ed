"""The host's scheduling of a guest's vCPUs, measured during a recording.

A TCG guest's vCPUs are threads of this host (QEMU names them ``CPU k/TCG``
with ``-name debug-threads=on``). While a guest records a workload, a
tracefs instance on the host records ``sched_switch`` and ``sched_wakeup``
(clock ``mono``), and this module cuts out the workload's window and says
what each vCPU thread did during it, which is what `overcommit` models
(`_hostshare`) from probes run at another time:

* **running** on a host CPU;
* **waiting**: runnable, but the host ran something else (the guest's CPU is
  stalled);
* **blocked**: asleep on the host while its guest CPU was not idle (QEMU's
  own locks and exclusive sections: the guest's CPU is stalled as well);
* **halted**: asleep while its guest CPU idled.

Each turn that ended with the vCPU still runnable is put down to what ran
next: a thread woken at most `WOKEN_NS` before (the host's wakeup
preemption: by another vCPU, or by another of the host's threads) or one
that had waited (the host's slice ran out).

The window is the guest trace's span. The guest's clock (its TSC, which TCG
derives from the host's monotonic clock) differs from the host's by a
constant: found as the most common difference between a guest CPU's idle
entries and its vCPU thread's sleeps (`align`), which at least half of the
idle entries must agree with to within `ALIGN_BIN_NS`.
"""

from __future__ import annotations

import bisect
import contextlib
import fnmatch
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A thread woken at most this long before it replaced a running vCPU
#: preempted it at wakeup (a host's wakeup path to the switch takes a few
#: microseconds; a slice's end comes at a tick, milliseconds apart).
WOKEN_NS = 50_000
#: Width of the bins the guest-to-host clock offset is voted in: a vCPU
#: thread sleeps within microseconds of its guest entering idle (the idle
#: loop's HLT), and a TCG vCPU's time between the two varies by tens of
#: microseconds.
ALIGN_BIN_NS = 100_000

_SWITCH = re.compile(
    r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): sched_switch: prev_comm=(.*?) prev_pid=(\d+) "
    r"prev_prio=-?\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)"
)
_WAKEUP = re.compile(r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): sched_wakeup: comm=(.*?) pid=(\d+)")
_VCPU = re.compile(r"CPU (\d+)/TCG$")
#: Any ftrace line's CPU and timestamp.
_STAMP = re.compile(r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+):")


class HostTraceError(ValueError):
    """The host trace cannot be read or aligned with the guest's."""


def _ns(sec: str, frac: str) -> int:
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


@dataclass
class Switch:
    t: int
    cpu: int
    prev: int
    runnable: bool
    next: int
    next_comm: str


@dataclass
class HostEvents:
    """The host trace's switches and wakeups, in order, and the vCPU threads
    by guest CPU."""

    switches: list[Switch] = field(default_factory=list)
    wakeups: list[tuple[int, int]] = field(default_factory=list)
    vcpus: dict[int, int] = field(default_factory=dict)


def parse_host(lines: Iterator[str] | list[str]) -> HostEvents:
    """The events of a host trace (ftrace text)."""
    ev = HostEvents()
    for line in lines:
        m = _SWITCH.search(line)
        if m:
            cpu, s, f, pc, pp, ps, nc, npid = m.groups()
            for comm, pid in ((pc, pp), (nc, npid)):
                v = _VCPU.match(comm)
                if v:
                    ev.vcpus[int(v.group(1))] = int(pid)
            sw = Switch(_ns(s, f), int(cpu), int(pp), ps.startswith("R"), int(npid), nc)
            ev.switches.append(sw)
            continue
        m = _WAKEUP.search(line)
        if m:
            _cpu, s, f, _comm, pid = m.groups()
            ev.wakeups.append((_ns(s, f), int(pid)))
    return ev


Spans = dict[int, list[tuple[int, int]]]


@dataclass
class GuestIdle:
    """A guest trace's idle time: each CPU's idle intervals entered in the
    trace (from a switch to pid 0 to the switch away from it), the trace's
    first and last switch, and the CPUs idle when it starts (their first
    switch is away from pid 0) or throughout (no switch at all)."""

    entered: Spans
    first: int
    last: int
    idle_at_start: dict[int, int]
    seen: set[int]

    def spans(self, cpus: Iterator[int] | list[int]) -> Spans:
        """Every idle interval of `cpus`, the ones before a CPU's first
        switch and those of a CPU that never switched included."""
        out: Spans = {}
        for cpu in cpus:
            spans = list(self.entered.get(cpu, []))
            if cpu in self.idle_at_start:
                spans.insert(0, (self.first, self.idle_at_start[cpu]))
            elif cpu not in self.seen:
                spans = [(self.first, self.last)]
            out[cpu] = spans
        return out


def guest_idle(lines: Iterator[str] | list[str]) -> GuestIdle:
    """The idle time of a guest trace (`GuestIdle`)."""
    idle: Spans = {}
    since: dict[int, int] = {}
    at_start: dict[int, int] = {}
    seen: set[int] = set()
    first = last = -1
    for line in lines:
        m = _SWITCH.search(line)
        if not m:
            continue
        cpu_s, s, f, _pc, pp, _ps, _nc, npid = m.groups()
        t, cpu = _ns(s, f), int(cpu_s)
        first = t if first < 0 else first
        last = t
        if cpu not in seen and pp == "0":
            at_start[cpu] = t
        seen.add(cpu)
        if pp == "0" and cpu in since:
            idle.setdefault(cpu, []).append((since.pop(cpu), t))
        if npid == "0":
            since[cpu] = t
    for cpu, t in since.items():
        idle.setdefault(cpu, []).append((t, last))
    return GuestIdle(idle, first, last, at_start, seen)


def align(host: HostEvents, idle: Spans) -> tuple[int, float]:
    """The host-minus-guest clock offset and the share of guest idle entries
    that agree with it: the most common difference between an idle entry of
    guest CPU k and a sleep of vCPU thread k, in `ALIGN_BIN_NS` bins."""
    sleeps: dict[int, list[int]] = {}
    for sw in host.switches:
        if not sw.runnable and sw.prev in host.vcpus.values():
            sleeps.setdefault(sw.prev, []).append(sw.t)
    if not sleeps:
        raise HostTraceError("no vCPU thread (named 'CPU k/TCG') slept in the host trace")
    start = min(s[0] for s in sleeps.values())
    end = max(s[-1] for s in sleeps.values())
    votes: Counter[int] = Counter()
    entries = 0
    for cpu, spans in idle.items():
        pid = host.vcpus.get(cpu)
        hs = sleeps.get(pid, []) if pid is not None else []
        for g, _ in spans:
            entries += 1
            lo = bisect.bisect_left(hs, start - 1)
            for h in hs[lo:]:
                d = h - g
                if d > end:
                    break
                votes[d // ALIGN_BIN_NS] += 1
    if not votes:
        raise HostTraceError("the guest trace has no idle entry to align the host trace with")
    best = votes.most_common(1)[0][0]
    offset = best * ALIGN_BIN_NS + ALIGN_BIN_NS // 2
    # An entry agrees when a sleep lies within a bin of the offset (an
    # offset cut by a bin edge votes in two bins).
    agree = 0
    for cpu, spans in idle.items():
        pid = host.vcpus.get(cpu)
        hs = sleeps.get(pid, []) if pid is not None else []
        for g, _ in spans:
            i = bisect.bisect_left(hs, g + offset - ALIGN_BIN_NS)
            agree += i < len(hs) and hs[i] <= g + offset + ALIGN_BIN_NS
    share = agree / entries
    if share < 0.5:
        raise HostTraceError(
            f"the host trace does not align with the guest's: at most {100 * share:.0f}% "
            "of the guest's idle entries match a vCPU sleep"
        )
    return offset, share


def _overlap(a: int, b: int, spans: list[tuple[int, int]], starts: list[int]) -> int:
    """Time of [a, b) inside the sorted, disjoint `spans`."""
    i = max(0, bisect.bisect_right(starts, a) - 1)
    total = 0
    while i < len(spans) and spans[i][0] < b:
        lo, hi = max(a, spans[i][0]), min(b, spans[i][1])
        total += max(0, hi - lo)
        i += 1
    return total


QUANTILES = (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))


def _pct(xs: list[int], q: float) -> float:
    return sorted(xs)[int(q * (len(xs) - 1))] / 1e6 if xs else 0.0


@dataclass
class VcpuTimes:
    running_ns: int = 0
    waiting_ns: int = 0
    blocked_ns: int = 0
    halted_ns: int = 0


def measure(host: HostEvents, idle: Spans, w0: int, w1: int) -> dict[str, Any]:
    """What the vCPU threads and the host CPUs did in host time [w0, w1)
    (module doc); `idle` in host time."""
    pid_cpu = {pid: cpu for cpu, pid in host.vcpus.items()}
    times = {cpu: VcpuTimes() for cpu in host.vcpus}
    starts = {cpu: [s for s, _ in idle.get(cpu, [])] for cpu in host.vcpus}
    # Per vCPU thread: state ('run', 'wait', 'sleep') and since when.
    state: dict[int, tuple[str, int]] = {}
    last_wake: dict[int, int] = {}
    on_cpu: dict[int, tuple[int, int]] = {}
    cpu_time: Counter[str] = Counter()
    others: Counter[str] = Counter()
    comm: dict[int, str] = {}
    ends: Counter[str] = Counter()
    slice_runs: list[int] = []
    wakes = iter(host.wakeups)
    pending = next(wakes, None)

    def account(who: int, since: int, t: int) -> None:
        """A host CPU ran `who` from `since` to `t`."""
        a, b = max(since, w0), min(t, w1)
        if b > a:
            kind = "vcpus" if who in pid_cpu else ("idle" if who == 0 else "other")
            cpu_time[kind] += b - a
            if kind == "other":
                others[comm.get(who, "?")] += b - a

    def close(pid: int, t: int) -> None:
        if pid not in state:
            return
        what, since = state[pid]
        a, b = max(since, w0), min(t, w1)
        if b <= a:
            return
        v = times[pid_cpu[pid]]
        if what == "run":
            v.running_ns += b - a
        elif what == "wait":
            v.waiting_ns += b - a
        else:
            cpu = pid_cpu[pid]
            halted = _overlap(a, b, idle.get(cpu, []), starts[cpu])
            v.halted_ns += halted
            v.blocked_ns += b - a - halted

    for sw in host.switches:
        while pending is not None and pending[0] <= sw.t:
            t, pid = pending
            last_wake[pid] = t
            if pid in pid_cpu and state.get(pid, ("", 0))[0] == "sleep":
                close(pid, t)
                state[pid] = ("wait", t)
            pending = next(wakes, None)
        if sw.cpu in on_cpu:
            account(*on_cpu[sw.cpu], sw.t)
        on_cpu[sw.cpu] = (sw.next, sw.t)
        comm[sw.next] = sw.next_comm
        if sw.prev in pid_cpu:
            ran_since = state.get(sw.prev, ("", sw.t))[1]
            close(sw.prev, sw.t)
            if w0 <= sw.t < w1:
                if not sw.runnable:
                    ends["slept"] += 1
                elif sw.t - last_wake.get(sw.next, -(1 << 62)) <= WOKEN_NS:
                    ends["woken vCPU" if sw.next in pid_cpu else "woken other"] += 1
                else:
                    ends["slice"] += 1
                    slice_runs.append(sw.t - ran_since)
            state[sw.prev] = ("wait" if sw.runnable else "sleep", sw.t)
        if sw.next in pid_cpu:
            close(sw.next, sw.t)
            state[sw.next] = ("run", sw.t)
    for pid in list(state):
        close(pid, w1)
    for who, since in on_cpu.values():  # each host CPU's last run, to the window's end
        account(who, since, w1)
    span = max(1, w1 - w0)
    # The host CPUs the vCPU threads ran on in the window: all of a host's
    # unless QEMU was confined to fewer (taskset, a cpuset), which is then
    # the host the vCPUs share.
    used = {sw.cpu for sw in host.switches if sw.next in pid_cpu and w0 <= sw.t < w1}
    host_cpus = len(used) or len({sw.cpu for sw in host.switches}) or 1
    n = len(times) or 1
    total = VcpuTimes(
        sum(v.running_ns for v in times.values()),
        sum(v.waiting_ns for v in times.values()),
        sum(v.blocked_ns for v in times.values()),
        sum(v.halted_ns for v in times.values()),
    )
    share = 100 / (n * span)
    return {
        "window_s": round(span / 1e9, 6),
        "host_cpus": host_cpus,
        "vcpus": n,
        "running_pct": round(total.running_ns * share, 2),
        "waiting_pct": round(total.waiting_ns * share, 2),
        "blocked_pct": round(total.blocked_ns * share, 2),
        "halted_pct": round(total.halted_ns * share, 2),
        "per_vcpu": {
            str(cpu): {
                "running_ms": round(v.running_ns / 1e6, 3),
                "waiting_ms": round(v.waiting_ns / 1e6, 3),
                "blocked_ms": round(v.blocked_ns / 1e6, 3),
                "halted_ms": round(v.halted_ns / 1e6, 3),
            }
            for cpu, v in sorted(times.items())
        },
        "host_cpu_share": {k: round(v / span, 3) for k, v in sorted(cpu_time.items())},
        "host_other_top": {k: round(v / span, 3) for k, v in others.most_common(5)},
        "turn_ends": dict(sorted(ends.items())),
        "slice_ms": {q: round(_pct(slice_runs, f), 3) for q, f in QUANTILES},
    }


def analyze(host_lines: list[str], guest_lines: list[str]) -> dict[str, Any]:
    """The host's side of a guest recording (module doc): `host_lines` the
    host trace over the guest's boot, `guest_lines` the guest's trace."""
    host = parse_host(host_lines)
    if not host.vcpus:
        raise HostTraceError("no vCPU thread (named 'CPU k/TCG') in the host trace")
    guest = guest_idle(guest_lines)
    g0, g1 = guest.first, guest.last
    if g0 < 0:
        raise HostTraceError("the guest trace has no sched_switch")
    offset, agree = align(host, guest.entered)
    if host.switches[0].t > g0 + offset - ALIGN_BIN_NS:
        raise HostTraceError(
            "the host trace starts after the guest's workload did (its buffer overran): "
            "no host figures for this recording"
        )
    idle_host = {
        cpu: [(a + offset, b + offset) for a, b in spans]
        for cpu, spans in guest.spans(list(host.vcpus)).items()
    }
    doc = measure(host, idle_host, g0 + offset, g1 + offset)
    doc["occupancy"] = occupancy(host, g0 + offset, g1 + offset, doc["host_cpus"])
    doc["offset_s"] = round(offset / 1e9, 6)
    doc["aligned_pct"] = round(100 * agree, 1)
    return doc


HOST_EVENTS = ("sched/sched_switch", "sched/sched_wakeup")


@contextlib.contextmanager
def host_trace(into: list[str], buffer_kb: int | None = None) -> Iterator[bool]:
    """Records the host's switches and wakeups (clock ``mono``) in a tracefs
    instance of its own while the body runs, then appends the trace's lines
    to `into`. Yields whether it records: not without root or tracefs (the
    guest recording goes on without the host's side). The buffer, per host
    CPU, defaults to 256 MiB over the host's CPUs, within 4-64 MiB: a guest
    boot with its recording and probes on this 2-CPU host wrote about 10,000
    events a second, tens of MiB a minute; when it overruns, the oldest
    events (the boot's) go first, and `analyze` refuses a window it lost."""
    from ._tracefs import TRACEFS

    if buffer_kb is None:
        buffer_kb = min(65536, max(4096, 262144 // (os.cpu_count() or 1)))

    inst = TRACEFS / "instances" / f"schedlab-host-{os.getpid()}"
    try:
        if os.geteuid() != 0 or not (TRACEFS / "instances").is_dir():
            raise OSError("no tracefs")
        inst.mkdir()
    except OSError:
        yield False
        return
    try:
        (inst / "trace_clock").write_text("mono")
        (inst / "buffer_size_kb").write_text(str(buffer_kb))
        for e in HOST_EVENTS:
            (inst / "events" / e / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
    except OSError:
        with contextlib.suppress(OSError):
            inst.rmdir()
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            (inst / "tracing_on").write_text("0")
            into.extend((inst / "trace").read_text(errors="replace").splitlines())
        with contextlib.suppress(OSError):
            inst.rmdir()


def cut(
    host_lines: list[str], offset_s: float, guest_lines: list[str], margin_s: float = 0.05
) -> list[str]:
    """The host trace's lines within the guest trace's span (plus `margin_s`
    either side), for keeping beside the recording."""
    guest = guest_idle(guest_lines)
    g0, g1 = guest.first, guest.last
    off = int(offset_s * 1e9)
    lo, hi = g0 + off - int(margin_s * 1e9), g1 + off + int(margin_s * 1e9)
    kept = []
    for line in host_lines:
        m = _STAMP.search(line)
        if m and lo <= _ns(m.group(2), m.group(3)) <= hi:
            kept.append(line)
    return kept


def keep(host_lines: list[str], guest_text: str, out: Path) -> dict[str, Any]:
    """Writes the host's side of the recording in `out`: ``host.json`` (what
    `analyze` measured, or ``{"error": ...}`` when it could not) and
    ``host-trace.txt`` (the host trace over the guest trace's span)."""
    import json

    guest = guest_text.splitlines()
    try:
        doc = analyze(host_lines, guest)
    except HostTraceError as e:
        doc = {"error": str(e)}
    else:
        (out / "host-trace.txt").write_text(
            "".join(line + "\n" for line in cut(host_lines, doc["offset_s"], guest))
        )
    (out / "host.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def recorded(out: Path) -> dict[str, Any] | None:
    """The host's side of the recording in `out`: measured again from the
    host trace kept there (``host-trace.txt`` beside the guest's
    ``trace.txt``), as the guest's trace is analyzed again on every
    `validate --reuse`, else what ``host.json`` holds; None without a
    measurement."""
    import json

    kept, guest = out / "host-trace.txt", out / "trace.txt"
    if kept.is_file() and guest.is_file():
        try:
            return analyze(
                kept.read_text(errors="replace").splitlines(),
                guest.read_text(errors="replace").splitlines(),
            )
        except HostTraceError:
            return None
    try:
        doc: dict[str, Any] = json.loads((out / "host.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "waiting_pct" in doc else None


def stall_pct(doc: dict[str, Any]) -> float:
    """The share of the vCPUs' time, over the window, that they were
    stalled: waiting for a host CPU or blocked in QEMU."""
    return float(doc["waiting_pct"]) + float(doc["blocked_pct"])


_HOST_IRQ = re.compile(r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): irq_handler_(entry|exit): irq=65535\b")


def simulated_stall_pct(trace: str, nr_cpus: int) -> float | None:
    """The same share in a simulated trace: the `overcommit` host's waits
    (interrupts named ``host``) over the vCPUs' time from the trace's first
    event to its last; None without any."""
    first = last = -1
    since: dict[int, int] = {}
    total = 0
    for line in trace.splitlines():
        m = _STAMP.search(line)
        if not m:
            continue
        t = _ns(m.group(2), m.group(3))
        first = t if first < 0 else first
        last = t
        h = _HOST_IRQ.search(line)
        if h:
            cpu = int(h.group(1))
            if h.group(4) == "entry":
                since[cpu] = t
            elif cpu in since:
                total += t - since.pop(cpu)
    total += sum(last - t for t in since.values())
    if total == 0 or last <= first:
        return None
    return 100 * total / (nr_cpus * (last - first))


def note(docs: list[dict[str, Any]]) -> str | None:
    """What the host did while the guest recorded (`docs`: each recording's
    ``host.json``), for a case's notes."""
    if not docs:
        return None
    others: Counter[str] = Counter()
    for d in docs:
        for k, v in d.get("host_other_top", {}).items():
            others[k] += v / len(docs)
    top = ", ".join(f"{k} {v:.2f}" for k, v in others.most_common(3) if v >= 0.01)

    def span(key: str) -> str:
        lo, hi = (f"{f(float(d[key]) for d in docs):.0f}" for f in (min, max))
        return f"{lo}%" if lo == hi else f"{lo}-{hi}%"

    other = [float(d.get("host_cpu_share", {}).get("other", 0.0)) for d in docs]
    took = f"{min(other):.2f}" + (f"-{max(other):.2f}" if max(other) > min(other) else "")
    return (
        f"the host's side of the recordings (its trace of the vCPU threads, `host.json`): the "
        f"vCPUs ran {span('running_pct')} of their time, waited for a host CPU "
        f"{span('waiting_pct')}, were blocked in QEMU {span('blocked_pct')} and halted "
        f"{span('halted_pct')}; the host's other threads took {took} "
        f"of its CPUs"
        + (f" (on average: {top})" if top else "")
        + "; the `host_stall_pct` row compares the waits and blocks with the simulated host's"
    )


def occupancy(host: HostEvents, w0: int, w1: int, host_cpus: int) -> dict[str, Any]:
    """What `overcommit` needs, measured over host time [w0, w1): with K
    vCPU threads runnable, the host CPUs that ran none of them, B(K) = H -
    E[vCPUs running | K] (the model's host threads, which take the CPUs the
    vCPUs did not get, whatever kept them: another thread, or a host CPU
    idling while a vCPU waited on another's runqueue); the mean length of
    the spells in which fewer than min(K, H) vCPUs ran; and the share of
    vCPU wakeups, while no host CPU idled, that ran within `WOKEN_NS`."""
    pid_cpu = {pid: cpu for cpu, pid in host.vcpus.items()}
    runnable: set[int] = set()
    running: dict[int, int] = {}  # host CPU -> vCPU thread it runs
    busy_cpus: set[int] = set()  # host CPUs running anything but idle
    time_k: Counter[int] = Counter()
    ran_k: Counter[int] = Counter()
    spells: list[int] = []
    spell_since: int | None = None
    woken_at: dict[int, int] = {}
    wake_busy = wake_ran = 0
    last = w0
    events: list[tuple[int, int, Any]] = [(t, 0, pid) for t, pid in host.wakeups]
    events += [(sw.t, 1, sw) for sw in host.switches]
    events.sort(key=lambda e: (e[0], e[1]))
    for t, kind, x in events:
        if t > w0:
            a, b = max(last, w0), min(t, w1)
            if b > a:
                k = len(runnable)
                time_k[k] += b - a
                ran_k[k] += (b - a) * len(running)
            last = t
        if t >= w1:
            break
        if kind == 0:
            if x in pid_cpu and x not in runnable:
                runnable.add(x)
                if len(busy_cpus) >= host_cpus and t >= w0:
                    woken_at[x] = t
        else:
            sw: Switch = x
            running.pop(sw.cpu, None)
            busy_cpus.discard(sw.cpu)
            if sw.prev in pid_cpu and not sw.runnable:
                runnable.discard(sw.prev)
            if sw.next in pid_cpu:
                runnable.add(sw.next)
                running[sw.cpu] = sw.next
                if sw.next in woken_at:
                    wake_busy += 1
                    wake_ran += t - woken_at.pop(sw.next) <= WOKEN_NS
            if sw.next != 0:
                busy_cpus.add(sw.cpu)
        short = len(running) < min(len(runnable), host_cpus)
        if short and spell_since is None:
            spell_since = t
        elif not short and spell_since is not None:
            if t > max(spell_since, w0):
                spells.append(t - max(spell_since, w0))
            spell_since = None
    if last < w1:
        k = len(runnable)
        time_k[k] += w1 - max(last, w0)
        ran_k[k] += (w1 - max(last, w0)) * len(running)
    if spell_since is not None:
        spells.append(w1 - max(spell_since, w0))
    # A wakeup still waiting at the end waited past `WOKEN_NS` unless it
    # came within it of the end.
    wake_busy += sum(1 for t in woken_at.values() if w1 - t > WOKEN_NS)
    other = {
        str(k): round(host_cpus - ran_k[k] / time_k[k], 3)
        for k in sorted(time_k)
        if k > 0 and time_k[k] > 0
    }
    return {
        "busy_time_ms": {str(k): round(time_k[k] / 1e6, 3) for k in sorted(time_k)},
        "other_share": other,
        "short_spell_ms": round(sum(spells) / len(spells) / 1e6, 4) if spells else 0.0,
        "short_spells": len(spells),
        "wakeups_host_busy": wake_busy,
        "wake_preempt_pct": round(100 * wake_ran / wake_busy, 1) if wake_busy else None,
    }


#: Fewest turns a slice ended (and wakeups on a full host) the trace must
#: hold for its own figures to be used; below, the probes' fit stands.
MIN_SAMPLES = 20


def fit(doc: dict[str, Any], vcpus: int) -> tuple[str, str] | None:
    """The `overcommit` host that the recording's own host trace measured
    (`occupancy`, the slice-ended turns), as a noise spec and how it was
    found; None when the trace saw too few slice ends to say."""
    occ = doc.get("occupancy") or {}
    host_cpus = int(doc.get("host_cpus") or 0)
    ends = int(doc.get("turn_ends", {}).get("slice", 0))
    measured = {int(k): float(v) for k, v in (occ.get("other_share") or {}).items()}
    if host_cpus < 1 or vcpus <= host_cpus or ends < MIN_SAMPLES or not measured:
        return None
    lo = max(1, round(1000 * float(doc["slice_ms"]["p10"])))
    hi = max(lo, round(1000 * float(doc["slice_ms"]["p90"])))

    def share(k: int) -> float:
        near = min(measured, key=lambda m: (abs(m - k), m))
        return round(min(max(0.0, measured[near]), host_cpus - 0.01), 3)

    shares = [share(k) for k in range(1, vcpus + 1)]
    run_us = max(1, round(1000 * float(occ.get("short_spell_ms") or 0)))
    parts = [
        f"overcommit:host_cpus={host_cpus}",
        f"slice=uniform:{lo}us-{hi}us",
        "other_share=" + ";".join(f"{b:g}" for b in shares),
        f"other_run=exp:{run_us}us",
    ]
    raw = occ.get("wake_preempt_pct")
    pct = round(float(raw)) if raw is not None else None
    if pct is not None and int(occ.get("wakeups_host_busy", 0)) >= MIN_SAMPLES:
        parts.append(f"wake_preempt={pct}")
    how = (
        f"measured in the host's trace of this recording's vCPU threads: {host_cpus} host CPUs; "
        f"a turn the host's slice ended lasted {lo / 1000:g}-{hi / 1000:g} ms (10th-90th "
        f"percentile of {ends}); with 1, 2, ... vCPUs runnable, "
        f"{', '.join(f'{b:g}' for b in shares)} host CPUs ran none of them, in spells of "
        f"{run_us / 1000:g} ms on average"
        + (
            f"; a vCPU woken while every host CPU was busy ran within {WOKEN_NS // 1000} us in "
            f"{pct}% of {occ.get('wakeups_host_busy')} wakeups"
            if "wake_preempt" in parts[-1]
            else ""
        )
    )
    return ",".join(parts), how


def others_on_host(trace: str, comm: str) -> tuple[float, str]:
    """In a trace recorded on the host itself (`schedlab record`): the host
    CPUs that tasks other than the workload's (whose names match the glob
    `comm`, as `analyze --comm` selects them) and the idle task took between the
    workload's first and last switch, and the name of the one that took
    most. Another process on a CPU takes it out of the idle search, so a
    native recording made beside other work places wakees as a busy host
    does, whatever the nice values."""
    mine = re.compile(fnmatch.translate(comm))
    on: dict[int, tuple[str, int]] = {}
    runs: list[tuple[str, int, int]] = []
    start = end = -1
    for line in trace.splitlines():
        m = _SWITCH.search(line)
        if not m:
            continue
        cpu_s, s, f, pc, _pp, _ps, nc, npid = m.groups()
        t, cpu = _ns(s, f), int(cpu_s)
        if cpu in on:
            who, since = on.pop(cpu)
            runs.append((who, since, t))
        ours = mine.match(nc)
        if ours or mine.match(pc):
            start = t if start < 0 else start
            end = t
        if not ours and npid != "0":
            on[cpu] = (nc, t)
    if start < 0 or end <= start:
        return 0.0, ""
    took: Counter[str] = Counter()
    for who, a, b in runs:
        lo, hi = max(a, start), min(b, end)
        if hi > lo:
            took[who] += hi - lo
    top = took.most_common(1)
    return sum(took.values()) / (end - start), (top[0][0] if top else "")


#: Host CPUs other processes may take beside a native recording before its
#: note calls the host busy: a few kernel threads and the recorder take a
#: hundredth of a CPU (this VM, quiet: 0.006-0.02).
BUSY_CPUS = 0.1


def busy_note(beside: list[tuple[float, str]]) -> str | None:
    """A note for a native case's recordings made beside other work
    (`others_on_host` per recording), None on a quiet host."""
    if not beside or max(s for s, _ in beside) < BUSY_CPUS:
        return None
    shares = ", ".join(f"{s:.2f}" for s, _ in beside)
    top = max(beside)[1]
    return (
        f"other processes took {shares} of the host's CPUs during the recordings (most: "
        f"{top}): a CPU they hold is not idle to the kernel's idle search, so these recordings "
        "show a busy host's placement, which the simulated quiet machine does not have"
    )
