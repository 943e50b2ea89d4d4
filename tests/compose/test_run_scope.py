"""``run_stream``'s scope: the stream's log context and its locale, bound inside and restored after.

Both are entered by hand and left in a ``finally`` (no ``with`` holding bound ``__exit__``
methods for the stream's life): the binding must still reach every log line and send of the
stream, and nothing of it may outlive the stream, whether it ends normally or fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pytest
from loguru import logger

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamContext
from rxcord.core.locale import LocaleText, current_text, use_locale_text
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import SentMessage
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

LOCAL = TransportConfig(allow_private_network=True)
REQUEST = ChatRequest(model="m", messages=(Message.user("hi"),))


def _body(*texts: str) -> bytes:
    events = [{"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]} for text in texts]
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


@attrs.define
class _Seeing(MemorySink):
    """Records the locale bound while each message is created."""

    locales: list[str] = attrs.field(factory=list, init=False)

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        self.locales.append(current_text().locale)
        return await super().create_message(context, payload)


@pytest.fixture
def records() -> Iterator[list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    logger.enable("rxcord")  # the library's lines are off by default
    handler = logger.add(lambda message: seen.append(dict(message.record["extra"])), level="DEBUG")
    try:
        yield seen
    finally:
        logger.remove(handler)
        logger.disable("rxcord")


async def _run(sink: MemorySink, body: bytes, *, locale: str | None, status: int = 200) -> Any:
    async with ReplayServer(body=body, status=status) as server:
        return await stream_to_discord(
            OpenAIAdapter(),
            REQUEST,
            sink=sink,
            base_url=server.base_url,
            api_key="sk-test",
            transport=LOCAL,
            context=StreamContext(channel_id="c1", locale=locale),
        )


async def test_the_locale_and_the_log_context_hold_inside_and_end_with_the_stream(
    records: list[dict[str, Any]],
) -> None:
    sink = _Seeing()
    before = current_text().locale
    await _run(sink, _body("Hello there."), locale="de")
    assert sink.locales and set(sink.locales) == {"de"}
    assert current_text().locale == before  # restored
    streamed = [extra for extra in records if "stream_id" in extra]
    assert streamed and all(extra["channel_id"] == "c1" for extra in streamed)
    assert len({extra["stream_id"] for extra in streamed}) == 1
    logger.info("after the stream")
    assert "stream_id" not in records[-1]


async def test_no_locale_keeps_the_text_already_bound() -> None:
    sink = _Seeing()
    with use_locale_text(LocaleText(locale="fr")):
        await _run(sink, _body("Bonjour."), locale=None)
        assert current_text().locale == "fr"
    assert sink.locales and set(sink.locales) == {"fr"}


async def test_a_failed_stream_leaves_no_binding(records: list[dict[str, Any]]) -> None:
    """An HTTP error (its notice posted in the stream's locale): both bindings end all the same."""
    sink = _Seeing()
    before = current_text().locale
    error = json.dumps({"error": {"message": "bad request", "code": 400}}).encode()
    async with ReplayServer(body=error, status=400, content_type="application/json") as server:
        result = await stream_to_discord(
            OpenAIAdapter(),
            REQUEST,
            sink=sink,
            base_url=server.base_url,
            api_key="sk-test",
            transport=LOCAL,
            context=StreamContext(channel_id="c2", locale="de"),
        )
    assert result.error is not None
    assert set(sink.locales) <= {"de"}
    assert current_text().locale == before
    logger.info("after the failed stream")
    assert "stream_id" not in records[-1]
