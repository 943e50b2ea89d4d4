"""Fidelity to Discord's official OpenAPI description (vendored subset in tests/fixtures/discord_openapi).

Every payload rxcord plans must be a valid create-message (or execute-webhook) request, and every
message the emulator returns must be a valid message response, by Discord's own schemas.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Segment
from rxcord.core.types import ErrorType, ProviderError, SegmentKind
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.error_embed import error_embed
from rxcord.sinks.memory import MemorySink
from rxcord.sinks.rest import RestSink
from rxcord.testing.emulator import DiscordEmulator

SPEC = json.loads(
    (Path(__file__).parent.parent / "fixtures" / "discord_openapi" / "messages.json").read_text()
)
REGISTRY: Registry[Any] = Registry().with_resource(
    "urn:discord", Resource(contents=SPEC, specification=DRAFT202012)
)


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"urn:discord#/components/schemas/{name}"}, registry=REGISTRY)


CREATE = _validator("MessageCreateRequest")
WEBHOOK = _validator("IncomingWebhookRequestPartial")
RESPONSE = _validator("MessageResponse")

TOKENS = [
    *"abc xyz.,!?\n`*_|>-#@<>:0123456789",
    "é",
    "👋",
    "\u200d",
    "```",
    "@everyone",
    "@xyz",
    "word " * 40,
]
TEXT = st.lists(st.sampled_from(TOKENS), max_size=400).map("".join)


def _payloads(text: str, context: StreamContext) -> list[dict[str, Any]]:
    delivery = DiscordDelivery(
        sink=MemorySink(), context=context, config=StreamConfig(), resolver={"xyz": "42" * 9}.get
    )
    return delivery.payloads(Segment(kind=SegmentKind.TEXT, text=text))


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_channel_payloads_match_create_message_schema(text: str) -> None:
    """Any text becomes valid create-message requests of at most 2000 code points each."""
    context = StreamContext(channel_id="1", reply_to_message_id="123456789012345678")
    for payload in _payloads(text, context):
        CREATE.validate(payload)
        assert len(payload["content"]) <= 2000


@settings(max_examples=40, deadline=None)
@given(TEXT, st.text(max_size=100))
def test_webhook_payloads_match_execute_webhook_schema(text: str, persona: str) -> None:
    """Webhook payloads (persona name repaired, reply notice included) match the execute-webhook schema."""
    context = StreamContext(
        channel_id="1", webhook_id="5", webhook_token="t", persona_username=persona, reply_to_message_id="99"
    )
    for payload in _payloads(text, context):
        WEBHOOK.validate(payload)


def test_error_embed_payload_matches_schema() -> None:
    """The error embed for a long model_error message is a valid request."""
    error = ProviderError(
        type=ErrorType.MODEL_ERROR, message="unknown model; supported: " + "m-1, " * 2000, retryable=False
    )
    delivery = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=StreamConfig())
    for payload in delivery.payloads(Segment(kind=SegmentKind.ERROR_EMBED, embed=error_embed(error))):
        CREATE.validate(payload)


async def test_emulator_responses_match_message_response_schema() -> None:
    """The emulator answers create-message with what Discord's schema calls a message (reply included)."""
    async with DiscordEmulator() as emulator, aiohttp.ClientSession() as session:
        target = emulator.seed_message("77", "question")
        sink = RestSink(emulator.base_url, emulator.config.token, session=session)
        context = StreamContext(channel_id="77", reply_to_message_id=target)
        delivery = DiscordDelivery(sink=sink, context=context, config=StreamConfig())
        for payload in delivery.payloads(Segment(kind=SegmentKind.TEXT, text="Hello <@123456789012345678>!")):
            await sink.create_message(context, payload)
        headers = {"Authorization": f"Bot {emulator.config.token}"}
        async with session.get(f"{emulator.base_url}/channels/77/messages", headers=headers) as resp:
            messages = await resp.json()
    assert len(messages) == 2
    for message in messages:
        RESPONSE.validate(message)
