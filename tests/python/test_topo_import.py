"""`schedlab topo import`: a sysfs-shaped tree in, a machine TOML out that
`topo show` accepts; bad trees exit 2 with one line naming the file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()


def _put(root: Path, rel: str, text: str) -> None:
    p = root / "devices" / "system" / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n", encoding="utf-8")


def _write_tree(root: Path) -> None:
    """4 CPUs, 2 cores x 2 threads (adjacent siblings), one L3, one node."""
    _put(root, "cpu/online", "0-3")
    for c in range(4):
        t = f"cpu/cpu{c}/topology"
        core = c // 2
        _put(root, f"{t}/thread_siblings_list", f"{2 * core}-{2 * core + 1}")
        _put(root, f"{t}/core_id", str(core))
        _put(root, f"{t}/physical_package_id", "0")
        for i, (level, kind, size, shared) in enumerate(
            [
                (1, "Data", "32K", f"{2 * core}-{2 * core + 1}"),
                (2, "Unified", "1024K", f"{2 * core}-{2 * core + 1}"),
                (3, "Unified", "8M", "0-3"),
            ]
        ):
            d = f"cpu/cpu{c}/cache/index{i}"
            _put(root, f"{d}/level", str(level))
            _put(root, f"{d}/type", kind)
            _put(root, f"{d}/size", size)
            _put(root, f"{d}/shared_cpu_list", shared)
    _put(root, "cpu/cpufreq/policy0/related_cpus", "0 1 2 3")
    _put(root, "cpu/cpufreq/policy0/cpuinfo_max_freq", "3000000")
    _put(root, "node/node0/cpulist", "0-3")
    _put(root, "node/node0/distance", "10")


def test_import_then_show(tmp_path: Path) -> None:
    _write_tree(tmp_path / "sys")
    out = tmp_path / "m.toml"
    result = runner.invoke(
        app, ["topo", "import", "--sysfs", str(tmp_path / "sys"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert 'smt_numbering = "adjacent"' in text
    assert "# from cpu0/cache/index2/size" in text
    shown = runner.invoke(app, ["topo", "show", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "SMT" in shown.output
    assert "MC" in shown.output


def test_import_to_stdout(tmp_path: Path) -> None:
    _write_tree(tmp_path)
    result = runner.invoke(app, ["topo", "import", "--sysfs", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# Imported by `schedlab topo import`")


def test_import_garbage_exits_2_naming_the_file(tmp_path: Path) -> None:
    _write_tree(tmp_path)
    _put(tmp_path, "cpu/cpu2/topology/thread_siblings_list", "two,three")
    result = runner.invoke(app, ["topo", "import", "--sysfs", str(tmp_path)])
    assert result.exit_code == 2
    assert "cpu2/topology/thread_siblings_list" in " ".join(result.output.split())


def test_import_help_says_what_dir_is() -> None:
    result = runner.invoke(app, ["topo", "import", "--help"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "--sysfs" in out
    assert "devices/system/cpu" in out
    assert "--output" in out
