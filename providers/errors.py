"""Provider failures, classified once (stage 03 error normalisation).

Every adapter and the shared transport turn HTTP statuses, SSE error events
and transport exceptions into a ``rxcord.core.types.ProviderError`` here, so the
retry loop and the error embed never look at provider-specific shapes. The
table (first matching row wins):

| failure                                                                 | type                | retryable |
|-------------------------------------------------------------------------|---------------------|-----------|
| HTTP 429, quota exhausted (``insufficient_quota``, ``RESOURCE_EXHAUSTED``) | rate_limit       | yes       |
| HTTP 408, first-byte or idle timeout                                    | timeout             | yes       |
| overloaded: Anthropic 529 / ``overloaded_error``, 503 ``UNAVAILABLE``,  | provider_overloaded | yes       |
|   "overloaded" in a 5xx or stream error                                 |                     |           |
| prompt or output blocked by safety (``content_filter``, moderation      | content_blocked     | no        |
|   ``reasons``/``flagged_input``, content-policy wording)                |                     |           |
| unknown/unavailable model: a 404/410/400/422 whose body says the model  | model_error         | no        |
|   is unknown or unavailable (see below)                                 |                     |           |
| other 404 (nothing at that path: a wrong ``base_url``)                  | api_error           | no        |
| other upstream 5xx, mid-stream ``server_error``, connection reset       | api_error           | yes       |
| 400 (other), 401, 402, 403, other 4xx                                   | api_error           | no        |

A status alone never makes a ``model_error``: a 404 is one only when its body
says the model is unknown or unavailable (OpenAI and compatible servers:
``code: model_not_found`` or "The model ``x`` does not exist"; Anthropic:
``not_found_error`` with ``model: x``; Gemini: ``NOT_FOUND`` "models/x is not
found"; OpenRouter: "No endpoints found ..." or "No allowed providers ...";
NVIDIA: "Function 'id': Not found for account", a model's function). Any other
404 is an ``api_error`` (code ``endpoint_not_found``) whose message names the
URL path that answered 404 and says to check ``base_url``.

OpenRouter's ``error.metadata.limit_source`` names the limit that refused a
request (a 402: the key's credits, its own cap, its in-flight budget); a valid
one (an identifier) becomes the error's ``code``, and ``provider_limit`` reads it
back validated, with ``minimum_balance``: the same validation the Decision
capability applies to its failed results.

A ``model_error`` keeps the provider's whole message, so the supported model
ids some providers list reach the user. Messages never carry secrets:
``scrub`` removes API keys (``sk-...``, ``nvapi-...``, ``AIza...``),
``Bearer`` tokens and ``key=`` query parameters from every message built here.

An SSE error event has no HTTP status of its own: its status-like fields
(OpenRouter's numeric ``code``, Gemini's ``status`` name, Anthropic's error
``type``, OpenAI's ``server_error``) stand in for one, and ``ProviderError.status``
stays ``None`` (that is how stage 02 tells an error after a 200 from an HTTP one).
"""

from __future__ import annotations

__all__ = (
    "ENDPOINT_NOT_FOUND",
    "ErrorFacts",
    "ProviderLimit",
    "classify_exception",
    "classify_http_error",
    "classify_stream_error",
    "content_blocked",
    "describe_error",
    "error_facts",
    "provider_limit",
    "scrub",
)

import asyncio
import math
import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
import attrs

from rxcord.core.locale import current_text
from rxcord.core.types import ErrorType, ProviderError

_MAX_MESSAGE: Final = 3000
"""Cap on a classified message (a supported-model list fits; an HTML error page does not)."""
_EMBED_LIMIT: Final = 4096
"""Discord's embed description limit."""

_SECRET_PATTERNS: Final = (
    (re.compile(r"\bBearer\s+[^\s\"',;]+", re.IGNORECASE), "Bearer [redacted]"),
    (re.compile(r"\b(sk|nvapi|xai|gsk|pk)-[A-Za-z0-9_\-*.]{4,}"), r"\1-[redacted]"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{10,}"), "[redacted]"),
    (
        re.compile(r"([?&](?:key|api[_-]?key|access_token|token|auth)=)[^&\s\"'#]+", re.IGNORECASE),
        r"\1[redacted]",
    ),
    (re.compile(r"(\b(?:x-)?api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+", re.IGNORECASE), r"\1[redacted]"),
)


def scrub(text: str) -> str:
    """*text* with API keys, bearer tokens and ``key=`` query parameters replaced by ``[redacted]``."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@attrs.frozen(kw_only=True)
class ErrorFacts:
    """What an error body says, whatever its provider's shape."""

    message: str = ""
    """The provider's own message (unscrubbed; ``classify_*`` scrub it)."""
    code: str | int | None = None
    """``error.code`` (OpenAI ``model_not_found``, OpenRouter ``429``, Gemini ``503``)."""
    kind: str | None = None
    """``error.type`` or ``error.status`` (``invalid_request_error``, ``UNAVAILABLE``)."""
    param: str | None = None
    """OpenAI's ``error.param``: the request field the error is about."""
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    """OpenRouter's ``error.metadata`` (``raw``, ``provider_name``, moderation ``reasons``)."""


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _detail_text(detail: object) -> str:
    if isinstance(detail, str):
        return detail.strip()
    if isinstance(detail, list):
        # FastAPI-style validation errors: [{"loc": [...], "msg": "..."}]
        parts = []
        for item in detail:
            if isinstance(item, Mapping):
                loc = ".".join(str(piece) for piece in item.get("loc", ()) if piece != "body")
                msg = _text(item.get("msg")) or _text(item.get("message"))
                parts.append(f"{loc}: {msg}" if loc else msg)
            elif isinstance(item, str):
                parts.append(item)
        return "; ".join(part for part in parts if part)
    return ""


_TITLE_RE: Final = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _plain_body(text: str) -> str:
    text = text.strip()
    if text.startswith("<"):
        # An HTML error page from a proxy: its title is the only readable part.
        match = _TITLE_RE.search(text)
        return " ".join(match.group(1).split()) if match else ""
    return text[:1000]


def error_facts(body: object) -> ErrorFacts:
    """Read message, code, type and param out of any provider's error body.

    Understands OpenAI/OpenRouter ``{"error": {...}}``, Anthropic
    ``{"type": "error", "error": {...}}``, Gemini ``{"error": {"code", "status"}}``
    (also wrapped in a list), NVIDIA problem details ``{"status", "title", "detail"}``,
    vLLM ``{"object": "error", "message", "type", "code"}``, ``{"error": "text"}``
    and plain text or HTML bodies.
    """
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        return ErrorFacts(message=_plain_body(body))
    if isinstance(body, list):
        return error_facts(body[0]) if body else ErrorFacts()
    if not isinstance(body, Mapping):
        return ErrorFacts()
    err = body.get("error")
    if isinstance(err, Mapping):
        metadata = err.get("metadata")
        return ErrorFacts(
            message=_text(err.get("message")) or _text(err.get("msg")) or _detail_text(err.get("detail")),
            code=_code(err.get("code")),
            kind=_text(err.get("type")) or _text(err.get("status")) or None,
            param=_text(err.get("param")) or None,
            metadata=metadata if isinstance(metadata, Mapping) else {},
        )
    message = (
        _text(err)
        or _text(body.get("message"))
        or _detail_text(body.get("detail"))
        or _text(body.get("title"))
        or _text(body.get("msg"))
    )
    kind = body.get("type")
    return ErrorFacts(
        message=message,
        code=_code(body.get("code")) if body.get("code") is not None else _code(body.get("status")),
        kind=kind if isinstance(kind, str) and kind not in ("error", "about:blank") else None,
        param=_text(body.get("param")) or None,
    )


def _code(value: object) -> str | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value:
        return value
    return None


def _numeric(code: str | int | None) -> int | None:
    if isinstance(code, int) and 100 <= code <= 599:
        return code
    if isinstance(code, str) and code.isdigit() and 100 <= int(code) <= 599:
        return int(code)
    return None


# Status-like names that stand in for an HTTP status in SSE error events.
_KIND_STATUS: Final[Mapping[str, int]] = {
    # Anthropic error types
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
    # Google RPC status names
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
    # OpenAI codes and types
    "server_error": 500,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "model_not_found": 404,
    "timeout": 408,
}

_QUOTA: Final = frozenset(
    {"insufficient_quota", "rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED", "quota_exceeded"}
)
_OVERLOADED_KINDS: Final = frozenset({"overloaded_error", "overloaded"})
_TIMEOUT_KINDS: Final = frozenset({"timeout", "DEADLINE_EXCEEDED", "request_timeout"})
_BLOCK_CODES: Final = frozenset(
    {
        "content_filter",
        "content_policy_violation",
        "content_blocked",
        "moderation_blocked",
        "safety",
        "prohibited_content",
        "blocklist",
        "spii",
        "responsible_ai_policy_violation",
    }
)
_BLOCK_RE: Final = re.compile(
    r"\bflagged\b|content[ _-](?:management[ _-])?polic(?:y|ies)|\bcontent[ _-]filter"
    r"|\bmoderation\b|\bsafety (?:system|filters?|polic(?:y|ies)|reasons?)\b"
    r"|\bblocked (?:by|due to|for) (?:the )?(?:safety|content|moderation|policy)"
    r"|\bprompt (?:was )?blocked\b|\bresponsible ai\b|\bviolat\w* (?:our|the) (?:usage|content|safety) polic",
    re.IGNORECASE,
)
_MODEL_RE: Final = re.compile(
    r"model_not_found|\bno such model\b|\bnot a valid model\b|\binvalid model\b|\bunknown model\b"
    r"|\bunsupported model\b"
    # "model" then, within the same sentence (a dot inside a model id does not end it), a refusal
    r"|\bmodel[s]?\b(?:[^.\n]|\.(?=\S)){0,100}?\b(?:not found|does not exist|doesn't exist|not exist"
    r"|is not (?:a )?valid|is not supported|not supported|is not available|no longer (?:available|supported)"
    r"|unavailable|deprecated|decommissioned|end of life|has been removed|is invalid)\b",
    re.IGNORECASE,
)
_OVERLOADED_RE: Final = re.compile(r"\boverloaded\b", re.IGNORECASE)
_MODEL_404_RE: Final = re.compile(
    # Anthropic's not_found_error names the model as "model: claude-x"; OpenRouter has no
    # endpoint (or no allowed provider) for the model; NVIDIA serves each model as a function.
    r"^\s*model:\s*\S|\bno endpoints found\b|\bno allowed providers\b"
    r"|\bfunction\s+'[^']*':\s*not found for account\b",
    re.IGNORECASE,
)

ENDPOINT_NOT_FOUND: Final = "endpoint_not_found"
"""The code of a 404 that is not about the model: nothing answers at that URL path."""

_LIMIT_SOURCE_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")


@attrs.frozen(kw_only=True)
class ProviderLimit:
    """Validated limit metadata of a failure (OpenRouter ``error.metadata``); never provider prose."""

    limit_source: str | None = None
    """Which limit refused the request (``openrouter_key_limit``): an identifier, or ``None``."""
    minimum_balance: float | None = None
    """The minimum balance a media output needs, when the provider named one (finite, >= 0)."""


def _limit(metadata: Mapping[str, Any]) -> ProviderLimit | None:
    source = metadata.get("limit_source")
    minimum = metadata.get("minimum_balance")
    valid_source = source if isinstance(source, str) and _LIMIT_SOURCE_RE.fullmatch(source) else None
    valid_minimum = (
        float(minimum)
        if isinstance(minimum, (int, float))
        and not isinstance(minimum, bool)
        and math.isfinite(minimum)
        and minimum >= 0
        else None
    )
    if valid_source is None and valid_minimum is None:
        return None
    return ProviderLimit(limit_source=valid_source, minimum_balance=valid_minimum)


def provider_limit(failure: ProviderError | object) -> ProviderLimit | None:
    """The validated limit metadata behind *failure* (a ``ProviderError`` or an error body).

    The stream path and denial translators read OpenRouter's ``limit_source`` and
    ``minimum_balance`` here, never from the body themselves.
    """
    body = failure.original_error if isinstance(failure, ProviderError) else failure
    return _limit(error_facts(body).metadata) if isinstance(body, (Mapping, list)) else None


def _is_blocked(facts: ErrorFacts, status: int | None) -> bool:
    if status is not None and status >= 500:
        return False
    for value in (facts.code, facts.kind):
        if isinstance(value, str) and value.lower() in _BLOCK_CODES:
            return True
    if "reasons" in facts.metadata and "flagged_input" in facts.metadata:
        return True
    return bool(_BLOCK_RE.search(facts.message))


def _model_unavailable(facts: ErrorFacts) -> bool:
    """Whether a 404's body says the model is unknown or unavailable (not a wrong path)."""
    return _names_model(facts) or _MODEL_404_RE.search(facts.message) is not None


def _names_model(facts: ErrorFacts) -> bool:
    if facts.param == "model" or facts.code == "model_not_found" or facts.kind == "model_not_found":
        return True
    if facts.param:
        # The error is about another request field ("temperature ... with this model").
        return False
    return bool(_MODEL_RE.search(facts.message))


def _compose(facts: ErrorFacts, fallback: str) -> str:
    message = facts.message or fallback
    if facts.param and facts.param not in message:
        message = f"{message} [param: {facts.param}]"
    raw = facts.metadata.get("raw")
    if isinstance(raw, Mapping):
        raw = error_facts(raw).message
    if isinstance(raw, str) and raw.strip() and raw.strip() not in message:
        # OpenRouter wraps the backend's words ("Provider returned error") around the useful part.
        message = f"{message}: {raw.strip()[:1000]}"
    served_by = facts.metadata.get("provider_name")
    if isinstance(served_by, str) and served_by and served_by not in message:
        message = f"{message} (via {served_by})"
    reasons = facts.metadata.get("reasons")
    if isinstance(reasons, list) and reasons:
        message = f"{message} (reasons: {', '.join(str(reason) for reason in reasons)})"
    message = scrub(message)
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    return message


def _reason_phrase(status: int) -> str:
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _classify(
    effective: int | None,
    facts: ErrorFacts,
    *,
    message: str,
    http_status: int | None,
    original: object,
) -> ProviderError:
    code: str | int | None = facts.code if facts.code is not None else facts.kind or effective
    kind = facts.kind or ""
    code_text = code if isinstance(code, str) else ""

    def make(error_type: ErrorType, retryable: bool) -> ProviderError:
        return ProviderError(
            type=error_type,
            message=message,
            retryable=retryable,
            code=code if code is not None else error_type.value,
            status=http_status,
            original_error=original,
        )

    limit = _limit(facts.metadata)
    if limit is not None and limit.limit_source is not None:
        code = limit.limit_source  # which limit refused: an identifier the turn runner reads
    if effective == 429 or kind in _QUOTA or code_text in _QUOTA:
        return make(ErrorType.RATE_LIMIT, True)
    if effective == 408 or kind in _TIMEOUT_KINDS or code_text in _TIMEOUT_KINDS:
        return make(ErrorType.TIMEOUT, True)
    server_side = effective is None or effective >= 500
    if (
        effective == 529
        or kind in _OVERLOADED_KINDS
        or code_text in _OVERLOADED_KINDS
        or (effective == 503 and kind == "UNAVAILABLE")
        or (server_side and _OVERLOADED_RE.search(facts.message) is not None)
    ):
        return make(ErrorType.PROVIDER_OVERLOADED, True)
    if _is_blocked(facts, effective):
        return make(ErrorType.CONTENT_BLOCKED, False)
    if effective == 404 and _model_unavailable(facts):
        return make(ErrorType.MODEL_ERROR, False)
    if effective in (None, 400, 410, 422) and _names_model(facts):
        return make(ErrorType.MODEL_ERROR, False)
    if server_side:
        return make(ErrorType.API_ERROR, True)
    return make(ErrorType.API_ERROR, False)


def classify_http_error(
    status: int,
    body: object,
    *,
    provider: str,
    headers: Mapping[str, str] | None = None,
    url: str | None = None,
) -> ProviderError:
    """Classify an HTTP error response (see the module table).

    Args:
        status: The HTTP status. A 2xx status with an error body (OpenRouter's
            non-streamed mid-generation failure) is classified like an SSE error event.
        body: The decoded JSON body, or the body text when it was not JSON.
        provider: Provider identity, for messages.
        headers: Response headers; ``Retry-After`` is kept in a rate-limit message.
        url: The request's URL: a 404 that is not about the model names its path (only the
            path: a query may hold a key).

    Returns:
        The normalized error; ``status`` is set, ``original_error`` holds *body*.
    """
    if status < 400:
        error = classify_stream_error(
            body if isinstance(body, Mapping) else {"error": body}, provider=provider
        )
        return attrs.evolve(error, status=status)
    facts = error_facts(body)
    message = _compose(facts, _reason_phrase(status))
    error = _classify(status, facts, message=message, http_status=status, original=body)
    retry_after = _retry_after(headers)
    if retry_after and error.type in (ErrorType.RATE_LIMIT, ErrorType.PROVIDER_OVERLOADED):
        error = attrs.evolve(error, message=f"{error.message} (retry after {retry_after} s)")
    if status == 404 and error.type is ErrorType.API_ERROR:
        error = _wrong_path(error, url)
    return error


def _wrong_path(error: ProviderError, url: str | None) -> ProviderError:
    """A 404 not about the model: the endpoint is missing, so say which path and what to check."""
    path = scrub(urlsplit(url).path) if url else ""
    where = f"at {path}" if path else "at the request's path"
    hint = f"nothing answers {where} (HTTP 404): check base_url, the API root the endpoint path is added to"
    message = error.message.rstrip(". ")
    return attrs.evolve(error, message=f"{message}. {hint[0].upper()}{hint[1:]}.", code=ENDPOINT_NOT_FOUND)


def _retry_after(headers: Mapping[str, str] | None) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == "retry-after" and value.strip().replace(".", "", 1).isdigit():
            return value.strip()
    return None


def classify_stream_error(payload: Mapping[str, Any], *, provider: str) -> ProviderError:
    """Classify an error event that arrived inside a stream (after a 200).

    Shapes: OpenAI ``{"error": {"type": "server_error", ...}}``; OpenRouter
    ``{"error": {"code": 502, "message": ...}, "choices": [{"finish_reason": "error"}]}``;
    Anthropic ``{"type": "error", "error": {"type": "overloaded_error", ...}}``;
    Gemini ``{"error": {"code": 503, "status": "UNAVAILABLE", ...}}``. A chunk that
    only says ``finish_reason: "error"`` is a retryable ``api_error``.

    Returns:
        The normalized error, ``status`` ``None``.
    """
    facts = error_facts(payload)
    effective = _numeric(facts.code)
    if effective is None:
        for name in (facts.kind, facts.code):
            if isinstance(name, str) and name in _KIND_STATUS:
                effective = _KIND_STATUS[name]
                break
    fallback = f"{provider} stream failed"
    if not facts.message and _finish_is_error(payload):
        fallback = f"{provider} ended the stream with finish_reason 'error'"
    message = _compose(facts, fallback)
    return _classify(effective, facts, message=message, http_status=None, original=dict(payload))


def _finish_is_error(payload: Mapping[str, Any]) -> bool:
    choices = payload.get("choices")
    if isinstance(choices, list):
        return any(isinstance(c, Mapping) and c.get("finish_reason") == "error" for c in choices)
    return False


def classify_exception(exc: BaseException, *, provider: str) -> ProviderError:
    """Classify a transport exception.

    Timeouts (``TimeoutError``, ``asyncio.TimeoutError``, aiohttp's
    ``ServerTimeoutError`` and connection timeouts) are retryable ``timeout``
    errors. A dropped connection (``ServerDisconnectedError``,
    ``ClientPayloadError``, ``ConnectionResetError``, any other
    ``aiohttp.ClientError`` or ``OSError``) is a retryable ``api_error``.
    Anything else is a non-retryable ``api_error``.
    """
    name = type(exc).__name__
    detail = scrub(str(exc))[:500]
    text = f"{name}: {detail}" if detail else name
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return ProviderError(
            type=ErrorType.TIMEOUT,
            message=f"{provider} did not answer in time ({text})",
            retryable=True,
            code="timeout",
            original_error=exc,
        )
    if isinstance(exc, (aiohttp.ClientError, ConnectionError, OSError)):
        return ProviderError(
            type=ErrorType.API_ERROR,
            message=f"connection to {provider} failed ({text})",
            retryable=True,
            code=name,
            original_error=exc,
        )
    return ProviderError(
        type=ErrorType.API_ERROR,
        message=f"{provider} request failed ({text})",
        retryable=False,
        code=name,
        original_error=exc,
    )


def content_blocked(message: str, *, code: str | int | None = None, original: object = None) -> ProviderError:
    """A non-retryable ``content_blocked`` error (a safety block in the prompt or the reply)."""
    return ProviderError(
        type=ErrorType.CONTENT_BLOCKED,
        message=scrub(message),
        retryable=False,
        code=code if code is not None else ErrorType.CONTENT_BLOCKED.value,
        original_error=original,
    )


_DISPLAY: Final[Mapping[str, str]] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "nvidia": "NVIDIA NIM",
    "custom": "The custom endpoint",
    "google": "Google Gemini",
    "gemini": "Google Gemini",
    "anthropic": "Anthropic",
}

_HEADLINES: Final[Mapping[ErrorType, str]] = {
    ErrorType.RATE_LIMIT: (
        "{provider} is rate limiting requests or the quota is used up. Wait or use another key."
    ),
    ErrorType.TIMEOUT: "{provider} did not answer in time.",
    ErrorType.PROVIDER_OVERLOADED: "{provider} is overloaded right now. Try again in a moment.",
    ErrorType.MODEL_ERROR: "{provider} cannot serve the selected model. Choose a model this provider offers.",
    ErrorType.CONTENT_BLOCKED: "{provider} blocked the prompt or the reply for safety reasons.",
    ErrorType.API_ERROR: "{provider} returned an error{status}.",
}
"""The built-in (English) headlines; the locale catalog's ``error.headline.<type>`` replaces them."""
_WRONG_PATH_HEADLINE: Final = "{provider} has no endpoint at the request's URL (HTTP 404). Check base_url."


def describe_error(error: ProviderError, *, provider: str) -> str:
    """The error embed's text for *error*: a headline for its type, then the provider's details.

    A ``model_error`` keeps the provider's message whole (up to the embed limit),
    so a list of supported model ids is shown, not hidden behind "Bad Request". The headline
    is in the stream's locale (``rxcord.core.locale.current_text``: ``error.headline.<type>``,
    ``error.headline.endpoint_not_found``); the provider's details stay as it wrote them.
    """
    display = _DISPLAY.get(provider, provider)
    status = f" (HTTP {error.status})" if error.status is not None and error.status >= 400 else ""
    if error.code == ENDPOINT_NOT_FOUND:
        key, template = "error.headline.endpoint_not_found", _WRONG_PATH_HEADLINE
    else:
        key, template = f"error.headline.{error.type.value}", _HEADLINES[error.type]
    headline = current_text().text(key, template, provider=display, status=status)
    detail = scrub(error.message).strip()
    if not detail or detail == headline:
        return headline
    room = _EMBED_LIMIT - len(headline) - 2
    if len(detail) > room:
        detail = detail[: room - 1] + "…"
    return f"{headline}\n\n{detail}"
