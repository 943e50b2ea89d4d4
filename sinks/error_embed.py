"""The error embed: the Discord embed object that reports a provider error to users (stage 07).

Stage 05's ``flush`` emits it as an ``ERROR_EMBED`` segment (the pipeline hands it this builder)
and the notices of ``rxcord.compose.notices`` send it when a stream ends in an error.
"""

from __future__ import annotations

__all__ = ("error_embed",)

from collections.abc import Callable, Mapping
from typing import Any, Final

from rxcord.core.locale import current_text
from rxcord.core.types import ErrorType, ProviderError

# Error embed

_ERROR_TITLES: Final[Mapping[ErrorType, str]] = {
    ErrorType.API_ERROR: "Provider error",
    ErrorType.RATE_LIMIT: "Rate limited",
    ErrorType.CONTENT_BLOCKED: "Response blocked",
    ErrorType.TIMEOUT: "Request timed out",
    ErrorType.PROVIDER_OVERLOADED: "Provider overloaded",
    ErrorType.MODEL_ERROR: "Model unavailable",
}
_ERROR_COLOURS: Final[Mapping[ErrorType, int]] = {
    ErrorType.API_ERROR: 0xED4245,
    ErrorType.RATE_LIMIT: 0xFEE75C,
    ErrorType.CONTENT_BLOCKED: 0xEB459E,
    ErrorType.TIMEOUT: 0xFEE75C,
    ErrorType.PROVIDER_OVERLOADED: 0xFEE75C,
    ErrorType.MODEL_ERROR: 0xED4245,
}
_EMBED_DESCRIPTION_MAX: Final = 4096


def error_embed(
    error: ProviderError, describe: Callable[[ProviderError], str] | None = None
) -> dict[str, Any]:
    """The Discord embed object that reports *error* to users.

    *describe* is the provider's error description function (the adapter's
    ``describe_error``); without it the error's message is the description.

    Title by error type, the message as description (trimmed, cut to Discord's
    4096 code points with an ellipsis; the message is kept whole otherwise, so
    a ``model_error`` keeps the supported model ids it lists), a colour (red for
    failures, yellow for rate limits, timeouts and overload, fuchsia for blocked
    content) and a footer with the HTTP status and provider code when known.
    """
    embed: dict[str, Any] = {
        # In the stream's locale (rxcord.core.locale): error.title.<type>, English built in.
        "title": current_text().text(
            f"error.title.{error.type.value}", _ERROR_TITLES.get(error.type, "Error")
        ),
        "color": _ERROR_COLOURS.get(error.type, 0xED4245),
    }
    description = (describe(error) if describe is not None else error.message).strip()
    if len(description) > _EMBED_DESCRIPTION_MAX:
        description = description[: _EMBED_DESCRIPTION_MAX - 1].rstrip() + "…"
    if description:
        embed["description"] = description
    footer = []
    if error.status is not None:
        footer.append(f"HTTP {error.status}")
    if error.code is not None and str(error.code) != str(error.status):
        footer.append(str(error.code))
    if footer:
        embed["footer"] = {"text": " · ".join(footer)[:256]}
    return embed
