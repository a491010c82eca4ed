"""A real kernel's wakeup decisions, recorded in a QEMU guest and replayed
through schedlab's own `select_task_rq_fair`.

`validate` compares what a workload did (placement fractions, migrations);
this compares the rule itself. In a guest, a kprobe on
`select_task_rq_fair` reads what the wakeup path reads: every CPU's root
`cfs_rq` load, `nr_running`, `cpu_capacity` and delayed count, the waker's
(`current`'s) load, `wakee_flips`, decay stamp and last wakee, the wakee's
load and flips, and what the idle search reads (each CPU's pending remote
wakeups and whether its idle task runs, its LLC's `has_idle_cores` and
`nr_idle_scan`, the wakee's `recent_used_cpu`); a kretprobe reads the CPU
it returned. Most of that sits behind per-CPU pointers that a kprobe's
typed arguments cannot follow, so the probe reads it through
`__per_cpu_offset` at the offsets the guest kernel's own BTF gives
(`_btf.py`; the BTF is fetched once per kernel with one extra boot,
`_guest.guest_btf`). Each
`WF_TTWU` call becomes a row of a table (`decisions.csv`), which
`decision_replay.rs` writes into a simulated machine of the guest's
topology, one row at a time, for the model to decide.

Where the model and the kernel choose differently on the same state, the
rules differ, or the state moved between the probe's reads and the
kernel's (other CPUs run on meanwhile).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# `wake_flags` bits of kernel/sched/sched.h (WF_EXEC 0x02, WF_FORK 0x04,
# WF_TTWU 0x08, WF_SYNC 0x10: the same in v6.1 and v6.12, the kernels
# recorded here).
WF_TTWU = 0x08
WF_SYNC = 0x10

# The members the probe reads, as BTF paths.
OFFSETS = (
    "rq.cfs.avg.load_avg",
    "rq.nr_running",
    "rq.cpu_capacity",
    "rq.cfs.h_nr_delayed",
    "task_struct.se.avg.load_avg",
    "task_struct.wakee_flips",
    "task_struct.wakee_flip_decay_ts",
    "task_struct.last_wakee",
    # What the idle search reads besides idleness: the LLC's shared state
    # (`sd_llc_shared`), a CPU's pending remote wakeups, its current task's
    # pid (0: idle) and the wakee's `recent_used_cpu`.
    "rq.ttwu_pending",
    "rq.curr",
    "task_struct.pid",
    "task_struct.recent_used_cpu",
    "sched_domain_shared.has_idle_cores",
    "sched_domain_shared.nr_idle_scan",
)

# Members a kernel may not have: `h_nr_delayed` came with DELAY_DEQUEUE
# (v6.12); without it the rows' delayed counts are 0, as they are there.
OPTIONAL = frozenset({"rq.cfs.h_nr_delayed"})

# kprobe events take at most 128 arguments; 8 + 12 per CPU.
MAX_CPUS = 10

# The workload recorded by default: validate's saturated hackbench.
DEFAULT_WORKLOAD = "hackbench:groups=2,fds=20,loops=100,ipc=pipe,mode=thread"


def probe_lines(nr_cpus: int, off: Mapping[str, int]) -> list[str]:
    """The guest job's shell lines that add the `sel` kprobe and the `selr`
    kretprobe to `$T/kprobe_events` (events of group `schedlab`, enabled
    with the recording's fork probe). `off` holds the `OFFSETS` the kernel
    has (its BTF's). The per-CPU symbols' offsets are read from the guest's
    `/proc/kallsyms` when the job runs: `runqueues`, `sd_llc_shared`, and
    `pcpu_hot` (x86, v6.2 on; its first member is `current_task`) or the
    `current_task` variable of older kernels."""
    if nr_cpus > MAX_CPUS:
        raise ValueError(f"at most {MAX_CPUS} CPUs: a kprobe event takes at most 128 arguments")
    # The function's arguments by register (x86-64: p in %di, prev_cpu in
    # %si, wake_flags in %dx) and p's fields by offset: typed arguments
    # (`p->pid`) need v6.6's BTF argument support, registers any kernel.
    task = "task_struct."
    args = [
        f"pid=+{off[task + 'pid']}(%di):s32",
        "pp=%di:x64",
        "prev=%si:s32",
        "wf=%dx:u32",
        f"fl=+{off[task + 'wakee_flips']}(%di):u32",
        f"pl=+{off[task + 'se.avg.load_avg']}(%di):u64",
        f"ru=+{off[task + 'recent_used_cpu']}(%di):s32",
        "j=@jiffies:u64",
    ]
    rq = {
        "l": (off["rq.cfs.avg.load_avg"], "u64"),
        "n": (off["rq.nr_running"], "u32"),
        "c": (off["rq.cpu_capacity"], "u64"),
        "tp": (off["rq.ttwu_pending"], "u32"),
    }
    if "rq.cfs.h_nr_delayed" in off:
        rq["d"] = (off["rq.cfs.h_nr_delayed"], "u32")
    cur = {
        "cl": (off["task_struct.se.avg.load_avg"], "u64"),
        "cf": (off["task_struct.wakee_flips"], "u32"),
        "cd": (off["task_struct.wakee_flip_decay_ts"], "u64"),
        "cw": (off["task_struct.last_wakee"], "x64"),
    }
    for k in range(nr_cpus):
        pc = f"@__per_cpu_offset+{8 * k}"
        args += [f"{name}{k}=+$((RQ+{o}))({pc}):{t}" for name, (o, t) in rq.items()]
        args += [f"{name}{k}=+{o}(+$((CUR))({pc})):{t}" for name, (o, t) in cur.items()]
        # the pid of the runqueue's current task, and its LLC's shared state
        args.append(f"cp{k}=+{off['task_struct.pid']}(+$((RQ+{off['rq.curr']}))({pc})):s32")
        for name, path in (("hic", "has_idle_cores"), ("nis", "nr_idle_scan")):
            args.append(f"{name}{k}=+{off['sched_domain_shared.' + path]}(+$((SDS))({pc})):s32")
    return [
        "RQ=$((0x$(grep ' runqueues$' /proc/kallsyms | cut -d' ' -f1)))",
        "CUR=$((0x$(grep -E ' (pcpu_hot|current_task)$' /proc/kallsyms | head -n1 "
        "| cut -d' ' -f1)))",
        "SDS=$((0x$(grep ' sd_llc_shared$' /proc/kallsyms | cut -d' ' -f1)))",
        f'echo "p:schedlab/sel select_task_rq_fair {" ".join(args)}" >> $T/kprobe_events '
        "|| echo 'the select_task_rq_fair probe was refused' >&2",
        "echo 'r:schedlab/selr select_task_rq_fair ret=$retval' >> $T/kprobe_events",
        # The recording enables group `schedlab` once its fork probe is in,
        # which needs typed arguments (v6.6); on older kernels this does.
        "echo 1 > $T/events/schedlab/enable",
    ]


_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s.*?\s\d+\.\d+: (sel|selr|sched_waking): (.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")


def columns(nr_cpus: int) -> list[str]:
    """The table's header: `decision_replay.rs`'s layout, defined there."""
    from . import _native

    return _native.decision_columns(nr_cpus)


def rows(
    trace: str, nr_cpus: int, hz: int, comm_prefix: str = "wl", lost: list[int] | None = None
) -> list[dict[str, int]]:
    """The table's rows from a recording with the probes: one per
    `WF_TTWU` call of `select_task_rq_fair` whose waker's and wakee's comms
    start with `comm_prefix` (the workload's threads; per-CPU kernel threads
    are bound to their CPU, which the table does not carry). The trace line
    numbers of probe lines left out because they are incomplete (a field the
    probe could not read, a call whose return line is missing) go into
    `lost`."""
    comm_of: dict[int, str] = {}
    pending: dict[int, tuple[int, str, dict[str, str]]] = {}
    out: list[dict[str, int]] = []
    dropped = lost if lost is not None else []
    for number, line in enumerate(trace.splitlines(), 1):
        m = _LINE.match(line)
        if m is None:
            continue
        comm, _pid, cpu_s, event, rest = m.groups()
        cpu = int(cpu_s)
        f = dict(_FIELD.findall(rest))
        if event == "sched_waking":
            if "pid" in f and "comm" in f:
                comm_of[int(f["pid"])] = f["comm"]
        elif event == "sel":
            if cpu in pending:  # the last call on this CPU never returned in the trace
                dropped.append(pending[cpu][0])
            pending[cpu] = (number, comm, f)
        elif cpu in pending:  # selr: the return on the same CPU (irqs off in between)
            at, waker_comm, s = pending.pop(cpu)
            try:
                row = _row(waker_comm, s, f.get("ret", ""), cpu, nr_cpus, hz, comm_of, comm_prefix)
            except (KeyError, ValueError):  # a field read as "(fault)", or a cut line
                dropped.append(at)
                continue
            if row is not None:
                out.append(row)
    return out


def _row(
    waker_comm: str,
    s: dict[str, str],
    ret: str,
    cpu: int,
    nr_cpus: int,
    hz: int,
    comm_of: Mapping[int, str],
    prefix: str,
) -> dict[str, int] | None:
    """One row, None for a call the table leaves out (not a wakeup between
    the workload's threads); KeyError or ValueError where a field is
    missing or unreadable."""
    wf, prev, kernel_cpu = int(s["wf"], 0), int(s["prev"]), int(ret, 0)
    if not wf & WF_TTWU or not waker_comm.startswith(prefix):
        return None
    if not comm_of.get(int(s["pid"]), "").startswith(prefix):
        return None
    if not (0 <= prev < nr_cpus and 0 <= kernel_cpu < nr_cpus):
        return None
    decay_ts, jiffies = int(s[f"cd{cpu}"], 0), int(s["j"], 0)
    row = {
        "this": cpu,
        "prev": prev,
        "sync": int(bool(wf & WF_SYNC)),
        "waker_flips": int(s[f"cf{cpu}"], 0),
        # record_wakee: time_after(jiffies, decay_ts + HZ)
        "waker_decay_due": int(jiffies - (decay_ts + hz) > 0),
        "waker_last_is_wakee": int(s[f"cw{cpu}"] == s["pp"]),
        "wakee_flips": int(s["fl"], 0),
        "wakee_load": int(s["pl"], 0),
        "waker_load": int(s[f"cl{cpu}"], 0),
        "kernel_cpu": kernel_cpu,
    }
    recent = int(s["ru"], 0)
    row["wakee_recent_cpu"] = recent if 0 <= recent < nr_cpus else prev
    for p, key in (
        ("load", "l"),
        ("nr", "n"),
        ("cap", "c"),
        ("ttwu_pending", "tp"),
        ("has_idle_cores", "hic"),
        ("nr_idle_scan", "nis"),
    ):
        for k in range(nr_cpus):
            row[f"{p}{k}"] = int(s[f"{key}{k}"], 0)
    for k in range(nr_cpus):
        row[f"idle{k}"] = int(int(s[f"cp{k}"], 0) == 0)
        row[f"delayed{k}"] = int(s.get(f"d{k}", "0"), 0)
    return row


def table(rows_: Iterable[Mapping[str, int]], nr_cpus: int) -> str:
    """The rows as CSV text with the header."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(nr_cpus), lineterminator="\n")
    w.writeheader()
    for r in rows_:
        w.writerow(r)
    return buf.getvalue()


def check(machine: Path, table_path: Path, policy: str) -> dict[str, Any]:
    """The model's replay of a decisions table (`decision_replay.rs`'s report)."""
    from . import _native

    report: dict[str, Any] = _native.replay_decisions(
        machine.read_text(), "toml", str(machine), policy, table_path.read_text(), str(table_path)
    )
    return report


def recorded_policy(kernel_json: Path) -> str:
    """The policy that models the kernel a table was recorded on (its
    `kernel.json`: release and sched features, `_kernel_profile`); `v6.12`
    without one."""
    import json

    from ._kernel_profile import policy_for_kernel
    from ._native import SpecError

    if not kernel_json.exists():
        return "v6.12"
    try:
        info: dict[str, Any] = json.loads(kernel_json.read_text())
    except json.JSONDecodeError as e:
        raise SpecError(f"{kernel_json}: not JSON ({e.msg}, line {e.lineno})") from e
    release, features = info.get("kernel_release"), info.get("sched_features")
    if not isinstance(release, str) or not isinstance(features, list):
        return "v6.12"
    return policy_for_kernel(release, [str(f) for f in features])[0]


def suite_entry(out: Path, qemu: str, wl_bin: Path, reuse: bool) -> dict[str, Any]:
    """`validate --suite`'s decision check of one guest: the saturated
    hackbench recorded with the probes into `out` (kept there; with `reuse`,
    an existing table is replayed without booting), replayed under the
    recorded kernel's policy. An entry of the topology's results, with key
    ``decisions`` (no rows: `tally` and the case tables pass it by)."""
    from . import _guest

    table = out / "decisions.csv"
    if not (reuse and table.exists()):
        record(_guest.GuestShape.parse(qemu), wl_bin, out)
    policy = recorded_policy(out / "kernel.json")
    return {
        "case": "kernel-decisions",
        "native": f"schedlab-wl {DEFAULT_WORKLOAD}",
        "policy": policy,
        "table": str(table),
        "decisions": check(out / "machine.toml", table, policy),
    }


def record(
    shape: Any, wl_bin: Path, out: Path, workload: str = DEFAULT_WORKLOAD, cache: Path | None = None
) -> Path:
    """Records `workload` in a guest of `shape` with the decision probes;
    writes `out/decisions.csv` beside the recording (`trace.txt`,
    `machine.toml`, `kernel.json`) and returns its path."""
    import json

    from . import _guest
    from ._btf import Btf, BtfError
    from ._native import SpecError

    if shape.cpus > MAX_CPUS:
        raise SpecError(
            f"--qemu: at most {MAX_CPUS} CPUs for the decision probe "
            "(a kprobe event takes 128 arguments)"
        )
    _guest.check_static(wl_bin)
    btf = Btf(_guest.guest_btf(shape, cache))
    offsets: dict[str, int] = {}
    for path in OFFSETS:
        try:
            offsets[path] = btf.offset(path)
        except BtfError:
            if path not in OPTIONAL:
                raise

    _guest.record_in_guest(
        shape,
        ["/wl", workload],
        {"/wl": wl_bin},
        out,
        cache,
        buffer_kb=32768,
        timeout_s=1800,
        kprobes=probe_lines(shape.cpus, offsets),
    )
    trace = (out / "trace.txt").read_text(errors="replace")
    if " sel: " not in trace:
        raise _guest.GuestError(
            "the guest recorded no select_task_rq_fair probe lines "
            f"(see {out / '.guest' / 'result'})"
        )
    import tomllib

    hz = int(tomllib.loads((out / "machine.toml").read_text()).get("machine", {}).get("hz", 250))
    decisions = out / "decisions.csv"
    lost: list[int] = []
    decisions.write_text(table(rows(trace, shape.cpus, hz, lost=lost), shape.cpus))
    info = json.loads((out / "kernel.json").read_text())
    info["decision_probe_offsets"] = offsets
    info["decision_probe_lines_left_out"] = len(lost)
    (out / "kernel.json").write_text(json.dumps(info, indent=2) + "\n")
    return decisions


# The report's agreements, in the order the CLI and the markdown show them.
REPORT_ROWS = (
    ("all", "all"),
    ("all_busy", "no CPU idle"),
    ("with_idle", "an idle CPU"),
    ("colocated", "wakee's prev CPU = waker's"),
    ("kernel_chose_this", "kernel chose the waker's CPU"),
    ("kernel_chose_prev", "kernel chose prev"),
    ("kernel_chose_other", "kernel chose another CPU"),
)


def share(a: Mapping[str, int]) -> str:
    """An agreement's share as a percentage, or - without rows."""
    return f"{100 * a['agree'] / a['rows']:.1f}%" if a["rows"] else "-"


def markdown_section(r: dict[str, Any]) -> list[str]:
    """The markdown lines of a `suite_entry` (a validate section's table)."""
    lines = [
        "### kernel-decisions",
        "",
        f"`{r['native']}` recorded with kprobes on `select_task_rq_fair` (`schedlab "
        f"kernel-decisions`); each decision's recorded state replayed through the model's "
        f"`select_task_rq_fair` under `{r['policy']}`.",
        "",
        "| decisions | rows | the model chose the kernel's CPU |",
        "|---|---|---|",
    ]
    for key, label in REPORT_ROWS:
        a = r["decisions"][key]
        lines.append(f"| {label} | {a['rows']} | {share(a)} |")
    return [*lines, ""]
