"""Stage 03 of Anthropic Messages: ``AnthropicNormalizer`` over captured streams and bodies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loguru import logger

from rxcord.core.types import (
    ChunkType,
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    RawStreamChunk,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.providers.anthropic.adapter import AnthropicAdapter
from rxcord.providers.anthropic.normalizer import AnthropicNormalizer
from rxcord.providers.errors import classify_http_error
from rxcord.providers.sse import SseParser

CAPTURES = Path(__file__).parents[2] / "fixtures" / "captures" / "anthropic"


ADAPTER = AnthropicAdapter()


def _sse(name: str) -> list[RawStreamChunk]:
    parser = SseParser()
    raw = (CAPTURES / name).read_bytes()
    events = [*parser.feed(raw), *parser.close()]
    return [RawStreamChunk(provider="anthropic", data=json.loads(e.data), event=e.event) for e in events]


def _json(name: str) -> Any:
    return json.loads((CAPTURES / name).read_text(encoding="utf-8"))


def _run(raws: Iterable[RawStreamChunk]) -> list[ProcessedChunk]:
    normalizer = ADAPTER.new_normalizer()
    out: list[ProcessedChunk] = []
    for raw in raws:
        out.extend(normalizer.feed(raw))
    out.extend(normalizer.finish())
    return out


def _meta(chunk: ProcessedChunk) -> dict[str, object]:
    """A ``done`` chunk's metadata without the response id (``request_id``, tested on its own)."""
    return {key: value for key, value in chunk.metadata.items() if key != "request_id"}


def _text(chunks: Sequence[ProcessedChunk]) -> str:
    return "".join(c.content for c in chunks if c.type is ChunkType.TEXT)


def _thoughts(chunks: Sequence[ProcessedChunk]) -> tuple[ThoughtLogEntry, ...]:
    return tuple(t for c in chunks for t in c.thoughts)


def _types(chunks: Sequence[ProcessedChunk]) -> list[ChunkType]:
    return [c.type for c in chunks]


def _calls(chunks: Sequence[ProcessedChunk]) -> list[FunctionCall]:
    return [c.function_call for c in chunks if c.function_call is not None]


def _ev(name: str, **data: Any) -> RawStreamChunk:
    return RawStreamChunk(provider="anthropic", data={"type": name, **data}, event=name)


def _text_delta(text: str, index: int = 0) -> RawStreamChunk:
    return _ev("content_block_delta", index=index, delta={"type": "text_delta", "text": text})


def _json_delta(partial: str, index: int = 0) -> RawStreamChunk:
    return _ev(
        "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": partial}
    )


def _tool_start(index: int = 0, name: str = "f", tool_id: str = "toolu_1") -> RawStreamChunk:
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
    return _ev("content_block_start", index=index, content_block=block)


def _http(name: str, status: int) -> RawStreamChunk:
    body = _json(name)
    error = classify_http_error(status, body, provider="anthropic")
    return RawStreamChunk(provider="anthropic", error=error, data=body, metadata={"status": status})


def _signature(name: str) -> str:
    for raw in _sse(name):
        delta = raw.data.get("delta", {})
        if delta.get("type") == "signature_delta":
            return str(delta["signature"])
    raise AssertionError("no signature in capture")


# --------------------------------------------------------------------------- normalizer: captures


def test_plain_text_stream() -> None:
    """Text deltas become text chunks; ping is ignored; the usage's output is the last report, not a sum."""
    chunks = _run(_sse("text.sse"))
    assert (
        _text(chunks)
        == "Paris is the capital of France. It sits on the Seine and has about 2.1 million inhabitants."
    )
    assert _types(chunks) == [ChunkType.TEXT] * 3 + [ChunkType.DONE]
    assert _meta(chunks[-1]) == {"finish_reason": FinishReason.STOP, "raw_finish_reason": "end_turn"}
    assert chunks[-1].usage == Usage(
        input_tokens=21, output_tokens=24, cache_read_tokens=0, cache_write_tokens=0
    )


def test_thinking_deltas_are_raw_thoughts_with_a_signature() -> None:
    """thinking_delta -> RAW entries (never visible text), signature_delta -> one SIGNATURE entry."""
    chunks = _run(_sse("thinking.sse"))
    thoughts = _thoughts(chunks)
    raw = "".join(t.text for t in thoughts if t.kind is ThoughtKind.RAW)
    assert raw == (
        "I need the GCD of 1071 and 462 by the Euclidean algorithm.\n\n1071 = 2 × 462 + 147"
        "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nThe last non-zero remainder is 21."
    )
    assert [t for t in thoughts if t.kind is ThoughtKind.SIGNATURE] == [
        ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=_signature("thinking.sse"))
    ]
    assert _text(chunks) == "The greatest common divisor of 1071 and 462 is **21**."
    assert all(c.content == "" for c in chunks if c.thoughts)


def test_tool_use_input_split_across_many_deltas() -> None:
    """input_json_delta pieces are joined per block; the call leaves after the terminal done, with its id."""
    chunks = _run(_sse("tool_use.sse"))
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert chunks[0].content == "Okay, let's check the weather for San Francisco, CA:"
    assert _meta(chunks[1]) == {"finish_reason": FinishReason.TOOL_CALLS, "raw_finish_reason": "tool_use"}
    assert chunks[1].usage is not None and chunks[1].usage.output_tokens == 89
    assert chunks[2].function_call == FunctionCall(
        name="get_weather",
        args={"location": "San Francisco, CA", "unit": "fahrenheit", "days": [1, 2, 3]},
        id="toolu_01T1x1fJ34qAmk2tNTrN7Up6",
    )


def test_parallel_tool_calls_keep_order() -> None:
    """Two tool_use blocks give two calls, in block order, each with its own arguments."""
    calls = _calls(_run(_sse("parallel_tools.sse")))
    assert [(c.name, dict(c.args), c.id) for c in calls] == [
        ("get_weather", {"location": "Paris"}, "toolu_01A09q90qw90lq917835lq9"),
        ("get_time", {"timezone": "Asia/Tokyo"}, "toolu_01B3c7wq8ZfPq2HnE5yRt6Ju"),
    ]


def test_usage_with_cache_takes_the_last_report_of_each_field() -> None:
    """Input is uncached + cache read + cache write; fields repeated in message_delta are not summed."""
    chunks = _run(_sse("usage_cache.sse"))
    usages = [c.usage for c in chunks if c.usage is not None]
    assert usages == [
        Usage(input_tokens=12 + 4032, output_tokens=21, cache_read_tokens=4032, cache_write_tokens=0)
    ]


def test_refusal_is_content_blocked() -> None:
    """stop_reason refusal yields done(content_filter) then a non-retryable content_blocked error."""
    chunks = _run(_sse("refusal.sse"))
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.ERROR]
    assert chunks[1].metadata["finish_reason"] is FinishReason.CONTENT_FILTER
    error = chunks[2].error
    assert error is not None and error.type is ErrorType.CONTENT_BLOCKED and not error.retryable


def test_max_tokens_is_length() -> None:
    """stop_reason max_tokens maps to the length finish reason."""
    chunks = _run(_sse("max_tokens.sse"))
    assert _meta(chunks[-1]) == {"finish_reason": FinishReason.LENGTH, "raw_finish_reason": "max_tokens"}


def test_redacted_thinking_then_thinking_then_tool_use() -> None:
    """redacted_thinking is a REDACTED entry holding the data; thinking and the call follow in order."""
    chunks = _run(_sse("redacted_thinking.sse"))
    kinds = [t.kind for t in _thoughts(chunks)]
    assert kinds == [ThoughtKind.REDACTED, ThoughtKind.RAW, ThoughtKind.SIGNATURE]
    redacted = _thoughts(chunks)[0]
    assert redacted.signature is not None and redacted.signature.startswith("EmwKAhgB")
    assert [c.name for c in _calls(chunks)] == ["get_time"]


def test_mid_stream_overloaded_error() -> None:
    """An overloaded_error event after a 200 is a retryable provider_overloaded error; usage so far first."""
    raws = _sse("mid_stream_error.sse")
    chunks = _run(raws)
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.ERROR]
    assert chunks[1].usage == Usage(
        input_tokens=19, output_tokens=1, cache_read_tokens=0, cache_write_tokens=0
    )
    error = chunks[2].error
    assert error is not None
    assert (error.type, error.retryable, error.status) == (ErrorType.PROVIDER_OVERLOADED, True, None)
    assert ADAPTER.rejection(raws[-1]) == error


@pytest.mark.parametrize(
    ("name", "status", "kind", "retryable", "needle"),
    [
        ("http_404_unknown_model.json", 404, ErrorType.MODEL_ERROR, False, "claude-opus-9-9"),
        ("http_429_rate_limit.json", 429, ErrorType.RATE_LIMIT, True, "rate limit"),
        ("http_529_overloaded.json", 529, ErrorType.PROVIDER_OVERLOADED, True, "Overloaded"),
    ],
)
def test_http_error_bodies(name: str, status: int, kind: ErrorType, retryable: bool, needle: str) -> None:
    """An HTTP error chunk becomes one error chunk; the embed text keeps the provider's details."""
    raw = _http(name, status)
    chunks = _run([raw])
    assert _types(chunks) == [ChunkType.ERROR]
    error = chunks[0].error
    assert error is not None
    assert (error.type, error.retryable, error.status) == (kind, retryable, status)
    assert ADAPTER.rejection(raw) is error
    assert needle in ADAPTER.describe_error(error)


def test_complete_message_body() -> None:
    """A non-streamed Message normalizes like its stream: thoughts, text, done, then the call."""
    raw = RawStreamChunk(
        provider="anthropic", data=_json("complete_message.json"), metadata={"complete": True}
    )
    chunks = _run([raw])
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.TEXT, ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert [t.kind for t in _thoughts(chunks)] == [ThoughtKind.RAW, ThoughtKind.SIGNATURE]
    assert _text(chunks) == "I'll check the weather in Paris."
    assert chunks[2].usage == Usage(
        input_tokens=20 + 1024, output_tokens=64, cache_read_tokens=0, cache_write_tokens=1024
    )
    assert chunks[3].function_call == FunctionCall(
        name="get_weather", args={"location": "Paris, France"}, id="toolu_01D7FLrfh4GYq7yT1ULFeyMV"
    )
    assert ADAPTER.is_meaningful(raw)


def test_unparseable_tool_input_is_a_clear_error() -> None:
    """Tool input that is not a JSON object ends the stream with an error naming the tool."""
    chunks = _run(
        [_tool_start(name="lookup"), _json_delta('{"q": "unterminated'), _ev("content_block_stop", index=0)]
    )
    assert _types(chunks) == [ChunkType.ERROR]
    error = chunks[0].error
    assert error is not None and error.code == "invalid_tool_input" and "'lookup'" in error.message
    not_object = _run([_tool_start(), _json_delta("[1, 2]"), _ev("content_block_stop", index=0)])
    assert not_object[0].error is not None and "not a JSON object" in not_object[0].error.message


def test_tool_use_without_input_deltas_has_empty_args() -> None:
    """A tool_use block with no input deltas is a call with the start event's (empty) input."""
    chunks = _run([_tool_start(), _ev("content_block_stop", index=0)])
    assert _calls(chunks) == [FunctionCall(name="f", args={}, id="toolu_1")]


def test_body_closing_without_message_delta_releases_calls() -> None:
    """finish() hands over held calls and unsent usage when the stream ends early."""
    normalizer = AnthropicNormalizer()
    start = {"id": "m", "usage": {"input_tokens": 5, "output_tokens": 1}}
    for raw in (
        _ev("message_start", message=start),
        _tool_start(),
        _json_delta("{}"),
        _ev("content_block_stop", index=0),
    ):
        assert normalizer.feed(raw) == []
    out = normalizer.finish()
    assert _types(out) == [ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert out[0].usage == Usage(input_tokens=5, output_tokens=1)
    assert normalizer.finish() == []


@pytest.fixture
def debug_log() -> Iterator[list[str]]:
    """Capture the providers package's debug log lines."""
    lines: list[str] = []
    logger.enable("rxcord")
    sink = logger.add(lines.append, level="DEBUG", format="{message}")
    try:
        yield lines
    finally:
        logger.remove(sink)
        logger.disable("rxcord")


def test_unknown_events_are_filtered_with_a_debug_log(debug_log: list[str]) -> None:
    """Unknown events yield nothing and leave a debug line; ping and message_stop yield nothing.

    A stream of nothing else ends in the ``unrecognized_response`` error (issue 14).
    """
    normalizer = ADAPTER.new_normalizer()
    for raw in (_ev("ping"), _ev("message_stop"), _ev("future_event", x=1)):
        assert normalizer.feed(raw) == []
    assert any("future_event" in line for line in debug_log)
    (end,) = normalizer.finish()
    assert end.error is not None and end.error.code == "unrecognized_response" and not end.error.retryable


@settings(max_examples=150, deadline=None)
@given(text=st.text(min_size=1, max_size=120), cuts=st.lists(st.integers(0, 120), max_size=12))
def test_any_split_gives_the_same_text(text: str, cuts: list[int]) -> None:
    """Any split of a text across text deltas concatenates back to it."""
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    block = {"type": "text", "text": ""}
    raws = [_ev("content_block_start", index=0, content_block=block), *map(_text_delta, pieces)]
    assert _text(_run(raws)) == text


@settings(max_examples=100, deadline=None)
@given(
    args=st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=10), st.booleans())),
    cuts=st.lists(st.integers(0, 200), max_size=10),
)
def test_any_split_of_tool_input_gives_the_same_args(args: dict[str, Any], cuts: list[int]) -> None:
    """Any split of the tool input JSON across input_json_delta events parses to the same arguments."""
    text = json.dumps(args)
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    chunks = _run([_tool_start(), *map(_json_delta, pieces), _ev("content_block_stop", index=0)])
    assert [dict(c.args) for c in _calls(chunks)] == [args]
