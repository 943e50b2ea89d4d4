"""Figure 5: Discord delivery through the REST sink against the emulator with Discord's limits.

Two scenarios, each with a fresh ``DiscordEmulator`` and one ``RestSink`` (one bot,
one shared ``RateLimiter``):

* ``N`` messages to one channel, sent in order;
* ``M`` messages to each of ``K`` channels, the channels concurrently (one task
  per channel, as one reply per channel would), each channel's messages in order.

The lower bound is what the limits allow at best. A bucket is a sliding window
(``limit`` per ``window``: a burst of ``limit``, then one every ``window / limit``),
so message ``n`` of a channel cannot be accepted before ``max(0, n - limit) *
window / limit``; the global limit bounds all messages the same way. The bound
is the largest of these; the total time is measured from the first request to
the last acceptance. Discord's 429s are counted per bucket: the first response
of a bucket is the earliest a client can know its limit.
"""

from __future__ import annotations

__all__ = ("DeliveryResult", "measure_delivery")

import asyncio
import time

import aiohttp
import attrs

from rxcord.core.config import StreamContext
from rxcord.sinks.ratelimit import RateLimiter
from rxcord.sinks.rest import RestSink
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig


@attrs.frozen
class DeliveryResult:
    """One scenario of figure 5."""

    name: str
    channels: int
    per_channel: int
    seconds: float
    bound: float
    rate_limited: int
    """429 answers the emulator gave."""
    global_rate_limited: int
    """Of which for the global limit."""
    delivered_once_in_order: bool
    duplicates: int
    missing: int

    @property
    def ratio(self) -> float:
        """Total time over the lower bound."""
        return self.seconds / self.bound if self.bound > 0 else float("nan")


def lower_bound(config: EmulatorConfig, channels: int, per_channel: int) -> float:
    """Seconds before the last message can be accepted under *config*'s limits."""
    channel = max(0, per_channel - config.channel_limit) * config.channel_window / config.channel_limit
    total = channels * per_channel
    global_ = max(0, total - config.global_limit) * config.global_window / config.global_limit
    return max(channel, global_)


async def measure_delivery(
    name: str, config: EmulatorConfig, *, channels: int, per_channel: int, global_limit: int | None = None
) -> DeliveryResult:
    """Send ``channels * per_channel`` messages through one ``RestSink``; check and time them.

    Args:
        name: The scenario's label.
        config: The emulator's limits.
        channels: How many channels.
        per_channel: Messages per channel.
        global_limit: The client's proactive global meter per ``config.global_window``
            (default: the emulator's global limit, as Discord documents it).
    """
    ids = [str(200000000000000001 + number) for number in range(channels)]
    limiter = RateLimiter(
        global_limit=global_limit if global_limit is not None else config.global_limit,
        global_period=config.global_window,
    )
    async with DiscordEmulator(config) as emulator, aiohttp.ClientSession() as session:
        sink = RestSink(emulator.base_url, config.token, session=session, limiter=limiter, seed=1)

        async def channel(channel_id: str) -> None:
            context = StreamContext(channel_id=channel_id)
            for number in range(per_channel):
                payload = {
                    "content": f"message {number} of channel {channel_id}",
                    "allowed_mentions": {"parse": []},
                    "nonce": f"b{channel_id[-6:]}{number:05d}",
                    "enforce_nonce": True,
                }
                await sink.create_message(context, payload)

        start = time.perf_counter()
        await asyncio.gather(*(channel(channel_id) for channel_id in ids))
        seconds = time.perf_counter() - start
        duplicates = missing = 0
        in_order = True
        for channel_id in ids:
            contents = [message.get("content") for message in emulator.messages(channel_id)]
            expected = [f"message {number} of channel {channel_id}" for number in range(per_channel)]
            duplicates += len(contents) - len(set(contents))
            missing += len(set(expected) - set(contents))
            in_order = in_order and contents == expected
        return DeliveryResult(
            name=name,
            channels=channels,
            per_channel=per_channel,
            seconds=seconds,
            bound=lower_bound(config, channels, per_channel),
            rate_limited=emulator.counters.rate_limited,
            global_rate_limited=emulator.counters.global_rate_limited,
            delivered_once_in_order=in_order and duplicates == 0 and missing == 0,
            duplicates=duplicates,
            missing=missing,
        )
