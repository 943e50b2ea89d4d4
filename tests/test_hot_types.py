"""The per-chunk types' hand-written initialisers agree with their attrs fields (issue 18).

(``StreamState`` is built by the scan's positional builder, ``rxcord.operators.accumulate._state``.)

``RawStreamChunk`` and ``ProcessedChunk`` are attrs frozen classes with ``init=False`` and an
``__init__`` of their own that sets the slots directly (cheaper than attrs' generated one). These
tests pin it to the fields: the same keyword-only parameters, the same defaults, every field set,
the validator run, and the frozen, equality and ``attrs.evolve`` behaviour unchanged.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.core.state import StreamState
from rxcord.core.types import (
    ChunkType,
    ErrorType,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    StreamStatus,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
    raw_chunk,
)

# The stage module by path: the façade's ``accumulate`` is the operator, not the module.
accumulate = importlib.import_module("rxcord.operators.accumulate")

HOT = (RawStreamChunk, ProcessedChunk)


@pytest.mark.parametrize("cls", HOT, ids=lambda c: c.__name__)
def test_the_signature_is_the_one_attrs_would_generate(cls: type) -> None:
    params = inspect.signature(cls.__init__).parameters
    names = [name for name in params if name != "self"]
    fields = attrs.fields(cls)
    assert names == [field.name for field in fields]
    for field in fields:
        param = params[field.name]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        if field.default is attrs.NOTHING:
            assert param.default is inspect.Parameter.empty
        elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            assert param.default is None  # None stands for a fresh factory value
            made = cls(**_required(cls))
            assert getattr(made, field.name) == field.default.factory()
            assert getattr(made, field.name) is not getattr(cls(**_required(cls)), field.name)
        else:
            assert param.default == field.default


def _required(cls: type) -> dict[str, Any]:
    return {"provider": "p"} if cls is RawStreamChunk else {"type": ChunkType.TEXT}


ERROR = ProviderError(type=ErrorType.API_ERROR, message="m", retryable=False)
CALL = FunctionCall(name="f", args={"a": 1})
VALUES = {
    RawStreamChunk: {"provider": "x", "data": {"k": [1]}, "event": "e", "error": ERROR, "metadata": {"s": 1}},
    ProcessedChunk: {
        "type": ChunkType.FUNCTION_CALL,
        "content": "c",
        "function_call": CALL,
        "error": ERROR,
        "thoughts": (ThoughtLogEntry(kind=ThoughtKind.RAW, text="t"),),
        "metadata": {"finish_reason": "stop"},
        "serving_provider": "sp",
        "usage": Usage(input_tokens=1, output_tokens=2),
    },
}


@pytest.mark.parametrize("cls", HOT, ids=lambda c: c.__name__)
def test_every_field_is_set_frozen_and_evolvable(cls: type) -> None:
    values = VALUES[cls]
    assert set(values) == {field.name for field in attrs.fields(cls)}
    made = cls(**values)
    assert {name: getattr(made, name) for name in values} == values
    assert made == cls(**values)
    for name in ("metadata", "error"):
        changed = attrs.evolve(made, **{name: None if name == "error" else {"other": 2}})
        assert changed != made
        others = [n for n in values if n != name]
        assert [getattr(changed, n) for n in others] == [values[n] for n in others]
    for name in values:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(made, name, None)
    assert repr(made).startswith(f"{cls.__name__}(")


@given(content=st.text(max_size=20), serving=st.none() | st.text(max_size=5))
def test_evolve_and_equality_follow_the_fields(content: str, serving: str | None) -> None:
    chunk = ProcessedChunk.text(content, serving_provider=serving)
    other = attrs.evolve(chunk, content=content + "!")
    assert other.content == content + "!" and other.serving_provider == serving
    assert other != chunk and attrs.evolve(other, content=content) == chunk
    assert attrs.asdict(chunk)["content"] == content


def test_the_validator_still_runs() -> None:
    with pytest.raises(ValueError, match="function_call"):
        ProcessedChunk(type=ChunkType.FUNCTION_CALL)
    with pytest.raises(ValueError, match="error"):
        ProcessedChunk(type=ChunkType.ERROR)
    with pytest.raises(ValueError, match="error"):
        attrs.evolve(ProcessedChunk.fail(ERROR), error=None)
    assert ProcessedChunk.call(CALL).function_call == CALL


@given(
    content=st.text(max_size=20),
    serving=st.none() | st.text(max_size=5),
    thought=st.none() | st.text(min_size=1, max_size=5),
)
def test_the_text_shortcut_builds_what_the_constructor_builds(
    content: str, serving: str | None, thought: str | None
) -> None:
    """``ProcessedChunk.text`` skips ``__init__``'s keyword binding; the value is the constructor's."""
    thoughts = (ThoughtLogEntry(kind=ThoughtKind.RAW, text=thought),) if thought else ()
    fast = ProcessedChunk.text(content, thoughts=thoughts, serving_provider=serving)
    slow = ProcessedChunk(type=ChunkType.TEXT, content=content, thoughts=thoughts, serving_provider=serving)
    assert fast == slow and repr(fast) == repr(slow) and type(fast) is ProcessedChunk
    assert {f.name: getattr(fast, f.name) for f in attrs.fields(ProcessedChunk)} == attrs.asdict(
        slow, recurse=False
    )
    assert fast.metadata is not ProcessedChunk.text(content).metadata  # a fresh dict each
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.content = "x"  # type: ignore[misc]


def test_the_text_shortcut_respects_a_subclass() -> None:
    @attrs.frozen(kw_only=True, init=False)
    class Marked(ProcessedChunk):
        pass

    assert type(Marked.text("a")) is Marked and Marked.text("a").content == "a"


@given(
    data=st.none() | st.dictionaries(st.text(max_size=3), st.integers()),
    event=st.none() | st.text(max_size=5),
)
def test_raw_chunk_builds_what_the_constructor_builds(data: object, event: str | None) -> None:
    meta = {"status": 200}
    fast = raw_chunk("openai", data, event, meta)
    assert fast == RawStreamChunk(provider="openai", data=data, event=event, metadata=meta)
    assert fast.error is None and fast.metadata is meta and type(fast) is RawStreamChunk


def test_the_scan_builds_stream_states_through_the_slots_while_the_fields_allow() -> None:
    """``accumulate``'s positional builder is used only while ``StreamState`` has exactly its fields."""
    assert tuple(f.name for f in attrs.fields(StreamState)) == accumulate._FIELDS
    assert accumulate._state.__name__ == "built"


@given(
    index=st.integers(0, 10**6),
    delta=st.text(max_size=10),
    serving=st.none() | st.text(max_size=4),
    request_id=st.none() | st.text(max_size=4),
    status=st.sampled_from(list(StreamStatus)),
)
def test_the_scan_builder_builds_what_the_constructor_builds(
    index: int, delta: str, serving: str | None, request_id: str | None, status: StreamStatus
) -> None:
    values = {
        "status": status,
        "index": index,
        "delta": delta,
        "thoughts": (ThoughtLogEntry(kind=ThoughtKind.RAW, text="t"),),
        "function_call": CALL,
        "error": ERROR,
        "stop": None,
        "finish_reason": None,
        "raw_finish_reason": "stop",
        "usage": Usage(input_tokens=1, output_tokens=2),
        "serving_provider": serving,
        "request_id": request_id,
    }
    built = accumulate._state(*(values[name] for name in accumulate._FIELDS))
    assert built == StreamState(**values) and repr(built) == repr(StreamState(**values))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.delta = "x"  # type: ignore[misc]


def test_the_scan_builder_falls_back_to_the_constructor_when_the_fields_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(accumulate, "_FIELDS", (*accumulate._FIELDS, "extra"))
    builder = accumulate._make_state_builder()
    assert builder.__name__ == "constructed"
