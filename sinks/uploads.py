"""Files sent with a message (stage 07): the one place a payload carries bytes.

A payload stays the JSON body Discord receives; the files to upload with it ride along
under ``FILES`` (a tuple of ``Upload``), and the body's ``attachments`` list names them
(``{"id": n, "filename": ..., "description": ...}``, ``n`` the index in ``FILES``).
A sink that sends a payload takes the files out (``split_uploads``) and sends the body
as ``payload_json`` beside ``files[n]`` parts (multipart/form-data); what it records as
sent is the body alone, so a report or a log never holds the bytes.
"""

from __future__ import annotations

__all__ = ("FILES", "Upload", "split_uploads")

from collections.abc import Mapping
from typing import Any, Final

import attrs

FILES: Final = "_files"
"""The payload key holding the ``Upload``s (never sent as JSON: the underscore marks it)."""


@attrs.frozen
class Upload:
    """One file to attach: its name, bytes and media type."""

    filename: str
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    content_type: str = "application/octet-stream"


def split_uploads(payload: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Upload, ...]]:
    """The JSON body of *payload* and the files it carries (``()`` for a text message)."""
    body = dict(payload)
    uploads = body.pop(FILES, ())
    return body, tuple(uploads)
