"""Nothing recognised is never a silent success (issue 14): a body in a shape the adapter does not
speak ends in a typed, non-retryable ``api_error`` that says so, with exactly one notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import reactivex

from rxcord.cli.replay import ReplayOptions, run_replay
from rxcord.core.types import ChunkType, ErrorType, ProcessedChunk, RawStreamChunk, StreamStatus
from rxcord.operators.normalize import normalize
from rxcord.providers.unrecognized import UNRECOGNIZED_CODE, RecognitionCheck

CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
FAMILY = {"openai": "openai", "openrouter": "openai", "nvidia": "openai", "custom": "openai"}
FAMILY |= {"google": "google", "anthropic": "anthropic"}
WRONG = [
    (path, provider)
    for path in sorted(CAPTURES.glob("*/*"))
    if path.suffix == ".sse" or path.name.startswith("complete")
    for provider in ("openai", "google", "anthropic")
    if provider != FAMILY[path.parent.name]
]


def _content_type(path: Path) -> str:
    return "application/json" if path.suffix == ".json" else "text/event-stream"


@pytest.mark.parametrize("path,provider", WRONG, ids=[f"{p.parent.name}/{p.name}@{v}" for p, v in WRONG])
async def test_capture_replayed_with_the_wrong_provider_is_an_api_error(path: Path, provider: str) -> None:
    """Every capture replayed with another family's --provider: an error, never an empty success."""
    outcome = await run_replay(
        ReplayOptions(capture=path, provider=provider, sink="memory", content_type=_content_type(path))
    )
    result = outcome.result
    assert result.status is StreamStatus.ERROR, (result.status, result.visible_text)
    assert result.error is not None and result.visible_text == ""
    if "error" in path.name:
        return  # an error object is recognised by every adapter: the provider's own error stands
    assert result.error.type is ErrorType.API_ERROR and result.error.code == UNRECOGNIZED_CODE
    assert not result.error.retryable
    assert len(result.messages) == 1  # the one error notice


def _sse(events: list[dict[str, object]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


RESPONSES_API = _sse(
    [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hello"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": " there"},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
)


async def test_responses_api_stream_at_a_chat_completions_endpoint(tmp_path: Path) -> None:
    """A Responses-API event stream is not Chat Completions: the error names what arrived."""
    capture = tmp_path / "responses.sse"
    capture.write_bytes(RESPONSES_API)
    outcome = await run_replay(ReplayOptions(capture=capture, provider="openai", sink="memory"))
    error = outcome.result.error
    assert outcome.result.status is StreamStatus.ERROR and error is not None
    assert error.code == UNRECOGNIZED_CODE and not error.retryable
    assert "Chat Completions" in error.message and "response.created" in error.message


async def test_only_unknown_events_is_an_error(tmp_path: Path) -> None:
    """A body of well-formed events none of which the adapter knows: the error counts them."""
    capture = tmp_path / "unknown.sse"
    capture.write_bytes(_sse([{"type": "future_event", "x": 1}, {"type": "another_one"}]))
    outcome = await run_replay(ReplayOptions(capture=capture, provider="anthropic", sink="memory"))
    error = outcome.result.error
    assert outcome.result.status is StreamStatus.ERROR and error is not None
    assert error.code == UNRECOGNIZED_CODE and "2 events" in error.message
    assert "Anthropic Messages" in error.message


async def test_a_recognised_empty_reply_stays_completed(tmp_path: Path) -> None:
    """A Chat Completions stream with a finish and no text was recognised: completed, not an error."""
    body = (
        'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
        "data: [DONE]\n\n"
    )
    capture = tmp_path / "empty_reply.sse"
    capture.write_text(body)
    outcome = await run_replay(ReplayOptions(capture=capture, provider="openai", sink="memory"))
    assert outcome.result.status is StreamStatus.COMPLETED and outcome.result.error is None


def test_reasoning_after_visible_text_is_marked_for_the_spill_guard() -> None:
    """A reasoning chunk after visible text carries ``after_text``; reasoning before text does not."""
    from rxcord.core.types import RawStreamChunk
    from rxcord.operators.reasoning.spill_guard import AFTER_TEXT
    from rxcord.providers.openai import OpenAIAdapter

    def delta(**fields: object) -> RawStreamChunk:
        return RawStreamChunk(provider="openai", data={"choices": [{"index": 0, "delta": fields}]})

    normalizer = OpenAIAdapter().new_normalizer()
    (early,) = normalizer.feed(delta(reasoning="plan"))
    assert early.thoughts and AFTER_TEXT not in early.metadata
    normalizer.feed(delta(content="  "))  # blank text is not visible text
    (blank_after,) = normalizer.feed(delta(reasoning="more"))
    assert AFTER_TEXT not in blank_after.metadata
    normalizer.feed(delta(content="Hi"))
    (late,) = normalizer.feed(delta(reasoning="again"))
    assert late.metadata[AFTER_TEXT] is True


class _Raising:
    """An inner normalizer that fails on a chunk saying so, and at the end when told to."""

    def __init__(self, fail_at_end: bool = False) -> None:
        self.fail_at_end = fail_at_end

    def feed(self, raw: RawStreamChunk) -> list[ProcessedChunk]:
        if raw.data == "boom":
            raise ValueError("cannot read this")
        return [ProcessedChunk.text(str(raw.data))]

    def finish(self) -> list[ProcessedChunk]:
        if self.fail_at_end:
            raise ValueError("cannot end")
        return []


@pytest.mark.parametrize("fail_at_end", [False, True])
def test_a_failing_inner_normalizer_is_the_normalization_error_without_a_wrapper(fail_at_end: bool) -> None:
    """Stage 03 feeds the check directly (it catches its failures): the same error chunk as ``normalize``."""
    stage = normalize(lambda: RecognitionCheck(_Raising(fail_at_end), "t", "Chat Completions"))
    transducer = stage.factory()
    assert isinstance(transducer, RecognitionCheck)  # no per-stream wrapper object
    data = ["hi"] if fail_at_end else ["hi", "boom"]
    seen: list[ProcessedChunk] = []
    reactivex.from_iterable([RawStreamChunk(provider="t", data=d) for d in data]).pipe(stage).subscribe(
        seen.append
    )
    assert seen[0].content == "hi"
    [failure] = seen[1:]
    assert failure.type is ChunkType.ERROR and failure.error is not None
    assert failure.error.code == "normalization_failed" and not failure.error.retryable
    assert "cannot" in failure.error.message
