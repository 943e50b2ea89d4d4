"""``/stop`` and ``/kill`` for ``Answers``, on a ``discord.app_commands.CommandTree``.

``/stop`` is graceful (``StopKind.USER``: what was generated is flushed), ``/kill`` aborts
(``StopKind.KILL``: the half-written message keeps a short marker). Both take an optional
``answer`` (its number, as ``3`` or ``#3``, or the asker's mention, id or name) to pick
among the answers running or queued in the channel; without it, the caller's own answer
(the running one first), or for a moderator the one running now.

A bot run as several processes sets ``Answers.elsewhere`` (``rxcord.discord.StopsElsewhere``):
a command that finds no answer here is deferred and asks the other processes, which decide with
this same ``decide``.

Who may: the answer's asker, or a moderator (``Permissions.may_stop``). The commands need no
Discord permission (``default_member_permissions`` unset): every asker may stop their own
answer, and the rule is checked per answer when the command runs. Replies are ephemeral.
Every use is logged (``stage="bot-commands"``): who, which answer, what happened.
"""

from __future__ import annotations

__all__ = ("Decision", "decide", "install", "run_command")

from typing import Any

import attrs
from loguru import logger

from rxcord.core.errors import MissingExtraError
from rxcord.core.types import StopKind
from rxcord.discord.answers import Answer, Answers
from rxcord.io.locales import default_catalog

try:
    import discord
    from discord import app_commands
except ImportError as exc:  # the name says what to install, not a bare ModuleNotFoundError
    raise MissingExtraError(
        "discord", "discord", "rxcord.discord.Answers.install", package="discord.py"
    ) from exc

_log = logger.bind(stage="bot-commands")


@attrs.frozen
class Decision:
    """What a ``/stop`` or ``/kill`` does: the answer it stops (or none), the outcome, the reply."""

    answer: Answer | None
    outcome: str
    """``stopped``, ``nothing``, ``refused`` or ``unknown`` (for the log)."""
    key: str
    default: str
    fields: dict[str, str] = attrs.field(factory=dict)


def _matches(answer: Answer, choice: str) -> bool:
    wanted = choice.strip().removeprefix("#").removeprefix("<@").removeprefix("!").removesuffix(">")
    return wanted in (str(answer.number), answer.user_id) or wanted.casefold() == answer.user_name.casefold()


def _own_or_current(here: tuple[Answer, ...], caller_id: str, moderator: bool) -> Answer | None:
    mine = [a for a in here if a.user_id == caller_id]
    pool = mine or (list(here) if moderator else [])
    running = [a for a in pool if a.started]
    chosen = running or pool
    return chosen[0] if chosen else None


def decide(
    answers: Answers,
    caller: Any,
    channel: Any,
    kind: StopKind,
    choice: str | None = None,
    *,
    manage_messages: bool = False,
) -> Decision:
    """Which answer a command stops, if the caller may (pure: nothing is stopped here)."""
    rules = answers.permissions
    if rules.blocked(caller) or not rules.serves(channel):
        return Decision(None, "refused", "command.not_here", "You can't stop answers here.")
    here = answers.in_channel(str(channel.id))
    moderator = rules.is_moderator(caller, manage_messages=manage_messages)
    if choice:
        picked = next((a for a in here if _matches(a, choice)), None)
        if picked is None:
            return Decision(None, "unknown", "command.no_such_answer", "No such answer is running here.")
    else:
        picked = _own_or_current(here, str(caller.id), moderator)
        if picked is None:
            if not here:
                return Decision(None, "nothing", "command.nothing_running", "Nothing is being written here.")
            return Decision(
                None, "nothing", "command.nothing_yours", "Nothing of yours is being answered here."
            )
    if not rules.may_stop(caller, picked, channel, manage_messages=manage_messages):
        return Decision(
            picked,
            "refused",
            "command.not_yours",
            "Only {user} or a moderator can stop that answer.",
            {"user": picked.user_name},
        )
    if kind is StopKind.KILL:
        return Decision(
            picked, "stopped", "command.aborted_user", "Aborted {user}'s answer.", {"user": picked.user_name}
        )
    return Decision(
        picked,
        "stopped",
        "command.stopped_user",
        "Stopped {user}'s answer; what was written stays.",
        {"user": picked.user_name},
    )


def _locale_code(locale: object) -> str | None:
    code = getattr(locale, "value", locale)
    return code if isinstance(code, str) and code else None


@attrs.frozen
class _Where:
    """The command's channel when discord.py has not cached it (id and guild are what is checked)."""

    id: int
    guild_id: int | None
    guild: None = None


async def run_command(
    answers: Answers, interaction: discord.Interaction, kind: StopKind, choice: str | None = None
) -> Decision:
    """Run ``/stop`` or ``/kill`` for *interaction*: decide, stop, reply ephemerally, log."""
    channel = interaction.channel or _Where(id=interaction.channel_id or 0, guild_id=interaction.guild_id)
    permissions = getattr(interaction, "permissions", None)  # resolved for the caller in this channel
    manage = interaction.guild_id is not None and bool(getattr(permissions, "manage_messages", False))
    decision = decide(answers, interaction.user, channel, kind, choice, manage_messages=manage)
    if decision.outcome == "stopped" and decision.answer is not None:
        answers.stop(decision.answer, kind, by=str(interaction.user.id))
    deferred = decision.outcome in ("nothing", "unknown") and answers.elsewhere is not None
    if deferred and answers.elsewhere is not None:
        # Another process may run it: deferred first, its reply may take longer than Discord's 3 s.
        await interaction.response.defer(ephemeral=True, thinking=True)
        remote = await answers.elsewhere.stop(interaction.user, channel, kind, choice, manage_messages=manage)
        decision = remote or decision
    name = "kill" if kind is StopKind.KILL else "stop"
    _log.info(
        "/{name} by user {caller} in channel {channel} on {answer}: {outcome}",
        name=name,
        caller=interaction.user.id,
        channel=channel.id,
        answer=(
            decision.answer.describe()
            if decision.answer is not None
            else decision.fields.get("answer", "no answer")
        ),
        outcome=decision.outcome,
    )
    copy = default_catalog().for_locale(_locale_code(getattr(interaction, "locale", None)))
    text = copy.text(decision.key, decision.default, **decision.fields)
    if deferred:
        await interaction.edit_original_response(content=text)
    else:
        await interaction.response.send_message(text, ephemeral=True)
    return decision


def install(tree: app_commands.CommandTree[Any], answers: Answers) -> None:
    """Register ``/stop`` and ``/kill`` on *tree* (sync it afterwards, as usual)."""

    @tree.command(name="stop", description="Stop an answer here; what was written stays")
    @app_commands.describe(answer="Which answer: its number or the asker (default: yours)")
    async def stop(interaction: discord.Interaction, answer: str | None = None) -> None:
        await run_command(answers, interaction, StopKind.USER, answer)

    @tree.command(name="kill", description="Abort an answer here at once")
    @app_commands.describe(answer="Which answer: its number or the asker (default: yours)")
    async def kill(interaction: discord.Interaction, answer: str | None = None) -> None:
        await run_command(answers, interaction, StopKind.KILL, answer)
