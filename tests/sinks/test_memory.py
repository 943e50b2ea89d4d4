"""MemorySink records sends and typing, hands out increasing ids and raises injected failures."""

from __future__ import annotations

import pytest

from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError
from rxcord.core.types import StopKind
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.memory import MemorySink


async def test_records_payloads_and_returns_increasing_ids() -> None:
    """Each send is recorded with its context and gets the next id."""
    sink = MemorySink()
    ctx = StreamContext(channel_id="7")
    first = await sink.create_message(ctx, {"content": "a"})
    second = await sink.create_message(ctx, {"content": "b", "nonce": "n"})
    assert (first.message_id, second.message_id) == ("1", "2")
    assert first.channel_id == "7"
    assert sink.sent == [(ctx, {"content": "a"}), (ctx, {"content": "b", "nonce": "n"})]
    assert sink.contents == ["a", "b"]
    assert sink.results == [first, second]


async def test_payload_is_copied() -> None:
    """Mutating the caller's dict after sending does not change the record."""
    sink = MemorySink()
    payload = {"content": "a"}
    sent = await sink.create_message(StreamContext(), payload)
    payload["content"] = "changed"
    assert sent.payload == {"content": "a"} and sink.contents == ["a"]


async def test_webhook_thread_is_the_channel() -> None:
    """With a webhook and a thread, the message lands in the thread."""
    sink = MemorySink()
    ctx = StreamContext(channel_id="7", webhook_id="9", webhook_token="t", thread_id="8")
    sent = await sink.create_message(ctx, {"content": "a"})
    assert sent.channel_id == "8" and [m.channel_id for m in sink.results] == ["8"]


async def test_injected_failure_on_the_nth_send() -> None:
    """The chosen exception is raised on the Nth call only; other calls succeed."""
    stop = DiscordStopError(status=403, code=50001, stop_kind=StopKind.MISSING_ACCESS)
    sink = MemorySink(failures={2: stop})
    ctx = StreamContext()
    await sink.create_message(ctx, {"content": "a"})
    with pytest.raises(DiscordStopError) as caught:
        await sink.create_message(ctx, {"content": "b"})
    assert caught.value is stop
    third = await sink.create_message(ctx, {"content": "c"})
    assert sink.contents == ["a", "c"] and third.message_id == "2"
    assert sink.send_calls == 3


async def test_typing_is_recorded_and_can_fail() -> None:
    """Typing calls are recorded; an injected typing failure is raised once."""
    sink = MemorySink(typing_failures={1: RuntimeError("boom")})
    ctx = StreamContext(channel_id="5")
    with pytest.raises(RuntimeError):
        await sink.trigger_typing(ctx)
    await sink.trigger_typing(ctx)
    assert sink.typing == [ctx] and sink.typing_calls == 2


async def test_validation_mirrors_discord() -> None:
    """With ``validate=True`` an over-long or empty message raises what RestSink would."""
    sink = MemorySink(validate=True)
    with pytest.raises(DiscordError) as caught:
        await sink.create_message(StreamContext(), {"content": "x" * 2001})
    assert (caught.value.status, caught.value.code) == (400, 50035)
    assert "In content: Must be 2000 or fewer in length." in caught.value.message
    with pytest.raises(DiscordError) as empty:
        await sink.create_message(StreamContext(), {"content": "  "})
    assert empty.value.code == 50006
    assert sink.sent == []


def test_is_a_discord_sink() -> None:
    """MemorySink satisfies the DiscordSink protocol (checked by mypy through this assignment)."""
    sink: DiscordSink = MemorySink()
    assert callable(sink.create_message) and callable(sink.trigger_typing)


async def test_edit_and_delete() -> None:
    """Edits update the recorded payload; deletes remove it and never free its id; unknown ids are 404."""
    from rxcord.sinks.base import EditableSink

    sink: EditableSink = MemorySink()
    ctx = StreamContext(channel_id="7")
    first = await sink.create_message(ctx, {"content": "draft", "allowed_mentions": {"parse": []}})
    assert first.message_id is not None
    edited = await sink.edit_message(ctx, first.message_id, {"content": "final"})
    assert edited.payload == {"content": "final", "allowed_mentions": {"parse": []}}
    assert isinstance(sink, MemorySink) and sink.contents == ["final"]
    assert sink.edits == [(first.message_id, {"content": "final"})]
    await sink.delete_message(ctx, first.message_id)
    await sink.delete_message(ctx, first.message_id)  # already gone: no error
    assert sink.contents == [] and sink.deleted == [first.message_id]
    later = await sink.create_message(ctx, {"content": "next"})
    assert later.message_id == "2"
    with pytest.raises(DiscordError) as missing:
        await sink.edit_message(ctx, first.message_id, {"content": "x"})
    assert (missing.value.status, missing.value.code) == (404, 10008)


async def test_recorded_views_are_attributes_like_edits() -> None:
    """``payloads`` and ``contents`` are read like ``sent`` and ``edits`` (one shape), edits applied."""
    sink = MemorySink()
    sent = await sink.create_message(StreamContext(), {"content": "a"})
    await sink.edit_message(StreamContext(), str(sent.message_id), {"content": "b"})
    assert sink.payloads == [{"content": "b"}] and sink.contents == ["b"]
    assert sink.edits == [(str(sent.message_id), {"content": "b"})]
    assert not callable(sink.payloads) and not callable(sink.contents)
