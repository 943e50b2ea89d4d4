"""Tables as pictures (stage 07, pure: a table's markdown in, message bodies with files out).

Discord does not render markdown tables, and a wide one sent as a monospace block wraps
into noise on a phone. A ``TABLE`` segment (``StreamConfig.tables``) is drawn here with
Pillow as a PNG and sent as an attachment whose ``description`` (alt text) is the table's
markdown; when the markdown is longer than a description holds (1024 characters) it is
also attached as ``table.md``. A table past the picture bounds
(``rxcord.operators.markdown.tables.MAX_ROWS`` / ``MAX_COLUMNS`` / ``MAX_CELL_CHARS``, and
``MAX_WIDTH`` pixels) is sent
as its monospace block instead, with ``table.md`` beside it.

The picture is an opaque card with its own background (a dark slate, light text), so it
reads the same on Discord's dark and light themes. The font is Pillow's own scalable
default (``ImageFont.load_default(size=...)``, Pillow >= 10.1): nothing to install, no font
file bundled; it has Latin, Greek and Cyrillic glyphs, not CJK. Drawing is linear in the
table: each cell is measured once and drawn once, and the bounds bound the image size.
"""

from __future__ import annotations

__all__ = (
    "DESCRIPTION_MAX",
    "FONT_SIZE",
    "MARGIN",
    "MAX_WIDTH",
    "PAD_X",
    "ROW_HEIGHT",
    "draw_table",
    "table_messages",
)

import functools
import io
from typing import Any, Final

import attrs
from PIL import Image, ImageDraw, ImageFont

from rxcord.operators.markdown.tables import Table, parse_table, render_table
from rxcord.sinks.split_message import split_message
from rxcord.sinks.uploads import FILES, Upload

DESCRIPTION_MAX: Final = 1024
"""Discord's limit for an attachment's ``description``."""
FONT_SIZE: Final = 16
MARGIN: Final = 1
"""The card's border, in pixels."""
PAD_X: Final = 12
"""Space left and right of a cell's text."""
ROW_HEIGHT: Final = 30
"""One row, in pixels (the text's line plus space above and below)."""
MAX_WIDTH: Final = 3000
"""The widest picture drawn, in pixels; a wider table goes as its monospace block and ``table.md``."""

_BACKGROUND: Final = (43, 45, 49)
_HEADER: Final = (56, 59, 66)
_STRIPE: Final = (49, 51, 56)
_RULE: Final = (78, 80, 88)
_TEXT: Final = (219, 222, 225)
_HEADER_TEXT: Final = (255, 255, 255)


@functools.cache
def _font() -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=FONT_SIZE)


@attrs.frozen
class _Layout:
    lengths: list[list[float]]
    """Each cell's text width, in pixels (measured once)."""
    columns: list[int]
    size: tuple[int, int]


def _layout(table: Table) -> _Layout:
    font = _font()
    widths = [0] * len(table.aligns)
    lengths = [[font.getlength(cell) for cell in row] for row in table.rows]
    for measured in lengths:
        for c, length in enumerate(measured):
            widths[c] = max(widths[c], int(length + 0.999))
    columns = [width + 2 * PAD_X for width in widths]
    return _Layout(lengths, columns, (sum(columns) + 2 * MARGIN, len(table.rows) * ROW_HEIGHT + 2 * MARGIN))


def draw_table(table: Table) -> bytes | None:
    """*table* as a PNG: a header row, striped body rows, columns aligned as the delimiter row says.

    ``None`` when the picture would be wider than ``MAX_WIDTH`` pixels (shown scaled down to a
    chat column, its text would be unreadable).
    """
    layout = _layout(table)
    lengths, columns, size = layout.lengths, layout.columns, layout.size
    if size[0] > MAX_WIDTH:
        return None
    font = _font()
    image = Image.new("RGB", size, _RULE)
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(table.rows):
        top = MARGIN + r * ROW_HEIGHT
        fill = _HEADER if r == 0 else _STRIPE if r % 2 == 0 else _BACKGROUND
        draw.rectangle((MARGIN, top, size[0] - MARGIN - 1, top + ROW_HEIGHT - 1), fill=fill)
        left = MARGIN
        for c, cell in enumerate(row):
            if c:
                draw.line((left, top, left, top + ROW_HEIGHT - 1), fill=_RULE)
            x = _aligned(left, columns[c], lengths[r][c], table.aligns[c])
            colour = _HEADER_TEXT if r == 0 else _TEXT
            draw.text((x, top + ROW_HEIGHT // 2), cell, font=font, fill=colour, anchor="lm")
            left += columns[c]
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _aligned(left: int, column: int, length: float, align: str) -> float:
    if align == "r":
        return left + column - PAD_X - length
    if align == "c":
        return left + (column - length) / 2
    return float(left + PAD_X)


def table_messages(markdown: str, limit: int) -> list[dict[str, Any]]:
    """The message bodies (content, ``attachments``, files) that send the table *markdown*.

    A drawable table: one message, the picture with the markdown as its description (and
    ``table.md`` when the markdown does not fit one). Past the bounds: its monospace block in
    messages of at most *limit* code points, the last one with ``table.md``. Not a table
    at all (a flusher's ``TABLE`` segment always is one): the text, as written.
    """
    source = markdown.strip("\n")
    table = parse_table(source)
    if table is None:
        return [{"content": piece} for piece in split_message(markdown, limit)]
    md_file = Upload("table.md", source.encode(), "text/markdown; charset=utf-8")
    drawn = draw_table(table) if table.drawable else None
    if drawn is None:
        block = render_table(source) or source
        bodies: list[dict[str, Any]] = [{"content": piece} for piece in split_message(block, limit)]
        bodies[-1].update(_attach((md_file, "The table as markdown")))
        return bodies
    picture = Upload("table.png", drawn, "image/png")
    if len(source) <= DESCRIPTION_MAX:
        return [_attach((picture, source))]
    alt = source[: DESCRIPTION_MAX - 1] + "\u2026"
    return [_attach((picture, alt), (md_file, "The table as markdown"))]


def _attach(*files: tuple[Upload, str]) -> dict[str, Any]:
    return {
        "attachments": [
            {"id": n, "filename": upload.filename, "description": description}
            for n, (upload, description) in enumerate(files)
        ],
        FILES: tuple(upload for upload, _ in files),
    }
