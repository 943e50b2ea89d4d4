"""The stream path checks denials before generic handling, as the turn runner does (one rule).

``stream_to_discord`` alone: a failure a translator turns into a denial shows the denial's notice
(never the provider's prose); a request hook's refusal posts its notice; a denial that says
``defer_notice`` posts nothing (its retry owner will); without a translator nothing changes.
"""

from __future__ import annotations

import json
from typing import Any

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DenialCopy, ProviderRequestDeniedError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import StreamStatus
from rxcord.providers.errors import provider_limit
from rxcord.providers.hooks import (
    ProviderRequest,
    register_denial_translator,
    register_request_hook,
    with_usage_context,
)
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

LOCAL = TransportConfig(allow_private_network=True)
REQUEST = ChatRequest(model="openai/gpt-4o", messages=(Message.user("hi"),))
PROSE = "Insufficient credits. Add more using https://openrouter.ai/settings/credits"
LIMITED = json.dumps(
    {
        "error": {
            "code": 402,
            "message": PROSE,
            "metadata": {"limit_source": "openrouter_in_flight_budget", "minimum_balance": 0.5},
        }
    }
).encode()


def _copy(locale: str, fallback: bool) -> DenialCopy:
    return DenialCopy(title_key="allowance_spent", description="Your allowance is spent.")


async def _stream(body: bytes, status: int = 402, **kwargs: Any) -> tuple[Any, MemorySink, ReplayServer]:
    sink = MemorySink()
    async with ReplayServer(body=body, status=status, content_type="application/json") as server:
        result = await stream_to_discord(
            OpenRouterAdapter(),
            REQUEST,
            sink=sink,
            base_url=server.base_url,
            api_key="sk-or-v1-test-0000",
            transport=LOCAL,
            **kwargs,
        )
    return result, sink, server


async def test_a_translated_402_shows_the_denial_notice_not_the_provider_prose() -> None:
    """The translator reads the validated limit (``provider_limit``): the notice keeps its minimum."""
    owner = object()
    seen: list[Any] = []

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        limit = provider_limit(failure) if getattr(failure, "status", None) == 402 else None
        seen.append(limit)
        if limit is None or limit.minimum_balance is None:
            return None
        minimum = limit.minimum_balance
        return ProviderRequestDeniedError(
            context,
            renderer=lambda locale, fallback: DenialCopy(
                title_key="media_minimum",
                description=f"This model needs a balance of at least ${minimum:.2f}.",
            ),
        )

    dispose = register_denial_translator(translate)
    try:
        with with_usage_context(owner):
            result, sink, _ = await _stream(LIMITED)
    finally:
        dispose()
    assert result.status is StreamStatus.ERROR and result.error is not None
    assert result.error.code == "openrouter_in_flight_budget"
    [payload] = sink.payloads
    embed = payload["embeds"][0]
    assert (
        embed["title"] == "media_minimum"
        and embed["description"] == "This model needs a balance of at least $0.50."
    )
    assert "Insufficient credits" not in json.dumps(payload)
    assert len(result.messages) == 1  # the notice is one of the stream's messages
    assert seen and seen[0] is not None and seen[0].limit_source == "openrouter_in_flight_budget"


async def test_a_hook_denial_posts_its_notice() -> None:
    """A request hook refusing before the HTTP call: nothing sent, the denial's notice posted."""

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(None, renderer=_copy, reason="spend guard")

    dispose = register_request_hook(refuse)
    try:
        result, sink, server = await _stream(b"{}", status=200)
    finally:
        dispose()
    assert server.requests == [] and result.error is not None and result.error.code == "request_denied"
    [payload] = sink.payloads
    assert payload["embeds"][0]["title"] == "allowance_spent"
    assert payload["embeds"][0]["description"] == "Your allowance is spent."


async def test_a_denial_with_defer_notice_posts_nothing_on_the_stream_path() -> None:
    """``defer_notice`` leaves the notice to the retry owner: the stream posts nothing at all."""

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        return ProviderRequestDeniedError(context, renderer=_copy, defer_notice=True)

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(None, renderer=_copy, defer_notice=True)

    dispose = register_denial_translator(translate)
    try:
        result, sink, _ = await _stream(LIMITED)
    finally:
        dispose()
    assert result.status is StreamStatus.ERROR and sink.payloads == []
    dispose = register_request_hook(refuse)
    try:
        result, sink, _ = await _stream(b"{}", status=200)
    finally:
        dispose()
    assert result.status is StreamStatus.ERROR and sink.payloads == []


async def test_suppressed_errors_post_no_denial_notice() -> None:
    """``suppress_user_errors`` silences the denial's notice too."""

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(None, renderer=_copy)

    dispose = register_request_hook(refuse)
    try:
        _, sink, _ = await _stream(b"{}", status=200, config=StreamConfig(suppress_user_errors=True))
    finally:
        dispose()
    assert sink.payloads == []


async def test_a_denial_of_another_owner_gets_the_generic_notice() -> None:
    """A hook's denial for another context is not this request's: the generic embed, no denial copy."""

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(object(), renderer=_copy, reason="someone else's guard")

    dispose = register_request_hook(refuse)
    try:
        _, sink, _ = await _stream(b"{}", status=200)
    finally:
        dispose()
    [payload] = sink.payloads
    assert payload["embeds"][0]["title"] != "allowance_spent"


async def test_a_translator_that_declines_leaves_the_generic_embed() -> None:
    """With a translator registered that turns nothing into a denial, the error embed is the generic one."""
    dispose = register_denial_translator(lambda failure, context: None)
    try:
        result, sink, _ = await _stream(LIMITED)
    finally:
        dispose()
    [payload] = sink.payloads
    assert "Insufficient credits" in payload["embeds"][0]["description"]
    assert len(result.messages) == 1


async def test_a_held_notice_after_text_is_not_a_second_reply() -> None:
    """Text went out, then the stream failed: the held notice follows it without replying again."""
    events = [
        {"id": "g", "choices": [{"index": 0, "delta": {"content": "Part one."}, "finish_reason": None}]},
        {"error": {"code": 400, "message": "Provider returned error: invalid tool schema"}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    sink = MemorySink()
    dispose = register_denial_translator(lambda failure, context: None)
    try:
        async with ReplayServer(body=body) as server:
            result = await stream_to_discord(
                OpenRouterAdapter(),
                REQUEST,
                sink=sink,
                base_url=server.base_url,
                api_key="sk-or-v1-test-0000",
                transport=LOCAL,
                context=StreamContext(channel_id="5", reply_to_message_id="77"),
            )
    finally:
        dispose()
    text, notice = sink.payloads
    assert text["content"] == "Part one." and text["message_reference"]["message_id"] == "77"
    assert notice["embeds"] and "message_reference" not in notice
    assert len(result.messages) == 2
