"""The end-of-stream check asked of every chunk: counted work, and the same answer for any Mapping."""

from __future__ import annotations

import cProfile
import pstats
from types import MappingProxyType

from rxcord.core.types import RawStreamChunk
from rxcord.providers.openai import OpenAIAdapter


def _chunk(data: object) -> RawStreamChunk:
    return RawStreamChunk(provider="openai", data=data)


def test_decoded_chunks_cost_no_abc_check_and_four_calls_each() -> None:
    adapter = OpenAIAdapter()
    chunks = [_chunk({"choices": [{"index": 0, "delta": {"content": "hi"}}]}) for _ in range(1_000)]
    profile = cProfile.Profile()
    profile.enable()
    assert adapter.ends_stream(chunks) is False
    profile.disable()
    calls = {key[2]: entry[1] for key, entry in pstats.Stats(profile).stats.items()}  # type: ignore[attr-defined]
    assert "__instancecheck__" not in calls  # dicts are recognised by type, not through the ABC
    assert calls["_finish_reason_seen"] == 1_000
    # The check, two gets, one isinstance: before, also two ABC calls and a generator step (7).
    assert sum(calls.values()) <= 4 * 1_000 + 10


def test_any_mapping_still_ends_the_stream() -> None:
    adapter = OpenAIAdapter()
    finished = MappingProxyType({"choices": [MappingProxyType({"finish_reason": "stop"})]})
    assert adapter.ends_stream([_chunk({"choices": []}), _chunk(finished)]) is True
    assert adapter.ends_stream([_chunk({"choices": [{"finish_reason": None}]})]) is False
    assert adapter.ends_stream([_chunk("not json"), _chunk({"choices": "x"})]) is False
