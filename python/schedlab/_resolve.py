"""Turn what a user names (a preset, a file, a dict) into text the core parses.

The core parses and validates every spec; this module only finds the text,
says where it came from (the ``origin`` that error messages name), and checks
TOML/JSON syntax early so that a malformed file is reported with its path.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ._native import SpecError, UnknownNameError

#: A machine: preset name, path to a TOML (or JSON) file, or a dict.
MachineArg = str | os.PathLike[str] | dict[str, Any]
#: A workload: spec string ``family:key=value,...``, path to a TOML/JSON file, or a dict.
WorkloadArg = str | os.PathLike[str] | dict[str, Any]
#: One workload, or a list of them run together on one machine (the first
#: non-noise one is the main workload; see ``schedlab workload list``).
WorkloadsArg = WorkloadArg | Sequence[WorkloadArg]

_FILE_SUFFIXES = (".toml", ".json")


@dataclass(frozen=True)
class Source:
    """A spec's text, its format (``toml``, ``json`` or ``spec``) and its origin."""

    text: str
    format: str
    origin: str


@dataclass(frozen=True)
class MachinePreset:
    """One machine preset shipped in ``schedlab/presets/machines``."""

    name: str
    description: str
    text: str


def _preset_files() -> dict[str, Traversable]:
    """Preset files by name (the file stem), in name order."""
    root = resources.files("schedlab").joinpath("presets").joinpath("machines")
    if not root.is_dir():
        return {}
    files = {
        entry.name.removesuffix(".toml"): entry
        for entry in root.iterdir()
        if entry.name.endswith(".toml") and entry.is_file()
    }
    return dict(sorted(files.items()))


def preset_names() -> list[str]:
    """Names of the machine presets, sorted."""
    return list(_preset_files())


def _load_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{origin}: invalid TOML: {e}") from None


def list_machines() -> list[MachinePreset]:
    """Every machine preset with the description line of its ``[machine]`` table."""
    out = []
    for name, entry in _preset_files().items():
        text = entry.read_text(encoding="utf-8")
        table = _load_toml(text, f"preset {name}").get("machine", {})
        description = str(table.get("description", "")) if isinstance(table, dict) else ""
        out.append(MachinePreset(name=name, description=description, text=text))
    return out


def _looks_like_path(arg: str) -> bool:
    return arg.endswith(_FILE_SUFFIXES) or os.sep in arg or (os.altsep or os.sep) in arg


def _read_spec_file(path: Path, what: str) -> Source:
    """Reads a TOML or JSON spec file and checks its syntax, naming the path on error."""
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{origin}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{origin}: cannot read {what} file: {e}") from None
    if path.suffix == ".json":
        # A workload may be an rt-app file, which allows C comments (as
        # rt-app's json-c parser does): the core parses and reports those.
        if what != "workload":
            try:
                json.loads(text)
            except json.JSONDecodeError as e:
                raise SpecError(f"{origin}: invalid JSON: {e}") from None
        return Source(text, "json", origin)
    _load_toml(text, origin)
    return Source(text, "toml", origin)


def resolve_machine(arg: MachineArg) -> Source:
    """The machine text for a preset name, a file path or a dict."""
    if isinstance(arg, dict):
        return Source(json.dumps(arg), "json", "machine dict")
    if not isinstance(arg, str) or _looks_like_path(arg):
        return _read_spec_file(Path(arg), "machine")
    presets = _preset_files()
    entry = presets.get(arg)
    if entry is None:
        valid = ", ".join(presets) or "(no presets installed)"
        raise UnknownNameError(
            f"unknown machine '{arg}'; valid: {valid} (or a path to a .toml file)"
        )
    return Source(entry.read_text(encoding="utf-8"), "toml", f"preset {arg}")


def resolve_workloads(arg: WorkloadsArg) -> tuple[Source, ...]:
    """The workload texts for one workload or a list of them (composed in order)."""
    items = [arg] if isinstance(arg, str | os.PathLike | dict) else list(arg)
    if not items:
        raise SpecError("workload: expected at least one workload, got an empty list")
    return tuple(resolve_workload(a) for a in items)


def resolve_workload(arg: WorkloadArg) -> Source:
    """The workload text for a spec string, a file path or a dict."""
    if isinstance(arg, dict):
        return Source(json.dumps(arg), "json", "workload dict")
    if isinstance(arg, str) and arg.startswith("rtapp:"):
        return _rtapp_source(arg)
    if isinstance(arg, str) and arg.startswith("replay:"):
        return _replay_source(arg)
    if not isinstance(arg, str) or arg.endswith(_FILE_SUFFIXES):
        return _read_spec_file(Path(arg), "workload")
    return Source(arg, "spec", "workload")


def _replay_source(arg: str) -> Source:
    """``replay:trace=PATH[,comm=REGEX]``: a user program rebuilt from a trace."""
    from .replay import program_from_trace

    keys: dict[str, str] = {}
    for kv in arg[len("replay:") :].split(","):
        if not kv:
            continue
        k, _, v = kv.partition("=")
        if k not in ("trace", "comm") or k in keys:
            raise SpecError(
                f"workload: workload.replay.{k}: expected the keys trace (required) "
                "and comm, each once"
            )
        keys[k] = v
    if not keys.get("trace"):
        raise SpecError("workload: workload.replay.trace: expected replay:trace=PATH[,comm=REGEX]")
    text = program_from_trace(keys["trace"], keys.get("comm") or None)
    return Source(text, "toml", f"replay:{keys['trace']}")


def _rtapp_source(arg: str) -> Source:
    """``rtapp:file=PATH``: an rt-app JSON file, whatever its name ends with."""
    keys = dict(kv.partition("=")[::2] for kv in arg[len("rtapp:") :].split(",") if kv)
    if set(keys) != {"file"} or not keys["file"]:
        raise SpecError(
            f"workload: workload.rtapp: expected rtapp:file=PATH (one key, file), got '{arg}'"
        )
    path = Path(keys["file"])
    try:
        return Source(path.read_text(encoding="utf-8"), "json", str(path))
    except FileNotFoundError:
        raise SpecError(f"{path}: workload file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read workload file: {e}") from None
