"""The bot's configuration file (TOML): schema, loading and errors that name the key and its line.

Secrets never live in the file: API keys, the bot token and the persona webhook URL are named
by the environment variable that holds them. Unknown keys are errors, like bad values; the
error names the key (``provider.model``) and the line it is on, so ``rxcord bot`` can print
one clear message and exit with status 2.
"""

from __future__ import annotations

__all__ = (
    "BotConfig",
    "DeliverySection",
    "DiscordSection",
    "LimitsSection",
    "LoadedTools",
    "ModelPrice",
    "ModelSection",
    "OpenRouterRouting",
    "Permissions",
    "PersonaSection",
    "PromptSection",
    "ProviderSection",
    "ScaleSection",
    "ToolsSection",
    "load_config",
    "load_tools",
    "parse_config",
)

import importlib
import inspect
import re
import string
import tomllib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError

from rxcord import ChatRequest, ConfigError, DeliveryMode, FunctionCall, InputError, ToolSpec
from rxcord.discord import ContextLimits, Markers
from rxcord.providers import SsrfRefusedError, endpoint_url, precheck
from rxcord.sinks import TableStyle

PROVIDERS: Final = ("openai", "openrouter", "google", "anthropic", "nvidia", "custom")
VISION_PROVIDERS: Final = frozenset({"google", "anthropic"})
"""Where an unset ``vision`` is true: every current Gemini and Claude model reads images. The
OpenAI-compatible hosts also serve text-only models, and a wrong ``true`` fails the request
while a wrong ``false`` only leaves the images out with a note, so there it is false."""
LIMITS_STATE_FILE: Final = "rxcord-limits.sqlite3"
"""The limits' counters file, next to the config file unless ``[limits] state_file`` says otherwise."""
MODELS_STATE_FILE: Final = "rxcord-models.json"
"""The ``/model`` choices, in the limits' counters' folder (``rxcord.bot.models``)."""
EFFORTS: Final = ("minimal", "low", "medium", "high")
_CREDENTIAL_KEYS: Final = frozenset(
    {"api_key", "apikey", "key", "token", "access_token", "authorization", "password", "secret"}
)
"""``extra_body`` keys refused: a credential there would be a secret in the file."""
PLACEHOLDERS: Final = frozenset(
    {"date", "time", "bot_name", "user_name", "user_names", "channel_name", "model"}
)
"""What the system prompt may use, as ``{date}``; ``{{`` and ``}}`` are literal braces."""


class _FieldError(ValueError):
    """A validator's complaint about one attribute (its name completes the error's path)."""

    def __init__(self, attribute: attrs.Attribute[Any], message: str) -> None:
        super().__init__(message)
        self.field = attribute.name


def _positive(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value <= 0:
        raise _FieldError(attribute, f"must be a positive integer, got {value}")


def _non_negative(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise _FieldError(attribute, f"must be zero or more, got {value}")


def _env_name(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        # The value is not echoed: it may be the secret itself.
        raise _FieldError(
            attribute, "must be the NAME of an environment variable (secrets never go in the file)"
        )


def _env_names(_: Any, attribute: attrs.Attribute[Any], value: Sequence[str]) -> None:
    for name in value:
        _env_name(_, attribute, name)


def _ids(_: Any, attribute: attrs.Attribute[Any], value: Sequence[str]) -> None:
    for item in value:
        if not re.fullmatch(r"\d{1,20}", item):
            raise _FieldError(attribute, f"must be Discord ids (digits, as strings), got {item!r}")


def _template(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as exc:
        message = f"is not a valid template ({exc}); write {{{{ and }}}} for literal braces"
        raise _FieldError(attribute, message) from None
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    if unknown:
        raise _FieldError(
            attribute,
            f"uses unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            f"known: {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}",
        )


def _provider_name(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in PROVIDERS:
        raise _FieldError(attribute, f"must be one of {', '.join(PROVIDERS)}, got {value!r}")


@attrs.frozen(kw_only=True)
class ProviderSection:
    """``[provider]``: who answers."""

    name: str = attrs.field(validator=_provider_name)
    model: str
    fallback_models: tuple[str, ...] = ()
    """Tried in order after every key of the model before failed (retryable errors only)."""
    api_key_env: tuple[str, ...] = attrs.field(default=(), validator=_env_names)
    """Environment variables holding the API keys, in fallback order (default: the provider's usual one)."""
    base_url: str | None = None
    vision: bool | None = None
    """The model reads images: image attachments are sent to it (``None``: ``VISION_PROVIDERS``)."""
    allow_private_network: bool = False
    """Let ``base_url`` reach 127.0.0.1 or a private network, whatever the provider (a local model,
    the offline demo): the SSRF guard's opt-out. Cloud metadata addresses stay refused."""
    max_tokens: int | None = None
    temperature: float | None = None

    def as_models(self) -> tuple[ModelSection, ...]:
        """The shorthand as ``[[models]]``: the model (the default), then each fallback model."""
        shared: dict[str, Any] = {
            "provider": self.name,
            "api_key_env": self.api_key_env,
            "base_url": self.base_url,
            "allow_private_network": self.allow_private_network,
            "vision": self.vision,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        first = ModelSection(model=self.model, default=True, **shared)
        return (first, *(ModelSection(model=model, **shared) for model in self.fallback_models))


def _optional_positive(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None:
        _positive(_, attribute, value)


def _choice(*allowed: str) -> Callable[[Any, attrs.Attribute[Any], str | None], None]:
    def check(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
        if value is not None and value not in allowed:
            raise _FieldError(attribute, f"must be one of {', '.join(allowed)}, got {value!r}")

    return check


def _label(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    # What /model shows and autocompletes: Discord's choices take 1 to 100 characters.
    if value is not None and not 1 <= len(value.strip()) <= 100:
        raise _FieldError(attribute, "must be 1 to 100 characters")


@attrs.frozen(kw_only=True)
class OpenRouterRouting:
    """``routing`` of an OpenRouter model: sent as the body's ``provider`` object."""

    order: tuple[str, ...] = ()
    """Providers to try first, in order (``["DeepInfra", "Together"]``)."""
    only: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    allow_fallbacks: bool | None = None
    require_parameters: bool | None = None
    data_collection: str | None = attrs.field(default=None, validator=_choice("allow", "deny"))
    sort: str | None = attrs.field(default=None, validator=_choice("price", "throughput", "latency"))

    def body(self) -> dict[str, Any]:
        """The ``provider`` object: only what is set."""
        fields = attrs.asdict(self, recurse=False)
        return {
            key: list(v) if isinstance(v, tuple) else v for key, v in fields.items() if v not in ((), None)
        }


@attrs.frozen(kw_only=True)
class ModelSection:
    """``[[models]]``: one model the bot answers with; ``/model`` switches between them.

    The per-model parameters go into that model's request body only; when this model fails
    before anything was delivered, the next ``[[models]]`` entry (in file order) is tried with
    its own parameters.
    """

    name: str | None = attrs.field(default=None, validator=_label)
    """What ``/model`` lists (default: ``model``); unique in the file."""
    provider: str = attrs.field(validator=_provider_name)
    model: str
    default: bool = False
    """The model answering where ``/model`` chose none (at most one; none: the first entry)."""
    api_key_env: tuple[str, ...] = attrs.field(default=(), validator=_env_names)
    """Environment variables holding the API keys, in fallback order (default: the provider's usual one)."""
    base_url: str | None = None
    allow_private_network: bool = False
    """Let ``base_url`` reach 127.0.0.1 or a private network (the SSRF guard's opt-out)."""
    vision: bool | None = None
    """The model reads images (downloaded, sent inline); unset: ``VISION_PROVIDERS`` decides."""
    max_tokens: int | None = attrs.field(default=None, validator=_optional_positive)
    temperature: float | None = None
    reasoning_effort: str | None = attrs.field(default=None, validator=_choice(*EFFORTS))
    routing: OpenRouterRouting | None = None
    """OpenRouter's provider routing (``provider = "openrouter"`` only)."""
    extra_body: dict[str, Any] = attrs.field(factory=dict)
    """Fields merged into this model's request body; never ``model``, ``messages`` or ``stream``."""

    @property
    def label(self) -> str:
        """The name ``/model`` shows."""
        return (self.name or self.model).strip()

    @property
    def reads_images(self) -> bool:
        """``vision`` when set, else whether the provider is one of ``VISION_PROVIDERS``."""
        return self.vision if self.vision is not None else self.provider in VISION_PROVIDERS

    def body_extra(self) -> dict[str, Any]:
        """What this model adds to its request body: ``extra_body``, and ``routing`` as ``provider``."""
        extra = dict(self.extra_body)
        if self.routing is not None:
            extra["provider"] = self.routing.body()
        return extra


def _short_text(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and (len(value) > 100 or "\n" in value):
        raise _FieldError(attribute, "must be one short line (at most 100 characters)")


@attrs.frozen(kw_only=True)
class DiscordSection:
    """``[discord]``: how the bot reaches Discord."""

    token_env: str = attrs.field(default="DISCORD_BOT_TOKEN", validator=_env_name)
    base_url: str = "https://discord.com/api/v10"
    """The REST API base; the emulator's (``rxcord emulator`` prints it) to run offline."""
    gateway_url: str | None = None
    """The gateway's websocket URL (default: Discord's); the emulator prints its own."""
    status: str = attrs.field(default="Mention me to ask", validator=_short_text)
    """The bot's status line under its name (a custom status; ``""``: none)."""


@attrs.frozen(kw_only=True)
class PromptSection:
    """``[prompt]``: the system prompt, with placeholders filled per message."""

    system: str = attrs.field(
        default="You are {bot_name}, a helpful assistant in a Discord chat. Today is {date}.",
        validator=_template,
    )


@attrs.frozen(kw_only=True)
class DeliverySection:
    """``[delivery]``: how answers reach Discord."""

    mode: DeliveryMode = DeliveryMode.EDIT
    tables: TableStyle = TableStyle.PICTURE
    """Wide markdown tables as pictures (aggregated and live modes; edit mode keeps monospace)."""
    writing_reaction: str = attrs.field(default="✍️", validator=_short_text)
    """The reaction on the asker's message while its answer is written (``""``: none)."""
    stopped_marker: str | None = attrs.field(default=None, validator=_short_text)
    """The last line of a stopped answer (default: the locale catalog's ``⏹ stopped``; ``""``: none)."""
    killed_marker: str | None = attrs.field(default=None, validator=_short_text)
    """The last line of an aborted (``/kill``) answer (default: ``✂ aborted``; ``""``: none)."""
    interrupted_marker: str | None = attrs.field(default=None, validator=_short_text)
    """The last line of an answer a follow-up interrupted (default: ``↩ interrupted``; ``""``: none)."""
    show_notes: bool = True
    """What the context left out (older messages, images, files) as ``-# ⚠`` lines under the answer."""

    @property
    def markers(self) -> Markers:
        """The visible state these keys ask for (``rxcord.discord.visible``)."""
        return Markers(
            writing=self.writing_reaction,
            stopped=self.stopped_marker,
            killed=self.killed_marker,
            interrupted=self.interrupted_marker,
            notes=self.show_notes,
        )


@attrs.frozen(kw_only=True)
class PersonaSection:
    """``[persona]``: answer through a webhook with a name and an avatar (optional)."""

    webhook_url_env: str = attrs.field(validator=_env_name)
    """The environment variable holding the webhook URL (it contains the webhook's token)."""
    username: str | None = None
    avatar_url: str | None = None


@attrs.frozen(kw_only=True)
class Permissions:
    """``[permissions]``: who may talk to the bot, and where. Blocks win over allows."""

    allow_dms: bool = False
    allowed_users: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """When not empty, only these users get answers."""
    blocked_users: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    allowed_roles: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """When not empty, only members with one of these roles get answers (in servers)."""
    blocked_roles: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    allowed_channels: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """When not empty, the bot answers only in these channels (and their threads)."""
    blocked_channels: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    respond_channels: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """Channels where every message gets an answer, without a mention."""
    admin_users: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """May stop anyone's answer with ``/stop`` or ``/kill`` (askers may always stop their own)."""
    moderator_roles: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    """Members with one of these roles may stop anyone's answer (as may those with Manage Messages)."""


def _module_name(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", value):
        raise _FieldError(attribute, f"must be a dotted Python module name, got {value!r}")


@attrs.frozen(kw_only=True)
class ToolsSection:
    """``[tools]``: the tool loop, off without this table (the tools are Python, not configuration)."""

    module: str = attrs.field(validator=_module_name)
    """An importable module defining ``TOOLS`` (``rxcord.ToolSpec`` s) and ``async def handle(call)``."""
    max_rounds: int = attrs.field(default=3, validator=_positive)
    """Tool-loop bound: streams after the first one of a turn."""


@attrs.frozen
class LoadedTools:
    """What a ``[tools]`` module defines."""

    specs: tuple[ToolSpec, ...]
    handle: Callable[[FunctionCall], Awaitable[Any]]


def load_tools(section: ToolsSection) -> LoadedTools:
    """Import the tools module and check what it defines.

    Raises:
        ValueError: The module cannot be imported, or lacks ``TOOLS`` or ``handle``.
    """
    try:
        module = importlib.import_module(section.module)
    except Exception as exc:  # any import-time failure of user code: one clear line
        raise ValueError(f"cannot import {section.module!r}: {type(exc).__name__}: {exc}") from None
    specs = getattr(module, "TOOLS", None)
    if not isinstance(specs, list | tuple) or not specs or not all(isinstance(s, ToolSpec) for s in specs):
        raise ValueError(f"{section.module!r} must define TOOLS, a non-empty list of rxcord.ToolSpec")
    handle = getattr(module, "handle", None)
    if not inspect.iscoroutinefunction(handle):
        raise ValueError(f"{section.module!r} must define `async def handle(call)`")
    return LoadedTools(specs=tuple(specs), handle=handle)


@attrs.frozen(kw_only=True)
class RuntimeSection:
    """``[runtime]``: process-wide settings the bot applies at start (``rxcord.bot.runtime``)."""

    gc_tuning: bool = True
    """Freeze the start-up objects out of the collector's walks and collect less often: fewer,
    shorter event-loop pauses with many live streams. ``false`` keeps CPython's defaults."""


def _non_negative_number(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise _FieldError(attribute, f"must be zero or more, got {value}")


def _refusal_style(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in ("reply", "reaction"):
        raise _FieldError(attribute, f"must be reply or reaction, got {value!r}")


@attrs.frozen(kw_only=True)
class LimitsSection:
    """``[limits]``: use and cost caps per user, channel and guild (``rxcord.bot.limits``).

    On by default (safe by default); ``0`` turns one limit off. Token and cost caps count per
    UTC day; an answer in flight may end above a cap, the next request is refused.
    """

    requests_per_user: int = attrs.field(default=20, validator=_non_negative)
    window_seconds: int = attrs.field(default=3600, validator=_positive)
    """The request window (fixed, aligned to multiples of it since the epoch)."""
    concurrent_per_user: int = attrs.field(default=3, validator=_non_negative)
    concurrent_per_channel: int = attrs.field(default=4, validator=_non_negative)
    tokens_per_user_per_day: int = attrs.field(default=0, validator=_non_negative)
    tokens_per_guild_per_day: int = attrs.field(default=0, validator=_non_negative)
    cost_per_user_per_day: float = attrs.field(default=0.0, validator=_non_negative_number)
    """US dollars; counts only answers whose cost is known (reported, or priced in ``[prices]``)."""
    cost_per_guild_per_day: float = attrs.field(default=0.0, validator=_non_negative_number)
    refusal: str = attrs.field(default="reply", validator=_refusal_style)
    """``reply`` (one short reply saying which limit and when it resets) or ``reaction`` (⏳)."""
    state_file: str | None = None
    """The SQLite file of the counters (``load_config``: ``rxcord-limits.sqlite3`` next to the config
    file, a relative path from there; a config built in code without it: in memory)."""
    lease_seconds: int = attrs.field(default=900, validator=_positive)
    """A running answer's concurrency lease expires after this (a crashed process's leases end)."""


@attrs.frozen(kw_only=True)
class ModelPrice:
    """``[prices."<model>"]``: US dollars per million tokens, for providers that report no cost."""

    input_per_million: float = attrs.field(validator=_non_negative_number)
    output_per_million: float = attrs.field(validator=_non_negative_number)


def _shard_ids(instance: Any, attribute: attrs.Attribute[Any], value: Sequence[int]) -> None:
    count = instance.shard_count
    if value and count is None:
        raise _FieldError(attribute, "needs shard_count (how many shards the whole bot runs)")
    if len(set(value)) != len(value):
        raise _FieldError(attribute, "names a shard twice")
    wrong = [n for n in value if not 0 <= n < (count or 0)]
    if wrong:
        raise _FieldError(attribute, f"must be shard numbers from 0 to {(count or 1) - 1}, got {wrong[0]}")
    if value and len(value) < (count or 0) and instance.redis_url_env is None:
        # Other processes run the other shards: without Redis each would keep its own limits,
        # rate limits and stops, and together break all three (safe by default).
        raise _FieldError(
            attribute,
            "runs some of the shards here: the other processes share limits, Discord's rate limits "
            "and /stop only through Redis; set [scale] redis_url_env",
        )


@attrs.frozen(kw_only=True)
class ScaleSection:
    """``[scale]``: several bot processes share state through Redis; shards split the gateway."""

    redis_url_env: str | None = attrs.field(default=None, validator=_env_name)
    """The environment variable holding the Redis URL: the limits' counters, Discord's rate
    limits (``rxcord.sinks.RedisStore``) and ``/stop`` (``rxcord.io.RedisStopBus``) live there."""
    shard_count: int | None = attrs.field(default=None, validator=_optional_positive)
    """How many gateway shards the whole bot runs (``None``: one connection, no sharding)."""
    shard_ids: tuple[int, ...] = attrs.field(default=(), validator=_shard_ids)
    """The shards this process runs (default: all of ``shard_count``); fewer needs ``redis_url_env``."""


@attrs.frozen(kw_only=True)
class BotConfig:
    """The whole file: ``[[models]]``, or its one-model shorthand ``[provider]``."""

    provider: ProviderSection | None = None
    models: tuple[ModelSection, ...] = ()
    discord: DiscordSection = DiscordSection()
    prompt: PromptSection = PromptSection()
    delivery: DeliverySection = DeliverySection()
    persona: PersonaSection | None = None
    permissions: Permissions = Permissions()
    context: ContextLimits = ContextLimits()
    tools: ToolsSection | None = None
    runtime: RuntimeSection = RuntimeSection()
    limits: LimitsSection = LimitsSection()
    prices: dict[str, ModelPrice] = attrs.field(factory=dict)
    scale: ScaleSection = ScaleSection()

    def __attrs_post_init__(self) -> None:
        if (self.provider is None) == (not self.models):
            raise ConfigError("a bot configuration needs [[models]] or the [provider] shorthand, not both")

    @property
    def all_models(self) -> tuple[ModelSection, ...]:
        """Every model the bot may answer with, in fallback order (``[provider]`` expanded)."""
        if self.provider is not None:
            return self.provider.as_models()
        return self.models

    @property
    def default_model(self) -> ModelSection:
        """The ``default = true`` model, else the first."""
        models = self.all_models
        return next((m for m in models if m.default), models[0])


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    def strings(value: Any, _: Any) -> tuple[str, ...]:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError("must be a list of strings")
        out = []
        for item in value:
            # A Discord id written without quotes is taken as its digits.
            text = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
            if not isinstance(text, str):
                raise ValueError(f"must be a list of strings, found {item!r}")
            out.append(text)
        return tuple(out)

    def exact(kind: type[Any]) -> Any:
        def check(value: Any, _: Any) -> Any:
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"must be a {kind.__name__}, got {value!r}")
            return value

        return check

    def mode(value: Any, _: Any) -> DeliveryMode:
        try:
            return DeliveryMode(value)
        except ValueError:
            raise ValueError(
                f"must be one of {', '.join(m.value for m in DeliveryMode)}, got {value!r}"
            ) from None

    converter.register_structure_hook_func(lambda t: t == tuple[str, ...], strings)
    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, exact(kind))
    converter.register_structure_hook(DeliveryMode, mode)

    def tables(value: Any, _: Any) -> TableStyle:
        # A str enum: without its own hook the str hook would take it as a plain string.
        try:
            return TableStyle(value)
        except ValueError:
            raise ValueError(
                f"must be one of {', '.join(t.value for t in TableStyle)}, got {value!r}"
            ) from None

    converter.register_structure_hook(TableStyle, tables)
    return converter


_CONVERTER: Final = _converter()


def load_config(path: str | Path) -> BotConfig:
    """Read and check the file at *path* (``ConfigError`` names the key and line of any problem)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file ({exc.strerror or exc})") from None
    config = parse_config(text, source=str(file))
    # The counters' file lives next to the config unless it says where (relative: to the config).
    state = file.parent / (config.limits.state_file or LIMITS_STATE_FILE)
    return attrs.evolve(config, limits=attrs.evolve(config.limits, state_file=str(state)))


def parse_config(text: str, *, source: str = "<config>") -> BotConfig:
    """Parse TOML *text* into a ``BotConfig``."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    if ("provider" in raw) == ("models" in raw):
        message = "use [[models]] tables or the one-model [provider] shorthand, not both"
        if "provider" not in raw:
            message = "is required: [[models]] tables (or the one-model [provider] shorthand)"
        raise ConfigError(_where(source, text, ("provider",) if "provider" in raw else ("models",), message))
    unknown = _first_unknown(raw, BotConfig, ())
    if unknown is not None:
        raise ConfigError(_where(source, text, unknown, "unknown key"))
    try:
        config = _CONVERTER.structure(raw, BotConfig)
    except (ClassValidationError, IterableValidationError) as exc:
        path, message = _first_error(exc, ())
        raise ConfigError(_where(source, text, path, message)) from None
    found = _models_problem(config)
    if found is not None:
        raise ConfigError(_where(source, text, *found))
    if config.tools is not None:
        try:
            load_tools(config.tools)
        except ValueError as exc:
            raise ConfigError(_where(source, text, ("tools", "module"), str(exc))) from None
    if config.provider is not None:
        if config.provider.name == "custom" and not config.provider.base_url:
            raise ConfigError(
                _where(source, text, ("provider", "base_url"), "is required for the custom provider")
            )
        problem = _base_url_problem(config.provider, "[provider]")
        if problem is not None:
            raise ConfigError(_where(source, text, ("provider", "base_url"), problem))
    return config


Path_: TypeAlias = tuple[str | int, ...]
"""A key's path in the file; an int is a ``[[models]]`` table's number (from 1)."""


def _models_problem(config: BotConfig) -> tuple[Path_, str] | None:
    """The first ``[[models]]`` entry the bot cannot use, and why (``[provider]`` is checked apart)."""
    seen: set[str] = set()
    defaults = 0
    for number, model in enumerate(config.models, start=1):
        at: Path_ = ("models", number)
        if model.label in seen:
            return (*at, "name"), f"{model.label!r} names two models (give each a unique name)"
        seen.add(model.label)
        defaults += model.default
        if defaults > 1:
            return (*at, "default"), "only one model can be the default"
        problem = _model_problem(model)
        if problem is not None:
            return (*at, problem[0]), problem[1]
    return None


def _model_problem(model: ModelSection) -> tuple[str, str] | None:
    if model.provider == "custom" and not model.base_url:
        return "base_url", "is required for the custom provider"
    if model.routing is not None and model.provider != "openrouter":
        return "routing", f"is OpenRouter's provider routing; this model's provider is {model.provider}"
    if model.routing is not None and "provider" in model.extra_body:
        return "extra_body", "sets provider and so does routing: keep one"
    credential = sorted(key for key in model.extra_body if key.lower() in _CREDENTIAL_KEYS)
    if credential:
        # The value is not echoed: it may be the secret itself.
        return "extra_body", f"{credential[0]} looks like a credential (secrets never go in the file)"
    try:
        ChatRequest(model=model.model, extra=model.body_extra())  # the one rule on extra fields
    except InputError as exc:
        return "extra_body", str(exc)
    problem = _base_url_problem(model, "this [[models]] table")
    return ("base_url", problem) if problem is not None else None


def _base_url_problem(section: ProviderSection | ModelSection, table: str) -> str | None:
    """Why ``[provider] base_url`` cannot be used, judged as the transport will judge it.

    A malformed URL, and an IP literal the SSRF guard refuses (loopback or private without
    ``allow_private_network = true``; cloud metadata and the other never-local ranges always),
    are refused here, when the file is read. A host name is resolved, and so checked, at each
    request (``rxcord.providers.ssrf``).
    """
    if not section.base_url:
        return None
    try:
        url = endpoint_url(section.base_url, setting="base_url")
    except InputError as exc:
        return str(exc).removeprefix("base_url: ")
    host = url.raw_host or ""
    opted_out = section.allow_private_network
    try:
        precheck(host, allow_private_network=opted_out)
    except SsrfRefusedError as exc:
        reason = f"{exc.host} is refused by the SSRF guard ({exc.why})"
        if exc.address == "-":
            return f"{reason}; {exc.hint}" if exc.hint else reason
        if not opted_out and _passes(host, allow_private_network=True):
            return f"{reason}; a local or private server needs allow_private_network = true in {table}"
        return f"{reason}; not allowed even with allow_private_network = true"
    return None


def _passes(host: str, *, allow_private_network: bool) -> bool:
    try:
        precheck(host, allow_private_network=allow_private_network)
    except SsrfRefusedError:
        return False
    return True


def _first_unknown(raw: Mapping[str, Any], cls: type[Any], path: Path_) -> Path_ | None:
    fields = {field.name: field for field in attrs.fields(cls)}
    for key, value in raw.items():
        if key not in fields:
            return (*path, key)
        if cls is BotConfig and key == "models" and isinstance(value, list):
            for number, entry in enumerate(value, start=1):
                found = (
                    _first_unknown(entry, ModelSection, (*path, key, number))
                    if isinstance(entry, Mapping)
                    else None
                )
                if found is not None:
                    return found
            continue
        sub = _attrs_class(fields[key].type)
        if sub is not None and isinstance(value, Mapping):
            found = _first_unknown(value, sub, (*path, key))
            if found is not None:
                return found
    missing = [name for name, field in fields.items() if field.default is attrs.NOTHING and name not in raw]
    if missing:
        return None  # reported by cattrs with its path
    return None


def _attrs_class(annotation: Any) -> type[Any] | None:
    names = {
        "ProviderSection": ProviderSection,
        "DiscordSection": DiscordSection,
        "PromptSection": PromptSection,
        "DeliverySection": DeliverySection,
        "PersonaSection": PersonaSection,
        "Permissions": Permissions,
        "ContextLimits": ContextLimits,
        "LimitsSection": LimitsSection,
        "ScaleSection": ScaleSection,
        "OpenRouterRouting": OpenRouterRouting,
    }
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return names.get(text.split(" | ")[0].strip())


def _first_error(exc: BaseException, path: Path_) -> tuple[Path_, str]:
    """The path and message of the first leaf error in a cattrs exception tree."""
    if isinstance(exc, ClassValidationError | IterableValidationError):
        for sub in exc.exceptions:
            note: str | int | None = _note_name(sub)
            if note is None and isinstance(sub, ClassValidationError):
                # A table in an array of tables (``[[models]]``): its number, from 1.
                index = _note_index(sub)
                note = index + 1 if index is not None else None
            return _first_error(sub, (*path, note) if note is not None else path)
    if isinstance(exc, ForbiddenExtraKeysError):
        return (*path, sorted(exc.extra_fields)[0]), "unknown key"
    field = getattr(exc, "field", None)
    if isinstance(exc, ValueError) and isinstance(field, str):
        # Our validators name their attribute (``[context]``'s limits are rxcord.discord's).
        return (*path, field), str(exc)
    if isinstance(exc, KeyError):
        return path, "is required"
    if isinstance(exc, ValueError | TypeError):
        return path, str(exc)
    return path, f"{type(exc).__name__}: {exc}"


def _note_index(exc: BaseException) -> int | None:
    for note in getattr(exc, "__notes__", ()):
        index = getattr(note, "index", None)
        if isinstance(index, int):
            return index
    return None


def _note_name(exc: BaseException) -> str | None:
    for note in getattr(exc, "__notes__", ()):
        name = getattr(note, "name", None)
        if isinstance(name, str):
            return name
        index = getattr(note, "index", None)
        if isinstance(index, str):
            return index  # a table's key (``[prices."<model>"]``)
        if isinstance(index, int):
            return None  # list items: the error points at the list's line
    return None


def _where(source: str, text: str, path: Path_, message: str) -> str:
    key = ".".join(
        part if re.fullmatch(r"[A-Za-z0-9_\-]+", part) else f'"{part}"'
        for part in path
        if isinstance(part, str)
    )
    for part in path:  # models[2].temperature: the second [[models]] table
        if isinstance(part, int):
            head, _, rest = key.partition(".")
            key = f"{head}[{part}]" + (f".{rest}" if rest else "")
    line = _model_line(text, path) if len(path) > 1 and isinstance(path[1], int) else _line_of(text, path)
    at = f"{source}:{line}" if line else source
    return f"{at}: {key}: {message}"


def _dotted_keys(text: str) -> tuple[str, ...]:
    """A TOML dotted key's parts: ``prices."openai/gpt-4.1"`` is ``("prices", "openai/gpt-4.1")``."""
    parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([^.\"']+)", text)
    return tuple(
        (double or single or bare).strip()
        for double, single, bare in parts
        if (double or single or bare).strip()
    )


def _model_line(text: str, path: Path_) -> int | None:
    """The line of a key in the n-th ``[[models]]`` table (its header when the key is not written)."""
    number, keys = path[1], tuple(str(part) for part in path[2:])
    count, inside = 0, False
    header: int | None = None
    table: tuple[str, ...] = ()
    for line_number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if re.fullmatch(r"\[\[\s*models\s*\]\]\s*(#.*)?", stripped):
            count += 1
            inside, table = count == number, ()
            header = line_number if inside else header
            continue
        sub = re.fullmatch(r"\[\s*models\.([A-Za-z0-9_\-]+)\s*\]\s*(#.*)?", stripped)
        if sub:
            table = (sub.group(1),)
            if inside and keys == table:
                return line_number
            continue
        if stripped.startswith("["):
            inside = False
            continue
        match = re.match(r"([A-Za-z0-9_.\-\"' ]+?)\s*=", stripped)
        if inside and match:
            written = tuple(part.strip().strip("\"'") for part in match.group(1).split("."))
            if (*table, *written) == keys[: len(table) + len(written)] and written:
                return line_number
    return header


def _line_of(text: str, path: Path_) -> int | None:
    """The line where *path* is set (``[table]`` headers and ``key =`` lines), best effort."""
    table: tuple[str, ...] = ()
    header_line: dict[Path_, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        array = re.fullmatch(r"\[\[\s*([A-Za-z0-9_.\-]+)\s*\]\]\s*(#.*)?", stripped)
        if array:  # [[models]]: its keys are not top-level keys (its own lines: _model_line)
            table = _dotted_keys(array.group(1))
            continue
        header = re.fullmatch(r"\[\s*((?:[A-Za-z0-9_.\- ]|\"[^\"]*\"|'[^']*')+?)\s*\]\s*(#.*)?", stripped)
        if header:
            table = _dotted_keys(header.group(1))
            header_line.setdefault(table, number)
            continue
        match = re.match(r"([A-Za-z0-9_.\-\"' ]+?)\s*=", stripped)
        if match:
            keys = tuple(part.strip().strip("\"'") for part in match.group(1).split("."))
            if (*table, *keys) == path:
                return number
    while path:
        if path in header_line:
            return header_line[path]
        path = path[:-1]
    return None
