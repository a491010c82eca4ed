"""Trace frames in LISA's layout, the same for a simulated run and a real
trace."""

from pathlib import Path

import pytest

import schedlab

FIXTURES = Path(__file__).parent / "fixtures"

# Lines as the kernel prints them (a 6.12 guest), including a comm with a
# space, a kprobe event and a header.
REAL = """# tracer: nop
#
# entries-in-buffer/entries-written: 5/5   #P:4
              sh-707     [001] d..1.     8.040896: fork_flips: (wake_up_new_task+0x4/0x300) pid=708 flips=8
              sh-707     [001] d..2.     8.041454: sched_wakeup_new: comm=sh pid=708 prio=120 target_cpu=003
          <idle>-0       [003] d..2.     8.041640: sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=708 next_prio=120
 Web Content x-2201    [000] d..2.     8.050000: sched_waking: comm=sh pid=707 prio=120 target_cpu=001
          <idle>-0       [001] dNs4.     8.050010: softirq_entry: vec=3 [action=NET_RX]
"""


def test_real_lines_give_lisa_frames(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text(REAL)
    t = schedlab.trace.read(p)
    assert t.skipped == 3
    assert t.events == [
        "fork_flips",
        "sched_wakeup_new",
        "sched_switch",
        "sched_waking",
        "softirq_entry",
    ]
    sw = t.df_event("sched_switch")
    assert sw.index.name == "Time"
    assert list(sw.columns) == [
        "__cpu", "__pid", "__comm", "prev_comm", "prev_pid", "prev_prio", "prev_state",
        "next_comm", "next_pid", "next_prio",
    ]  # fmt: skip
    row = sw.iloc[0]
    assert (row["__cpu"], row["next_pid"], row["prev_state"]) == (3, 708, "R")
    assert sw.index[0] == pytest.approx(8.041640)
    waking = t.df_event("sched_waking").iloc[0]
    assert (waking["__comm"], waking["__pid"]) == ("Web Content x", 2201)
    assert t.df_event("fork_flips").iloc[0]["flips"] == 8
    assert t.df_event("softirq_entry").iloc[0]["vec"] == 3
    assert t.df_event("sched_migrate_task").empty
    everything = t.df_all()
    assert list(everything["event"]) == t.events


def test_a_run_gives_the_frames_its_trace_file_gives(tmp_path: Path) -> None:
    r = schedlab.run("laptop-4c8t", "hackbench:groups=1,loops=10", trace=True)
    sw = r.events("sched_switch")
    assert len(sw) == (r.trace or "").count(": sched_switch: ") > 0
    path = tmp_path / "run.txt"
    path.write_text(r.trace or "")
    from_file = schedlab.trace.read(path).df_event("sched_switch")
    assert sw.equals(from_file)
    all_events = r.events()
    assert set(all_events["event"]) >= {
        "sched_switch",
        "sched_waking",
        "sched_wakeup",
        "sched_process_exit",
    }
    assert all_events.index.is_monotonic_increasing


def test_events_need_a_kept_trace() -> None:
    r = schedlab.run("laptop-4c8t", "hackbench:groups=1,loops=10")
    with pytest.raises(schedlab.SpecError, match="trace=True"):
        r.events()
