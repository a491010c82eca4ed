"""The no-harm half of SEEDS.md idea 1 (`lawall-nas` holds the gains).

The merged commit (d8fcb81f1acf, "sched/fair: Check for idle core in
wake_affine") gives figures for the class C runs of bt, lu, sp and ua, and
says that on the smaller data sets (A and B) and on the other NAS benchmarks
the patch has no impact on performance; SEEDS.md keeps lu.C's figures and
that sentence ("no change"). These rows are that sentence: the classes A and
B of the four benchmarks with figures, and class C of the other kernels the
`nas` family models (cg, mg, ep; NPB's ft, is and dc are not modelled), on
the same machine, under the same two drivers, v5.9 against
v5.9+wa_idle_prev. Each is judged by the no-change rule, or labelled
structural where the NAS threads never sleep (`_NEVER_WOKEN`).
"""

from __future__ import annotations

from collections.abc import Callable

from ._case import Case, Row, scaled

__all__ = ["LAWALL_NAS_NOHARM"]

_POLICIES = ("v5.9", "v5.9+wa_idle_prev")

#: NPB 3.x's time steps per class (A, B, C): each benchmark's class table
#: (setparams: lu's itmax, bt's, sp's and ua's niter, cg's NITER, mg's nit;
#: ep is one pass), the ones the `nas` family runs with iterations=auto.
#: A case's scale multiplies them, as it does lu.C's 250 in lawall-nas.
NPB_ITERATIONS: dict[str, tuple[int, int, int]] = {
    "bt": (200, 200, 200),
    "sp": (400, 400, 400),
    "lu": (250, 250, 250),
    "ua": (200, 200, 200),
    "cg": (15, 75, 75),
    "mg": (4, 20, 20),
    "ep": (1, 1, 1),
}

#: The runs the publication says did not move: (kernel, class).
_NO_HARM: tuple[tuple[str, str], ...] = (
    ("lu", "A"),
    ("lu", "B"),
    ("bt", "A"),
    ("bt", "B"),
    ("sp", "A"),
    ("sp", "B"),
    ("ua", "A"),
    ("ua", "B"),
    ("cg", "C"),
    ("mg", "C"),
    ("ep", "C"),
)

#: Why most rows cannot move: their NAS threads never sleep. A thread waits
#: at a barrier for as long as the slowest thread's share of the loop; with
#: 160 threads and 62 (class A) or 100 (class B) planes, the threads without
#: a plane wait a whole plane's work. Only bt.B's and lu.B's loops give a
#: plane more than the 3 ms libgomp spins (GOMP_SPINCOUNT 300,000 x 10 ns,
#: omp.rs) before it sleeps on its futex; every other wait ends in the spin.
#: So no wakeup of a NAS thread reaches select_task_rq_fair (measured: the
#: runs place only the 160 forks and, under ondemand, the bound kworkers,
#: whose placement is forced), and the feature is never read.
_NEVER_WOKEN = (
    "the NAS threads never sleep (every barrier wait ends within libgomp's 3 ms spin): no "
    "wakeup reaches wake_affine, so wa_idle_prev is never read"
)

#: The (kernel, class) runs whose NAS threads sleep at barriers, so whose
#: wakeups reach wake_affine_idle; the rest are structural (`_NEVER_WOKEN`).
_WOKEN = {("lu", "B"), ("bt", "B")}

#: The two drivers of the published runs, as lawall-nas runs them.
_DRIVERS = (
    ("active (intel_pstate)", "intel_pstate"),
    ("passive (intel_cpufreq + ondemand)", "ondemand"),
)


def nas_workload(kernel: str, cls: str) -> Callable[[float], str]:
    """NAS ``kernel`` at class ``cls``, one OpenMP thread per hardware
    thread, NPB's time steps times the scale (at least one)."""
    steps = NPB_ITERATIONS[kernel]["ABC".index(cls)]

    def spec(s: float) -> str:
        return f"nas:kernel={kernel},class={cls},iterations={scaled(steps, s)}"

    return spec


LAWALL_NAS_NOHARM = Case(
    name="lawall-nas-noharm",
    title=(
        "Idle prev CPU in wake_affine_idle, no-harm: NAS classes A/B and cg, mg, ep "
        "(Xeon E7-8870 v4)"
    ),
    seed_idea="1",
    machine="xeon-e7-8870v4",
    policies=_POLICIES,
    metrics=("completion_time_s",),
    rows=tuple(
        Row(
            f"{kernel}.{cls} {label}",
            nas_workload(kernel, cls),
            {},
            structural=None if (kernel, cls) in _WOKEN else _NEVER_WOKEN,
            governor=governor,
            no_change="no impact on performance (no figures)",
        )
        for label, governor in _DRIVERS
        for kernel, cls in _NO_HARM
    ),
    default_runs=3,
    notes=(
        "Published (commit d8fcb81f1acf): on the smaller data sets (A and B) and on the other "
        "NAS benchmarks the patch has no impact on performance; no figures. The rows are the "
        "classes A and B of bt, lu, sp and ua (whose class C runs have figures) and class C of "
        "cg, mg and ep (ft, is and dc are not modelled), under lawall-nas's two drivers; each "
        "is judged as a published change of 0%. All but bt.B and lu.B are structural: their "
        "NAS threads never sleep, so no wakeup reaches the changed code. Time steps are NPB's "
        "own per class, times --scale, at least one (so ep, one pass, does not shrink)."
    ),
)
