"""docs/llmcord.md cannot drift: every test it cites is collected, every row rests on something.

The page sets ``rxcord bot`` beside llmcord. Its rxcord claims are only worth the tests they
name, so each named test must be one pytest collects (a ``test_*`` function of that file, or a
method of its ``Test*`` class); its llmcord claims cite lines of one pinned commit, so a citation
past the end of that file is a typo.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "llmcord.md"

# The sizes of llmcord's files at the commit the page names (d0aa8d2): llmcord.py, README.md.
LLMCORD_LINES = 347
README_LINES = 125

NODE = re.compile(r"`(tests/[\w/]+\.py(?:::\w+)+)`")
CITE = re.compile(r"(README )?L(\d+)(?:-(\d+))?")


def _rows() -> list[list[str]]:
    """Each table row's cells (header and separator rows left out)."""
    rows = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| Topic |") or line.startswith("| ---"):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def _cited() -> set[str]:
    return {node for row in _rows() for node in NODE.findall(row[2])}


def _defined(files: set[str]) -> set[str]:
    """The test node ids *files* define: ``test_*`` functions, and ``Test*`` classes' methods.

    Read from the source (no import, no pytest start-up), so the check costs milliseconds on a
    loaded machine; pytest collects exactly these names (``python_functions`` is the default).
    """
    found = set()
    for name in files:
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                found.add(f"{name}::{node.name}")
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith(
                        "test"
                    ):
                        found.add(f"{name}::{node.name}::{item.name}")
    return found


def missing(cited: set[str], collected: set[str]) -> set[str]:
    """The cited node ids the suite does not define."""
    return cited - collected


def test_the_page_has_the_rows_it_promises() -> None:
    topics = {row[0] for row in _rows()}
    for topic in ("Reply-chain context", "Who may stop (`/stop`, `/kill`)", "Providers", "Docker"):
        assert topic in topics, topic
    assert all(len(row) == 5 for row in _rows()), [row[0] for row in _rows() if len(row) != 5]
    assert len(_cited()) >= 60


def test_every_rxcord_row_names_a_test_or_says_what_is_missing() -> None:
    for topic, claim, measured, _, _ in _rows():
        said = "**Lacks**" in claim or "**not measured**" in claim
        assert NODE.search(measured) or said, f"{topic}: names no test"


def test_every_llmcord_row_cites_lines_of_the_pinned_commit() -> None:
    for topic, *_, source in _rows():
        cites = CITE.findall(source)
        assert cites, f"{topic}: cites no line"
        for readme, first, last in cites:
            end = README_LINES if readme else LLMCORD_LINES
            assert 1 <= int(first) <= int(last or first) <= end, f"{topic}: {source}"


def test_every_cited_test_exists() -> None:
    cited = _cited()
    files = {node.split("::", 1)[0] for node in cited}
    absent = sorted(name for name in files if not (ROOT / name).is_file())
    assert not absent, absent
    collected = _defined(files)
    assert not missing(cited, collected), sorted(missing(cited, collected))
    # The check can fail: a name the suite does not have is reported.
    assert missing({"tests/bot/test_bot.py::test_no_such_test"}, collected) == {
        "tests/bot/test_bot.py::test_no_such_test"
    }


@pytest.mark.parametrize(
    ("path", "link"),
    [("README.md", "docs/llmcord.md"), ("mkdocs.yml", "llmcord.md")],
)
def test_the_page_is_linked(path: str, link: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    if path == "README.md":
        text = text.split("## Run a bot\n", 1)[1].split("\n## ", 1)[0]
    assert link in text
