"""Discord's message-payload rules: what a create-message or execute-webhook body may hold (pure).

These are Discord API facts, not a test double: the memory sink checks payloads with them (so
an over-long message fails there as it would on Discord) and the emulator answers its 400s
from them. A problem is a path in the body, Discord's error code and its message; the error
body nests them the way Discord's ``errors`` tree does.
"""

from __future__ import annotations

__all__ = (
    "MENTION_TYPES",
    "Problem",
    "check_message_payload",
    "form_error_body",
    "form_problems",
    "is_empty",
)

from collections.abc import Iterable, Mapping
from typing import Any, Final

from rxcord.sinks.rich_rules import check_components, check_embed_types

MENTION_TYPES: Final = ("users", "roles", "everyone")

Problem = tuple[tuple[str, ...], str, str]
"""A form problem: path in the request body, error code, message."""


def _error_tree(problems: Iterable[Problem]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, code, message in problems:
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node.setdefault("_errors", []).append({"code": code, "message": message})
    return tree


def form_error_body(problems: Iterable[Problem]) -> dict[str, Any]:
    """Discord's 400 body for form problems: code 50035 ``Invalid Form Body`` with the ``errors`` tree."""
    return {"message": "Invalid Form Body", "code": 50035, "errors": _error_tree(problems)}


def _too_long(path: tuple[str, ...], limit: int) -> Problem:
    return (path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")


def _trimmed_len(value: Any) -> int:
    return len(value.strip()) if isinstance(value, str) else 0


def _check_embeds(embeds: Any) -> list[Problem]:
    if embeds is None:
        return []
    if not isinstance(embeds, list):
        return [(("embeds",), "BASE_TYPE_ARRAY", "Must be an array.")]
    problems: list[Problem] = []
    if len(embeds) > 10:
        problems.append(_too_long(("embeds",), 10))
    total = 0
    field_limits = (("title", 256), ("description", 4096))
    for index, embed in enumerate(embeds):
        at = ("embeds", str(index))
        if not isinstance(embed, dict):
            problems.append((at, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType"))
            continue
        problems += check_embed_types(at, embed)
        for name, limit in field_limits:
            size = _trimmed_len(embed.get(name))
            total += size
            if size > limit:
                problems.append(_too_long((*at, name), limit))
        for name, inner, limit in (("footer", "text", 2048), ("author", "name", 256)):
            part = embed.get(name)
            size = _trimmed_len(part.get(inner)) if isinstance(part, dict) else 0
            total += size
            if size > limit:
                problems.append(_too_long((*at, name, inner), limit))
        fields = embed.get("fields") or []
        if isinstance(fields, list):
            if len(fields) > 25:
                problems.append(_too_long((*at, "fields"), 25))
            for number, field in enumerate(fields):
                field_at = (*at, "fields", str(number))
                if not isinstance(field, dict):
                    continue
                for name, limit in (("name", 256), ("value", 1024)):
                    if field.get(name) is None:
                        problems.append(((*field_at, name), "BASE_TYPE_REQUIRED", "This field is required"))
                        continue
                    size = _trimmed_len(field.get(name))
                    total += size
                    if size > limit:
                        problems.append(_too_long((*field_at, name), limit))
    if total > 6000:
        problems.append((("embeds",), "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000"))
    return problems


def _check_allowed_mentions(allowed: Any) -> list[Problem]:
    if allowed is None:
        return []
    at = ("allowed_mentions",)
    if not isinstance(allowed, dict):
        return [(at, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")]
    problems: list[Problem] = []
    parse = allowed.get("parse") or []
    if not isinstance(parse, list):
        return [((*at, "parse"), "BASE_TYPE_ARRAY", "Must be an array.")]
    for index, value in enumerate(parse):
        if value not in MENTION_TYPES:
            problems.append(
                (
                    (*at, "parse", str(index)),
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {'everyone', 'roles', 'users'}.",
                )
            )
    for kind in ("users", "roles"):
        ids = allowed.get(kind) or []
        if not isinstance(ids, list):
            problems.append(((*at, kind), "BASE_TYPE_ARRAY", "Must be an array."))
            continue
        if len(ids) > 100:
            problems.append(_too_long((*at, kind), 100))
        if ids and kind in parse:
            problems.append(
                (
                    at,
                    "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.',
                )
            )
    return problems


def _check_nonce(nonce: Any) -> list[Problem]:
    if nonce is None:
        return []
    if isinstance(nonce, bool) or not isinstance(nonce, int | str):
        return [(("nonce",), "NONCE_TYPE_INVALID", "Nonce must be an integer or a string.")]
    if isinstance(nonce, str) and len(nonce) > 25:
        return [_too_long(("nonce",), 25)]
    if isinstance(nonce, int) and not -(2**63) <= nonce < 2**63:
        return [(("nonce",), "NUMBER_TYPE_MAX", "Value must be a 64-bit integer.")]
    return []


def _check_username(username: Any) -> list[Problem]:
    if username is None:
        return []
    at = ("username",)
    if not isinstance(username, str) or not 1 <= len(username) <= 80:
        return [(at, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 80 in length.")]
    folded = username.casefold()
    for word in ("discord", "clyde"):
        if word in folded:
            return [(at, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{word}"')]
    for token in ("@", "#", ":", "```"):
        if token in username:
            return [(at, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{token}"')]
    if folded.strip() in ("everyone", "here"):
        return [(at, "USERNAME_INVALID", f'Username cannot be "{folded.strip()}"')]
    return []


def form_problems(payload: Mapping[str, Any], *, webhook: bool) -> list[Problem]:
    problems: list[Problem] = []
    content = payload.get("content")
    if content is not None:
        if not isinstance(content, str):
            problems.append((("content",), "BASE_TYPE_STRING", "Could not interpret value as string."))
        elif len(content) > 4000 and not webhook:
            problems.append(_too_long(("content",), 4000))
        elif len(content) > 2000:
            problems.append(_too_long(("content",), 2000))
    problems += _check_embeds(payload.get("embeds"))
    problems += _check_allowed_mentions(payload.get("allowed_mentions"))
    if webhook:
        problems += _check_username(payload.get("username"))
        avatar = payload.get("avatar_url")
        if isinstance(avatar, str) and len(avatar) > 2048:
            problems.append(_too_long(("avatar_url",), 2048))
    else:
        problems += _check_nonce(payload.get("nonce"))
        reference = payload.get("message_reference")
        if reference is not None and (not isinstance(reference, dict) or not reference.get("message_id")):
            problems.append(
                (("message_reference", "message_id"), "BASE_TYPE_REQUIRED", "This field is required")
            )
    flags = payload.get("flags")
    if flags is not None and (isinstance(flags, bool) or not isinstance(flags, int)):
        problems.append((("flags",), "NUMBER_TYPE_COERCE", "Value is not int."))
    tts = payload.get("tts")
    if tts is not None and not isinstance(tts, bool):
        problems.append((("tts",), "BASE_TYPE_BOOLEAN", "Must be either true or false."))
    problems += check_components(payload.get("components"))
    return problems


def is_empty(payload: Mapping[str, Any]) -> bool:
    content = payload.get("content")
    if isinstance(content, str) and content.strip():
        return False
    return not any(payload.get(key) for key in ("embeds", "sticker_ids", "components", "attachments", "poll"))


def check_message_payload(payload: Any, *, webhook: bool = False) -> dict[str, Any] | None:
    """Validate a message create / webhook execute body the way Discord does, without state.

    Covers everything except checks that need stored messages (a reply's target).

    Args:
        payload: The decoded JSON body.
        webhook: Apply the webhook rules (username, 2000-character content, no nonce) instead.

    Returns:
        ``None`` when valid, else Discord's 400 error body: ``{"code": 50035, "message":
        "Invalid Form Body", "errors": {...}}`` or ``{"code": 50006, "message": "Cannot send an
        empty message"}``.
    """
    if not isinstance(payload, Mapping):
        return {"message": "The request body contains invalid JSON.", "code": 50109}
    problems = form_problems(payload, webhook=webhook)
    if problems:
        return form_error_body(problems)
    if is_empty(payload):
        return {"message": "Cannot send an empty message", "code": 50006}
    return None
