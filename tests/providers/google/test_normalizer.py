"""Stage 03 of Google Gemini: ``GeminiNormalizer`` over captured streams and bodies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
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
from rxcord.providers.errors import classify_http_error
from rxcord.providers.google.adapter import GoogleAdapter
from rxcord.providers.google.normalizer import MIN_RESENT_PART_CHARS, GeminiNormalizer
from rxcord.providers.resend import resent_overlap
from rxcord.providers.sse import SseParser

CAPTURES = Path(__file__).parents[2] / "fixtures" / "captures" / "google"


ADAPTER = GoogleAdapter()


def _sse(name: str) -> list[RawStreamChunk]:
    raw = (CAPTURES / name).read_bytes()
    assert b"\r\n\r\n" in raw  # Gemini frames its events with CRLF
    parser = SseParser()
    events = [*parser.feed(raw), *parser.close()]
    return [RawStreamChunk(provider="google", data=json.loads(e.data), event=e.event) for e in events]


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


def _thoughts(chunks: Sequence[ProcessedChunk], kind: ThoughtKind) -> list[ThoughtLogEntry]:
    return [t for c in chunks for t in c.thoughts if t.kind is kind]


def _types(chunks: Sequence[ProcessedChunk]) -> list[ChunkType]:
    return [c.type for c in chunks]


def _event(parts: list[dict[str, Any]], finish: str | None = None, **extra: Any) -> RawStreamChunk:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return RawStreamChunk(provider="google", data={"candidates": [candidate], **extra})


def _http(name: str, status: int) -> RawStreamChunk:
    body = _json(name)
    error = classify_http_error(status, body, provider="google")
    return RawStreamChunk(provider="google", error=error, data=body, metadata={"status": status})


SIG_A = _sse("thoughts.sse")[-1].data["candidates"][0]["content"]["parts"][0]["thoughtSignature"]


# --------------------------------------------------------------------------- normalizer: captures


def test_plain_text_stream() -> None:
    """Text parts become text chunks; the STOP chunk ends with a done chunk carrying the last usage."""
    chunks = _run(_sse("text.sse"))
    assert _text(chunks) == (
        "Paris is the capital of France. It sits on the Seine and has about 2.1 million inhabitants"
        " in the city proper."
    )
    assert _types(chunks) == [ChunkType.TEXT] * 3 + [ChunkType.DONE]
    done = chunks[-1]
    assert _meta(done) == {"finish_reason": FinishReason.STOP, "raw_finish_reason": "STOP"}
    assert done.usage == Usage(input_tokens=9, output_tokens=24)


def test_thought_parts_become_summaries_and_signature_is_kept() -> None:
    """thought: true parts are SUMMARY entries, never visible text; thoughtSignature is a SIGNATURE."""
    chunks = _run(_sse("thoughts.sse"))
    summaries = _thoughts(chunks, ThoughtKind.SUMMARY)
    assert [s.text.split("\n")[0] for s in summaries] == [
        "**Calculating the greatest common divisor**",
        "**Checking the remainders**",
    ]
    assert "Euclidean" not in _text(chunks)
    assert _text(chunks) == "The greatest common divisor of 1071 and 462 is **21**."
    assert _thoughts(chunks, ThoughtKind.SIGNATURE) == [
        ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=SIG_A)
    ]
    assert chunks[-1].usage == Usage(input_tokens=14, output_tokens=15 + 171)


def test_text_and_function_call_in_one_part_set() -> None:
    """A part set with text and a call yields the text, the terminal done, then the signed call."""
    chunks = _run(_sse("text_and_call.sse"))
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.TEXT, ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert chunks[0].content == "Let me look up the current weather in Paris for you."
    assert chunks[1].content == ""
    assert [t.kind for t in chunks[1].thoughts] == [ThoughtKind.SIGNATURE]
    assert chunks[2].metadata["finish_reason"] is FinishReason.TOOL_CALLS
    assert chunks[2].usage == Usage(input_tokens=61, output_tokens=28 + 44)
    call = chunks[3].function_call
    assert call == FunctionCall(
        name="get_weather", args={"city": "Paris", "unit": "celsius"}, thought_signature=SIG_A
    )


def test_call_before_text_in_a_part_set_still_yields_text_first() -> None:
    """Calls are held until the response ends, so text after a call part is still delivered first."""
    chunks = _run(
        [_event([{"functionCall": {"name": "f", "args": {}}}, {"text": "before the call"}], "STOP")]
    )
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert chunks[0].content == "before the call"


def test_call_split_from_finish_is_held_until_finish() -> None:
    """A call part arriving before its finishReason chunk is not released early."""
    normalizer = GeminiNormalizer()
    first = normalizer.feed(_event([{"functionCall": {"name": "f", "args": {"a": 1}}}]))
    assert first == []
    second = normalizer.feed(_event([], "STOP"))
    assert _types(second) == [ChunkType.DONE, ChunkType.FUNCTION_CALL]


def test_parallel_calls_keep_order_and_only_first_signature() -> None:
    """Parallel calls come out in order; only the part that carried a signature has one."""
    chunks = _run(_sse("parallel_calls.sse"))
    calls = [c.function_call for c in chunks if c.function_call is not None]
    assert [(c.name, dict(c.args)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Tokyo"}),
        ("get_time", {"timezone": "Asia/Tokyo"}),
    ]
    assert calls[0].thought_signature is not None
    assert calls[1].thought_signature is None and calls[2].thought_signature is None


def test_usage_with_cache_is_not_double_counted() -> None:
    """promptTokenCount already includes cached tokens: the cache count is a subset, not added."""
    chunks = _run(_sse("usage_cache.sse"))
    usages = [c.usage for c in chunks if c.usage is not None]
    assert usages == [Usage(input_tokens=4120, output_tokens=21, cache_read_tokens=4032)]


def test_safety_finish_is_content_blocked() -> None:
    """A SAFETY finish yields done(content_filter), then a content_blocked error naming the category."""
    chunks = _run(_sse("safety_block.sse"))
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.ERROR]
    assert _meta(chunks[1]) == {
        "finish_reason": FinishReason.CONTENT_FILTER,
        "raw_finish_reason": "SAFETY",
    }
    error = chunks[2].error
    assert error is not None
    assert error.type is ErrorType.CONTENT_BLOCKED and not error.retryable
    assert error.code == "SAFETY"
    assert "HARM_CATEGORY_HARASSMENT" in error.message


@pytest.mark.parametrize("reason", ["RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"])
def test_other_block_finish_reasons_are_content_blocked(reason: str) -> None:
    """Every withheld-answer finish reason becomes a content_blocked error."""
    chunks = _run([_event([], reason)])
    assert chunks[-1].error is not None
    assert chunks[-1].error.type is ErrorType.CONTENT_BLOCKED
    assert chunks[-1].error.code == reason


def test_prompt_block_is_content_blocked() -> None:
    """promptFeedback.blockReason yields done(content_filter, usage) then a content_blocked error."""
    chunks = _run(_sse("prompt_block.sse"))
    assert _types(chunks) == [ChunkType.DONE, ChunkType.ERROR]
    assert chunks[0].metadata["raw_finish_reason"] == "PROHIBITED_CONTENT"
    assert chunks[0].usage == Usage(input_tokens=23, output_tokens=0)
    assert chunks[1].error is not None
    assert chunks[1].error.type is ErrorType.CONTENT_BLOCKED
    assert "PROHIBITED_CONTENT" in chunks[1].error.message


def test_mid_stream_error_object() -> None:
    """An error object after a 200 is classified; the usage so far precedes it."""
    chunks = _run(_sse("mid_stream_error.sse"))
    assert _types(chunks) == [ChunkType.TEXT, ChunkType.DONE, ChunkType.ERROR]
    assert chunks[1].usage == Usage(input_tokens=11, output_tokens=6)
    error = chunks[2].error
    assert error is not None
    assert error.type is ErrorType.API_ERROR and error.retryable
    assert error.status is None


def test_malformed_function_call_is_an_error() -> None:
    """MALFORMED_FUNCTION_CALL ends the stream with an error, not with an empty answer."""
    chunks = _run([_event([], "MALFORMED_FUNCTION_CALL")])
    assert _types(chunks) == [ChunkType.DONE, ChunkType.ERROR]
    assert chunks[0].metadata["finish_reason"] is FinishReason.ERROR
    assert chunks[1].error is not None and chunks[1].error.code == "MALFORMED_FUNCTION_CALL"


def test_max_tokens_is_length() -> None:
    """MAX_TOKENS maps to the length finish reason."""
    chunks = _run([_event([{"text": "cut"}], "MAX_TOKENS")])
    assert _meta(chunks[-1]) == {"finish_reason": FinishReason.LENGTH, "raw_finish_reason": "MAX_TOKENS"}


@pytest.mark.parametrize(
    ("name", "status", "kind", "retryable", "needle"),
    [
        ("http_404_unknown_model.json", 404, ErrorType.MODEL_ERROR, False, "ListModels"),
        ("http_429_resource_exhausted.json", 429, ErrorType.RATE_LIMIT, True, "quota"),
        ("http_503_overloaded.json", 503, ErrorType.PROVIDER_OVERLOADED, True, "overloaded"),
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


def test_resent_whole_part_is_dropped() -> None:
    """A backend resending a whole part already emitted does not duplicate the text."""
    chunks = _run(_sse("resent_part.sse"))
    assert _text(chunks) == "Step one: preheat the oven to 200 degrees.\n\nStep two: mix the dry ingredients."


def test_short_repeated_parts_are_kept() -> None:
    """Short parts that repeat the tail ("ha", newlines) are real text and are kept."""
    parts = ["ha", "ha", "\n", "\n", "x" * (MIN_RESENT_PART_CHARS - 1), "x" * (MIN_RESENT_PART_CHARS - 1)]
    chunks = _run([_event([{"text": p}]) for p in parts])
    assert _text(chunks) == "".join(parts)


def test_resent_thought_part_is_dropped_apart_from_text() -> None:
    """Thought summaries have their own tail: a thought equal to visible text is not dropped."""
    line = "A sentence long enough to be checked by the rule."
    chunks = _run(
        [
            _event([{"text": line}]),
            _event([{"text": line, "thought": True}]),
            _event([{"text": line, "thought": True}]),
        ]
    )
    assert _text(chunks) == line
    assert [t.text for t in _thoughts(chunks, ThoughtKind.SUMMARY)] == [line]


def test_thought_summary_field_is_a_summary() -> None:
    """A thoughtSummary field is taken as a thought summary."""
    chunks = _run([_event([{"thoughtSummary": "weighing options"}])])
    assert _thoughts(chunks, ThoughtKind.SUMMARY) == [
        ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text="weighing options")
    ]
    assert _text(chunks) == ""


def test_complete_json_array_body() -> None:
    """Gemini's non-SSE array of responses normalizes like the stream."""
    raw = RawStreamChunk(provider="google", data=_json("complete_array.json"), metadata={"complete": True})
    chunks = _run([raw])
    assert _text(chunks) == "Bonjour tout le monde !"
    assert chunks[-1].metadata["finish_reason"] is FinishReason.STOP
    assert ADAPTER.is_meaningful(raw)


def test_complete_single_response_body() -> None:
    """A generateContent body (one object) normalizes like one stream chunk."""
    raw = RawStreamChunk(provider="google", data=_json("complete_response.json"), metadata={"complete": True})
    chunks = _run([raw])
    assert _text(chunks) == "Bonjour tout le monde !"
    assert chunks[-1].usage == Usage(input_tokens=7, output_tokens=6)


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


def test_unknown_chunk_is_filtered_with_a_debug_log(debug_log: list[str]) -> None:
    """A chunk with nothing the normalizer knows yields nothing and leaves a debug line.

    A stream of nothing else ends in the ``unrecognized_response`` error (issue 14).
    """
    normalizer = ADAPTER.new_normalizer()
    assert normalizer.feed(RawStreamChunk(provider="google", data={"modelVersion": "gemini-2.5-flash"})) == []
    assert any("unknown chunk" in line for line in debug_log)
    (end,) = normalizer.finish()
    assert end.error is not None and end.error.code == "unrecognized_response" and not end.error.retryable


def test_finish_releases_held_calls_and_usage_without_finish_reason() -> None:
    """A body that closes without finishReason still hands over its call and its usage."""
    normalizer = GeminiNormalizer()
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 2}
    assert normalizer.feed(_event([{"functionCall": {"name": "f"}}], usageMetadata=usage)) == []
    out = normalizer.finish()
    assert _types(out) == [ChunkType.DONE, ChunkType.FUNCTION_CALL]
    assert out[0].usage == Usage(input_tokens=5, output_tokens=2)
    assert normalizer.finish() == []


def test_transport_error_passes_through() -> None:
    """A transport error chunk becomes an error chunk carrying the same ProviderError."""
    error = classify_http_error(500, "boom", provider="google")
    chunks = _run([RawStreamChunk(provider="google", error=error)])
    assert [c.error for c in chunks] == [error]


@settings(max_examples=150, deadline=None)
@given(text=st.text(min_size=1, max_size=120), cuts=st.lists(st.integers(0, 120), max_size=12))
def test_any_split_gives_the_same_text(text: str, cuts: list[int]) -> None:
    """Any split of a text across chunks concatenates back to it (unless a piece restates its tail)."""
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    emitted = ""
    for piece in pieces:
        assume(resent_overlap(emitted, piece) == 0)
        emitted += piece
    chunks = _run([_event([{"text": p}]) for p in pieces] + [_event([], "STOP")])
    assert _text(chunks) == text
