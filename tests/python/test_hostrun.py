"""The host's side of a guest recording (`_hostrun`): what the host did with
the vCPU threads while the guest ran its workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schedlab
from schedlab import _hostrun

MS = 1_000_000
SW = (
    "  {pc}-{pp} [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={pc} prev_pid={pp} "
    "prev_prio=120 prev_state={s} ==> next_comm={nc} next_pid={np} next_prio=120"
)
WAKE = "  x-1 [{cpu:03d}] dN.3. {t:.6f}: sched_wakeup: comm={c} pid={p} prio=120 target_cpu={cpu:03d}"
NAMES = {0: "swapper/0", 11: "CPU 0/TCG", 12: "CPU 1/TCG", 13: "qemu-system-x86", 50: "rustc"}


def _sw(t: float, cpu: int, prev: int, state: str, nxt: int) -> str:
    return SW.format(pc=NAMES[prev], pp=prev, cpu=cpu, t=t, s=state, nc=NAMES[nxt], np=nxt)


def _wake(t: float, cpu: int, pid: int) -> str:
    return WAKE.format(cpu=cpu, t=t, c=NAMES[pid], p=pid)


# The guest (2 CPUs), in its own clock: CPU 0 idles from 1.000 to 1.010 s,
# CPU 1 runs throughout; its trace spans 1.000-1.020 s.
GUEST = [
    "  a-101 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=101 prev_prio=120 "
    "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
    "  b-102 [001] d..2. 1.000000: sched_switch: prev_comm=b prev_pid=102 prev_prio=120 "
    "prev_state=R ==> next_comm=c next_pid=103 next_prio=120",
    "  <idle>-0 [000] d..2. 1.010000: sched_switch: prev_comm=swapper/0 prev_pid=0 "
    "prev_prio=120 prev_state=R ==> next_comm=a next_pid=101 next_prio=120",
    "  c-103 [001] d..2. 1.020000: sched_switch: prev_comm=c prev_pid=103 prev_prio=120 "
    "prev_state=R ==> next_comm=b next_pid=102 next_prio=120",
]

# The host (2 CPUs), its clock 100.00005 s ahead (the middle of an alignment
# bin, so the offset found is exact): vCPU 0 halts as its guest idles,
# wakes, runs 5 ms, loses its CPU to a waiting compiler for 3 ms (the
# slice) and runs again; vCPU 1 is preempted for 40 us by QEMU's woken main
# thread and sleeps 1 ms while its guest CPU is busy (blocked).
HOST = [
    _sw(100.990000, 0, 50, "R", 11),
    _sw(100.990000, 1, 0, "R", 12),
    _wake(101.004000, 1, 13),
    _sw(101.004010, 1, 12, "R", 13),
    _sw(101.004050, 1, 13, "S", 12),
    _sw(101.000050, 0, 11, "S", 0),
    _wake(101.010000, 0, 11),
    _sw(101.010000, 0, 0, "R", 11),
    _sw(101.012000, 1, 12, "S", 0),
    _wake(101.013000, 1, 12),
    _sw(101.013100, 1, 0, "R", 12),
    _sw(101.015000, 0, 11, "R+", 50),
    _sw(101.018000, 0, 50, "S", 11),
]


def _host() -> list[str]:
    return sorted(HOST, key=lambda line: float(line.split("]")[1].split()[1].rstrip(":")))


def test_the_host_trace_is_aligned_on_the_guests_idle_entries() -> None:
    host = _hostrun.parse_host(_host())
    assert host.vcpus == {0: 11, 1: 12}
    guest = _hostrun.guest_idle(GUEST)
    assert guest.entered == {0: [(1_000_000_000, 1_010_000_000)]}
    assert (guest.first, guest.last) == (1_000_000_000, 1_020_000_000)
    # A CPU with no switch in the trace idled throughout.
    assert guest.spans([0, 1, 2]) == {
        0: [(1_000_000_000, 1_010_000_000)], 1: [], 2: [(1_000_000_000, 1_020_000_000)],
    }  # fmt: skip
    offset, share = _hostrun.align(host, guest.entered)
    assert offset == 100_000_050_000
    assert share == 1.0


def test_each_vcpus_time_is_split_into_running_waiting_blocked_and_halted() -> None:
    doc = _hostrun.analyze(_host(), GUEST)
    assert doc["window_s"] == 0.02
    # vCPU 0: halted 9.95 ms (asleep while its guest idled), waiting 3 ms
    # behind the compiler, running 7.05 ms; vCPU 1: running 18.86 ms,
    # waiting 0.04 + 0.1 ms, blocked 1 ms (asleep while its guest ran).
    assert doc["per_vcpu"]["0"] == {
        "running_ms": 7.05, "waiting_ms": 3.0, "blocked_ms": 0.0, "halted_ms": 9.95,
    }  # fmt: skip
    assert doc["per_vcpu"]["1"] == {
        "running_ms": 18.86, "waiting_ms": 0.14, "blocked_ms": 1.0, "halted_ms": 0.0,
    }  # fmt: skip
    assert doc["running_pct"] == pytest.approx(100 * 25.91 / 40, abs=0.01)
    assert doc["waiting_pct"] == pytest.approx(100 * 3.14 / 40, abs=0.01)
    assert doc["blocked_pct"] == pytest.approx(100 * 1.0 / 40, abs=0.01)
    assert doc["halted_pct"] == pytest.approx(100 * 9.95 / 40, abs=0.01)
    assert _hostrun.stall_pct(doc) == pytest.approx(100 * 4.14 / 40, abs=0.02)
    # Why each turn ended: vCPU 0 halted, then lost its CPU to the compiler,
    # which had waited (the slice, after a 5 ms run); vCPU 1 was preempted
    # by a thread woken 10 us before, then slept.
    assert doc["turn_ends"] == {"slept": 2, "slice": 1, "woken other": 1}
    assert doc["slice_ms"]["p50"] == 5.0
    share = doc["host_cpu_share"]
    assert share["other"] == pytest.approx(3.04 / 20, abs=1e-3)
    assert share["idle"] == pytest.approx(11.05 / 20, abs=1e-3)
    assert doc["host_other_top"]["rustc"] == pytest.approx(0.15)
    # Every host CPU's time is someone's, to the window's end.
    assert sum(share.values()) == pytest.approx(doc["host_cpus"], abs=2e-3)


def test_an_offset_most_idle_entries_disagree_with_is_refused() -> None:
    # vCPU 0 sleeps at 101.00005 s and vCPU 1 at 101.012 s; each guest idle
    # entry votes for the offsets that put a sleep of its vCPU after it.
    # Entries at 1.000 s (CPU 0) and 1.001 s (CPU 1) vote for different
    # offsets: the first wins, one of two entries agrees with it.
    host = _hostrun.parse_host(_host())
    idle = {0: [(1_000_000_000, 1_010_000_000)], 1: [(1_001_000_000, 1_002_000_000)]}
    _offset, share = _hostrun.align(host, idle)
    assert share == 0.5
    # A third entry voting for a third offset: one of three agrees.
    idle[1].append((1_003_000_000, 1_004_000_000))
    with pytest.raises(_hostrun.HostTraceError, match="does not align"):
        _hostrun.align(host, idle)


def test_no_vcpu_thread_is_a_clear_error() -> None:
    with pytest.raises(_hostrun.HostTraceError, match="CPU k/TCG"):
        _hostrun.analyze([_sw(1.0, 0, 50, "R", 0)], GUEST)


def test_keep_writes_the_measurement_or_the_reason(tmp_path: Path) -> None:
    doc = _hostrun.keep(_host(), "\n".join(GUEST), tmp_path)
    assert json.loads((tmp_path / "host.json").read_text()) == doc
    assert _hostrun.recorded(tmp_path) == doc
    kept = (tmp_path / "host-trace.txt").read_text().splitlines()
    assert len(kept) == len(HOST)  # 50 ms either side of the guest's span
    tight = _hostrun.cut(_host(), doc["offset_s"], GUEST, margin_s=0)
    assert len(tight) == len(HOST) - 2  # the two switches at 100.99 s fall outside
    # Beside the guest's trace, the kept host trace is measured again (as
    # `validate --reuse` analyzes the guest's again): the same figures.
    (tmp_path / "trace.txt").write_text("\n".join(GUEST) + "\n")
    (tmp_path / "host.json").write_text("{}")
    assert _hostrun.recorded(tmp_path) == doc
    other = tmp_path / "other"
    other.mkdir()
    _hostrun.keep([], "\n".join(GUEST), other)
    assert "error" in json.loads((other / "host.json").read_text())
    assert _hostrun.recorded(other) is None


def test_the_note_names_the_shares_and_the_host_threads_that_took_cpus() -> None:
    doc = _hostrun.analyze(_host(), GUEST)
    note = _hostrun.note([doc, doc])
    assert note is not None
    assert "ran 65%" in note and "waited for a host CPU 8%" in note
    assert "rustc 0.15" in note
    assert _hostrun.note([]) is None


def test_the_simulated_share_is_the_overcommit_hosts_waits(tiny_machine: Path) -> None:
    # Four CPU-bound threads on four vCPUs over two host CPUs: every vCPU is
    # runnable all the time and two of them wait at any moment, half of the
    # vCPUs' time.
    work = "sieve:threads=4,work=100ms"
    host = "overcommit:host_cpus=2,slice=uniform:2000us-6000us"
    res = schedlab.run(str(tiny_machine), [work, host], seed=1, trace=True)
    assert res.trace is not None
    share = _hostrun.simulated_stall_pct(res.trace, 4)
    assert share == pytest.approx(50, abs=3)
    alone = schedlab.run(str(tiny_machine), [work], seed=1, trace=True)
    assert alone.trace is not None
    assert _hostrun.simulated_stall_pct(alone.trace, 4) is None


def test_occupancy_gives_what_the_overcommit_host_needs() -> None:
    occ = _hostrun.analyze(_host(), GUEST)["occupancy"]
    # One vCPU runnable for 10.95 ms, running 10.91 of them (40 us behind
    # QEMU's main thread); two runnable for 9.05 ms, the host running both
    # for 6.05 ms and one for 3 ms (the compiler) and 0.1 ms (vCPU 1 woken).
    assert occ["busy_time_ms"] == {"1": 10.95, "2": 9.05}
    assert occ["other_share"] == {"1": pytest.approx(2 - 10.91 / 10.95, abs=1e-3),
                                  "2": pytest.approx(2 - 15.0 / 9.05, abs=1e-3)}  # fmt: skip
    # Spells with fewer vCPUs running than could: 0.04, 0.1 and 3 ms.
    assert occ["short_spells"] == 3
    assert occ["short_spell_ms"] == pytest.approx(3.14 / 3, abs=1e-4)
    # Every wakeup of a vCPU came with a host CPU idle: no share to give.
    assert occ["wakeups_host_busy"] == 0
    assert occ["wake_preempt_pct"] is None


def test_the_traced_host_is_fitted_only_from_enough_turns(tiny_machine: Path) -> None:
    doc = _hostrun.analyze(_host(), GUEST)
    assert _hostrun.fit(doc, 4) is None  # one slice end is not a distribution
    doc["turn_ends"]["slice"] = 40
    doc["slice_ms"] = {"p10": 1.5, "p50": 3.0, "p90": 5.0}
    doc["occupancy"]["wake_preempt_pct"] = 64.3
    doc["occupancy"]["wakeups_host_busy"] = 700
    fitted = _hostrun.fit(doc, 4)
    assert fitted is not None
    spec, how = fitted
    # K = 3 and 4 were never seen: the nearest count measured stands in.
    assert spec == (
        "overcommit:host_cpus=2,slice=uniform:1500us-5000us,"
        "other_share=1.004;0.343;0.343;0.343,other_run=exp:1047us,wake_preempt=64"
    )
    assert "64% of 700 wakeups" in how
    # It is a spec the simulator takes.
    schedlab.run(str(tiny_machine), ["sieve:threads=4,work=20ms", spec], seed=1)
    # A guest no larger than its host is not time-shared.
    assert _hostrun.fit(doc, 2) is None


@pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists(), reason="this kernel has no autogroups"
)
def test_qemu_gets_an_autogroup_with_the_callers_nice_value() -> None:
    # Under `nice -n 7`, a child in a session of its own gets an autogroup
    # niced 7 too (raising a nice value needs no privilege).
    import subprocess
    import sys

    code = (
        "import subprocess; from schedlab import _tracefs; "
        "p = subprocess.Popen(['sleep', '5'], start_new_session=True); "
        "_tracefs.own_autogroup_nice(p.pid); "
        "print(open(f'/proc/{p.pid}/autogroup').read()); p.kill()"
    )
    done = subprocess.run(
        ["nice", "-n", "7", sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().endswith("nice 7"), done.stdout


def test_a_cpu_idle_before_its_first_switch_counts_as_halted_not_blocked() -> None:
    # Guest CPU 1 runs its idle task until 1.005 s: the trace starts with a
    # switch away from pid 0 there. Its vCPU's sleep before then is a halt.
    guest = [*GUEST]
    guest.insert(
        1,
        "  <idle>-0 [001] d..2. 1.005000: sched_switch: prev_comm=swapper/1 prev_pid=0 "
        "prev_prio=120 prev_state=R ==> next_comm=b next_pid=102 next_prio=120",
    )
    guest[2] = guest[2].replace(" 1.000000:", " 1.006000:")
    idle = _hostrun.guest_idle(guest)
    assert idle.idle_at_start == {1: 1_005_000_000}
    assert idle.spans([1]) == {1: [(1_000_000_000, 1_005_000_000)]}


def test_a_host_trace_that_lost_the_workloads_start_is_refused() -> None:
    # The buffer overran: the host's events before 101.0005 s are gone.
    late = [line for line in _host() if float(line.split("]")[1].split()[1].rstrip(":")) > 101.0]
    with pytest.raises(_hostrun.HostTraceError, match="overran"):
        _hostrun.analyze(late, GUEST)


def test_other_processes_beside_a_native_recording_are_measured() -> None:
    # The workload (wl-pipe threads) runs from 1.000 to 1.010 s; a compiler
    # holds CPU 1 from 0.995 to 1.006 s (6 ms inside), a kworker 1 ms.
    def sw(t: float, cpu: int, pc: str, nc: str, npid: int) -> str:
        return (
            f"  x-1 [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={pc} prev_pid=1 "
            f"prev_prio=120 prev_state=S ==> next_comm={nc} next_pid={npid} next_prio=120"
        )

    trace = "\n".join([
        sw(0.995, 1, "swapper/1", "rustc", 50),
        sw(1.000, 0, "swapper/0", "wl-pipe-0", 100),
        sw(1.006, 1, "rustc", "swapper/1", 0),
        sw(1.007, 1, "swapper/1", "kworker/1:1", 60),
        sw(1.008, 1, "kworker/1:1", "wl-pipe-1", 101),
        sw(1.010, 0, "wl-pipe-0", "swapper/0", 0),
    ])  # fmt: skip
    share, top = _hostrun.others_on_host(trace, "wl-pipe-*")
    assert share == pytest.approx(7 / 10)
    assert top == "rustc"
    assert _hostrun.others_on_host(trace, "absent") == (0.0, "")


def test_the_busy_host_note_names_the_share_and_the_process() -> None:
    assert _hostrun.busy_note([(0.006, "kworker"), (0.02, "tokio")]) is None
    note = _hostrun.busy_note([(0.01, "kworker"), (1.0, "rustc")])
    assert note is not None
    assert "took 0.01, 1.00 of the host's CPUs" in note
    assert "(most: rustc)" in note
