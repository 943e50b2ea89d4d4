"""Nothing recognised is never a silent success (stage 03).

A body in a shape the adapter does not speak (a Responses-API event stream sent to a Chat
Completions endpoint, an Anthropic capture replayed as ``--provider openai``, an empty
``200``) gives its normalizer nothing to recognise: every event is filtered. Without this
check the stream would end ``completed`` with no text and no message. ``RecognitionCheck``
wraps an adapter's normalizer and, when the whole stream produced no processed chunk at all,
ends it with a typed, non-retryable ``api_error`` (code ``unrecognized_response``) that says
which shape was expected and, when the events name one, which shape arrived.

Any recognised chunk (text, reasoning, a call, usage, a finish, an error) disarms it for the
rest of the stream, so a legitimately empty reply (a finish with no text) is untouched. One
error does not: the transport's ``truncated_stream`` after events of which none was recognised
(a body in another shape lacks this shape's end marker too) is reported as unrecognised.

The same wrapper notes the provider's identity of the response (``chatcmpl-...``,
OpenRouter's ``gen-...``, Anthropic's ``msg_...``, Gemini's ``responseId``: bounded to 128
identifier characters) and puts it on every ``done`` chunk's metadata as ``request_id``, so
usage reports carry it (``rxcord.providers.usage.UsageReport``).

It also keeps the stream's order visible to the spill guard: once visible text has come
out of the normalizer, a later chunk carrying reasoning is marked ``after_text`` in its
metadata. A think-tag start window may hold that text back and let the reasoning chunk
pass first; the mark tells the spill guard that the text came first (it then never fires).
"""

from __future__ import annotations

__all__ = ("UNRECOGNIZED_CODE", "RecognitionCheck", "response_id", "unrecognized_error")

import re
from collections.abc import Mapping, Sequence
from typing import ClassVar, Final

import attrs
from loguru import logger

from rxcord.core.types import (
    ChunkNormalizer,
    ChunkType,
    ErrorType,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
)
from rxcord.operators.normalize import normalization_failure
from rxcord.operators.reasoning.spill_guard import AFTER_TEXT
from rxcord.providers.transport import TRUNCATED

_log = logger.bind(stage="03-normalize")

UNRECOGNIZED_CODE: Final = "unrecognized_response"
"""``ProviderError.code`` of a stream in which nothing was recognised."""

_DONE: Final = ChunkType.DONE

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")


def response_id(data: object) -> str | None:
    """The provider's id of the response in one decoded event, if it carries one."""
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, Mapping):
        return None
    message = data.get("message")
    candidates = (
        data.get("responseId"),
        message.get("id") if isinstance(message, Mapping) else None,
        data.get("id"),
    )
    for value in candidates:
        if isinstance(value, str) and _REQUEST_ID.fullmatch(value):
            return value
    return None


def _shape_hint(data: object) -> str | None:
    """A short, safe name for what an event looks like (its ``type`` or ``object``), if any."""
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, Mapping):
        return None
    for key in ("type", "object"):
        value = data.get(key)
        if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
            return value
    return None


def _cut(raw: RawStreamChunk) -> bool:
    """Whether *raw* is the transport's report of a stream that ended before its end marker."""
    return raw.error is not None and raw.error.code == TRUNCATED


def unrecognized_error(provider: str, expected: str, events: int, hint: str | None) -> ProviderError:
    """The error of a stream of *events* events in which nothing was recognised as *expected*."""
    if events == 0:
        what = "the response body was empty"
    else:
        what = f"nothing in its {events} event{'s' if events != 1 else ''} was recognised"
        if hint:
            what += f" (the first is a {hint!r} event)"
    return ProviderError(
        type=ErrorType.API_ERROR,
        message=(
            f"{provider}: the response is not a {expected} stream: {what}; "
            "is the endpoint (or the provider) the right one?"
        ),
        retryable=False,
        code=UNRECOGNIZED_CODE,
    )


@attrs.define
class RecognitionCheck:
    """A ``ChunkNormalizer`` that ends a stream it recognised nothing in with an ``api_error``.

    Args:
        inner: The adapter's normalizer.
        provider: Provider identity, for the message.
        expected: The wire shape the adapter speaks (``"Chat Completions"``).
    """

    inner: ChunkNormalizer
    provider: str
    expected: str
    _recognised: bool = attrs.field(default=False, init=False)
    _events: int = attrs.field(default=0, init=False)
    _hint: str | None = attrs.field(default=None, init=False)
    _id: str | None = attrs.field(default=None, init=False)
    _text_seen: bool = attrs.field(default=False, init=False)
    _steady: bool = attrs.field(default=False, init=False)
    """Recognised, the id looked for, visible text seen: only reasoning and ``done`` need work."""
    catches_failures: ClassVar[bool] = True
    """A failure (the inner normalizer's or its own) is the error chunk ``normalize`` makes of it:
    stage 03 feeds this check directly, with no wrapper per stream (``rxcord.operators.normalize``)."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize *raw*; remember whether anything was recognised, and the response's id."""
        # The body in one try (no call of its own): an exception is the error chunk, as normalize makes it.
        try:
            if not self._recognised and self._events and _cut(raw):
                # Events came, none recognised, then no end marker: a body in another shape ends
                # without this one's marker, and the shape is the better diagnosis of the two.
                self._recognised = True
                return [
                    ProcessedChunk.fail(
                        unrecognized_error(self.provider, self.expected, self._events, self._hint)
                    )
                ]
            out = self.inner.feed(raw)
            if self._steady:
                # The common chunk of a long answer: one text chunk without reasoning.
                for chunk in out:
                    if chunk.thoughts or chunk.type is _DONE:
                        return self._marked(out)
                return out
            if self._id is None:
                self._id = response_id(raw.data)
            if not out:
                if not self._recognised:
                    self._events += 1
                    if self._hint is None:
                        self._hint = _shape_hint(raw.data)
                return out
            # The id is in the first recognised event when the provider sends one (Anthropic's
            # message_start, every OpenAI and Gemini chunk): later events are not searched.
            self._recognised = True
            out = self._marked(out)
            self._steady = self._text_seen
            return out
        except Exception as exc:
            return normalization_failure(exc, raw)

    def finish(self) -> Sequence[ProcessedChunk]:
        """The stream ended: the inner normalizer's last chunks, or the error when nothing was recognised."""
        try:
            out = self.inner.finish()
            if out or self._recognised:
                return self._marked(out) if out else out
        except Exception as exc:
            return normalization_failure(exc)
        error = unrecognized_error(self.provider, self.expected, self._events, self._hint)
        _log.warning("{message}", message=error.message)
        return [ProcessedChunk.fail(error)]

    def _marked(self, chunks: Sequence[ProcessedChunk]) -> Sequence[ProcessedChunk]:
        """*chunks* with ``after_text`` on reasoning after visible text and the id on ``done``."""
        out: list[ProcessedChunk] | None = None
        for index, chunk in enumerate(chunks):
            metadata = None
            if chunk.thoughts and self._text_seen:
                metadata = {**chunk.metadata, AFTER_TEXT: True}
            if chunk.type is _DONE and self._id is not None and "request_id" not in chunk.metadata:
                metadata = {**(metadata or chunk.metadata), "request_id": self._id}
            if chunk.type is ChunkType.TEXT and not self._text_seen:
                content = chunk.content
                self._text_seen = bool(content) and not content.isspace()
            if metadata is not None:
                if out is None:
                    out = list(chunks[:index])
                out.append(attrs.evolve(chunk, metadata=metadata))
            elif out is not None:
                out.append(chunk)
        return chunks if out is None else out
