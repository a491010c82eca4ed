"""The package type-checks under ``mypy --strict`` (the project's settings in
pyproject.toml), with the native module typed by its shipped stubs; and a
user's script written against the public API type-checks too, so the stubs
say what the module returns (test_typed_api.py holds them to the module)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_SCRIPT = """
import math
import schedlab

r = schedlab.run("laptop-4c8t", "hackbench:groups=1", trace=True)
ct: float = r.metrics[r.primary]
unit: str = r.units[r.primary]
sw = r.events("sched_switch")
frames = schedlab.trace.read("run.trace")
names: list[str] = frames.events
assert not math.isnan(ct) and unit and names and len(sw) >= 0
"""


def _mypy(args: list[str]) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install .[test])")
    out, err, status = api.run(args)
    return out + err, status


def test_package_passes_mypy_strict(tmp_path: Path) -> None:
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "c")]
    report, status = _mypy([*config, str(ROOT / "python" / "schedlab")])
    assert status == 0, report


def test_a_user_script_type_checks_and_a_misuse_does_not(tmp_path: Path) -> None:
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "c")]
    script = tmp_path / "use.py"
    script.write_text(USER_SCRIPT)
    report, status = _mypy([*config, str(script)])
    assert status == 0, report
    # The types are known, not Any: a metric is a float, not a str.
    script.write_text(USER_SCRIPT + 'wrong: str = r.metrics["migrations"]\n')
    report, status = _mypy([*config, str(script)])
    assert status == 1, report
    assert 'expression has type "float", variable has type "str"' in report, report
