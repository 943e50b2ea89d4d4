"""Tables in edit mode: the text before committed, the picture its own message, the text after edited.

Live and edit modes deliver tables the same; the messages Discord ends with are aggregated's,
whatever the chunking (the table complete in a preview, or only in the final text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import operators as ops

from rxcord.core.config import StreamConfig, StreamContext, TableStyle
from rxcord.core.state import SentMessage
from rxcord.core.types import DeliveryMode, SegmentKind, StopKind
from rxcord.operators.aio import drain
from rxcord.operators.clean import clean
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.tables import render_table
from rxcord.sinks.deliver import deliver
from rxcord.sinks.edit_in_place import EditInPlaceDelivery, Preview, edit_flush, preview_segments
from rxcord.sinks.memory import MemorySink
from tests.sinks.test_edit_in_place import _aggregated, _cut, _states
from tests.sinks.test_table_pictures import TEXT, WIDE

_EDIT = StreamConfig(delivery=DeliveryMode.EDIT)


class Journal(MemorySink):
    """A MemorySink that notes every create, edit and delete, in order, by message id."""

    def __init__(self) -> None:
        super().__init__()
        self.journal: list[tuple[str, str]] = []

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        sent = await super().create_message(context, payload)
        self.journal.append(("create", str(sent.message_id)))
        return sent

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        self.journal.append(("edit", message_id))
        return await super().edit_message(context, message_id, payload)

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        self.journal.append(("delete", message_id))
        await super().delete_message(context, message_id)


def _shown(sink: MemorySink) -> list[tuple[str, list[str]]]:
    return [
        (str(p.get("content") or ""), [a["filename"] for a in p.get("attachments") or ()])
        for p in sink.payloads
    ]


async def _run(deltas: list[str], config: StreamConfig = _EDIT) -> tuple[Journal, list[SentMessage]]:
    """``_edit_run``'s chain (each state on its own loop turn) into a ``Journal``."""
    sink = Journal()
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(channel_id="7"), config=config)
    source = reactivex.from_iterable(_states(deltas)).pipe(
        ops.concat_map(lambda s: reactivex.timer(0.0).pipe(ops.map(lambda _: s)))
    )
    chain = source.pipe(edit_flush(config), clean(config), deliver(delivery.send, delivery.merge))
    deliveries = await drain(chain)
    return sink, [m for d in deliveries for m in d.messages]


def _committed_never_touched(sink: Journal) -> None:
    """Once the picture is created, it and the messages before it are never edited or deleted."""
    picture = next(m.message_id for m in sink.results if m.payload.get("attachments"))
    at = sink.journal.index(("create", str(picture)))
    before = {mid for kind, mid in sink.journal[: at + 1] if kind == "create"}
    alive = {str(m.message_id) for m in sink.results}
    touched = {mid for kind, mid in sink.journal[at + 1 :] if kind != "create"}
    assert not touched & (before & alive)


EXPECTED = [("Here is the table:", []), ("", ["table.png"]), ("And after it.", [])]


@pytest.mark.parametrize("step", [1, 7, 40, len(TEXT)])
async def test_text_before_the_picture_then_text_after(step: int) -> None:
    """Chunked finely the table is posted by a preview; in one piece by the final text: the same messages."""
    deltas = [TEXT[i : i + step] for i in range(0, len(TEXT), step)]
    sink, reported = await _run(deltas)
    assert _shown(sink) == EXPECTED
    assert [p.get("attachments") for p in sink.payloads][1] == [
        {"id": 0, "filename": "table.png", "description": WIDE.strip("\n")}
    ]
    assert sum(1 for p in sink.sent if p[1].get("attachments")) == 1  # posted once
    assert [m.message_id for m in reported] == [m.message_id for m in sink.results]  # each reported once
    _committed_never_touched(sink)
    assert sink.contents == await _aggregated(deltas, _EDIT)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
async def test_any_chunking_ends_as_aggregated(cuts: list[int]) -> None:
    """Split invariance: wherever the text is cut, edit mode ends with aggregated's messages."""
    text = TEXT + "\n\nA second one:\n\n" + WIDE + "\nThe end."
    deltas = _cut(text, cuts)
    sink, reported = await _run(deltas)
    assert [attachments for _, attachments in _shown(sink)].count(["table.png"]) == 2
    assert sink.contents == await _aggregated(deltas, _EDIT)
    assert sum(1 for p in sink.sent if p[1].get("attachments")) == 2
    assert sorted(str(m.message_id) for m in reported) == sorted(str(m.message_id) for m in sink.results)


async def test_monospace_keeps_the_table_in_the_edited_text() -> None:
    """``tables = monospace``: one text edited in place, the table as its code block (as before)."""
    deltas = [TEXT[i : i + 5] for i in range(0, len(TEXT), 5)]
    sink, _ = await _run(deltas, attrs.evolve(_EDIT, tables=TableStyle.MONOSPACE))
    assert sink.contents == ["Here is the table:\n\n" + (render_table(WIDE) or "?") + "\nAnd after it."]
    assert not sink.files and sink.edits


async def test_a_table_only_in_the_final_text_replaces_the_preview_after_the_text_before() -> None:
    """The preview showed the text and the table's first rows as text; the final text posts the picture.

    The preview's message ends as the text before; the picture and the text after are new messages.
    """
    sink = Journal()
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(channel_id="7"), config=_EDIT)
    head = TEXT[: TEXT.index("| `%=`")]
    await delivery.show(preview_segments([head], _EDIT))
    assert sink.contents == [head.rstrip()] and not sink.files
    flusher = Flusher(_EDIT)
    flusher.push(TEXT)
    finals = [await delivery.final(segment) for segment in flusher.flush(final=True)]
    assert _shown(sink) == EXPECTED
    assert sink.journal == [("create", "1"), ("edit", "1"), ("create", "2"), ("create", "3")]
    assert [[m.message_id for m in d.messages] for d in finals] == [["1"], ["2"], ["3"]]
    assert delivery.finished


async def test_an_interrupt_after_the_picture_reports_every_message_shown() -> None:
    """The previews stay as shown (abandoned): the text before, the picture and the text after, once each."""
    sink = Journal()
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(channel_id="7"), config=_EDIT)
    await delivery.show(preview_segments([TEXT], _EDIT))
    assert _shown(sink) == EXPECTED
    [report] = await drain(delivery.send(Preview(kind=SegmentKind.PREVIEW, abandoned=True)))
    assert [m.message_id for m in report.messages] == ["1", "2", "3"] and report.partial
    assert report.segment is not None and report.segment.text.endswith("And after it.")


async def test_the_message_cap_stops_before_the_picture_and_reports_the_text() -> None:
    """``max_messages=1``: the text before is shown, the picture hits the cap (send_message_limit)."""
    sink = Journal()
    config = attrs.evolve(_EDIT, max_messages=1)
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(channel_id="7"), config=config)
    done = await delivery.show(preview_segments([TEXT], config))
    assert delivery.stopped is StopKind.SEND_MESSAGE_LIMIT
    assert sink.contents == ["Here is the table:"] and not sink.files
    assert [m.message_id for m in done.messages] == ["1"]
