"""Error notices and the denial rule: one place, used by ``stream_to_discord`` and ``run_turn``.

A failed stream may earn the user one notice. Which one is decided here, denials first
(the overview: "check for denials before credential-specific and generic handling"):

1. a denial that belongs to the request's owner (``find_denial`` with the current usage
   context: a hook's refusal, or a provider failure a registered translator turned into one)
   gets the denial's own notice (its renderer's title key and description; no provider prose),
   unless it says ``defer_notice``: then the retry owner posts it once its fallback completed;
2. otherwise a non-retryable error gets the generic error embed (``error_embed``);
3. a retryable error gets nothing on the stream path (the caller may try again).

``StreamConfig.suppress_user_errors`` and ``StreamConfig.defer_notice`` silence the stream
path entirely (the turn runner sets ``defer_notice`` on its attempts and posts the turn's one
notice itself, through ``post_notice`` as well).
"""

from __future__ import annotations

__all__ = ("denial_embed", "notice_embed", "owned_denial", "post_notice", "stream_notice")

from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DiscordStopError, ProviderRequestDeniedError
from rxcord.core.state import Segment, SentMessage
from rxcord.core.types import ProviderError, SegmentKind
from rxcord.operators.mentions import MentionResolver
from rxcord.providers.hooks import current_usage_context, find_denial
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.error_embed import error_embed

_log = logger.bind(stage="notice")

_EMBED_DESCRIPTION_MAX = 4096
_DENIAL_COLOUR = 0xED4245


def owned_denial(error: ProviderError | None) -> ProviderRequestDeniedError | None:
    """The denial behind *error* that belongs to the current request's owner, if any.

    The owner is the usage context bound around the request (``with_usage_context``); a denial
    of another context is never claimed, and a registered translator may turn *error* into one.
    """
    return None if error is None else find_denial(error, current_usage_context())


def denial_embed(denial: ProviderRequestDeniedError, *, fallback_notice: bool = False) -> dict[str, Any]:
    """The notice *denial* renders, as an embed (``fallback_notice``: another candidate answered)."""
    copy = denial.render(fallback_notice=fallback_notice)
    embed: dict[str, Any] = {"title": copy.title_key, "color": _DENIAL_COLOUR}
    description = copy.description.strip()
    if description:
        embed["description"] = description[:_EMBED_DESCRIPTION_MAX]
    return embed


def notice_embed(
    error: ProviderError,
    describe: Callable[[ProviderError], str] | None,
    *,
    denial: ProviderRequestDeniedError | None = None,
    fallback_notice: bool = False,
) -> dict[str, Any]:
    """The notice for *error*: its *denial*'s when there is one, else the generic error embed."""
    if denial is not None:
        return denial_embed(denial, fallback_notice=fallback_notice)
    return error_embed(error, describe)


def stream_notice(
    error: ProviderError, config: StreamConfig, describe: Callable[[ProviderError], str] | None
) -> dict[str, Any] | None:
    """The notice the stream path posts at once for *error*, or ``None`` (the module's rule)."""
    if config.suppress_user_errors or config.defer_notice:
        return None
    denial = owned_denial(error)
    if denial is not None:
        return None if denial.defer_notice else denial_embed(denial)
    return None if error.retryable else error_embed(error, describe)


async def post_notice(
    embed: Mapping[str, Any],
    *,
    sink: DiscordSink,
    context: StreamContext,
    config: StreamConfig,
    resolver: MentionResolver | None = None,
    redact: Callable[[str], str] | None = None,
    sent_before: int = 0,
) -> tuple[SentMessage, ...]:
    """Post *embed* as the stream's or the turn's notice; the messages Discord accepted.

    Planned as delivery plans an error embed (persona, mentions, nonce); after *sent_before*
    messages of the same reply it is not a reply to the user's message again. A Discord refusal
    that is an internal stop (missing access, a deleted channel) drops the notice with a log
    line; any other ``DiscordError`` propagates.
    """
    shown = dict(embed)
    if redact is not None:
        for field in ("title", "description"):
            if isinstance(shown.get(field), str):
                shown[field] = redact(shown[field])
    delivery = DiscordDelivery(sink=sink, context=context, config=config, resolver=resolver)
    delivery.planned = sent_before
    sent: list[SentMessage] = []
    for payload in delivery.payloads(Segment(kind=SegmentKind.ERROR_EMBED, embed=shown)):
        try:
            message = await sink.create_message(context, payload)
        except DiscordStopError as exc:
            _log.warning("error notice not posted: {kind}", kind=exc.stop_kind.value)
            break
        sent.append(message)
    return tuple(sent)
