"""rxcord: stream LLM responses from provider APIs into Discord as one reactive dataflow.

``import rxcord`` holds what a newcomer needs: the entry points (``Streamer``,
``stream_to_discord``, ``run_stream``, ``run_turn``), request and result types, the adapters,
the everyday sinks, configuration, the error root and the everyday errors. Everything else has
one home in its room's façade: ``rxcord.decisions``, ``rxcord.hooks``, ``rxcord.operators``,
``rxcord.sinks``, ``rxcord.providers``, ``rxcord.compose``, ``rxcord.io``, ``rxcord.cli``,
``rxcord.discord`` and ``rxcord.testing`` (docs/architecture.md, "One import package"). A test
pins every façade's ``__all__``. Names load lazily (PEP 562, ``rxcord.core.facade``), so
``import rxcord`` stays cheap and optional extras (redis, discord.py) load only when their
names are used; the modules behind the names are internal and may move between releases.

Logging goes to loguru under the one ``rxcord`` namespace, disabled by default as a library
should be: ``logger.enable("rxcord")`` turns on every log line of the library, and
``logger.disable("rxcord")`` turns them off again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

from rxcord.core.facade import lazy_exports

logger.disable(__name__)

_EXPORTS: dict[str, str] = {
    "AnthropicAdapter": "rxcord.providers.anthropic.adapter",
    "Candidate": "rxcord.compose.turn",
    "ChatRequest": "rxcord.core.request",
    "ConfigError": "rxcord.core.errors",
    "CustomAdapter": "rxcord.providers.custom",
    "DeliveryMode": "rxcord.core.types",
    "DiscordError": "rxcord.core.errors",
    "DiscordPySink": "rxcord.sinks.discordpy",
    "fallback_order": "rxcord.compose.turn",
    "FinishReason": "rxcord.core.types",
    "FunctionCall": "rxcord.core.types",
    "GoogleAdapter": "rxcord.providers.google.adapter",
    "Guards": "rxcord.core.config",
    "ImagePart": "rxcord.core.request",
    "InputError": "rxcord.core.errors",
    "Message": "rxcord.core.request",
    "MissingCredentialError": "rxcord.core.errors",
    "MissingExtraError": "rxcord.core.errors",
    "NvidiaAdapter": "rxcord.providers.nvidia",
    "OpenAIAdapter": "rxcord.providers.openai",
    "OpenRouterAdapter": "rxcord.providers.openrouter",
    "Pipeline": "rxcord.compose.pipeline",
    "RenderModifiers": "rxcord.core.config",
    "RestSink": "rxcord.sinks.rest",
    "Role": "rxcord.core.request",
    "run_stream": "rxcord.compose.run",
    "run_turn": "rxcord.compose.turn",
    "RxcordError": "rxcord.core.errors",
    "SamplerSettings": "rxcord.core.request",
    "split_message": "rxcord.sinks.split_message",
    "SseLineTooLongError": "rxcord.core.errors",
    "StopHandle": "rxcord.core.stops",
    "StopKind": "rxcord.core.types",
    "StopRegistry": "rxcord.core.stops",
    "StopSignal": "rxcord.core.types",
    "stream_to_discord": "rxcord.compose.run",
    "StreamConfig": "rxcord.core.config",
    "StreamContext": "rxcord.core.config",
    "Streamer": "rxcord.compose.streamer",
    "StreamJob": "rxcord.compose.run",
    "StreamResult": "rxcord.core.state",
    "StreamStatus": "rxcord.core.types",
    "TerminalSink": "rxcord.sinks.terminal",
    "TextPart": "rxcord.core.request",
    "ThoughtLogEntry": "rxcord.core.types",
    "ToolSpec": "rxcord.core.request",
    "TransportConfig": "rxcord.providers.transport",
    "TurnResult": "rxcord.compose.turn",
    "Usage": "rxcord.core.types",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))

# pyproject.toml is the one place the version is written: ``rxcord.__version__`` is read from the
# installed metadata (rxcord.core.version) on first use, like every name here (not in ``__all__``).
_VERSION = {"__version__": "rxcord.core.version"}
# Old names of renamed exports: importable (and typed, below), kept out of ``__all__`` so each
# class is documented once under its current name.
_FORMER_NAMES = {"SseLineTooLong": "SseLineTooLongError"}

__getattr__, __dir__ = lazy_exports(__name__, {**_EXPORTS, **_VERSION}, former=_FORMER_NAMES)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.compose.pipeline import Pipeline as Pipeline
    from rxcord.compose.run import StreamJob as StreamJob
    from rxcord.compose.run import run_stream as run_stream
    from rxcord.compose.run import stream_to_discord as stream_to_discord
    from rxcord.compose.streamer import Streamer as Streamer
    from rxcord.compose.turn import Candidate as Candidate
    from rxcord.compose.turn import TurnResult as TurnResult
    from rxcord.compose.turn import fallback_order as fallback_order
    from rxcord.compose.turn import run_turn as run_turn
    from rxcord.core.config import Guards as Guards
    from rxcord.core.config import RenderModifiers as RenderModifiers
    from rxcord.core.config import StreamConfig as StreamConfig
    from rxcord.core.config import StreamContext as StreamContext
    from rxcord.core.errors import ConfigError as ConfigError
    from rxcord.core.errors import DiscordError as DiscordError
    from rxcord.core.errors import InputError as InputError
    from rxcord.core.errors import MissingCredentialError as MissingCredentialError
    from rxcord.core.errors import MissingExtraError as MissingExtraError
    from rxcord.core.errors import RxcordError as RxcordError
    from rxcord.core.errors import SseLineTooLongError as SseLineTooLongError
    from rxcord.core.request import ChatRequest as ChatRequest
    from rxcord.core.request import ImagePart as ImagePart
    from rxcord.core.request import Message as Message
    from rxcord.core.request import Role as Role
    from rxcord.core.request import SamplerSettings as SamplerSettings
    from rxcord.core.request import TextPart as TextPart
    from rxcord.core.request import ToolSpec as ToolSpec
    from rxcord.core.state import StreamResult as StreamResult
    from rxcord.core.stops import StopHandle as StopHandle
    from rxcord.core.stops import StopRegistry as StopRegistry
    from rxcord.core.types import DeliveryMode as DeliveryMode
    from rxcord.core.types import FinishReason as FinishReason
    from rxcord.core.types import FunctionCall as FunctionCall
    from rxcord.core.types import StopKind as StopKind
    from rxcord.core.types import StopSignal as StopSignal
    from rxcord.core.types import StreamStatus as StreamStatus
    from rxcord.core.types import ThoughtLogEntry as ThoughtLogEntry
    from rxcord.core.types import Usage as Usage
    from rxcord.core.version import __version__ as __version__
    from rxcord.providers.anthropic.adapter import AnthropicAdapter as AnthropicAdapter
    from rxcord.providers.custom import CustomAdapter as CustomAdapter
    from rxcord.providers.google.adapter import GoogleAdapter as GoogleAdapter
    from rxcord.providers.nvidia import NvidiaAdapter as NvidiaAdapter
    from rxcord.providers.openai import OpenAIAdapter as OpenAIAdapter
    from rxcord.providers.openrouter import OpenRouterAdapter as OpenRouterAdapter
    from rxcord.providers.sse import SseLineTooLong as SseLineTooLong
    from rxcord.providers.transport import TransportConfig as TransportConfig
    from rxcord.sinks.discordpy import DiscordPySink as DiscordPySink
    from rxcord.sinks.rest import RestSink as RestSink
    from rxcord.sinks.split_message import split_message as split_message
    from rxcord.sinks.terminal import TerminalSink as TerminalSink
