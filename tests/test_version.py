"""One version source: pyproject.toml writes it, everything else reads the installed metadata."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

import rxcord
from rxcord.cli.main import main
from rxcord.sinks.rest import USER_AGENT

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("pipeline", "operators", "providers", "sinks")


def test_the_version_is_the_installed_metadata() -> None:
    assert rxcord.__version__ == importlib.metadata.version("rxcord")


def test_pyproject_is_where_the_version_is_written() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == rxcord.__version__
    literal = re.compile(rf"""["']{re.escape(rxcord.__version__)}["']""")
    written = [
        str(path.relative_to(ROOT))
        for folder in PACKAGE_FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if literal.search(path.read_text(encoding="utf-8"))
    ]
    assert written == []
    assert USER_AGENT.endswith(f", {rxcord.__version__})")


def test_the_command_line_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"rxcord {rxcord.__version__}"
