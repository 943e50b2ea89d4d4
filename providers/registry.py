"""A plain provider registry: name -> adapter factory.

``register`` returns a disposer that removes that registration (idempotent, in
any order), so a bot (or a test) can add or override a provider for a while and
undo it without disturbing a later override.
"""

from __future__ import annotations

__all__ = ("PROVIDERS", "ProviderRegistry", "default_registry")

from collections.abc import Callable
from typing import Any, Final

import attrs

from rxcord.core.errors import InputError
from rxcord.providers.base import ProviderAdapter

AdapterFactory = Callable[..., ProviderAdapter]

PROVIDERS: Final = ("openai", "openrouter", "google", "anthropic", "nvidia", "custom")
"""The built-in providers."""


@attrs.define
class ProviderRegistry:
    """Adapter factories by provider name (per name, the newest live registration is in force)."""

    _factories: dict[str, list[tuple[object, AdapterFactory]]] = attrs.field(factory=dict)

    def register(self, name: str, factory: AdapterFactory) -> Callable[[], None]:
        """Register *factory* under *name*; the returned disposer unregisters it.

        The disposer is idempotent and safe in any order: it removes this registration
        only, so disposing an older registration never removes a newer one, and what is
        in force is always the newest registration still alive.
        """
        token = object()
        self._factories.setdefault(name, []).append((token, factory))

        def dispose() -> None:
            entries = self._factories.get(name, [])
            for index, (entry, _) in enumerate(entries):
                if entry is token:
                    del entries[index]
                    break
            if not entries:
                self._factories.pop(name, None)

        return dispose

    def create(self, name: str, **options: Any) -> ProviderAdapter:
        """A new adapter for *name*; raises ``InputError`` for an unknown provider."""
        entries = self._factories.get(name)
        if not entries:
            known = ", ".join(sorted(self._factories))
            raise InputError(f"unknown provider {name!r} (known: {known})")
        return entries[-1][1](**options)

    def names(self) -> tuple[str, ...]:
        """Registered provider names."""
        return tuple(sorted(self._factories))


def default_registry() -> ProviderRegistry:
    """A registry holding the built-in adapters."""
    from rxcord.providers.anthropic import AnthropicAdapter
    from rxcord.providers.custom import CustomAdapter
    from rxcord.providers.google import GoogleAdapter
    from rxcord.providers.nvidia import NvidiaAdapter
    from rxcord.providers.openai import OpenAIAdapter
    from rxcord.providers.openrouter import OpenRouterAdapter

    registry = ProviderRegistry()
    registry.register("openai", OpenAIAdapter)
    registry.register("openrouter", OpenRouterAdapter)
    registry.register("google", GoogleAdapter)
    registry.register("anthropic", AnthropicAdapter)
    registry.register("nvidia", NvidiaAdapter)
    registry.register("custom", CustomAdapter)
    return registry
