"""Hook and callback disposers (issue 14): safe in any order, idempotent, never removing a newer one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rxcord.providers.hooks import (
    Hold,
    ProviderRequest,
    begin_provider_request,
    register_request_hook,
    request_hook_registered,
)


class _Hold:
    def __init__(self, name: str) -> None:
        self.name = name

    def report_cost(self, cost: float) -> None:
        return None

    def release(self, retain_estimate: bool) -> None:
        return None


def _hook(name: str) -> Callable[[ProviderRequest], Hold]:
    def hook(request: ProviderRequest) -> Hold:
        return _Hold(name)

    return hook


def _current() -> str | None:
    hold = begin_provider_request(provider="openai", path="/v1/chat/completions", body={})
    if hold is None:
        return None
    inner = vars(hold)["inner"] if hasattr(hold, "__dict__") else hold.inner  # type: ignore[attr-defined]
    assert isinstance(inner, _Hold)
    return inner.name


def test_disposing_an_older_registration_keeps_the_newer_one() -> None:
    """Register a, then b; dispose a: b stays in force (the old disposer restored a's predecessor)."""
    dispose_a = register_request_hook(_hook("a"))
    dispose_b = register_request_hook(_hook("b"))
    try:
        assert _current() == "b"
        dispose_a()
        assert _current() == "b"
        dispose_a()  # idempotent
        assert _current() == "b"
    finally:
        dispose_b()
    assert _current() is None and not request_hook_registered()


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (1, 2, 0), (0, 2, 1), (2, 0, 1)])
def test_any_disposal_order_leaves_the_newest_live_registration(order: tuple[int, int, int]) -> None:
    """Three registrations disposed in any order (each twice): the newest one still alive is in force."""
    names = ["a", "b", "c"]
    disposers = [register_request_hook(_hook(name)) for name in names]
    alive = [True, True, True]
    try:
        for index in order:
            disposers[index]()
            disposers[index]()
            alive[index] = False
            live = [name for name, up in zip(names, alive, strict=True) if up]
            assert _current() == (live[-1] if live else None)
    finally:
        for dispose in disposers:
            dispose()
    assert not request_hook_registered()


def test_provider_registry_disposers_in_any_order() -> None:
    """Overriding a provider twice and undoing the first override keeps the second in force."""
    from rxcord.core.errors import InputError
    from rxcord.providers.openai import OpenAIAdapter
    from rxcord.providers.openrouter import OpenRouterAdapter
    from rxcord.providers.registry import ProviderRegistry

    registry = ProviderRegistry()
    dispose_base = registry.register("p", OpenAIAdapter)
    dispose_override = registry.register("p", OpenRouterAdapter)
    dispose_base()
    dispose_base()
    assert isinstance(registry.create("p"), OpenRouterAdapter)
    dispose_override()
    assert registry.names() == ()
    with pytest.raises(InputError):
        registry.create("p")
