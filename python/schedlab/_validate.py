"""`schedlab validate`: the same workloads on the real kernel and in the
simulator, compared metric by metric against the targets of issue 8.

For each case, the native program runs here under `schedlab record` (several
repetitions) and is analyzed with its comm filter on the machine imported
from this host's /sys; the simulated counterpart runs on that same machine
description, with the policy that models the recorded kernel
(`_kernel_profile.policy_for_kernel`), over several seeds. Targets:

* placement fractions (``wake_*_pct``) within 5 percentage points;
* ``migrations_per_wakeup`` within 25%, or 0.01 absolute when both are
  below 0.04;
* ``context_switches`` within 10% (of the real mean);
* ``completion_time_s`` compared (within 15%) only on a machine
  ``schedlab calibrate`` wrote.

A case may show more metrics without comparing them (``Case.shown``): the
schbench case's wakeup latencies, from the trace (``wakeup_latency_*``) and
as the program itself measures them (``app_wakeup_latency_*``, read from the
JSON line the native program printed, ``workload.stdout`` beside the trace).

No constant is tuned to pass: a miss is reported as one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import _hostrun, _hostshare, _native, _stalls, _tracefs, _wakewide
from ._kernel_profile import domain_notes, kernel_notes, policy_for_kernel, tunable_notes
from ._resolve import resolve_machine, resolve_workloads
from ._result import run_sources

FRACTIONS = (
    "wake_prev_cpu_pct",
    "wake_smt_sibling_pct",
    "wake_same_llc_pct",
    "wake_other_llc_pct",
    "wake_other_node_pct",
    "wake_on_waker_cpu_pct",
)
COMPARED = (*FRACTIONS, "migrations_per_wakeup", "context_switches", "completion_time_s")
#: Shown beside every case's compared rows: the share of the workload's
#: wakeups in which `wake_wide()` held, replayed on the recordings and on the
#: simulation's traces alike (every seed; `_wakewide`).
SHOWN_ALWAYS = ("wake_wide_pct", "host_stall_pct")
#: How a guest's stalls are simulated (`validate --stall-model`).
STALL_MODELS = ("host", "probes", "independent")


@dataclasses.dataclass(frozen=True)
class Case:
    """One workload, natively and simulated."""

    name: str
    #: The native command; its first word must be on PATH.
    argv: tuple[str, ...]
    #: Comm pattern of the workload's tasks in the real trace.
    comm: str
    #: The simulated counterpart (a workload spec).
    workload: str
    #: What the mapping between the two assumes.
    note: str
    #: Metrics shown next to the compared ones, not compared.
    shown: tuple[str, ...] = ()


#: The schbench case's metrics as the native program prints them (its JSON
#: line: ``schedlab-wl schbench``) -> the simulated run's metric names.
PROGRAM_METRICS = {
    ("wakeup_latency_us", "p50"): "app_wakeup_latency_p50_us",
    ("wakeup_latency_us", "p99"): "app_wakeup_latency_p99_us",
    ("request_latency_us", "p50"): "request_latency_p50_us",
    ("request_latency_us", "p99"): "request_latency_p99_us",
    ("requests_per_s",): "requests_per_s",
}
#: What the schbench case shows besides the compared metrics.
SCHBENCH_SHOWN = (
    "wakeup_latency_p50_us",
    "wakeup_latency_p99_us",
    "app_wakeup_latency_p50_us",
    "app_wakeup_latency_p99_us",
    "requests_per_s",
)


def program_metrics(stdout: str) -> dict[str, float]:
    """The metrics of `PROGRAM_METRICS` from the last JSON line of a native
    program's output (nothing when there is none, or it has none of them)."""
    doc: Any = None
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            break
    out: dict[str, float] = {}
    if not isinstance(doc, dict):
        return out
    for path, name in PROGRAM_METRICS.items():
        v: Any = doc
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, int | float):
            out[name] = float(v)
    return out


def default_cases(scale: float = 1.0) -> list[Case]:
    """The validation cases, run natively with schedlab's own programs
    (``schedlab-wl``, installed with the package)."""
    loops = max(100, int(20000 * scale))
    msg_loops = max(10, int(100 * scale))
    chunks = max(20, int(400 * scale))
    hb = f"hackbench:groups=2,fds=20,loops={msg_loops},ipc=pipe,mode=thread"
    wq = f"workqueue:threads=4,chunks={chunks},chunk=1ms"
    pp = f"pipe:loops={loops},mode=thread"
    runtime_ms = max(200, int(2000 * scale))
    sb = f"schbench:message_threads=1,threads=2,runtime={runtime_ms}ms,operations=5,op=200us"
    return [
        Case(
            "ping-pong",
            ("schedlab-wl", pp),
            "wl-pipe-*",
            pp,
            "two threads over two pipes (perf bench sched pipe -T): the same spec natively and "
            "simulated (the simulated pipe family's ring of 2, one token; pipe writes wake with "
            "WF_SYNC)",
        ),
        Case(
            "hackbench-saturated",
            ("schedlab-wl", hb),
            "wl-hb-*",
            hb,
            "2 groups of 20 sender and 20 receiver threads over pipes, 100-byte messages: the same "
            "spec natively and simulated",
        ),
        Case(
            "work-queue",
            ("schedlab-wl", wq),
            "wl-wq-*",
            wq,
            "a manager and 4 workers over pipes, 1 ms chunks: the same spec natively and simulated",
        ),
        Case(
            "schbench",
            ("schedlab-wl", sb),
            "wl-sb-*",
            sb,
            "schbench's futex mode, 1 message thread and 2 workers, 100 us sleep (+50 us timer "
            "slack), 5 operations per request: the same spec natively and simulated; op=200us "
            "given so that the native workers spin 200 us per operation instead of multiplying "
            "matrices, whose speed the simulation only estimates. Latencies shown, not compared",
            SCHBENCH_SHOWN,
        ),
    ]


def select_cases(names: Sequence[str], scale: float = 1.0) -> list[Case]:
    """The default cases named in `names`, in their usual order; an unknown
    name is a `SpecError` listing the valid ones."""
    cases = default_cases(scale)
    known = [c.name for c in cases]
    for n in names:
        if n not in known:
            raise _native.SpecError(f"--case: expected one of {', '.join(known)}, got '{n}'")
    return [c for c in cases if c.name in names]


def _metrics(doc: dict[str, Any]) -> dict[str, float]:
    return {
        m["name"]: (math.nan if m["value"] is None else float(m["value"])) for m in doc["metrics"]
    }


def _mean(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return statistics.fmean(vals) if vals else math.nan


def verdict(
    metric: str, real: float, sim: float, calibrated: bool = False, guest: bool = False
) -> str:
    """``pass``, ``MISS`` or ``not compared`` for one metric; completion
    times are compared (within 15%) only on a calibrated machine, and not in
    an emulated `guest`: there they follow the host's load (the same guest
    ping-pong took 4.96 s and 66.9 s in two boots in a row, docs/validation.md),
    and issue 8's time target is this machine's."""
    if math.isnan(real) or math.isnan(sim):
        return "absent"
    if metric == "completion_time_s":
        if guest:
            return "not compared (guest: follows the host's load)"
        if not calibrated:
            return "not compared (uncalibrated)"
        return "pass" if abs(sim - real) <= 0.15 * max(abs(real), 1e-12) else "MISS"
    if metric in FRACTIONS:
        return "pass" if abs(sim - real) <= 5.0 else "MISS"
    if metric == "migrations_per_wakeup":
        if real < 0.04 and sim < 0.04:
            return "pass" if abs(sim - real) <= 0.01 else "MISS"
        return "pass" if abs(sim - real) <= 0.25 * max(abs(real), 1e-12) else "MISS"
    if metric == "context_switches":
        return "pass" if abs(sim - real) <= 0.10 * max(abs(real), 1e-12) else "MISS"
    return "not compared"


def recording_flips(trace_text: str, info: dict[str, Any]) -> list[int]:
    """The `wakee_flips` a recording's workload threads inherited, for the
    simulated family's `parent_wakee_flips`: each thread's own count in fork
    order when the guest's fork probe saw the program's threads
    (`_guest.inherited_flips`, a per-task list; ``[N]`` when every thread
    got the same N), else ``[launcher count]`` (one count for all), else
    ``[]`` (a host recording has no probe)."""
    from ._guest import inherited_flips

    counts = inherited_flips(trace_text)
    if counts:
        return counts if len(set(counts)) > 1 else counts[:1]
    flips = info.get("launcher_wakee_flips")
    return [int(flips)] if flips is not None else []


def flips_value(flips: Sequence[int]) -> str:
    """The `parent_wakee_flips` value for `flips`: one count for all
    (``[8]`` -> ``8``), or one per forked task (``2;3;5``); ``''`` when
    every count is 0 (the key's default)."""
    if not any(flips):
        return ""
    return ";".join(str(f) for f in flips)


def _spread(flips: Sequence[int]) -> str:
    """min-median-max of a per-thread list (lower median, a count)."""
    return f"{min(flips)}-{statistics.median_low(flips)}-{max(flips)}"


def _recorded_info(info_file: Path) -> dict[str, Any] | None:
    """A recording's kernel.json, or None when there is none; a damaged one
    is a `SpecError` naming it."""
    if not info_file.is_file():
        return None
    try:
        info = json.loads(info_file.read_text())
    except json.JSONDecodeError as e:
        raise _native.SpecError(f"{info_file}: line {e.lineno}: --reuse: not JSON ({e.msg})") from e
    if not isinstance(info, dict):
        raise _native.SpecError(f"{info_file}: --reuse: expected a JSON object")
    return info


def _recorded(out: Path) -> dict[str, Any] | None:
    """What `record` returned for a recording already in `out` (its
    kernel.json), or None when `out` holds no complete recording."""
    if not ((out / "trace.txt").is_file() and (out / "machine.toml").is_file()):
        return None
    return _recorded_info(out / "kernel.json")


def run_case(
    case: Case,
    work: Path,
    reps: int,
    seeds: int,
    record: Callable[[list[str], Path], dict[str, Any]],
    parent_wakee_flips: int | None = None,
    machine_file: Path | None = None,
    reuse: bool = False,
    noise: Sequence[str] = (),
    vcpu_stalls: Sequence[str] = (),
    own_stalls: bool = False,
    stall_model: str = "host",
    wake_preempt: int | None = None,
) -> dict[str, Any]:
    """Records `case` `reps` times, simulates it over `seeds` seeds, and
    compares the means. `parent_wakee_flips` is the count the simulated tasks
    inherit; without it, each recording's own (`recording_flips`: a guest's
    fork probe measures each thread's, passed on as a per-task
    `parent_wakee_flips=N;N;...` list) is simulated over `seeds` seeds and
    the means taken over recordings and seeds; a host recording has none
    (0). The result's ``flips`` holds what each recording was simulated with
    (``[N]``: one count for all) and ``simulated`` the specs. With
    `reuse`, a recording already in `work` (trace, machine and kernel.json)
    is analyzed again instead of recorded. `noise` are noise workload specs
    run beside each simulation. `vcpu_stalls` are a guest's vCPU stalls (`stall`
    specs from its calibration), run beside each recording's simulation
    unless, with `own_stalls`, the recording stored its own
    (``probe-stalls-K.json``, measured after it in its boot), which then win:
    with `stall_model` "host", as the host the recording's own host trace
    measured (`_hostrun.fit`, ``host.json``) or, without one, the host those
    probes fit ("probes" always: `_hostshare`; both the `overcommit` family,
    vCPUs time-shared by the recording host's CPUs), with "independent", as
    one busy-gated `stall` source per count."""
    from . import _calibrate

    real_runs: list[dict[str, float]] = []
    rep_flips: list[list[int]] = []
    rep_stalls: list[tuple[str, ...]] = []
    own_shares: list[list[tuple[int, float]]] = []
    host_fits: list[tuple[int, str, str]] = []  # (recording, spec, how it was fitted)
    host_load: list[str] = []
    host_sides: list[dict[str, Any]] = []
    others_beside: list[tuple[float, str]] = []  # other processes' CPUs, native recordings
    recovered: list[int] = []
    stalls: list[_stalls.LongRuns] = []
    info: dict[str, Any] = {}
    cpus = 1
    for i in range(reps):
        out = work / case.name / f"real-{i}"
        kept = _recorded(out) if reuse else None
        info = kept if kept is not None else record(list(case.argv), out)
        if info.get("host_loadavg") is not None:
            host_load.append(f"{info['host_loadavg']:g}")
        text = (out / "trace.txt").read_text(errors="replace")
        machine_text = (out / "machine.toml").read_text()
        doc = _native.analyze_trace(
            text,
            str(out / "trace.txt"),
            (machine_text, "toml", str(out / "machine.toml")),
            [case.comm],
            [],
        )
        recovered.append(int(doc.get("inferred_switches") or 0))
        cpus = _nr_cpus(text, info)
        stalls.append(_stalls.long_runs(text, case.comm, cpus, _hz(machine_text)))
        if not doc.get("selected_tasks"):
            raise _native.SimulationError(
                f"validate {case.name}: no task named '{case.comm}' in {out}/trace.txt"
            )
        stdout = out / "workload.stdout"
        own = program_metrics(stdout.read_text(errors="replace")) if stdout.exists() else {}
        # The trace's figures win; the program adds what only it measures
        # (a trace has no request or benchmark-side wakeup marks: NaN there).
        traced = _metrics(doc)
        own = {k: v for k, v in own.items() if math.isnan(traced.get(k, math.nan))}
        real_runs.append({**traced, **own})
        start = _wakewide.fork_flips(text) or (parent_wakee_flips or 0)
        wide = _wakewide.wide_share(text, case.comm, start, _wakewide.llc_sizes(machine_text))
        if wide is not None:
            real_runs[-1]["wake_wide_pct"] = 100 * wide
        if info.get("source") != "qemu":
            others_beside.append(_hostrun.others_on_host(text, case.comm))
        side = _hostrun.recorded(out)
        if side is not None:
            host_sides.append(side)
            real_runs[-1]["host_stall_pct"] = _hostrun.stall_pct(side)
        if parent_wakee_flips is not None:
            rep_flips.append([parent_wakee_flips])
        else:
            rep_flips.append(recording_flips(text, info))
        measured = None
        host_cpus = int(info.get("host_cpus") or 0)
        fitted = _hostshare.fit(out, host_cpus, wake_preempt) if own_stalls else None
        hosted = _hostrun.fit(side, cpus) if side and own_stalls and stall_model == "host" else None
        if hosted is not None:
            measured = ([hosted[0]], hosted[1])
            host_fits.append((i, hosted[0], hosted[1]))
        elif fitted is not None and stall_model in ("host", "probes"):
            measured = ([fitted.spec()], fitted.describe())
            host_fits.append((i, fitted.spec(), fitted.describe()))
        elif own_stalls:
            # Independent stalls, asked for or the only model the probes
            # allow (no per-count probes, no host CPU count).
            measured = _calibrate.stall_noise(out)
            if measured:
                own_shares.append(_calibrate.stall_shares(out))
        rep_stalls.append(tuple(measured[0]) if measured else tuple(vcpu_stalls))
    policy, notes = policy_for_kernel(
        str(info.get("kernel_release", "")), list(info.get("sched_features", []))
    )
    notes += kernel_notes(info) + tunable_notes(info, cpus)
    machine_path = machine_file or work / case.name / "real-0" / "machine.toml"
    machine = resolve_machine(str(machine_path))
    # A machine `schedlab calibrate` wrote carries its measured costs.
    simulated_machine = Path(machine_path).read_text()
    calibrated = "schedlab calibrate:" in simulated_machine
    notes += domain_notes(info, simulated_machine)

    def spec(flips: Sequence[int]) -> str:
        value = flips_value(flips)
        return case.workload + (f",parent_wakee_flips={value}" if value else "")

    # Every seed keeps its trace: for `wake_wide()` replayed on it as on the
    # recordings, and, with stalls simulated, for the stalls' footprint
    # (`_stalls.long_runs` on the simulated tasks, the seeds' mean), by flips
    # and stalls.
    sim_long: dict[tuple[tuple[int, ...], tuple[str, ...]], float] = {}
    sim_llc = _wakewide.llc_sizes(simulated_machine)
    sim_hz = _hz(simulated_machine)

    def simulate(flips: Sequence[int], beside: Sequence[str]) -> list[dict[str, float]]:
        sources = [spec(flips), *noise, *beside]
        runs = []
        long_shares = []
        for seed in range(seeds):
            res = run_sources(machine, resolve_workloads(sources), policy, seed, trace=True)
            metrics = dict(res.metrics)
            if res.trace is not None:
                if beside:
                    long_shares.append(_stalls.long_runs(res.trace, "*", cpus, sim_hz).share)
                start: dict[int, int] | int = (
                    _wakewide.flips_in_start_order(res.trace, "*", list(flips))
                    if len(flips) > 1
                    else (flips[0] if flips else 0)
                )
                wide = _wakewide.wide_share(res.trace, "*", start, sim_llc)
                if wide is not None:
                    metrics["wake_wide_pct"] = 100 * wide
                if host_sides:
                    host = _hostrun.simulated_stall_pct(res.trace, cpus)
                    metrics["host_stall_pct"] = host if host is not None else 0.0
            runs.append(metrics)
        if long_shares:
            sim_long[(tuple(flips), tuple(beside))] = statistics.fmean(long_shares)
        return runs

    # One simulation per distinct list (and stalls) and seed, weighted by
    # how many recordings had them (equal ones give identical runs). A
    # per-thread list whose length is not the family's number of forked
    # tasks (a probe line lost, a thread the family does not model) falls
    # back to its lower median for all, and the note says so.
    Key = tuple[tuple[int, ...], tuple[str, ...]]
    runs_of: dict[Key, list[dict[str, float]]] = {}
    run_as: dict[Key, list[int]] = {}
    for i, (flips, beside) in enumerate(zip(rep_flips, rep_stalls, strict=True)):
        key = (tuple(flips), beside)
        if key in run_as:
            continue
        run_as[key] = flips
        try:
            runs_of[key] = simulate(flips, beside)
        except _native.SpecError as e:
            if len(flips) < 2 or "parent_wakee_flips" not in str(e):
                raise
            median = statistics.median_low(flips)
            notes.append(
                f"recording {i}: the fork probe saw {len(flips)} threads, which is not the "
                f"simulated family's number of forked tasks ({e}); simulated with the lower "
                f"median {median} for every task"
            )
            run_as[key] = [median]
            runs_of[key] = runs_of.get(((median,), beside)) or simulate([median], beside)
    keys = [(tuple(f), s) for f, s in zip(rep_flips, rep_stalls, strict=True)]
    sim_runs = [m for k in keys for m in runs_of[k]]
    rep_flips = [run_as[k] for k in keys]
    rows = []
    for m in (*COMPARED, *case.shown, *SHOWN_ALWAYS):
        if m == "host_stall_pct" and not host_sides:
            continue  # no host trace: a host recording, or one made without tracefs
        real = _mean([r.get(m, math.nan) for r in real_runs])
        sim = _mean([r.get(m, math.nan) for r in sim_runs])
        # The recordings' own spread: where it is wider than the target, the
        # referee does not repeat itself to the target's precision.
        each = [v for r in real_runs if not math.isnan(v := r.get(m, math.nan))]
        rows.append(
            {
                "metric": m,
                "real": real,
                "real_min": min(each, default=math.nan),
                "real_max": max(each, default=math.nan),
                "sim": sim,
                "diff": sim - real,
                "verdict": verdict(m, real, sim, calibrated, info.get("source") == "qemu"),
            }
        )
    specs = [spec(f) for f in rep_flips]
    per_thread = parent_wakee_flips is None and any(len(f) > 1 for f in rep_flips)
    return {
        "case": case.name,
        "native": " ".join(case.argv),
        "workload": specs[0] if len(set(specs)) == 1 and not per_thread else case.workload,
        "simulated": specs,
        "flips": rep_flips,
        "flips_per_thread": per_thread,
        "flips_measured": parent_wakee_flips is None and (per_thread or len(set(specs)) > 1),
        "policy": policy,
        "kernel": info.get("kernel_release", ""),
        "machine": str(machine_path),
        "calibrated": calibrated,
        "notes": [
            case.note,
            *notes,
            *_recovered_note(recovered),
            *_opt(_hostrun.note(host_sides)),
            *_opt(_hostrun.busy_note(others_beside)),
            *_opt(
                _stalls.note(
                    stalls,
                    any(s for s in rep_stalls),
                    [sim_long[r] for k in keys if (r := (tuple(run_as[k]), k[1])) in sim_long],
                )
            ),
            *[f"simulated beside the noise `{n}`" for n in noise],
            *_stalls.stall_notes(rep_stalls, own_shares, vcpu_stalls, host_fits),
            *_opt(
                f"the host's 1-minute load average as each recording's boot ended: "
                f"{', '.join(host_load)} (on {info.get('host_cpus', '?')} host CPUs; the more "
                "it runs besides the guest, the more the guest's vCPUs stall)"
                if host_load
                else None
            ),
        ],
        "stalled_pct": [round(100 * f.share, 1) for f in stalls],
        "inferred_switches": recovered,
        "reps": reps,
        "seeds": seeds,
        "rows": rows,
    }


def _recovered_note(recovered: Sequence[int]) -> list[str]:
    """A note when the kernel lost switches the analysis recovered (see
    `analyze`'s `inferred_switches`), so a reader knows the real side was
    repaired."""
    if not any(recovered):
        return []
    counts = ", ".join(f"{n:,}" for n in recovered)
    return [
        f"the kernel's trace lost sched_switch lines that later lines' task columns prove "
        f"({counts} per recording): analyze recovered them"
    ]


def validate(
    out: Path,
    reps: int = 3,
    seeds: int = 3,
    scale: float = 1.0,
    cases: Sequence[Case] | None = None,
    parent_wakee_flips: int | None = None,
    qemu: str | None = None,
    wl_bin: Path | None = None,
    machine_file: Path | None = None,
    reuse: bool = False,
    calibrate: bool | None = None,
    noise: Sequence[str] = (),
    stalls: bool = True,
    stall_model: str = "host",
) -> list[dict[str, Any]]:
    """Every case, natively on this host (under `schedlab record`) or, with
    `qemu` (a `GuestShape` spec), inside a QEMU guest booted from Debian's
    kernel with that topology, running the static `wl_bin`. A case whose
    native program is missing is reported as skipped with the reason.

    With `calibrate` (None: on with `qemu` unless `machine_file` is given,
    off on the host), `schedlab calibrate`'s probes run first where the cases
    run (in the guest: one extra boot; with `reuse`, their outputs already in
    ``out/calibrate`` are used instead) and the cases are simulated on
    ``out/calibrate/machine.toml``, the imported machine with the measured
    costs (`calibrated_machine`). There, with `stalls`, the stalls the
    guest's stall probes measured are simulated beside every case, after
    `noise`: as the host they fit (`stall_model` "host" or "probes": `_hostshare`, the
    `overcommit` family) or as independent per-count `stall` sources
    ("independent": `_calibrate.stall_noise`)."""
    if stall_model not in STALL_MODELS:
        raise _native.SpecError(
            f"--stall-model: expected {', '.join(STALL_MODELS)}, got '{stall_model}'"
        )
    results: list[dict[str, Any]] = []
    record: Callable[[list[str], Path], dict[str, Any]]
    if calibrate is None:
        calibrate = qemu is not None and machine_file is None
    if calibrate and machine_file is not None:
        raise _native.SpecError(
            "--calibrate: validate either calibrates (into OUT/calibrate/machine.toml) or "
            "simulates on --machine; give one of them (or --no-calibrate)"
        )
    if qemu is not None:
        from . import _guest

        shape = _guest.GuestShape.parse(qemu)
        if wl_bin is None or not wl_bin.is_file():
            raise _native.SpecError(
                "--wl-bin: validate --qemu needs the static schedlab-wl binary (RUSTFLAGS='-C "
                "target-feature=+crt-static' cargo build --release -p schedlab-wl --target "
                "x86_64-unknown-linux-gnu)"
            )
        binary = wl_bin

        def record(argv: list[str], o: Path) -> dict[str, Any]:
            guest_argv = ["/wl" if argv[0] == "schedlab-wl" else argv[0], *argv[1:]]
            _guest.check_static(binary)  # only when a guest boots: --reuse needs no binary
            _guest.record_in_guest(shape, guest_argv, {"/wl": binary}, o, stall_probes=stalls)
            info: dict[str, Any] = json.loads((o / "kernel.json").read_text())
            return info

    else:

        def record(argv: list[str], o: Path) -> dict[str, Any]:
            return _tracefs.record(argv, o)

    calibration: dict[str, Any] | None = None
    cal_stalls: list[str] = []
    wake_preempt: int | None = None
    if calibrate:
        machine_file, calibration = calibrated_machine(
            out / "calibrate", reuse, (shape, binary) if qemu is not None else None
        )
        from . import _calibrate

        measured = _calibrate.stall_noise(out / "calibrate") if qemu is not None else None
        if stall_model in ("host", "probes") and qemu is not None:
            # The calibration boot's host: this one (the recordings carry
            # their own count in kernel.json).
            wake_preempt = _hostshare.wake_preempt_pct(out / "calibrate")
            fitted = _hostshare.fit(out / "calibrate", os.cpu_count() or 1, wake_preempt)
            if fitted is not None:
                measured = ([fitted.spec()], fitted.describe())
        if stalls and measured is not None:
            cal_stalls = measured[0]
            calibration["stalls"] = (" ".join(measured[0]), measured[1])
    for case in cases if cases is not None else default_cases(scale):
        kept = reuse and all(_recorded(out / case.name / f"real-{i}") for i in range(reps))
        if qemu is None and not kept and shutil.which(case.argv[0]) is None:
            results.append({"case": case.name, "skipped": f"'{case.argv[0]}' not found"})
            continue
        results.append(
            run_case(
                case,
                out,
                reps,
                seeds,
                record,
                parent_wakee_flips,
                machine_file,
                reuse,
                noise,
                vcpu_stalls=cal_stalls,
                own_stalls=stalls and qemu is not None,
                stall_model=stall_model,
                wake_preempt=wake_preempt,
            )
        )
        if calibration is not None:
            results[-1]["calibration"] = calibration
    return results


#: The figures of a calibration a validate result carries.
CALIBRATION_KEYS = ("context_switch_ns", "ipi_ns", "pipe_write_ns", "pipe_read_ns", "where")
# Costs a calibration measures only where its probes could (the wake probe,
# the split probe's timed replies): shown when measured.
CALIBRATION_OPTIONAL = ("wakeup_ns", "ipi_send_ns", "ttwu_queue_ns", "refill_ns_per_kib")


def calibrated_machine(
    d: Path, reuse: bool, guest: tuple[Any, Path] | None = None
) -> tuple[Path, dict[str, Any]]:
    """Calibrates into `d` (`schedlab calibrate` on this host, or its probes
    in one boot of the guest `guest` = (`GuestShape`, static schedlab-wl));
    with `reuse`, probe outputs already in `d` are used without running
    anything (a guest's must come from a guest of the same shape). Returns
    ``d/machine.toml`` and the costs with where they were measured."""
    from . import _calibrate

    stored = reuse and _calibrate.probes_stored(d)
    if guest is not None:
        shape, binary = guest
        if stored:
            info_file = d / "probe-split" / "kernel.json"
            info = _recorded_info(info_file)
            got = (info or {}).get("shape")
            if got != dataclasses.asdict(shape):
                raise _native.SpecError(
                    f"{info_file}: --reuse: the stored calibration probes ran in a guest of "
                    f"{got}, not the asked {dataclasses.asdict(shape)}"
                )
        else:
            from . import _guest_calibrate

            _guest_calibrate.calibrate_in_guest(shape, binary, d)
        figures = _calibrate.costs_from_probes(d)
    else:
        figures = _calibrate.calibrate(d, reuse=stored)
    got = {k: figures[k] for k in CALIBRATION_KEYS}
    return d / "machine.toml", got | {
        k: figures[k] for k in CALIBRATION_OPTIONAL if figures.get(k) is not None
    }


def _cost_text(v: Any) -> str:
    """A calibrated cost as the notes show it: a number, or a table's
    entries (``refill_ns_per_kib``) as ``key=value`` pairs."""
    return " ".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else str(v)


def _nr_cpus(trace_text: str, info: dict[str, Any]) -> int:
    """The recorded machine's CPUs: kernel.json's count, else the trace
    header's ``#P:N``."""
    if info.get("nr_cpus"):
        return int(info["nr_cpus"])
    m = re.search(r"#P:(\d+)", trace_text[:2000])
    return int(m.group(1)) if m else 1


def _hz(machine_text: str) -> int:
    """The machine file's ``[machine] hz`` (250, the spec's default, when absent)."""
    doc = _native.topo_doc(machine_text, "toml", "machine.toml")
    return int(doc.get("machine", {}).get("hz", 250))


def _opt(line: str | None) -> list[str]:
    return [line] if line else []


def _range(row: dict[str, Any]) -> str:
    """The recordings' lowest and highest value of a row (``-`` when a
    stored result predates them)."""
    lo, hi = row.get("real_min", math.nan), row.get("real_max", math.nan)
    return "-" if math.isnan(lo) else f"{_fmt(lo)} - {_fmt(hi)}"


def in_real_range(row: dict[str, Any]) -> bool:
    """Whether the simulated value lies within the recordings' own range."""
    lo, hi = row.get("real_min", math.nan), row.get("real_max", math.nan)
    return not math.isnan(lo) and lo <= row["sim"] <= hi


def _fmt(v: float) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "-"
    return f"{v:.4g}"


def _flips_note(r: dict[str, Any]) -> str:
    """How the simulated side took the recordings' inherited `wakee_flips`
    when they differed (each recording simulated with its own)."""
    if not r.get("flips_measured"):
        return ""
    if r.get("flips_per_thread"):
        spreads = ", ".join(_spread(f) for f in r["flips"])
        return (
            f" with each thread's inherited `wakee_flips` (`parent_wakee_flips=N;N;...`, "
            f"min-median-max {spreads} per recording)"
        )
    counts = ", ".join(flips_value(f) or "0" for f in r["flips"])
    return f" with `parent_wakee_flips` {counts} (one per recording, as its threads inherited)"


def markdown(results: Sequence[dict[str, Any]], title: str) -> str:
    """The results as markdown tables, one per case."""
    lines = [f"## {title}", ""]
    for r in results:
        if "skipped" in r:
            lines += [f"### {r['case']}: skipped ({r['skipped']})", ""]
            continue
        if "decisions" in r:
            from ._kernel_decisions import markdown_section

            lines += markdown_section(r)
            continue
        lines += [
            f"### {r['case']}",
            "",
            f"Native: `{r['native']}` ({r['reps']} recordings, kernel {r['kernel']}); simulated: "
            f"`{r['workload']}`{_flips_note(r)} under `{r['policy']}` ({r['seeds']} seeds"
            + (" per recording)" if r.get("flips_measured") else ")")
            + (f" on the calibrated `{r['machine']}`." if r.get("calibrated") else "."),
            "",
            "| metric | real | real's range | simulated | sim - real | verdict |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {row['metric']} | {_fmt(row['real'])} | {_range(row)} | {_fmt(row['sim'])} | "
            f"{_fmt(row['diff'])} | {row['verdict']} |"
            for row in r["rows"]
        ]
        cal = r.get("calibration")
        notes = list(r["notes"])
        if cal:
            where = str(cal.get("where", "")).strip().rstrip(":") or "on this host"
            notes.append(
                f"costs measured by schedlab calibrate's probes {where}: context_switch_ns "
                f"{cal['context_switch_ns']}, ipi_ns {cal['ipi_ns']}, pipe_write_ns "
                f"{cal['pipe_write_ns']}, pipe_read_ns {cal['pipe_read_ns']}"
                + "".join(f", {k} {_cost_text(cal[k])}" for k in CALIBRATION_OPTIONAL if k in cal)
            )
            if cal.get("stalls"):
                spec, how = cal["stalls"]
                notes.append(f"the stalls `{spec}`: measured {where}, {how}")
        lines += ["", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines) + "\n"
