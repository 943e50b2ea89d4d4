"""``rxcord.discord.Permissions``: who may ask, who may stop (plain stand-ins for discord.py objects)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rxcord.discord import Permissions

GUILD = SimpleNamespace(id=1)
CHANNEL = SimpleNamespace(id=10, guild=GUILD)
THREAD = SimpleNamespace(id=11, parent_id=10, guild=GUILD)
OTHER = SimpleNamespace(id=12, guild=GUILD)
DM = SimpleNamespace(id=20, guild=None)


def user(uid: int, *roles: int) -> SimpleNamespace:
    return SimpleNamespace(id=uid, roles=[SimpleNamespace(id=r) for r in roles])


def asked(author: SimpleNamespace, channel: SimpleNamespace = CHANNEL) -> SimpleNamespace:
    return SimpleNamespace(author=author, channel=channel)


ANSWER_OF_1 = SimpleNamespace(user_id="1")


def test_blocks_win_over_allows_and_threads_follow_their_parent() -> None:
    rules = Permissions(allowed_users=[1, 2], blocked_users=["2"], allowed_channels=[10])
    assert rules.may_ask(asked(user(1)))
    assert rules.may_ask(asked(user(1), THREAD))
    assert not rules.may_ask(asked(user(2)))  # allowed and blocked: blocked
    assert not rules.may_ask(asked(user(3)))
    assert not rules.may_ask(asked(user(1), OTHER))
    assert not Permissions(blocked_roles=[7]).may_ask(asked(user(1, 7)))
    assert Permissions(allowed_roles=[7]).may_ask(asked(user(5, 7)))


def test_direct_messages_only_when_allowed() -> None:
    assert not Permissions().may_ask(asked(user(1), DM))
    assert Permissions(allow_dms=True).may_ask(asked(user(1), DM))


def test_one_id_instead_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError, match="list of ids"):
        Permissions(admin_users="123")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rules", "caller", "manage", "allowed"),
    [
        (Permissions(), user(1), False, True),  # the asker
        (Permissions(), user(2), False, False),  # someone else
        (Permissions(admin_users=[2]), user(2), False, True),
        (Permissions(moderator_roles=[9]), user(2, 9), False, True),
        (Permissions(), user(2), True, True),  # Manage Messages in this channel
        (Permissions(blocked_users=[1]), user(1), False, False),  # a blocked asker
        (Permissions(admin_users=[2], blocked_roles=[8]), user(2, 8), True, False),
    ],
)
def test_who_may_stop(rules: Permissions, caller: SimpleNamespace, manage: bool, allowed: bool) -> None:
    assert rules.may_stop(caller, ANSWER_OF_1, CHANNEL, manage_messages=manage) is allowed


def test_nobody_stops_in_a_channel_the_bot_does_not_serve() -> None:
    rules = Permissions(blocked_channels=[12], admin_users=[1])
    assert rules.may_stop(user(1), ANSWER_OF_1, CHANNEL)
    assert not rules.may_stop(user(1), ANSWER_OF_1, OTHER, manage_messages=True)
    assert not Permissions().may_stop(user(1), ANSWER_OF_1, DM)  # DMs not served


def test_manage_messages_counts_in_guilds_only_and_falls_back_to_guild_permissions() -> None:
    rules = Permissions(allow_dms=True)
    assert not rules.may_stop(user(2), ANSWER_OF_1, DM, manage_messages=True)
    member = SimpleNamespace(id=2, roles=[], guild_permissions=SimpleNamespace(manage_messages=True))
    assert rules.may_stop(member, ANSWER_OF_1, CHANNEL)


def test_the_bot_s_permissions_table_maps_to_permissions_and_names_a_bad_id() -> None:
    from rxcord.bot.app import answer_permissions
    from rxcord.bot.config import parse_config
    from rxcord.core.errors import ConfigError

    base = '[provider]\nname = "openai"\nmodel = "m"\n[permissions]\n'
    config = parse_config(base + 'admin_users = ["2"]\nmoderator_roles = ["9"]\nrespond_channels = ["10"]\n')
    rules = answer_permissions(config)
    assert rules.admin_users == {"2"} and rules.moderator_roles == {"9"} and rules.respond_channels == {"10"}
    assert rules.may_stop(user(3, 9), ANSWER_OF_1, CHANNEL)
    with pytest.raises(ConfigError, match=r"permissions\.moderator_roles: must be Discord ids"):
        parse_config(base + 'moderator_roles = ["mods"]\n')


def test_without_discord_py_the_facade_imports_and_commands_name_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib
    import sys

    from rxcord import MissingExtraError

    monkeypatch.setitem(sys.modules, "discord", None)  # `import discord` now fails
    monkeypatch.delitem(sys.modules, "rxcord.discord.commands", raising=False)
    assert Permissions(allow_dms=True).may_ask(asked(user(1), DM))  # no discord.py needed
    with pytest.raises(MissingExtraError, match=r"pip install 'rxcord\[discord\]'"):
        importlib.import_module("rxcord.discord.commands")
