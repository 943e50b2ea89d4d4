"""Edit-in-place delivery: every edit is a valid Discord message; the final text is aggregated's."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

import attrs
import pytest
import reactivex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rxcord import (
    ChatRequest,
    CustomAdapter,
    Message,
    OpenRouterAdapter,
    TransportConfig,
    stream_to_discord,
)
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Delivery, SentMessage, StreamState
from rxcord.core.types import DeliveryMode, StreamStatus
from rxcord.operators.aio import drain
from rxcord.operators.clean import clean
from rxcord.operators.flush import flush
from rxcord.operators.typing_heartbeat import typing_heartbeat
from rxcord.sinks.deliver import deliver
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.edit_in_place import EditInPlaceDelivery, edit_flush
from rxcord.sinks.memory import MemorySink
from rxcord.testing import Chunking, ReplayServer

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


class EditRecorder(MemorySink):
    """A MemorySink that also edits and deletes, keeping every content Discord ever showed."""

    def __init__(self) -> None:
        super().__init__()
        self.current: dict[str, str] = {}
        self.order: list[str] = []
        self.shown: list[str] = []
        """Every content a message had, in the order Discord showed them (creates and edits)."""
        self.edit_calls = 0
        self.deleted: list[str] = []

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        sent = await super().create_message(context, payload)
        assert sent.message_id is not None
        self.current[sent.message_id] = str(payload.get("content") or "")
        self.order.append(sent.message_id)
        self.shown.append(self.current[sent.message_id])
        return sent

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        assert message_id in self.current, "edits a message it never sent"
        self.edit_calls += 1
        self.current[message_id] = str(payload.get("content") or "")
        self.shown.append(self.current[message_id])
        return SentMessage(payload=dict(payload), message_id=message_id, channel_id=context.channel_id)

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        del self.current[message_id]
        self.order.remove(message_id)
        self.deleted.append(message_id)

    def visible(self) -> list[str]:
        return [self.current[m] for m in self.order]


def _states(deltas: list[str]) -> list[StreamState]:
    states = [StreamState(index=i + 1, delta=d) for i, d in enumerate(deltas)]
    return [*states, StreamState(index=len(deltas) + 1, status=StreamStatus.COMPLETED)]


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


async def _edit_run(deltas: list[str], config: StreamConfig) -> tuple[EditRecorder, list[Delivery]]:
    sink = EditRecorder()
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(channel_id="7"), config=config)
    # Each state on its own loop turn, as chunks arrive from a socket.
    source = reactivex.from_iterable(_states(deltas)).pipe(
        reactivex.operators.concat_map(
            lambda s: reactivex.timer(0.0).pipe(reactivex.operators.map(lambda _: s))
        )
    )
    chain = source.pipe(
        edit_flush(config),
        clean(config),
        typing_heartbeat(config.typing_interval),
        deliver(delivery.send, delivery.merge),
    )
    return sink, await drain(chain)


async def _aggregated(deltas: list[str], config: StreamConfig) -> list[str]:
    agg = attrs.evolve(config, delivery=DeliveryMode.AGGREGATED)
    sink = MemorySink()
    delivery = DiscordDelivery(sink=sink, context=StreamContext(channel_id="7"), config=agg)
    chain = reactivex.from_iterable(_states(deltas)).pipe(flush(agg), clean(agg), deliver(delivery.send))
    await drain(chain)
    return sink.contents


def _balanced(text: str) -> bool:
    """Whether every fenced block is closed (CommonMark: a closer is the marker alone on its line)."""
    opened: tuple[str, int] | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if match is None:
            continue
        run, rest = match.group(2), match.group(3)
        if opened is None:
            if not (run[0] == "`" and "`" in rest):
                opened = (run[0], len(run))
        elif run[0] == opened[0] and len(run) >= opened[1] and not rest.strip():
            opened = None
    return opened is None


_WORDS = st.sampled_from(
    [
        "Hello",
        "world.",
        "\n\n",
        "\n",
        "```py\nx = 1\n```",
        "`code`",
        "<think>secret plan</think>",
        "**bold**",
        "- item\n",
        "a" * 300,
        "```\n" + "line of code\n" * 40 + "```\n",
        " ",
        "Assistant: ",
        "é",
        "🙂",
    ]
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(_WORDS, min_size=1, max_size=40), cuts=st.lists(st.integers(0, 10_000), max_size=30))
@example(words=["Assistant: "], cuts=[1])  # a preview "A" the final text cleans away
def test_every_edit_is_valid_and_the_final_text_is_aggregated(words: list[str], cuts: list[int]) -> None:
    text = "".join(words)
    deltas = _cut(text, cuts)
    config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
    sink, _ = asyncio.run(_edit_run(deltas, config))
    expected = asyncio.run(_aggregated(deltas, config))
    assert sink.visible() == expected
    for content in sink.shown:
        assert 0 < len(content) <= 2000
        assert _balanced(content), content
        if "secret plan" in content:  # only where the final text shows it too (a tag inside code)
            assert any("secret plan" in message for message in expected)


def test_a_long_answer_grows_into_new_messages_with_edits_between() -> None:
    paragraphs = [f"Paragraph {i}: " + "word " * 80 + "\n\n" for i in range(12)]  # ~5,000 chars
    config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
    sink, deliveries = asyncio.run(_edit_run(paragraphs, config))
    expected = asyncio.run(_aggregated(paragraphs, config))
    assert sink.visible() == expected
    assert len(expected) >= 3
    assert sink.edit_calls >= len(expected)  # the messages were edited as they grew
    assert len(sink.shown) > len(expected)
    final = [d for d in deliveries if d.segment is not None and d.messages]
    assert [m.payload["content"] for m in final[-1].messages] == expected


def test_previews_queued_behind_a_slow_edit_are_merged() -> None:
    class SlowSink(EditRecorder):
        async def edit_message(
            self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
        ) -> SentMessage:
            await asyncio.sleep(0.05)  # a rate-limit wait on the edit route
            return await super().edit_message(context, message_id, payload)

    async def run() -> tuple[SlowSink, int]:
        config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
        sink = SlowSink()
        delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(), config=config)
        deltas = [f"word{i} " for i in range(60)]
        subject: reactivex.subject.Subject[StreamState] = reactivex.subject.Subject()
        done = asyncio.ensure_future(
            drain(subject.pipe(edit_flush(config), clean(config), deliver(delivery.send, delivery.merge)))
        )
        while not subject.observers:
            await asyncio.sleep(0)
        for state in _states(deltas)[:-1]:
            subject.on_next(state)
            await asyncio.sleep(0.002)
        subject.on_next(_states(deltas)[-1])
        subject.on_completed()
        await done
        return sink, len(deltas)

    sink, chunks = asyncio.run(run())
    assert sink.visible() == ["".join(f"word{i} " for i in range(60)).strip()]
    assert 1 <= sink.edit_calls < chunks // 3  # far fewer edits than chunks


def test_in_band_reasoning_never_reaches_an_edit() -> None:
    text = "Let me answer.\n\n<think>secret plan, step by step</think>The answer is **42**.\n\nDone."
    config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
    sink, _ = asyncio.run(_edit_run(list(text), config))
    assert sink.visible() == asyncio.run(_aggregated(list(text), config))
    assert len(sink.shown) > 2
    assert all("secret" not in c and "think" not in c for c in sink.shown)


@pytest.mark.parametrize(
    ("provider", "capture"),
    [("openrouter", "openrouter_reasoning_code.sse"), ("custom", "openai_think_leak.sse")],
)
async def test_whole_chain_in_edit_mode_ends_on_the_aggregated_messages(provider: str, capture: str) -> None:
    body = (resources.files("rxcord.data") / capture).read_bytes()
    adapter = {"openrouter": OpenRouterAdapter, "custom": CustomAdapter}[provider]()
    request = ChatRequest(model="m", messages=(Message.user("hi"),))
    transport = TransportConfig(allow_private_network=True)
    outcomes = {}
    for mode in (DeliveryMode.EDIT, DeliveryMode.AGGREGATED):
        sink = EditRecorder()
        async with ReplayServer(body=body, chunking=Chunking(seed=3)) as server:
            result = await stream_to_discord(
                adapter,
                request,
                sink=sink,
                base_url=server.base_url,
                api_key="k",
                context=StreamContext(channel_id="9"),
                config=StreamConfig(delivery=mode, typing_interval=0),
                transport=transport,
            )
        outcomes[mode] = (sink, result)
    edit_sink, edit_result = outcomes[DeliveryMode.EDIT]
    agg_sink, agg_result = outcomes[DeliveryMode.AGGREGATED]
    assert edit_result.status is agg_result.status is StreamStatus.COMPLETED
    assert edit_sink.visible() == agg_sink.visible()
    assert edit_result.accumulated_text == agg_result.accumulated_text
    assert [m.payload["content"] for m in edit_result.messages] == agg_sink.visible()
    assert edit_sink.edit_calls > 0
    reasoning = (edit_result.reasoning or "").strip()
    for content in edit_sink.shown:
        assert len(content) <= 2000 and _balanced(content)
        if reasoning:
            assert reasoning[:40] not in content
