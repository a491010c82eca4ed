"""A kernel's wakeup decisions against the model's (schedlab._kernel_decisions,
schedlab._btf, `schedlab kernel-decisions`): the probe, the table made from
its lines, the BTF offsets, and the replay of recorded tables; recording in a
guest is a slow test."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab import _btf
from schedlab import _kernel_decisions as kd

DECISIONS = Path(__file__).parent / "fixtures" / "decisions"
GUESTS = (
    "guest-1s2c2t",
    "guest-2s2c2t-2n",
    "guest-1s2c2t-workqueue",
    "guest-2s2c2t-2n-workqueue",
)


def _schedlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "schedlab", *args], capture_output=True, text=True, check=False
    )


def test_the_probe_reads_each_cpu_through_the_per_cpu_offsets():
    off = {path: 8 * i for i, path in enumerate(kd.OFFSETS)}
    lines = kd.probe_lines(2, off)
    assert lines[0].startswith("RQ=$((0x$(grep ' runqueues$' /proc/kallsyms")
    assert "pcpu_hot|current_task" in lines[1]
    assert "sd_llc_shared" in lines[2]
    sel = lines[3]
    assert "p:schedlab/sel select_task_rq_fair " in sel
    # rq.cfs.avg.load_avg is at offset 0 here, rq.nr_running at 8, ...
    assert "l1=+$((RQ+0))(@__per_cpu_offset+8):u64" in sel
    assert "n0=+$((RQ+8))(@__per_cpu_offset+0):u32" in sel
    # ... and the current task's fields behind its per-CPU pointer.
    assert "cf1=+40(+$((CUR))(@__per_cpu_offset+8)):u32" in sel
    # The current task's pid behind rq->curr (offsets 72 and 80), the LLC's
    # shared state behind sd_llc_shared (offsets 96 and 104).
    assert "cp0=+80(+$((RQ+72))(@__per_cpu_offset+0)):s32" in sel
    assert "nis1=+104(+$((SDS))(@__per_cpu_offset+8)):s32" in sel
    assert sel.count("=") == 8 + 12 * 2  # one per argument
    assert lines[4] == "echo 'r:schedlab/selr select_task_rq_fair ret=$retval' >> $T/kprobe_events"
    assert lines[5] == "echo 1 > $T/events/schedlab/enable"
    # The arguments by register, p's fields by offset (task_struct.pid at 80).
    assert "pid=+80(%di):s32 pp=%di:x64 prev=%si:s32 wf=%dx:u32" in sel
    # A kernel without DELAY_DEQUEUE has no h_nr_delayed: no such argument.
    older = kd.probe_lines(2, {k: v for k, v in off.items() if k != "rq.cfs.h_nr_delayed"})
    assert " d0=" not in older[3] and older[3].count("=") == 8 + 11 * 2
    with pytest.raises(ValueError, match="at most 10 CPUs"):
        kd.probe_lines(11, off)


def _sel(cpu: int, waker: str, wakee: int, wf: int, ret: int, **over: object) -> str:
    f: dict[str, object] = {
        "pid": wakee, "pp": "0xffff0001", "prev": 1, "wf": hex(wf), "fl": 3, "pl": 100,
        "ru": 1, "j": 5000,
    }  # fmt: skip
    for k in range(2):
        f.update({f"l{k}": 1000 + k, f"n{k}": 2, f"c{k}": 1024, f"d{k}": 0, f"tp{k}": 0})
        f.update({f"cl{k}": 1023, f"cf{k}": 7, f"cd{k}": 4000, f"cw{k}": "0xffff0001"})
        f.update({f"cp{k}": 10 + k, f"hic{k}": 1, f"nis{k}": 4})
    f.update(over)
    fields = " ".join(f"{k}={v}" for k, v in f.items())
    ts = f"{cpu}.000001"
    return (
        f" {waker}-10 [00{cpu}] d..1. {ts}: sel: (select_task_rq_fair+0x4/0x17d0) {fields}\n"
        f" {waker}-10 [00{cpu}] d..1. {ts}: selr: (try_to_wake_up+0x1/0x2 <- select_task_rq_fair) ret={ret}\n"
    )


def test_rows_keep_the_workloads_ttwu_decisions_with_what_they_read():
    waking = " wl-s-10 [000] d..1. 0.5: sched_waking: comm=wl-r pid=11 prio=120 target_cpu=001\n"
    trace = (
        waking
        + _sel(0, "wl-s", 11, 0x18, 0)  # sync TTWU between workload threads
        + _sel(0, "wl-s", 11, 0x04, 1)  # a fork: not a wakeup
        + _sel(0, "kworker/0:1", 11, 0x08, 1)  # a kernel thread's wakeup
        + _sel(0, "wl-s", 12, 0x08, 1)  # a wakee not of the workload
        + _sel(1, "wl-s", 11, 0x08, 1, j=4100, cw1="0xffff0002", cp0=0, ru=-1)
        + " wl-s-10 [001] d..1. 1.1: sel: (select_task_rq_fair+0x4) pid=11 prev=1\n"  # cut short
        + " wl-s-10 [001] d..1. 1.1: selr: (x <- select_task_rq_fair) ret=0\n"
    )
    lost: list[int] = []
    rows = kd.rows(trace, 2, hz=250, lost=lost)
    assert len(rows) == 2
    assert lost == [12]  # the line cut short: left out, and counted
    first, second = rows
    assert first["this"] == 0 and first["prev"] == 1 and first["kernel_cpu"] == 0
    assert first["sync"] == 1 and first["waker_flips"] == 7 and first["wakee_flips"] == 3
    # jiffies 5000 is past the waker's stamp 4000 + HZ: record_wakee halves.
    assert first["waker_decay_due"] == 1 and first["waker_last_is_wakee"] == 1
    assert first["load1"] == 1001 and first["nr0"] == 2 and first["delayed1"] == 0
    assert second["sync"] == 0 and second["waker_decay_due"] == 0
    assert second["waker_last_is_wakee"] == 0 and second["this"] == 1
    # CPU 0 ran its idle task (pid 0); an unset recent_used_cpu (-1) reads as prev.
    assert (first["idle0"], second["idle0"], second["idle1"]) == (0, 1, 0)
    assert first["wakee_recent_cpu"] == 1 and second["wakee_recent_cpu"] == 1
    assert second["has_idle_cores0"] == 1 and second["nr_idle_scan1"] == 4
    text = kd.table(rows, 2)
    assert text.splitlines()[0] == ",".join(kd.columns(2))
    assert len(text.splitlines()) == 3


def _btf_blob() -> bytes:
    """A BTF blob of `struct inner { u32 a; u64 b; }`, `typedef struct inner
    inner_t`, and `struct outer { u32 x; inner_t in; union { u32 u; }; }`."""
    strings = b"\0inner\0a\0b\0inner_t\0outer\0x\0in\0u\0"

    def name(s: str) -> int:
        return strings.index(b"\0" + s.encode() + b"\0") + 1

    def ty(name_off: int, kind: int, vlen: int, size: int) -> bytes:
        return struct.pack("<III", name_off, (kind << 24) | vlen, size)

    def member(n: str, t: int, bits: int) -> bytes:
        return struct.pack("<III", name(n), t, bits)

    types = b"".join(
        [
            ty(0, 1, 0, 4) + struct.pack("<I", 32),  # 1: int (u32)
            ty(0, 1, 0, 8) + struct.pack("<I", 64),  # 2: int (u64)
            ty(name("inner"), 4, 2, 16) + member("a", 1, 0) + member("b", 2, 64),  # 3
            ty(name("inner_t"), 8, 0, 3),  # 4: typedef -> 3
            ty(0, 5, 1, 4) + member("u", 1, 0),  # 5: anonymous union
            ty(name("outer"), 4, 3, 40)
            + member("x", 1, 0)
            + member("in", 4, 64)
            + struct.pack("<III", 0, 5, 256),  # 6: the union at byte 32
        ]
    )
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def test_btf_gives_member_offsets_through_typedefs_and_anonymous_unions():
    b = _btf.Btf(_btf_blob())
    assert b.offset("inner.b") == 8
    assert b.offset("outer.in.b") == 16
    assert b.offset("outer.u") == 32
    with pytest.raises(_btf.BtfError, match="no member nope"):
        b.offset("outer.nope")
    with pytest.raises(_btf.BtfError, match="no struct missing"):
        b.offset("missing.x")
    with pytest.raises(_btf.BtfError, match="not a struct"):
        b.offset("outer.x.y")
    with pytest.raises(_btf.BtfError, match="bad magic"):
        _btf.Btf(b"\0" * 32)


@pytest.mark.parametrize("guest", GUESTS)
def test_recorded_decisions_replay_through_the_model(guest: str):
    d = DECISIONS / guest
    report = kd.check(d / "machine.toml", d / "decisions.csv", "v6.12+NI_RANDOM")
    every = report["all"]
    assert every["rows"] >= 400
    assert every["agree"] >= 0.98 * every["rows"]


def test_check_cli_prints_the_agreement_with_the_recorded_kernels_policy():
    r = _schedlab("kernel-decisions", "check", str(DECISIONS / "guest-1s2c2t"))
    assert r.returncode == 0, r.stderr
    assert "v6.12+NI_RANDOM" in r.stdout  # from kernel.json: Debian's 6.12.95
    assert "no CPU idle" in r.stdout and "kernel chose prev" in r.stdout
    r = _schedlab("kernel-decisions", "check", str(DECISIONS / "guest-1s2c2t"), "--json")
    doc = json.loads(r.stdout)
    assert (
        doc["all"]["rows"]
        == len((DECISIONS / "guest-1s2c2t/decisions.csv").read_text().splitlines()) - 1
    )


def test_check_cli_refuses_a_bad_table_with_file_line_and_column(tmp_path: Path):
    src = (DECISIONS / "guest-1s2c2t" / "decisions.csv").read_text().splitlines()
    bad = tmp_path / "decisions.csv"
    fields = src[1].split(",")
    fields[1] = "9"  # prev: no CPU 9 on a 4-CPU machine
    bad.write_text("\n".join([src[0], ",".join(fields)]) + "\n")
    shutil.copy(DECISIONS / "guest-1s2c2t" / "machine.toml", tmp_path / "machine.toml")
    r = _schedlab("kernel-decisions", "check", str(tmp_path))
    assert r.returncode == 2
    assert f"{bad}: line 2: prev: a CPU of the 4-CPU machine, found 9" in r.stderr
    assert "Traceback" not in r.stderr
    (tmp_path / "kernel.json").write_text("{not json")
    r = _schedlab("kernel-decisions", "check", str(tmp_path))
    assert r.returncode == 2 and "kernel.json: not JSON" in r.stderr


def test_kernel_decisions_has_help():
    r = _schedlab("kernel-decisions", "--help")
    assert r.returncode == 0 and "record" in r.stdout and "check" in r.stdout
    r = _schedlab("kernel-decisions", "record", "--help")
    assert r.returncode == 0 and "--qemu" in r.stdout


@pytest.mark.slow
def test_record_in_a_guest_gives_a_table_the_model_agrees_with(tmp_path: Path):
    if shutil.which("qemu-system-x86_64") is None or shutil.which("cpio") is None:
        pytest.skip("needs Debian's qemu-system-x86, busybox-static and cpio")
    wl = os.environ.get("SCHEDLAB_WL_STATIC")
    if not wl or not Path(wl).is_file():
        pytest.skip("needs a static schedlab-wl in SCHEDLAB_WL_STATIC")
    from schedlab import _guest

    shape = _guest.GuestShape.parse("sockets=1,cores=2,threads=2")
    small = "hackbench:groups=1,fds=10,loops=50,ipc=pipe,mode=thread"
    table = kd.record(shape, Path(wl), tmp_path / "kd", workload=small)
    report = kd.check(tmp_path / "kd" / "machine.toml", table, "v6.12+NI_RANDOM")
    assert report["all"]["rows"] >= 200
    assert report["all_busy"]["agree"] >= 0.95 * report["all_busy"]["rows"]
    info = json.loads((tmp_path / "kd" / "kernel.json").read_text())
    assert set(info["decision_probe_offsets"]) == set(kd.OFFSETS)


def test_a_guest_that_fails_is_a_one_line_error_not_a_traceback(monkeypatch, tmp_path: Path):
    from typer.testing import CliRunner

    from schedlab import _guest
    from schedlab.cli import app

    def failing(*_args: object, **_kw: object) -> Path:
        raise _guest.GuestError("1s x 2c x 2t, Debian 6.12: the guest sent no results")

    monkeypatch.setattr(kd, "record", failing)
    wl = tmp_path / "wl"
    wl.write_bytes(b"")
    r = CliRunner().invoke(
        app, ["kernel-decisions", "record", "--qemu", "sockets=1,cores=2,threads=2", "--wl-bin", str(wl)]
    )
    assert r.exit_code == 1
    assert "error: guest: 1s x 2c x 2t, Debian 6.12: the guest sent no results" in r.output
    assert "Traceback" not in r.output


def test_a_6_1_table_replays_under_the_cfs_profile_its_kernel_json_implies():
    r = _schedlab("kernel-decisions", "check", str(DECISIONS / "guest-2s2c2t-2n-6.1"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["policy"] == "v5.9+SIS_UTIL-SIS_PROP+NI_RANDOM+migrate_se_pelt_lag+wa_idle_prev"
    assert doc["all"]["agree"] >= 0.98 * doc["all"]["rows"]


def test_the_suite_entry_replays_a_kept_table_without_booting(monkeypatch, tmp_path: Path):
    src = DECISIONS / "guest-1s2c2t-workqueue"
    for name in ("decisions.csv", "machine.toml", "kernel.json"):
        shutil.copy(src / name, tmp_path / name)

    def no_boot(*_args: object, **_kw: object) -> Path:
        raise AssertionError("reuse must not record again")

    monkeypatch.setattr(kd, "record", no_boot)
    entry = kd.suite_entry(tmp_path, "sockets=1,cores=2,threads=2", tmp_path / "wl", reuse=True)
    assert entry["case"] == "kernel-decisions"
    assert entry["policy"] == "v6.12+NI_RANDOM"
    assert entry["decisions"]["all"] == {"rows": 416, "agree": 416}
    md = "\n".join(kd.markdown_section(entry))
    assert "| all | 416 | 100.0% |" in md
    assert "| no CPU idle | 308 | 100.0% |" in md


def test_a_call_whose_return_is_missing_is_counted_as_left_out():
    waking = " wl-s-10 [000] d..1. 0.5: sched_waking: comm=wl-r pid=11 prio=120 target_cpu=001\n"
    first = _sel(0, "wl-s", 11, 0x18, 0).splitlines()[0] + "\n"  # its selr line lost
    lost: list[int] = []
    rows = kd.rows(waking + first + _sel(0, "wl-s", 11, 0x18, 1), 2, hz=250, lost=lost)
    assert [r["kernel_cpu"] for r in rows] == [1]
    assert lost == [2]

