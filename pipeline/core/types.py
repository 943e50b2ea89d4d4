"""Core value types of rxcord: the vocabulary every stage speaks.

This is a leaf module: it imports nothing from the project, so ``operators``,
``providers`` and ``sinks`` can all depend on it without an import cycle.

Everything here is an ``attrs`` frozen, slotted value. Mappings that come from
the wire (``metadata``, ``args``) are kept as plain ``dict``s typed as
``Mapping``: they are never mutated after construction.

The names (``RawStreamChunk``, ``ProcessedChunk``, ``ProviderError``, ``FunctionCall``,
``ThoughtLogEntry``, ``StreamResult``) are the pipeline's vocabulary in Python spelling.
"""

from __future__ import annotations

__all__ = (
    "Batch",
    "ChunkNormalizer",
    "ChunkType",
    "DeliveryMode",
    "ErrorType",
    "FinishReason",
    "FunctionCall",
    "Operator",
    "ProcessedChunk",
    "ProviderError",
    "RawStreamChunk",
    "SegmentKind",
    "StopKind",
    "StopSignal",
    "StreamStatus",
    "ThoughtKind",
    "ThoughtLogEntry",
    "Usage",
    "raw_chunk",
)

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

import attrs
from reactivex import Observable

_A = TypeVar("_A")
_B = TypeVar("_B")

Operator: TypeAlias = Callable[[Observable[_A]], Observable[_B]]
"""An Rx operator: a function from one observable to another."""

_EMPTY: Mapping[str, Any] = {}
_T_co = TypeVar("_T_co", covariant=True)


class Batch(Generic[_T_co]):
    """The items of one socket read, moving through stages 02-04 as ONE Rx item.

    The transport (``stream_source(batched=True)``) emits one ``Batch`` of
    ``RawStreamChunk`` s per network read instead of one item per SSE event (a read's
    lone event goes as itself); the
    batch-aware stages of the chain (the fused stage 03, ``idle_timeout``,
    ``stop_gate``, ``accumulate``) take it whole, so a read costs one observer hop
    per stage instead of one per event. Every stage that does not know batches gets
    the items one by one (the pipeline inserts ``rxcord.operators.fused.unbatch``
    before it), and the results are the same either way.

    A consumer only iterates a batch (``for item in batch``): the stop gate hands on
    a batch whose iteration ends once a stop is pending, so a stop still lands
    between two chunks.
    """

    __slots__ = ("items",)

    def __init__(self, items: Sequence[_T_co]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[_T_co]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Batch) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Batch({list(self.items)!r})"


class ChunkType(str, enum.Enum):
    """The four kinds of normalized chunk the orchestrator routes."""

    TEXT = "text"
    FUNCTION_CALL = "function_call"
    ERROR = "error"
    DONE = "done"


class ErrorType(str, enum.Enum):
    """Classification of a provider failure (see ``rxcord.providers.errors``)."""

    API_ERROR = "api_error"
    RATE_LIMIT = "rate_limit"
    CONTENT_BLOCKED = "content_blocked"
    TIMEOUT = "timeout"
    PROVIDER_OVERLOADED = "provider_overloaded"
    MODEL_ERROR = "model_error"


class FinishReason(str, enum.Enum):
    """Finish reasons normalized across providers."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"


class ThoughtKind(str, enum.Enum):
    """What a thought-log entry holds."""

    RAW = "raw"
    """Raw reasoning text (``reasoning_content``, ``<think>`` bodies, Anthropic thinking)."""
    SUMMARY = "summary"
    """A provider-written summary of the reasoning (Gemini ``thought`` parts, reasoning summaries)."""
    SIGNATURE = "signature"
    """An opaque signature replayed unchanged (Gemini ``thoughtSignature``, Anthropic ``signature``)."""
    REDACTED = "redacted"
    """Encrypted or redacted reasoning (``redacted_thinking``, OpenRouter ``reasoning.encrypted``)."""


class StopKind(str, enum.Enum):
    """Why a stream was asked to stop before its natural end."""

    USER = "user"
    """Graceful user stop: pending text is flushed."""
    INTERRUPT = "interrupt"
    """A follow-up message arrived: the buffer is discarded at once."""
    KILL = "kill"
    """Hard abort: the HTTP request and any in-flight send are cancelled, nothing is flushed."""
    SEND_MESSAGE_LIMIT = "send_message_limit"
    FLUSH_LIMIT = "flush_limit"
    SPEAKER_GUARD = "speaker_guard"
    CHANNEL_DELETED = "channel_deleted"
    MISSING_ACCESS = "missing_access"
    STREAM_DEADLINE = "stream_deadline"
    """The stream ran past ``StreamConfig.max_stream_seconds``: stopped like a user stop (text kept)."""

    @property
    def is_internal(self) -> bool:
        """Internal stops skip buffer flushes (they would only be rejected again)."""
        return self not in (StopKind.USER, StopKind.INTERRUPT, StopKind.KILL, StopKind.STREAM_DEADLINE)


class StreamStatus(str, enum.Enum):
    """How a stream ended (``StreamResult.status``)."""

    STREAMING = "streaming"
    """Not ended yet (only seen on intermediate states)."""
    COMPLETED = "completed"
    FUNCTION_CALL = "function_call"
    ERROR = "error"
    STOPPED_BY_USER = "stopped_by_user"
    FOLLOW_UP_INTERRUPT = "follow_up_interrupt"
    KILLED = "killed"
    SEND_MESSAGE_LIMIT = "send_message_limit"
    FLUSH_LIMIT = "flush_limit"
    SPEAKER_GUARD = "speaker_guard"
    CHANNEL_DELETED = "channel_deleted"
    MISSING_ACCESS = "missing_access"
    STREAM_DEADLINE = "stream_deadline"
    """Stopped at the overall deadline (``max_stream_seconds``); the text so far was delivered."""

    @classmethod
    def for_stop(cls, kind: StopKind) -> StreamStatus:
        """The terminal status a stop of *kind* produces."""
        return _STOP_STATUS[kind]


_STOP_STATUS: Mapping[StopKind, StreamStatus] = {
    StopKind.USER: StreamStatus.STOPPED_BY_USER,
    StopKind.INTERRUPT: StreamStatus.FOLLOW_UP_INTERRUPT,
    StopKind.KILL: StreamStatus.KILLED,
    StopKind.SEND_MESSAGE_LIMIT: StreamStatus.SEND_MESSAGE_LIMIT,
    StopKind.FLUSH_LIMIT: StreamStatus.FLUSH_LIMIT,
    StopKind.SPEAKER_GUARD: StreamStatus.SPEAKER_GUARD,
    StopKind.CHANNEL_DELETED: StreamStatus.CHANNEL_DELETED,
    StopKind.MISSING_ACCESS: StreamStatus.MISSING_ACCESS,
    StopKind.STREAM_DEADLINE: StreamStatus.STREAM_DEADLINE,
}


class DeliveryMode(str, enum.Enum):
    """When text reaches Discord."""

    AGGREGATED = "aggregated"
    """Live Streaming off: one batch at a tool call or the final flush."""
    LIVE = "live"
    """Live Streaming on: each segment as soon as a flush boundary (or an idle gap) allows."""
    EDIT = "edit"
    """Edit in place: one message sent, then edited as the text grows (``rxcord.sinks.edit_in_place``)."""


class SegmentKind(str, enum.Enum):
    """What a flushed segment is for."""

    TEXT = "text"
    """Visible answer text, to be delivered."""
    THOUGHT = "thought"
    """An in-band ``<think>`` block: goes to the thought log, never to Discord."""
    DETAILS = "details"
    """A ``<details>`` block: goes to ``StreamResult.details_content``, never to Discord."""
    ERROR_EMBED = "error_embed"
    """The error embed for a non-retryable provider error."""
    PREVIEW = "preview"
    """Edit-in-place delivery: the text so far, for an intermediate edit (never collected)."""
    TABLE = "table"
    """A markdown table (its text), sent as a picture attachment (``StreamConfig.tables``)."""


@attrs.frozen
class StopSignal:
    """A request to stop one stream."""

    kind: StopKind
    """Which kind of stop."""
    reason: str = ""
    """Free text for logs (never shown to users)."""


@attrs.frozen(kw_only=True)
class ProviderError:
    """A provider failure, normalized."""

    type: ErrorType
    """Classification; drives retries and the error embed."""
    message: str
    """Human-readable description, with the provider's actionable details kept."""
    retryable: bool
    """Whether the key-rotation / fallback loop may try again."""
    code: str | int | None = None
    """The provider's own error code (``"rate_limit_exceeded"``, ``429``, ``"RESOURCE_EXHAUSTED"``)."""
    status: int | None = None
    """The HTTP status, when the error came with one."""
    original_error: object = attrs.field(default=None, eq=False, repr=False)
    """The raw error object (parsed body or exception), for logging only."""


@attrs.frozen(kw_only=True)
class FunctionCall:
    """A provider-agnostic tool call."""

    name: str
    """The tool's name."""
    args: Mapping[str, Any] = attrs.field(factory=dict)
    """Parsed JSON arguments."""
    id: str | None = None
    """The provider's call id (``call_...``, ``toolu_...``), needed to send the result back."""
    thought_signature: str | None = None
    """Gemini ``thoughtSignature`` attached to the call; replayed unchanged in the next request."""
    replay: Mapping[str, Any] = attrs.field(factory=dict)
    """Other provider-specific fields replayed unchanged (``reasoning_details``, ``reasoning_content``)."""


@attrs.frozen(kw_only=True)
class ThoughtLogEntry:
    """One piece of reasoning, kept apart from visible text."""

    kind: ThoughtKind
    text: str = ""
    """The reasoning text (empty for a bare signature)."""
    signature: str | None = None
    """An opaque signature belonging to this entry."""


@attrs.frozen(kw_only=True)
class Usage:
    """Token usage of one provider response, normalized.

    ``input_tokens`` is all input processed, cache reads and writes included;
    the cache fields are subsets of it (``None``: the provider did not say).
    ``output_tokens`` counts every generated token, reasoning included.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: float | None = None
    """Cost the provider reported (never an estimate)."""
    estimated: bool = False
    """The provider reported nothing: the tokens are estimated (about four characters a token,
    ``rxcord.compose.stopped``), as for a stream stopped, interrupted or killed before its usage
    arrived. A sum with one estimated part is estimated."""


# The two per-chunk types below are attrs frozen classes with a hand-written ``__init__``
# (``init=False``): attrs' generated one sets each field through ``object.__setattr__``
# (a frozen class forbids plain assignment), about 1.6 µs for a ProcessedChunk; setting the
# slots through their member descriptors (``_Slot.__set__``, which the frozen ``__setattr__``
# does not intercept) does the same in about half. Equality, repr, hashing, immutability,
# ``attrs.evolve``, ``attrs.fields`` and cattrs are attrs' as before; the signature is the
# one attrs would generate (``tests/test_hot_types.py`` checks both against the fields).


@attrs.frozen(kw_only=True, init=False)
class RawStreamChunk:
    """A provider-native chunk as stage 02 yields it (before normalization)."""

    provider: str
    """Provider identity (``openai``, ``google``, ...)."""
    data: Any = None
    """The decoded payload: a JSON object for SSE ``data:`` lines and JSON bodies."""
    event: str | None = None
    """The SSE ``event:`` name, when the stream uses them (Anthropic)."""
    error: ProviderError | None = None
    """Set when the transport failed (HTTP status, timeout, reset): ``data`` is then the body, if any."""
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    """Transport facts (HTTP status, attempt number)."""

    def __init__(
        self,
        *,
        provider: str,
        data: Any = None,
        event: str | None = None,
        error: ProviderError | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        _raw_provider(self, provider)
        _raw_data(self, data)
        _raw_event(self, event)
        _raw_error(self, error)
        _raw_metadata(self, {} if metadata is None else metadata)


def raw_chunk(provider: str, data: Any, event: str | None, metadata: Mapping[str, Any]) -> RawStreamChunk:
    """``RawStreamChunk(provider=..., data=..., event=..., metadata=...)``, without an error.

    Built without the keyword binding of ``__init__``: the transport makes one per SSE event.
    """
    chunk: RawStreamChunk = _object_new(RawStreamChunk)
    _raw_provider(chunk, provider)
    _raw_data(chunk, data)
    _raw_event(chunk, event)
    _raw_error(chunk, None)
    _raw_metadata(chunk, metadata)
    return chunk


_object_new: Any = object.__new__
_raw_slots: Any = RawStreamChunk
_raw_provider = _raw_slots.provider.__set__
_raw_data = _raw_slots.data.__set__
_raw_event = _raw_slots.event.__set__
_raw_error = _raw_slots.error.__set__
_raw_metadata = _raw_slots.metadata.__set__


def _check_payload(instance: ProcessedChunk, _attribute: object, value: ChunkType) -> None:
    if value is ChunkType.FUNCTION_CALL and instance.function_call is None:
        raise ValueError("a function_call chunk needs function_call")
    if value is ChunkType.ERROR and instance.error is None:
        raise ValueError("an error chunk needs error")


@attrs.frozen(kw_only=True, init=False)
class ProcessedChunk:
    """The uniform chunk the orchestrator routes.

    Exactly one ``type``; any type may carry ``thoughts``. A reasoning-only
    delta is a ``text`` chunk with empty ``content``.
    """

    type: ChunkType = attrs.field(validator=_check_payload)
    """The validator runs in the hand-written ``__init__`` (and in ``attrs.validate``)."""
    content: str = ""
    """Visible text (``text`` chunks)."""
    function_call: FunctionCall | None = None
    error: ProviderError | None = None
    thoughts: tuple[ThoughtLogEntry, ...] = ()
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    """Terminal metadata: ``finish_reason`` (normalized), ``raw_finish_reason``."""
    serving_provider: str | None = None
    """The backend that actually served the request (OpenRouter's chunk-level ``provider``)."""
    usage: Usage | None = None
    """Usage reported with this chunk (the latest report wins)."""

    def __init__(
        self,
        *,
        type: ChunkType,
        content: str = "",
        function_call: FunctionCall | None = None,
        error: ProviderError | None = None,
        thoughts: tuple[ThoughtLogEntry, ...] = (),
        metadata: Mapping[str, Any] | None = None,
        serving_provider: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        _pc_type(self, type)
        _pc_content(self, content)
        _pc_function_call(self, function_call)
        _pc_error(self, error)
        _pc_thoughts(self, thoughts)
        _pc_metadata(self, {} if metadata is None else metadata)
        _pc_serving_provider(self, serving_provider)
        _pc_usage(self, usage)
        if type is ChunkType.FUNCTION_CALL or type is ChunkType.ERROR:
            _check_payload(self, None, type)

    @classmethod
    def text(
        cls,
        content: str,
        *,
        thoughts: tuple[ThoughtLogEntry, ...] = (),
        serving_provider: str | None = None,
    ) -> ProcessedChunk:
        """A ``text`` chunk."""
        if cls is not ProcessedChunk:
            kind = ChunkType.TEXT
            return cls(type=kind, content=content, thoughts=thoughts, serving_provider=serving_provider)
        # The commonest chunk of all (a delta): built without the keyword binding of __init__.
        chunk: ProcessedChunk = _object_new(ProcessedChunk)
        _pc_type(chunk, ChunkType.TEXT)
        _pc_content(chunk, content)
        _pc_function_call(chunk, None)
        _pc_error(chunk, None)
        _pc_thoughts(chunk, thoughts)
        _pc_metadata(chunk, {})
        _pc_serving_provider(chunk, serving_provider)
        _pc_usage(chunk, None)
        return chunk

    @classmethod
    def call(cls, function_call: FunctionCall, *, serving_provider: str | None = None) -> ProcessedChunk:
        """A ``function_call`` chunk."""
        return cls(
            type=ChunkType.FUNCTION_CALL, function_call=function_call, serving_provider=serving_provider
        )

    @classmethod
    def fail(cls, error: ProviderError) -> ProcessedChunk:
        """An ``error`` chunk."""
        return cls(type=ChunkType.ERROR, error=error)

    @classmethod
    def done(
        cls,
        *,
        finish_reason: FinishReason | None = None,
        raw_finish_reason: str | None = None,
        usage: Usage | None = None,
        serving_provider: str | None = None,
        metadata: Mapping[str, Any] = _EMPTY,
    ) -> ProcessedChunk:
        """A ``done`` chunk: terminal metadata and/or usage."""
        meta = dict(metadata)
        if finish_reason is not None:
            meta["finish_reason"] = finish_reason
        if raw_finish_reason is not None:
            meta["raw_finish_reason"] = raw_finish_reason
        return cls(type=ChunkType.DONE, metadata=meta, usage=usage, serving_provider=serving_provider)


_pc_slots: Any = ProcessedChunk
_pc_type = _pc_slots.type.__set__
_pc_content = _pc_slots.content.__set__
_pc_function_call = _pc_slots.function_call.__set__
_pc_error = _pc_slots.error.__set__
_pc_thoughts = _pc_slots.thoughts.__set__
_pc_metadata = _pc_slots.metadata.__set__
_pc_serving_provider = _pc_slots.serving_provider.__set__
_pc_usage = _pc_slots.usage.__set__


class ChunkNormalizer(Protocol):
    """Stage 03 for one stream: provider-native chunks in, ``ProcessedChunk``s out.

    One instance per stream (it may hold per-stream state: tool-call deltas
    being assembled, a partial think tag, a held-back spill candidate).
    Implementations are pure: no I/O, no clocks.
    """

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize one raw chunk; may return zero, one or several chunks."""
        ...

    def finish(self) -> Sequence[ProcessedChunk]:
        """The stream ended: release anything held back."""
        ...
