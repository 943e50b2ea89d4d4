"""``rxcord.discord.visible`` with a recording sink: which lines, where they go, what the result says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from rxcord import StreamContext, StreamStatus
from rxcord.compose.turn import TurnResult
from rxcord.core.state import SentMessage, StreamResult
from rxcord.discord import Markers, end_lines, show_end, writing_reaction
from rxcord.io import register_locale_dir

CONTEXT = StreamContext(channel_id="10", reply_to_message_id="5")


@attrs.define
class Sink:
    """Records edits and creates; ``fail`` makes every call raise."""

    edits: list[tuple[str, Mapping[str, Any]]] = attrs.field(factory=list)
    created: list[Mapping[str, Any]] = attrs.field(factory=list)
    fail: bool = False

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        if self.fail:
            raise ConnectionError("down")
        self.created.append(payload)
        return SentMessage(
            payload=payload, message_id=f"new{len(self.created)}", channel_id=context.channel_id
        )

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        if self.fail:
            raise ConnectionError("down")
        self.edits.append((message_id, payload))
        return SentMessage(payload=payload, message_id=message_id, channel_id=context.channel_id)

    async def trigger_typing(self, context: StreamContext) -> None:
        return None

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        return None


def _turn(status: StreamStatus, *contents: str) -> TurnResult:
    messages = tuple(
        SentMessage(
            payload={"content": c, "allowed_mentions": {"parse": []}}, message_id=f"m{i}", channel_id="10"
        )
        for i, c in enumerate(contents)
    )
    result = StreamResult(status=status, accumulated_text="\n".join(contents), messages=messages)
    return TurnResult(result=result, results=(result,), attempts=(), usage=None)


def test_the_lines_are_the_notes_then_how_it_ended() -> None:
    notes = ["2 image attachment(s) were left out (this model reads no images).", "x" * 500]
    lines = end_lines(StreamStatus.KILLED, notes, Markers()).split("\n")
    assert lines[0] == "-# ⚠ 2 image attachment(s) were left out (this model reads no images)."
    assert lines[1].startswith("-# ⚠ xxx") and lines[1].endswith("…") and len(lines[1]) == len("-# ⚠ ") + 300
    assert lines[2] == "-# ✂ aborted"
    assert end_lines(StreamStatus.STOPPED_BY_USER, (), Markers()) == "-# ⏹ stopped"
    assert end_lines(StreamStatus.FOLLOW_UP_INTERRUPT, (), Markers()) == "-# ↩ interrupted"
    assert end_lines(StreamStatus.COMPLETED, (), Markers()) == ""
    assert end_lines(StreamStatus.ERROR, (), Markers()) == ""  # a failure has its own notice
    assert end_lines(StreamStatus.COMPLETED, notes[:1], Markers(notes=False)) == ""
    assert end_lines(StreamStatus.KILLED, (), Markers(killed="")) == ""
    assert end_lines(StreamStatus.KILLED, (), Markers(killed="(cut)")) == "-# (cut)"
    assert end_lines(StreamStatus.COMPLETED, ["a\nfile.txt"], Markers()) == "-# ⚠ a file.txt"  # one line


def test_the_default_text_comes_from_the_locale_catalog(tmp_path: Path) -> None:
    (tmp_path / "de.json").write_text('{"answer.stopped": "angehalten"}', encoding="utf-8")
    dispose = register_locale_dir(tmp_path)
    try:
        assert end_lines(StreamStatus.STOPPED_BY_USER, (), Markers(), "de") == "-# angehalten"
        assert end_lines(StreamStatus.STOPPED_BY_USER, (), Markers(stopped="(s)"), "de") == "-# (s)"
        assert end_lines(StreamStatus.STOPPED_BY_USER, (), Markers(), "fr") == "-# ⏹ stopped"
    finally:
        dispose()


async def test_the_lines_go_into_the_last_message_and_the_result_says_so() -> None:
    sink = Sink()
    turn = await show_end(sink, CONTEXT, _turn(StreamStatus.KILLED, "part one", "part two"), "-# ✂ aborted")
    assert sink.edits == [("m1", {"content": "part two\n-# ✂ aborted", "allowed_mentions": {"parse": []}})]
    assert not sink.created
    assert [m.payload["content"] for m in turn.result.messages] == ["part one", "part two\n-# ✂ aborted"]
    assert turn.results == (turn.result,)
    assert turn.result.accumulated_text == "part one\npart two\n-# ✂ aborted"


async def test_a_full_last_message_gets_one_more_message() -> None:
    sink = Sink()
    full = "x" * 1990
    turn = await show_end(sink, CONTEXT, _turn(StreamStatus.STOPPED_BY_USER, full), "-# ⏹ stopped")
    assert not sink.edits
    assert sink.created == [{"content": "-# ⏹ stopped", "allowed_mentions": {"parse": []}}]
    assert [m.message_id for m in turn.result.messages] == ["m0", "new1"]


async def test_nothing_left_gets_nothing_and_a_failure_keeps_the_turn() -> None:
    sink = Sink()
    empty = _turn(StreamStatus.KILLED)
    assert await show_end(sink, CONTEXT, empty, "-# ✂ aborted") is empty
    assert not sink.edits and not sink.created
    turn = _turn(StreamStatus.KILLED, "half")
    assert await show_end(sink, CONTEXT, turn, "") is turn
    assert await show_end(Sink(fail=True), CONTEXT, turn, "-# ✂ aborted") is turn


@attrs.define
class Message:
    calls: list[tuple[str, str]] = attrs.field(factory=list)
    fail: bool = False

    async def add_reaction(self, emoji: str) -> None:
        self.calls.append(("add", emoji))
        if self.fail:
            raise ConnectionError("refused")

    async def remove_reaction(self, emoji: str, member: Any) -> None:
        self.calls.append(("remove", emoji))


async def test_the_writing_reaction_is_removed_however_the_block_ends() -> None:
    message = Message()
    with pytest.raises(RuntimeError):
        async with writing_reaction(message, "✍️", me=object()):
            assert message.calls == [("add", "✍️")]
            raise RuntimeError("the answer failed")
    assert message.calls == [("add", "✍️"), ("remove", "✍️")]
    refused = Message(fail=True)
    async with writing_reaction(refused, "✍️", me=object()):
        pass  # the block runs: a refused reaction is not fatal
    assert refused.calls == [("add", "✍️")]  # nothing to remove
    off = Message()
    async with writing_reaction(off, "", me=object()):
        pass
    assert off.calls == []
