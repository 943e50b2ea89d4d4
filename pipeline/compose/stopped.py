"""What a stopped stream leaves behind: the messages Discord holds and an estimate of its usage.

Two facts the chain cannot see by itself once a stop ended it early:

* **The messages.** A kill disposes everything upstream of ``collect_result`` at once, a send
  in progress included, so a ``Delivery`` that was not reported yet never reaches the result
  (aggregated and live: a segment's first messages were sent, the rest was cut; edit mode: the
  previews are reported only with the final text). The delivery itself knows what Discord
  accepted (``DiscordDelivery.held``, ``EditInPlaceDelivery.shown``); ``held_messages`` makes
  ``StreamResult.messages`` that list, and ``accumulated_text`` their contents, after a kill
  or an interrupt. A create still in flight when the kill landed is not known (no answer came):
  Discord may hold it without the result listing it.
* **The usage.** A provider reports usage at the end of its response; a stream stopped,
  interrupted or killed before then reports none, and every stop would leak its cost.
  ``estimated_usage`` gives such a result an estimate, flagged ``Usage.estimated``: the input
  from the request body's text (messages, system prompt, tools; inline file data and URLs
  skipped), the output from the text and reasoning generated so far, both at about four
  characters a token (``CHARS_PER_TOKEN``, the estimator ``rxcord.providers.usage`` uses for a
  response without usage). Only when the request was sent: a stream stopped before it spent
  nothing.
"""

from __future__ import annotations

__all__ = ("CHARS_PER_TOKEN", "estimate_tokens", "estimated_usage", "held_messages", "prompt_chars")

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rxcord.core.state import SentMessage, StreamResult
from rxcord.core.types import StreamStatus, Usage

CHARS_PER_TOKEN: Final = 4
"""About four characters a token: the documented estimate (English prose, most tokenizers)."""

_ABANDONED: Final = frozenset({StreamStatus.KILLED, StreamStatus.FOLLOW_UP_INTERRUPT})
"""Endings whose last deliveries may not have been reported (a kill disposes them)."""
_STOPPED: Final = frozenset(
    {
        StreamStatus.STOPPED_BY_USER,
        StreamStatus.FOLLOW_UP_INTERRUPT,
        StreamStatus.KILLED,
        StreamStatus.SEND_MESSAGE_LIMIT,
        StreamStatus.FLUSH_LIMIT,
        StreamStatus.SPEAKER_GUARD,
        StreamStatus.CHANNEL_DELETED,
        StreamStatus.MISSING_ACCESS,
        StreamStatus.STREAM_DEADLINE,
    }
)
"""Endings by a stop: the response may have been cut before its usage arrived."""
_NOT_TEXT: Final = frozenset({"model", "data", "url", "image_url", "file_data", "file_uri", "signature"})
"""Body keys whose strings are not prompt text (identifiers, inline files, links, signatures)."""


def held_messages(result: StreamResult, held: Sequence[SentMessage]) -> StreamResult:
    """*result* listing the messages Discord holds (*held*), when a kill or an interrupt ended it."""
    if result.status not in _ABANDONED or tuple(held) == result.messages:
        return result
    messages = tuple(held)
    text = "\n".join(_content(message) for message in messages)
    return attrs.evolve(result, messages=messages, accumulated_text=text)


def estimated_usage(result: StreamResult, body: Mapping[str, Any], *, sent: bool) -> StreamResult:
    """*result* with estimated usage when a stop ended it before the provider reported any."""
    if result.usage is not None or not sent or result.status not in _STOPPED:
        return result
    generated = len(result.visible_text) + len(result.reasoning or "")
    generated += sum(len(call.name) + len(str(dict(call.args))) for call in result.function_calls)
    usage = Usage(
        input_tokens=estimate_tokens(prompt_chars(body)),
        output_tokens=estimate_tokens(generated),
        estimated=True,
    )
    return attrs.evolve(result, usage=usage)


def estimate_tokens(chars: int) -> int:
    """Tokens for *chars* characters (``CHARS_PER_TOKEN``, rounded up)."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def prompt_chars(body: Mapping[str, Any]) -> int:
    """Characters of prompt text in a request *body*: every string leaf but ``_NOT_TEXT``'s.

    Iterative (a deep body cannot exhaust the stack) and linear in the body's size.
    """
    total = 0
    pending: list[object] = [body]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            total += len(node)
        elif isinstance(node, Mapping):
            pending.extend(value for key, value in node.items() if key not in _NOT_TEXT)
        elif isinstance(node, list | tuple):
            pending.extend(node)
    return total


def _content(message: SentMessage) -> str:
    content = message.payload.get("content")
    return content if isinstance(content, str) else ""
