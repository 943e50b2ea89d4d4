"""Table rendering (``rxcord.operators.markdown.tables``)."""

from __future__ import annotations

from rxcord.operators.markdown.tables import render_table


def test_render_table_aligns_columns() -> None:
    """A table becomes a monospace block with padded columns, aligned as the delimiter row says."""
    table = "| Name | Qty | Note |\n|:-----|----:|:----:|\n| **Alice** | 3 | `ok` |\n| 日本 | 12 |\n"
    assert render_table(table) == (
        "```\nName  | Qty | Note\n------+-----+-----\nAlice |   3 |  ok\n日本  |  12 |\n```\n"
    )


def test_render_table_refuses_non_tables() -> None:
    """Pipe lines without a delimiter row are not a table."""
    assert render_table("| a | b |\n| c | d |") is None
    assert render_table("| a |") is None
