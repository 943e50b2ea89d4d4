"""Which model answers where: the configured models as candidates, and the ``/model`` choices.

``ModelSet`` turns the ``[[models]]`` tables into ``rxcord.Candidate`` lists: for each model
that may be selected, its keys first, then every other model's keys in file order (the
fallback tried when a model fails before anything was delivered), each candidate with its own
model's parameters. ``ModelChoices`` remembers what ``/model`` chose, per channel or for
every channel, in a small JSON file written atomically (a temporary file renamed over it), so
a restart keeps the choices; a thread follows its parent channel's choice.
"""

from __future__ import annotations

__all__ = ("ADAPTERS", "DEFAULT_KEY_VARIABLES", "ModelChoices", "ModelSet", "model_keys", "models_state_path")

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
from loguru import logger

from rxcord import (
    AnthropicAdapter,
    Candidate,
    CustomAdapter,
    GoogleAdapter,
    MissingCredentialError,
    NvidiaAdapter,
    OpenAIAdapter,
    OpenRouterAdapter,
    SamplerSettings,
)
from rxcord.bot.config import MODELS_STATE_FILE, BotConfig, ModelSection
from rxcord.providers import ProviderAdapter

_log = logger.bind(stage="bot-models")

ADAPTERS: Final[Mapping[str, Callable[[], ProviderAdapter]]] = {
    "openai": OpenAIAdapter,
    "openrouter": OpenRouterAdapter,
    "google": GoogleAdapter,
    "anthropic": AnthropicAdapter,
    "nvidia": NvidiaAdapter,
    "custom": CustomAdapter,
}
DEFAULT_KEY_VARIABLES: Final = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "google": "GEMINI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "nvidia": "NVIDIA_API_KEY",
    "custom": "RXCORD_API_KEY",
}


def model_keys(config: BotConfig, env: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Each model's API keys by its label, from *env* (``MissingCredentialError`` names the variables)."""
    keys: dict[str, tuple[str, ...]] = {}
    for model in config.all_models:
        names = model.api_key_env or (DEFAULT_KEY_VARIABLES[model.provider],)
        found = tuple(env[name] for name in names if env.get(name))
        if not found:
            raise MissingCredentialError(" or ".join(names))
        keys[model.label] = found
    return keys


def _candidates(model: ModelSection, adapter: ProviderAdapter, keys: Sequence[str]) -> list[Candidate]:
    sampler = SamplerSettings(
        max_tokens=model.max_tokens, temperature=model.temperature, reasoning_effort=model.reasoning_effort
    )
    return [
        Candidate(
            adapter=adapter,
            model=model.model,
            api_key=key,
            base_url=model.base_url,
            label=f"{adapter.name}:{model.model}#key{index + 1}",  # read back by rxcord.bot.limits
            sampler=sampler,
            extra=model.body_extra(),
            allow_private_network=model.allow_private_network,
        )
        for index, key in enumerate(keys)
    ]


@attrs.frozen
class ModelSet:
    """The configured models, each with its fallback order of candidates (built once per config)."""

    models: tuple[ModelSection, ...]
    default: ModelSection
    _orders: Mapping[str, tuple[Candidate, ...]] = attrs.field(repr=False)

    @classmethod
    def build(cls, config: BotConfig, keys: Mapping[str, Sequence[str]]) -> ModelSet:
        """One adapter per model; for each model, its candidates then the others' in file order."""
        models = config.all_models
        own = {m.label: _candidates(m, ADAPTERS[m.provider](), keys[m.label]) for m in models}
        orders = {
            m.label: (*own[m.label], *(c for other in models if other is not m for c in own[other.label]))
            for m in models
        }
        return cls(models, config.default_model, orders)

    @property
    def labels(self) -> tuple[str, ...]:
        """The names ``/model`` lists, in file order."""
        return tuple(m.label for m in self.models)

    def get(self, label: str | None) -> ModelSection | None:
        """The model named *label* (``None`` if there is none by that name)."""
        return next((m for m in self.models if m.label == label), None)

    def candidates(self, label: str) -> tuple[Candidate, ...]:
        """*label*'s candidates, then the fallback models'."""
        return self._orders[label]


def models_state_path(config: BotConfig) -> Path | None:
    """The choices' file, in the limits' counters' folder; ``None`` (in memory) when they have none."""
    state = config.limits.state_file
    return Path(state).with_name(MODELS_STATE_FILE) if state else None


class ModelChoices:
    """What ``/model`` chose: per channel (a thread follows its parent), else for every channel.

    Args:
        path: The JSON file (``None``: kept in memory for this process only).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.everywhere: str | None = None
        self.channels: dict[str, str] = {}
        self._seen: tuple[int, int] | None = None
        self._read()

    def chosen(self, channel_ids: Iterable[str]) -> str | None:
        """The model chosen for the first of *channel_ids* that has one, else for every channel."""
        self._read()  # another process may have written a choice (one stat when nothing changed)
        for channel in channel_ids:
            if channel in self.channels:
                return self.channels[channel]
        return self.everywhere

    def choose(self, label: str, *, channel: str | None) -> None:
        """Remember *label* for *channel*, or for every channel (``None``: channel choices are dropped)."""
        if channel is None:
            self.everywhere, self.channels = label, {}
        else:
            self.channels[channel] = label
        self._write()

    def keep_only(self, labels: Iterable[str]) -> list[str]:
        """Forget choices of models no longer configured (after a reload); returns what was dropped."""
        known = set(labels)
        dropped = sorted({v for v in (self.everywhere, *self.channels.values()) if v and v not in known})
        if not dropped:
            return []
        if self.everywhere not in known:
            self.everywhere = None
        self.channels = {c: m for c, m in self.channels.items() if m in known}
        self._write()
        return dropped

    def _read(self) -> None:
        if self.path is None:
            return
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen == self._seen:
            return
        self._seen = seen
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
            everywhere, channels = data.get("everywhere"), data.get("channels", {})
            if not (everywhere is None or isinstance(everywhere, str)) or not isinstance(channels, dict):
                raise ValueError("unexpected shape")
        except (OSError, ValueError, AttributeError) as exc:
            # Kept aside, not overwritten: the operator can see what was there.
            aside = self.path.with_name(self.path.name + ".corrupt")
            _log.warning(
                "/model choices unreadable ({error}); moved to {aside}, every channel on the default model",
                error=type(exc).__name__,
                aside=aside.name,
            )
            os.replace(self.path, aside)
            self._seen = None
            return
        self.everywhere = everywhere
        self.channels = {str(k): str(v) for k, v in channels.items()}

    def _write(self) -> None:
        if self.path is None:
            return
        data = {"everywhere": self.everywhere, "channels": self.channels}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with temporary.open("w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)  # atomic: a reader sees the old file or the new one
        stat = self.path.stat()
        self._seen = (stat.st_mtime_ns, stat.st_size)
