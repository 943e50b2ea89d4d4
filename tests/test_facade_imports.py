"""What users read and the bot import only façades: the README, the notebooks, ``rxcord.bot``.

The modules behind the façades are internal and may move between releases; an example that
imports one teaches a path that breaks. The bot, built on the public API, may also import its
own room (``rxcord.bot.*``). ``rxcord.data`` is the bundled captures (a resource package).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import rxcord

ROOT = Path(__file__).resolve().parent.parent

FACADES = frozenset(
    {
        "rxcord",
        "rxcord.cli",
        "rxcord.compose",
        "rxcord.decisions",
        "rxcord.discord",
        "rxcord.hooks",
        "rxcord.io",
        "rxcord.operators",
        "rxcord.providers",
        "rxcord.sinks",
        "rxcord.testing",
    }
)
RESOURCES = frozenset({"rxcord.data"})

_FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def imported_modules(source: str) -> Iterator[tuple[int, str]]:
    """Each ``rxcord`` module an import statement of *source* names, with its line."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from rxcord.providers import decisions`` imports the module rxcord.providers.decisions
            subs = [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if not _exported(node.module, alias.name)
            ]
            names = [node.module, *(name for name in subs if _is_module(name))]
        else:
            continue
        for name in names:
            if name == "rxcord" or name.startswith("rxcord."):
                yield node.lineno, name


def _exported(module: str, name: str) -> bool:
    # ``from rxcord.operators import flush`` is the operator, though a module has its name
    return module in FACADES and name in importlib.import_module(module).__all__


def _root_attributes(source: str) -> Iterator[tuple[int, str]]:
    """``rxcord.X`` where X is neither a root export nor a façade: a name that moved to its room."""
    rooms = {name.split(".", 1)[1] for name in FACADES | RESOURCES if "." in name}
    known = {*rxcord.__all__, "__version__", *rooms}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if node.value.id == "rxcord" and node.attr not in known:
            yield node.lineno, node.attr


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # the parent is not a package, or not installed
        return False


def internal_imports(source: str, *, own_room: str | None = None) -> list[str]:
    """The imports of *source* that name a module behind a façade, and ``rxcord.X`` not in the root."""
    out = [f"line {line}: rxcord.{name}" for line, name in _root_attributes(source)]
    for line, name in imported_modules(source):
        if name in FACADES or name in RESOURCES:
            continue
        if own_room is not None and (name == own_room or name.startswith(own_room + ".")):
            continue
        out.append(f"line {line}: {name}")
    return out


def readme_blocks() -> list[str]:
    return _FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def notebook_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    # IPython magics and shell lines are not Python
    return [
        "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
        for src in sources
    ]


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BOT = sorted((ROOT / "pipeline" / "bot").glob("*.py"))


def test_the_scanner_sees_internal_imports() -> None:
    """The check itself: internal paths are reported, façades and the own room are not."""
    source = (
        "import rxcord\nimport rxcord.data\nfrom rxcord.decisions import Decisions\n"
        "from rxcord.providers.decisions import Decisions\nimport rxcord.core.types as t\n"
        "from rxcord import Streamer, compose\nfrom rxcord.bot.config import parse_config\n"
        "rxcord.Streamer, rxcord.decisions, rxcord.Timeline\nfrom rxcord.operators import flush\n"
    )
    assert internal_imports(source) == [
        "line 8: rxcord.Timeline",
        "line 4: rxcord.providers.decisions",
        "line 5: rxcord.core.types",
        "line 7: rxcord.bot.config",
    ]
    assert internal_imports(source, own_room="rxcord.bot") == internal_imports(source)[:3]


def test_the_readme_imports_only_facades() -> None:
    blocks = readme_blocks()
    assert len(blocks) > 5 and any("import rxcord" in block for block in blocks)
    found = {f"block {i}: {hit}": block for i, block in enumerate(blocks) for hit in internal_imports(block)}
    assert sorted(found) == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_each_notebook_imports_only_facades(notebook: Path) -> None:
    cells = notebook_cells(notebook)
    assert any("rxcord" in cell for cell in cells)
    found = [f"cell {i}: {hit}" for i, cell in enumerate(cells) for hit in internal_imports(cell)]
    assert found == []


@pytest.mark.parametrize("module", BOT, ids=[path.name for path in BOT])
def test_the_bot_imports_only_facades_and_its_own_room(module: Path) -> None:
    source = module.read_text(encoding="utf-8")
    assert internal_imports(source, own_room="rxcord.bot") == []


def test_there_is_something_to_check() -> None:
    assert len(NOTEBOOKS) >= 6 and len(BOT) >= 5
