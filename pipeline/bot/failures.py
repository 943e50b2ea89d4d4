"""What the operator and the users see of a failed answer (the bot's rule, one place).

The operator's log gets every failed attempt of a turn, each one line: the candidate (provider,
model, key number, never the key), the host it went to, the error's kind, HTTP status and
code, and the body the provider sent (scrubbed of credentials, every configured secret
redacted by value, cut at 500 characters). Users get one short notice per turn that names no
host, port, exception or stack trace: what happened in plain words and that the operator has
the details. The provider is named only when the request went to its own service; a
``base_url`` elsewhere (a proxy, a LAN server, ``custom``) is "the model's server", so a
custom host is never called "OpenRouter".
"""

from __future__ import annotations

__all__ = ("log_failures", "user_notice")

import json
from collections.abc import Mapping, Sequence
from typing import Final

import yarl
from loguru import logger

from rxcord import Candidate, StreamStatus, TurnResult
from rxcord.providers import ErrorType, ProviderError, Redactor

_log = logger.bind(stage="bot")

_NAMES: Final[Mapping[str, str]] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "google": "Google Gemini",
    "anthropic": "Anthropic",
    "nvidia": "NVIDIA NIM",
}
_UNNAMED: Final = "The model's server"
_BODY_CHARS: Final = 500
_CREDENTIALS: Final = frozenset({401, 402, 403})
_TAIL: Final = "The bot's operator can see why in its log."


def _default_url(candidate: Candidate) -> str | None:
    default = getattr(candidate.adapter, "default_base_url", None)
    return default if isinstance(default, str) else None


def host_of(candidate: Candidate) -> str:
    """The ``host:port`` the candidate's requests go to (``?`` when it has none)."""
    url = yarl.URL(candidate.base_url or _default_url(candidate) or "")
    if not url.host:
        return "?"
    return f"{url.host}:{url.explicit_port}" if url.explicit_port is not None else url.host


def who(candidate: Candidate) -> str:
    """The provider's name for a request to its own service, else "The model's server"."""
    name = _NAMES.get(candidate.adapter.name)
    default = _default_url(candidate)
    if name is None or default is None:
        return _UNNAMED
    if candidate.base_url is not None and yarl.URL(candidate.base_url).origin() != yarl.URL(default).origin():
        return _UNNAMED
    return name


def _body(error: ProviderError, redact: Redactor) -> str:
    original = error.original_error
    raw = json.dumps(original, default=str)[: _BODY_CHARS * 2] if isinstance(original, Mapping) else ""
    text = raw or error.message
    return redact.text(text)[:_BODY_CHARS]


def log_failures(result: TurnResult, candidates: Sequence[Candidate], *, secrets: Sequence[str]) -> None:
    """One warning per failed attempt of *result*: candidate, host, kind, status, code, body."""
    by_label = {c.label: c for c in candidates}
    redact = Redactor.of(*secrets, *(c.api_key for c in candidates if c.api_key))
    for attempt in result.attempts:
        error = attempt.error
        candidate = by_label.get(attempt.label)
        if error is None or candidate is None:
            continue
        _log.warning(
            "provider failure: {label} at {host}: {kind}, HTTP {status}, code {code}: {body}",
            label=attempt.label,
            host=host_of(candidate),
            kind=error.type.value,
            status=error.status if error.status is not None else "-",
            code=redact.text(str(error.code)) if error.code is not None else "-",
            body=_body(error, redact),
        )


def _plain(error: ProviderError, name: str) -> str:
    """The notice's sentence for *error* (no host, port, exception name or provider prose)."""
    if error.status in _CREDENTIALS:
        return f"{name} refused the bot's API key or its credit is used up."
    if error.type is ErrorType.TIMEOUT:
        return f"{name} did not answer in time."
    if error.type is ErrorType.RATE_LIMIT:
        return f"{name} is rate limiting the bot. Please try again in a minute."
    if error.type is ErrorType.PROVIDER_OVERLOADED:
        return f"{name} is overloaded right now. Please try again in a moment."
    if error.type is ErrorType.CONTENT_BLOCKED:
        return f"{name} declined to answer this (a safety filter)."
    if error.type is ErrorType.MODEL_ERROR:
        return f"{name} cannot serve the configured model."
    if error.status is None:
        return f"{name} could not be reached."
    return f"{name} answered with an error (HTTP {error.status})."


def user_notice(
    result: TurnResult, candidates: Sequence[Candidate], *, locale: str | None = None
) -> str | None:
    """The turn's one notice for the channel, or ``None`` (answered, or stopped).

    A request hook's denial (``rxcord.hooks``) keeps its own wording: it was written for users.
    """
    final = result.result
    denials = [a.denial for a in result.attempts if a.denial is not None]
    if final.error is None or final.status is not StreamStatus.ERROR:
        deferred = [d for d in denials if d.defer_notice]
        if not deferred:
            return None
        return deferred[0].render(locale or "en", fallback_notice=True).description
    last = result.attempts[-1] if result.attempts else None
    if last is not None and last.denial is not None:
        return last.denial.render(locale or "en").description
    by_label = {c.label: c for c in candidates}
    candidate = by_label.get(last.label) if last is not None else None
    name = who(candidate) if candidate is not None else _UNNAMED
    if final.messages:  # delivery began: the failure cut an answer the channel already shows
        return f"⚠ {name} stopped answering partway: the answer above is incomplete. {_TAIL}"
    return f"⚠ {_plain(final.error, name)} {_TAIL}"
