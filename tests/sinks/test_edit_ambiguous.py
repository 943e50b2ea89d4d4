"""Edit mode and Discord's ambiguous answers: a create without a message id is found, sent
again when proven absent, or kept as shown with the rest after it; never an assertion, never
a word lost (when stored) or shown twice. And what the result reports is what the channel holds.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

import attrs
import pytest
import reactivex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reactivex import operators as ops

from rxcord import ChatRequest, Message, OpenRouterAdapter, TransportConfig, stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.state import Delivery, SentMessage, StreamResult, StreamState
from rxcord.core.types import DeliveryMode, StreamStatus
from rxcord.operators.aio import drain
from rxcord.operators.clean import clean
from rxcord.operators.flush import flush
from rxcord.operators.markdown.first_cut import FirstCut
from rxcord.sinks.deliver import deliver
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.edit_in_place import EditInPlaceDelivery, edit_flush
from rxcord.sinks.memory import MemorySink
from rxcord.sinks.remainder import remainder
from rxcord.sinks.rest import RestSink
from rxcord.sinks.split_message import split_message
from rxcord.testing import ReplayServer
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from rxcord.testing.replay import Chunking

BOT = StreamContext(channel_id="7", reply_to_message_id="5")
HOOK = StreamContext(channel_id="7", webhook_id="900", webhook_token="hook-token")
EDIT = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
_FENCE_TOKEN = re.compile(r"^(`{3,}|~{3,})")
_FENCE_LINE = re.compile(r"^([ \t]*(?:`{3,}|~{3,}))[^\n]*$", re.MULTILINE)


def _states(deltas: list[str], end: StreamStatus = StreamStatus.COMPLETED) -> list[StreamState]:
    states = [StreamState(index=i + 1, delta=d) for i, d in enumerate(deltas)]
    return [*states, StreamState(index=len(deltas) + 1, status=end)]


async def _edit(
    sink: MemorySink,
    deltas: list[str],
    context: StreamContext = BOT,
    config: StreamConfig = EDIT,
    end: StreamStatus = StreamStatus.COMPLETED,
) -> list[Delivery]:
    delivery = EditInPlaceDelivery(sink=sink, context=context, config=config)
    # Each state on its own loop turn, as chunks arrive from a socket.
    source = reactivex.from_iterable(_states(deltas, end)).pipe(
        ops.concat_map(lambda s: reactivex.timer(0.0).pipe(ops.map(lambda _: s)))
    )
    chain = source.pipe(edit_flush(config), clean(config), deliver(delivery.send, delivery.merge))
    return await drain(chain)


async def _aggregated(deltas: list[str], context: StreamContext = BOT) -> list[str]:
    config = attrs.evolve(EDIT, delivery=DeliveryMode.AGGREGATED)
    sink = MemorySink()
    delivery = DiscordDelivery(sink=sink, context=context, config=config)
    await drain(
        reactivex.from_iterable(_states(deltas)).pipe(flush(config), clean(config), deliver(delivery.send))
    )
    return sink.contents


def _words(contents: list[str]) -> list[str]:
    """The words of messages, without fence lines (the splitter repeats them at cuts)."""
    return [word for content in contents for word in content.split() if not _FENCE_TOKEN.match(word)]


def _chars(contents: list[str]) -> str:
    """The text of messages without whitespace and fence characters (the splitter closes and
    reopens blocks at cuts): a kept preview may end mid-word, or inside a fence line, so what is
    compared is that no other character is lost or shown twice. A fence line's info string goes
    too: a block reopened in the next message repeats its opener (```` ```py ````), so a block
    whose opener reads ```` ```- item ```` shows ``- item`` once per message it spans."""
    return "".join(
        "".join(_FENCE_LINE.sub(r"\1", content).split()).replace("`", "").replace("~", "")
        for content in contents
    )


def _first_message(deltas: list[str]) -> str:
    """What edit mode's first create holds: the text up to the first boundary of the first words."""
    first = FirstCut(EDIT.message_limit)
    for count, delta in enumerate(deltas, 1):
        end = first.feed(delta)
        if end is not None:
            return "".join(deltas[:count])[:end].strip()
    return "".join(deltas)


def _paragraphs(n: int, words: int = 60) -> list[str]:
    text = "\n\n".join(" ".join(f"p{i:02d}w{j:03d}" for j in range(words)) for i in range(n))
    return [text[i : i + 40] for i in range(0, len(text), 40)]


async def test_bot_message_without_id_is_found_by_its_nonce() -> None:
    """A 2xx without a usable body on the first create: the nonce sent again returns the message."""
    deltas = _paragraphs(8)
    sink = MemorySink(ambiguous={1: "stored"}, enforce_nonces=True)
    deliveries = await _edit(sink, deltas)
    expected = await _aggregated(deltas)
    assert sink.contents == expected
    assert sink.reads == 0  # the nonce was enough, the channel was not read
    assert len(sink.edits) > 0  # and the first message was edited afterwards
    final = [d for d in deliveries if d.messages][-1]
    assert [m.message_id for m in final.messages] == [m.message_id for m in sink.results]


@pytest.mark.parametrize("outcome", ["stored", "lost"])
async def test_webhook_message_without_id_is_found_or_sent_again(outcome: Literal["stored", "lost"]) -> None:
    """A webhook's ambiguous create: read back and found, or proven absent and sent again."""
    deltas = _paragraphs(8)
    sink = MemorySink(ambiguous={1: outcome})
    await _edit(sink, deltas, HOOK)
    assert sink.contents == await _aggregated(deltas, HOOK)
    assert sink.reads == 1


@pytest.mark.parametrize("outcome", ["stored", "lost"])
async def test_unreadable_webhook_keeps_the_message_and_posts_the_rest(
    outcome: Literal["stored", "lost"],
) -> None:
    """A webhook-only sink cannot look: the message stays as shown, the rest goes after it."""
    deltas = _paragraphs(8)
    sink = MemorySink(ambiguous={1: outcome}, readable=False)
    deliveries = await _edit(sink, deltas, HOOK)
    expected = await _aggregated(deltas, HOOK)
    first = _first_message(deltas)
    channel = sink.contents
    if outcome == "stored":
        assert channel[0] == first  # the first preview, never edited again
        assert _words(channel) == _words(expected)  # nothing lost, nothing twice
    else:
        assert _words([first, *channel]) == _words(expected)  # only what the lost create held
    final = [d for d in deliveries if d.messages][-1]
    assert len(final.messages) == len(channel) + (0 if outcome == "stored" else 1)
    assert final.messages[0].message_id is None


_PARTS = st.sampled_from(
    [
        *("Hello", "world.", "\n\n", "\n", " ", "```py\n", "```\n", "x = 1\n", "`code`", "> quote\n"),
        *("- item\n", "a" * 300, "line of code\n" * 40, "é", "🙂", ">>> all quoted\n"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_PARTS, min_size=1, max_size=60), k=st.integers(0, 8))
@example(parts=["Hello", "\n", ">>> all quoted\n", *[" ", "a" * 300] * 10], k=1)  # the quote goes on
@example(parts=["```py\n", "line of code\n" * 40, "line of code\n" * 200], k=1)  # the block goes on
def test_remainder_continues_the_split_where_the_shown_messages_end(parts: list[str], k: int) -> None:
    """Messages shown plus the split of the remainder are the split of the text, exactly:
    fences closed and reopened, ``>>> `` repeated, no character lost or shown twice."""
    text = "".join(parts)
    pieces = split_message(text)
    shown = pieces[:k]
    assert [*shown, *split_message(remainder(text, shown))] == pieces


def test_remainder_of_a_long_text_with_every_piece_shown() -> None:
    """A long text cut into many pieces: all shown leaves nothing, one shown leaves the rest."""
    text = "word " * 200_000
    pieces = split_message(text)
    assert remainder(text, pieces) == ""
    assert remainder(text, pieces[:1]).startswith("word")


_WORDS = st.sampled_from(
    [
        "Hello",
        "world.",
        "\n\n",
        "\n",
        "```\nx = 1\n```",
        "```\n" + "line of code\n" * 40,
        "**bold**",
        "- item\n",
        "a" * 300,
        " ",
        "é",
    ]
)


_CODE = "```\n" + "line of code\n" * 40


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(_WORDS, min_size=1, max_size=30), cut=st.integers(1, 60), at=st.integers(1, 3))
# A block opened by "```- item" (its info string) spans the kept preview and the next message.
@example(
    words=["Hello", _CODE, _CODE, "```\nx = 1\n```", "- item\n", "a" * 300, "a" * 300, _CODE], cut=60, at=2
)
def test_kept_messages_never_lose_or_repeat_a_word(words: list[str], cut: int, at: int) -> None:
    """Whichever create is ambiguous and unreadable, the channel holds the aggregated words once."""
    text = "".join(words)
    deltas = [text[i : i + cut] for i in range(0, len(text), cut)]
    sink = MemorySink(ambiguous={at: "stored"}, readable=False)
    asyncio.run(_edit(sink, deltas, HOOK))
    expected = asyncio.run(_aggregated(deltas, HOOK))
    _same_chars(_chars(sink.contents), _chars(expected))
    assert all(0 < len(content) <= 2000 for content in sink.contents)


def _same_chars(got: str, want: str) -> None:
    """Equal, or a failure naming where they part (pytest's diff of long texts is quadratic)."""
    if got == want:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want))
    )
    pytest.fail(f"differ at {at}: got {got[at - 20 : at + 40]!r}, want {want[at - 20 : at + 40]!r}")


async def test_a_failed_lookup_keeps_the_message() -> None:
    """A listing that fails (not a stop) is no answer: the message is kept, nothing raised."""

    class Failing(MemorySink):
        async def recent_messages(self, context: StreamContext, limit: int) -> None:
            self.reads += 1
            raise DiscordError(status=500, message="HTTP 500")

    deltas = _paragraphs(4)
    sink = Failing(ambiguous={1: "stored"})
    await _edit(sink, deltas, HOOK)
    assert sink.reads == 1
    assert _words(sink.contents) == _words(await _aggregated(deltas, HOOK))


class Moderated(MemorySink):
    """A MemorySink in which someone deletes the target of the Nth edit just before it arrives."""

    def __init__(self, delete_on: int) -> None:
        super().__init__()
        self.delete_on = delete_on
        self.seen = 0
        self.removed: list[str] = []

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        self.seen += 1
        if self.seen == self.delete_on:
            index = next(i for i, m in enumerate(self.results) if m.message_id == message_id)
            del self.results[index], self.sent[index]
            self.removed.append(message_id)
        return await super().edit_message(context, message_id, payload)


@pytest.mark.parametrize("delete_on", [1, 4, 9])
async def test_a_message_deleted_meanwhile_is_sent_again_in_order(delete_on: int) -> None:
    """An edit answered 404 / 10008: the text is sent again, after its predecessors, in order."""
    deltas = _paragraphs(12)
    sink = Moderated(delete_on)
    deliveries = await _edit(sink, deltas)
    assert sink.removed  # the deletion did happen
    assert sink.contents == await _aggregated(deltas)
    final = [d for d in deliveries if d.messages][-1]
    assert [m.message_id for m in final.messages] == [m.message_id for m in sink.results]


async def test_an_interrupt_reports_the_previews_as_shown() -> None:
    """A follow-up interrupt leaves the previews: the result lists them (the channel holds them)."""
    sink = MemorySink()
    deliveries = await _edit(sink, _paragraphs(6), end=StreamStatus.FOLLOW_UP_INTERRUPT)
    reported = [m for d in deliveries for m in d.messages]
    assert sink.results and reported == sink.results


# -- the per-turn message cap, through the whole chain, in the three modes ---------------------


def _sse(text: str) -> bytes:
    events = [
        "data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text[i : i + 40]}}]})
        for i in range(0, len(text), 40)
    ]
    events.append('data: {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}')
    return ("\n\n".join(events) + "\n\ndata: [DONE]\n\n").encode()


LONG = "\n\n".join(" ".join(f"p{i:02d}w{j:03d}" for j in range(140)) for i in range(8))
"""Eight paragraphs of 1,100 characters: eight messages, far over a cap of 3."""


async def _capped(sink: MemorySink | RestSink, mode: DeliveryMode, channel: str) -> StreamResult:
    config = StreamConfig(delivery=mode, max_messages=3, typing_interval=0, live_idle_flush=0.01)
    async with ReplayServer(body=_sse(LONG), chunking=Chunking(seed=3)) as server:
        return await stream_to_discord(
            OpenRouterAdapter(),
            ChatRequest(model="m", messages=(Message.user("hi"),)),
            sink=sink,
            base_url=server.base_url,
            api_key="k",
            context=StreamContext(channel_id=channel),
            config=config,
            transport=TransportConfig(allow_private_network=True),
        )


@pytest.mark.parametrize("mode", list(DeliveryMode))
async def test_message_cap_result_matches_the_memory_channel(mode: DeliveryMode) -> None:
    """At ``max_messages`` the result lists the messages the channel holds, and their text."""
    sink = MemorySink()
    result = await _capped(sink, mode, "7")
    assert result.status is StreamStatus.SEND_MESSAGE_LIMIT
    assert len(sink.results) == 3
    assert [m.message_id for m in result.messages] == [m.message_id for m in sink.results]
    assert result.accumulated_text.split() == " ".join(sink.contents).split()


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    emu = DiscordEmulator(EmulatorConfig(channel_limit=50, channel_window=1.0))
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


@pytest.mark.parametrize("mode", list(DeliveryMode))
async def test_message_cap_result_matches_the_emulator_channel(
    emulator: DiscordEmulator, mode: DeliveryMode
) -> None:
    """The same against the emulator over REST: the ids and contents Discord holds."""
    channel = {"aggregated": "801", "live": "802", "edit": "803"}[mode.value]
    async with RestSink(emulator.base_url, emulator.config.token) as sink:
        result = await _capped(sink, mode, channel)
    stored = emulator.messages(channel)
    assert result.status is StreamStatus.SEND_MESSAGE_LIMIT
    assert len(stored) == 3
    assert [m.message_id for m in result.messages] == [str(m["id"]) for m in stored]
    assert [m.payload["content"] for m in result.messages] == [m["content"] for m in stored]
    assert result.accumulated_text.split() == " ".join(m["content"] for m in stored).split()


def test_the_comparisons_can_fail() -> None:
    """Guards the comparisons themselves: a lost and a repeated word or character are both seen."""
    assert _words(["a b", "c"]) != _words(["a", "c"])
    assert _words(["a b", "b c"]) != _words(["a b", "c"])
    assert _words(["```py\nx\n```"]) == ["x"]
    assert _chars(["He", "llo"]) == _chars(["Hello"]) != _chars(["He", "ello"])
