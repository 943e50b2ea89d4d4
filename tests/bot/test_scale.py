"""Running it: the invite link's permissions, the status line, ``[scale]``'s shards and their checks."""

from __future__ import annotations

import secrets

import attrs
import discord
import pytest

from rxcord import ConfigError
from rxcord.bot.config import parse_config
from rxcord.bot.invite import NEEDED, invite_url, permissions_value
from rxcord.bot.limits import Limits
from rxcord.bot.scale import make_client, presence
from tests.bot.conftest import World
from tests.redis_server import redis_url

__all__ = ("redis_url",)  # the fixture

BASE = """
[provider]
name = "openai"
model = "gpt-4o-mini"
"""


def test_the_invite_asks_for_exactly_the_permissions_the_bot_needs() -> None:
    expected = discord.Permissions(
        view_channel=True,
        send_messages=True,
        send_messages_in_threads=True,
        read_message_history=True,
        embed_links=True,
        attach_files=True,
        add_reactions=True,
        use_application_commands=True,
    )
    assert permissions_value() == expected.value == 277_025_508_416
    assert len(NEEDED) == 8
    assert invite_url(1100000000000000001) == (
        "https://discord.com/oauth2/authorize?client_id=1100000000000000001"
        "&scope=bot+applications.commands&permissions=277025508416"
    )


def test_the_status_line_has_a_short_default_and_can_be_turned_off() -> None:
    default = parse_config(BASE)
    assert default.discord.status == "Mention me to ask"
    activity = presence(default)
    assert isinstance(activity, discord.CustomActivity) and activity.name == "Mention me to ask"
    assert presence(parse_config(BASE + '[discord]\nstatus = ""\n')) is None
    with pytest.raises(ConfigError, match=r"<config>:6: discord.status: must be one short line"):
        parse_config(BASE + "[discord]\n" + f'status = "{"x" * 101}"\n')


def test_shards_make_an_auto_sharded_client_of_this_process_shards() -> None:
    intents = discord.Intents.default()
    plain = make_client(parse_config(BASE), intents)
    assert type(plain) is discord.Client
    config = parse_config(BASE + '[scale]\nredis_url_env = "REDIS"\nshard_count = 4\nshard_ids = [1, 3]\n')
    sharded = make_client(config, intents)
    assert isinstance(sharded, discord.AutoShardedClient)
    assert (sharded.shard_count, sharded.shard_ids) == (4, [1, 3])
    every = make_client(parse_config(BASE + "[scale]\nshard_count = 2\n"), intents)
    assert isinstance(every, discord.AutoShardedClient) and every.shard_ids is None


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        ("shard_ids = [0]", r":6: scale.shard_ids: needs shard_count"),
        (
            "shard_count = 2\nshard_ids = [2]",
            r":7: scale.shard_ids: must be shard numbers from 0 to 1, got 2",
        ),
        ("shard_count = 2\nshard_ids = [1, 1]", r":7: scale.shard_ids: names a shard twice"),
        ("shard_count = 0", r":6: scale.shard_count: must be a positive integer"),
        # Some shards here, the others elsewhere: without Redis nothing would be shared.
        ("shard_count = 2\nshard_ids = [0]", r":7: scale.shard_ids: .*set \[scale\] redis_url_env"),
    ],
)
def test_shard_settings_are_checked_with_the_key_and_line(scale: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(BASE + "[scale]\n" + scale + "\n")


def test_all_shards_in_one_process_need_no_redis() -> None:
    config = parse_config(BASE + "[scale]\nshard_count = 2\nshard_ids = [0, 1]\n")
    assert config.scale.shard_ids == (0, 1) and config.scale.redis_url_env is None


async def test_the_status_reaches_the_gateway_and_each_shard_identifies(world: World) -> None:
    """Through the emulator's gateway: both shards of one process identify with the status line."""
    config = world.config("[scale]\nshard_count = 2\n")
    bot = await world.bot(attrs.evolve(config, discord=attrs.evolve(config.discord, status="Ask away")))
    sessions = world.emulator.gateway.identified()
    assert sorted(s.shard for s in sessions) == [(0, 2), (1, 2)]
    for session in sessions:
        assert session.presence is not None
        # discord.py sends IDENTIFY's activity as ``game``; a PRESENCE_UPDATE as ``activities``.
        activities = session.presence.get("activities") or [session.presence.get("game") or {}]
        assert [a.get("state") for a in activities] == ["Ask away"], session.presence
    # The guild is on one shard: the bot answers there as without shards.
    assert bot.client.get_guild(int(world.emulator.config.guild_id)) is not None
    assert bot.invite_url.endswith(
        f"client_id={world.emulator.config.application_id}"
        "&scope=bot+applications.commands&permissions=277025508416"
    )


async def test_counters_in_redis_are_one_bots_own(redis_url: str) -> None:
    """Two processes of one token share a cap; another bot's token on the same Redis counts apart."""
    config = parse_config(BASE + '[limits]\nrequests_per_user = 1\n[scale]\nredis_url_env = "REDIS"\n')
    token = "token-" + secrets.token_hex(6)
    env = {"REDIS": redis_url, "DISCORD_BOT_TOKEN": token}
    first, second = (Limits.from_config(config, env, clock=lambda: 1_000_000.0) for _ in range(2))
    other = Limits.from_config(
        config, {**env, "DISCORD_BOT_TOKEN": token + "-other"}, clock=lambda: 1_000_000.0
    )
    user = str(3_200_000_000_000_000_000 + secrets.randbelow(10**15))
    try:
        assert await first.check(user=user, channel="1", guild=None, message_id="m1") is None
        refused = await second.check(user=user, channel="1", guild=None, message_id="m2")
        assert refused is not None and "1 of 1 requests" in refused
        assert await other.check(user=user, channel="1", guild=None, message_id="m3") is None
    finally:
        for limits in (first, second, other):
            await limits.close()
