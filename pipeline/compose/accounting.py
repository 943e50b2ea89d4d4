"""Request holds and usage reports around one stream (the overview's extension hooks).

Before the HTTP call a registered request hook may open a *hold* (or deny
the request); when the stream ends the hold is settled: a reported cost is
reported, HTTP errors report zero, an in-flight failure releases without
retaining an unreported estimate. The request-bound usage callback
receives each completed response's usage exactly once. With no hook and no
callback registered, nothing here does any work.
"""

from __future__ import annotations

__all__ = ("abandon", "begin_hold", "denied_result", "model_of", "settle")

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.state import StreamResult
from rxcord.core.types import ErrorType, FinishReason, ProviderError, StreamStatus
from rxcord.providers.base import HttpRequest
from rxcord.providers.hooks import Hold, begin_provider_request
from rxcord.providers.usage import report_usage

_KEY_HEADERS = ("x-api-key", "x-goog-api-key")
_SUCCESS = (StreamStatus.COMPLETED, StreamStatus.FUNCTION_CALL)
_MODEL_PATH = re.compile(r"/models/([^/:]+)")


def _api_key(headers: Mapping[str, str]) -> str | None:
    for name, value in headers.items():
        lowered = name.lower()
        if lowered == "authorization" and value.lower().startswith("bearer "):
            return value[7:]
        if lowered in _KEY_HEADERS:
            return value
    return None


def model_of(request: HttpRequest) -> str:
    """The model *request* asks for: the body's ``model``, or Gemini's ``/models/{model}:`` path."""
    model = request.body.get("model")
    if isinstance(model, str):
        return model
    found = _MODEL_PATH.search(urlsplit(request.url).path)
    return unquote(found.group(1)) if found else ""


def begin_hold(provider: str, request: HttpRequest) -> Hold | None:
    """Open a hold for *request* if a hook is registered (may raise ``ProviderRequestDeniedError``)."""
    return begin_provider_request(
        provider=provider,
        path=urlsplit(request.url).path,
        body=request.body,
        api_key=_api_key(request.headers),
    )


def denied_result(denial: ProviderRequestDeniedError) -> StreamResult:
    """The result of a stream whose request was denied before sending."""
    error = ProviderError(
        type=ErrorType.API_ERROR,
        message=denial.reason,
        retryable=False,
        code="request_denied",
        original_error=denial,
    )
    return StreamResult(status=StreamStatus.ERROR, error=error, finish_reason=FinishReason.ERROR)


def settle(
    hold: Hold | None, result: StreamResult, *, sent: bool = True, provider: str = "", model: str = ""
) -> None:
    """Report usage once and settle the hold according to how the stream ended.

    A reported cost is reported (and survives the release); an HTTP error, or a
    stream that ended before its request was *sent* (a kill, a stop), reports zero;
    any other failure releases without retaining an unreported estimate.
    """
    usage = result.usage
    if usage is not None:
        report_usage(usage, provider=provider, model=model, request_id=result.request_id)
    if hold is None:
        return
    if usage is not None and usage.cost is not None:
        hold.report_cost(usage.cost)
    elif not sent or (result.error is not None and result.error.status is not None):
        hold.report_cost(0.0)  # refused, or never sent: nothing was spent
    hold.release(result.status in _SUCCESS)


def abandon(hold: Hold | None, *, sent: bool) -> None:
    """Release *hold* when the stream raised or was cancelled: zero cost if never sent; no estimate kept."""
    if hold is None:
        return
    if not sent:
        hold.report_cost(0.0)
    hold.release(False)
