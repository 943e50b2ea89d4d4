"""OpenRouter: reasoning fields counted once, held tool-call finish, serving backend, errors, request."""

from __future__ import annotations

from typing import Any

from rxcord.compose.pipeline import stage03
from rxcord.core.request import ChatRequest, Message, Role, SamplerSettings
from rxcord.core.types import ChunkType, ErrorType, FinishReason, ProcessedChunk, RawStreamChunk, ThoughtKind
from rxcord.providers.degrade import Degrader
from rxcord.providers.errors import classify_http_error
from rxcord.providers.openrouter import OPENROUTER_BASE_URL, OpenRouterAdapter
from tests.providers.chat_completions.test_normalizer import (
    calls_of,
    load_json,
    of_type,
    raws,
    run,
    sse_events,
    text_of,
    thoughts_of,
)

ADAPTER = OpenRouterAdapter()


def replay(name: str) -> list[ProcessedChunk]:
    # Stage 03 as the chain runs it: the normalizer and the guards the adapter declares.
    return run(stage03(ADAPTER)(), raws("openrouter", sse_events("openrouter", name)))


def test_reasoning_sent_twice_in_one_delta_is_counted_once() -> None:
    """``reasoning`` and the same text in ``reasoning_details`` give one thought, not two."""
    chunks = replay("reasoning_both_fields")
    assert thoughts_of(chunks) == "The user says hi. Greet back."
    assert text_of(chunks) == "Hello there!"


def test_serving_provider_and_cost_usage() -> None:
    """The chunk-level ``provider`` rides on every chunk; the trailing usage keeps cost and cache."""
    chunks = replay("reasoning_both_fields")
    assert {chunk.serving_provider for chunk in chunks} == {"DeepInfra"}
    (done,) = of_type(chunks, ChunkType.DONE)
    assert done.metadata["finish_reason"] is FinishReason.STOP
    assert done.metadata["native_finish_reason"] == "stop"
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.cache_read_tokens, done.usage.cache_write_tokens) == (
        1450,
        1024,
        0,
    )
    assert done.usage.cost is not None and abs(done.usage.cost - 0.00084517) < 1e-12


def test_reasoning_content_field_alone() -> None:
    """A backend sending only ``reasoning_content`` still gives its thought."""
    chunks = replay("reasoning_content_field")
    assert thoughts_of(chunks) == "Think about it."
    assert text_of(chunks) == "Done."


def test_summary_and_encrypted_reasoning_kinds() -> None:
    """``reasoning.summary`` is a SUMMARY thought (counted once), ``reasoning.encrypted`` REDACTED."""
    chunks = replay("reasoning_summary_encrypted")
    assert thoughts_of(chunks, ThoughtKind.SUMMARY) == "**Planning the answer**"
    assert thoughts_of(chunks, ThoughtKind.RAW) == ""
    redacted = [entry for chunk in chunks for entry in chunk.thoughts if entry.kind is ThoughtKind.REDACTED]
    assert len(redacted) == 1 and (redacted[0].signature or "").startswith("gAAAA")
    assert text_of(chunks) == "4"


def test_tool_call_finish_is_held_until_usage() -> None:
    """After a tool-call finish nothing comes until the trailing usage; then done (with cost) and the call."""
    events = sse_events("openrouter", "tool_call_usage_after_finish")
    normalizer = ADAPTER.new_normalizer()
    before: list[ProcessedChunk] = []
    for event in events[:-1]:
        before.extend(normalizer.feed(RawStreamChunk(provider="openrouter", data=event)))
    assert text_of(before) == "Let me check."
    assert calls_of(before) == [] and of_type(before, ChunkType.DONE) == []
    released = list(normalizer.feed(RawStreamChunk(provider="openrouter", data=events[-1])))
    assert [chunk.type for chunk in released] == [ChunkType.DONE, ChunkType.FUNCTION_CALL]
    done, call = released
    assert done.metadata["finish_reason"] is FinishReason.TOOL_CALLS
    assert done.usage is not None and done.usage.cost == 0.000246
    assert call.function_call is not None
    assert (call.function_call.name, dict(call.function_call.args)) == ("get_weather", {"location": "Tokyo"})
    assert call.serving_provider == "Fireworks"
    assert normalizer.finish() == []


def test_held_tool_call_is_released_at_stream_end_without_usage() -> None:
    """A stream that ends without usage still delivers its held call (at the end marker)."""
    events = sse_events("openrouter", "tool_call_usage_after_finish")[:-1]
    normalizer = ADAPTER.new_normalizer()
    for event in events:
        normalizer.feed(RawStreamChunk(provider="openrouter", data=event))
    finished = normalizer.finish()
    assert [chunk.type for chunk in finished] == [ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert finished[0].usage is None


def test_reasoning_details_are_merged_and_replayed_on_the_call() -> None:
    """Streamed ``reasoning_details`` fragments merge per index (text, signature) onto the call's replay."""
    chunks = replay("reasoning_signature_anthropic")
    (call,) = calls_of(chunks)
    assert call.id == "toolu_01A09q90qw90lq917835lq9"
    assert dict(call.args) == {"query": "rxcord"}
    assert call.replay["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": "I should call the tool.",
            "format": "anthropic-claude-v1",
            "index": 0,
            "signature": "EqQBCkgIBhABGAIiQL2vZ3mN8pQ",
        }
    ]
    usage = of_type(chunks, ChunkType.DONE)[0].usage
    assert usage is not None and usage.cache_write_tokens == 300


def test_replayed_reasoning_details_go_back_on_the_assistant_message() -> None:
    """The next tool-loop request carries the call's ``reasoning_details`` on its assistant message."""
    (call,) = calls_of(replay("reasoning_signature_anthropic"))
    request = ChatRequest(
        model="anthropic/claude-sonnet-4",
        messages=(Message.user("q"), Message(role=Role.ASSISTANT, tool_calls=(call,))),
    )
    assistant = ADAPTER.build_request(request, api_key="k").body["messages"][1]
    assert assistant["reasoning_details"] == call.replay["reasoning_details"]
    assert assistant["tool_calls"][0]["id"] == call.id


def test_leaked_think_tags_are_rerouted() -> None:
    """A backend leaking ``<think>`` into content (split tag included) has it moved to thoughts."""
    chunks = replay("think_tags_leaked")
    assert text_of(chunks) == "Why did the chicken cross the road?"
    assert thoughts_of(chunks) == "The user wants a joke."
    assert "<" not in text_of(chunks)


def test_glued_reasoning_spill_is_rerouted() -> None:
    """A reasoning tail glued to the first visible text goes to thoughts; the footer names the backend."""
    chunks = replay("spill_glued")
    assert text_of(chunks) == "Hello! Nice to see you."
    assert thoughts_of(chunks).endswith("figure it out.")
    assert {chunk.serving_provider for chunk in chunks} == {"minimax-cn"}


def test_mid_stream_error_after_text() -> None:
    """A mid-stream error event (``finish_reason: error``) ends the stream with a retryable api_error."""
    chunks = replay("mid_stream_error")
    assert text_of(chunks) == "Once upon a time"
    last = chunks[-1]
    assert last.error is not None and last.error.type is ErrorType.API_ERROR and last.error.retryable
    assert last.serving_provider == "Chutes"
    assert ADAPTER.rejection(
        RawStreamChunk(provider="openrouter", data=sse_events("openrouter", "mid_stream_error")[-1])
    )


def test_error_after_200_naming_a_parameter_degrades() -> None:
    """A rejection before any output, naming ``top_k``, gives the transport a body without it."""
    request = ADAPTER.build_request(
        ChatRequest(model="m", sampler=SamplerSettings(top_k=40, temperature=0.5)), api_key="k"
    )
    (event,) = sse_events("openrouter", "error_after_200_param")
    raw = RawStreamChunk(provider="openrouter", data=event)
    assert not ADAPTER.is_meaningful(raw)
    rejection = ADAPTER.rejection(raw)
    assert rejection is not None
    retry = Degrader(request.body, ADAPTER.policy).next_body(rejection)
    assert retry is not None and "top_k" not in retry and retry["temperature"] == 0.5


def test_502_degrades_for_openrouter() -> None:
    """OpenRouter's policy lets an opaque 502 qualify (the router may have picked a bad backend)."""
    failure = classify_http_error(502, load_json("openrouter", "http_502_provider"), provider="openrouter")
    assert ADAPTER.policy.degrade_on_502
    assert Degrader({"model": "m", "messages": [], "stream": True, "seed": 1}, ADAPTER.policy).next_body(
        failure
    ) == {
        "model": "m",
        "messages": [],
        "stream": True,
    }


def test_routing_and_reasoning_fields_are_never_degraded() -> None:
    """``provider`` routing, ``models`` fallbacks and ``reasoning`` are mandatory for OpenRouter."""
    assert {"provider", "models", "reasoning"} <= ADAPTER.policy.mandatory_body_keys


def test_complete_response_matches_the_stream_shape() -> None:
    """A non-streamed response gives thought, done (with cost, serving backend) and the call with replay."""
    raw = RawStreamChunk(
        provider="openrouter",
        data=load_json("openrouter", "complete_reasoning_tool_call"),
        metadata={"complete": True},
    )
    chunks = run(ADAPTER.new_normalizer(), [raw])
    assert thoughts_of(chunks) == "Need the weather."
    assert [chunk.type for chunk in chunks] == [ChunkType.TEXT, ChunkType.DONE, ChunkType.FUNCTION_CALL]
    (call,) = calls_of(chunks)
    assert (call.name, dict(call.args), call.id) == (
        "get_weather",
        {"location": "Oslo"},
        "tool_0_get_weather",
    )
    assert call.replay["reasoning_details"][0]["text"] == "Need the weather."
    assert chunks[1].usage is not None and chunks[1].usage.cost == 0.0000345
    assert chunks[1].metadata["native_finish_reason"] == "STOP"
    assert {chunk.serving_provider for chunk in chunks} == {"Google"}


def test_request_headers_url_and_reasoning_effort() -> None:
    """Default URL, bearer key, attribution headers and ``reasoning: {effort}``."""
    adapter = OpenRouterAdapter(site_url="https://example.test", app_name="rxcord")
    request = ChatRequest(
        model="deepseek/deepseek-r1",
        sampler=SamplerSettings(reasoning_effort="high"),
        extra={"provider": {"order": ["DeepInfra"]}},
    )
    http = adapter.build_request(request, api_key="sk-or-v1-abc")
    assert http.url == f"{OPENROUTER_BASE_URL}/chat/completions"
    assert http.headers["Authorization"] == "Bearer sk-or-v1-abc"
    assert http.headers["HTTP-Referer"] == "https://example.test"
    assert http.headers["X-Title"] == "rxcord"
    body: Any = http.body
    assert body["reasoning"] == {"effort": "high"}
    assert "reasoning_effort" not in body
    assert body["provider"] == {"order": ["DeepInfra"]}
    assert "HTTP-Referer" not in OpenRouterAdapter().build_request(request, api_key="k").headers


def test_error_embed_text() -> None:
    """The embed names OpenRouter and keeps the backend's words."""
    failure = classify_http_error(
        400, load_json("openrouter", "http_400_invalid_model"), provider="openrouter"
    )
    text = ADAPTER.describe_error(failure)
    assert text.startswith("OpenRouter cannot serve the selected model")
    assert "openai/gpt-9 is not a valid model ID" in text


def test_error_after_a_held_finish_delivers_the_calls_first() -> None:
    """A failure between the tool-call finish and the usage still delivers the call, then the error."""
    events = sse_events("openrouter", "tool_call_usage_after_finish")[:-1]
    normalizer = ADAPTER.new_normalizer()
    for event in events:
        normalizer.feed(RawStreamChunk(provider="openrouter", data=event))
    failure = classify_http_error(200, {"error": {"code": 502, "message": "reset"}}, provider="openrouter")
    out = normalizer.feed(RawStreamChunk(provider="openrouter", error=failure))
    assert [chunk.type for chunk in out] == [ChunkType.DONE, ChunkType.FUNCTION_CALL, ChunkType.ERROR]
    assert normalizer.finish() == ()
