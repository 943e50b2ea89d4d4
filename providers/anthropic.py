"""Anthropic Messages (streaming): request building and chunk normalization.

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

__all__ = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_THINKING_BUDGETS",
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "NO_STOP_REASON",
    "AnthropicAdapter",
    "AnthropicNormalizer",
    "build_anthropic_body",
    "thinking_blocks",
)

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
from loguru import logger

from rxcord.core import safe_json
from rxcord.core.config import Guards
from rxcord.core.request import ChatRequest, ImagePart, Message, Role, TextPart
from rxcord.core.types import (
    ChunkNormalizer,
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
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.errors import classify_stream_error, content_blocked, describe_error
from rxcord.providers.unrecognized import RecognitionCheck
from rxcord.providers.usage import from_anthropic

_log = logger.bind(stage="03-normalize", provider="anthropic")

PROVIDER: Final = "anthropic"

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""

DEFAULT_MAX_TOKENS: Final = 4096
"""``max_tokens`` is required by the API; this is the answer room when the sampler sets none."""

MIN_THINKING_BUDGET: Final = 1024
"""The API's smallest ``budget_tokens``."""

ANTHROPIC_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
"""``SamplerSettings.reasoning_effort`` to ``thinking.budget_tokens`` (a digit string is taken as is).

``none``/``off``/``0`` leave thinking disabled.
"""

_NO_THINKING: Final = frozenset({"none", "off", "0", "disabled"})

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
"""The public API base URL (used when no base URL is given)."""

_POLICY: Final = DegradationPolicy(
    enabled=False,
    mandatory_body_keys=frozenset(
        {"model", "messages", "max_tokens", "stream", "system", "tools", "thinking"}
    ),
)

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

_TOOL_ID_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")


# --------------------------------------------------------------------------- stage 01


def _thinking_budget(effort: str | None) -> int | None:
    """The thinking budget *effort* asks for, or ``None`` for no thinking."""
    if effort is None:
        return None
    key = effort.strip().lower()
    if key in _NO_THINKING:
        return None
    if key.isdigit():
        return max(int(key), MIN_THINKING_BUDGET)
    budget = ANTHROPIC_THINKING_BUDGETS.get(key)
    if budget is None:
        _log.debug("unknown reasoning effort {effort!r}: using the medium budget", effort=effort)
        budget = ANTHROPIC_THINKING_BUDGETS["medium"]
    return budget


def _image_block(image: ImagePart) -> dict[str, Any] | None:
    if image.data_b64 is not None:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data_b64},
        }
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    return None


def _content_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in message.content:
        if isinstance(item, TextPart):
            if item.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": item.text})
        else:
            image = _image_block(item)
            if image is not None:
                blocks.append(image)
    return blocks


def thinking_blocks(thoughts: Iterable[ThoughtLogEntry]) -> list[dict[str, Any]]:
    """Rebuild signed ``thinking`` and ``redacted_thinking`` blocks from thought-log entries.

    See the module docstring for the grouping rule.
    """
    blocks: list[dict[str, Any]] = []
    pending: list[str] = []

    def close(signature: str) -> None:
        blocks.append({"type": "thinking", "thinking": "".join(pending), "signature": signature})
        pending.clear()

    def drop_unsigned() -> None:
        if pending:
            _log.debug(
                "dropped {n} chars of unsigned thinking: they cannot be replayed", n=len("".join(pending))
            )
            pending.clear()

    for entry in thoughts:
        if entry.kind is ThoughtKind.RAW:
            pending.append(entry.text)
            if entry.signature:
                close(entry.signature)
        elif entry.kind is ThoughtKind.SIGNATURE:
            if entry.signature:
                close(entry.signature)
        elif entry.kind is ThoughtKind.REDACTED:
            drop_unsigned()
            data = entry.signature or entry.text
            if data:
                blocks.append({"type": "redacted_thinking", "data": data})
    drop_unsigned()
    return blocks


def _tool_id(call_id: str | None, fallback: str) -> str:
    # Ids from other providers may hold characters Anthropic rejects (^[a-zA-Z0-9_-]+$).
    return _TOOL_ID_UNSAFE.sub("_", call_id) if call_id else fallback


def _tool_result(message: Message, pending: list[tuple[str, str]]) -> dict[str, Any]:
    tool_id = _tool_id(message.tool_call_id, "") if message.tool_call_id else None
    if tool_id is None:
        # No id: answer the earliest unanswered call of that name (or the earliest one).
        match = next((p for p in pending if message.name is None or p[1] == message.name), None)
        tool_id = match[0] if match is not None else "toolu_unknown"
    pending[:] = [p for p in pending if p[0] != tool_id]
    blocks = _content_blocks(message)
    has_image = any(block["type"] == "image" for block in blocks)
    content: str | list[dict[str, Any]] = blocks if has_image else message.text
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def _messages(messages: Iterable[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    """Anthropic ``messages`` and the texts of in-history system messages."""
    out: list[dict[str, Any]] = []
    system: list[str] = []
    pending: list[tuple[str, str]] = []

    def add_user(blocks: list[dict[str, Any]]) -> None:
        # Tool results of one turn share a user message (they must lead it).
        if (
            out
            and out[-1]["role"] == "user"
            and out[-1]["content"][:1]
            and (out[-1]["content"][0]["type"] == "tool_result")
        ):
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "user", "content": blocks})

    for turn, message in enumerate(messages):
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
        elif message.role is Role.TOOL:
            add_user([_tool_result(message, pending)])
        elif message.role is Role.ASSISTANT:
            blocks = thinking_blocks(message.thoughts)
            blocks.extend(block for block in _content_blocks(message) if block["type"] == "text")
            pending = []
            for index, call in enumerate(message.tool_calls):
                tool_id = _tool_id(call.id, f"toolu_rx_{turn}_{index}")
                pending.append((tool_id, call.name))
                blocks.append(
                    {"type": "tool_use", "id": tool_id, "name": call.name, "input": dict(call.args)}
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            else:
                _log.debug("skipping an empty assistant turn (the API rejects empty content)")
        else:
            blocks = _content_blocks(message)
            if blocks:
                add_user(blocks)
            else:
                _log.debug("skipping an empty user turn (the API rejects empty content)")
    return out, system


def build_anthropic_body(request: ChatRequest, *, stream: bool = True) -> dict[str, Any]:
    """The Messages API JSON body for *request*.

    ``max_tokens`` is required: the sampler's ``max_tokens`` (default
    ``DEFAULT_MAX_TOKENS``) is the answer room. With thinking, the API
    counts thinking inside ``max_tokens`` and wants ``budget_tokens`` below
    it, so the budget is added on top. Thinking is incompatible with
    ``temperature``, ``top_k``, a ``top_p`` under 0.95 and an assistant
    prefill: those are left out (with a debug log) instead of failing.

    Args:
        request: The provider-neutral request.
        stream: Ask for a streamed (SSE) response.

    Returns:
        A JSON-ready dict, ``request.extra`` merged on top (one level deep for objects).
    """
    sampler = request.sampler
    messages, system = _messages(request.messages)
    budget = _thinking_budget(sampler.reasoning_effort)
    room = sampler.max_tokens if sampler.max_tokens is not None else DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": room + (budget or 0),
    }
    texts = [text for text in (request.system, *system) if text]
    if texts:
        body["system"] = "\n\n".join(texts)
    if request.prefill:
        prefill = request.prefill.rstrip()  # the API rejects a final assistant turn ending in whitespace
        if budget is not None:
            _log.debug("assistant prefill left out: it is incompatible with extended thinking")
        elif prefill:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": prefill}]})
    body["messages"] = messages
    if request.tools:
        tools = []
        for tool in request.tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["input_schema"] = dict(tool.parameters)
            tools.append(spec)
        body["tools"] = tools
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if budget is None:
        if sampler.temperature is not None:
            body["temperature"] = sampler.temperature
        if sampler.top_k is not None:
            body["top_k"] = sampler.top_k
        if sampler.top_p is not None:
            body["top_p"] = sampler.top_p
    else:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if sampler.temperature is not None or sampler.top_k is not None:
            _log.debug("temperature/top_k left out: incompatible with extended thinking")
        if sampler.top_p is not None:
            if 0.95 <= sampler.top_p <= 1.0:
                body["top_p"] = sampler.top_p
            else:
                _log.debug("top_p {top_p} left out: thinking allows 0.95 to 1 only", top_p=sampler.top_p)
    if stream:
        body["stream"] = True
    for key, value in request.extra.items():
        current = body.get(key)
        body[key] = (
            {**current, **value} if isinstance(current, dict) and isinstance(value, Mapping) else value
        )
    return body


# --------------------------------------------------------------------------- stage 03


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


# --------------------------------------------------------------------------- adapter


def _meaningful(data: Mapping[str, Any]) -> bool:
    kind = data.get("type")
    if kind == "content_block_delta":
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            return False
        return any(bool(delta.get(key)) for key in ("text", "thinking", "signature", "partial_json"))
    if kind == "content_block_start":
        block = data.get("content_block")
        if not isinstance(block, Mapping):
            return False
        return block.get("type") in ("tool_use", "redacted_thinking") or bool(
            block.get("text") or block.get("thinking")
        )
    if kind == "message_start":
        message = data.get("message")
        return isinstance(message, Mapping) and isinstance(message.get("usage"), Mapping)
    if kind == "message_delta":
        return isinstance(data.get("usage"), Mapping)
    return kind == "message"


@attrs.frozen(kw_only=True)
class AnthropicAdapter:
    """Anthropic's Messages API (``/v1/messages``, ``anthropic-version: 2023-06-01``)."""

    @property
    def name(self) -> str:
        """``anthropic``."""
        return PROVIDER

    @property
    def default_base_url(self) -> str:
        """The public API; another origin is a custom endpoint (``rxcord.providers.ssrf``)."""
        return ANTHROPIC_BASE_URL

    @property
    def policy(self) -> DegradationPolicy:
        """Degradation is disabled: Anthropic's 400s name real request bugs, not optional fields."""
        return _POLICY

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """POST ``{base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``."""
        headers = {"Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return HttpRequest(
            url=f"{(base_url or ANTHROPIC_BASE_URL).rstrip('/')}/v1/messages",
            body=build_anthropic_body(request, stream=stream),
            headers=headers,
            stream=stream,
        )

    def sends_prefill(self, request: ChatRequest) -> bool:
        """Whether ``build_request`` sends ``request.prefill`` (never with extended thinking).

        The pipeline shows a prefill as the reply's start only when it was sent: a prefill
        left out is not the model's text (``rxcord.compose.run.stream_to_discord``).
        """
        budget = _thinking_budget(request.sampler.reasoning_effort)
        return bool(request.prefill and request.prefill.rstrip()) and budget is None

    @property
    def guards(self) -> Guards:
        """No stage 03 text guards: reasoning arrives in its own parts, never in the text."""
        return Guards()

    def new_normalizer(self) -> ChunkNormalizer:
        """A fresh ``AnthropicNormalizer`` (a stream it recognises nothing in ends in an ``api_error``)."""
        return RecognitionCheck(AnthropicNormalizer(), PROVIDER, "Anthropic Messages")

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Text, thinking, a signature, a tool-use start or input delta, or usage commits the stream."""
        if raw.error is not None or not isinstance(raw.data, Mapping):
            return False
        return _meaningful(raw.data)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """A transport error, or an ``error`` event (``overloaded_error`` after a 200, say)."""
        if raw.error is not None:
            return raw.error
        data = raw.data
        if isinstance(data, Mapping) and (data.get("type") == "error" or raw.event == "error"):
            return classify_stream_error(data, provider=PROVIDER)
        return None

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """A ``message_stop`` event ends the stream (Anthropic sends no ``[DONE]``)."""
        return any(_is_stop(raw) for raw in chunks)

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text (a model_error keeps the provider's details)."""
        return describe_error(error, provider=PROVIDER)


def _is_stop(raw: RawStreamChunk) -> bool:
    data = raw.data
    return isinstance(data, Mapping) and data.get("type") == "message_stop"
