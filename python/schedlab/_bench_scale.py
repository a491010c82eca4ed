"""Machines for ``schedlab bench --scale``: the same full-load schbench on
machines of 8 to 1024 CPUs, so that the engine's cost per event can be read
against machine size (issue: flat per-event cost).

Each machine is built here, not taken from a preset: packages of up to 32
cores x 2 SMT threads (64 CPUs), one LLC and one NUMA node per package, all
remote nodes at distance 21 (a fully connected multi-socket box), the core
type of the ``intel-4n-192`` preset (Cascade Lake idle states, 60% SMT speed).
schbench runs one message thread per package and, by its default, as many
workers as CPUs in all: every CPU has work.
"""

from __future__ import annotations

SIZES = (8, 64, 192, 512, 1024)
CPUS_PER_PACKAGE = 64


def runtime_ms(cpus: int) -> int:
    """Simulated run time for ``cpus`` CPUs: about the same number of events
    at every size (schbench's events grow with the CPUs), 200 ms to 2 s."""
    return max(200, min(2000, 204_800 // cpus))


def machine_toml(cpus: int) -> str:
    """TOML of the ``cpus``-CPU machine (a multiple of 8 up to 1024)."""
    per_pkg = min(cpus, CPUS_PER_PACKAGE)
    packages = cpus // per_pkg
    rows = ",\n".join(
        "  [" + ", ".join("10" if i == j else "21" for j in range(packages)) + "]"
        for i in range(packages)
    )
    return f"""[machine]
name = "scale-{cpus}"
description = "bench --scale: {packages} x {per_pkg // 2} cores x 2 threads, \
one LLC and node per package"
hz = 250

[topology]
packages = {packages}
nodes_per_package = 1
llcs_per_node = 1
clusters_per_llc = 1
cores_per_cluster = {per_pkg // 2}
threads_per_core = 2
smt_numbering = "split"
numa_distance = [
{rows}
]

[[core_type]]
name = "cascadelake"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2400
smt_speed_pct = 60
idle_states = [
  {{ name = "C1", exit_latency_us = 2, target_residency_us = 2 }},
  {{ name = "C1E", exit_latency_us = 10, target_residency_us = 20 }},
  {{ name = "C6", exit_latency_us = 133, target_residency_us = 600 }},
]

[freq_domain]
per = "core"

[cost]
l2_kib = 1024
llc_kib = 33792
"""


def workload(cpus: int, times: int = 1) -> str:
    """Full-load schbench on the ``cpus``-CPU machine, for ``times`` the
    size's run time (the bench runs each size once more at twice the time
    to measure the run without building the machine)."""
    packages = max(1, cpus // CPUS_PER_PACKAGE)
    return f"schbench:runtime={times * runtime_ms(cpus)}ms,message_threads={packages}"
