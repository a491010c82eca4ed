"""`--trace x.pftrace`: a Perfetto protobuf trace, decoded here with the
Perfetto trace protos the `perfetto` package ships compiled."""

import collections
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab import _native
from schedlab._resolve import resolve_machine
from schedlab.cli import app

pb = pytest.importorskip(
    "perfetto.protos.perfetto.trace.perfetto_trace_pb2",
    reason="the perfetto package (test extra) carries the compiled trace protos",
)

runner = CliRunner()


def _decode(path: Path):  # type: ignore[no-untyped-def]
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    return trace


def _kinds(trace) -> tuple[collections.Counter[str], set[int]]:  # type: ignore[no-untyped-def]
    kinds: collections.Counter[str] = collections.Counter()
    cpus: set[int] = set()
    for p in trace.packet:
        if p.HasField("ftrace_events"):
            cpus.add(p.ftrace_events.cpu)
            for e in p.ftrace_events.event:
                kinds[e.WhichOneof("event")] += 1
        elif p.HasField("track_event"):
            kinds["track_event:" + p.track_event.name.split(":")[0]] += 1
        else:
            kinds[p.WhichOneof("data")] += 1
    return kinds, cpus


def test_every_event_kind_and_every_cpu_decode(tmp_path: Path) -> None:
    out = tmp_path / "run.pftrace"
    # hackbench for switches, wakeups, migrations, exits; an interrupt source
    # on CPUs 0-1 for irq and softirq events.
    args = [
        "run",
        "-m",
        "laptop-4c8t",
        "-w",
        "hackbench:groups=1,loops=50",
        "-w",
        "irq:preset=pingflood,cpus=0-1",
    ]
    res = runner.invoke(app, [*args, "--trace", str(out)])
    assert res.exit_code == 0, res.output
    trace = _decode(out)
    kinds, cpus = _kinds(trace)
    assert cpus == set(range(8)), cpus
    for k in (
        "sched_switch",
        "sched_waking",
        "sched_wakeup",
        "sched_wakeup_new",
        "sched_migrate_task",
        "sched_process_exit",
        "irq_handler_entry",
        "irq_handler_exit",
        "softirq_entry",
        "softirq_exit",
        "cpu_idle",
        "process_tree",
        "track_descriptor",
        "track_event:place",
        "track_event:balance",
    ):
        assert kinds[k] > 0, (k, kinds)
    # Idle entries name a state of the machine's list; exits are PWR_EVENT_EXIT.
    idle = [
        e.cpu_idle.state
        for p in trace.packet
        if p.HasField("ftrace_events")
        for e in p.ftrace_events.event
        if e.HasField("cpu_idle")
    ]
    laptop = resolve_machine("laptop-4c8t")
    doc = _native.topo_doc(laptop.text, laptop.format, laptop.origin)
    nr_states = len(doc["core_types"][0]["idle_states"])
    assert set(idle) - {2**32 - 1} <= set(range(nr_states)), set(idle)
    assert 2**32 - 1 in idle
    tree = next(p.process_tree for p in trace.packet if p.HasField("process_tree"))
    names = {t.name for t in tree.threads}
    assert "hackbench" in names
    assert "ksoftirqd/0" in names
    # A switch names both sides with the pids the ftrace writer uses.
    sw = next(
        e.sched_switch
        for p in trace.packet
        if p.HasField("ftrace_events")
        for e in p.ftrace_events.event
        if e.HasField("sched_switch") and e.sched_switch.next_pid >= 1000
    )
    assert sw.next_comm
    assert sw.next_prio == 120
    # Placement annotations carry the decision.
    place = next(
        p.track_event
        for p in trace.packet
        if p.HasField("track_event") and p.track_event.name.startswith("place")
    )
    assert {a.name for a in place.debug_annotations} >= {
        "pid",
        "prev_cpu",
        "waker_cpu",
        "cpu",
        "scanned",
    }


def test_frequency_counters_decode(tmp_path: Path) -> None:
    out = tmp_path / "freq.pftrace"
    args = ["run", "-m", "hikey960", "-w", "hackbench:groups=1,fds=4,loops=20"]
    res = runner.invoke(app, [*args, "--governor", "schedutil", "--trace", str(out)])
    assert res.exit_code == 0, res.output
    kinds, _ = _kinds(_decode(out))
    assert kinds["cpu_frequency"] > 0 and kinds["cpu_idle"] > 0, kinds


def test_the_same_run_gives_the_same_bytes(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"{i}.pftrace"
        res = runner.invoke(
            app,
            ["run", "-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=20", "--trace", str(out)],
        )
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_streamed_ftrace_equals_the_in_memory_text(tmp_path: Path) -> None:
    streamed = tmp_path / "s.txt"
    args = ["run", "-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=20", "--json"]
    assert runner.invoke(app, [*args, "--trace", str(streamed)]).exit_code == 0
    import schedlab

    mem = schedlab.run("laptop-4c8t", "hackbench:groups=1,loops=20", trace=True).trace or ""
    # Only the header's entry count differs: unknown while streaming.
    s_lines, m_lines = streamed.read_text().splitlines(), mem.splitlines()
    assert s_lines[3:] == m_lines[3:]
    assert "entries-in-buffer/entries-written: 0/0" in s_lines[2]
