"""`schedlab workload show NAME`: every family listed can be shown, with its
structure, its source and its parameters; an unknown name exits 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from schedlab.cli import app

runner = CliRunner()


def test_every_listed_family_is_shown_with_structure_source_and_params() -> None:
    listed = json.loads(runner.invoke(app, ["workload", "list", "--json"]).output)
    names = [f["name"] for f in listed]
    for want in ("pipe", "barrier", "chameneos", "rtapp"):
        assert want in names
    for name in names:
        result = runner.invoke(app, ["workload", "show", name, "--json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        assert doc["structure"], name
        assert doc["source"], name
        assert doc["params"], name
        text = runner.invoke(app, ["workload", "show", name]).output
        assert "structure:" in text
        assert "source:" in text


def test_unknown_family_exits_2_with_the_valid_names() -> None:
    result = runner.invoke(app, ["workload", "show", "hackbenc"])
    assert result.exit_code == 2
    assert "unknown workload 'hackbenc'" in result.output
    assert "hackbench" in result.output
