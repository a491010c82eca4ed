"""Runs past the slice and a tick in a recording (`_stalls`): what a stalled
CPU leaves in a trace, which `validate` names in its notes."""

from __future__ import annotations

import pytest

from schedlab import _stalls


def _line(cpu: int, t: float, comm: str, pid: int, event: str, rest: str) -> str:
    return f"  {comm}-{pid}     [{cpu:03d}] d..2.  {t:.6f}: {event}: {rest}"


def _switch(cpu: int, t: float, prev: tuple[str, int], state: str, nxt: tuple[str, int]) -> str:
    return _line(
        cpu, t, prev[0], prev[1], "sched_switch",
        f"prev_comm={prev[0]} prev_pid={prev[1]} prev_prio=120 prev_state={state} ==> "
        f"next_comm={nxt[0]} next_pid={nxt[1]} next_prio=120",
    )  # fmt: skip


def _wakeup(cpu: int, t: float, who: tuple[str, int], target: int) -> str:
    return _line(
        cpu, t, "<idle>", 0, "sched_wakeup",
        f"comm={who[0]} pid={who[1]} prio=120 target_cpu={target:03d}",
    )  # fmt: skip


IDLE = ("swapper/0", 0)
A = ("wl-a", 10)
B = ("other", 11)


def _trace(wake_b_at: float | None, a_runs_until: float) -> str:
    lines = [_switch(0, 1.000, IDLE, "R", A)]
    if wake_b_at is not None:
        lines.append(_wakeup(0, wake_b_at, B, 0))
    lines.append(_switch(0, a_runs_until, A, "R", B if wake_b_at is not None else IDLE))
    return "\n".join(lines) + "\n"


def test_the_slice_follows_the_kernels_log_scaling() -> None:
    # 0.7 ms x (1 + ilog2(min(CPUs, 8))).
    got = [_stalls.base_slice_ns(n) for n in (1, 2, 3, 4, 8, 192)]
    assert got == [700_000, 1_400_000, 1_400_000, 2_100_000, 2_800_000, 2_800_000]


def test_a_run_past_slice_and_tick_with_a_waiter_is_counted() -> None:
    # 2 CPUs, HZ 250: limit 1.4 + 4 ms. A runs 10 ms, B waits from 1 ms on.
    r = _stalls.long_runs(_trace(1.001, 1.010), "wl-*", 2, 250)
    assert r.limit_ns == 5_400_000
    assert (r.runs, r.total_runs) == (1, 1)
    assert r.share == pytest.approx(1.0)


def test_a_long_run_alone_or_with_a_late_waiter_is_not() -> None:
    # Alone: nothing to preempt it for. B waking 2 ms before the end: within
    # the slice and a tick of its arrival.
    for trace in (_trace(None, 1.020), _trace(1.008, 1.010)):
        r = _stalls.long_runs(trace, "wl-*", 2, 250)
        assert (r.runs, r.total_runs, r.share) == (0, 1, 0.0)


def test_only_the_selected_threads_are_measured() -> None:
    r = _stalls.long_runs(_trace(1.001, 1.010), "wl-b*", 2, 250)
    assert (r.runs, r.total_runs) == (0, 0)


def test_the_note_names_each_recordings_share_from_one_percent() -> None:
    low = _stalls.LongRuns(0.005, 5_400_000, 1, 300)
    assert _stalls.note([low, low]) is None
    high = _stalls.LongRuns(0.479, 5_400_000, 386, 13612)
    text = _stalls.note([high, low])
    assert text is not None
    assert "(5.4 ms)" in text
    assert "48%, 0%" in text
    assert "stalled" in text
    assert text.endswith("the simulated machine does not stall")
    beside = _stalls.note([high, low], simulated=True)
    assert beside is not None and beside.endswith("stalls too (how: below)")
    # The simulated trace's own share, per recording, when validate kept it.
    both = _stalls.note([high, low], simulated=True, sim_shares=[0.52, 0.36])
    assert both is not None and both.endswith("give 52%, 36% (per recording, its seeds' mean)")


def test_the_idle_task_is_never_a_selected_thread() -> None:
    # `*` (a simulated trace's tasks) selects every task but the idle one.
    # A runs, the CPU idles 10 ms, A runs again: A's run is the one counted.
    trace = _trace(None, 1.010) + _switch(0, 1.020, IDLE, "R", A) + "\n"
    assert _stalls.long_runs(trace, "*", 2, 250).total_runs == 1
