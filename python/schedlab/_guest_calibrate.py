"""Calibration inside a QEMU guest: `schedlab calibrate`'s probes run in one
boot of a guest (`calibrate_in_guest`), their outputs stored as the host's
calibration stores them, for `_calibrate.costs_from_probes`. The guest itself
(kernel, initramfs, boot, the stall probe's job lines) is `_guest`'s.
"""

from __future__ import annotations

from pathlib import Path

from ._guest import (
    GUEST_EVENTS,
    GUEST_STALL_PROBE,
    GuestError,
    GuestShape,
    _boot_job,
    _kernel_info,
    check_static,
    keep_stall_probes,
    last_json_line,
    stall_probe_lines,
)

# Pipe writes (and reads) the pipe probe times in a guest: fewer than on the
# host (200,000) because a call costs ~21 us under TCG (the guests'
# calibration in docs/validation.md), so 100,000 take ~4 s and still give 390
# batches of 256 for the medians.
GUEST_PIPE_OPS = 100_000
# Wakeups per wakeup probe in a guest: the host's default (`schedlab
# calibrate --chunks`); under TCG each probe runs 2-3 s.
GUEST_PROBE_CHUNKS = 400
# Timed waking writes of the wake probe in a guest, and the sleep between
# them. The host's 200 us gap is too short under TCG, where the guest runs
# ~50 times slower (a pipe write ~12 us against ~0.23 us on this host): the
# SCHED_IDLE reader had not blocked again by the next round, every round was
# skipped and the probe gave up (seen in both guests, which kept the 700 ns
# default). With 5 ms no round was skipped (200 of 200 in a 1s x 2c x 2t
# guest); 400 rounds take 2 s of guest time.
GUEST_WAKE_OPS = 400
GUEST_WAKE_GAP = "5ms"
# The host wake probe (`_hostshare.wake_preempt_pct`): the split wakeup
# probe on two vCPUs while as many vCPUs as the host has CPUs spin, so that
# every host CPU is taken when a halted vCPU is woken. 300 wakeups take
# about 2 s in a 4-vCPU guest on a 2-CPU host (a median 3.6 ms wait each);
# the spinners run 8 s so that they outlast it.
GUEST_HOSTWAKE_CHUNKS = 300
GUEST_HOSTWAKE_SPIN = "stalls:duration=8s,threshold=500us"


def guest_wake_probe() -> str:
    """The wake probe's spec as a guest runs it (`GUEST_WAKE_OPS`,
    `GUEST_WAKE_GAP`)."""
    from ._calibrate import WAKE_PROBE

    return WAKE_PROBE.format(count=GUEST_WAKE_OPS) + f",gap={GUEST_WAKE_GAP}"


def _calibrate_job(
    chunks: int, pipe_ops: int, buffer_kb: int, nr_cpus: int, host_cpus: int = 0
) -> str:
    """The guest's job for `calibrate_in_guest`: the pipe probe untraced,
    then each wakeup probe under the sched tracepoints, its trace kept apart
    (``/out/<pin>.trace``), as `schedlab calibrate` runs them on a host; and,
    with at least `host_cpus` + 2 vCPUs, the host wake probe
    (``/out/hostwake.trace``: the split probe on the two vCPUs after the
    first `host_cpus`, which spin meanwhile)."""
    from ._calibrate import PIPE_PROBE, PROBE, WAKEUP_PROBES

    enable = "\n".join(f"echo 1 > $T/events/{e}/enable" for e in GUEST_EVENTS)
    lines = [
        "T=/sys/kernel/tracing",
        # A booted kernel traces as soon as events are enabled (tracing_on
        # is 1): off until the traced probes, so that the untraced ones do
        # not pay for the tracepoints.
        "echo 0 > $T/tracing_on",
        f"echo {buffer_kb} > $T/buffer_size_kb",
        enable,
        f"/wl '{PIPE_PROBE.format(count=pipe_ops)}' > /out/pipe.stdout 2> /out/pipe.stderr",
        "echo $? > /out/pipe.rc",
        # A static schedlab-wl older than the wake probe exits 2: no wakeup_ns.
        f"/wl '{guest_wake_probe()}' > /out/wake.stdout 2> /out/wake.stderr",
        "echo $? > /out/wake.rc",
        # 1, 2, ... N vCPUs busy: the host's stalls of them at each count.
        *stall_probe_lines(GUEST_STALL_PROBE, nr_cpus),
    ]
    for pin, _ in WAKEUP_PROBES:
        lines += [
            "echo > $T/trace",
            "echo 1 > $T/tracing_on",
            f"/wl '{PROBE.format(chunks=chunks, pin=pin)}' "
            f"> /out/{pin}.stdout 2> /out/{pin}.stderr",
            f"echo $? > /out/{pin}.rc",
            "echo 0 > $T/tracing_on",
            f"cat $T/trace > /out/{pin}.trace",
            f"cat $T/per_cpu/cpu*/stats | grep -E '^overrun' > /out/{pin}.overruns",
        ]
    if host_cpus >= 1 and nr_cpus >= host_cpus + 2:
        spin = (1 << host_cpus) - 1
        pair = ((1 << (host_cpus + 2)) - 1) & ~spin
        probe = PROBE.format(chunks=GUEST_HOSTWAKE_CHUNKS, pin="split")
        lines += [
            f"taskset {spin:#x} /wl '{GUEST_HOSTWAKE_SPIN}' > /out/hostwake-spin.stdout 2>&1 &",
            "sleep 0.5",
            "echo > $T/trace",
            "echo 1 > $T/tracing_on",
            f"taskset {pair:#x} /wl '{probe}' > /out/hostwake.stdout 2> /out/hostwake.stderr",
            "echo $? > /out/hostwake.rc",
            "echo 0 > $T/tracing_on",
            "cat $T/trace > /out/hostwake.trace",
            "wait",
        ]
    return "\n".join(lines) + "\n"


def calibrate_in_guest(
    shape: GuestShape,
    wl_bin: Path,
    out: Path,
    cache: Path | None = None,
    chunks: int = GUEST_PROBE_CHUNKS,
    pipe_ops: int = GUEST_PIPE_OPS,
    buffer_kb: int = 16384,
    timeout_s: float = 900,
) -> Path:
    """Runs `schedlab calibrate`'s three probes inside one boot of a guest of
    `shape` (`wl_bin`: the static schedlab-wl) and stores their outputs in
    `out` as the host's calibration does (``probe-pipe.json``, ``probe-wake.json``
    and ``probe-stalls-K.json``, K vCPUs spinning for K = 1 to N, when the
    binary has those probes, ``probe-split/`` and ``probe-same/`` with ``trace.txt``,
    ``workload.stdout``, the guest's imported ``machine.toml`` and
    ``kernel.json``), for `_calibrate.costs_from_probes`."""
    import json

    from . import _native
    from ._calibrate import PROBE, WAKEUP_PROBES

    check_static(wl_bin)
    import os

    job = _calibrate_job(chunks, pipe_ops, buffer_kb, shape.cpus, os.cpu_count() or 1)
    text = _boot_job(shape, job, {"/wl": wl_bin}, out, cache, timeout_s)
    result = out / ".guest" / "result"

    for probe in ("pipe", *(pin for pin, _ in WAKEUP_PROBES)):
        rc = text(f"{probe}.rc").strip()
        if rc != "0":
            err = text(f"{probe}.stderr").strip()[-300:]
            raise GuestError(f"the {probe} probe failed in the guest (exit {rc or '?'}): {err}")
    pipe_line = last_json_line(text("pipe.stdout"))
    if pipe_line is None:
        raise GuestError(f"the pipe probe printed no JSON in the guest (see {result}/pipe.stdout)")
    (out / "probe-pipe.json").write_text(json.dumps(json.loads(pipe_line), indent=2) + "\n")
    wake_line = last_json_line(text("wake.stdout"))
    if text("wake.rc").strip() == "0" and wake_line is not None:
        (out / "probe-wake.json").write_text(wake_line + "\n")
    keep_stall_probes(text, shape.cpus, out)
    hostwake = text("hostwake.trace")
    if text("hostwake.rc").strip() == "0" and hostwake:
        (out / "probe-hostwake").mkdir(exist_ok=True)
        (out / "probe-hostwake" / "trace.txt").write_text(hostwake)
    machine = _native.topo_import(str(result / "sys"))
    for pin, _ in WAKEUP_PROBES:
        trace = text(f"{pin}.trace")
        if not trace:
            raise GuestError(f"the guest recorded no trace of the {pin} probe (see {result})")
        rec = out / f"probe-{pin}"
        rec.mkdir(exist_ok=True)
        (rec / "trace.txt").write_text(trace)
        (rec / "workload.stdout").write_text(text(f"{pin}.stdout"))
        (rec / "machine.toml").write_text(machine)
        info = {
            **_kernel_info(shape, text),
            "overruns": text(f"{pin}.overruns").split(),
            "argv": ["/wl", PROBE.format(chunks=chunks, pin=pin)],
        }
        (rec / "kernel.json").write_text(json.dumps(info, indent=2) + "\n")
    return out
