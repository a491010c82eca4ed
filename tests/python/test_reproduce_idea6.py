"""What docs/reproductions.md says of eas-hikey960 (SEEDS.md idea 6), held
here so that a change that flips it fails and has to update the docs."""

from __future__ import annotations

import pytest

from schedlab import _sensitivity, reproduce


@pytest.mark.slow
def test_eas_saves_power_where_published_and_on_the_home_screen_too() -> None:
    judged = reproduce.run_case(reproduce.CASES["eas-hikey960"], jobs=1)
    by = {(j.row.split()[0], j.metric): j for j in judged if j.policy == "eevdf+eas"}
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
        if j.policy == "eevdf+eas"
    }
    assert labels["home", "power_mw"] == "observed: lower"
    # No case keeps its power by dropping frames.
    for row in ("video", "camera", "home"):
        assert abs(by[row, "requests_per_s"].sim_change_pct or 0.0) < 2.0, row
