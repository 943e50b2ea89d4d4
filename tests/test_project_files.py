"""The maintenance files: pre-commit runs what CI runs, and the changelog knows the version."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import rxcord

ROOT = Path(__file__).resolve().parent.parent


def test_pre_commit_runs_cis_checks_offline() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    checks = [
        line.strip() for line in ci.splitlines() if re.match(r"\s*\.venv/bin/(ruff|mypy|lint-imports)", line)
    ]
    assert len(checks) == 4  # ruff check, ruff format --check, mypy, lint-imports
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    [repo] = config["repos"]
    assert repo["repo"] == "local"  # nothing to download
    hooks = repo["hooks"]
    assert {hook["language"] for hook in hooks} == {"system"}
    assert sorted(hook["entry"] for hook in hooks) == sorted(checks)


def test_the_changelog_has_unreleased_and_the_current_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert rxcord.__version__ in headings
    for heading in headings:  # Keep a Changelog: every version heading has its link
        assert re.search(rf"^\[{re.escape(heading)}\]: https://", text, flags=re.MULTILINE), heading
