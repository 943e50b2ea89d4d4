"""Stage 03 of the Chat Completions wire: ``chat.completion.chunk`` events as ``ProcessedChunk``s.

OpenAI, OpenRouter, NVIDIA NIM and custom endpoints speak the same format, so they share this
normalizer: ``ChatCompletionsNormalizer`` turns ``chat.completion.chunk`` events (and a complete,
non-streamed ``chat.completion``) into ``ProcessedChunk``s. The helpers the adapter's commitment
and rejection checks read (``has_meaningful_output``, ``chunk_error``, ``reported_usage``) live
here too, beside the rules they share with it. The request body is
``rxcord.providers.chat_completions.request``; the adapter methods,
``rxcord.providers.chat_completions.adapter``.

Normalizer rules
----------------
Reasoning. ``delta.reasoning``, ``delta.reasoning_content`` and
``delta.reasoning_details`` become thoughts (``reasoning.text`` RAW,
``reasoning.summary`` SUMMARY, ``reasoning.encrypted`` REDACTED with the
opaque data as its ``signature``). OpenRouter sends the same text twice in
one delta, as ``reasoning`` and inside ``reasoning_details``: when the details
carry text they are authoritative and the flat fields are ignored, so the
text is counted once. The details are merged per ``index`` (fragments
concatenated) and replayed on the tool calls, as is ``reasoning_content``.

Content leaves as it came. The leaked-reasoning guards (``think_strip``,
``spill_guard``, ``verbatim_tools``) are stages of the pipeline that follow the
normalizer (``rxcord.compose.pipeline``), fused with it into one operator; the
adapter declares which ones its wire needs (``ChatCompletionsAdapter.guards``).

Resent content. Some backends resend the whole answer as one last delta. A
content delta of at least 16 characters that equals the entire content
received so far is dropped (compared on the content as sent). Nothing shorter,
and no partial overlap, is touched: a real model repeating a 16+ character
answer verbatim as one delta is the only false positive, and streaming
backends do not produce deltas that large and that exact.

Tool calls are assembled by ``index`` (id and name from the first delta that
has them, then argument fragments; a delta with a new id on an index already
holding another id is a new call) and emitted once complete: at
``finish_reason`` or at stream end, one ``function_call`` chunk per call in
index order. Arguments that are not a JSON object make one non-retryable
``api_error`` naming the tool instead of the calls.

Terminal metadata. ``finish_reason`` is normalized (``FinishReason``; the
raw value stays in ``raw_finish_reason``, OpenRouter's ``native_finish_reason``
in ``native_finish_reason``). ``content_filter`` is a content block: a ``done``
chunk records the finish reason and a ``content_blocked`` error chunk
follows. ``usage`` is normalized by ``rxcord.providers.usage.from_openai`` (the last
report wins). With ``hold_for_usage`` (OpenRouter) the ``done`` chunk and the
calls are held after ``finish_reason`` until a usage report arrives or the
stream ends, so a tool call keeps its cost and tokens; otherwise they go out
at ``finish_reason`` and a later usage report is its own ``done`` chunk.
A stream that ends cleanly (``[DONE]``) without any ``finish_reason`` ends with
``stop``, and ``raw_finish_reason`` notes it (``NO_FINISH_REASON``): a clean end is
a complete answer; an end before ``[DONE]`` is the transport's ``truncated_stream``.

Errors. A chunk-level (or choice-level) ``error`` object, and a
``finish_reason`` of ``error``, become an error chunk
(``rxcord.providers.errors.classify_stream_error``); a transport error chunk passes
through. Chunk-level ``provider`` is the serving backend (OpenRouter), carried
on every chunk once known. Chunks with nothing recognizable are filtered with
a debug log line.
"""

from __future__ import annotations

__all__ = (
    "NO_FINISH_REASON",
    "ChatCompletionsNormalizer",
    "chunk_error",
    "has_meaningful_output",
    "normalize_finish_reason",
    "reported_usage",
)

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeGuard

import attrs
from loguru import logger

from rxcord.core import safe_json
from rxcord.core.text_buffer import TextBuffer
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
from rxcord.providers.errors import (
    classify_http_error,
    classify_stream_error,
    content_blocked,
    scrub,
)
from rxcord.providers.usage import from_openai

_log = logger.bind(stage="03-normalize")

_NO_THOUGHTS: Final[list[ThoughtLogEntry]] = []
"""What ``_reasoning`` returns for a delta without reasoning fields (shared: never modified)."""

NO_FINISH_REASON: Final = "(none: ended at [DONE])"
"""``raw_finish_reason`` of a clean end without a ``finish_reason`` (the result's note)."""
_RESEND_MIN: Final = 16
"""A resent-content delta must be at least this long to be dropped."""
_GENERAL_DELTA: Final = ("reasoning_details", "tool_calls", "function_call", "refusal")
"""Delta fields the short path leaves to the general one (when set)."""


_FINISH: Final[Mapping[str, FinishReason]] = {
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "eos": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "model_length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "safety": FinishReason.CONTENT_FILTER,
    "error": FinishReason.ERROR,
}


def normalize_finish_reason(raw: str) -> FinishReason:
    """The normalized finish reason for a provider's *raw* value (unknown values count as ``stop``)."""
    return _FINISH.get(raw, _FINISH.get(raw.lower(), FinishReason.STOP))


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, without the ABC machinery for the common ``dict``."""
    return type(value) is dict or isinstance(value, Mapping)


def _first_choice(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Choice 0, the answer (``n > 1``: the other choices are ignored, never interleaved)."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if _is_mapping(choice) and choice.get("index") in (None, 0):
            return choice
    return None


def chunk_error(raw: RawStreamChunk, *, provider: str) -> ProviderError | None:
    """The error *raw* carries: a transport error, an ``error`` object, or ``finish_reason: "error"``."""
    if raw.error is not None:
        return raw.error
    data = raw.data
    if not isinstance(data, Mapping):
        return None
    if data.get("error"):
        if raw.metadata.get("complete"):
            status = raw.metadata.get("status")
            return classify_http_error(status if isinstance(status, int) else 200, data, provider=provider)
        return classify_stream_error(data, provider=provider)
    choice = _first_choice(data)
    if choice is not None:
        if choice.get("error"):
            return classify_stream_error({"error": choice["error"]}, provider=provider)
        if choice.get("finish_reason") == "error":
            return classify_stream_error(data, provider=provider)
    return None


def _nonempty(value: object) -> bool:
    return bool(value) and isinstance(value, (str, list, Mapping))


def reported_usage(data: Mapping[str, Any]) -> Any:
    """The chunk's usage report: ``usage``, or Groq's ``x_groq.usage`` (its streamed usage).

    Groq's OpenAI-compatible API reports a stream's usage inside ``x_groq`` on the last chunk
    (without ``stream_options.include_usage``); the same numbers under the same names.
    """
    usage = data.get("usage")
    if usage is None:
        extension = data.get("x_groq")
        if isinstance(extension, Mapping):
            usage = extension.get("usage")
    return usage


def has_meaningful_output(raw: RawStreamChunk) -> bool:
    """Whether *raw* commits a stream: text, reasoning, a tool-call delta or usage.

    Role-only and empty deltas, bare finish chunks and errors do not commit.
    """
    data = raw.data
    if raw.error is not None or not isinstance(data, Mapping):
        return False
    if from_openai(reported_usage(data)) is not None:
        return True
    choice = _first_choice(data)
    if choice is None:
        return False
    delta = choice.get("delta")
    if not isinstance(delta, Mapping):
        delta = choice.get("message")
    if not isinstance(delta, Mapping):
        return False
    return any(
        _nonempty(delta.get(key))
        for key in (
            "content",
            "reasoning",
            "reasoning_content",
            "reasoning_details",
            "tool_calls",
            "function_call",
            "refusal",
        )
    )


@attrs.define
class _CallDraft:
    """One tool call being assembled from deltas."""

    index: int
    id: str | None = None
    name: str = ""
    arguments: list[str] = attrs.field(factory=list)


class _Out:
    """Chunks of one ``feed``: consecutive text and thoughts merge into one text chunk."""

    __slots__ = ("chunks", "text", "thoughts")

    def __init__(self) -> None:
        self.chunks: list[ProcessedChunk] = []
        self.text: list[str] = []
        self.thoughts: list[ThoughtLogEntry] = []

    def flush(self) -> None:
        if self.text or self.thoughts:
            content = "".join(self.text)
            if content or self.thoughts:
                self.chunks.append(ProcessedChunk.text(content, thoughts=tuple(self.thoughts)))
            self.text.clear()
            self.thoughts.clear()

    def add(self, chunk: ProcessedChunk) -> None:
        self.flush()
        self.chunks.append(chunk)


def _parse_arguments(text: str) -> dict[str, Any]:
    """Tool arguments as a dict; raises ``ValueError`` when they are not a JSON object."""
    if not text.strip():
        return {}
    value = safe_json.loads(text)
    if isinstance(value, str):
        # Some backends encode the arguments twice.
        value = safe_json.loads(value) if value.strip() else {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


@attrs.define
class ChatCompletionsNormalizer:
    """Stage 03 for one Chat Completions stream (see the module docstring for the rules).

    Args:
        provider: Provider identity, for error messages.
        hold_for_usage: Hold ``done`` and the calls after ``finish_reason`` until
            usage arrives or the stream ends (OpenRouter).
    """

    provider: str
    hold_for_usage: bool = False
    _content: TextBuffer = attrs.field(init=False, factory=TextBuffer)
    _content_len: int = attrs.field(init=False, default=0)
    _drafts: dict[int, _CallDraft] = attrs.field(init=False, factory=dict)
    _aliases: dict[int, int] = attrs.field(init=False, factory=dict)
    """Reported index -> draft key, for a reused index."""
    _details: list[dict[str, Any]] | None = attrs.field(init=False, default=None)
    """The reasoning details merged so far, for the calls' replay (``None``: none yet, no list held)."""
    _details_at: dict[tuple[object, object], dict[str, Any]] = attrs.field(init=False, factory=dict)
    _reasoning_content: list[str] | None = attrs.field(init=False, default=None)
    """The ``reasoning_content`` pieces, for the calls' replay (``None``: none yet, no list held)."""
    _serving: str | None = attrs.field(init=False, default=None)
    _usage: Usage | None = attrs.field(init=False, default=None)
    _usage_sent: Usage | None = attrs.field(init=False, default=None)
    _finish: FinishReason | None = attrs.field(init=False, default=None)
    _finish_raw: str | None = attrs.field(init=False, default=None)
    _finish_meta: dict[str, Any] = attrs.field(init=False, factory=dict)
    _finish_seen: bool = attrs.field(init=False, default=False)
    _held: list[ProcessedChunk] | None = attrs.field(init=False, default=None)
    """Terminal chunks waiting for usage (``None``: nothing held)."""
    _released: bool = attrs.field(init=False, default=False)
    _failed: bool = attrs.field(init=False, default=False)
    _output: bool = attrs.field(init=False, default=False)
    """A chunk came out: a clean end without a finish reason is then a complete answer."""

    # -- entry points ------------------------------------------------------

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize one raw chunk."""
        if self._failed:
            return ()
        out = _Out()
        if raw.error is not None:
            self._fail(out, raw.error)
            return self._close(out)
        data = raw.data
        if type(data) is dict and raw.error is None and not raw.metadata:
            plain = self._plain_delta(data)
            if plain is not None:
                return plain
        if not _is_mapping(data):
            _log.debug(
                "{provider}: filtered a non-object chunk: {chunk}", provider=self.provider, chunk=_peek(data)
            )
            return ()
        if raw.metadata.get("complete") or _is_complete(data):
            data = self._as_stream_chunk(raw, data, out)
            if data is None:
                return self._close(out)
        self._chunk(data, out)
        return self._close(out)

    def _plain_delta(self, data: dict[str, Any]) -> list[ProcessedChunk] | None:
        """The common chunk, one choice whose delta adds content or flat reasoning, the short way.

        Returns ``None`` for anything else (usage, a finish, an error, reasoning
        details, tool calls, a complete response, a first ``provider``), which
        takes the general path; what this returns is exactly what the general
        path would (a test feeds every capture both ways).
        """
        choices = data.get("choices")
        if type(choices) is not list or not choices:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None or "message" in choice:
            return None
        if len(choices) > 1 or choice.get("index") not in (None, 0):
            return None  # several choices (n > 1): the general path keeps choice 0 only
        delta = choice.get("delta")
        if type(delta) is not dict or choice.get("error") or data.get("error"):
            return None
        if data.get("usage") is not None or "x_groq" in data or data.get("object") == "chat.completion":
            return None
        if self._serving is None and data.get("provider"):
            return None
        content = delta.get("content")
        if content is not None and type(content) is not str:
            return None
        thoughts: list[ThoughtLogEntry] = []
        fields = len(delta)
        beside_content = fields > 2 or (fields == 2 and "role" not in delta) or not content
        if beside_content and not self._flat_reasoning(delta, thoughts):
            # Anything beside the content (and a role) that is not flat reasoning: the general path.
            return None
        shown = content if content and not self._is_resend(content) else ""
        if not shown and not thoughts:
            return []
        self._output = True
        return [ProcessedChunk.text(shown, thoughts=tuple(thoughts), serving_provider=self._serving)]

    def _flat_reasoning(self, delta: dict[str, Any], thoughts: list[ThoughtLogEntry]) -> bool:
        """``_reasoning`` for a delta whose only reasoning is flat text; ``False``: not such a delta.

        Appends the entries to *thoughts*.
        """
        for key in _GENERAL_DELTA:
            if delta.get(key) is not None:
                return False
        flat = delta.get("reasoning")
        text = delta.get("reasoning_content")
        if (flat is not None and type(flat) is not str) or (text is not None and type(text) is not str):
            return False
        if text:
            kept = self._reasoning_content
            if kept is None:
                self._reasoning_content = [text]
            else:
                kept.append(text)
        thoughts.extend(_flat_entries(flat, text))
        return True

    def finish(self) -> Sequence[ProcessedChunk]:
        """The stream ended: emit pending calls, ``done`` with the last usage.

        Reached only at a clean end (the transport turns a body that stops before ``[DONE]``
        into a ``truncated_stream`` error chunk, after which this emits nothing): a stream
        that sent no ``finish_reason`` then ends with ``stop``, noted in ``raw_finish_reason``.
        """
        if self._failed:
            return ()
        out = _Out()
        if not self._finish_seen:
            self._finish_seen = True
            if self._output or self._drafts or self._usage is not None:
                # Something was recognised (nothing recognised is RecognitionCheck's error).
                self._finish, self._finish_raw = FinishReason.STOP, NO_FINISH_REASON
                _log.debug("{provider}: [DONE] without a finish_reason: stop", provider=self.provider)
            self._held = self._terminal(out)
        if not self._released:
            self._release(out)
        elif self._usage is not None and self._usage != self._usage_sent:
            out.add(ProcessedChunk.done(usage=self._usage))
            self._usage_sent = self._usage
        return self._close(out)

    # -- chunk handling ----------------------------------------------------

    def _as_stream_chunk(
        self, raw: RawStreamChunk, data: Mapping[str, Any], out: _Out
    ) -> Mapping[str, Any] | None:
        """A complete ``chat.completion`` as the one stream chunk that says the same (``None``: none)."""
        error = chunk_error(raw, provider=self.provider)
        if error is not None:
            self._fail(out, error)
            return None
        if not isinstance(data.get("choices"), list):
            # Not a chat completion at all (another API's body): nothing to recognise here.
            _log.debug("{provider}: filtered a body without choices", provider=self.provider)
            return None
        choice = _first_choice(data) or {}
        message = choice.get("message")
        if not isinstance(message, Mapping):
            fallback = choice.get("delta")
            message = fallback if isinstance(fallback, Mapping) else {}
        delta = dict(message)
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [
                {**call, "index": call.get("index", position)}
                for position, call in enumerate(calls)
                if isinstance(call, Mapping)
            ]
        return {
            "provider": data.get("provider"),
            "usage": data.get("usage"),
            "choices": [
                {
                    **{key: value for key, value in choice.items() if key != "message"},
                    "delta": delta,
                    "finish_reason": choice.get("finish_reason") or "stop",
                }
            ],
        }

    def _chunk(self, data: Mapping[str, Any], out: _Out) -> None:
        recognized = False
        served_by = data.get("provider")
        if isinstance(served_by, str) and served_by and self._serving is None:
            self._serving = served_by
            recognized = True
        choice = _first_choice(data)
        if data.get("error") or (
            choice is not None and (choice.get("error") or choice.get("finish_reason") == "error")
        ):
            error = chunk_error(RawStreamChunk(provider=self.provider, data=data), provider=self.provider)
            if error is not None:
                self._fail(out, error)
                return
        reported = reported_usage(data)
        usage = from_openai(reported) if reported is not None else None
        if usage is not None:
            # Recorded before the finish in the same chunk, so its ``done`` carries it.
            self._usage = usage
        if choice is not None:
            recognized = True
            delta = choice.get("delta")
            if _is_mapping(delta):
                self._delta(delta, out)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish and not self._finish_seen:
                self._on_finish(finish, choice, out)
        elif isinstance(data.get("choices"), list):
            recognized = True  # the usage-only chunk (``choices: []``)
        if usage is not None:
            recognized = True
            if self._finish_seen:
                if not self._released:
                    self._release(out)
                elif usage != self._usage_sent:
                    out.add(ProcessedChunk.done(usage=usage))
                    self._usage_sent = usage
        if not recognized:
            _log.debug(
                "{provider}: filtered an unknown chunk: {chunk}", provider=self.provider, chunk=_peek(data)
            )

    def _delta(self, delta: Mapping[str, Any], out: _Out) -> None:
        thoughts = self._reasoning(delta)
        if thoughts:
            out.thoughts.extend(thoughts)
        content = delta.get("content")
        if isinstance(content, list):
            content, reasoning = _content_parts(content)
            if reasoning:
                out.thoughts.append(ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning))
        if isinstance(content, str) and content and not self._is_resend(content):
            self._text(content, out)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            # The model's answer when it declines (structured outputs): delivered as text.
            self._text(refusal, out)
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, call in enumerate(calls):
                if isinstance(call, Mapping):
                    self._call_delta(call, position)
        legacy = delta.get("function_call")
        if isinstance(legacy, Mapping):
            self._call_delta({"index": 0, "function": legacy}, 0)

    def _is_resend(self, content: str) -> bool:
        size = len(content)  # once: this runs on every delta
        if size >= _RESEND_MIN and size == self._content_len and self._content.getvalue() == content:
            _log.debug("{provider}: dropped a delta resending the whole content", provider=self.provider)
            return True
        self._content.append(content)
        self._content_len += size
        return False

    def _reasoning(self, delta: Mapping[str, Any]) -> list[ThoughtLogEntry]:
        if "reasoning_details" not in delta and "reasoning" not in delta and "reasoning_content" not in delta:
            return _NO_THOUGHTS  # the common answer delta: nothing below would find anything
        entries: list[ThoughtLogEntry] = []
        details_text = False
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            for item in details:
                if not isinstance(item, Mapping):
                    continue
                kind = item.get("type")
                if kind == "reasoning.text":
                    raw_text = item.get("text")
                    text = raw_text if isinstance(raw_text, str) else ""
                    raw_signature = item.get("signature")
                    signature = raw_signature if isinstance(raw_signature, str) else None
                    if text or signature:
                        entries.append(ThoughtLogEntry(kind=ThoughtKind.RAW, text=text, signature=signature))
                    details_text = details_text or bool(text)
                elif kind == "reasoning.summary":
                    summary = item.get("summary")
                    if isinstance(summary, str) and summary:
                        entries.append(ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text=summary))
                        details_text = True
                elif kind == "reasoning.encrypted":
                    data = item.get("data")
                    if isinstance(data, str) and data:
                        entries.append(ThoughtLogEntry(kind=ThoughtKind.REDACTED, signature=data))
                self._merge_detail(item)
        flat = delta.get("reasoning")
        content = delta.get("reasoning_content")
        if isinstance(content, str) and content:
            kept = self._reasoning_content
            if kept is None:
                self._reasoning_content = [content]
            else:
                kept.append(content)
        if not details_text:
            # The details, when they carry text, already hold what the flat fields repeat.
            entries = _flat_entries(flat, content) + entries
        return entries

    def _merge_detail(self, item: Mapping[str, Any]) -> None:
        index = item.get("index")
        kind = item.get("type")
        key: tuple[object, object] | None = (index, kind) if isinstance(index, int) else None
        target = self._details_at.get(key) if key is not None else None
        details = self._details
        if target is None and key is None and details and details[-1].get("type") == kind:
            target = details[-1]
        if target is None:
            fresh = dict(item)
            if details is None:
                self._details = [fresh]
            else:
                details.append(fresh)
            if key is not None:
                self._details_at[key] = fresh
            return
        for field, value in item.items():
            if field in ("text", "summary", "data") and isinstance(value, str):
                previous = target.get(field)
                target[field] = (previous if isinstance(previous, str) else "") + value
            elif value is not None and (field == "signature" or field not in target):
                target[field] = value

    def _text(self, content: str, out: _Out) -> None:
        out.text.append(content)

    def _call_delta(self, call: Mapping[str, Any], position: int) -> None:
        reported = call.get("index")
        raw_id = call.get("id")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        if isinstance(reported, int) and not isinstance(reported, bool):
            index = self._aliases.get(reported, reported)
        else:
            reported = None
            index = self._index_without_slot(call_id, position)
        draft = self._drafts.get(index)
        if draft is not None and call_id and draft.id and draft.id != call_id:
            # A new call reusing an index (some backends number every call 0): later
            # fragments at that index belong to the new call.
            index = max(self._drafts) + 1
            if reported is not None:
                self._aliases[reported] = index
            draft = None
        if draft is None:
            draft = self._drafts[index] = _CallDraft(index=index)
        if call_id and not draft.id:
            draft.id = call_id
        function = call.get("function")
        if isinstance(function, Mapping):
            name = function.get("name")
            if isinstance(name, str) and name and not draft.name:
                draft.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                draft.arguments.append(arguments)
            elif isinstance(arguments, Mapping):
                draft.arguments.append(json.dumps(arguments))

    def _index_without_slot(self, call_id: str | None, position: int) -> int:
        if call_id is not None:
            for index, draft in self._drafts.items():
                if draft.id == call_id:
                    return index
            return max(self._drafts, default=-1) + 1
        return max(self._drafts) if self._drafts else position

    def _on_finish(self, raw: str, choice: Mapping[str, Any], out: _Out) -> None:
        self._finish_seen = True
        self._finish = normalize_finish_reason(raw)
        self._finish_raw = raw
        native = choice.get("native_finish_reason")
        if isinstance(native, str) and native:
            self._finish_meta["native_finish_reason"] = native
        self._held = self._terminal(out)
        if not self.hold_for_usage:
            self._release(out)

    def _terminal(self, out: _Out) -> list[ProcessedChunk]:
        """The chunks that follow ``done``: the assembled calls, a content block, or nothing."""
        terminal: list[ProcessedChunk] = []
        if self._finish is FinishReason.CONTENT_FILTER:
            terminal.append(
                ProcessedChunk.fail(
                    content_blocked(
                        f"{self.provider} stopped the reply: content filter "
                        f"(finish_reason {self._finish_raw!r})",
                        code=self._finish_raw,
                    )
                )
            )
        calls = self._assembled_calls()
        if isinstance(calls, ProviderError):
            terminal.append(ProcessedChunk.fail(calls))
        elif calls:
            if self._finish in (None, FinishReason.STOP):
                self._finish = FinishReason.TOOL_CALLS
            terminal.extend(ProcessedChunk.call(call) for call in calls)
        return terminal

    def _assembled_calls(self) -> list[FunctionCall] | ProviderError:
        calls: list[FunctionCall] = []
        replay = self._replay()
        for index in sorted(self._drafts):
            draft = self._drafts[index]
            if not draft.name:
                return ProviderError(
                    type=ErrorType.API_ERROR,
                    message=f"{self.provider} sent a tool call without a name (index {index})",
                    retryable=False,
                    code="invalid_tool_call",
                )
            text = "".join(draft.arguments)
            try:
                args = _parse_arguments(text)
            except ValueError as exc:
                snippet = scrub(text[:120])
                return ProviderError(
                    type=ErrorType.API_ERROR,
                    message=(
                        f"{self.provider} returned arguments for tool '{draft.name}' that are not a JSON "
                        f"object ({exc}): {snippet!r}"
                    ),
                    retryable=False,
                    code="invalid_tool_arguments",
                    original_error=text,
                )
            calls.append(FunctionCall(name=draft.name, args=args, id=draft.id, replay=replay))
        self._drafts.clear()
        return calls

    def _replay(self) -> dict[str, Any]:
        replay: dict[str, Any] = {}
        if self._details:
            replay["reasoning_details"] = [dict(item) for item in self._details]
        if self._reasoning_content:
            replay["reasoning_content"] = "".join(self._reasoning_content)
        return replay

    def _release(self, out: _Out) -> None:
        self._released = True
        held, self._held = self._held or [], None
        if self._finish is not None or self._usage is not None:
            out.add(
                ProcessedChunk.done(
                    finish_reason=self._finish,
                    raw_finish_reason=self._finish_raw,
                    usage=self._usage,
                    metadata=self._finish_meta,
                )
            )
            self._usage_sent = self._usage
        for chunk in held:
            out.add(chunk)

    def _fail(self, out: _Out, error: ProviderError) -> None:
        if self._finish_seen and not self._released:
            # Calls completed before the failure were already final: deliver them first.
            self._release(out)
        self._failed = True
        out.add(ProcessedChunk.fail(error))

    def _close(self, out: _Out) -> list[ProcessedChunk]:
        out.flush()
        if out.chunks:
            self._output = True
        serving = self._serving
        if serving is None:
            return out.chunks
        return [
            chunk if chunk.serving_provider else attrs.evolve(chunk, serving_provider=serving)
            for chunk in out.chunks
        ]


def _flat_entries(reasoning: object, reasoning_content: object) -> list[ThoughtLogEntry]:
    """Thought entries of the flat fields: ``reasoning``, then ``reasoning_content`` unless a repeat."""
    entries: list[ThoughtLogEntry] = []
    if isinstance(reasoning, str) and reasoning:
        entries.append(ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning))
    if isinstance(reasoning_content, str) and reasoning_content and reasoning_content != reasoning:
        entries.append(ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning_content))
    return entries


def _content_parts(parts: list[Any]) -> tuple[str, str]:
    """(text, reasoning) of a content-parts list (Mistral-style ``text`` and ``thinking`` parts)."""
    text: list[str] = []
    reasoning: list[str] = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
        elif isinstance(part, Mapping):
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                text.append(part["text"])
            elif part.get("type") == "thinking":
                inner = part.get("thinking")
                if isinstance(inner, str):
                    reasoning.append(inner)
                elif isinstance(inner, list):
                    reasoning.extend(_content_parts(inner)[0:1])
    return "".join(text), "".join(reasoning)


def _is_complete(data: Mapping[str, Any]) -> bool:
    if data.get("object") == "chat.completion":
        return True
    choice = _first_choice(data)
    return choice is not None and "message" in choice and "delta" not in choice


def _peek(data: object) -> str:
    return scrub(repr(data)[:500])
