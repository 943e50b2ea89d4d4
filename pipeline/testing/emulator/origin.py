"""Who may talk to the emulator: loopback clients and pages served from loopback, nobody else.

The emulator listens on 127.0.0.1 and reads JSON bodies whatever their content type (as
Discord does), so without a check any web page the developer visits could reach it: a
cross-site ``text/plain`` POST (a "simple" request, sent without a CORS preflight) would
post messages as a user or as the bot, and a page on a domain that re-resolves to 127.0.0.1
(DNS rebinding) would even read the answers, since the browser then sees one origin. Two
checks, on every request (the page, its data routes and events, the gateway, the REST API),
refuse both before any handler runs:

* ``Host`` must name a loopback host: ``localhost``, a loopback address (``127.0.0.1``,
  ``[::1]``), with or without a port, or the literal address the emulator was bound to.
  A rebinding page's requests carry its own domain there, so they are refused. A request
  without ``Host`` (HTTP/1.0 tools) is let through: a browser always sends one.
* ``Origin``, when present, must be a loopback ``http(s)`` origin (the emulator's own page,
  or another local tool); ``Origin: null`` (a sandboxed frame, a file) is foreign too.
  Programs (discord.py, aiohttp, requests, schemathesis) send no ``Origin`` at all.

A refusal is a 403 whose JSON body says which header was refused and why.
"""

from __future__ import annotations

__all__ = ("foreign_request", "local_only")

import ipaddress
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from rxcord.testing.emulator.wire import json_response

_LOOPBACK_NAMES: Final = frozenset({"localhost"})


def _loopback(hostname: str | None, own: str) -> bool:
    if not hostname:
        return False
    if hostname in _LOOPBACK_NAMES or hostname == own:
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def _hostname(authority: str) -> str | None:
    """The host of ``host[:port]`` / ``[v6][:port]``, lowercased; ``None`` when it does not parse."""
    try:
        parts = urlsplit("//" + authority)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return None
    if parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return parts.hostname


def foreign_request(host: str | None, origin: str | None, own_host: str = "127.0.0.1") -> str | None:
    """Why a request with these ``Host`` and ``Origin`` headers is refused, or ``None`` if it is local.

    Args:
        host: The ``Host`` header (``None``: absent).
        origin: The ``Origin`` header (``None``: absent).
        own_host: The address the emulator is bound to (also accepted in ``Host``).
    """
    own = own_host.strip("[]").lower()
    if host is not None and not _loopback(_hostname(host.strip()), own):
        return "Host is not a loopback name or address (DNS rebinding?)"
    if origin is None:
        return None
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not _loopback(_hostname(parts.netloc), own):
        return "Origin is not a loopback origin (a cross-site request)"
    return None


def local_only(own_host: Callable[[], str]) -> Middleware:
    """The middleware refusing foreign ``Host`` and ``Origin`` headers (*own_host*: the bound address)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        why = foreign_request(request.headers.get("Host"), request.headers.get("Origin"), own_host())
        if why is not None:
            message = f"403: Forbidden: {why}; the emulator answers local clients only"
            return json_response(403, {"message": message, "code": 0})
        return await handler(request)

    return middleware
