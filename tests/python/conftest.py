"""Shared fixtures: the test machine and a small workload."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TINY_MACHINE = FIXTURES / "tiny-2c4t.toml"
SMALL_WORKLOAD = "hackbench:groups=1,fds=2,loops=10"


@pytest.fixture
def fixtures_dir() -> Path:
    """Directory of the test machines and workloads."""
    return FIXTURES


@pytest.fixture
def tiny_machine() -> Path:
    """A 2-core / 4-thread machine file."""
    return TINY_MACHINE


@pytest.fixture
def small_workload() -> str:
    """A hackbench spec small enough for tests."""
    return SMALL_WORKLOAD
