"""The contract every provider adapter keeps, checked once for all of them (not a copy per provider)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.compose.pipeline import stage03
from rxcord.core.config import Guards
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, Message, SamplerSettings, ToolSpec
from rxcord.core.types import ChunkType, ErrorType, ProcessedChunk, ProviderError, RawStreamChunk
from rxcord.providers.base import DegradationPolicy, HttpRequest, ProviderAdapter
from rxcord.providers.registry import PROVIDERS, default_registry
from tests.providers.chat_completions.test_normalizer import sse_events

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "captures"
BASE = "http://127.0.0.1:9/v1"
REQUEST = ChatRequest(
    model="some-model",
    system="Be brief.",
    messages=(Message.user("Hello?"),),
    tools=(ToolSpec(name="lookup", description="Look up a word.", parameters={"type": "object"}),),
    sampler=SamplerSettings(temperature=0.5),
)


def _adapters() -> list[ProviderAdapter]:
    registry = default_registry()
    return [registry.create(name) for name in PROVIDERS]


ADAPTERS = pytest.mark.parametrize("adapter", _adapters(), ids=PROVIDERS)


@ADAPTERS
def test_names_match_the_registry(adapter: ProviderAdapter) -> None:
    assert adapter.name in PROVIDERS
    assert default_registry().create(adapter.name).name == adapter.name


@ADAPTERS
def test_stage01_builds_a_native_request_with_the_key_only_in_headers(adapter: ProviderAdapter) -> None:
    http = adapter.build_request(REQUEST, base_url=BASE, api_key="sk-contract-key", stream=True)
    assert isinstance(http, HttpRequest)
    assert http.url.startswith("http://127.0.0.1:9")
    assert http.stream is True and http.method == "POST"
    body = json.dumps(http.body)
    assert ("sk-contract-key" not in body and "sk-contract-key" not in http.url) or adapter.name == "google"
    assert "sk-contract-key" not in repr(http)
    assert "Hello?" in body and "lookup" in body


@ADAPTERS
def test_without_a_base_url_a_custom_endpoint_is_an_input_error(adapter: ProviderAdapter) -> None:
    if adapter.name == "custom":
        with pytest.raises(InputError):
            adapter.build_request(REQUEST, base_url=None, api_key=None)
    else:
        assert adapter.build_request(REQUEST, base_url=None, api_key=None).url.startswith("https://")


@ADAPTERS
def test_declarations_are_data(adapter: ProviderAdapter) -> None:
    assert isinstance(adapter.guards, Guards)
    assert isinstance(adapter.policy, DegradationPolicy)
    # Stable values, not fresh state: a second adapter of the same name declares the same
    # guards, and the declaration cannot be changed in place by one stream's caller.
    assert default_registry().create(adapter.name).guards == adapter.guards
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        adapter.guards.think_tags = not adapter.guards.think_tags  # type: ignore[misc]


@ADAPTERS
def test_every_normalizer_is_per_stream_and_finishes(adapter: ProviderAdapter) -> None:
    first, second = adapter.new_normalizer(), adapter.new_normalizer()
    assert first is not second
    # An empty body is never a quiet success: it finishes with one typed error chunk, and
    # finishing one normalizer leaves the other untouched (it finishes the same way).
    for normalizer in (first, second):
        ends = list(normalizer.finish())
        assert [chunk.type for chunk in ends] == [ChunkType.ERROR]
        assert ends[0].error is not None and ends[0].error.code == "unrecognized_response"
    out = list(stage03(adapter)().finish())
    assert all(isinstance(chunk, ProcessedChunk) for chunk in out)
    assert [chunk.type for chunk in out] == [ChunkType.ERROR]


@ADAPTERS
def test_a_transport_error_is_a_rejection_and_an_error_chunk(adapter: ProviderAdapter) -> None:
    error = ProviderError(type=ErrorType.TIMEOUT, message="reset", retryable=True, code="reset")
    raw = RawStreamChunk(provider=adapter.name, error=error)
    assert adapter.rejection(raw) == error
    chunks = list(adapter.new_normalizer().feed(raw))
    assert [c.type for c in chunks][-1] is ChunkType.ERROR
    assert chunks[-1].error is not None and chunks[-1].error.type is ErrorType.TIMEOUT
    assert adapter.describe_error(error)


def _own_captures(adapter: ProviderAdapter) -> list[str]:
    folder = CAPTURES / adapter.name
    return sorted(p.stem for p in folder.glob("*.sse")) if folder.exists() else []


@ADAPTERS
def test_every_own_capture_ends_with_an_answer_or_a_typed_error(adapter: ProviderAdapter) -> None:
    """Nothing recognised is never a quiet success: each capture gives text, a call, or an error."""
    names = _own_captures(adapter)
    assert names, f"no captures for {adapter.name}"
    for name in names:
        transducer = stage03(adapter)()
        chunks: list[ProcessedChunk] = []
        for event in sse_events(adapter.name, name):
            chunks.extend(transducer.feed(RawStreamChunk(provider=adapter.name, data=event)))
        chunks.extend(transducer.finish())
        kinds = {c.type for c in chunks}
        visible = "".join(c.content for c in chunks if c.type is ChunkType.TEXT)
        thoughts = [t for c in chunks for t in c.thoughts]
        assert visible.strip() or thoughts or ChunkType.FUNCTION_CALL in kinds or ChunkType.ERROR in kinds, (
            f"{adapter.name}/{name}: nothing recognised"
        )


@ADAPTERS
def test_meaningful_output_commits_and_empty_chunks_do_not(adapter: ProviderAdapter) -> None:
    assert not adapter.is_meaningful(RawStreamChunk(provider=adapter.name, data={}))
    names = _own_captures(adapter)
    committed = 0
    for name in names:
        events = sse_events(adapter.name, name)
        committed += any(adapter.is_meaningful(RawStreamChunk(provider=adapter.name, data=e)) for e in events)
    assert committed >= 1


_JSON: Any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_adapters()), st.lists(_JSON, max_size=5))
def test_no_normalizer_crashes_on_arbitrary_json(adapter: ProviderAdapter, events: list[Any]) -> None:
    """Any JSON at all: chunks or a typed error, never an exception out of stage 03."""
    transducer = stage03(adapter)()
    out: list[ProcessedChunk] = []
    for event in events:
        out.extend(transducer.feed(RawStreamChunk(provider=adapter.name, data=event)))
    out.extend(transducer.finish())
    assert all(isinstance(chunk, ProcessedChunk) for chunk in out)
