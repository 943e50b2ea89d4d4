"""A Discord-like page over the Discord emulator: see what a bot posts, talk to it as a user.

The page is a static bundle shipped in the package (``static/``: plain HTML, CSS and
JavaScript, no build step, nothing fetched from a CDN), so it works offline. It only
talks to the emulator it is served by, through the emulator's own routes under the API
base (``/api/v10`` by default):

* ``GET {base}/_emulator/channels`` and ``GET {base}/_emulator/channels/{id}/messages``
  for the channel list and a channel's messages;
* ``GET {base}/_emulator/events`` (server-sent events) for live message creates, edits,
  deletes, typing, rate-limit waits and 429s;
* ``POST {base}/_emulator/messages`` and ``POST {base}/_emulator/interactions`` for the
  composer (a message or a slash command as a user).

Markdown is rendered in the browser (``static/markdown.js``) by Discord's rules as far as
they are known; the differences that remain are listed in ``docs/decisions.md``.

Example::

    app = web.Application()
    mount(app, "/api/v10")      # the page at "/", its assets under "/_webui/"
"""

from __future__ import annotations

__all__ = ("ASSETS", "ASSET_PREFIX", "mount", "page_url")

import functools
import html
from importlib import resources
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web

ASSET_PREFIX: Final = "/_webui"
"""Where the page's assets are served (the page itself is at ``/``)."""

ASSETS: Final = {
    "app.css": "text/css",
    "app.js": "text/javascript",
    "markdown.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
"""The bundle's files (besides ``index.html``) and their content types; nothing else is served."""

_SECURITY_HEADERS: Final = {
    # Same-origin only: the page loads nothing from elsewhere, not even persona avatars
    # on other hosts (an offline tool must not reach out; see docs/decisions.md).
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@functools.cache
def _read(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def mount(app: web.Application, base_path: str = "/api/v10") -> None:
    """Serve the page at ``/`` and its assets under ``/_webui/`` on *app*.

    Args:
        app: The emulator's aiohttp application (before it is started).
        base_path: The path of the emulator's API base, where its ``_emulator`` routes live.
    """
    base = "/" + base_path.strip("/") if base_path.strip("/") else ""
    page = (
        _read("index.html")
        .decode()
        .replace("{{API_BASE}}", html.escape(base, quote=True))
        .replace("{{ASSETS}}", ASSET_PREFIX)
        .encode()
    )
    bodies = {name: _read(name) for name in ASSETS}

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=page, content_type="text/html", charset="utf-8", headers=_SECURITY_HEADERS)

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in bodies:
            raise web.HTTPNotFound()
        content_type = ASSETS[name]
        charset = "utf-8" if content_type.startswith("text/") else None
        return web.Response(
            body=bodies[name], content_type=content_type, charset=charset, headers=_SECURITY_HEADERS
        )

    app.router.add_get("/", index)
    app.router.add_get(ASSET_PREFIX + "/{name}", asset)


def page_url(base_url: str) -> str:
    """The page's URL for an emulator API base URL (``http://127.0.0.1:PORT/api/v10`` -> ``.../``)."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
