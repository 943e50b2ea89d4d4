"""Secrets in the text stream, through the whole chain: never in Discord, never in the result.

The transport redacts the configured secrets in each SSE event's bytes; a key the model echoes
cut across two deltas, or written with JSON ``\\u`` escapes, is whole only in the decoded
text. Stage 03's ``redact_secrets`` guard catches it there: per event and with one batch per
read alike, with a stop anywhere, in the visible text, the reasoning, tool-call arguments and
error descriptions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loguru import logger

from rxcord.compose.pipeline import Pipeline, Stage, StageContext, stage03
from rxcord.compose.run import stream_to_discord
from rxcord.core.config import Guards, StreamConfig
from rxcord.core.redact import REDACTED, Redactor
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import (
    ChunkNormalizer,
    DeliveryMode,
    ProcessedChunk,
    RawStreamChunk,
    StopKind,
    StreamStatus,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.redact_secrets import redact_secrets
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import Chunking, ReplayServer
from tests.chain_harness import run_reads
from tests.strategies import CUTS, cut

KEY = "sk-live-Q7x2Wm9Rt4Lp"
TOKEN = "MTk4NjIy.sentinel-bot-token.Xq9"
REDACTOR = Redactor.of(KEY, TOKEN)
CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
LOCAL = TransportConfig(allow_private_network=True, transient_retries=0)


def _leaks(*shown: object) -> list[str]:
    text = "\n".join(s if isinstance(s, str) else repr(s) for s in shown)
    return [secret for secret in (KEY, TOKEN) if secret in text]


# -- the chain under virtual time: per event and batched, any cut, any stop -----------------------


class _Pairs:
    """A normalizer whose raw chunks are ``(content, reasoning)`` pairs."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        content, reasoning = raw.data
        thoughts = (ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning),) if reasoning else ()
        return [ProcessedChunk.text(content, thoughts=thoughts)]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


@attrs.frozen
class _Adapter:
    """What ``run_reads`` needs of an adapter."""

    guards: Guards = Guards()
    name: str = "t"

    def new_normalizer(self) -> ChunkNormalizer:
        return _Pairs()


GUARDED = _Adapter(Guards(think_tags=True, think_start_window=64, spill=True))
"""The secret guard fused behind think_strip and spill_guard, which hold text of their own."""
REDACTING = Pipeline.default().replace(
    "redact_secrets", Stage("redact_secrets", lambda _c: redact_secrets(REDACTOR))
)
CONFIG = {
    mode: StreamConfig(
        delivery=mode, typing_interval=0, live_idle_flush=25.0, max_messages=10_000, max_flushes=10_000
    )
    for mode in DeliveryMode
}
PROSE = st.text(alphabet=st.sampled_from(list("sk-MT ab.\n")), max_size=40)


def _raws(text: str, reasoning: str, cuts: list[int], thought_cuts: list[int]) -> list[RawStreamChunk]:
    parts, thoughts = cut(text, cuts), cut(reasoning, thought_cuts)
    size = max(len(parts), len(thoughts))
    pairs = [
        (parts[i] if i < len(parts) else "", thoughts[i] if i < len(thoughts) else "") for i in range(size)
    ]
    return [RawStreamChunk(provider="t", data=pair) for pair in pairs]


def _reads(raws: list[RawStreamChunk], read_cuts: list[int]) -> list[list[RawStreamChunk]]:
    edges = [0, *sorted({c % (len(raws) + 1) for c in read_cuts}), len(raws)]
    return [raws[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _both(
    adapter: _Adapter,
    reads: list[list[RawStreamChunk]],
    mode: DeliveryMode,
    stop: tuple[StopKind, int] | None,
) -> tuple[StreamResult, list[str]]:
    """The per-event run and the batched run must agree exactly; the per-event result and messages."""
    old = run_reads(adapter, reads, CONFIG[mode], batched=False, stop=stop, pipeline=REDACTING)
    new = run_reads(adapter, reads, CONFIG[mode], batched=True, stop=stop, pipeline=REDACTING)
    assert new == old
    result = old[0]
    return result, [str(m.payload.get("content", "")) for m in result.messages]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=PROSE,
    after=PROSE,
    cuts=CUTS,
    thought_cuts=CUTS,
    read_cuts=CUTS,
    mode=st.sampled_from(list(DeliveryMode)),
)
def test_secrets_cut_anywhere_never_reach_discord_or_the_result(
    before: str,
    after: str,
    cuts: list[int],
    thought_cuts: list[int],
    read_cuts: list[int],
    mode: DeliveryMode,
) -> None:
    """The same text cut into deltas anywhere (inside a secret too) and into reads anywhere
    (a batch boundary inside a secret too): one redacted result, per event and batched."""
    text = f"{before}{KEY}{after} and {TOKEN}{before}"
    reasoning = f"the user pasted {TOKEN}{after}{KEY}"
    reads = _reads(_raws(text, reasoning, cuts, thought_cuts), read_cuts)
    result, contents = _both(_Adapter(), reads, mode, None)
    assert result.status is StreamStatus.COMPLETED
    assert (
        _leaks(result.visible_text, result.accumulated_text, result.reasoning, result.thoughts, contents)
        == []
    )
    assert result.visible_text == REDACTOR.text(text)
    assert result.reasoning == REDACTOR.text(reasoning)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=PROSE,
    cuts=CUTS,
    read_cuts=CUTS,
    mode=st.sampled_from(list(DeliveryMode)),
    kind=st.sampled_from([StopKind.USER, StopKind.INTERRUPT]),
    after=st.integers(min_value=1, max_value=30),
)
def test_a_graceful_stop_releases_the_held_tail_redacted(
    before: str, cuts: list[int], read_cuts: list[int], mode: DeliveryMode, kind: StopKind, after: int
) -> None:
    """A stop after any routed chunk (inside a secret too): what was routed is all there, once,
    redacted; the held tail (a possible start of a secret, never classified) is released at the
    stop as reasoning: never lost, never duplicated, never shown."""
    text = f"{before}{KEY} x {TOKEN}"
    raws = _raws(text, "", cuts, [])
    result, contents = _both(_Adapter(), _reads(raws, read_cuts), mode, (kind, after))
    assert _leaks(result.visible_text, result.accumulated_text, result.reasoning, contents) == []
    holdback = REDACTOR.holdback()
    released = holdback.feed("".join(raw.data[0] for raw in raws[:after]))
    if after < len(raws):  # stopped: the tail is kept as reasoning
        assert (result.visible_text, result.reasoning or "") == (released, holdback.holding())
    else:  # the stream ended first: everything is the answer
        assert (result.visible_text, result.reasoning) == (released + holdback.finish(), None)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=PROSE,
    cuts=CUTS,
    read_cuts=CUTS,
    kind=st.sampled_from([StopKind.USER, StopKind.INTERRUPT]),
    after=st.integers(min_value=1, max_value=30),
)
def test_fused_with_the_think_guards_a_stop_keeps_no_secret(
    before: str, cuts: list[int], read_cuts: list[int], kind: StopKind, after: int
) -> None:
    """Behind think_strip (a start window holding text) and spill_guard: what they hold at a stop
    surfaces as reasoning through their notes, which the guard redacts; the same either path."""
    text = f"{before}{KEY}</think>answer {TOKEN} <think>{KEY}</think> done"
    reads = _reads(_raws(text, "", cuts, []), read_cuts)
    result, contents = _both(GUARDED, reads, DeliveryMode.LIVE, (kind, after))
    assert (
        _leaks(result.visible_text, result.accumulated_text, result.reasoning, result.thoughts, contents)
        == []
    )
    complete, _ = _both(GUARDED, reads, DeliveryMode.LIVE, None)
    assert complete.visible_text == f"answer {REDACTED}  done"
    assert complete.reasoning == REDACTOR.text(f"{before}{KEY}{KEY}")


def test_the_stage_is_in_stage03_whenever_a_secret_is_known() -> None:
    """Built from the stream's redactor (fused with the normalizer); no secret, no stage."""
    adapter = CustomAdapter()
    with_secrets = stage03(adapter, redactor=REDACTOR)()
    without = stage03(adapter)()
    raw = RawStreamChunk(provider="custom", data={"choices": [{"index": 0, "delta": {"content": KEY}}]})
    assert "".join(c.content for c in [*with_secrets.feed(raw), *with_secrets.finish()]) == REDACTED
    assert "".join(c.content for c in [*without.feed(raw), *without.finish()]) == KEY


def test_removing_the_stage_is_logged() -> None:
    """The opt-out is ``Pipeline.remove("redact_secrets")``: never silent, the warning names the stage."""
    seen: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(seen.append, level="WARNING", filter="rxcord", format="{message}")
    try:
        Pipeline.default().build_routing(_context())
        assert seen == []
        Pipeline.default().remove("redact_secrets").build_routing(_context())
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    assert len(seen) == 1 and "'redact_secrets'" in seen[0]


def _context() -> StageContext:
    return StageContext(
        config=StreamConfig(),
        normalizer=_Pairs,
        stops=reactivex.never(),
        send=lambda _item: reactivex.empty(),
        redactor=REDACTOR,
    )


# -- over HTTP on 127.0.0.1: the transport, the chain and a MemorySink -----------------------------


def _sse(events: list[Any]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def _delta(**fields: Any) -> dict[str, Any]:
    return {"id": "x", "choices": [{"index": 0, "delta": fields}]}


def _escaped(value: str) -> str:
    """*value* as ``\\u`` escapes, as a JSON encoder may write it (no byte of the plain key)."""
    return "".join(f"\\u{ord(ch):04x}" for ch in value)


async def _stream(body: bytes, pipeline: Pipeline | None = None) -> tuple[StreamResult, MemorySink]:
    sink = MemorySink()
    async with ReplayServer(body=body, chunking=Chunking(size=5)) as server:
        result = await stream_to_discord(
            CustomAdapter(),
            CHAT,
            sink=sink,
            base_url=server.base_url,
            api_key=KEY,
            transport=LOCAL,
            secrets=(TOKEN,),
            pipeline=pipeline,
        )
    return result, sink


SPLIT = _sse(
    [
        _delta(content=f"your key is {KEY[:7]}"),
        _delta(content=f"{KEY[7:]} and {TOKEN[:4]}"),
        _delta(content=f"{TOKEN[4:]}!"),
    ]
)
ESCAPED = (
    f'data: {{"id": "x", "choices": [{{"index": 0, "delta": {{"content": "key {_escaped(KEY)}!"}}}}]}}\n\n'
)
ESCAPED_BODY = ESCAPED.encode() + b"data: [DONE]\n\n"


@pytest.mark.parametrize("body", [SPLIT, ESCAPED_BODY], ids=["split-across-deltas", "u-escaped"])
async def test_a_key_split_or_escaped_in_the_reply_never_reaches_discord(body: bytes) -> None:
    result, sink = await _stream(body)
    assert result.status is StreamStatus.COMPLETED
    assert _leaks(json.dumps(sink.payloads), result.visible_text, result.accumulated_text) == []
    assert REDACTED in "".join(sink.contents)


async def test_without_the_stage_the_key_does_reach_discord() -> None:
    """The control: what the guard prevents (the transport's byte scan alone misses both forms)."""
    for body in (SPLIT, ESCAPED_BODY):
        result, sink = await _stream(body, Pipeline.default().remove("redact_secrets"))
        assert KEY in _leaks(json.dumps(sink.payloads), result.visible_text)


async def test_reasoning_tool_arguments_and_errors_are_redacted() -> None:
    """The key in reasoning and in streamed tool-call arguments (each split across two deltas) and
    written with JSON escapes in an error event."""
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "look", "arguments": ""}}
    args = json.dumps({"q": KEY})
    events = [
        _delta(reasoning_content=f"they sent {KEY[:5]}"),
        _delta(reasoning_content=f"{KEY[5:]}, careful"),
        _delta(tool_calls=[call]),
        _delta(tool_calls=[{"index": 0, "function": {"arguments": args[:9]}}]),
        _delta(tool_calls=[{"index": 0, "function": {"arguments": args[9:]}}]),
    ]
    result, sink = await _stream(_sse(events))
    assert result.status is StreamStatus.FUNCTION_CALL and result.function_call is not None
    assert result.function_call.args == {"q": REDACTED}
    assert result.reasoning == f"they sent {REDACTED}, careful"
    assert _leaks(result, json.dumps(sink.payloads)) == []
    error = {"error": {"message": f"key {_escaped(KEY)} revoked", "code": 401}}
    body = f"data: {json.dumps(error).replace(chr(92) * 2, chr(92))}\n\n".encode()
    failed, sink = await _stream(body)
    assert failed.status is StreamStatus.ERROR and failed.error is not None
    assert REDACTED in failed.error.message
    assert _leaks(failed, failed.error.original_error, json.dumps(sink.payloads)) == []
