"""Stage 03 of the Chat Completions wire: ``ChatCompletionsNormalizer`` over captured streams.

Normalizers are fed decoded events straight from the captures in
``tests/fixtures/captures/<provider>/`` (no HTTP): ``NAME.sse`` holds a raw SSE
body, ``http_<status>_NAME.json`` an error body, ``complete_NAME.json`` a
non-streamed response. ``sse_events``, ``load_json``, ``raws`` and ``run`` are shared
with the other provider tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from loguru import logger

from rxcord.compose.pipeline import stage03
from rxcord.core.request import ChatRequest, Message, Role
from rxcord.core.types import (
    ChunkNormalizer,
    ChunkType,
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    ThoughtKind,
)
from rxcord.providers.chat_completions.normalizer import ChatCompletionsNormalizer, normalize_finish_reason
from rxcord.providers.chat_completions.request import build_messages
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OpenAIAdapter
from tests.strategies import cut as _split

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def sse_events(provider: str, name: str) -> list[Any]:
    """The decoded ``data:`` payloads of a capture, as the transport yields them (no comments, no [DONE])."""
    text = (CAPTURES / provider / f"{name}.sse").read_text(encoding="utf-8")
    events: list[Any] = []
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if not data:
            continue
        payload = "\n".join(data)
        if payload == "[DONE]":
            break
        events.append(json.loads(payload))
    return events


def load_json(provider: str, name: str) -> Any:
    """A JSON capture."""
    return json.loads((CAPTURES / provider / f"{name}.json").read_text(encoding="utf-8"))


def raws(provider: str, events: Iterable[Any]) -> list[RawStreamChunk]:
    """Events wrapped as the transport wraps SSE payloads."""
    return [RawStreamChunk(provider=provider, data=event) for event in events]


def run(normalizer: ChunkNormalizer, chunks: Iterable[RawStreamChunk]) -> list[ProcessedChunk]:
    """Feed every chunk, then finish."""
    out: list[ProcessedChunk] = []
    for chunk in chunks:
        out.extend(normalizer.feed(chunk))
    out.extend(normalizer.finish())
    return out


def text_of(chunks: Sequence[ProcessedChunk]) -> str:
    """The visible text."""
    return "".join(chunk.content for chunk in chunks if chunk.type is ChunkType.TEXT)


def thoughts_of(chunks: Sequence[ProcessedChunk], kind: ThoughtKind = ThoughtKind.RAW) -> str:
    """The thought text of one kind."""
    return "".join(entry.text for chunk in chunks for entry in chunk.thoughts if entry.kind is kind)


def of_type(chunks: Sequence[ProcessedChunk], kind: ChunkType) -> list[ProcessedChunk]:
    """The chunks of one type."""
    return [chunk for chunk in chunks if chunk.type is kind]


def calls_of(chunks: Sequence[ProcessedChunk]) -> list[FunctionCall]:
    """The function calls, in order."""
    return [chunk.function_call for chunk in chunks if chunk.function_call is not None]


def openai_run(name: str) -> list[ProcessedChunk]:
    return run(OpenAIAdapter().new_normalizer(), raws("openai", sse_events("openai", name)))


# ---------------------------------------------------------------------------
# Stage 03: normalizer on captures
# ---------------------------------------------------------------------------


def test_openai_text_and_cached_usage() -> None:
    """Text deltas become text; the trailing usage chunk gives input with cache read and output."""
    chunks = openai_run("text_usage_cached")
    assert text_of(chunks) == "Hello! How can I help you today?"
    done = of_type(chunks, ChunkType.DONE)
    assert done[0].metadata["finish_reason"] is FinishReason.STOP
    usage = done[-1].usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (2006, 1920, 9)


def test_openai_usage_counts_reasoning_tokens_once() -> None:
    """A reasoning model's completion tokens already include its reasoning tokens."""
    usage = of_type(openai_run("reasoning_model_text"), ChunkType.DONE)[-1].usage
    assert usage is not None and usage.output_tokens == 210


def test_tool_call_arguments_split_across_many_deltas() -> None:
    """Id and name come first, then argument fragments; one call is emitted when complete."""
    chunks = openai_run("tool_call_single")
    (call,) = calls_of(chunks)
    assert call.name == "get_weather"
    assert call.id == "call_DdmO9pD3xa9XTPNJ32zg2hcA"
    assert call.args == {"location": "Paris, France", "unit": "celsius"}


def test_parallel_tool_calls_in_index_order() -> None:
    """Parallel calls are emitted one chunk each, in index order, after ``done``."""
    chunks = openai_run("tool_calls_parallel")
    assert [(call.name, call.id) for call in calls_of(chunks)] == [
        ("get_weather", "call_aX3kR1"),
        ("get_time", "call_bY7pQ2"),
    ]
    kinds = [chunk.type for chunk in chunks]
    assert kinds.index(ChunkType.DONE) < kinds.index(ChunkType.FUNCTION_CALL)
    assert of_type(chunks, ChunkType.DONE)[0].metadata["finish_reason"] is FinishReason.TOOL_CALLS


def test_content_filter_finish_is_a_content_block() -> None:
    """``content_filter`` records the finish reason and emits a non-retryable content_blocked error."""
    chunks = openai_run("content_filter")
    assert text_of(chunks) == "Here is how"
    assert of_type(chunks, ChunkType.DONE)[0].metadata["finish_reason"] is FinishReason.CONTENT_FILTER
    (error,) = of_type(chunks, ChunkType.ERROR)
    assert error.error is not None
    assert error.error.type is ErrorType.CONTENT_BLOCKED and not error.error.retryable


def test_openai_mid_stream_error_after_text() -> None:
    """An ``error`` event after a 200 becomes a retryable api_error after the text so far."""
    chunks = openai_run("mid_stream_error")
    assert text_of(chunks) == "The answer"
    assert chunks[-1].error is not None
    assert chunks[-1].error.type is ErrorType.API_ERROR and chunks[-1].error.retryable


def test_invalid_argument_json_is_a_clear_error() -> None:
    """Arguments that do not parse make one non-retryable api_error naming the tool, and no calls."""
    normalizer = ChatCompletionsNormalizer(provider="openai")
    events = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "lookup", "arguments": '{"a": '}}
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    chunks = run(normalizer, raws("openai", events))
    assert calls_of(chunks) == []
    (error,) = of_type(chunks, ChunkType.ERROR)
    assert error.error is not None
    assert error.error.type is ErrorType.API_ERROR and not error.error.retryable
    assert "lookup" in error.error.message


def test_double_encoded_arguments_are_accepted() -> None:
    """Arguments sent as a JSON string holding JSON are decoded twice."""
    event = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c",
                            "function": {"name": "f", "arguments": json.dumps('{"x": 1}')},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    (call,) = calls_of(run(ChatCompletionsNormalizer(provider="custom"), raws("custom", [event])))
    assert call.args == {"x": 1}


def test_reused_index_with_new_id_is_a_new_call() -> None:
    """A backend numbering every call 0 still yields separate calls (a new id starts a new one)."""
    events = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "b", "function": {"name": "g", "arguments": '{"y"'}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 2}"}}]}}
            ]
        },
    ]
    calls = calls_of(run(ChatCompletionsNormalizer(provider="custom"), raws("custom", events)))
    assert [(call.id, call.name, dict(call.args)) for call in calls] == [("a", "f", {}), ("b", "g", {"y": 2})]


def test_calls_without_finish_reason_are_emitted_at_stream_end() -> None:
    """A stream that ends without a finish reason still releases its assembled calls."""
    event = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]
                },
            }
        ]
    }
    normalizer = ChatCompletionsNormalizer(provider="custom")
    assert calls_of(normalizer.feed(RawStreamChunk(provider="custom", data=event))) == []
    finished = normalizer.finish()
    assert [call.name for call in calls_of(finished)] == ["f"]
    assert of_type(finished, ChunkType.DONE)[0].metadata["finish_reason"] is FinishReason.TOOL_CALLS


def test_legacy_function_call_delta() -> None:
    """The deprecated ``delta.function_call`` is assembled like a tool call."""
    events = [
        {"choices": [{"index": 0, "delta": {"function_call": {"name": "f", "arguments": '{"a"'}}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"function_call": {"arguments": ": 1}"}},
                    "finish_reason": "function_call",
                }
            ]
        },
    ]
    (call,) = calls_of(run(ChatCompletionsNormalizer(provider="custom"), raws("custom", events)))
    assert (call.name, dict(call.args)) == ("f", {"a": 1})


def test_complete_response_gives_the_same_chunks_as_a_stream() -> None:
    """A non-streamed ``chat.completion`` becomes the chunks the equivalent stream gives."""
    body = load_json("openai", "complete_tool_calls")
    complete = run(
        OpenAIAdapter().new_normalizer(),
        [RawStreamChunk(provider="openai", data=body, metadata={"complete": True})],
    )
    streamed = openai_run("tool_calls_parallel")
    assert [(c.name, c.id, dict(c.args)) for c in calls_of(complete)] == [
        (c.name, c.id, dict(c.args)) for c in calls_of(streamed)
    ]
    assert [chunk.type for chunk in complete] == [
        ChunkType.DONE,
        ChunkType.FUNCTION_CALL,
        ChunkType.FUNCTION_CALL,
    ]
    usage = complete[0].usage
    assert usage is not None and usage.cache_read_tokens == 64


def test_complete_text_response() -> None:
    """A complete text response becomes text, then ``done`` with stop and usage."""
    body = load_json("openai", "complete_text")
    chunks = run(
        OpenAIAdapter().new_normalizer(),
        [RawStreamChunk(provider="openai", data=body, metadata={"complete": True})],
    )
    assert text_of(chunks) == "Hello! How can I help you today?"
    (done,) = of_type(chunks, ChunkType.DONE)
    assert done.metadata["finish_reason"] is FinishReason.STOP
    assert done.usage is not None and done.usage.input_tokens == 19


def test_complete_error_body_with_200() -> None:
    """A 2xx JSON body holding an error becomes an error chunk."""
    raw = RawStreamChunk(
        provider="openrouter",
        data={"error": {"code": 502, "message": "Provider returned error"}},
        metadata={"complete": True, "status": 200},
    )
    chunks = run(ChatCompletionsNormalizer(provider="openrouter"), [raw])
    (error,) = of_type(chunks, ChunkType.ERROR)
    assert error.error is not None and error.error.retryable


def test_transport_error_chunk_passes_through() -> None:
    """A transport error (timeout, HTTP status) becomes an error chunk, and nothing follows."""
    failure = ProviderError(type=ErrorType.TIMEOUT, message="slow", retryable=True)
    normalizer = ChatCompletionsNormalizer(provider="openai")
    assert normalizer.feed(RawStreamChunk(provider="openai", error=failure)) == [ProcessedChunk.fail(failure)]
    assert (
        normalizer.feed(RawStreamChunk(provider="openai", data={"choices": [{"delta": {"content": "x"}}]}))
        == ()
    )
    assert normalizer.finish() == ()


def test_unknown_chunks_are_filtered_with_a_debug_line() -> None:
    """A chunk with nothing recognizable produces no output and one debug log line."""
    lines: list[str] = []
    logger.enable("rxcord")
    sink = logger.add(lines.append, level="DEBUG", format="{message}")
    try:
        out = ChatCompletionsNormalizer(provider="custom").feed(
            RawStreamChunk(provider="custom", data={"type": "ping"})
        )
    finally:
        logger.remove(sink)
        logger.disable("rxcord")
    assert out == []
    assert any("unknown chunk" in line and "ping" in line for line in lines)


def test_finish_reason_normalization() -> None:
    """Provider finish reasons map to ``FinishReason``; unknown ones count as stop."""
    assert normalize_finish_reason("length") is FinishReason.LENGTH
    assert normalize_finish_reason("tool_calls") is FinishReason.TOOL_CALLS
    assert normalize_finish_reason("content_filter") is FinishReason.CONTENT_FILTER
    assert normalize_finish_reason("eos") is FinishReason.STOP
    assert normalize_finish_reason("whatever") is FinishReason.STOP


def test_length_finish_keeps_raw_value() -> None:
    """The raw finish reason is kept beside the normalized one."""
    event = {"choices": [{"index": 0, "delta": {"content": "abc"}, "finish_reason": "length"}]}
    (done,) = of_type(
        run(ChatCompletionsNormalizer(provider="openai"), raws("openai", [event])), ChunkType.DONE
    )
    assert done.metadata == {"finish_reason": FinishReason.LENGTH, "raw_finish_reason": "length"}


# ---------------------------------------------------------------------------
# NVIDIA NIM captures
# ---------------------------------------------------------------------------


def test_nvidia_reasoning_content_becomes_thoughts() -> None:
    """DeepSeek-style ``reasoning_content`` becomes RAW thoughts; content stays visible."""
    chunks = run(NvidiaAdapter().new_normalizer(), raws("nvidia", sse_events("nvidia", "reasoning_content")))
    assert thoughts_of(chunks) == "Okay, the user asks 2+2."
    assert text_of(chunks) == "2 + 2 = 4."
    usage = of_type(chunks, ChunkType.DONE)[-1].usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (
        11,
        30,
        None,
    )


def test_nvidia_tool_call_split() -> None:
    """Argument fragments split mid-token reassemble into the call's arguments."""
    chunks = run(NvidiaAdapter().new_normalizer(), raws("nvidia", sse_events("nvidia", "tool_call_split")))
    (call,) = calls_of(chunks)
    assert (call.name, call.id, dict(call.args)) == (
        "lookup",
        "chatcmpl-tool-8c2f",
        {"term": "sse parser", "limit": 3},
    )


def test_reasoning_content_is_replayed_on_calls() -> None:
    """``reasoning_content`` streamed before a call travels on the call for the next request."""
    events = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": "plan"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        },
    ]
    (call,) = calls_of(run(NvidiaAdapter().new_normalizer(), raws("nvidia", events)))
    assert call.replay == {"reasoning_content": "plan"}
    assert (
        build_messages(ChatRequest(model="m", messages=(Message(role=Role.ASSISTANT, tool_calls=(call,)),)))[
            0
        ]["reasoning_content"]
        == "plan"
    )


# ---------------------------------------------------------------------------
# Split invariance
# ---------------------------------------------------------------------------

_LEAK = "<think>plan the reply</think>Hello there, friend. `code.Here` stays."


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_output_does_not_depend_on_delta_boundaries(cuts: list[int]) -> None:
    """However the backend splits content, the visible text and the reasoning are the same."""
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in _split(_LEAK, cuts)]
    chunks = run(stage03(CustomAdapter())(), raws("custom", events))
    assert text_of(chunks) == "Hello there, friend. `code.Here` stays."
    assert thoughts_of(chunks) == "plan the reply"


def test_content_parts_list_with_thinking() -> None:
    """Content sent as parts (Mistral ``thinking`` and ``text``) splits into thoughts and text."""
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
        {"type": "text", "text": "Hi"},
    ]
    chunks = run(
        ChatCompletionsNormalizer(provider="custom"),
        raws("custom", [{"choices": [{"delta": {"content": parts}}]}]),
    )
    assert thoughts_of(chunks) == "hmm"
    assert text_of(chunks) == "Hi"


def test_groq_usage_in_x_groq_is_the_streams_usage() -> None:
    """Groq reports a stream's usage in ``x_groq.usage`` on its last chunk (no ``usage`` key)."""
    chunks = run(CustomAdapter().new_normalizer(), raws("custom", sse_events("custom", "groq_x_groq_usage")))
    assert text_of(chunks) == "Groq says hi"
    usage = of_type(chunks, ChunkType.DONE)[-1].usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (12, 3)


def test_azure_prompt_filter_chunk_and_filter_results_are_not_text() -> None:
    """Azure OpenAI opens with a ``choices: []`` prompt-filter chunk and annotates every choice."""
    chunks = openai_run("azure_content_filter")
    assert text_of(chunks) == "Hello from Azure"
    assert of_type(chunks, ChunkType.DONE)[0].metadata["finish_reason"] is FinishReason.STOP
    assert not of_type(chunks, ChunkType.ERROR)
