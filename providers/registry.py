"""A plain provider registry: name -> adapter factory.

``register`` returns a disposer that restores what was there before, so a
bot (or a test) can add or override a provider for a while and undo it.
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
    """Adapter factories by provider name."""

    _factories: dict[str, AdapterFactory] = attrs.field(factory=dict)

    def register(self, name: str, factory: AdapterFactory) -> Callable[[], None]:
        """Register *factory* under *name*; the returned disposer restores the previous one."""
        previous = self._factories.get(name)
        self._factories[name] = factory

        def dispose() -> None:
            if previous is None:
                self._factories.pop(name, None)
            else:
                self._factories[name] = previous

        return dispose

    def create(self, name: str, **options: Any) -> ProviderAdapter:
        """A new adapter for *name*; raises ``InputError`` for an unknown provider."""
        factory = self._factories.get(name)
        if factory is None:
            known = ", ".join(sorted(self._factories))
            raise InputError(f"unknown provider {name!r} (known: {known})")
        return factory(**options)

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
