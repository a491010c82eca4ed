"""Real recordings, made by schedlab's own tools and committed (small), read
back without root: `analyze` on them gives the figures an independent count of
their lines gives, and a guest's imported machine builds the sched domains the
guest's kernel printed.

* `recorded/host-pipe`: `schedlab record -- schedlab-wl pipe:loops=300` on the
  development VM (6.18, 2 vCPUs);
* `recorded/host-schbench`: `schedlab record -o DIR -- schedlab-wl
  schbench:message_threads=1,threads=2,runtime=60ms,operations=5,op=200us` on
  the same VM while other agents compiled on its two vCPUs (so its latencies
  are noisy), with the program's own JSON line in `workload.stdout`;
* `recorded/guest-2c2t-workqueue`: `schedlab validate --qemu
  sockets=1,cores=2,threads=2` recording `schedlab-wl
  workqueue:threads=4,chunks=400,chunk=1ms` in a Debian 6.12.95 guest.
"""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab import _native
from schedlab._kernel_profile import domain_notes
from schedlab.cli import app

REC = Path(__file__).parent / "fixtures" / "recorded"
runner = CliRunner()


def _analyze(name: str, comm: str) -> dict[str, float]:
    d = REC / name
    res = runner.invoke(
        app,
        [
            "analyze",
            str(d / "trace.txt"),
            "--machine",
            str(d / "machine.toml"),
            "--comm",
            comm,
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    return {m["name"]: m["value"] for m in json.loads(res.stdout)["metrics"]}


def test_guest_workqueue_placement_fractions() -> None:
    m = _analyze("guest-2c2t-workqueue", "wl-wq-*")
    # Counted from the trace's lines by a separate script (the probes of
    # docs/kernel-probes.md): 492 wakeups of the five wl-wq threads, 445 onto
    # the CPU the task last ran on, 308 onto the waker's CPU, 112 migrations.
    # The other 47 split 15 onto the SMT sibling, 32 onto the other core.
    assert m["wakeups"] == 492
    assert m["migrations"] == 112
    assert m["wake_prev_cpu_pct"] == pytest.approx(100 * 445 / 492)
    assert m["wake_smt_sibling_pct"] == pytest.approx(100 * 15 / 492)
    assert m["wake_same_llc_pct"] == pytest.approx(100 * 32 / 492)
    assert m["wake_on_waker_cpu_pct"] == pytest.approx(100 * 308 / 492)
    assert m["migrations_per_wakeup"] == pytest.approx(112 / 492)


def test_host_pipe_ping_pong_stays_on_one_cpu() -> None:
    m = _analyze("host-pipe", "wl-pipe-*")
    assert m["wakeups"] == 339
    assert m["migrations"] == 0
    assert m["wake_prev_cpu_pct"] == 100
    assert m["wake_on_waker_cpu_pct"] == 100


def test_host_schbench_placement() -> None:
    m = _analyze("host-schbench", "wl-sb-*")
    # Counted from the trace's lines by a separate script: 123 sched_wakeup of
    # the three wl-sb threads, 115 of them onto the CPU that logged the
    # sched_waking (the waker's). This VM's kernel writes no line for CPU 1's
    # idle task in process context, so CPU 1's switches away from idle are
    # missing; the reader recovers them from the task column (wl-sb-w0.0 is
    # first seen running on CPU 1 at 51033.240598, after CPU 1 went idle,
    # before its first wakeup). So every wakeup has a previous CPU: 122 onto
    # it, one elsewhere in the LLC (wl-sb-m0, 0 -> 1, the one
    # sched_migrate_task).
    assert m["wakeups"] == 123
    assert m["migrations"] == 1
    assert m["wake_prev_cpu_pct"] == pytest.approx(100 * 122 / 123)
    assert m["wake_same_llc_pct"] == pytest.approx(100 * 1 / 123)
    assert m["wake_on_waker_cpu_pct"] == pytest.approx(100 * 115 / 123)
    assert m["migrations_per_wakeup"] == pytest.approx(1 / 123)
    # A trace has no benchmark marks: schbench's own latencies come from its output.
    assert m["app_wakeup_latency_p50_us"] is None


def test_guest_machine_builds_the_domains_the_guest_kernel_printed() -> None:
    d = REC / "guest-2c2t-workqueue"
    kernel = json.loads((d / "kernel.json").read_text())
    printed: dict[int, list[tuple[str, frozenset[str]]]] = {}
    for line in kernel["sched_domains"]:
        path, name, *flags = line.split()
        cpu, level = map(int, re.findall(r"cpu(\d+)/domain(\d+)", path)[0])
        printed.setdefault(cpu, []).append((level, name, frozenset(flags)))  # type: ignore[arg-type]
    ours = _native.topo_doc((d / "machine.toml").read_text(), "toml", "fixture")
    for cpu, chain in enumerate(ours["cpu_chains"]):
        built = [
            (ours["domains"][i]["level"], frozenset(ours["domains"][i]["flags"])) for i in chain
        ]
        kernel_chain = [(name, flags) for _, name, flags in sorted(printed[cpu])]  # type: ignore[misc]
        assert built == kernel_chain, cpu


def test_validate_notes_that_the_guest_machine_builds_the_printed_domains() -> None:
    d = REC / "guest-2c2t-workqueue"
    kernel = json.loads((d / "kernel.json").read_text())
    machine = (d / "machine.toml").read_text()
    assert domain_notes(kernel, machine) == [
        "the machine builds the sched domains the kernel printed (debugfs), flags included, "
        "on every CPU: SMT MC"
    ]
    # A flag the kernel set and the machine does not build is named, CPU first.
    altered = [line.replace(" SD_SHARE_CPUCAPACITY", "") for line in kernel["sched_domains"]]
    [note] = domain_notes({**kernel, "sched_domains": altered}, machine)
    assert note.startswith("not modelled: the machine's sched domains (names and flags) differ")
    assert "on 4 CPUs (CPU 0: SMT MC against the kernel's SMT MC)" in note
    # Nothing printed (this VM's kernel hides debugfs), or nothing readable: no note.
    assert domain_notes({"sched_domains": []}, machine) == []
    assert domain_notes({"sched_domains": ["cpu0/domain0", "", 7]}, machine) == []


def test_numa_levels_compare_under_the_kernels_one_name() -> None:
    """The kernel names every NUMA level NUMA; schedlab numbers them."""
    presets = Path(__file__).parents[2] / "python/schedlab/presets/machines"
    machine = (presets / "xeon-2s-20c.toml").read_text()
    doc = _native.topo_doc(machine, "toml", "m")
    lines = []
    for cpu, chain in enumerate(doc["cpu_chains"]):
        for lvl, i in enumerate(chain):
            name = re.sub(r"^NUMA\d+$", "NUMA", doc["domains"][i]["level"])
            flags = " ".join(doc["domains"][i]["flags"])
            lines.append(f"/sys/kernel/debug/sched/domains/cpu{cpu}/domain{lvl} {name} {flags}")
    assert any(" NUMA " in line for line in lines)
    [note] = domain_notes({"sched_domains": lines}, machine)
    assert note.endswith("on every CPU: SMT MC NUMA"), note
