"""QEMU guests with a chosen topology, booted from Debian's kernel packages.

This is how schedlab checks itself against real kernels on shapes the host
does not have (SMT, several sockets, NUMA): a guest is booted with
``-smp sockets,cores,threads`` and NUMA nodes as asked, runs one job from an
initramfs (busybox plus the job's static programs), and sends back a tar of
its results over a virtio-serial port: the job's files, a copy of the guest's
``/sys/devices/system/{cpu,node}`` (for ``topo import``), the scheduler
features, the domains the kernel built, and ``uname``. Two jobs exist: one
recording (`record_in_guest`, one boot per recording) and `schedlab
calibrate`'s three probes (`calibrate_in_guest`, one boot for all three).

Everything comes from Debian's packages: ``qemu-system-x86`` and
``busybox-static`` are installed on the host; the kernel is downloaded with a
private apt state (its own sources list, lists and cache under the cache
directory, so the host's apt state is untouched) and cached there, never
committed. Facts that shaped this (see the project's validation notes): the
host's nested KVM cannot run a Linux guest, so the guest runs under TCG with
``-cpu Nehalem`` (an Intel model TCG implements fully: SMT and LLC come from
CPUID leaves 4 and 0xB); QEMU *pauses* on a KVM emulation failure instead of
exiting, so the console is watched and the guest stopped on one.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._kernel_profile import parse_sched_tunables, preempt_model
from ._native import SpecError
from ._tracefs import SCHED_EVENTS, own_autogroup_nice

# Debian suite that carries each kernel series we boot: 6.1 is Debian 12's
# own kernel (CFS, before EEVDF); 6.12 is bookworm-backports' (EEVDF with
# DELAY_DEQUEUE). Both are what the validation notes used.
KERNEL_SUITES: Mapping[str, str] = {"6.1": "bookworm", "6.12": "bookworm-backports"}
DEFAULT_KERNEL = "6.12"
DEFAULT_MEM_MIB = 1024
# The guest's CPU model under TCG (see the module docstring).
GUEST_CPU = "Nehalem"
# Console lines on which the guest is stopped at once: it will not finish, or
# its recording cannot be trusted. An oops does not always panic (panic_on_oops
# is off in Debian's config): under TCG we saw "Oops: int3" in sched_clock_cpu
# once (a breakpoint left by live code patching, text_poke_bp, that a TCG vCPU
# executed), after which the guest hung until the timeout.
_FATAL_CONSOLE = ("KVM internal error", "Kernel panic", "emulation failure", "Oops:")
# Boots tried per recording: a boot that fails as above is tried again (the
# failures are not reproducible; the third in a row is reported). Twice was
# not enough once QEMU got its own autogroup: the 8-vCPU guest oopsed twice in
# a row in one suite run (2026-11-24), both times 1.27 s into boot in
# sched_clock_cpu, where late init enables the sched_clock_stable key.
BOOT_ATTEMPTS = 3


class GuestError(RuntimeError):
    """The guest could not be prepared, booted, or did not return its results."""


@dataclasses.dataclass(frozen=True)
class GuestShape:
    """The guest machine: sockets x cores x threads CPUs in ``nodes`` NUMA
    nodes (CPUs split evenly, in order), and the kernel series to boot."""

    sockets: int = 1
    cores: int = 2
    threads: int = 1
    nodes: int = 1
    kernel: str = DEFAULT_KERNEL
    mem_mib: int = DEFAULT_MEM_MIB

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores * self.threads

    @classmethod
    def parse(cls, text: str, origin: str = "--qemu") -> GuestShape:
        """``sockets=2,cores=2,threads=2,nodes=2[,kernel=6.12][,mem=1024]``;
        every key optional (defaults: 1 socket, 2 cores, 1 thread, 1 node,
        kernel 6.12, 1024 MiB)."""
        ints = {"sockets": 1, "cores": 2, "threads": 1, "nodes": 1, "mem": DEFAULT_MEM_MIB}
        kernel = DEFAULT_KERNEL
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, val = part.partition("=")
            if not sep:
                raise SpecError(
                    f"{origin}: '{part}' is not key=value (keys: {', '.join([*ints, 'kernel'])})"
                )
            if key == "kernel":
                if val not in KERNEL_SUITES:
                    raise SpecError(
                        f"{origin}: kernel: expected one of {', '.join(KERNEL_SUITES)}, got '{val}'"
                    )
                kernel = val
            elif key in ints:
                if not val.isdigit() or int(val) < 1:
                    raise SpecError(f"{origin}: {key}: expected a positive integer, got '{val}'")
                ints[key] = int(val)
            else:
                raise SpecError(
                    f"{origin}: unknown key '{key}' (keys: {', '.join([*ints, 'kernel'])})"
                )
        shape = cls(
            ints["sockets"], ints["cores"], ints["threads"], ints["nodes"], kernel, ints["mem"]
        )
        if shape.cpus > 64:
            raise SpecError(f"{origin}: {shape.cpus} CPUs: at most 64 in a TCG guest")
        if shape.cpus % shape.nodes:
            raise SpecError(f"{origin}: nodes: {shape.nodes} does not divide {shape.cpus} CPUs")
        if shape.nodes > 1 and shape.mem_mib % shape.nodes:
            raise SpecError(
                f"{origin}: mem: {shape.mem_mib} MiB does not split over {shape.nodes} nodes"
            )
        return shape

    def describe(self) -> str:
        numa = f", {self.nodes} nodes" if self.nodes > 1 else ""
        return f"{self.sockets}s x {self.cores}c x {self.threads}t{numa}, Debian {self.kernel}"

    def qemu_args(self) -> list[str]:
        args = [
            "-smp",
            f"{self.cpus},sockets={self.sockets},cores={self.cores},threads={self.threads}",
            "-m",
            f"{self.mem_mib}M",
        ]
        per = self.cpus // self.nodes
        for n in range(self.nodes if self.nodes > 1 else 0):
            args += [
                "-object",
                f"memory-backend-ram,id=mem{n},size={self.mem_mib // self.nodes}M",
                "-numa",
                f"node,nodeid={n},cpus={n * per}-{(n + 1) * per - 1},memdev=mem{n}",
            ]
        return args


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "schedlab" / "guest"


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise GuestError(
            f"'{tool}' not found: install Debian's {package} (apt-get install {package})"
        )
    return path


def _apt(cache: Path) -> list[str]:
    """apt options for a private state under ``cache/apt``."""
    root = cache / "apt"
    for d in ("lists/partial", "archives/partial", "etc"):
        (root / d).mkdir(parents=True, exist_ok=True)
    sources = root / "etc" / "sources.list"
    sources.write_text(
        "deb http://deb.debian.org/debian bookworm main\n"
        "deb http://deb.debian.org/debian bookworm-backports main\n"
    )
    return [
        "-o", f"Dir::Etc::SourceList={sources}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={root / 'lists'}",
        "-o", f"Dir::Cache={root}",
        "-o", "Dir::State::status=/dev/null",
        "-o", "APT::Sandbox::User=root",
        "-q",
    ]  # fmt: skip


def _run(cmd: Sequence[str], what: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise GuestError(f"{what}: {e}") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise GuestError(f"{what} failed (exit {done.returncode}): {last}")
    return done.stdout


def fetch_kernel(series: str, cache: Path) -> Path:
    """The ``vmlinuz`` of Debian's newest kernel of ``series``, downloaded once
    into ``cache`` (with its config beside it) and reused."""
    if series not in KERNEL_SUITES:
        raise SpecError(f"kernel: expected one of {', '.join(KERNEL_SUITES)}, got '{series}'")
    from ._guest_modules import MODULES_DIR, keep_modules

    kdir = cache / f"kernel-{series}"
    done = kdir / "vmlinuz"
    if done.exists() and (kdir / MODULES_DIR).is_dir():
        return done
    _need("apt-get", "apt")
    opts = _apt(cache)
    _run(["apt-get", *opts, "update"], "apt-get update (private state)")
    suite = KERNEL_SUITES[series]
    # The metapackage of that suite names the real image package.
    deps = _run(["apt-cache", *opts, "depends", f"linux-image-amd64/{suite}"], "apt-cache depends")
    names = re.findall(r"Depends: (linux-image-[0-9][^\s]*)", deps)
    if not names:
        raise GuestError(f"no kernel image package found for Debian {series} ({suite})")
    dl = kdir / "download"
    shutil.rmtree(dl, ignore_errors=True)
    dl.mkdir(parents=True)
    _run(["apt-get", *opts, "download", f"{names[0]}/{suite}"], f"downloading {names[0]}", cwd=dl)
    debs = sorted(dl.glob("*.deb"))
    if not debs:
        raise GuestError(f"downloading {names[0]} gave no .deb")
    tree = dl / "x"
    _run(["dpkg-deb", "-x", str(debs[0]), str(tree)], "dpkg-deb -x")
    images = sorted((tree / "boot").glob("vmlinuz-*"))
    if not images:
        raise GuestError(f"{debs[0].name} holds no /boot/vmlinuz-*")
    for cfg in (tree / "boot").glob("config-*"):
        shutil.copyfile(cfg, kdir / "config")
    keep_modules(tree, kdir)
    (kdir / "version").write_text(images[0].name.removeprefix("vmlinuz-") + "\n")
    shutil.copyfile(images[0], kdir / "vmlinuz.part")
    os.replace(kdir / "vmlinuz.part", done)
    shutil.rmtree(dl, ignore_errors=True)
    return done


# The guest's /init: mounts, the job, the facts we read back, the tar out.
# `$JOB` is /job.sh from the initramfs; its working directory is /out.
_INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
for m in /modules/*.ko; do [ -e "$m" ] && insmod "$m" 2>/dev/null; done
mkdir -p /out /tmp
uname -r > /out/uname
cat /proc/cmdline > /out/cmdline
cat /sys/kernel/debug/sched/features > /out/sched_features 2>/dev/null
cat /sys/kernel/debug/sched/preempt > /out/preempt 2>/dev/null
for t in base_slice_ns migration_cost_ns nr_migrate tunable_scaling; do
  f=/sys/kernel/debug/sched/$t
  [ -r "$f" ] && echo "$t $(cat $f)" >> /out/sched_tunables
done
for d in /sys/kernel/debug/sched/domains/cpu*/domain*; do
  [ -r "$d/name" ] && echo "$d $(cat $d/name) $(cat $d/flags 2>/dev/null)" >> /out/sched_domains
done
for f in $(find /sys/devices/system/cpu /sys/devices/system/node -maxdepth 5 -type f \
    2>/dev/null); do
  case "$f" in */uevent|*/stat|*/time|*/usage|*/above|*/below|*/rejected|*/residency_ns) continue;;
    */hotplug/*|*/power/*|*/crash_*|*/vulnerabilities/*|*/microcode/*) continue;; esac
  [ -r "$f" ] || continue
  mkdir -p "/out${f%/*}"
  cat "$f" > "/out$f" 2>/dev/null || rm -f "/out$f"
done
cd /out
echo "schedlab-guest: job start" > /dev/console
sh /job.sh > /out/job.stdout 2> /out/job.stderr
echo $? > /out/job.rc
echo "schedlab-guest: job done rc=$(cat /out/job.rc)" > /dev/console
port=""
for i in $(seq 1 50); do
  port=$(ls /dev/vport*p1 2>/dev/null | head -n 1)
  [ -n "$port" ] && break
  sleep 0.1
done
tar -cf "$port" -C /out .
sync
poweroff -f
"""


def needs_loader(program: Path) -> bool:
    """Whether `program` is an ELF executable with a ``PT_INTERP`` segment
    (dynamically linked): the guest's initramfs has busybox and no libc, so
    such a program cannot start there."""
    with open(program, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF":
            return False
        end = "<" if head[5] == 1 else ">"
        if head[4] == 2:  # ELF64: e_phoff at 32, e_phentsize/e_phnum at 54/56
            phoff = struct.unpack_from(end + "Q", head, 32)[0]
            entsize, num = struct.unpack_from(end + "HH", head, 54)
        else:  # ELF32: e_phoff at 28, e_phentsize/e_phnum at 42/44
            phoff = struct.unpack_from(end + "I", head, 28)[0]
            entsize, num = struct.unpack_from(end + "HH", head, 42)
        f.seek(phoff)
        table = f.read(entsize * num)
    PT_INTERP = 3
    return any(
        struct.unpack_from(end + "I", table, i * entsize)[0] == PT_INTERP
        for i in range(min(num, len(table) // max(entsize, 1)))
    )


def check_static(program: Path, origin: str = "--wl-bin") -> None:
    """A `SpecError` when `program` is dynamically linked (`needs_loader`)."""
    if needs_loader(program):
        raise SpecError(
            f"{origin}: {program} is dynamically linked and the guest has no libc: build it "
            "static (RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -p "
            "schedlab-wl --target x86_64-unknown-linux-gnu)"
        )


def build_initramfs(work: Path, job: str, files: Mapping[str, Path]) -> Path:
    """A gzipped newc initramfs in ``work``: busybox, /init, /job.sh (a busybox
    sh script run in /out, whose files come back) and ``files`` (guest path ->
    host path, e.g. static workload programs)."""
    busybox = Path(_need("busybox", "busybox-static"))
    if "statically linked" not in _run(["file", "-L", str(busybox)], "file busybox"):
        raise GuestError(f"{busybox} is not statically linked: install Debian's busybox-static")
    cpio = _need("cpio", "cpio")
    root = work / "initramfs"
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "sbin", "proc", "sys", "dev", "out", "tmp"):
        (root / d).mkdir(parents=True)
    shutil.copyfile(busybox, root / "bin" / "busybox")
    (root / "bin" / "busybox").chmod(0o755)
    (root / "init").write_text(_INIT)
    (root / "init").chmod(0o755)
    (root / "job.sh").write_text(job)
    for guest_path, host in files.items():
        dest = root / guest_path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(host, dest)
        dest.chmod(0o755)
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    listing = "\n".join([".", *names]) + "\n"
    raw = subprocess.run(
        [cpio, "-o", "-H", "newc", "--quiet"],
        cwd=root,
        input=listing.encode(),
        capture_output=True,
        check=False,
    )
    if raw.returncode != 0:
        raise GuestError(f"cpio failed: {raw.stderr.decode(errors='replace').strip()}")
    out = work / "initramfs.cpio.gz"
    # mtime=0: the same inputs give the same bytes.
    with open(out, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(raw.stdout)
    return out


def _first_fatal(console: str) -> str | None:
    """The `_FATAL_CONSOLE` marker that appears first on the console (an
    oops before the panic it causes), or None."""
    found = [(console.find(m), m) for m in _FATAL_CONSOLE if m in console]
    return min(found)[1] if found else None


def boot(
    shape: GuestShape,
    kernel: Path,
    initrd: Path,
    work: Path,
    timeout_s: float,
    append: str = "",
) -> Path:
    """Boots the guest, waits for its job, and unpacks the tar it sends back
    into ``work/result``; returns that directory. The console is kept in
    ``work/console.log``."""
    qemu = _need("qemu-system-x86_64", "qemu-system-x86")
    out_tar = work / "out.tar"
    console = work / "console.log"
    out_tar.unlink(missing_ok=True)
    cmdline = f"console=ttyS0 panic=-1 sched_verbose nokaslr {append}".strip()
    cmd = [
        qemu,
        "-accel", "tcg,thread=multi",
        # vCPU threads named "CPU k/TCG" on the host, so a host trace can
        # tell them apart (`_hostrun`).
        "-name", "schedlab,debug-threads=on",
        "-cpu", GUEST_CPU,
        *shape.qemu_args(),
        "-kernel", str(kernel),
        "-initrd", str(initrd),
        "-append", cmdline,
        "-nographic", "-no-reboot",
        "-serial", f"file:{console}",
        "-monitor", "none",
        "-device", "virtio-serial-pci",
        "-chardev", f"file,id=schedlab,path={out_tar}",
        "-device", "virtserialport,chardev=schedlab,name=schedlab.out",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    own_autogroup_nice(proc.pid)
    deadline = time.monotonic() + timeout_s
    fatal = ""
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                fatal = f"no result within {timeout_s:.0f} s"
                break
            text = console.read_text(errors="replace") if console.exists() else ""
            hit = _first_fatal(text)
            if hit:
                fatal = f"the guest stopped: '{hit}' on its console"
                break
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
    if fatal:
        raise GuestError(f"{shape.describe()}: {fatal} (console: {console})")
    if proc.returncode != 0:
        last = (err.decode(errors="replace").strip().splitlines() or [""])[-1]
        raise GuestError(f"qemu exited {proc.returncode}: {last}")
    result = work / "result"
    shutil.rmtree(result, ignore_errors=True)
    result.mkdir()
    data = out_tar.read_bytes() if out_tar.exists() else b""
    if not data:
        # A panic with panic=-1 reboots, and -no-reboot ends QEMU, often before
        # the console was read again: name what the console shows.
        text = console.read_text(errors="replace") if console.exists() else ""
        hit = _first_fatal(text)
        why = f" after '{hit}' on its console" if hit else ""
        raise GuestError(f"{shape.describe()}: the guest sent no results{why} (console: {console})")
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(result, filter="data")
    except tarfile.TarError as e:
        raise GuestError(f"the guest's result tar is unreadable: {e}") from e
    return result


def boot_with_retry(
    shape: GuestShape,
    kernel: Path,
    initrd: Path,
    work: Path,
    timeout_s: float,
    attempts: int = BOOT_ATTEMPTS,
) -> Path:
    """`boot`, tried up to `attempts` times: a failed boot (an oops or panic on
    the console, no result in time, no results sent back) is reported on
    stderr with its console kept as ``console-failed-N.log`` and tried again;
    the last failure is raised."""
    for attempt in range(1, attempts):
        try:
            return boot(shape, kernel, initrd, work, timeout_s)
        except GuestError as e:
            kept = work / f"console-failed-{attempt}.log"
            console = work / "console.log"
            if console.exists():
                os.replace(console, kept)
            print(
                f"schedlab: guest boot {attempt} of {attempts} failed ({e}); console kept as "
                f"{kept}; booting again",
                file=sys.stderr,
                flush=True,
            )
    return boot(shape, kernel, initrd, work, timeout_s)


# Sched tracepoints recorded in a guest, the ones `schedlab record` records on
# the host, and a probe of the wakee_flips each new task inherits from its
# parent at fork (`wake_up_new_task(p)` runs before the child has woken
# anyone, so `p->wakee_flips` is the parent's count).
GUEST_EVENTS = SCHED_EVENTS
_FLIPS_PROBE = "p:schedlab/fork_flips wake_up_new_task pid=p->pid flips=p->wakee_flips"
# Kernel series whose kprobes take typed arguments (`p->pid`: v6.6 on). On
# the others the fork probe reads `p` (x86-64: %di) at the offsets of the
# kernel's BTF.
_TYPED_KPROBE_ARGS = frozenset({"6.12"})


def guest_btf(shape: GuestShape, cache: Path | None = None) -> bytes:
    """The guest kernel's BTF (`/sys/kernel/btf/vmlinux`), fetched with one
    boot the first time and kept beside the cached kernel (the boot's files
    in ``btf-boot`` there)."""
    cache = cache or default_cache()
    kdir = fetch_kernel(shape.kernel, cache).parent
    kept = kdir / "btf"
    if not kept.exists():
        work = kdir / "btf-boot"
        _boot_job(shape, "cat /sys/kernel/btf/vmlinux > /out/btf\n", {}, work, cache, 900)
        got = work / ".guest" / "result" / "btf"
        if not got.exists() or got.stat().st_size == 0:
            raise GuestError(
                "the guest kernel has no BTF (/sys/kernel/btf/vmlinux): "
                f"its struct offsets are unknown (see {work / '.guest'})"
            )
        part = kept.with_suffix(".part")
        part.write_bytes(got.read_bytes())
        part.replace(kept)
    return kept.read_bytes()


def flips_probe(shape: GuestShape, cache: Path | None) -> str:
    """The fork probe for the guest's kernel: typed where it takes typed
    arguments, else by register at its BTF's offsets (the BTF is fetched
    once per kernel with one boot; `guest_btf`)."""
    if shape.kernel in _TYPED_KPROBE_ARGS:
        return _FLIPS_PROBE
    from ._btf import Btf

    btf = Btf(guest_btf(shape, cache))
    pid, flips = btf.offset("task_struct.pid"), btf.offset("task_struct.wakee_flips")
    return f"p:schedlab/fork_flips wake_up_new_task pid=+{pid}(%di):s32 flips=+{flips}(%di):u32"


def _record_job(
    argv: Sequence[str],
    buffer_kb: int,
    stall_cpus: int = 0,
    kprobes: Sequence[str] = (),
    fork_probe: str = _FLIPS_PROBE,
) -> str:
    """The guest's job: record `argv` under the sched tracepoints; then,
    untraced, with `stall_cpus`, the stall probe for 1 to that many busy
    vCPUs (`GUEST_RECORD_STALL_PROBE`: the host's stalls of this boot).
    `kprobes`: shell lines that add more kprobe events of group `schedlab`
    (enabled with the fork probe; `_kernel_decisions.probe_lines`).
    `fork_probe`: the kprobe of `flips_probe`."""
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
    probes = "".join(
        line + "\n" for line in stall_probe_lines(GUEST_RECORD_STALL_PROBE, stall_cpus)
    )
    enable = "\n".join(f"echo 1 > $T/events/{e}/enable" for e in GUEST_EVENTS)
    extra = "".join(line + "\n" for line in kprobes)
    return f"""T=/sys/kernel/tracing
echo {buffer_kb} > $T/buffer_size_kb
{extra}echo '{fork_probe}' >> $T/kprobe_events 2>/dev/null && echo 1 > $T/events/schedlab/enable
{enable}
echo > $T/trace
echo 1 > $T/tracing_on
{quoted} > /out/workload.stdout 2> /out/workload.stderr
echo $? > /out/workload.rc
echo 0 > $T/tracing_on
cat $T/trace > /out/trace.txt
cat $T/per_cpu/cpu*/stats | grep -E '^overrun' > /out/overruns
{probes}"""


def launcher_flips(trace_text: str) -> int | None:
    """The `wakee_flips` the workload's first forked task inherited (its
    launcher's), from the `fork_flips` probe lines of a guest recording."""
    for line in trace_text.splitlines():
        if " fork_flips: " in line:
            m = re.search(r"flips=(\d+)", line)
            if m:
                return int(m.group(1))
    return None


# A `fork_flips` probe line: the forking task's comm-pid, then the child's pid
# and the count it inherited.
_FORK_FLIPS = re.compile(r"^\s*\S*?-(\d+)\s.* fork_flips: .*\bpid=(\d+) flips=(\d+)")


def inherited_flips(trace_text: str) -> list[int]:
    """The `wakee_flips` each task of the workload inherited at fork: the
    `fork_flips` lines whose forking task is the launched program (the first
    line's child) or one of its descendants. These, not the launcher's
    count, are what the workload's threads start with: the program's main
    thread forks them, and its own count has moved since the shell forked it
    (21 against the shell's 2 in one hackbench recording).

    In fork order: each thread's count, then those of the threads it forked
    (in the order it forked them), depth first. Where only the main thread
    forks (pipe, hackbench, workqueue) that is the trace's order; where a
    thread forks others (schbench's message threads start their workers)
    the trace may interleave two forking threads, and this order does not
    depend on how. It is the order a per-task `parent_wakee_flips=N;N;...`
    list is read in (the simulated families map it onto their tasks)."""
    root: int | None = None
    children: dict[int, list[tuple[int, int]]] = {}
    for line in trace_text.splitlines():
        if " fork_flips: " not in line:
            continue
        m = _FORK_FLIPS.match(line)
        if m is None:
            continue
        parent, child, flips = (int(g) for g in m.groups())
        if root is None:
            root = child  # the launched program: its descendants are the workload's
        else:
            children.setdefault(parent, []).append((child, flips))
    out: list[int] = []
    stack = list(reversed(children.get(root, []))) if root is not None else []
    while stack:
        child, flips = stack.pop()
        out.append(flips)
        stack.extend(reversed(children.get(child, [])))
    return out


def _boot_job(
    shape: GuestShape,
    job: str,
    files: Mapping[str, Path],
    out: Path,
    cache: Path | None,
    timeout_s: float,
) -> Callable[[str], str]:
    """Boots a guest of `shape` that runs `job` (with `files` copied in),
    its work files under `out/.guest` and what it sent back in
    `out/.guest/result`; returns a reader of those files ('' for a missing
    one)."""
    kernel = fetch_kernel(shape.kernel, cache or default_cache())
    out.mkdir(parents=True, exist_ok=True)
    work = out / ".guest"
    work.mkdir(exist_ok=True)
    from ._guest_modules import module_files

    initrd = build_initramfs(work, job, {**module_files(kernel.parent), **files})
    result = boot_with_retry(shape, kernel, initrd, work, timeout_s)

    def text(name: str) -> str:
        p = result / name
        return p.read_text(errors="replace") if p.exists() else ""

    return text


def _kernel_info(shape: GuestShape, text: Callable[[str], str]) -> dict[str, Any]:
    """What `kernel.json` says of the guest itself: its shape, kernel release,
    command line and sched features."""
    return {
        "source": "qemu",
        "shape": dataclasses.asdict(shape),
        "kernel_release": text("uname").strip(),
        "cmdline": text("cmdline").strip(),
        "preempt_model": preempt_model("", "", text("preempt")),
        "sched_features": text("sched_features").split(),
        "sched_tunables": parse_sched_tunables(text("sched_tunables")),
    }


def record_in_guest(
    shape: GuestShape,
    argv: Sequence[str],
    files: Mapping[str, Path],
    out: Path,
    cache: Path | None = None,
    buffer_kb: int = 16384,
    timeout_s: float = 900,
    stall_probes: bool = False,
    kprobes: Sequence[str] = (),
) -> Path:
    """Records `argv` inside a guest of `shape`; writes `out/trace.txt`,
    `out/machine.toml` (the guest's sysfs imported), `out/kernel.json` (kernel,
    command line, sched features and domains, the launcher's wakee_flips) and
    the workload's stdout. `files` are copied into the guest first (static
    programs: the guest has no libc). With `stall_probes` (``/wl`` among
    `files`), the stall probe runs after the recording in the same boot and
    its figures are kept as ``out/probe-stalls-K.json`` (`keep_stall_probes`).
    `kprobes` adds kprobe events to the recording (`_record_job`). As root
    with tracefs, the host's scheduling of the vCPU threads during the
    recording is kept too (``out/host.json``, ``out/host-trace.txt``:
    `_hostrun`)."""
    import json

    from . import _hostrun, _native

    fork = flips_probe(shape, cache)
    job = _record_job(argv, buffer_kb, shape.cpus if stall_probes else 0, kprobes, fork)
    host_lines: list[str] = []
    with _hostrun.host_trace(host_lines) as host_traced:
        text = _boot_job(shape, job, files, out, cache, timeout_s)
    work = out / ".guest"
    result = work / "result"
    rc = text("workload.rc").strip()
    if rc != "0":
        err = text("workload.stderr").strip()[-300:]
        raise GuestError(f"the workload failed in the guest (exit {rc or '?'}): {err}")
    trace = text("trace.txt")
    if not trace:
        raise GuestError(f"the guest recorded no trace (see {work / 'console.log'})")
    (out / "trace.txt").write_text(trace)
    if host_traced:
        _hostrun.keep(host_lines, trace, out)
    (out / "workload.stdout").write_text(text("workload.stdout"))
    (out / "machine.toml").write_text(_native.topo_import(str(result / "sys")))
    info = {
        **_kernel_info(shape, text),
        "sched_domains": text("sched_domains").splitlines(),
        "launcher_wakee_flips": launcher_flips(trace),
        "inherited_wakee_flips": inherited_flips(trace),
        "overruns": text("overruns").split(),
        "argv": list(argv),
        # The host's 1-minute load average as the boot ends, over its CPUs:
        # what else the host ran while it ran the guest's vCPUs.
        "host_loadavg": round(os.getloadavg()[0], 2),
        "host_cpus": os.cpu_count(),
    }
    (out / "kernel.json").write_text(json.dumps(info, indent=2) + "\n")
    if stall_probes:
        keep_stall_probes(text, shape.cpus, out)
    return out


# The stall probe in a guest: a spinning thread per vCPU for 3 s, gaps over
# 0.5 ms counted (a guest's own interrupts take tens of us even under TCG;
# the host's descheduling of a vCPU, milliseconds). In a 1s x 2c x 1t guest
# on this 2-CPU host: 107-111 gaps per vCPU-second of 5.3 ms on average.
# It runs once for each count K of busy vCPUs (taskset to the first K): the
# host deschedules a vCPU more the more of them are busy (4 vCPUs on this
# 2-CPU host, 2026-11-24: 1% of the time with one spinning, 5-14% with two,
# 40-50% with three, 54-59% with four), and a halted vCPU is not stalled but
# idle, so a light case must not be simulated with a saturated one's stalls.
GUEST_STALL_PROBE = "stalls:duration=3s,threshold=500us"
# The same after each recording, in its boot (1 s per count: the host's load
# moves between boots, a calibration's stalls need not be a recording's).
GUEST_RECORD_STALL_PROBE = "stalls:duration=1s,threshold=500us"


def stall_probe_lines(probe: str, nr_cpus: int) -> list[str]:
    """The job's lines that run the stall probe `probe` with the first 1,
    2, ... `nr_cpus` vCPUs spinning (``/out/stalls-K.stdout``; an older
    static schedlab-wl exits 2 there: no stall figures)."""
    return [
        f"taskset {(1 << k) - 1:#x} /wl '{probe}' > /out/stalls-{k}.stdout "
        f"2> /out/stalls-{k}.stderr; echo $? > /out/stalls-{k}.rc"
        for k in range(1, nr_cpus + 1)
    ]


def last_json_line(output: str) -> str | None:
    """The last line of a probe's output that starts a JSON object (its
    result: schedlab-wl prints it last), or None."""
    return next((ln for ln in reversed(output.splitlines()) if ln.startswith("{")), None)


def keep_stall_probes(text: Callable[[str], str], nr_cpus: int, out: Path) -> None:
    """Stores each stall probe's JSON the guest sent back (`stall_probe_lines`)
    as ``out/probe-stalls-K.json``, for `_calibrate.stall_noise`."""
    for k in range(1, nr_cpus + 1):
        line = last_json_line(text(f"stalls-{k}.stdout"))
        if text(f"stalls-{k}.rc").strip() == "0" and line is not None:
            (out / f"probe-stalls-{k}.json").write_text(line + "\n")
