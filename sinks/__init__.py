"""rxcord.sinks: stage 07, Discord delivery (the deliver operator, the delivery plan, the sinks).

The package is the room; this module is its façade: the stage 07 operator ``deliver``, the
delivery plans, the rate limiter and its stores, the delivery values and the Discord delivery
errors. The everyday sinks (``RestSink``, ``DiscordPySink``, ``TerminalSink``,
``split_message``) are exported by the root ``rxcord``; ``DiscordSink``, the protocol a new sink
implements, is here. Names load lazily, so ``RedisStore`` needs redis only when it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import keep_exports_over_submodules, lazy_exports

_EXPORTS: dict[str, str] = {
    "BucketStore": "rxcord.sinks.ratelimit",
    "deliver": "rxcord.sinks.deliver",
    "Delivery": "rxcord.core.state",
    "DiscordDelivery": "rxcord.sinks.delivery",
    "DiscordSink": "rxcord.sinks.base",
    "DiscordStopError": "rxcord.core.errors",
    "EditableSink": "rxcord.sinks.base",
    "EditInPlaceDelivery": "rxcord.sinks.edit_in_place",
    "InvalidRequestLimitError": "rxcord.core.errors",
    "make_limiter": "rxcord.sinks.ratelimit",
    "MemoryStore": "rxcord.sinks.ratelimit",
    "RateLimiter": "rxcord.sinks.ratelimit",
    "RateLimitError": "rxcord.core.errors",
    "RedisStore": "rxcord.sinks.ratelimit",
    "SentMessage": "rxcord.core.state",
    "TableStyle": "rxcord.core.config",
    "TokenRejectedError": "rxcord.core.errors",
    "UnknownWebhookError": "rxcord.core.errors",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
keep_exports_over_submodules(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.core.config import TableStyle as TableStyle
    from rxcord.core.errors import DiscordStopError as DiscordStopError
    from rxcord.core.errors import InvalidRequestLimitError as InvalidRequestLimitError
    from rxcord.core.errors import RateLimitError as RateLimitError
    from rxcord.core.errors import TokenRejectedError as TokenRejectedError
    from rxcord.core.errors import UnknownWebhookError as UnknownWebhookError
    from rxcord.core.state import Delivery as Delivery
    from rxcord.core.state import SentMessage as SentMessage
    from rxcord.sinks.base import DiscordSink as DiscordSink
    from rxcord.sinks.base import EditableSink as EditableSink
    from rxcord.sinks.deliver import deliver as deliver
    from rxcord.sinks.delivery import DiscordDelivery as DiscordDelivery
    from rxcord.sinks.edit_in_place import EditInPlaceDelivery as EditInPlaceDelivery
    from rxcord.sinks.ratelimit import BucketStore as BucketStore
    from rxcord.sinks.ratelimit import MemoryStore as MemoryStore
    from rxcord.sinks.ratelimit import RateLimiter as RateLimiter
    from rxcord.sinks.ratelimit import RedisStore as RedisStore
    from rxcord.sinks.ratelimit import make_limiter as make_limiter
