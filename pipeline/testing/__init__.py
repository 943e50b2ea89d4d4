"""rxcord.testing: the test doubles, for tests, notebooks, benchmarks and trying a bot offline.

The room holds what stands in for the services rxcord talks to: the Discord emulator
(``emulator/``: Discord's REST API and gateway on 127.0.0.1) and its page (``page/``: a
Discord-like web view of it), the provider replay server (``replay``: a captured response
body served over real HTTP) and ``FakeProvider`` (``fake_provider``: a scripted Chat
Completions model). ``MemorySink`` (defined with the sinks, whose contract it implements) is
exported here because it is a test author's sink. Everything binds to loopback only and
contacts nothing. Names load lazily, so importing this module starts nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "ApiError": "rxcord.core.errors",
    "Chunking": "rxcord.testing.replay",
    "DiscordEmulator": "rxcord.testing.emulator.app",
    "EmulatorConfig": "rxcord.testing.emulator.config",
    "EmulatorCounters": "rxcord.testing.emulator.config",
    "EmulatorEvent": "rxcord.testing.emulator.events",
    "EmulatorNotStartedError": "rxcord.core.errors",
    "FakeProvider": "rxcord.testing.fake_provider",
    "FakeProviderNotStartedError": "rxcord.core.errors",
    "Fault": "rxcord.testing.emulator.config",
    "FaultKind": "rxcord.testing.emulator.config",
    "MemorySink": "rxcord.sinks.memory",
    "ReplayServer": "rxcord.testing.replay",
    "Scope": "rxcord.testing.emulator.config",
    "ScriptedToolCall": "rxcord.testing.fake_provider",
    "ServedRequest": "rxcord.testing.replay",
    "chat_completions_body": "rxcord.testing.fake_provider",
    "point_discord_py": "rxcord.testing.emulator.server",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.core.errors import ApiError as ApiError
    from rxcord.core.errors import EmulatorNotStartedError as EmulatorNotStartedError
    from rxcord.core.errors import FakeProviderNotStartedError as FakeProviderNotStartedError
    from rxcord.sinks.memory import MemorySink as MemorySink
    from rxcord.testing.emulator.app import DiscordEmulator as DiscordEmulator
    from rxcord.testing.emulator.config import EmulatorConfig as EmulatorConfig
    from rxcord.testing.emulator.config import EmulatorCounters as EmulatorCounters
    from rxcord.testing.emulator.config import Fault as Fault
    from rxcord.testing.emulator.config import FaultKind as FaultKind
    from rxcord.testing.emulator.config import Scope as Scope
    from rxcord.testing.emulator.events import EmulatorEvent as EmulatorEvent
    from rxcord.testing.emulator.server import point_discord_py as point_discord_py
    from rxcord.testing.fake_provider import FakeProvider as FakeProvider
    from rxcord.testing.fake_provider import ScriptedToolCall as ScriptedToolCall
    from rxcord.testing.fake_provider import chat_completions_body as chat_completions_body
    from rxcord.testing.replay import Chunking as Chunking
    from rxcord.testing.replay import ReplayServer as ReplayServer
    from rxcord.testing.replay import ServedRequest as ServedRequest
