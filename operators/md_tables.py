"""Markdown tables: where they lie in a text, and their rendering as an aligned monospace block.

Discord does not render markdown tables. The flusher (stage 05) holds a table
whole and replaces it by ``render_table``'s code block.
"""

from __future__ import annotations

__all__ = ("TableSpan", "render_table")

import re
from typing import Final

import attrs
from rxcord.operators.graphemes import display_width


@attrs.frozen
class TableSpan:
    """A complete table: the text ``[start, end)`` (``end`` is after the last row's line break)."""

    start: int
    end: int


_DELIMITER_CELL: Final = re.compile(r":?-+:?")
_CELL_SPLIT: Final = re.compile(r"(?<!\\)\|")
_BOLD: Final = re.compile(r"\*\*(.+?)\*\*")


def _cells(line: str) -> list[str]:
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip() for cell in _CELL_SPLIT.split(row)]


def _clean_cell(cell: str) -> str:
    # Inside a code block markdown shows literally: drop the common markers, and every
    # backtick, which could otherwise close the block.
    return _BOLD.sub(r"\1", cell).replace("\\|", "|").replace("`", "")


def render_table(table: str) -> str | None:
    r"""Render a markdown table as a monospace code block with aligned columns.

    Discord does not render markdown tables. A table (header row, delimiter
    row such as ``|---|:--:|``, body rows) becomes a fenced block without a
    language::

        Name  | Age
        ------+----
        Alice |  30

    Columns are padded to their widest cell (``display_width``: wide CJK
    characters count two) and aligned as the delimiter row says (``:-`` left,
    the default, ``-:`` right, ``:-:`` centre). Outer pipes are dropped,
    ``**bold**`` markers, backticks and ``\|`` escapes are removed from cells,
    trailing spaces are trimmed, and a row with fewer cells is padded. A
    trailing line break of *table* is kept after the block.

    Returns:
        The block, or ``None`` when *table* is not a table (fewer than two rows,
        or a second row that is not a delimiter row): it is then sent as written.
    """
    trailing = "\n" if table.endswith("\n") else ""
    lines = table[: len(table) - len(trailing)].split("\n")
    if len(lines) < 2:
        return None
    delimiter = _cells(lines[1])
    if not delimiter or not all(_DELIMITER_CELL.fullmatch(cell) for cell in delimiter):
        return None
    rows = [[_clean_cell(cell) for cell in _cells(line)] for line in [lines[0], *lines[2:]]]
    columns = max(len(row) for row in rows)
    for row in rows:
        row.extend([""] * (columns - len(row)))
    widths = [max(display_width(row[c]) for row in rows) for c in range(columns)]
    aligns = [
        ("c" if cell.startswith(":") and cell.endswith(":") else "r" if cell.endswith(":") else "l")
        for cell in delimiter
    ]
    aligns.extend(["l"] * (columns - len(aligns)))

    def fit(cell: str, width: int, align: str) -> str:
        pad = width - display_width(cell)
        if align == "r":
            return " " * pad + cell
        if align == "c":
            return " " * (pad // 2) + cell + " " * (pad - pad // 2)
        return cell + " " * pad

    out = [" | ".join(fit(row[c], widths[c], aligns[c]) for c in range(columns)).rstrip() for row in rows]
    out.insert(1, "-+-".join("-" * max(width, 1) for width in widths))
    return "```\n" + "\n".join(out) + "\n```" + trailing
