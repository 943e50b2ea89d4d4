"""Nothing recognised is never a silent success (stage 03, issue 14).

A body in a shape the adapter does not speak (a Responses-API event stream sent to a Chat
Completions endpoint, an Anthropic capture replayed as ``--provider openai``, an empty
``200``) gives its normalizer nothing to recognise: every event is filtered. Without this
check the stream would end ``completed`` with no text and no message. ``RecognitionCheck``
wraps an adapter's normalizer and, when the whole stream produced no processed chunk at all,
ends it with a typed, non-retryable ``api_error`` (code ``unrecognized_response``) that says
which shape was expected and, when the events name one, which shape arrived.

Any recognised chunk (text, reasoning, a call, usage, a finish, an error) disarms it for the
rest of the stream, so a legitimately empty reply (a finish with no text) is untouched.
"""

from __future__ import annotations

__all__ = ("UNRECOGNIZED_CODE", "RecognitionCheck", "unrecognized_error")

import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs
from loguru import logger
from rxcord.core.types import ChunkNormalizer, ErrorType, ProcessedChunk, ProviderError, RawStreamChunk

_log = logger.bind(stage="03-normalize")

UNRECOGNIZED_CODE: Final = "unrecognized_response"
"""``ProviderError.code`` of a stream in which nothing was recognised."""

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")


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

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize *raw*; remember whether anything was recognised."""
        out = self.inner.feed(raw)
        if not self._recognised:
            if out:
                self._recognised = True
            else:
                self._events += 1
                if self._hint is None:
                    self._hint = _shape_hint(raw.data)
        return out

    def finish(self) -> Sequence[ProcessedChunk]:
        """The stream ended: the inner normalizer's last chunks, or the error when nothing was recognised."""
        out = self.inner.finish()
        if out or self._recognised:
            return out
        error = unrecognized_error(self.provider, self.expected, self._events, self._hint)
        _log.warning("{message}", message=error.message)
        return [ProcessedChunk.fail(error)]
