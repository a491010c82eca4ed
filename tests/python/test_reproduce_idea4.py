"""The idea-4 observations docs/reproductions.md reports (nothing published
to judge against): each test holds the direction the docs claim, by the
spread rule the sensitivity labels use, so that a change that flips one
fails here and has to update the docs."""

from __future__ import annotations

import pytest

from schedlab import _sensitivity, reproduce


def _observed(case: str) -> dict[tuple[str, str, str], str]:
    """(row's first words, metric, policy) -> "observed: lower|higher|within
    spread" for every comparison of ``case`` at its default scale."""
    judged = reproduce.run_case(reproduce.CASES[case], jobs=1)
    assert {j.verdict for j in judged if j.verdict != "baseline"} == {"no published figure"}
    return {
        (" ".join(j.row.split()[:3]), j.metric, j.policy): label
        for j, label in _sensitivity._labelled(judged)
    }


@pytest.mark.slow
def test_sis_scan_mask_scans_less_but_is_not_a_universal_win() -> None:
    # The idle mask cuts the CPUs scanned per wakeup on every row, yet
    # hackbench is not faster with it by more than a few percent; the time
    # limit never binds (the waker's avg_idle / 20 ns allows more than the
    # LLC's 48 CPUs). The 6-group row was 4.5% slower with the mask while
    # socket writers were woken one per read; with the kernel's rule (all at
    # once at a quarter of sk_sndbuf) it is 1.8% faster; since a waker pays
    # its own wakeups before a wakee preempts it (the preemption point),
    # 11.9% slower, and the 2- and 12-group rows 1.2% and 3.3% faster: its
    # direction was already known to move with almost every knob
    # (docs/reproductions.md). What holds: never faster by more than a few
    # percent, and slower on some row.
    got = _observed("sis-scan")
    rows = ("hackbench groups=2 (80", "hackbench groups=6 (240", "hackbench groups=12 (480")
    mask, limit = "v5.9+llc_idle_mask", "v5.9+sis_time_limit"
    for row in rows:
        assert got[row, "scanned_per_wakeup_mean", mask] == "observed: lower", row
    judged = reproduce.run_case(reproduce.CASES["sis-scan"], jobs=1)
    times = [j for j in judged if j.metric == "completion_time_s" and j.policy == mask]
    assert len(times) == 3
    changes = [j.sim_change_pct for j in times]
    assert all(c > -5 for c in changes), changes
    assert any(c > 0 for c in changes), changes
    limited = {v for (_, _, p), v in got.items() if p == limit}
    assert limited == {"observed: within spread"}


@pytest.mark.slow
@pytest.mark.parametrize("case", ["cluster-first-kunpeng920", "cluster-first-jacobsville"])
def test_cluster_first_places_more_in_the_cluster_and_costs_pgbench_tps(case: str) -> None:
    # At 24 clients (every CPU of the node busy at times) the cluster scan
    # finds idle CPUs where mainline stacked the wakee on the waker's CPU:
    # more wakeups placed on idle CPUs, more moves inside clusters, and
    # fewer transactions per second. At 8 clients tps does not move.
    got = _observed(case)
    policy = "eevdf+sis_cluster_first"
    assert got["pgbench -c 24", "place_idle_cpu", policy] == "observed: higher"
    assert got["pgbench -c 24", "migrations_cluster", policy] == "observed: higher"
    assert got["pgbench -c 24", "requests_per_s", policy] == "observed: lower"
    assert got["pgbench -c 8", "requests_per_s", policy] == "observed: within spread"
    assert all(v != "observed: higher" for (_, m, _), v in got.items() if m == "requests_per_s")


@pytest.mark.slow
def test_idler_llc_keeps_wakees_in_their_llc_and_wins() -> None:
    # The manager's wakeups of workers in other CCXs: idler_llc keeps them in
    # their own (idler) LLC instead of pulling them to the manager's, so
    # cross-LLC moves and completion time both fall on both rows.
    got = _observed("idler-llc")
    for row in ("work queue, 50%", "work queue, 31.25%"):
        for metric in ("migrations_package", "wake_other_llc_pct", "completion_time_s"):
            assert got[row, metric, "eevdf+idler_llc"] == "observed: lower", (row, metric)
