"""Embeds and message components: checked as Discord's form validation does, echoed in its answer's shape.

Discord reads a message's ``embeds`` and ``components`` through typed models: a value of the
wrong type is a 400 / 50035 ``Invalid Form Body`` naming the field (``BASE_TYPE_STRING``,
``NUMBER_TYPE_COERCE``, ``URL_TYPE_INVALID_URL``...), a ``null`` optional field counts as
absent, unknown keys are dropped, and the stored message carries only what the models know
(``type: "rich"`` on every embed, an ``id`` on every component). These rules model the
embed fully and the components a bot sends without the components-v2 flag: action rows
(type 1) of buttons (type 2); any other component type is refused with a form error on its
``type`` (pure: no I/O, no state).
"""

from __future__ import annotations

__all__ = ("check_components", "check_embed_types", "components_response", "embed_response")

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

Problem = tuple[tuple[str, ...], str, str]

_TEXT: Final = ("title", "description")
_URLS: Final = ("url",)
# Sub-objects: key -> (required key or None, {key: is_url})
_PARTS: Final[dict[str, tuple[str | None, dict[str, bool]]]] = {
    "footer": ("text", {"text": False, "icon_url": True}),
    "image": ("url", {"url": True}),
    "thumbnail": ("url", {"url": True}),
    "video": (None, {"url": True}),
    "author": ("name", {"name": False, "url": True, "icon_url": True}),
    "provider": (None, {"name": False, "url": True}),
}
_MAX_COLOR: Final = 0xFFFFFF
_NOT_A_DICT: Final = "Only dictionaries may be used in a ModelType"
_BUTTON_KEYS: Final = ("label", "custom_id", "url", "sku_id")
_ACTION_ROW: Final = 1
_BUTTON: Final = 2


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string(at: tuple[str, ...], value: Any) -> list[Problem]:
    if value is None or isinstance(value, str):
        return []
    return [(at, "BASE_TYPE_STRING", f"Could not interpret {_shown(value)} as string.")]


def _shown(value: Any) -> str:
    text = repr(value)
    return f'"{text[:40]}"'


def _url(at: tuple[str, ...], value: Any, *, attachment: bool = False) -> list[Problem]:
    problems = _string(at, value)
    if problems or value is None:
        return problems
    schemes = ("http", "https", "attachment") if attachment else ("http", "https")
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in schemes or not (parts.netloc or parts.scheme == "attachment"):
        return [(at, "URL_TYPE_INVALID_URL", "Not a well formed URL.")]
    return []


def _timestamp(at: tuple[str, ...], value: Any) -> list[Problem]:
    problems = _string(at, value)
    if problems or value is None:
        return problems
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return [(at, "DATE_TIME_TYPE_PARSE", f"Could not parse {_shown(value)}. Should be ISO8601.")]
    return []


def check_embed_types(at: tuple[str, ...], embed: Mapping[str, Any]) -> list[Problem]:
    """The type problems of one embed object at *at* (lengths are checked by the caller)."""
    problems: list[Problem] = []
    for key in _TEXT:
        problems += _string((*at, key), embed.get(key))
    problems += _url((*at, "url"), embed.get("url"))
    problems += _timestamp((*at, "timestamp"), embed.get("timestamp"))
    color = embed.get("color")
    if color is not None:
        if not _is_int(color):
            problems.append(((*at, "color"), "NUMBER_TYPE_COERCE", f"Value {_shown(color)} is not int."))
        elif not 0 <= color <= _MAX_COLOR:
            problems.append(
                (
                    (*at, "color"),
                    "NUMBER_TYPE_MAX",
                    f"int value should be less than or equal to {_MAX_COLOR}.",
                )
            )
    for name, (required, keys) in _PARTS.items():
        part = embed.get(name)
        if part is None:
            continue
        if not isinstance(part, dict):
            problems.append(
                ((*at, name), "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")
            )
            continue
        for key, is_url in keys.items():
            where = (*at, name, key)
            problems += (
                _url(where, part.get(key), attachment=True) if is_url else _string(where, part.get(key))
            )
        if required is not None and part.get(required) is None:
            problems.append(((*at, name, required), "BASE_TYPE_REQUIRED", "This field is required"))
    fields = embed.get("fields")
    if fields is not None and not isinstance(fields, list):
        problems.append(((*at, "fields"), "BASE_TYPE_ARRAY", "Must be an array."))
    elif fields:
        for number, field in enumerate(fields):
            where = (*at, "fields", str(number))
            if not isinstance(field, dict):
                problems.append((where, "MODEL_TYPE_CONVERT", _NOT_A_DICT))
                continue
            problems += _string((*where, "name"), field.get("name"))
            problems += _string((*where, "value"), field.get("value"))
            inline = field.get("inline")
            if inline is not None and not isinstance(inline, bool):
                problems.append(((*where, "inline"), "BASE_TYPE_BOOLEAN", "Must be either true or false."))
    return problems


def embed_response(embed: Mapping[str, Any]) -> dict[str, Any]:
    """A checked embed as the stored message carries it: known keys with values, ``type: rich``."""
    out: dict[str, Any] = {
        key: embed[key] for key in (*_TEXT, *_URLS, "timestamp") if isinstance(embed.get(key), str)
    }
    if _is_int(embed.get("color")):
        out["color"] = embed["color"]
    for name, (_required, keys) in _PARTS.items():
        part = embed.get(name)
        if isinstance(part, dict):
            kept = {key: part[key] for key in keys if isinstance(part.get(key), str)}
            if kept:
                out[name] = kept
    fields = embed.get("fields")
    if isinstance(fields, list):
        out["fields"] = [
            {"name": field["name"], "value": field["value"], "inline": bool(field.get("inline") or False)}
            for field in fields
            if isinstance(field, dict)
        ]
    out["type"] = "rich"
    return out


def check_components(components: Any) -> list[Problem]:
    """Form problems of a message's ``components``: action rows of buttons only (see the module)."""
    if components is None:
        return []
    if not isinstance(components, list):
        return [(("components",), "BASE_TYPE_ARRAY", "Must be an array.")]
    problems: list[Problem] = []
    for index, row in enumerate(components):
        problems += _component(("components", str(index)), row, allowed=(_ACTION_ROW,))
        children = row.get("components") if isinstance(row, dict) else None
        if isinstance(row, dict) and row.get("type") == _ACTION_ROW:
            if not isinstance(children, list) or not 1 <= len(children) <= 5:
                problems.append(
                    (
                        ("components", str(index), "components"),
                        "BASE_TYPE_BAD_LENGTH",
                        "Must be between 1 and 5 in length.",
                    )
                )
                continue
            for number, child in enumerate(children):
                problems += _component(
                    ("components", str(index), "components", str(number)), child, allowed=(_BUTTON,)
                )
    return problems


def _component(at: tuple[str, ...], component: Any, *, allowed: tuple[int, ...]) -> list[Problem]:
    if not isinstance(component, dict):
        return [(at, "MODEL_TYPE_CONVERT", _NOT_A_DICT)]
    kind = component.get("type")
    if kind not in allowed or not _is_int(kind):
        choices = ", ".join(map(str, allowed))
        return [((*at, "type"), "BASE_TYPE_CHOICES", f"Value must be one of {{{choices}}}.")]
    if kind != _BUTTON:
        return []
    problems: list[Problem] = []
    style = component.get("style")
    if not (isinstance(style, int) and not isinstance(style, bool) and 1 <= style <= 6):
        problems.append(((*at, "style"), "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6}."))
    for key in _BUTTON_KEYS:
        problems += _string((*at, key), component.get(key))
    problems += _url((*at, "url"), component.get("url"))
    disabled = component.get("disabled")
    if disabled is not None and not isinstance(disabled, bool):
        problems.append(((*at, "disabled"), "BASE_TYPE_BOOLEAN", "Must be either true or false."))
    return problems


def components_response(components: Any) -> list[dict[str, Any]]:
    """Checked components as the stored message carries them: known keys, ids numbered in order."""
    if not isinstance(components, list):
        return []
    next_id = 0
    out: list[dict[str, Any]] = []
    for row in components:
        next_id += 1
        row_id = next_id
        buttons = []
        for child in row.get("components", []):
            next_id += 1
            button = {"type": _BUTTON, "id": next_id, "style": child["style"]}
            button |= {key: child[key] for key in _BUTTON_KEYS if isinstance(child.get(key), str)}
            if isinstance(child.get("disabled"), bool):
                button["disabled"] = child["disabled"]
            emoji = _emoji(child.get("emoji"))
            if emoji:
                button["emoji"] = emoji
            buttons.append(button)
        out.append({"type": _ACTION_ROW, "id": row_id, "components": buttons})
    return out


def _emoji(emoji: Any) -> dict[str, Any]:
    """A button's emoji with the keys of their type only (a custom emoji's snowflake, a name)."""
    if not isinstance(emoji, dict):
        return {}
    kept: dict[str, Any] = {}
    if isinstance(emoji.get("id"), str) and emoji["id"].isdigit():
        kept["id"] = emoji["id"]
    if isinstance(emoji.get("name"), str):
        kept["name"] = emoji["name"]
    if isinstance(emoji.get("animated"), bool):
        kept["animated"] = emoji["animated"]
    return kept
