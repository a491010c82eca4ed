"""What docs/reproductions.md says of eas-hikey960 (SEEDS.md idea 6), held
here so that a change that flips it fails and has to update the docs."""

from __future__ import annotations

import pytest

from schedlab import _sensitivity, reproduce


@pytest.mark.slow
def test_eas_saves_power_where_published_and_on_the_home_screen_too() -> None:
    judged = reproduce.run_case(reproduce.CASES["eas-hikey960"], jobs=1)
    by = {(j.row.split()[0], j.metric): j for j in judged if j.policy == "eevdf"}
    # Video and camera: the published sign (less power), more than twice the
    # published size with the preset's zero idle power (the sensitivity
    # knob idle_states.power_pct_of_lowest_opp brings it within 2x).
    for row in ("video", "camera"):
        j = by[row, "power_mw"]
        assert j.verdict == "reproduced", (row, j.verdict)
        assert j.magnitude_within_2x is False, (row, j.sim_change_pct)
    # Home screen: published "slightly more", simulated clearly less (no
    # figure to judge by; the docs list it as not reproduced in direction).
    labels = {
        (" ".join(j.row.split()[:1]), j.metric): label
        for j, label in _sensitivity._labelled(judged)
        if j.policy == "eevdf"
    }
    assert labels["home", "power_mw"] == "observed: lower"
    # No case keeps its power by dropping frames.
    for row in ("video", "camera", "home"):
        assert abs(by[row, "requests_per_s"].sim_change_pct or 0.0) < 2.0, row


@pytest.mark.slow
def test_with_idle_power_the_saving_comes_within_2x_of_the_published() -> None:
    # docs/reproductions.md: the magnitude hangs on the preset's zero idle
    # power; at idle_states.power_pct_of_lowest_opp = 10 video and camera
    # come within twice the published savings.
    case = reproduce.CASES["eas-hikey960"]
    knob = _sensitivity.CASE_KNOBS["idle_states.power_pct_of_lowest_opp"]
    doc = _sensitivity._machine_doc(case)
    knob.apply(doc, 10)
    judged = dict(
        ((j.row.split()[0], j.metric), j)
        for j, _ in _sensitivity._judged_on(case, doc, None, 1.0, 1, None)
        if j.policy == "eevdf"
    )
    for row in ("video", "camera"):
        j = judged[row, "power_mw"]
        assert j.verdict == "reproduced", (row, j.verdict)
        assert j.magnitude_within_2x is True, (row, j.sim_change_pct)


@pytest.mark.slow
def test_the_saving_is_the_big_cluster_left_idle() -> None:
    # docs/reproductions.md's mechanism: without EAS the big cluster (fd1)
    # spends most of video's energy (83%), with EAS a small part (6%).
    import schedlab

    def big_share(policy: str) -> float:
        r = schedlab.run(
            "hikey960", "android:case=video", policy=policy, governor="schedutil", seed=0
        )
        return r.metrics["energy_j.fd1"] / r.metrics["energy_j"]

    assert big_share("eevdf-eas") > 0.7
    assert big_share("eevdf") < 0.15
