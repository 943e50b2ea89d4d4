"""One-shot JSON POSTs: the bounded reader and ``fetch_with_provider_request``.

``fetch_with_provider_request`` wraps the transport a caller passes (``send``):

* with no request hook registered it calls ``send`` directly and hands back
  the live response, unread: no body buffering;
* with a hook it begins a hold from the bearer key, the URL path and the
  parsed body (the hook may deny the request: ``ProviderRequestDeniedError``
  propagates before anything is sent), reads the response through the bounded
  reader, reports the JSON response's ``usage.cost``, releases the hold, and
  returns an equivalent (buffered) response, so the caller reads the body as
  usual. HTTP errors report zero; a failure in flight (a reset, a
  cancellation) releases without retaining an unreported estimate.

Neither this module nor a hook logs the key, the path or the body.
"""

from __future__ import annotations

__all__ = (
    "BufferedResponse",
    "OneShotRequest",
    "OneShotResponse",
    "Send",
    "aiohttp_send",
    "fetch_with_provider_request",
    "read_bounded",
)

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import attrs

from rxcord.core import safe_json
from rxcord.core.body import Overflow, read_capped
from rxcord.core.errors import MalformedJsonError, ResponseTooLargeError
from rxcord.providers.hooks import begin_provider_request, request_hook_registered


@attrs.frozen(kw_only=True)
class OneShotRequest:
    """One JSON POST, ready to send (nothing here is ever logged)."""

    url: str = attrs.field(repr=False)
    body: bytes = attrs.field(repr=False)
    """The exact bytes sent."""
    parsed: Mapping[str, Any] = attrs.field(repr=False)
    """The same body as data (what a request hook sees)."""
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    api_key: str | None = attrs.field(default=None, repr=False)


class OneShotResponse(Protocol):
    """What a caller reads of a response."""

    @property
    def status(self) -> int:
        """The HTTP status."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers."""
        ...

    async def read(self, limit: int) -> bytes:
        """The whole body, at most *limit* bytes (raises ``ResponseTooLargeError``)."""
        ...


Send = Callable[[OneShotRequest], AbstractAsyncContextManager[OneShotResponse]]
"""The underlying transport: opens the response of one request."""


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """*response*'s body, refusing more than *limit* bytes (a declared length is checked first)."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise ResponseTooLargeError(f"response body declares {declared} bytes (limit {limit})")
    return (await read_capped(response.content.readany, limit, overflow=Overflow.RAISE)).data


@attrs.define
class _LiveResponse:
    """An aiohttp response read through the bounded reader."""

    response: aiohttp.ClientResponse

    @property
    def status(self) -> int:
        return self.response.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self.response.headers

    async def read(self, limit: int) -> bytes:
        return await read_bounded(self.response, limit)


@attrs.frozen(kw_only=True)
class BufferedResponse:
    """A response already read (by the hook path): equivalent for the caller."""

    status: int
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = attrs.field(default=b"", repr=False)
    oversized: bool = False
    """The body exceeded the bound when it was read."""

    async def read(self, limit: int) -> bytes:
        """The buffered body (raises ``ResponseTooLargeError`` as the live read would have)."""
        if self.oversized or len(self.body) > limit:
            raise ResponseTooLargeError(f"response body exceeds {limit} bytes")
        return self.body


def aiohttp_send(session: aiohttp.ClientSession, *, connect_timeout: float = 10.0) -> Send:
    """A ``Send`` over *session*: POST, redirects never followed."""

    @contextlib.asynccontextmanager
    async def send(request: OneShotRequest) -> AsyncIterator[OneShotResponse]:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        async with session.post(
            request.url,
            data=request.body,
            headers=dict(request.headers),
            allow_redirects=False,
            timeout=timeout,
        ) as response:
            yield _LiveResponse(response)

    return send


def _reported_cost(body: bytes) -> float | None:
    try:
        document = safe_json.loads(body)
    except MalformedJsonError:  # not JSON, or nested too deeply: no cost reported
        return None
    usage = document.get("usage") if isinstance(document, dict) else None
    cost = usage.get("cost") if isinstance(usage, dict) else None
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None


@contextlib.asynccontextmanager
async def fetch_with_provider_request(
    provider: str, request: OneShotRequest, send: Send, *, max_bytes: int
) -> AsyncIterator[OneShotResponse]:
    """Send *request* through *send*, under a request hold when a hook is registered.

    Raises:
        ProviderRequestDeniedError: The hook denied the request (nothing was sent).
    """
    if not request_hook_registered():
        async with send(request) as response:
            yield response
        return
    hold = begin_provider_request(
        provider=provider, path=urlsplit(request.url).path, body=request.parsed, api_key=request.api_key
    )
    if hold is None:
        async with send(request) as response:
            yield response
        return
    try:
        async with send(request) as live:
            try:
                buffered = BufferedResponse(
                    status=live.status, headers=dict(live.headers), body=await live.read(max_bytes)
                )
            except ResponseTooLargeError:
                buffered = BufferedResponse(status=live.status, headers=dict(live.headers), oversized=True)
    except BaseException:
        hold.release(False)  # in flight: an unreported estimate is not retained
        raise
    if buffered.status >= 400:
        hold.report_cost(0.0)
        hold.release(False)
    else:
        cost = None if buffered.oversized else _reported_cost(buffered.body)
        if cost is not None:
            hold.report_cost(cost)
        hold.release(True)
    yield buffered
