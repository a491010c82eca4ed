"""QEMU guest plumbing (schedlab._guest): shape parsing, QEMU arguments, the
initramfs; booting a real guest is a slow test."""

import gzip
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from schedlab import SpecError
from schedlab import _guest as g
from schedlab import _guest_calibrate as gc


def test_shape_parses_keys_and_defaults():
    s = g.GuestShape.parse("sockets=2,cores=2,threads=2,nodes=2,kernel=6.1,mem=2048")
    assert (s.sockets, s.cores, s.threads, s.nodes, s.kernel, s.mem_mib) == (
        2,
        2,
        2,
        2,
        "6.1",
        2048,
    )
    assert s.cpus == 8
    d = g.GuestShape.parse("")
    assert (d.sockets, d.cores, d.threads, d.nodes, d.kernel) == (1, 2, 1, 1, "6.12")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("sockets=0", "sockets: expected a positive integer"),
        ("cores", "not key=value"),
        ("kernel=5.4", "kernel: expected one of 6.1, 6.12"),
        ("cores=3,nodes=2", "nodes: 2 does not divide 3 CPUs"),
        ("colour=red", "unknown key 'colour'"),
        ("cores=40,threads=2", "at most 64"),
    ],
)
def test_bad_shapes_are_one_line_spec_errors(text, needle):
    with pytest.raises(SpecError, match=needle):
        g.GuestShape.parse(text)


def test_qemu_arguments_give_topology_and_numa_nodes():
    args = g.GuestShape.parse("sockets=2,cores=2,threads=2,nodes=2").qemu_args()
    assert args[:2] == ["-smp", "8,sockets=2,cores=2,threads=2"]
    numa = [a for a in args if a.startswith("node,")]
    assert numa == ["node,nodeid=0,cpus=0-3,memdev=mem0", "node,nodeid=1,cpus=4-7,memdev=mem1"]
    assert "-numa" not in g.GuestShape.parse("cores=4").qemu_args()


def _static_busybox() -> bool:
    bb = shutil.which("busybox")
    if bb is None or shutil.which("cpio") is None:
        return False
    return (
        "statically linked"
        in subprocess.run(["file", "-L", bb], capture_output=True, text=True).stdout
    )


@pytest.mark.skipif(not _static_busybox(), reason="needs Debian's busybox-static and cpio")
def test_initramfs_holds_init_job_and_files(tmp_path: Path):
    prog = tmp_path / "prog"
    prog.write_bytes(b"\x7fELF fake")
    rd = g.build_initramfs(tmp_path, "echo hello\n", {"/bin/prog": prog})
    listing = subprocess.run(
        ["cpio", "-t", "--quiet"],
        input=gzip.decompress(rd.read_bytes()),
        capture_output=True,
        check=True,
    ).stdout.decode()
    names = set(listing.split())
    assert {"init", "job.sh", "bin/busybox", "bin/prog"} <= names
    # The same inputs give the same bytes.
    assert (
        g.build_initramfs(tmp_path, "echo hello\n", {"/bin/prog": prog}).read_bytes()
        == rd.read_bytes()
    )


def test_the_guest_init_reads_the_modelled_tunables():
    from schedlab._kernel_profile import SCHED_TUNABLES

    assert f"for t in {' '.join(SCHED_TUNABLES)}; do" in g._INIT


@pytest.mark.slow
def test_a_guest_boots_and_reports_its_topology(tmp_path: Path):
    if shutil.which("qemu-system-x86_64") is None or not _static_busybox():
        pytest.skip("needs Debian's qemu-system-x86, busybox-static and cpio")
    shape = g.GuestShape.parse("sockets=1,cores=2,threads=2")
    kernel = g.fetch_kernel(shape.kernel, g.default_cache())
    rd = g.build_initramfs(tmp_path, "grep -c ^processor /proc/cpuinfo\n", {})
    # A TCG boot sometimes oopses (docs/validation.md): tried once more, as validate does.
    result = g.boot_with_retry(shape, kernel, rd, tmp_path, timeout_s=600)
    assert (result / "job.stdout").read_text().strip() == "4"
    domains = (result / "sched_domains").read_text()
    assert " SMT " in domains
    assert " MC " in domains
    assert (result / "sys/devices/system/cpu/cpu3/topology/thread_siblings_list").exists()


def test_a_failed_boot_is_tried_once_more_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    calls: list[int] = []

    def fake_boot(shape, kernel, initrd, work, timeout_s):  # type: ignore[no-untyped-def]
        calls.append(1)
        (work / "console.log").write_text(f"boot {len(calls)}\n")
        if len(calls) == 1:
            raise g.GuestError("the guest stopped: 'Oops:' on its console")
        return work / "result"

    monkeypatch.setattr(g, "boot", fake_boot)
    shape = g.GuestShape.parse("sockets=1,cores=2,threads=2")
    got = g.boot_with_retry(shape, tmp_path / "k", tmp_path / "rd", tmp_path, 10)
    assert got == tmp_path / "result"
    assert len(calls) == 2
    err = capsys.readouterr().err
    assert f"guest boot 1 of {g.BOOT_ATTEMPTS} failed" in err
    assert "'Oops:' on its console" in err
    assert "booting again" in err
    assert (tmp_path / "console-failed-1.log").read_text() == "boot 1\n"
    assert (tmp_path / "console.log").read_text() == "boot 2\n"

    # Failures in every attempt: the last is raised, not retried further.
    calls.clear()

    def always_fails(shape, kernel, initrd, work, timeout_s):  # type: ignore[no-untyped-def]
        calls.append(1)
        raise g.GuestError("no result within 10 s")

    monkeypatch.setattr(g, "boot", always_fails)
    with pytest.raises(g.GuestError, match="no result within 10 s"):
        g.boot_with_retry(shape, tmp_path / "k", tmp_path / "rd", tmp_path, 10)
    assert len(calls) == g.BOOT_ATTEMPTS


def _fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, console: str) -> g.GuestShape:
    """Puts a stand-in `qemu-system-x86_64` first on PATH: a shell script
    that finds its `-serial file:` path in `$con` and runs `console`; returns
    a 4-CPU guest shape to boot with it."""
    fake = tmp_path / "bin" / "qemu-system-x86_64"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = -serial ] && con="${2#file:}"; shift; done\n' + console
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    return g.GuestShape.parse("sockets=1,cores=2,threads=2")


def test_an_oops_on_the_console_stops_the_guest_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A stand-in for QEMU that prints an oops on its serial console and then
    # hangs, as the TCG guest did: boot must stop it, not wait for the timeout.
    shape = _fake_qemu(
        tmp_path,
        monkeypatch,
        'echo "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" > "$con"\nexec sleep 60\n',
    )
    t0 = time.monotonic()
    with pytest.raises(g.GuestError, match="'Oops:' on its console"):
        g.boot(shape, tmp_path / "k", tmp_path / "rd", tmp_path, timeout_s=30)
    assert time.monotonic() - t0 < 10


def test_a_guest_that_panics_and_exits_names_the_oops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # panic=-1 and -no-reboot: QEMU exits right after the panic, sending
    # nothing back; the error names what the console showed.
    shape = _fake_qemu(
        tmp_path,
        monkeypatch,
        'printf "Oops: int3: 0000 [#1]\\nKernel panic - not syncing\\n" > "$con"\n',
    )
    with pytest.raises(g.GuestError, match="'Oops:'"):
        g.boot(shape, tmp_path / "k", tmp_path / "rd", tmp_path, timeout_s=30)


def test_record_job_quotes_the_command_and_enables_the_events():
    job = g._record_job(["/wl", "hackbench:groups=2", "it's"], 4096)
    assert "'/wl' 'hackbench:groups=2' 'it'\\''s' > /out/workload.stdout" in job
    assert "echo 4096 > $T/buffer_size_kb" in job
    for e in g.GUEST_EVENTS:
        assert f"echo 1 > $T/events/{e}/enable" in job
    assert "wake_up_new_task pid=p->pid flips=p->wakee_flips" in job
    assert "stalls" not in job


def test_record_job_probes_the_stalls_after_the_recording(tmp_path):
    job = g._record_job(["/wl", "pipe:loops=10"], 4096, stall_cpus=2)
    probe = g.GUEST_RECORD_STALL_PROBE
    for k, mask in ((1, "0x1"), (2, "0x3")):
        line = f"taskset {mask} /wl '{probe}' > /out/stalls-{k}.stdout"
        assert line in job
        # untraced, and after the trace is saved
        assert job.index(line) > job.index("cat $T/trace > /out/trace.txt")
    # What the guest sent back is kept per count; a failed probe is skipped.
    sent = {"stalls-1.rc": "0\n", "stalls-1.stdout": 'x\n{"gaps": 1}\n', "stalls-2.rc": "2\n"}
    g.keep_stall_probes(lambda name: sent.get(name, ""), 2, tmp_path)
    assert (tmp_path / "probe-stalls-1.json").read_text() == '{"gaps": 1}\n'
    assert not (tmp_path / "probe-stalls-2.json").exists()


def test_launcher_flips_reads_the_first_fork_probe_line():
    trace = (
        "  sh-709 [001] d..1.  7.80: sched_waking: comm=x pid=5 prio=120 target_cpu=001\n"
        "  sh-709 [001] d..1.  7.81: fork_flips: (wake_up_new_task+0x4/0x300) pid=710 flips=8\n"
        "  hb-710 [002] d..1.  7.83: fork_flips: (wake_up_new_task+0x4/0x300) pid=711 flips=3\n"
    )
    assert g.launcher_flips(trace) == 8
    assert g.launcher_flips("no probe here\n") is None


def test_inherited_flips_follow_the_launched_programs_descendants():
    # sh forks the program (pid 711) with 2; the program's main thread forks
    # two threads with 4 and 5, one of which forks another with 7; kthreadd's
    # fork of a kworker is no part of the workload.
    trace = (
        "  sh-710 [002] .....  14.94: fork_flips: (wake_up_new_task+0x4/0x300) pid=711 flips=2\n"
        "  wl-711 [000] .....  15.03: fork_flips: (wake_up_new_task+0x4/0x300) pid=712 flips=4\n"
        "  kthreadd-2 [001] .....  15.03: fork_flips: (wake_up_new_task+0x4/0x300) pid=90 flips=9\n"
        "  wl-711 [000] .....  15.04: fork_flips: (wake_up_new_task+0x4/0x300) pid=713 flips=5\n"
        "  wl-sb-m0-713 [003] ..... 15.05: fork_flips: (wake_up_new_task+0x4) pid=714 flips=7\n"
    )
    assert g.inherited_flips(trace) == [4, 5, 7]
    assert g.inherited_flips("no probe here\n") == []


def test_inherited_flips_are_in_fork_tree_order_whatever_the_trace_interleaving():
    # schbench with two message threads: main (711) forks m0 (712, 4) and m1
    # (713, 5); each then forks its two workers, m1 before m0 has finished.
    # The list is each thread followed by the threads it forked: m0, its
    # workers, m1, its workers (the simulated family's task order).
    line = "  {c}-{p} [000] .....  1.{t}: fork_flips: (wake_up_new_task+0x4) pid={k} flips={f}\n"
    forks = [
        ("sh", 710, 711, 2),
        ("wl", 711, 712, 4),
        ("wl", 711, 713, 5),
        ("wl-sb-m0", 712, 714, 6),
        ("wl-sb-m1", 713, 715, 8),
        ("wl-sb-m1", 713, 716, 9),
        ("wl-sb-m0", 712, 717, 7),
    ]
    trace = "".join(line.format(c=c, p=p, t=i, k=k, f=f) for i, (c, p, k, f) in enumerate(forks))
    assert g.inherited_flips(trace) == [4, 6, 7, 5, 8, 9]


@pytest.mark.slow
def test_record_in_a_guest_gives_trace_machine_and_launcher_flips(tmp_path: Path):
    if shutil.which("qemu-system-x86_64") is None or not _static_busybox():
        pytest.skip("needs Debian's qemu-system-x86, busybox-static and cpio")
    import json

    shape = g.GuestShape.parse("sockets=1,cores=2,threads=2")
    argv = ["/bin/sh", "-c", "for i in 1 2 3 4; do /bin/busybox usleep 2000; done"]
    out = g.record_in_guest(shape, argv, {}, tmp_path / "rec")
    trace = (out / "trace.txt").read_text()
    assert "sched_switch:" in trace
    assert "sched_wakeup_new:" in trace
    info = json.loads((out / "kernel.json").read_text())
    assert info["kernel_release"].startswith("6.12")
    assert isinstance(info["launcher_wakee_flips"], int)
    assert info["host_loadavg"] >= 0
    assert "threads_per_core = 2" in (out / "machine.toml").read_text()
    # Debian's 6.12 has the stable backport of the 0.70 ms base slice
    # (2,100,000 ns on 4 CPUs): the model's tunables are the guest's.
    from schedlab import _native

    assert info["sched_tunables"] == _native.kernel_tunables(4)


def _static_wl() -> Path | None:
    """A static schedlab-wl for the guest: SCHEDLAB_WL_STATIC, if set."""
    p = os.environ.get("SCHEDLAB_WL_STATIC")
    return Path(p) if p and Path(p).is_file() else None


@pytest.mark.slow
def test_calibrate_in_a_guest_measures_its_costs_in_one_boot(tmp_path: Path):
    if shutil.which("qemu-system-x86_64") is None or not _static_busybox():
        pytest.skip("needs Debian's qemu-system-x86, busybox-static and cpio")
    wl = _static_wl()
    if wl is None:
        pytest.skip(
            "needs a static schedlab-wl in SCHEDLAB_WL_STATIC (RUSTFLAGS='-C "
            "target-feature=+crt-static' cargo build --release -p schedlab-wl --target "
            "x86_64-unknown-linux-gnu)"
        )
    from schedlab import _calibrate

    shape = g.GuestShape.parse("sockets=1,cores=2,threads=2")
    d = gc.calibrate_in_guest(shape, wl, tmp_path / "cal", chunks=100, pipe_ops=20_000)
    assert _calibrate.probes_stored(d)
    fig = _calibrate.costs_from_probes(d)
    assert fig["split"]["n"] >= 20
    assert fig["same"]["n"] >= 20
    assert fig["pipe_read_ns"] > 0
    assert "inside a QEMU guest" in fig["where"]
    assert "threads_per_core = 2" in (d / "machine.toml").read_text()


def test_a_dynamically_linked_program_is_refused_before_booting(tmp_path: Path):
    # This interpreter is dynamically linked on every Debian; a script is not ELF.
    dynamic = Path(os.path.realpath(shutil.which("sh") or "/bin/sh"))
    assert g.needs_loader(dynamic)
    with pytest.raises(SpecError, match=r"--wl-bin: .* is dynamically linked"):
        g.check_static(dynamic)
    script = tmp_path / "job"
    script.write_text("#!/bin/sh\n")
    assert not g.needs_loader(script)
    busybox = shutil.which("busybox")
    if busybox and _static_busybox():
        assert not g.needs_loader(Path(busybox))


def test_a_kernel_with_virtio_as_modules_gets_them_in_its_initramfs(tmp_path: Path):
    # Debian 12's 6.1 builds virtio_pci and virtio_console as modules: without
    # them the guest has no port to send its results on.
    from schedlab import _guest_modules as gm

    tree = tmp_path / "x"
    for rel in ("virtio/virtio.ko", "virtio/virtio_pci.ko", "char/virtio_console.ko", "net/other.ko"):
        p = tree / "lib/modules/6.1.0-50-amd64/kernel/drivers" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rel.encode())
    kdir = tmp_path / "kernel-6.1"
    gm.keep_modules(tree, kdir)
    files = gm.module_files(kdir)
    # In load order, numbered by their place in MODULES; others left out.
    assert list(files) == ["/modules/00-virtio.ko", "/modules/04-virtio_pci.ko", "/modules/05-virtio_console.ko"]
    assert files["/modules/05-virtio_console.ko"].read_bytes() == b"char/virtio_console.ko"
    # A kernel that builds them in keeps an empty directory: nothing to load.
    built_in = tmp_path / "kernel-6.12"
    gm.keep_modules(tmp_path / "empty", built_in)
    assert (built_in / gm.MODULES_DIR).is_dir()
    assert gm.module_files(built_in) == {}
    # /init loads them before the job and waits for the port they make.
    assert 'for m in /modules/*.ko; do [ -e "$m" ] && insmod "$m"' in g._INIT
    assert g._INIT.index("insmod") < g._INIT.index("sh /job.sh")


@pytest.mark.slow
def test_a_debian_12_guest_with_its_6_1_kernel_returns_its_results(tmp_path: Path):
    if shutil.which("qemu-system-x86_64") is None or not _static_busybox():
        pytest.skip("needs Debian's qemu-system-x86, busybox-static and cpio")
    shape = g.GuestShape.parse("sockets=1,cores=2,threads=1,kernel=6.1")
    text = g._boot_job(shape, "echo ran > /out/ran\n", {}, tmp_path / "g", None, 600)
    assert text("ran") == "ran\n"
    assert text("uname").startswith("6.1.")


def test_the_fork_probe_is_typed_on_6_12_and_by_register_on_6_1(tmp_path: Path):
    import struct

    # A cached 6.1 kernel with its BTF: struct task_struct { u32 x; u32
    # wakee_flips; u32 pid; } (offsets 4 and 8).
    kdir = tmp_path / "kernel-6.1"
    (kdir / "modules").mkdir(parents=True)
    (kdir / "vmlinuz").write_bytes(b"")
    strings = b"\0task_struct\0x\0wakee_flips\0pid\0"

    def name(s: str) -> int:
        return strings.index(b"\0" + s.encode() + b"\0") + 1

    def member(n: str, bits: int) -> bytes:
        return struct.pack("<III", name(n), 1, bits)

    types = struct.pack("<IIII", 0, 1 << 24, 4, 32)  # 1: u32
    types += struct.pack("<III", name("task_struct"), (4 << 24) | 3, 12)
    types += member("x", 0) + member("wakee_flips", 32) + member("pid", 64)
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    (kdir / "btf").write_bytes(header + types + strings)
    old = g.GuestShape.parse("sockets=1,cores=2,threads=1,kernel=6.1")
    assert g.flips_probe(old, tmp_path) == (
        "p:schedlab/fork_flips wake_up_new_task pid=+8(%di):s32 flips=+4(%di):u32"
    )
    new = g.GuestShape.parse("sockets=1,cores=2,threads=1")
    assert g.flips_probe(new, tmp_path) == g._FLIPS_PROBE
    assert "fork_flips wake_up_new_task pid=+8(%di)" in g._record_job(["/wl"], 64, 0, (), g.flips_probe(old, tmp_path))
