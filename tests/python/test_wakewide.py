"""`wake_wide()` replayed on a trace (`_wakewide`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab import _wakewide


def _waking(t: float, waker: tuple[str, int], wakee: tuple[str, int], cpu: int = 0) -> str:
    return (
        f"  {waker[0]}-{waker[1]}     [{cpu:03d}] d..2.  {t:.6f}: sched_waking: "
        f"comm={wakee[0]} pid={wakee[1]} prio=120 target_cpu={cpu:03d}"
    )


W = ("wl-s", 10)
WAKEES = [(f"wl-r{i}", 20 + i) for i in range(5)]


def test_a_waker_turns_wide_once_its_flips_reach_four_times_the_wakees() -> None:
    # The wakees start with 4 flips (= the LLC's 4 CPUs), the waker with 0:
    # each wakeup of another wakee adds one, so from its 16th on
    # master >= 4 x slave: 5 of 20 wakeups are wide.
    lines = [_waking(1 + i * 0.001, W, WAKEES[i % 5]) for i in range(20)]
    start = {10: 0, **{pid: 4 for _, pid in WAKEES}}
    assert _wakewide.wide_share("\n".join(lines), "wl-*", start, [4]) == pytest.approx(5 / 20)
    # Wakees below the LLC's size never are (slave < sd_llc_size).
    assert _wakewide.wide_share("\n".join(lines), "wl-*", {10: 0}, [4]) == 0.0
    # Only the selected threads count; none selected: no share.
    assert _wakewide.wide_share("\n".join(lines), "other*", start, [4]) is None


def test_the_wakers_flips_halve_once_a_second() -> None:
    # 16 wakeups make the waker wide; 1.5 s later its first wakeup halves
    # the count (17 -> 8, +1 = 9 < 16): not wide.
    lines = [_waking(1 + i * 0.001, W, WAKEES[i % 5]) for i in range(16)]
    lines.append(_waking(2.6, W, WAKEES[1]))
    start = {10: 0, **{pid: 4 for _, pid in WAKEES}}
    assert _wakewide.wide_share("\n".join(lines), "wl-*", start, [4]) == pytest.approx(1 / 17)


def test_flips_at_fork_and_in_start_order() -> None:
    probe = (
        "  wl-700 [001] d..2. 1.000000: fork_flips: (wake_up_new_task+0x0/0x2f0) pid=701 flips=43\n"
        "  wl-700 [001] d..2. 1.000100: fork_flips: (wake_up_new_task+0x0/0x2f0) pid=702 flips=57\n"
    )
    assert _wakewide.fork_flips(probe) == {701: 43, 702: 57}
    new = "  <idle>-0 [000] d..2. 0.000000: sched_wakeup_new: comm=hb pid={} prio=120 target_cpu=0"
    sim = "\n".join(new.format(pid) for pid in (1001, 1000))
    assert _wakewide.flips_in_start_order(sim, "*", [3, 9]) == {1001: 3, 1000: 9}


def test_llc_sizes_of_a_machine(fixtures_dir: Path) -> None:
    sizes = _wakewide.llc_sizes((fixtures_dir / "tiny-2c4t.toml").read_text())
    assert sizes == [4, 4, 4, 4]  # one LLC of 2 cores x 2 threads
