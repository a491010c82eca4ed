"""Type stubs of the native module built from crates/schedlab-py."""

class SchedlabError(Exception): ...
class SpecError(SchedlabError): ...
class UnknownNameError(SchedlabError): ...
class SimulationError(SchedlabError): ...
class RunInterrupted(SimulationError): ...

def request_stop() -> None: ...
def clear_stop() -> None: ...

def run(
    machine_text: str,
    machine_format: str,
    machine_origin: str,
    workload: str,
    workload_format: str,
    policy: str,
    seed: int,
    trace: bool = False,
    check_invariants: bool = False,
    max_time_ns: int = 0,
    extra_workloads: list[tuple[str, str, str]] = ...,
) -> tuple[str, str | None]: ...
def run_to_file(
    machine_text: str,
    machine_format: str,
    machine_origin: str,
    workload: str,
    workload_format: str,
    policy: str,
    seed: int,
    trace_path: str,
    trace_format: str,
    check_invariants: bool = False,
    max_time_ns: int = 0,
    extra_workloads: list[tuple[str, str, str]] = ...,
) -> str: ...
def topo_show(text: str, format: str, origin: str, json: bool = False) -> str: ...
def topo_import(root: str) -> str: ...
def policy_list() -> str: ...
def policy_show(policy: str) -> str: ...
def workload_list() -> str: ...
def analyze_trace(
    text: str,
    origin: str,
    machine: tuple[str, str, str] | None = None,
    comms: list[str] = ...,
    pids: list[int] = ...,
) -> str: ...
