"""Tables in the flusher (stage 05): a wide table is its own TABLE segment, text before and after it apart."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig, TableStyle
from rxcord.core.state import Segment
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.tables import INLINE_WIDTH, inline_width, parse_table, render_table

WIDE = (
    "| Operator | Example | Explanation | Overloadable? |\n"
    "|---|---|---|:-:|\n"
    "| `!=` | `expr != expr` | Nonequality comparison | `PartialEq` |\n"
    "| `%=` | `var %= expr` | Arithmetic remainder and assignment | `RemAssign` |\n"
)
NARROW = "| a | b |\n|---|--:|\n| 1 | 22 |\n"
TEXT = "Here is the table:\n\n" + WIDE + "\nAnd after it.\n\n" + NARROW + "\nThe end."


def _run(config: StreamConfig, deltas: list[str]) -> list[Segment]:
    flusher = Flusher(config)
    out: list[Segment] = []
    for delta in deltas:
        out += flusher.push(delta)
    return out + flusher.flush(final=True)


def _kinds(segments: list[Segment]) -> list[tuple[str, str]]:
    return [(s.kind.value, s.text) for s in segments]


def test_the_width_rule_keeps_narrow_tables_inline() -> None:
    """A block of at most INLINE_WIDTH columns stays in the text; the wide one is past it."""
    narrow, wide = render_table(NARROW), render_table(WIDE)
    assert narrow is not None and wide is not None
    assert inline_width(narrow) <= INLINE_WIDTH < inline_width(wide)


def test_aggregated_flushes_at_the_table() -> None:
    """Aggregated: the text before, the table's markdown as a TABLE segment, then the text after."""
    segments = _run(StreamConfig(), [TEXT])
    assert _kinds(segments) == [
        ("text", "Here is the table:\n\n"),
        ("table", WIDE),
        ("text", "\nAnd after it.\n\n" + (render_table(NARROW) or "") + "\nThe end."),
    ]
    assert segments[-1].final


def test_live_delivers_before_table_after_in_order() -> None:
    """Live: the same order; the narrow table stays an inline monospace block."""
    segments = _run(
        StreamConfig(delivery=DeliveryMode.LIVE), [TEXT[i : i + 7] for i in range(0, len(TEXT), 7)]
    )
    kinds = [s.kind for s in segments]
    assert kinds.count(SegmentKind.TABLE) == 1
    table = kinds.index(SegmentKind.TABLE)
    assert segments[table].text == WIDE
    assert "".join(s.text for s in segments[:table]) == "Here is the table:\n\n"
    after = "".join(s.text for s in segments[table + 1 :])
    assert after.startswith("And after it.") and (render_table(NARROW) or "?") in after


def test_monospace_keeps_todays_behaviour() -> None:
    """``tables=monospace``: one text, every table an aligned code block (as before)."""
    segments = _run(StreamConfig(tables=TableStyle.MONOSPACE), [TEXT])
    expected = (
        "Here is the table:\n\n"
        + (render_table(WIDE) or "")
        + "\nAnd after it.\n\n"
        + (render_table(NARROW) or "")
        + "\nThe end."
    )
    assert _kinds(segments) == [("text", expected)]


def test_edit_mode_cuts_at_a_picture_as_aggregated() -> None:
    """Edit in place delivers a wide table as a picture too: its final segments are aggregated's."""
    segments = _run(StreamConfig(delivery=DeliveryMode.EDIT), [TEXT])
    assert [s.kind for s in segments].count(SegmentKind.TABLE) == 1
    assert segments == _run(StreamConfig(delivery=DeliveryMode.AGGREGATED), [TEXT])


def test_edit_mode_with_monospace_keeps_one_text() -> None:
    """``tables = monospace`` in edit mode: one text, the table a code block (as before)."""
    segments = _run(StreamConfig(delivery=DeliveryMode.EDIT, tables=TableStyle.MONOSPACE), [TEXT])
    assert [s.kind for s in segments] == [SegmentKind.TEXT]
    assert (render_table(WIDE) or "?") in segments[0].text


def test_a_table_at_the_very_end_is_a_table_segment() -> None:
    """Nothing after the table: text before, then the table, which is final."""
    segments = _run(StreamConfig(), ["Look:\n", WIDE.rstrip("\n")])
    assert _kinds(segments) == [("text", "Look:\n"), ("table", WIDE.rstrip("\n"))]
    assert segments[-1].final


def test_the_cap_counts_a_table_segment() -> None:
    """``max_flushes`` counts the table: with 2, the text after it is not released."""
    flusher = Flusher(StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=2))
    segments = flusher.push(TEXT) + flusher.flush(final=True)
    assert [s.kind for s in segments] == [SegmentKind.TEXT, SegmentKind.TABLE] and flusher.capped


def test_parse_table_pads_rows_and_reads_alignment() -> None:
    """One reading for both renderings: header first, short rows padded, alignment per column."""
    table = parse_table("| a | b | c |\n|:-|:-:|-:|\n| 1 |\n")
    assert table is not None
    assert table.rows == (("a", "b", "c"), ("1", "", ""))
    assert table.aligns == ("l", "c", "r")
    assert parse_table("| a |\n| b |\n") is None


_cuts = st.lists(st.integers(min_value=0, max_value=len(TEXT)), max_size=12)


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted(set(cuts) | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=60, deadline=None)
@given(cuts=_cuts)
def test_split_invariance_aggregated(cuts: list[int]) -> None:
    """The same bytes cut anywhere give the same segment sequence (so the same picture)."""
    assert _kinds(_run(StreamConfig(), _split(TEXT, cuts))) == _kinds(_run(StreamConfig(), [TEXT]))


@settings(max_examples=60, deadline=None)
@given(cuts=_cuts)
def test_split_invariance_live(cuts: list[int]) -> None:
    """Live: wherever the deltas are cut, one TABLE segment with the same markdown, text joined around it."""
    config = StreamConfig(delivery=DeliveryMode.LIVE)
    segments = _run(config, _split(TEXT, cuts))
    tables = [s.text for s in segments if s.kind is SegmentKind.TABLE]
    assert tables == [WIDE]
    at = [s.kind for s in segments].index(SegmentKind.TABLE)
    assert "".join(s.text for s in segments[:at]) == "Here is the table:\n\n"
    whole = _run(config, [TEXT])
    assert (
        "".join(s.text for s in segments[at + 1 :]).strip()
        == "".join(s.text for s in whole[[s.kind for s in whole].index(SegmentKind.TABLE) + 1 :]).strip()
    )
