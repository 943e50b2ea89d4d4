"""JSON on the wire: responses with Discord's exact content type, and user objects."""

from __future__ import annotations

__all__ = ("json_response", "unique", "user_object")

import json
from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON response whose ``Content-Type`` is exactly ``application/json``.

    discord.py compares the header string and would treat ``application/json; charset=utf-8``
    as text.
    """
    return web.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        headers=dict(headers or {}),
    )


def user_object(user_id: str, username: str, *, bot: bool = False) -> dict[str, Any]:
    """A Discord user object with every field discord.py and hikari read."""
    user: dict[str, Any] = {
        "id": user_id,
        "username": username,
        "discriminator": "0",
        "global_name": None,
        "avatar": None,
        "public_flags": 0,
        "flags": 0,
        "primary_guild": None,
    }
    if bot:
        user["bot"] = True
    return user


def unique(values: Iterable[str]) -> list[str]:
    """``values`` without repeats, in first-seen order."""
    return list(dict.fromkeys(values))
