"""`schedlab calibrate`'s measurement rules on hand-written trace lines."""

import json
import shutil
import statistics
import sys
from pathlib import Path

import pytest

import schedlab
from schedlab import _calibrate, _native

SW = (
    "{comm}-{pid} [{cpu:03d}] d..2. {t}: sched_switch: prev_comm={pc} prev_pid={pp} "
    "prev_prio=120 prev_state=S ==> next_comm={nc} next_pid={np} next_prio=120"
)
WK = (
    "{comm}-{pid} [{cpu:03d}] d..2. {t}: sched_waking: comm={wc} pid={wp} prio=120 "
    "target_cpu={tc:03d}"
)
WU = (
    "{comm}-{pid} [{cpu:03d}] d..2. {t}: sched_wakeup: comm={wc} pid={wp} prio=120 "
    "target_cpu={tc:03d}"
)


def test_ttwu_in_situ_is_waking_to_wakeup_on_the_wakers_cpu() -> None:
    lines = [
        # Local: 8 us from sched_waking to sched_wakeup on CPU 0.
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000000", wc="wl-wq-w0", wp=11, tc=0),
        WU.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000008", wc="wl-wq-w0", wp=11, tc=0),
        # Queued on CPU 1's wake list: the wakeup is traced there, not counted.
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000100", wc="wl-wq-w0", wp=11, tc=1),
        WU.format(comm="<idle>", pid=0, cpu=1, t="1.000140", wc="wl-wq-w0", wp=11, tc=1),
        # Another comm: not counted.
        WK.format(comm="sh", pid=5, cpu=0, t="1.000200", wc="kworker/0:1", wp=7, tc=0),
        WU.format(comm="sh", pid=5, cpu=0, t="1.000209", wc="kworker/0:1", wp=7, tc=0),
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000300", wc="wl-wq-w0", wp=11, tc=0),
        WU.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000309", wc="wl-wq-w0", wp=11, tc=0),
    ]
    assert _calibrate.ttwu_in_situ_ns(lines, "wl-wq") == [8_000, 9_000]
    # The mean between the 10th and 90th percentiles: the outliers drop out.
    assert _calibrate.trimmed_mean_ns([1_000] * 8 + [2_000] * 10 + [900_000, 0]) == 1_562
    assert _calibrate.trimmed_mean_ns([5]) == 5
    assert _calibrate.trimmed_mean_ns([]) == 0


def test_cross_cpu_wakeups_count_only_into_an_idle_cpu() -> None:
    lines = [
        # CPU 1 goes idle; the manager on CPU 0 wakes the worker: 30 us to run.
        SW.format(
            comm="wl-wq-w0", pid=11, cpu=1, t="1.000000", pc="wl-wq-w0", pp=11, nc="swapper/1", np=0
        ),
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000100", wc="wl-wq-w0", wp=11, tc=1),
        SW.format(
            comm="<idle>", pid=0, cpu=1, t="1.000130", pc="swapper/1", pp=0, nc="wl-wq-w0", np=11
        ),
        # CPU 1 busy with another task when the next wakeup comes: not counted.
        SW.format(
            comm="wl-wq-w0", pid=11, cpu=1, t="1.000200", pc="wl-wq-w0", pp=11, nc="other", np=99
        ),
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="1.000300", wc="wl-wq-w0", wp=11, tc=1),
        SW.format(
            comm="other", pid=99, cpu=1, t="1.000900", pc="other", pp=99, nc="wl-wq-w0", np=11
        ),
    ]
    assert _calibrate.wake_to_run_ns(lines, "wl-wq", same_cpu=False) == [30_000]
    assert _calibrate.wake_to_run_ns(lines, "wl-wq", same_cpu=True) == []
    # The busy probe's rule takes the other one: the wakee preempting a task.
    assert _calibrate.wake_to_run_ns(lines, "wl-wq", same_cpu=False, busy=True) == [600_000]


def test_same_cpu_hand_over() -> None:
    lines = [
        WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t="2.000000", wc="wl-wq-w0", wp=11, tc=0),
        SW.format(
            comm="wl-wq-mgr",
            pid=10,
            cpu=0,
            t="2.000004",
            pc="wl-wq-mgr",
            pp=10,
            nc="wl-wq-w0",
            np=11,
        ),
    ]
    assert _calibrate.wake_to_run_ns(lines, "wl-wq", same_cpu=True) == [4_000]


def test_costs_are_written_with_how_they_were_measured() -> None:
    toml = (
        '[machine]\nname = "m"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
        "idle_states = [\n"
        '  { name = "POLL", exit_latency_us = 0, target_residency_us = 0 },\n'
        '  { name = "C1", exit_latency_us = 2, target_residency_us = 2 },\n'
        '  { name = "C6", exit_latency_us = 100, target_residency_us = 600 },\n'
        "]\n[cost]\nl2_kib = 512\nipi_ns = 1500\n"
    )
    # A 200 us idle period fits C1 (residency 2 us), not C6 (600 us).
    assert _calibrate._idle_exit_ns(toml) == 2_000
    out = _calibrate._set_cost(
        toml, {"ipi_ns": (25_000, "measured: x"), "context_switch_ns": (3_000, "measured: y")}
    )
    assert out.count("ipi_ns =") == 1
    assert "ipi_ns = 25000" in out
    assert "# measured: x" in out
    assert "context_switch_ns = 3000" in out
    assert "l2_kib = 512" in out
    _native.topo_show(out, "toml", "test")  # still a valid machine


def _wl() -> list[str]:
    exe = shutil.which("schedlab-wl")
    return [exe] if exe else [sys.executable, "-c", "from schedlab.wl import main; main()"]


def test_the_pipe_probe_times_writes_and_reads() -> None:
    # No root needed: one thread, its own pipe, no tracing.
    doc = _calibrate.pipe_costs(2048, wl=_wl())
    assert doc["family"] == "pipecost"
    for call in ("write", "read"):
        got = doc[call]
        assert got["batches"] == 8
        assert 0 < got["p10_ns"] <= got["p50_ns"] <= got["p90_ns"] < 1e6, got


def test_the_wake_probe_times_writes_that_wake_a_reader_on_the_same_cpu() -> None:
    # No root needed: SCHED_IDLE is a lowering of priority. On a CPU busy
    # with other work the idle-policy reader may not get back to sleep, and
    # the probe refuses (calibrate needs a quiet machine).
    try:
        doc = _calibrate.wake_costs(20, wl=_wl())
    except _native.SimulationError as e:
        if "a busy machine?" not in str(e):
            raise
        pytest.skip(f"this CPU is busy: {e}")
    assert (doc["family"], doc["count"]) == ("wakecost", 20)
    w = doc["wake_write"]
    assert 0 < w["p10_ns"] <= w["p50_ns"] <= w["p90_ns"] < 1e7, w
    assert 0 <= doc["clock_ns"] < 10_000


def test_a_missing_probe_program_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(_native.SimulationError, match=r"calibrate: '.*nope' not found"):
        _calibrate.pipe_costs(256, wl=[str(tmp_path / "nope")])


def test_pipe_costs_are_machine_keys_the_families_read() -> None:
    toml = (
        '[machine]\nname = "m"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
    )
    out = _calibrate._set_cost(
        toml, {"pipe_write_ns": (437, "measured: w"), "pipe_read_ns": (441, "measured: r")}
    )
    assert "# measured: w\npipe_write_ns = 437" in out
    doc = _native.topo_doc(out, "toml", "test")
    assert (doc["cost"]["pipe_write_ns"], doc["cost"]["pipe_read_ns"]) == (437, 441)


GUEST_PROBES = Path(__file__).parent / "fixtures" / "recorded" / "guest-2c2t-calibrate"
# `guest-2c2t-calibrate`: calibrate's three probes run in a 1 socket x 2 cores
# x 2 threads Debian 6.12.95 guest (`_guest.record_in_guest`, one boot each:
# pipecost with count=100000, the workqueue probe with chunks=400 and
# pin=split, then pin=same), kept as `calibrate_in_guest` stores them: the
# pipe probe's JSON line as probe-pipe.json, the first 400 and 300 lines of
# the two traces (`head -n`: 75 and 42 of their wl-wq wakeups), the split
# probe's imported machine and kernel.json.


def test_costs_from_guest_probes_use_the_hosts_arithmetic(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    fig = _calibrate.costs_from_probes(d)
    # The same rules as on the host, computed here from the stored outputs.
    lines = {
        pin: (d / f"probe-{pin}" / "trace.txt").read_text().splitlines()
        for pin in ("split", "same")
    }
    split = _calibrate.wake_to_run_ns(lines["split"], "wl-wq", same_cpu=False)
    same = _calibrate.wake_to_run_ns(lines["same"], "wl-wq", same_cpu=True)
    assert (fig["split"]["n"], fig["same"]["n"]) == (len(split), len(same))
    assert len(split) >= _calibrate.MIN_WAKEUPS
    assert len(same) >= _calibrate.MIN_WAKEUPS
    assert (fig["pipe_write_ns"], fig["pipe_read_ns"]) == (21341, 21244)
    assert fig["context_switch_ns"] == int(statistics.median(same)) - 21244
    # The guest's imported machine has no idle states: no exit latency taken off.
    assert fig["idle_exit_ns"] == 0
    assert fig["ipi_ns"] == int(statistics.median(split)) - fig["context_switch_ns"]
    # TCG makes these tens of times the host's.
    assert 10_000 < fig["context_switch_ns"] < 100_000
    assert 50_000 < fig["ipi_ns"] < 500_000
    text = (d / "machine.toml").read_text()
    where = (
        "schedlab calibrate: inside a QEMU guest (TCG; 1s x 2c x 2t, kernel 6.12.95+deb12-amd64):"
    )
    assert text.count(where) == 5
    assert f"# {where} median same-CPU wakeup-to-run" in text
    # The manager's try_to_wake_up in the same-CPU probe, in situ (shown
    # beside wakeup_ns, which these probes predate).
    ttwu = _calibrate.ttwu_in_situ_ns(lines["same"], "wl-wq")
    assert len(ttwu) >= _calibrate.MIN_WAKEUPS
    assert fig["ttwu_in_situ"] == {"n": len(ttwu), "mean_ns": _calibrate.trimmed_mean_ns(ttwu)}
    doc = _native.topo_doc(text, "toml", "test")
    cost = doc["cost"]
    for key in ("context_switch_ns", "ipi_ns", "pipe_write_ns", "pipe_read_ns"):
        assert cost[key] == fig[key], key
    # The guest's topology is kept; its SMT siblings, two TCG threads on the
    # host, do not slow each other (the import assumed the spec's 60).
    assert "threads_per_core = 2" in text
    assert [t["smt_speed_pct"] for t in doc["core_types"]] == [100]
    probe_machine = (d / "probe-split" / "machine.toml").read_text()
    assert _native.topo_doc(probe_machine, "toml", "t")["core_types"][0]["smt_speed_pct"] == 60


def test_a_guest_recording_directory_of_the_pipe_probe_is_read_too(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    doc = _calibrate.read_pipe_probe(d)
    (d / "probe-pipe.json").unlink()
    assert not _calibrate.probes_stored(d)
    (d / "probe-pipe").mkdir()
    (d / "probe-pipe" / "workload.stdout").write_text("noise\n" + json.dumps(doc) + "\n")
    assert _calibrate.probes_stored(d)
    assert _calibrate.read_pipe_probe(d) == doc


def test_too_few_wakeups_in_a_probe_is_one_clear_error(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    trace = d / "probe-same" / "trace.txt"
    trace.write_text("\n".join(trace.read_text().splitlines()[:40]) + "\n")
    with pytest.raises(_native.SimulationError, match=r"only \d+ usable wakeups in the same probe"):
        _calibrate.costs_from_probes(d)


def test_the_ipi_send_cost_comes_from_the_split_probes_timed_replies(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    # The stored guest probes predate the timing: wakeup_ns is left alone.
    fig = _calibrate.costs_from_probes(d)
    assert fig["ipi_send_ns"] is None
    assert "ipi_send_ns =" not in (d / "machine.toml").read_text()
    # With the manager's timed reply writes (schedlab-wl workqueue pin=split):
    # median write that wakes the other CPU's worker minus the bare write and
    # the machine's wakeup_ns (its default 700 ns).
    timed = {"p10_ns": 2304, "p50_ns": 30159, "p90_ns": 34156, "n": 401}
    (d / "probe-split" / "workload.stdout").write_text(
        json.dumps({"family": "workqueue", "reply_write_ns": timed}) + "\n"
    )
    fig = _calibrate.costs_from_probes(d)
    assert fig["ipi_send_ns"] == 30159 - 21341 - 700
    text = (d / "machine.toml").read_text()
    assert f"ipi_send_ns = {30159 - 21341 - 700}" in text
    assert "median reply write() that wakes a worker blocked on another, idle CPU 30159 ns" in text
    cost = _native.topo_doc(text, "toml", "test")["cost"]
    assert (cost["ipi_send_ns"], cost["wakeup_ns"]) == (30159 - 21341 - 700, 700)
    # Without a measured local wakeup the queued one is not priced apart.
    assert fig["ttwu_queue_ns"] is None
    assert cost.get("ttwu_queue_ns") is None


def test_wakeup_ns_comes_from_the_local_wake_probe(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    shutil.copytree(GUEST_PROBES, d)
    timed = {"p10_ns": 2304, "p50_ns": 30159, "p90_ns": 34156, "n": 401}
    (d / "probe-split" / "workload.stdout").write_text(
        json.dumps({"family": "workqueue", "reply_write_ns": timed}) + "\n"
    )
    # schedlab-wl wakecost: the median write that wakes a reader on the same
    # CPU, minus one clock read and the bare write (the guest's 21,341 ns).
    wake = {"p10_ns": 23000, "p50_ns": 24000, "p90_ns": 26000}
    (d / "probe-wake.json").write_text(
        json.dumps({"family": "wakecost", "count": 2000, "clock_ns": 59, "wake_write": wake})
    )
    fig = _calibrate.costs_from_probes(d)
    wakeup = 24000 - 59 - 21341
    assert fig["wakeup_ns"] == wakeup
    # The IPI's send is what the remote waking write takes beyond that.
    assert fig["ipi_send_ns"] == 30159 - 21341 - wakeup
    text = (d / "machine.toml").read_text()
    assert "median write() that wakes a SCHED_IDLE reader blocked on the same CPU 24000 ns" in text
    assert f"wakeup_ns ({wakeup} ns, measured)" in text
    situ = fig["ttwu_in_situ"]["mean_ns"]
    assert f"on the waker's CPU in the same-CPU probe: {situ} ns" in text
    cost = _native.topo_doc(text, "toml", "test")["cost"]
    assert (cost["wakeup_ns"], cost["ipi_send_ns"]) == (wakeup, 30159 - 21341 - wakeup)
    # Both measured: the queued remote wakeup costs its waker what its write
    # took beyond the bare write, whatever the local wakeup costs.
    assert fig["ttwu_queue_ns"] == cost["ttwu_queue_ns"] == 30159 - 21341
    assert "the waker's whole cost of a wakeup queued on another CPU's wake list" in text
    (d / "probe-wake.json").write_text("{")
    with pytest.raises(_native.SpecError, match=r"probe-wake.json: line 1: not JSON"):
        _calibrate.costs_from_probes(d)


def test_a_measured_exit_latency_is_a_cpu_states_key(tmp_path: Path) -> None:
    base = (
        '[machine]\nname = "m"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
        "idle_states = [\n"
        '  { name = "WFI", exit_latency_us = 1, target_residency_us = 1, STATE0 },\n'
        '  { name = "off", exit_latency_us = 900, target_residency_us = 2000, level = "cluster"'
        "STATE1 },\n]\n"
    )
    ok = base.replace("STATE0", "actual_exit_latency_us = 20").replace("STATE1", "")
    doc = _native.topo_doc(ok, "toml", "ok.toml")
    assert doc["core_types"][0]["idle_states"][0]["actual_exit_latency_ns"] == 20_000
    assert doc["core_types"][0]["idle_states"][1]["actual_exit_latency_ns"] == 900_000
    bad = base.replace(", STATE0", "").replace("STATE1", ", actual_exit_latency_us = 5")
    with pytest.raises(
        _native.SpecError, match=r"idle_states\[1\]\.actual_exit_latency_us.*only on a CPU state"
    ):
        _native.topo_doc(bad, "toml", "bad.toml")


def _probe_dir(d: Path, busy_us: int | None) -> None:
    """Probe outputs of a host whose idle CPU's wakeup takes 50 us, a
    same-CPU hand-over 5 us and (with `busy_us`) a busy CPU's wakeup that."""
    toml = (
        '[machine]\nname = "vm"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
        "idle_states = [\n"
        "  # from cpu0/cpuidle/state0/{name,latency,residency}\n"
        '  { name = "POLL", exit_latency_us = 0, target_residency_us = 0 },\n'
        "  # from cpu0/cpuidle/state1/{name,latency,residency}\n"
        '  { name = "haltpoll idle", exit_latency_us = 1, target_residency_us = 1 },\n'
        "]\n[cost]\nl2_kib = 512\n"
    )
    d.mkdir(parents=True)
    (d / "probe-pipe.json").write_text(
        json.dumps(
            {
                call: {"p10_ns": 390, "p50_ns": 400, "p90_ns": 410, "batches": 8}
                for call in ("write", "read")
            }
        )
    )

    def probe(pin: str, lines: list[str]) -> None:
        (d / f"probe-{pin}").mkdir(parents=True)
        (d / f"probe-{pin}" / "trace.txt").write_text("\n".join(lines) + "\n")
        (d / f"probe-{pin}" / "machine.toml").write_text(toml)

    split, same, busy = [], [], []
    for i in range(30):
        t = 10.0 + i * 0.001
        split += [
            SW.format(comm="wl-wq-w0", pid=11, cpu=1, t=f"{t:.6f}", pc="wl-wq-w0", pp=11,
                      nc="swapper/1", np=0),
            WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t=f"{t + 0.0001:.6f}", wc="wl-wq-w0",
                      wp=11, tc=1),
            SW.format(comm="<idle>", pid=0, cpu=1, t=f"{t + 0.00015:.6f}", pc="swapper/1", pp=0,
                      nc="wl-wq-w0", np=11),
        ]  # fmt: skip
        same += [
            WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t=f"{t:.6f}", wc="wl-wq-w0", wp=11, tc=0),
            SW.format(comm="wl-wq-mgr", pid=10, cpu=0, t=f"{t + 0.000005:.6f}", pc="wl-wq-mgr",
                      pp=10, nc="wl-wq-w0", np=11),
        ]  # fmt: skip
        if busy_us is not None:
            busy += [
                SW.format(comm="wl-wq-w0", pid=11, cpu=1, t=f"{t:.6f}", pc="wl-wq-w0", pp=11,
                          nc="wl-wq-spin", np=12),
                WK.format(comm="wl-wq-mgr", pid=10, cpu=0, t=f"{t + 0.0001:.6f}",
                          wc="wl-wq-w0", wp=11, tc=1),
                SW.format(comm="wl-wq-spin", pid=12, cpu=1,
                          t=f"{t + 0.0001 + busy_us / 1e6:.6f}", pc="wl-wq-spin", pp=12,
                          nc="wl-wq-w0", np=11),
            ]  # fmt: skip
    probe("split", split)
    probe("same", same)
    if busy_us is not None:
        probe("busy", busy)


def test_a_busy_cpu_wakeup_splits_the_idle_wakeup_into_ipi_and_the_states_real_exit(
    tmp_path: Path,
) -> None:
    d = tmp_path / "cal"
    _probe_dir(d, busy_us=12)
    fig = _calibrate.costs_from_probes(d)
    # Hand-over 5 us - read 0.4 = 4.6 us; busy 12 us - 4.6 = 7.4 us of flight;
    # an idle CPU's 50 us - 4.6 - 7.4 = 38 us is the halt's real exit.
    assert (fig["context_switch_ns"], fig["ipi_ns"], fig["actual_exit_ns"]) == (
        4_600,
        7_400,
        38_000,
    )
    text = (d / "machine.toml").read_text()
    assert (
        '{ name = "haltpoll idle", exit_latency_us = 1, target_residency_us = 1, '
        "actual_exit_latency_us = 38 }" in text
    )
    assert "this state's real exit (declared 0 us" not in text  # the 200 us pick is haltpoll
    assert "real exit (declared 1 us, which the governors keep reading)" in text
    assert "wakeup-to-run of a busy CPU 12000 ns (n=30" in text
    doc = _native.topo_doc(text, "toml", "cal")
    halt = doc["core_types"][0]["idle_states"][1]
    assert (halt["exit_latency_ns"], halt["actual_exit_latency_ns"]) == (1_000, 38_000)
    assert doc["cost"]["ipi_ns"] == 7_400
    # Again on its own output: one key and one comment, not two.
    (d / "probe-split" / "machine.toml").write_text(text)
    _calibrate.costs_from_probes(d)
    again = (d / "machine.toml").read_text()
    assert again.count("actual_exit_latency_us") == 1
    assert again.count("this state's real exit") == 1


def test_without_the_busy_probe_the_ipi_takes_the_whole_remainder(tmp_path: Path) -> None:
    d = tmp_path / "cal"
    _probe_dir(d, busy_us=None)
    fig = _calibrate.costs_from_probes(d)
    # 50 us - 4.6 - the declared 1 us exit.
    assert (fig["ipi_ns"], fig["actual_exit_ns"]) == (44_400, None)
    assert "actual_exit_latency_us" not in (d / "machine.toml").read_text()


def test_a_sent_ipi_costs_the_sender_ipi_send_ns(tmp_path: Path) -> None:
    # Ping-pong across two CPUs: a wakeup of the other, idle CPU goes through
    # its wake list and costs the waker an IPI send (20 us here). The sends
    # mostly overlap the partner's run (the waker pays after it has woken
    # the partner); what lands on the round trip's path, about 10 us of the
    # two sends, makes 2,000 round trips 20 ms longer (26.0 -> 46.4 ms).
    toml = (
        '[machine]\nname = "m"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
        "[cost]\nl2_kib = 512\n"
    )
    times = []
    for send in (0, 20_000):
        m = tmp_path / f"m{send}.toml"
        m.write_text(toml + f"ipi_send_ns = {send}\n")
        res = schedlab.run(str(m), "pipe:loops=2000,mode=thread", policy="v6.12", seed=0)
        times.append(res.metrics["completion_time_s"])
    assert times[1] - times[0] > 0.4 * 2000 * 20e-6, times


def test_a_queued_remote_wakeup_costs_its_waker_ttwu_queue_ns(tmp_path: Path) -> None:
    # Ping-pong across two idle CPUs: every wakeup goes through the other
    # CPU's wake list. With a 50 us local wakeup (a TCG guest's order), the
    # waker pays wakeup_ns + ipi_send_ns per wakeup unless the machine prices
    # the queued wakeup apart (ttwu_queue_ns, 5 us here): the round trips
    # get shorter, and the key changes nothing else.
    toml = (
        '[machine]\nname = "m"\n[topology]\npackages = 1\nnodes_per_package = 1\n'
        "llcs_per_node = 1\nclusters_per_llc = 1\ncores_per_cluster = 2\nthreads_per_core = 1\n"
        '[[core_type]]\nname = "c"\ncores = "all"\ncapacity = 1024\nnominal_freq_mhz = 2000\n'
        "[cost]\nl2_kib = 512\nwakeup_ns = 50000\n"
    )
    res = {}
    for extra in ("", "ttwu_queue_ns = 5000\n"):
        m = tmp_path / f"m{len(extra)}.toml"
        m.write_text(toml + extra)
        r = schedlab.run(str(m), "pipe:loops=2000,mode=thread", policy="v6.12", seed=0)
        res[extra] = r.metrics
    old, new = res[""], res["ttwu_queue_ns = 5000\n"]
    assert new["wake_prev_cpu_pct"] == old["wake_prev_cpu_pct"] == 100
    # 4,000 wakeups, each 45 us cheaper for its waker; as with the IPI send
    # above, about half of it was on the round trip's path (0.105 -> 0.026 s).
    saved = old["completion_time_s"] - new["completion_time_s"]
    assert saved > 0.3 * 4000 * 45e-6, (old["completion_time_s"], new["completion_time_s"])


def test_the_stall_probe_gives_the_stall_noise(tmp_path: Path) -> None:
    # 111 gaps per CPU-second of 5.34 ms on average (a 2-vCPU TCG guest on
    # the 2-CPU development VM): stalls every 1/111 s, 5.3 ms long.
    d = tmp_path / "cal"
    d.mkdir()
    assert _calibrate.stall_noise(d) is None  # no probe run
    doc = {"family": "stalls", "gaps": 666, "per_s": 111.0, "mean_ns": 5343041,
           "threshold_ns": 500000, "cpus": 2, "stalled_fraction": 0.593}  # fmt: skip
    (d / "probe-stalls.json").write_text(json.dumps(doc))
    specs, how = _calibrate.stall_noise(d) or ([], "")
    assert specs == ["stall:interval=exp:9009us,duration=exp:5343us"]
    assert "111 per CPU-second, mean 5.3 ms, 59% of the time" in how
    schedlab.run("laptop-4c8t", ["sieve:threads=2,work=5ms", *specs], seed=0)  # a valid spec
    (d / "probe-stalls.json").write_text(json.dumps(dict(doc, gaps=0)))
    assert _calibrate.stall_noise(d) is None
    (d / "probe-stalls.json").write_text("{")
    with pytest.raises(_native.SpecError, match=r"probe-stalls.json: not the stall probe's JSON"):
        _calibrate.stall_noise(d)


def test_stall_probes_per_busy_count_give_one_gated_source_each(tmp_path: Path) -> None:
    # A 4-vCPU guest on a 2-CPU host (2026-11-24): 1 vCPU spinning stalls
    # 1% of the time, 2 about 5%, 4 about 54%; a count without a gap gives
    # no source, and these files win over an older all-vCPU probe.
    d = tmp_path / "cal"
    d.mkdir()
    (d / "probe-stalls.json").write_text("{")  # ignored beside the per-count probes
    for k, gaps, per_s, mean_ns in ((1, 0, 0.0, 0), (2, 217, 36.2, 1443000), (4, 1630, 135.8, 3980000)):
        doc = {"family": "stalls", "gaps": gaps, "per_s": per_s, "mean_ns": mean_ns,
               "threshold_ns": 500000, "cpus": k, "stalled_fraction": per_s * mean_ns / 1e9}  # fmt: skip
        (d / f"probe-stalls-{k}.json").write_text(json.dumps(doc))
    specs, how = _calibrate.stall_noise(d) or ([], "")
    assert specs == [
        "stall:busy=2,interval=exp:27624us,duration=exp:1443us",
        "stall:busy=4,interval=exp:7364us,duration=exp:3980us",
    ]
    assert "1 busy: 0 gaps" in how
    assert "4 busy: 1630 gaps (136 per CPU-second, mean 4.0 ms, 54% of the time)" in how
    res = schedlab.run("laptop-4c8t", ["sieve:threads=2,work=5ms", *specs], seed=0)
    assert res.metrics["completion_time_s"] > 0
