"""``rxcord.testing``: the test doubles' façade, its names, and each one's home (``__module__``)."""

from __future__ import annotations

import inspect

import rxcord.testing

EXPECTED = (
    "ApiError",
    "Chunking",
    "DiscordEmulator",
    "EmulatorConfig",
    "EmulatorCounters",
    "EmulatorEvent",
    "EmulatorNotStartedError",
    "FakeProvider",
    "FakeProviderNotStartedError",
    "Fault",
    "FaultKind",
    "MemorySink",
    "ReplayServer",
    "Scope",
    "ScriptedToolCall",
    "ServedRequest",
    "chat_completions_body",
    "point_discord_py",
)


def test_all_is_pinned() -> None:
    assert rxcord.testing.__all__ == EXPECTED


def test_every_class_and_function_says_it_lives_in_the_facade() -> None:
    """Reprs and tracebacks name ``rxcord.testing.X``, not the internal module (which may move)."""
    adopted = [name for name in EXPECTED if inspect.isclass(getattr(rxcord.testing, name))]
    adopted += [name for name in EXPECTED if inspect.isfunction(getattr(rxcord.testing, name))]
    assert len(adopted) == len(EXPECTED) - 2  # FaultKind and Scope are Literal aliases
    assert {name: getattr(rxcord.testing, name).__module__ for name in adopted} == dict.fromkeys(
        adopted, "rxcord.testing"
    )


def test_dir_lists_the_names_before_they_load() -> None:
    assert set(EXPECTED) <= set(dir(rxcord.testing))
