"""rxcord: stream LLM responses from provider APIs into Discord as one reactive dataflow.

``import rxcord`` is the public API: every name below is importable from here and listed in
``__all__`` (a test pins the list). Names load lazily (PEP 562), so ``import rxcord`` stays cheap
and optional extras (redis, discord.py, matplotlib) load only when their names are used. The
modules behind the names are internal and may move between releases.

Logging goes to loguru under the one ``rxcord`` namespace, disabled by default as a library
should be: ``logger.enable("rxcord")`` turns on every log line of the library, and
``logger.disable("rxcord")`` turns them off again.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from loguru import logger

logger.disable(__name__)

# pyproject.toml is the one place the version is written: ``rxcord.__version__`` is read from the
# installed metadata (rxcord.core.version) on first use, like every other name here.
if TYPE_CHECKING:
    from rxcord.core.version import __version__ as __version__

_EXPORTS: dict[str, str] = {
    "AnthropicAdapter": "rxcord.providers.anthropic",
    "Batch": "rxcord.core.types",
    "BucketStore": "rxcord.sinks.ratelimit",
    "Candidate": "rxcord.compose.turn",
    "ChatRequest": "rxcord.core.request",
    "ChunkType": "rxcord.core.types",
    "CustomAdapter": "rxcord.providers.custom",
    "DecisionCapability": "rxcord.providers.decisions",
    "DecisionConfig": "rxcord.providers.decisions",
    "DecisionCredentials": "rxcord.providers.decisions",
    "DecisionDirectory": "rxcord.providers.decisions",
    "DecisionKind": "rxcord.providers.decisions",
    "DecisionModelOption": "rxcord.providers.decisions",
    "DecisionProtocol": "rxcord.providers.decisions",
    "DecisionReference": "rxcord.providers.decisions",
    "DecisionResult": "rxcord.providers.decisions",
    "Decisions": "rxcord.providers.decisions",
    "Delivery": "rxcord.core.state",
    "DeliveryMode": "rxcord.core.types",
    "DiscordDelivery": "rxcord.sinks.delivery",
    "DiscordEmulator": "rxcord.sinks.emulator",
    "DiscordError": "rxcord.core.errors",
    "DiscordPySink": "rxcord.sinks.discordpy",
    "DiscordSink": "rxcord.sinks.base",
    "DiscordStopError": "rxcord.core.errors",
    "EditInPlaceDelivery": "rxcord.sinks.edit_in_place",
    "EditableSink": "rxcord.sinks.base",
    "EmulatorConfig": "rxcord.sinks.emulator",
    "ErrorType": "rxcord.core.types",
    "FinishReason": "rxcord.core.types",
    "FunctionCall": "rxcord.core.types",
    "GoogleAdapter": "rxcord.providers.google",
    "Guards": "rxcord.core.config",
    "HttpRequest": "rxcord.providers.base",
    "ImagePart": "rxcord.core.request",
    "InputError": "rxcord.core.errors",
    "KeyCooldown": "rxcord.compose.turn",
    "LedgerEntry": "rxcord.providers.usage",
    "LocaleCatalog": "rxcord.io.locales",
    "MalformedJsonError": "rxcord.core.safe_json",
    "MemorySink": "rxcord.sinks.memory",
    "MemoryStore": "rxcord.sinks.ratelimit",
    "Message": "rxcord.core.request",
    "MissingCredentialError": "rxcord.core.errors",
    "MissingExtraError": "rxcord.core.errors",
    "NvidiaAdapter": "rxcord.providers.nvidia",
    "OpenAIAdapter": "rxcord.providers.openai",
    "OpenRouterAdapter": "rxcord.providers.openrouter",
    "Pipeline": "rxcord.compose.pipeline",
    "PredicateAnswer": "rxcord.providers.decisions",
    "ProcessedChunk": "rxcord.core.types",
    "ProviderAdapter": "rxcord.providers.base",
    "ProviderError": "rxcord.core.types",
    "ProviderRequestDeniedError": "rxcord.providers.hooks",
    "Question": "rxcord.providers.decisions",
    "RateLimitError": "rxcord.sinks.ratelimit",
    "RateLimiter": "rxcord.sinks.ratelimit",
    "RawStreamChunk": "rxcord.core.types",
    "Redactor": "rxcord.core.redact",
    "RedisStopBus": "rxcord.io.stop_bus",
    "RedisStore": "rxcord.sinks.redis_ratelimit",
    "RefusedAnswer": "rxcord.providers.decisions",
    "RenderModifiers": "rxcord.core.config",
    "ReplayServer": "rxcord.io.replay",
    "RestSink": "rxcord.sinks.rest",
    "ReviewLedger": "rxcord.providers.usage",
    "Role": "rxcord.core.request",
    "RxcordError": "rxcord.core.errors",
    "SamplerSettings": "rxcord.core.request",
    "Segment": "rxcord.core.state",
    "SegmentKind": "rxcord.core.types",
    "SentMessage": "rxcord.core.state",
    "SseLineTooLongError": "rxcord.providers.sse",
    "SsrfGuard": "rxcord.providers.ssrf",
    "SsrfRefusedError": "rxcord.core.errors",
    "Stage": "rxcord.compose.pipeline",
    "StageContext": "rxcord.compose.pipeline",
    "StopHandle": "rxcord.core.stops",
    "StopKind": "rxcord.core.types",
    "StopRegistry": "rxcord.core.stops",
    "StopSignal": "rxcord.core.types",
    "StreamConfig": "rxcord.core.config",
    "StreamContext": "rxcord.core.config",
    "StreamJob": "rxcord.compose.run",
    "StreamResult": "rxcord.core.state",
    "StreamState": "rxcord.core.state",
    "StreamStatus": "rxcord.core.types",
    "Streamer": "rxcord.compose.streamer",
    "TableStyle": "rxcord.core.config",
    "TerminalSink": "rxcord.sinks.terminal",
    "TextPart": "rxcord.core.request",
    "ThoughtLogEntry": "rxcord.core.types",
    "Timeline": "rxcord.operators.timeline",
    "TokenRejectedError": "rxcord.sinks.rest",
    "ToolHandler": "rxcord.compose.turn",
    "ToolSpec": "rxcord.core.request",
    "TransportConfig": "rxcord.providers.transport",
    "TurnResult": "rxcord.compose.turn",
    "TurnUsageSample": "rxcord.providers.usage",
    "UnknownWebhookError": "rxcord.core.errors",
    "Usage": "rxcord.core.types",
    "UsageReport": "rxcord.providers.usage",
    "build_chain": "rxcord.compose.chain",
    "build_stream": "rxcord.compose.run",
    "call_decisions": "rxcord.providers.decisions",
    "fallback_order": "rxcord.compose.turn",
    "make_limiter": "rxcord.sinks.ratelimit",
    "plot_timeline": "rxcord.cli.timeline_plot",
    "point_discord_py": "rxcord.sinks.emulator",
    "reference_for": "rxcord.providers.decisions",
    "register_decisions": "rxcord.providers.decisions",
    "register_locale_dir": "rxcord.io.locales",
    "register_denial_translator": "rxcord.providers.hooks",
    "register_request_hook": "rxcord.providers.hooks",
    "register_turn_usage_hook": "rxcord.providers.usage",
    "run_stream": "rxcord.compose.run",
    "run_turn": "rxcord.compose.turn",
    "split_message": "rxcord.sinks.split_message",
    "stage03": "rxcord.compose.pipeline",
    "stream_to_discord": "rxcord.compose.run",
    "supports_decisions": "rxcord.providers.decisions",
    "with_usage_callback": "rxcord.providers.usage",
    "with_usage_context": "rxcord.providers.hooks",
    "with_usage_reporter": "rxcord.providers.usage",
}
"""Public name -> the module that defines it."""

__all__ = (
    "AnthropicAdapter",
    "Batch",
    "BucketStore",
    "Candidate",
    "ChatRequest",
    "ChunkType",
    "CustomAdapter",
    "DecisionCapability",
    "DecisionConfig",
    "DecisionCredentials",
    "DecisionDirectory",
    "DecisionKind",
    "DecisionModelOption",
    "DecisionProtocol",
    "DecisionReference",
    "DecisionResult",
    "Decisions",
    "Delivery",
    "DeliveryMode",
    "DiscordDelivery",
    "DiscordEmulator",
    "DiscordError",
    "DiscordPySink",
    "DiscordSink",
    "DiscordStopError",
    "EditInPlaceDelivery",
    "EditableSink",
    "EmulatorConfig",
    "ErrorType",
    "FinishReason",
    "FunctionCall",
    "GoogleAdapter",
    "Guards",
    "HttpRequest",
    "ImagePart",
    "InputError",
    "KeyCooldown",
    "LedgerEntry",
    "LocaleCatalog",
    "MalformedJsonError",
    "MemorySink",
    "MemoryStore",
    "Message",
    "MissingCredentialError",
    "MissingExtraError",
    "NvidiaAdapter",
    "OpenAIAdapter",
    "OpenRouterAdapter",
    "Pipeline",
    "PredicateAnswer",
    "ProcessedChunk",
    "ProviderAdapter",
    "ProviderError",
    "ProviderRequestDeniedError",
    "Question",
    "RateLimitError",
    "RateLimiter",
    "RawStreamChunk",
    "Redactor",
    "RedisStopBus",
    "RedisStore",
    "RefusedAnswer",
    "RenderModifiers",
    "ReplayServer",
    "RestSink",
    "ReviewLedger",
    "Role",
    "RxcordError",
    "SamplerSettings",
    "Segment",
    "SegmentKind",
    "SentMessage",
    "SseLineTooLongError",
    "SsrfGuard",
    "SsrfRefusedError",
    "Stage",
    "StageContext",
    "StopHandle",
    "StopKind",
    "StopRegistry",
    "StopSignal",
    "StreamConfig",
    "StreamContext",
    "StreamJob",
    "StreamResult",
    "StreamState",
    "StreamStatus",
    "Streamer",
    "TableStyle",
    "TerminalSink",
    "TextPart",
    "ThoughtLogEntry",
    "Timeline",
    "TokenRejectedError",
    "ToolHandler",
    "ToolSpec",
    "TransportConfig",
    "TurnResult",
    "TurnUsageSample",
    "UnknownWebhookError",
    "Usage",
    "UsageReport",
    "build_chain",
    "build_stream",
    "call_decisions",
    "fallback_order",
    "make_limiter",
    "plot_timeline",
    "point_discord_py",
    "reference_for",
    "register_decisions",
    "register_denial_translator",
    "register_locale_dir",
    "register_request_hook",
    "register_turn_usage_hook",
    "run_stream",
    "run_turn",
    "split_message",
    "stage03",
    "stream_to_discord",
    "supports_decisions",
    "with_usage_callback",
    "with_usage_context",
    "with_usage_reporter",
)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.cli.timeline_plot import plot_timeline
    from rxcord.compose.chain import build_chain
    from rxcord.compose.pipeline import Pipeline, Stage, StageContext, stage03
    from rxcord.compose.run import StreamJob, build_stream, run_stream, stream_to_discord
    from rxcord.compose.streamer import Streamer
    from rxcord.compose.turn import Candidate, KeyCooldown, ToolHandler, TurnResult, fallback_order, run_turn
    from rxcord.core.config import Guards, RenderModifiers, StreamConfig, StreamContext, TableStyle
    from rxcord.core.errors import (
        DiscordError,
        DiscordStopError,
        InputError,
        MissingCredentialError,
        MissingExtraError,
        RxcordError,
        SsrfRefusedError,
        UnknownWebhookError,
    )
    from rxcord.core.redact import Redactor
    from rxcord.core.request import ChatRequest, ImagePart, Message, Role, SamplerSettings, TextPart, ToolSpec
    from rxcord.core.safe_json import MalformedJsonError
    from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, StreamState
    from rxcord.core.stops import StopHandle, StopRegistry
    from rxcord.core.types import (
        Batch,
        ChunkType,
        DeliveryMode,
        ErrorType,
        FinishReason,
        FunctionCall,
        ProcessedChunk,
        ProviderError,
        RawStreamChunk,
        SegmentKind,
        StopKind,
        StopSignal,
        StreamStatus,
        ThoughtLogEntry,
        Usage,
    )
    from rxcord.io.locales import LocaleCatalog, register_locale_dir
    from rxcord.io.replay import ReplayServer
    from rxcord.io.stop_bus import RedisStopBus
    from rxcord.operators.timeline import Timeline
    from rxcord.providers.anthropic import AnthropicAdapter
    from rxcord.providers.base import HttpRequest, ProviderAdapter
    from rxcord.providers.custom import CustomAdapter
    from rxcord.providers.decisions import (
        DecisionCapability,
        DecisionConfig,
        DecisionCredentials,
        DecisionDirectory,
        DecisionKind,
        DecisionModelOption,
        DecisionProtocol,
        DecisionReference,
        DecisionResult,
        Decisions,
        PredicateAnswer,
        Question,
        RefusedAnswer,
        call_decisions,
        reference_for,
        register_decisions,
        supports_decisions,
    )
    from rxcord.providers.google import GoogleAdapter
    from rxcord.providers.hooks import (
        ProviderRequestDeniedError,
        register_denial_translator,
        register_request_hook,
        with_usage_context,
    )
    from rxcord.providers.nvidia import NvidiaAdapter
    from rxcord.providers.openai import OpenAIAdapter
    from rxcord.providers.openrouter import OpenRouterAdapter
    from rxcord.providers.sse import SseLineTooLong as SseLineTooLong
    from rxcord.providers.sse import SseLineTooLongError
    from rxcord.providers.ssrf import SsrfGuard
    from rxcord.providers.transport import TransportConfig
    from rxcord.providers.usage import (
        LedgerEntry,
        ReviewLedger,
        TurnUsageSample,
        UsageReport,
        register_turn_usage_hook,
        with_usage_callback,
        with_usage_reporter,
    )
    from rxcord.sinks.base import DiscordSink, EditableSink
    from rxcord.sinks.delivery import DiscordDelivery
    from rxcord.sinks.discordpy import DiscordPySink
    from rxcord.sinks.edit_in_place import EditInPlaceDelivery
    from rxcord.sinks.emulator import DiscordEmulator, EmulatorConfig, point_discord_py
    from rxcord.sinks.memory import MemorySink
    from rxcord.sinks.ratelimit import BucketStore, MemoryStore, RateLimiter, RateLimitError, make_limiter
    from rxcord.sinks.redis_ratelimit import RedisStore
    from rxcord.sinks.rest import RestSink, TokenRejectedError
    from rxcord.sinks.split_message import split_message
    from rxcord.sinks.terminal import TerminalSink


# Old names of renamed exports: still importable (and typed, above), kept out of ``__all__`` so
# each class is documented once under its current name.
_FORMER_NAMES: dict[str, str] = {"SseLineTooLong": "SseLineTooLongError"}


def __getattr__(name: str) -> Any:
    if name in _FORMER_NAMES:
        value = getattr(importlib.import_module(__name__), _FORMER_NAMES[name])
        globals()[name] = value
        return value
    module = "rxcord.core.version" if name == "__version__" else _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
