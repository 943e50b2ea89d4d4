"""``/model`` and ``/reload``, the bot's admin commands, and the reload SIGHUP shares with them.

Admins are ``[permissions] admin_users``; everyone else is refused, ephemerally, with a reply
naming that setting. ``/model`` without a name lists the models (anyone may look); with one it
switches the model answering in this channel, or in every channel (``scope``), and the choice
survives a restart (``rxcord.bot.models.ModelChoices``). ``/reload`` reads the config file
again: a file that fails validation changes nothing and the reply (and the log) gives the
one-line error; a good one runs from the next answer on while running answers finish as they
began. What only a restart can change ([discord], [persona], [scale], [runtime], the limits'
``state_file``) refuses the reload, naming the table.
"""

from __future__ import annotations

__all__ = ("RESTART_ONLY", "install_admin", "model_reply", "reload")

from typing import TYPE_CHECKING, Any, Final

from discord import app_commands
from loguru import logger

from rxcord import InputError, MissingCredentialError
from rxcord.bot.config import BotConfig, load_config

if TYPE_CHECKING:
    import discord

    from rxcord.bot.app import RxcordBot

_log = logger.bind(stage="bot-admin")

RESTART_ONLY: Final = ("discord", "persona", "scale", "runtime")
"""Tables a reload cannot change: the connection, the webhook, where counters live, the process."""
NOT_ADMIN: Final = "Only the bot's admins can do that ([permissions] admin_users)."
SCOPES: Final = {"channel": "this channel", "global": "every channel"}


def _restart_only(old: BotConfig, new: BotConfig) -> str | None:
    for table in RESTART_ONLY:
        if getattr(old, table) != getattr(new, table):
            return f"[{table}] changes only at a restart"
    if old.limits.state_file != new.limits.state_file:
        return "[limits] state_file changes only at a restart"
    return None


async def reload(bot: RxcordBot) -> str | None:
    """Read the bot's config file again and run it; ``None`` when applied, else why not (one line).

    The running configuration stays whole on any refusal: the new one is checked and built
    (models, keys, tools) before anything is swapped (``RxcordBot.apply``).
    """
    path = bot.config_path
    reason: str | None
    if path is None:
        reason = "the bot was started without a config file: nothing to reload"
    else:
        try:
            config = load_config(path)
            reason = _restart_only(bot.config, config)
            if reason is None:
                bot.apply(config)
        except (InputError, MissingCredentialError, ValueError) as exc:
            reason = str(exc)
    bot.reloads.append(reason)
    if reason is None:
        _log.info(
            "configuration reloaded from {path}: {n} model(s), default {default}",
            path=str(path),
            n=len(bot.models.models),
            default=bot.models.default.label,
        )
    else:
        _log.warning("reload refused, the running configuration is kept: {reason}", reason=reason)
    return reason


def _is_admin(bot: RxcordBot, user: Any) -> bool:
    return str(user.id) in bot.answers.permissions.admin_users


def _listing(bot: RxcordBot, channel: Any) -> str:
    here = bot.model_for(channel)
    default = bot.models.default
    lines = ["Models (`/model name:` switches, admins only):"]
    for model in bot.models.models:
        notes = [n for n, on in (("answers here", model is here), ("default", model is default)) if on]
        suffix = f" ← {', '.join(notes)}" if notes else ""
        lines.append(f"- **{model.label}**: {model.provider} `{model.model}`{suffix}")
    return "\n".join(lines)


def model_reply(bot: RxcordBot, user: Any, channel: Any, name: str | None, scope: str) -> str:
    """What ``/model`` answers, switching when an admin names a configured model."""
    if name is None:
        return _listing(bot, channel)
    if not _is_admin(bot, user):
        return NOT_ADMIN
    model = bot.models.get(name.strip())
    if model is None:
        return f"No model is named {name.strip()!r}; configured: {', '.join(bot.models.labels)}."
    where = None if scope == "global" else str(channel.id)
    bot.choices.choose(model.label, channel=where)
    _log.info(
        "/model by user {user} in channel {channel}: {model} for {scope}",
        user=user.id,
        channel=channel.id,
        model=model.label,
        scope=SCOPES.get(scope, scope),
    )
    where_text = SCOPES.get(scope, "this channel")
    return f"Answers in {where_text} now use **{model.label}** ({model.provider} `{model.model}`)."


async def _reload_reply(bot: RxcordBot, user: Any) -> str:
    if not _is_admin(bot, user):
        return NOT_ADMIN
    _log.info("/reload by user {user}", user=user.id)
    reason = await reload(bot)
    if reason is not None:
        return f"Reload refused; the running configuration is kept.\n`{reason}`"
    return f"Reloaded: {len(bot.models.models)} model(s), default **{bot.models.default.label}**."


def install_admin(tree: app_commands.CommandTree[Any], bot: RxcordBot) -> None:
    """Register ``/model`` and ``/reload`` on *tree* (synced with the others at READY)."""

    @tree.command(name="model", description="List the models, or switch the one answering here (admins)")
    @app_commands.describe(
        name="The model to switch to (default: list them)", scope="Where the switch applies"
    )
    @app_commands.choices(
        scope=[app_commands.Choice(name=label, value=value) for value, label in SCOPES.items()]
    )
    async def model(
        interaction: discord.Interaction, name: str | None = None, scope: str = "channel"
    ) -> None:
        channel = interaction.channel or _Where(interaction.channel_id or 0)
        text = model_reply(bot, interaction.user, channel, name, scope)
        await interaction.response.send_message(text, ephemeral=True)

    @model.autocomplete("name")
    async def model_names(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return complete_models(bot, current)

    @tree.command(name="reload", description="Reload the bot's configuration file (admins)")
    async def reload_command(interaction: discord.Interaction) -> None:
        text = await _reload_reply(bot, interaction.user)
        await interaction.response.send_message(text, ephemeral=True)


def complete_models(bot: RxcordBot, current: str) -> list[app_commands.Choice[str]]:
    """``/model``'s autocomplete: the configured names containing what was typed (Discord shows 25)."""
    typed = current.strip().casefold()
    names = [label for label in bot.models.labels if typed in label.casefold()]
    return [app_commands.Choice(name=label, value=label) for label in names[:25]]


class _Where:
    """The command's channel when discord.py has not cached it (its id is what is used)."""

    def __init__(self, channel_id: int) -> None:
        self.id = channel_id
        self.parent_id = None
