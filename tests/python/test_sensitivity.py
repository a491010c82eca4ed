"""`schedlab reproduce CASE --sensitivity`: each assumed machine parameter
moved over its range, the case judged again, and per row whether its verdict
held."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from schedlab import _sensitivity, reproduce
from schedlab.cli import app


def test_knobs_change_the_machine_and_apply_only_where_they_mean_something() -> None:
    doc = {
        "topology": {"threads_per_core": 1},
        "core_type": [{"idle_states": [{"exit_latency_us": 10}], "smt_speed_pct": 60}],
    }
    smt, ipi, exit_ = _sensitivity.KNOBS
    assert not smt.applies(doc)
    assert exit_.applies(doc)
    ipi.apply(doc, 5000)
    exit_.apply(doc, 2.0)
    assert doc["cost"] == {"ipi_ns": 5000}
    assert doc["core_type"][0]["idle_states"][0]["exit_latency_us"] == 20
    doc["topology"]["threads_per_core"] = 2
    assert smt.applies(doc)
    smt.apply(doc, 100)
    assert doc["core_type"][0]["smt_speed_pct"] == 100


def test_a_changed_machine_changes_the_runs() -> None:
    # roy-saturation at small scale: no SMT penalty must move the work-queue
    # times (the SMT speed factor is most of its simulated gain), so the
    # changed machine really reaches the runs.
    case = reproduce.CASES["roy-saturation"]
    smt = _sensitivity.KNOBS[0]
    one = _sensitivity.Sensitivity("r", "m", "p", "v", {})
    assert one.holds
    one.varied["x=1"] = "w"
    assert not one.holds
    res, columns = _sensitivity.run_sensitivity(case, scale=0.05, jobs=1, knobs=(smt,))
    assert columns == [f"smt_speed_pct={v:g}" for v in smt.values]
    assert all(set(r.varied) == set(columns) for r in res)
    assert {r.row for r in res} == {row.label for row in case.rows}
    doc = _sensitivity._machine_doc(case)
    smt.apply(doc, 100)
    changed = _sensitivity.resolve_machine(doc)
    base = reproduce.run_case(case, scale=0.05, jobs=1)
    moved = reproduce.run_case(case, scale=0.05, jobs=1, machine=changed)
    wq = [i for i, j in enumerate(base) if j.row.startswith("work queue")]
    assert any(base[i].sim_mean != moved[i].sim_mean for i in wq)


def test_cli_sensitivity_json_and_refusals() -> None:
    runner = CliRunner()
    res = runner.invoke(
        app, ["reproduce", "roy-saturation", "--sensitivity", "--no-verdict", "--runs", "1"]
    )
    assert res.exit_code == 2
    res = runner.invoke(
        app,
        ["reproduce", "roy-saturation", "--sensitivity", "--scale", "0.02", "-j", "1", "--json"],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [k["name"] for k in doc["knobs"]] == [k.name for k in _sensitivity.KNOBS]
    assert doc["results"]
    assert all("holds" in r for r in doc["results"])


def test_roy_saturation_magnitude_hangs_on_the_smt_assumption() -> None:
    # docs/reproductions.md (roy-saturation's mechanism and the sensitivity
    # list): without an SMT penalty the patch still wins on the work-queue
    # rows but by less than half the published gain, and BMQ's gain turns
    # into a loss.
    case = reproduce.CASES["roy-saturation"]
    doc = _sensitivity._machine_doc(case)
    _sensitivity.KNOBS[0].apply(doc, 100)
    judged = reproduce.run_case(case, jobs=1, machine=_sensitivity.resolve_machine(doc))
    wq = [j for j in judged if j.row.startswith("work queue")]
    patch = [j for j in wq if j.policy == "eevdf+prefer_prev_idle_core"]
    bmq = [j for j in wq if j.policy == "bmq"]
    assert len(patch) == len(bmq) == 2
    assert all(j.verdict == "reproduced" and j.magnitude_within_2x is False for j in patch)
    assert all(j.verdict == "not reproduced (opposite)" for j in bmq)


def test_joel_rt_hackbench_verdicts_move_with_the_ipi_cost() -> None:
    # docs/reproductions.md's sensitivity list: the verdicts turn with the
    # IPI cost. While socket writers were woken one per read, the 1- and
    # 4-group rows showed a small gain only at 5 us per IPI (opposite at the
    # preset's 1.5 us). With the kernel's rule (all at once, at a quarter of
    # sk_sndbuf) it is the reverse: a small gain at 1.5 us
    # (test_reproduce.py), the opposite at 5 us (+2.7%, +1.3%), and the
    # 2-group row changes (+7.7%). Since a waker pays its own wakeups before
    # a wakee preempts it (the preemption point), the 1- and 4-group rows are
    # opposite at both costs (+0.5% and +6.0% at 1.5 us, +4.9% and +7.4% at
    # 5 us), and the 2-group row is what moves: changed at 1.5 us (+10.5%),
    # unchanged at 5 us (-0.9%).
    case = reproduce.CASES["joel-rt-hackbench"]
    doc = _sensitivity._machine_doc(case)
    _sensitivity.KNOBS[1].apply(doc, 5000)
    judged = reproduce.run_case(case, jobs=1, machine=_sensitivity.resolve_machine(doc))
    got = {j.row.split(",")[0]: j for j in judged if j.policy.endswith("current")}
    assert got["groups=1"].verdict == "not reproduced (opposite)"
    assert got["groups=4"].verdict == "not reproduced (opposite)"
    assert got["groups=2"].verdict == "reproduced (no change)"
    preset = reproduce.run_case(case, jobs=1)
    at_preset = {j.row.split(",")[0]: j for j in preset if j.policy.endswith("current")}
    assert at_preset["groups=2"].verdict == "not reproduced (sim changed)"


def test_case_knobs_change_the_machine_and_every_named_knob_exists() -> None:
    doc: dict[str, object] = {"topology": {"clusters_per_llc": 6, "llcs_per_node": 1}}
    scan = _sensitivity.CASE_KNOBS["cost.scan_ns_per_cpu"]
    cluster = _sensitivity.CASE_KNOBS["cost.refill_ns_per_kib.cluster"]
    package = _sensitivity.CASE_KNOBS["cost.refill_ns_per_kib.package"]
    assert cluster.applies(doc)
    assert not package.applies(doc)
    scan.apply(doc, 100)
    cluster.apply(doc, 30)
    package.apply(doc, 300)
    assert doc["cost"] == {
        "scan_ns_per_cpu": 100,
        "refill_ns_per_kib": {"cluster": 30, "package": 300},
    }
    # The changed document is still a machine the core accepts.
    case = reproduce.CASES["cluster-first-kunpeng920"]
    machine = _sensitivity._machine_doc(case)
    for knob in _sensitivity.knobs_for(case)[3:]:
        knob.apply(machine, knob.values[0])
    assert _sensitivity.resolve_machine(machine).text
    for c in reproduce.CASES.values():
        names = [k.name for k in _sensitivity.knobs_for(c)]
        assert names[:3] == [k.name for k in _sensitivity.KNOBS]
        assert names[3:] == list(c.knobs)


def test_an_observation_is_labelled_by_its_direction() -> None:
    # Nothing published: the label is the simulated direction beyond the
    # spread (the larger sd, at least 1% of the baseline), so that
    # --sensitivity says whether an observation holds.
    def j(policy: str, mean: float, sd: float, verdict: str) -> reproduce.Judged:
        return reproduce.Judged("r", "m", policy, None, None, mean, sd, None, verdict, None)

    base = j("a", 100.0, 0.0, "baseline")
    labels = [
        label
        for _, label in _sensitivity._labelled(
            [
                base,
                j("b", 90.0, 1.0, "no published figure"),
                j("c", 100.5, 0.0, "no published figure"),
                j("d", 104.0, 5.0, "no published figure"),
                j("e", 120.0, 0.0, "no published figure"),
            ]
        )
    ]
    assert labels == [
        "observed: lower",
        "observed: within spread",
        "observed: within spread",
        "observed: higher",
    ]
