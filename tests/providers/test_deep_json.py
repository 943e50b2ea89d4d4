"""Deeply nested JSON from a provider is the typed ``malformed_response`` error, never ``RecursionError``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.cli.main import main
from rxcord.core import safe_json
from rxcord.core.errors import MalformedJsonError, RxcordError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ChunkType, RawStreamChunk
from rxcord.operators.aio import drain
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig, stream_source
from rxcord.testing.replay import ReplayServer

CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
DEPTH = 5000


def _nested(depth: int, kind: str = "array") -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def _depth(value: Any) -> int:
    """How many arrays and objects are nested in *value* (iteratively: no recursion limit)."""
    depth, level = 0, [value]
    while True:
        containers = [item for item in level if isinstance(item, (list, dict))]
        if not containers:
            return depth
        depth += 1
        level = [
            child for item in containers for child in (item.values() if isinstance(item, dict) else item)
        ]


# -- the shared decoder --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_too_deep_is_a_typed_error(kind: str, as_bytes: bool) -> None:
    """Thousands of levels raise MalformedJsonError (an RxcordError and a ValueError), not RecursionError."""
    text = _nested(DEPTH, kind)
    with pytest.raises(MalformedJsonError) as raised:
        safe_json.loads(text.encode() if as_bytes else text)
    assert isinstance(raised.value, RxcordError) and isinstance(raised.value, ValueError)
    assert safe_json.too_deep(text) and safe_json.too_deep(text.encode())


def test_the_bound_is_exact_and_strings_do_not_count() -> None:
    """MAX_DEPTH levels decode, one more does not; brackets inside strings are text, not nesting."""
    limit = safe_json.MAX_DEPTH
    assert _depth(safe_json.loads(_nested(limit))) == limit
    with pytest.raises(MalformedJsonError):
        safe_json.loads(_nested(limit + 1))
    brackets = json.dumps({"text": "[" * 5000 + '\\"{' * 500})
    assert safe_json.loads(brackets) == json.loads(brackets)
    assert not safe_json.too_deep(brackets)


_json_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'),
    lambda children: st.lists(children) | st.dictionaries(st.text(alphabet="[]{}a"), children),
    max_leaves=40,
)


@given(_json_values, st.integers(min_value=1, max_value=12))
def test_too_deep_agrees_with_the_nesting(value: Any, limit: int) -> None:
    """``too_deep`` says exactly whether the value nests deeper than the limit (bytes and text alike)."""
    text = json.dumps(value)
    deeper = _depth(value) > limit
    assert safe_json.too_deep(text, limit) is deeper
    assert safe_json.too_deep(text.encode(), limit) is deeper


def test_invalid_json_is_the_same_typed_error() -> None:
    """Not JSON at all: the same MalformedJsonError."""
    with pytest.raises(MalformedJsonError):
        safe_json.loads(b"{not json")


# -- every provider decode -----------------------------------------------------------------------


async def _stream(
    body: bytes, *, status: int = 200, content_type: str = "text/event-stream"
) -> list[RawStreamChunk]:
    adapter = OpenAIAdapter()
    async with ReplayServer(body=body, status=status, content_type=content_type) as server:
        http = adapter.build_request(CHAT, base_url=server.base_url, api_key="k")
        return await drain(
            stream_source(
                adapter, http, config=TransportConfig(transient_retries=0, allow_private_network=True)
            )
        )


@pytest.mark.parametrize("depth", [DEPTH, safe_json.MAX_DEPTH + 1])
@pytest.mark.parametrize("kind", ["array", "object"])
async def test_a_deep_sse_event_is_malformed_response(depth: int, kind: str) -> None:
    """An SSE event nested too deeply (orjson's bound or beyond) is malformed_response, the stream goes on."""
    ok = json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": "fine"}}]})
    body = f"data: {ok}\n\ndata: {_nested(depth, kind)}\n\ndata: [DONE]\n\n".encode()
    chunks = await _stream(body)
    errors = [c.error for c in chunks if c.error is not None]
    assert [e.code for e in errors] == ["malformed_response"]
    assert chunks[0].data == json.loads(ok)


async def test_a_deep_json_body_is_malformed_response() -> None:
    """A non-streamed 200 body nested too deeply is malformed_response."""
    chunks = await _stream(_nested(DEPTH, "object").encode(), content_type="application/json")
    [chunk] = chunks
    assert chunk.error is not None and chunk.error.code == "malformed_response"


async def test_a_deep_error_body_is_still_classified() -> None:
    """An HTTP error with a body nested too deeply is classified from its status (the body kept as text)."""
    chunks = await _stream(_nested(DEPTH).encode(), status=500, content_type="application/json")
    [chunk] = chunks
    assert chunk.error is not None and chunk.error.status == 500 and chunk.error.retryable


def test_deep_tool_arguments_are_a_typed_error() -> None:
    """Tool-call arguments nested too deeply end the stream with the adapter's typed error."""
    arguments = _nested(DEPTH, "object")
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    events = [
        {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    normalizer = OpenAIAdapter().new_normalizer()
    out = [c for e in events for c in normalizer.feed(RawStreamChunk(provider="openai", data=e))]
    out += normalizer.finish()
    errors = [c.error for c in out if c.type is ChunkType.ERROR and c.error is not None]
    assert [e.code for e in errors] == ["invalid_tool_arguments"]


def test_deep_anthropic_tool_input_is_a_typed_error() -> None:
    """Anthropic's streamed tool input nested too deeply is the typed invalid_tool_input error."""
    normalizer = AnthropicAdapter().new_normalizer()
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 0}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": _nested(DEPTH, "object")},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    out = [
        c
        for e in events
        for c in normalizer.feed(RawStreamChunk(provider="anthropic", data=e, event=e["type"]))
    ]
    errors = [c.error for c in out if c.type is ChunkType.ERROR and c.error is not None]
    assert [e.code for e in errors] == ["invalid_tool_input"]


def test_rxcord_replay_reports_a_deep_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``rxcord replay`` of a deep capture exits 0 with the typed error in its JSON, no traceback."""
    capture = tmp_path / "deep.sse"
    capture.write_text(f"data: {_nested(DEPTH)}\n\ndata: [DONE]\n\n")
    code = main(["replay", str(capture), "--provider", "openai", "--sink", "memory", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    report = json.loads(out)
    assert report["status"] == "error" and "malformed" in json.dumps(report["error"])
