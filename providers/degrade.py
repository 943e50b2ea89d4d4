"""Parameter degradation: retry bodies for a rejected payload (stage 02, pure).

When an endpoint rejects a request body, before the stream committed any
output, the transport asks a per-stream ``Degrader`` for the next body to try.
The degrader only builds bodies and decides whether a failure justifies
another attempt; fetching and logging stay with the transport.

Eligibility (per failure, per ``DegradationPolicy``):

* never for 401, 402, 403, 407, 429, rate limits, timeouts, overload or a content block;
* a 4xx (400, 404, 413, 422, ...) or an SSE error after a 200 qualifies only when
  its message names a removable body parameter, or rejects image input that the
  body carries;
* a 502 qualifies with ``policy.degrade_on_502`` (OpenRouter may have routed to an
  incompatible backend); any opaque 5xx with ``policy.retry_opaque_5xx`` (NVIDIA
  uses them for unsupported input); a 5xx that names a parameter always does.

Order of retries:

1. targeted: remove every parameter the message names, together, and replace
   rejected images with a text notice (``IMAGE_REMOVED_NOTICE``), in one step
   (at most ``policy.max_targeted_retries`` such steps);
2. then the static ``policy.optional_removals`` list, prepared only once a
   failure qualifies, each entry removed cumulatively, in order.

``policy.mandatory_body_keys`` are never removed (they carry the reply
contract). No body equal to an attempted one is ever returned: bodies are
compared directly and attempted bodies are kept by reference. Retry bodies are
shallow: untouched values (inline image data among them) are shared with the
original, never copied. All attempts, the first included, are capped by
``policy.max_attempts``. ``encode_body`` is called once per sent attempt.
"""

from __future__ import annotations

__all__ = (
    "IMAGE_REMOVED_NOTICE",
    "Degrader",
    "encode_body",
    "has_images",
    "named_parameters",
    "strip_images",
)

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from rxcord.core.types import ErrorType, ProviderError
from rxcord.providers.base import DegradationPolicy

IMAGE_REMOVED_NOTICE: Final = (
    "[An attached image was removed because this model could not accept it. Do not guess its contents.]"
)
"""The text put in place of each removed image."""

_NEVER: Final = frozenset({401, 402, 403, 407, 429})
_NOT_PAYLOAD: Final = frozenset(
    {ErrorType.RATE_LIMIT, ErrorType.TIMEOUT, ErrorType.PROVIDER_OVERLOADED, ErrorType.CONTENT_BLOCKED}
)
_IMAGE_RE: Final = re.compile(
    r"\b(?:images?|image_url|image input|input_image|vision|multi-?modal|inline_?data)\b", re.IGNORECASE
)
_IMAGE_PART_TYPES: Final = frozenset({"image_url", "image", "input_image"})
_GEMINI_MEDIA_KEYS: Final = frozenset({"inlineData", "inline_data", "fileData", "file_data"})
_RENAMES: Final[Mapping[str, str]] = {"max_tokens": "max_completion_tokens"}
"""A rejected key the error asks to replace ("use 'max_completion_tokens' instead")."""


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON bytes of *body* (compact, UTF-8; called once per sent attempt)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def named_parameters(message: str, body: Mapping[str, Any], mandatory: Iterable[str] = ()) -> tuple[str, ...]:
    """Top-level keys of *body* that *message* names (case-sensitive, whole words), minus *mandatory*.

    ``stream_options.include_usage`` names ``stream_options``; ``Provider`` does
    not name ``provider`` (parameter names are written as sent).
    """
    keep = frozenset(mandatory)
    named = []
    for key in body:
        if key in keep or not key:
            continue
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(key) + r"(?![A-Za-z0-9_])", message):
            named.append(key)
    return tuple(named)


def _is_image_part(part: object) -> bool:
    if not isinstance(part, Mapping):
        return False
    if part.get("type") in _IMAGE_PART_TYPES:
        return True
    return any(key in part for key in _GEMINI_MEDIA_KEYS)


def _message_lists(body: Mapping[str, Any]) -> Iterable[tuple[str, str, list[Any]]]:
    """(body key, content key, message list) pairs: OpenAI/Anthropic ``messages``, Gemini ``contents``."""
    for key, content_key in (("messages", "content"), ("contents", "parts")):
        value = body.get(key)
        if isinstance(value, list):
            yield key, content_key, value


def has_images(body: Mapping[str, Any]) -> bool:
    """Whether *body* carries image input in any message."""
    for _key, content_key, messages in _message_lists(body):
        for message in messages:
            parts = message.get(content_key) if isinstance(message, Mapping) else None
            if isinstance(parts, list) and any(_is_image_part(part) for part in parts):
                return True
    return False


def _notice_part(part: Mapping[str, Any]) -> dict[str, Any]:
    if "type" in part:
        return {"type": "text", "text": IMAGE_REMOVED_NOTICE}
    return {"text": IMAGE_REMOVED_NOTICE}


def strip_images(body: Mapping[str, Any]) -> dict[str, Any]:
    """*body* with every image part replaced by a text notice.

    Only the messages that held an image are rebuilt; every other value is
    shared with *body* (no copy of inline data that stays).
    """
    result = dict(body)
    for key, content_key, messages in _message_lists(body):
        rebuilt: list[Any] = []
        changed = False
        for message in messages:
            parts = message.get(content_key) if isinstance(message, Mapping) else None
            if isinstance(message, Mapping) and isinstance(parts, list) and any(map(_is_image_part, parts)):
                new_parts = [_notice_part(part) if _is_image_part(part) else part for part in parts]
                rebuilt.append({**message, content_key: new_parts})
                changed = True
            else:
                rebuilt.append(message)
        if changed:
            result[key] = rebuilt
    return result


def _without(body: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    drop = frozenset(keys)
    return {key: value for key, value in body.items() if key not in drop}


def _numeric(code: object) -> int | None:
    if isinstance(code, bool):
        return None
    if isinstance(code, int) and 100 <= code <= 599:
        return code
    if isinstance(code, str) and code.isdigit() and 100 <= int(code) <= 599:
        return int(code)
    return None


@attrs.define
class Degrader:
    """Retry bodies for one stream's rejected payloads.

    Args:
        body: The first attempt's body (kept by reference, never mutated).
        policy: The adapter's degradation policy.
    """

    body: Mapping[str, Any]
    policy: DegradationPolicy
    _attempted: list[Mapping[str, Any]] = attrs.field(init=False, factory=list)
    _targeted: int = attrs.field(init=False, default=0)
    _static: list[tuple[str, ...]] | None = attrs.field(init=False, default=None)
    steps: list[tuple[str, ...]] = attrs.field(init=False, factory=list)
    """What each retry removed (``"<images>"`` for image input), for logs."""

    def __attrs_post_init__(self) -> None:
        self._attempted.append(self.body)

    @property
    def attempts(self) -> int:
        """Bodies handed out so far, the first included."""
        return len(self._attempted)

    def eligible(self, error: ProviderError) -> bool:
        """Whether *error* justifies another attempt (ignoring the attempt caps)."""
        current = self._attempted[-1]
        named = named_parameters(error.message, current, self.policy.mandatory_body_keys)
        image = has_images(current) and _IMAGE_RE.search(error.message) is not None
        return self._qualifies(error, informative=bool(named) or image)

    def _qualifies(self, error: ProviderError, *, informative: bool) -> bool:
        if not self.policy.enabled or error.type in _NOT_PAYLOAD:
            return False
        status = error.status
        if status is None or status < 400:
            # An error event after a 200: its status-like code, if any, stands in.
            status = _numeric(error.code)
            if status is None:
                return informative
        if status in _NEVER:
            return False
        if status < 500:
            return informative
        if status == 502 and self.policy.degrade_on_502:
            return True
        return self.policy.retry_opaque_5xx or informative

    def next_body(self, error: ProviderError) -> dict[str, Any] | None:
        """The next body to try after *error*, or ``None`` when no retry is justified."""
        policy = self.policy
        if not policy.enabled or len(self._attempted) >= policy.max_attempts:
            return None
        current = self._attempted[-1]
        named = named_parameters(error.message, current, policy.mandatory_body_keys)
        image = has_images(current) and _IMAGE_RE.search(error.message) is not None
        if not self._qualifies(error, informative=bool(named) or image):
            return None
        if (named or image) and self._targeted < policy.max_targeted_retries:
            candidate = self._targeted_body(current, named, image, error.message)
            if candidate != current and not self._seen(candidate):
                self._targeted += 1
                return self._accept(candidate, named + (("<images>",) if image else ()))
        if self._static is None:
            # Prepared only now: a stream whose first failure never qualifies never builds it.
            self._static = list(policy.optional_removals)
        while self._static:
            keys = self._static.pop(0)
            removable = tuple(key for key in keys if key in current and key not in policy.mandatory_body_keys)
            if not removable:
                continue
            candidate = _without(current, removable)
            if not self._seen(candidate):
                return self._accept(candidate, removable)
        return None

    def _targeted_body(
        self, current: Mapping[str, Any], named: tuple[str, ...], image: bool, message: str
    ) -> dict[str, Any]:
        candidate = _without(current, named)
        for old, new in _RENAMES.items():
            # "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens' instead."
            if old in named and new not in current and re.search(rf"\b{new}\b", message):
                candidate[new] = current[old]
        return strip_images(candidate) if image else candidate

    def _seen(self, candidate: Mapping[str, Any]) -> bool:
        # Attempted bodies share their untouched values with the candidate, so == stops early on identity.
        return any(candidate == attempted for attempted in self._attempted)

    def _accept(self, candidate: dict[str, Any], removed: tuple[str, ...]) -> dict[str, Any]:
        self._attempted.append(candidate)
        self.steps.append(removed)
        return candidate
