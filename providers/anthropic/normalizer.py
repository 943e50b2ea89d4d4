"""Stage 03 of Anthropic Messages: the streamed events as ``ProcessedChunk``s.

``AnthropicNormalizer`` turns the named SSE events the transport decoded
(``message_start``, ``content_block_*``, ``message_delta``, ``message_stop``,
``ping``, ``error``), or a complete Message object, into ``ProcessedChunk``s.
The request body is ``rxcord.providers.anthropic.request``; the adapter,
``rxcord.providers.anthropic.adapter``.

Stage 01 (``AnthropicAdapter.build_request``) turns a ``ChatRequest`` into a
Messages API body; stage 03 (``AnthropicNormalizer``) turns the named SSE
events the transport decoded (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``, ``ping``, ``error``) into
``ProcessedChunk``s.

Thinking replay
---------------
Claude signs each thinking block; a tool-use turn must be sent back with its
thinking blocks, unchanged, before its ``tool_use`` blocks. The normalizer
emits a block's text as ``ThoughtKind.RAW`` entries (one per delta) and its
signature as one ``ThoughtKind.SIGNATURE`` entry at the end of the block;
``redacted_thinking`` becomes a ``ThoughtKind.REDACTED`` entry whose
``signature`` holds the encrypted ``data``. Stage 01 rebuilds the blocks from
an assistant ``Message.thoughts`` by one rule: RAW texts accumulate until a
SIGNATURE entry (or a RAW entry carrying a signature) closes the block; a
REDACTED entry is a block of its own; RAW text never closed by a signature
cannot be replayed and is dropped.

Usage
-----
Anthropic reports usage in ``message_start`` (input and cache counts, a
first output count) and again in ``message_delta`` (output, and on newer
models the input counts again). Both are cumulative snapshots, so each field
takes its *last* report; nothing is summed across events. Total input is the
sum of uncached input, cache reads and cache writes (``rxcord.providers.usage``).

What is held back
-----------------
A ``tool_use`` block becomes a ``FunctionCall`` at its ``content_block_stop``
but is released only after the ``message_delta`` that carries the stop
reason and final usage (or at the end of the body), right after the
terminal ``done`` chunk: the final usage is then recorded before control
passes to the tool loop, and text of the same message always comes first.
An error is preceded by a ``done`` chunk with the usage reported so far,
because the orchestrator ends the stream at an error.

A message that ends cleanly (``message_stop``) with no stop reason before it ends
with ``stop``, noted in ``raw_finish_reason`` (``NO_STOP_REASON``).
"""

from __future__ import annotations

__all__ = ("NO_STOP_REASON", "PROVIDER", "AnthropicNormalizer")

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
from loguru import logger

from rxcord.core import safe_json
from rxcord.core.types import (
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.providers.errors import classify_stream_error, content_blocked
from rxcord.providers.usage import from_anthropic

_log = logger.bind(stage="03-normalize", provider="anthropic")

PROVIDER: Final = "anthropic"
"""Provider identity."""

NO_STOP_REASON: Final = "(none: ended at message_stop)"
"""``raw_finish_reason`` of a message that ended cleanly without a stop reason (the result's note)."""

_STOP_REASONS: Final[Mapping[str, FinishReason]] = {
    NO_STOP_REASON: FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}

_USAGE_FIELDS: Final = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)


@attrs.define
class _Block:
    kind: str
    tool_id: str | None = None
    name: str = ""
    json_parts: list[str] = attrs.field(factory=list)
    initial_input: Mapping[str, Any] = attrs.field(factory=dict)


def _thought(entry: ThoughtLogEntry) -> ProcessedChunk:
    return ProcessedChunk.text("", thoughts=(entry,))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@attrs.define
class AnthropicNormalizer:
    """Stage 03 for one Anthropic stream (see the module docstring for what is held back and why)."""

    _blocks: dict[int, _Block] = attrs.field(factory=dict, init=False)
    """Open content blocks by index."""
    _usage_fields: dict[str, int] = attrs.field(factory=dict, init=False)
    """Last report of each usage field."""
    _usage_sent: Usage | None = attrs.field(default=None, init=False)
    _started: bool = attrs.field(default=False, init=False)
    """``message_start`` came: a ``message_stop`` then ends a message (not a stray event)."""
    _finished: bool = attrs.field(default=False, init=False)
    """A stop reason (or an error) ended the message: ``message_stop`` adds nothing."""
    _calls: list[FunctionCall] = attrs.field(factory=list, init=False)
    """Completed tool calls held until the message's end."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize one decoded SSE event or a complete Message object."""
        if raw.error is not None:
            return self._fail(raw.error)
        data = raw.data
        if not isinstance(data, Mapping):
            _log.debug("filtered an unknown chunk: {data!r:.500}", data=data)
            return []
        kind = data.get("type", raw.event)
        if kind == "message" or (raw.metadata.get("complete") and kind != "error"):
            return self._complete(data)
        if kind == "content_block_delta":
            return self._delta(data)
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_stop":
            return self._block_stop(data)
        if kind == "message_start":
            self._started = True
            message = data.get("message")
            if isinstance(message, Mapping):
                self._report(message.get("usage"))
            return []
        if kind == "message_delta":
            self._report(data.get("usage"))
            delta = data.get("delta")
            reason = delta.get("stop_reason") if isinstance(delta, Mapping) else None
            return self._stop(reason) if isinstance(reason, str) else self._pending_usage()
        if kind == "error":
            return self._fail(classify_stream_error(data, provider=PROVIDER))
        if kind == "message_stop":
            # The end marker with no stop reason before it: a clean end, taken as ``stop`` (noted).
            return self._stop(NO_STOP_REASON) if self._started and not self._finished else []
        if kind == "ping":
            return []
        _log.debug("filtered an unknown event {kind}: {data!r:.500}", kind=kind, data=data)
        return []

    def finish(self) -> Sequence[ProcessedChunk]:
        """The body ended: release held calls and a usage report not sent yet."""
        out = self._pending_usage()
        out.extend(self._release_calls())
        return out

    # -- events

    def _block_start(self, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, Mapping):
            _log.debug("filtered a malformed content_block_start: {data!r:.500}", data=data)
            return []
        kind = str(block.get("type", ""))
        entry = _Block(kind=kind)
        self._blocks[index] = entry
        if kind in ("tool_use", "server_tool_use"):
            tool_id = block.get("id")
            entry.tool_id = tool_id if isinstance(tool_id, str) else None
            entry.name = str(block.get("name", ""))
            initial = block.get("input")
            if isinstance(initial, Mapping):
                entry.initial_input = initial
            return []
        if kind == "text":
            text = block.get("text")
            return [ProcessedChunk.text(text)] if isinstance(text, str) and text else []
        if kind == "thinking":
            thought = block.get("thinking")
            if isinstance(thought, str) and thought:
                return [_thought(ThoughtLogEntry(kind=ThoughtKind.RAW, text=thought))]
            return []
        if kind == "redacted_thinking":
            redacted = block.get("data")
            if isinstance(redacted, str) and redacted:
                return [_thought(ThoughtLogEntry(kind=ThoughtKind.REDACTED, signature=redacted))]
            return []
        _log.debug("filtered an unsupported content block {kind}", kind=kind)
        return []

    def _delta(self, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [ProcessedChunk.text(text)] if isinstance(text, str) and text else []
        if kind == "thinking_delta":
            thought = delta.get("thinking")
            if isinstance(thought, str) and thought:
                return [_thought(ThoughtLogEntry(kind=ThoughtKind.RAW, text=thought))]
            return []
        if kind == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str) and signature:
                return [_thought(ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=signature))]
            return []
        if kind == "input_json_delta":
            block = self._blocks.get(data.get("index", -1))
            partial = delta.get("partial_json")
            if block is not None and isinstance(partial, str):
                block.json_parts.append(partial)
            return []
        _log.debug("filtered an unsupported delta {kind}", kind=kind)
        return []

    def _block_stop(self, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        block = self._blocks.pop(data.get("index", -1), None)
        if block is None or block.kind != "tool_use":
            return []
        text = "".join(block.json_parts)
        if not text.strip():
            self._calls.append(
                FunctionCall(name=block.name, args=dict(block.initial_input), id=block.tool_id)
            )
            return []
        try:
            args = safe_json.loads(text)
        except ValueError as exc:
            args = exc
        if not isinstance(args, dict):
            problem = f"not valid JSON ({args})" if isinstance(args, ValueError) else "not a JSON object"
            error = ProviderError(
                type=ErrorType.API_ERROR,
                message=f"Anthropic sent arguments for tool {block.name!r} that are {problem}: {text[:200]}",
                retryable=True,
                code="invalid_tool_input",
                original_error=text,
            )
            return self._fail(error)
        self._calls.append(FunctionCall(name=block.name, args=args, id=block.tool_id))
        return []

    def _stop(self, reason: str) -> list[ProcessedChunk]:
        self._finished = True
        finish = _STOP_REASONS.get(reason)
        if finish is None:
            _log.debug("stop reason {reason} taken as a normal stop", reason=reason)
            finish = FinishReason.STOP
        if finish is FinishReason.STOP and self._calls:
            finish = FinishReason.TOOL_CALLS
        self._usage_sent = self._usage
        done = ProcessedChunk.done(finish_reason=finish, raw_finish_reason=reason, usage=self._usage)
        if reason == "refusal":
            error = content_blocked("Claude declined to answer (stop reason: refusal)", code=reason)
            return [done, *self._fail(error)]
        return [done, *self._release_calls()]

    def _complete(self, message: Mapping[str, Any]) -> list[ProcessedChunk]:
        """A non-streamed Message: the same chunks its stream would have produced."""
        self._report(message.get("usage"))
        out: list[ProcessedChunk] = []
        content = message.get("content")
        for index, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    out.append(ProcessedChunk.text(text))
            elif kind == "thinking":
                thoughts = []
                thought = block.get("thinking")
                if isinstance(thought, str) and thought:
                    thoughts.append(ThoughtLogEntry(kind=ThoughtKind.RAW, text=thought))
                signature = block.get("signature")
                if isinstance(signature, str) and signature:
                    thoughts.append(ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=signature))
                if thoughts:
                    out.append(ProcessedChunk.text("", thoughts=tuple(thoughts)))
            elif kind in ("redacted_thinking", "tool_use"):
                out.extend(self._block_start({"index": index, "content_block": block}))
                out.extend(self._block_stop({"index": index}))
            else:
                _log.debug("filtered an unsupported content block {kind}", kind=kind)
        reason = message.get("stop_reason")
        out.extend(self._stop(reason) if isinstance(reason, str) else self.finish())
        return out

    # -- usage and terminal chunks

    def _report(self, usage: object) -> None:
        if not isinstance(usage, Mapping):
            return
        for field in _USAGE_FIELDS:
            value = _int(usage.get(field))
            if value is not None:
                self._usage_fields[field] = value

    @property
    def _usage(self) -> Usage | None:
        fields = self._usage_fields
        if not fields:
            return None
        return from_anthropic(
            fields.get("input_tokens", 0),
            fields.get("cache_read_input_tokens"),
            fields.get("cache_creation_input_tokens"),
            fields.get("output_tokens", 0),
        )

    def _pending_usage(self) -> list[ProcessedChunk]:
        usage = self._usage
        if usage is None or usage == self._usage_sent:
            return []
        self._usage_sent = usage
        return [ProcessedChunk.done(usage=usage)]

    def _fail(self, error: ProviderError) -> list[ProcessedChunk]:
        self._finished = True
        self._calls.clear()
        return [*self._pending_usage(), ProcessedChunk.fail(error)]

    def _release_calls(self) -> list[ProcessedChunk]:
        calls, self._calls = self._calls, []
        return [ProcessedChunk.call(call) for call in calls]
