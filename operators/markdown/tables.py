"""Markdown tables: where they lie in a text, their cells, and their rendering as a monospace block.

Discord does not render markdown tables. The flusher (stage 05) holds a table
whole and either replaces it by ``render_table``'s code block (a narrow table,
or ``TableStyle.MONOSPACE``) or releases it as a ``TABLE`` segment, which stage
07 sends as a picture (``rxcord.sinks.table_picture``). ``parse_table`` is the
one reading of a table both renderings share.
"""

from __future__ import annotations

__all__ = (
    "INLINE_WIDTH",
    "MAX_CELL_CHARS",
    "MAX_COLUMNS",
    "MAX_ROWS",
    "Table",
    "TableSpan",
    "inline_width",
    "parse_table",
    "render_table",
)

import re
from typing import Final

import attrs

from rxcord.operators.markdown.graphemes import display_width

INLINE_WIDTH: Final = 40
"""A table whose monospace block is at most this many columns wide stays inline as that block:
it fits a phone's code block without wrapping (about 40 columns), so a picture would add nothing."""
MAX_ROWS: Final = 60
"""Rows (header included) past which a table is not drawn (the picture would be unreadable)."""
MAX_COLUMNS: Final = 16
"""Columns past which a table is not drawn."""
MAX_CELL_CHARS: Final = 80
"""Cell length past which a table is not drawn: together these bound the picture's size."""


@attrs.frozen
class Table:
    """A table's cells as shown: header first, every row padded to ``len(aligns)`` cells."""

    rows: tuple[tuple[str, ...], ...]
    aligns: tuple[str, ...]
    """Per column: ``"l"``, ``"r"`` or ``"c"``, as the delimiter row says."""

    @property
    def drawable(self) -> bool:
        """Whether the table is within the picture bounds (rows, columns, cell length)."""
        return (
            len(self.rows) <= MAX_ROWS
            and len(self.aligns) <= MAX_COLUMNS
            and all(len(cell) <= MAX_CELL_CHARS for row in self.rows for cell in row)
        )


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


def render_table(text: str) -> str | None:
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
    trailing line break of *text* is kept after the block.

    Returns:
        The block, or ``None`` when *text* is not a table (fewer than two rows,
        or a second row that is not a delimiter row): it is then sent as written.
    """
    table = parse_table(text)
    if table is None:
        return None
    trailing = "\n" if text.endswith("\n") else ""
    rows, aligns = table.rows, table.aligns
    columns = len(aligns)
    widths = [max(display_width(row[c]) for row in rows) for c in range(columns)]

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


def parse_table(text: str) -> Table | None:
    r"""The cells of markdown table *text* (one read of each line), or ``None`` when it is not one.

    Not a table: fewer than two rows, or a second row that is not a delimiter row
    such as ``|---|:--:|``. Outer pipes are dropped, ``**bold**`` markers, backticks
    and ``\|`` escapes are removed from cells, and a row with fewer cells is padded.
    """
    body = text[:-1] if text.endswith("\n") else text
    lines = body.split("\n")
    if len(lines) < 2:
        return None
    delimiter = _cells(lines[1])
    if not delimiter or not all(_DELIMITER_CELL.fullmatch(cell) for cell in delimiter):
        return None
    rows = [[_clean_cell(cell) for cell in _cells(line)] for line in [lines[0], *lines[2:]]]
    columns = max(len(row) for row in rows)
    for row in rows:
        row.extend([""] * (columns - len(row)))
    aligns = [
        ("c" if cell.startswith(":") and cell.endswith(":") else "r" if cell.endswith(":") else "l")
        for cell in delimiter[:columns]
    ]
    aligns.extend(["l"] * (columns - len(aligns)))
    return Table(rows=tuple(tuple(row) for row in rows), aligns=tuple(aligns))


def inline_width(block: str) -> int:
    """The widest line of a ``render_table`` block, in display columns (the fences excluded)."""
    lines = block.rstrip("\n").split("\n")[1:-1]
    return max((display_width(line) for line in lines), default=0)
