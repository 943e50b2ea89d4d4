r"""Stage 03 of Google Gemini: each ``GenerateContentResponse`` as ``ProcessedChunk``s.

``GeminiNormalizer`` turns each ``GenerateContentResponse`` the transport decoded (a streamed
event, a complete response, or a JSON array of responses) into ``ProcessedChunk``s. The request
body is ``rxcord.providers.google.request``; the adapter, ``rxcord.providers.google.adapter``.

Stage 01 (``GoogleAdapter.build_request``) turns a ``ChatRequest`` into a
Gemini ``GenerateContentRequest``; stage 03 (``GeminiNormalizer``) turns each
``GenerateContentResponse`` the transport decoded into ``ProcessedChunk``s.

Why the normalizer holds some things back
-----------------------------------------
Every Gemini chunk repeats a cumulative ``usageMetadata``, and the finish
reason comes on the last chunk. Function calls are therefore *held* until
the candidate's ``finishReason`` (or the end of the body) and released after
the terminal ``done`` chunk, which carries the last usage report. Two
guarantees follow: text of the same response always reaches the buffer
before the tool loop gets the call (text first, then the call,
also when one part set holds both), and the final usage is recorded before
control passes to the tool loop. A failure (an error object, a blocked
prompt, a safety finish) is likewise preceded by a ``done`` chunk with the
usage reported so far, because the orchestrator ends the stream at an error.

Thoughts
--------
``thought: true`` parts (and a ``thoughtSummary`` field, which some
backends use) are summaries: ``ThoughtKind.SUMMARY`` entries on a text chunk
with empty content. A ``thoughtSignature`` on any part becomes a
``ThoughtKind.SIGNATURE`` entry; on a ``functionCall`` part it is also set on
``FunctionCall.thought_signature``, which stage 01 replays on that call's
part (the API rejects a function-calling history without it).

Resent text
-----------
Some Gemini backends resend text: a whole part again, the start of a part restating the end of
the last one, or everything so far. Each channel (visible text, thought summaries) drops what a
part restates by the one rule of ``rxcord.providers.resend``: a part beginning with the last
``MIN_RESENT_PART_CHARS`` or more characters emitted restates them, unless that overlap repeats a
shorter unit ("ha ha ha", "|---|---|"); shorter repeats ("\n", "ha") are always kept.
"""

from __future__ import annotations

__all__ = ("MIN_RESENT_PART_CHARS", "PROVIDER", "GeminiNormalizer")

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
from loguru import logger

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
from rxcord.providers.resend import MIN_RESENT_CHARS, ResendFilter
from rxcord.providers.usage import from_gemini

_log = logger.bind(stage="03-normalize", provider="google")

PROVIDER: Final = "google"
"""Provider identity."""

MIN_RESENT_PART_CHARS: Final = MIN_RESENT_CHARS
"""Shortest restatement the resend rule drops (``rxcord.providers.resend``)."""

_BLOCKED_FINISH: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
"""Finish reasons meaning the answer was withheld: a ``content_blocked`` error."""

_FAILED_FINISH: Final[Mapping[str, bool]] = {
    "MALFORMED_FUNCTION_CALL": True,
    "UNEXPECTED_TOOL_CALL": True,
    "TOO_MANY_TOOL_CALLS": True,
    "MISSING_THOUGHT_SIGNATURE": False,
}
"""Finish reasons meaning generation failed, with whether another attempt may succeed."""

_FAILED_MESSAGES: Final[Mapping[str, str]] = {
    "MALFORMED_FUNCTION_CALL": "Gemini generated a malformed function call",
    "UNEXPECTED_TOOL_CALL": "Gemini called a tool although none is enabled",
    "TOO_MANY_TOOL_CALLS": "Gemini made too many tool calls in one turn",
    "MISSING_THOUGHT_SIGNATURE": "Gemini rejected the history: a function call lacks its thought signature",
}


def _thought(entry: ThoughtLogEntry) -> ProcessedChunk:
    return ProcessedChunk.text("", thoughts=(entry,))


def _signature(value: object) -> ThoughtLogEntry | None:
    if isinstance(value, str) and value:
        return ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=value)
    return None


def _blocked_categories(candidate: Mapping[str, Any]) -> list[str]:
    ratings = candidate.get("safetyRatings")
    if not isinstance(ratings, list):
        return []
    return [
        str(rating.get("category"))
        for rating in ratings
        if isinstance(rating, Mapping) and rating.get("blocked") is True
    ]


@attrs.define
class GeminiNormalizer:
    """Stage 03 for one Gemini stream (see the module docstring for what is held back and why)."""

    _emitted: dict[ThoughtKind | None, ResendFilter] = attrs.field(factory=dict, init=False)
    """The resend rule's state per channel (``None``: visible text)."""
    _usage: Usage | None = attrs.field(default=None, init=False)
    """The last usage report."""
    _usage_sent: Usage | None = attrs.field(default=None, init=False)
    _calls: list[FunctionCall] = attrs.field(factory=list, init=False)
    """Function calls held until the response's end."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize one decoded SSE event, a complete response, or a JSON array of responses."""
        if raw.error is not None:
            return self._fail(raw.error)
        data = raw.data
        if isinstance(data, list):
            out: list[ProcessedChunk] = []
            for item in data:
                if isinstance(item, Mapping):
                    out.extend(self._response(item))
                else:
                    _log.debug("filtered a non-object array item: {item!r:.500}", item=item)
            return out
        if isinstance(data, Mapping):
            return self._response(data)
        _log.debug("filtered an unknown chunk: {data!r:.500}", data=data)
        return []

    def finish(self) -> Sequence[ProcessedChunk]:
        """The body ended: release held calls and a usage report not sent yet."""
        out = self._pending_usage()
        out.extend(self._release_calls())
        return out

    # -- one GenerateContentResponse

    def _response(self, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        error = data.get("error")
        if isinstance(error, Mapping):
            return self._fail(classify_stream_error(data, provider=PROVIDER))
        usage_meta = data.get("usageMetadata")
        if isinstance(usage_meta, Mapping):
            usage = from_gemini(usage_meta)
            if usage is not None:
                self._usage = usage
        feedback = data.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        if isinstance(block, str) and block:
            return self._prompt_blocked(block, data)
        candidates = data.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(candidate, Mapping):
            if not isinstance(usage_meta, Mapping):
                _log.debug("filtered an unknown chunk: {data!r:.500}", data=data)
            return []
        out: list[ProcessedChunk] = []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, Mapping):
                    out.extend(self._part(part))
        summary = candidate.get("thoughtSummary")
        fresh = self._fresh(ThoughtKind.SUMMARY, summary) if isinstance(summary, str) else ""
        if fresh:
            out.append(_thought(ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text=fresh)))
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish:
            out.extend(self._finish(finish, candidate))
        return out

    def _part(self, part: Mapping[str, Any]) -> list[ProcessedChunk]:
        signature = _signature(part.get("thoughtSignature"))
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            args = call.get("args")
            call_id = call.get("id")
            self._calls.append(
                FunctionCall(
                    name=str(call.get("name", "")),
                    args=dict(args) if isinstance(args, Mapping) else {},
                    id=call_id if isinstance(call_id, str) and call_id else None,
                    thought_signature=signature.signature if signature is not None else None,
                )
            )
            return [ProcessedChunk.text("", thoughts=(signature,))] if signature is not None else []
        text = part.get("text")
        summary = part.get("thoughtSummary")
        if part.get("thought") is True or isinstance(summary, str):
            # {"text": "", "thoughtSummary": "..."}: the summary is the field that has text.
            body = text if isinstance(text, str) and text else summary
            thoughts: list[ThoughtLogEntry] = []
            fresh = self._fresh(ThoughtKind.SUMMARY, body) if isinstance(body, str) else ""
            if fresh:
                thoughts.append(ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text=fresh))
            if signature is not None:
                thoughts.append(signature)
            return [ProcessedChunk.text("", thoughts=tuple(thoughts))] if thoughts else []
        if isinstance(text, str):
            visible = self._fresh(None, text)
            sig = (signature,) if signature is not None else ()
            return [ProcessedChunk.text(visible, thoughts=sig)] if visible or sig else []
        if signature is not None:
            return [ProcessedChunk.text("", thoughts=(signature,))]
        _log.debug("filtered an unsupported part: {keys}", keys=sorted(part))
        return []

    def _fresh(self, channel: ThoughtKind | None, text: str) -> str:
        """*text* without what it restates of the channel's emitted text (the resend rule)."""
        if not text:
            return ""
        emitted = self._emitted.get(channel)
        if emitted is None:
            emitted = self._emitted[channel] = ResendFilter()
        fresh = emitted.fresh(text)
        if len(fresh) < len(text):
            _log.debug("dropped {n} resent chars of a part", n=len(text) - len(fresh))
        return fresh

    def _finish(self, finish: str, candidate: Mapping[str, Any]) -> list[ProcessedChunk]:
        if finish in _BLOCKED_FINISH:
            categories = _blocked_categories(candidate)
            detail = f" ({', '.join(categories)})" if categories else ""
            error = content_blocked(
                f"Gemini withheld the answer: finish reason {finish}{detail}", code=finish, original=candidate
            )
            return [self._done(FinishReason.CONTENT_FILTER, finish), *self._fail(error)]
        if finish in _FAILED_FINISH:
            failure = ProviderError(
                type=ErrorType.API_ERROR,
                message=_FAILED_MESSAGES[finish],
                retryable=_FAILED_FINISH[finish],
                code=finish,
                original_error=candidate,
            )
            return [self._done(FinishReason.ERROR, finish), *self._fail(failure)]
        if finish == "MAX_TOKENS":
            reason = FinishReason.LENGTH
        elif finish == "STOP":
            reason = FinishReason.TOOL_CALLS if self._calls else FinishReason.STOP
        else:
            _log.debug("finish reason {finish} taken as a normal stop", finish=finish)
            reason = FinishReason.TOOL_CALLS if self._calls else FinishReason.STOP
        return [self._done(reason, finish), *self._release_calls()]

    def _prompt_blocked(self, block: str, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        error = content_blocked(f"Gemini blocked the prompt: {block}", code=block, original=data)
        return [self._done(FinishReason.CONTENT_FILTER, block), *self._fail(error)]

    # -- terminal chunks

    def _done(self, reason: FinishReason, raw_reason: str) -> ProcessedChunk:
        self._usage_sent = self._usage
        return ProcessedChunk.done(finish_reason=reason, raw_finish_reason=raw_reason, usage=self._usage)

    def _pending_usage(self) -> list[ProcessedChunk]:
        if self._usage is None or self._usage == self._usage_sent:
            return []
        self._usage_sent = self._usage
        return [ProcessedChunk.done(usage=self._usage)]

    def _fail(self, error: ProviderError) -> list[ProcessedChunk]:
        # The error ends the stream: held calls die with it, the usage so far goes first.
        self._calls.clear()
        return [*self._pending_usage(), ProcessedChunk.fail(error)]

    def _release_calls(self) -> list[ProcessedChunk]:
        calls, self._calls = self._calls, []
        return [ProcessedChunk.call(call) for call in calls]
