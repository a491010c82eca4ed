"""Reproduction case of SEEDS.md idea 6: energy-aware placement on Hikey960.

The seed measured average power (mW) of Android use cases on a Hikey960
(4 x A73 + 4 x A53, fixed DDR and GPU frequencies) with and without
energy-aware scheduling, PELT signals: EAS saved about 13% on video playback
and 8% on camera recording, and cost slightly more on the home screen. Here
the use cases are the `android` workload family (video and audio after
rt-app's recorded Android use cases, camera and home screen estimated), run
under schedutil, since EAS needs a frequency governor to act through. EAS
is on by default there, as the kernel enables it (asymmetric capacities, an
energy model, schedutil, no SMT): `eevdf-eas` is the run without it.
"""

from __future__ import annotations

from ._case import Case, Row, scaled

__all__ = ["EAS_HIKEY960"]

_POLICIES = ("eevdf-eas", "eevdf")


def _use_case(case: str) -> Row:
    return Row(
        f"{case} (android:case={case})",
        lambda s: f"android:case={case},time={scaled(2000, s, 200)}ms",
        {},
    )


#: Published changes of average power with EAS, as (without, with) on a
#: base of 100: video -13%, camera -8%. The home screen's "slightly more" has
#: no figure, and audio playback none at all: no verdict for them.
_PUBLISHED: tuple[dict[str, float], ...] = (
    {"eevdf-eas": 100.0, "eevdf": 87.0},
    {},
    {"eevdf-eas": 100.0, "eevdf": 92.0},
    {},
)

EAS_HIKEY960 = Case(
    name="eas-hikey960",
    title="Energy-aware placement on Hikey960: average power of Android use cases (PELT)",
    seed_idea="6",
    machine="hikey960",
    policies=_POLICIES,
    metrics=("power_mw", "requests_per_s"),
    rows=tuple(_use_case(c) for c in ("video", "audio", "camera", "home")),
    published_by_metric={"power_mw": _PUBLISHED, "requests_per_s": ({}, {}, {}, {})},
    default_runs=3,
    governor="schedutil",
    knobs=("idle_states.power_pct_of_lowest_opp",),
    notes=(
        "Published as relative changes of average power (video -13%, camera -8%, home screen "
        "'slightly more', audio not given), shown here on a base of 100. The simulated power is "
        "the CPUs' only (the preset's OPP table and idle states; no GPU, DDR or display), so a "
        "placement change weighs more against it than against a whole board's; hikey960's "
        "preset gives no idle power, so idle CPUs cost nothing and the saving is the active "
        "power of running on the LITTLE cluster at low OPPs. requests_per_s is each case's "
        "frame rate: it shows that the saving does not come from dropped frames."
    ),
)
