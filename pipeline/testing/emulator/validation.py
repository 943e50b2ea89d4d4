"""The emulator's request reading and error answers (JSON codes, nested ``errors`` trees).

The message-payload rules themselves are Discord facts the memory sink uses too: they live in
``rxcord.sinks.payload_rules``; this module raises them as the emulator's ``ApiError``.
"""

from __future__ import annotations

__all__ = ("form_error", "query_bool", "read_json", "read_payload", "validate_message")

from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from rxcord.core import safe_json
from rxcord.core.errors import ApiError
from rxcord.sinks.payload_rules import Problem, check_message_payload, form_error_body


def form_error(problems: Iterable[Problem]) -> ApiError:
    body = form_error_body(problems)
    return ApiError(400, body["code"], body["message"], body["errors"])


def query_bool(value: str | None, name: str = "wait") -> bool:
    """Read a boolean query parameter as Discord does (``true``/``false``/``1``/``0``)."""
    if value is None or value in ("false", "False", "0"):
        return False
    if value in ("true", "True", "1"):
        return True
    raise form_error([((name,), "BASE_TYPE_BOOLEAN", "Must be either true or false.")])


async def read_json(request: web.Request) -> Any:
    """The decoded JSON body (empty: ``{}``), else 400 / 50109 (nesting deeper than 512 included).

    Bytes that are not UTF-8 are invalid JSON too (never a server error).
    """
    raw = await request.read()
    try:
        return safe_json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:  # UnicodeDecodeError included
        raise ApiError(400, 50109, "The request body contains invalid JSON.") from None


async def read_payload(request: web.Request) -> dict[str, Any]:
    """The JSON object of a request (or of a multipart ``payload_json`` part), else 400 / 50109."""
    if request.content_type == "multipart/form-data":
        try:
            form = await request.post()
        except (HttpProcessingError, ValueError):  # a malformed multipart body
            raise ApiError(400, 50109, "The request body contains invalid JSON.") from None
        raw = form.get("payload_json")
        # A part sent as application/json (as discord.py and RestSink send it) reads as bytes.
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode("utf-8", "replace")
        text = raw if isinstance(raw, str) else "{}"
        try:
            data = safe_json.loads(text)
        except ValueError:
            data = None
    else:
        data = await read_json(request)
    if not isinstance(data, dict):
        raise ApiError(400, 50109, "The request body contains invalid JSON.")
    return data


def validate_message(payload: Mapping[str, Any], *, webhook: bool) -> None:
    """Raise the ``ApiError`` ``check_message_payload`` describes, if any."""
    error = check_message_payload(payload, webhook=webhook)
    if error is not None:
        raise ApiError(400, int(error["code"]), str(error["message"]), error.get("errors"))
