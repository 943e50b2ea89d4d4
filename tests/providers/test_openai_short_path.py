"""The Chat Completions normalizer's short path for plain content deltas against its general path.

``ChatCompletionsNormalizer._plain_delta`` handles the commonest chunk (one
choice whose delta only adds content) without the general machinery; it
must give exactly what the general path gives. Every capture of the
OpenAI-compatible providers is fed both ways, whole and cut into random
chunkings of events, and so are random streams of mixed deltas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import ChunkNormalizer, ProcessedChunk, RawStreamChunk
from rxcord.providers.chat_completions.normalizer import ChatCompletionsNormalizer
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.unrecognized import RecognitionCheck
from tests.providers.chat_completions.test_normalizer import CAPTURES, raws, run, sse_events

NORMALIZERS: dict[str, Callable[[], ChunkNormalizer]] = {
    "openai": OpenAIAdapter().new_normalizer,
    "openrouter": OpenRouterAdapter().new_normalizer,
    "nvidia": NvidiaAdapter().new_normalizer,
    "custom": CustomAdapter().new_normalizer,
    "custom verbatim tools": CustomAdapter(
        tool_names=frozenset({"get_weather", "search"}), verbatim_tool_calling=True
    ).new_normalizer,
    "custom template think": CustomAdapter(think_opened_by_template=True).new_normalizer,
}

CASES = [
    (variant, path.stem)
    for variant in NORMALIZERS
    for path in sorted((CAPTURES / variant.split()[0]).glob("*.sse"))
]


def general_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ChatCompletionsNormalizer, "_plain_delta", lambda self, data: None)


def both_ways(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], ChunkNormalizer], chunks: list[RawStreamChunk]
) -> tuple[list[ProcessedChunk], list[ProcessedChunk]]:
    short = run(make(), chunks)
    with monkeypatch.context() as patch:
        general_only(patch)
        general = run(make(), chunks)
    return short, general


@pytest.mark.parametrize(("provider", "name"), CASES)
def test_every_capture_normalizes_the_same_both_ways(
    monkeypatch: pytest.MonkeyPatch, provider: str, name: str
) -> None:
    """Chunk for chunk, the short path changes nothing on any capture."""
    folder = provider.split(maxsplit=1)[0]
    chunks = raws(folder, sse_events(folder, name))
    short, general = both_ways(monkeypatch, NORMALIZERS[provider], chunks)
    assert short == general


def test_the_short_path_is_taken_for_plain_deltas() -> None:
    """A plain content delta is handled by the short path (not left to the general one)."""
    checked = OpenAIAdapter().new_normalizer()
    assert isinstance(checked, RecognitionCheck)  # nothing recognised is an error (issue 14)
    normalizer = checked.inner
    assert isinstance(normalizer, ChatCompletionsNormalizer)
    data = {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]}
    # The normalizer holds nothing (the think-tag window is a later stage): the text comes out at once.
    (chunk,) = normalizer._plain_delta(data) or []
    assert chunk.content == "Hello"
    long = {"choices": [{"index": 0, "delta": {"content": " world. " * 40}, "finish_reason": None}]}
    released = normalizer._plain_delta(long)
    assert released is not None and "".join(c.content for c in released) == " world. " * 40
    assert normalizer._plain_delta({**data, "usage": {"prompt_tokens": 1}}) is None
    assert normalizer._plain_delta({**data, "provider": "Fireworks"}) is None


_CONTENT = st.lists(
    st.sampled_from(["Hi", " there", "<think>", "</think>", "<thi", "nk>", "x", "\n\n", "é", "[TOOL"]),
    max_size=3,
).map("".join)
_CALL = [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]
_EXTRA_DELTA = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "reasoning": st.sampled_from([None, "plan", "why", "", {"text": "odd"}]),
        "reasoning_content": st.sampled_from([None, "why", "plan", ""]),
        "reasoning_details": st.sampled_from([None, [{"type": "reasoning.text", "text": "d", "index": 0}]]),
        "tool_calls": st.one_of(st.none(), st.just(_CALL)),
        "refusal": st.none(),
    },
)


@st.composite
def event(draw: st.DrawFn) -> dict[str, Any]:
    delta: dict[str, Any] = {**draw(_EXTRA_DELTA), "content": draw(st.one_of(st.none(), _CONTENT))}
    choice: dict[str, Any] = {
        "index": 0,
        "delta": delta,
        "finish_reason": draw(st.sampled_from([None, None, None, "stop"])),
    }
    data: dict[str, Any] = {"object": "chat.completion.chunk", "choices": [choice]}
    if draw(st.booleans()):
        data["provider"] = draw(st.sampled_from(["", "Fireworks", None]))
    if draw(st.integers(0, 5)) == 0:
        data["usage"] = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    return data


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(NORMALIZERS)), st.lists(event(), max_size=12))
def test_random_streams_normalize_the_same_both_ways(provider: str, events: list[dict[str, Any]]) -> None:
    """Mixed deltas (reasoning, tool calls, usage, finishes, think tags, providers) give the same chunks."""
    chunks = raws(provider.split(maxsplit=1)[0], events)
    with pytest.MonkeyPatch.context() as monkeypatch:
        short, general = both_ways(monkeypatch, NORMALIZERS[provider], chunks)
    assert short == general
