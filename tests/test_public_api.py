"""The public surface: every façade's names, one home per object, the wheel, typing for users.

``import rxcord`` keeps what a newcomer needs; every other public name lives in its room's
façade (docs/architecture.md, "One import package"). Each façade lists its names once, loads
them lazily and gives each class and function its own name as ``__module__``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rxcord

ROOT = Path(__file__).resolve().parent.parent

# The public surface, pinned: adding, moving or removing a name is a deliberate change here.
PUBLIC: dict[str, list[str]] = {
    "rxcord": [
        "AnthropicAdapter",
        "Candidate",
        "ChatRequest",
        "ConfigError",
        "CustomAdapter",
        "DeliveryMode",
        "DiscordError",
        "DiscordPySink",
        "FinishReason",
        "FunctionCall",
        "GoogleAdapter",
        "Guards",
        "ImagePart",
        "InputError",
        "Message",
        "MissingCredentialError",
        "MissingExtraError",
        "NvidiaAdapter",
        "OpenAIAdapter",
        "OpenRouterAdapter",
        "Pipeline",
        "RenderModifiers",
        "RestSink",
        "Role",
        "RxcordError",
        "SamplerSettings",
        "SseLineTooLongError",
        "StopHandle",
        "StopKind",
        "StopRegistry",
        "StopSignal",
        "StreamConfig",
        "StreamContext",
        "StreamJob",
        "StreamResult",
        "StreamStatus",
        "Streamer",
        "TerminalSink",
        "TextPart",
        "ThoughtLogEntry",
        "ToolSpec",
        "TransportConfig",
        "TurnResult",
        "Usage",
        "fallback_order",
        "run_stream",
        "run_turn",
        "split_message",
        "stream_to_discord",
    ],
    "rxcord.cli": [
        "PlotUnavailableError",
        "ReplayOptions",
        "ReplayOutcome",
        "plot_timeline",
        "run_replay",
    ],
    "rxcord.compose": [
        "KeyCooldown",
        "Stage",
        "StageContext",
        "ToolHandler",
        "build_chain",
        "build_stream",
        "stage03",
    ],
    "rxcord.decisions": [
        "Answer",
        "CancelSignal",
        "DecisionCancelled",
        "DecisionCapability",
        "DecisionCompleted",
        "DecisionConfig",
        "DecisionCredentials",
        "DecisionDenied",
        "DecisionDirectory",
        "DecisionFailed",
        "DecisionInputError",
        "DecisionInvalidInput",
        "DecisionKind",
        "DecisionLimit",
        "DecisionModelOption",
        "DecisionOptionError",
        "DecisionProtocol",
        "DecisionReference",
        "DecisionRefused",
        "DecisionResult",
        "DecisionUnavailable",
        "DecisionValidationError",
        "DecisionWireError",
        "Decisions",
        "FailureCategory",
        "PredicateAnswer",
        "Question",
        "RefusedAnswer",
        "call_decisions",
        "custom_provider",
        "decision_protocols",
        "discover_openrouter_models",
        "load_decision_models",
        "reference_for",
        "register_decision_metric",
        "register_decisions",
        "resolve_reference",
        "supports_decisions",
    ],
    "rxcord.discord": [
        "Admission",
        "Answer",
        "AnswerStops",
        "Answers",
        "Attachment",
        "ChatLine",
        "ContextLimits",
        "Conversation",
        "DiscordPySource",
        "DiscordUnreachableError",
        "ImageFetcher",
        "ImageReader",
        "Interrupt",
        "Markers",
        "MessageSource",
        "Permissions",
        "RestSource",
        "StopsElsewhere",
        "build_conversation",
        "end_lines",
        "read_conversation",
        "show_end",
        "writing_reaction",
    ],
    "rxcord.hooks": [
        "DenialCopy",
        "DenialTranslator",
        "Hold",
        "LedgerEntry",
        "ProviderRequest",
        "ProviderRequestDeniedError",
        "RequestHook",
        "ReviewLedger",
        "TurnUsageSample",
        "UsageReport",
        "register_denial_translator",
        "register_request_hook",
        "register_turn_usage_hook",
        "with_usage_callback",
        "with_usage_context",
        "with_usage_reporter",
    ],
    "rxcord.io": [
        "LocaleCatalog",
        "RedisStopBus",
        "default_catalog",
        "register_locale_dir",
    ],
    "rxcord.operators": [
        "Batch",
        "ChunkType",
        "Flusher",
        "ProcessedChunk",
        "RawStreamChunk",
        "Segment",
        "SegmentKind",
        "SpillGuard",
        "StreamState",
        "ThinkStripper",
        "Timeline",
        "TimelineEvent",
        "TypingPulse",
        "VerbatimToolParser",
        "accumulate",
        "apply_render",
        "clean",
        "clean_text",
        "drain",
        "flush",
        "idle_timeout",
        "normalize",
        "prefill",
        "redact_secrets",
        "resolve_mentions",
        "speaker_guard",
        "spill_guard",
        "split_think_blocks",
        "stop_gate",
        "think_strip",
        "typing_heartbeat",
        "verbatim_tools",
    ],
    "rxcord.providers": [
        "ErrorType",
        "HttpRequest",
        "MalformedJsonError",
        "ProviderAdapter",
        "ProviderError",
        "RedactedError",
        "Redactor",
        "ResponseTooLargeError",
        "SsrfGuard",
        "SsrfRefusedError",
        "TransportStats",
        "UndecodableBodyError",
        "endpoint_url",
        "precheck",
        "stream_source",
    ],
    "rxcord.sinks": [
        "BucketStore",
        "Delivery",
        "DiscordDelivery",
        "DiscordSink",
        "DiscordStopError",
        "EditInPlaceDelivery",
        "EditableSink",
        "InvalidRequestLimitError",
        "MemoryStore",
        "RateLimitError",
        "RateLimiter",
        "RedisStore",
        "SentMessage",
        "TableStyle",
        "TokenRejectedError",
        "UnknownWebhookError",
        "deliver",
        "make_limiter",
    ],
    "rxcord.testing": [
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
    ],
}

FACADES = sorted(PUBLIC)
ROOT_LIMIT = 50  # the root keeps what a newcomer needs; the rest has a room


def _facade(name: str) -> ModuleType:
    return importlib.import_module(name)


def _exported(facade: str) -> list[tuple[str, Any]]:
    module = _facade(facade)
    return [(name, getattr(module, name)) for name in module.__all__]


def _is_api_object(value: object) -> bool:
    """A class or function of rxcord (type aliases and constants carry no ``__module__`` of ours)."""
    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return False
    return getattr(value, "__module__", "").split(".")[0] == "rxcord"


@pytest.mark.parametrize("facade", FACADES)
def test_each_facades_names_are_pinned(facade: str) -> None:
    assert sorted(_facade(facade).__all__) == PUBLIC[facade]


def test_the_root_keeps_what_a_newcomer_needs() -> None:
    assert len(rxcord.__all__) <= ROOT_LIMIT
    for name in ("Streamer", "stream_to_discord", "run_stream", "run_turn", "ChatRequest", "RxcordError"):
        assert name in rxcord.__all__, name


@pytest.mark.parametrize("facade", FACADES)
def test_every_name_resolves_documented_and_carries_its_facade(facade: str) -> None:
    """After access, a class or function says the façade as ``__module__``, not its internal path."""
    module = _facade(facade)
    exported = _exported(facade)
    assert exported
    for name, value in exported:
        assert value is not None, name
        if _is_api_object(value):
            assert value.__module__ == facade, (facade, name, value.__module__)
            assert (value.__doc__ or "").strip(), f"{facade}.{name} has no docstring"
    assert set(module.__all__) <= set(dir(module))


def test_no_object_has_two_facades() -> None:
    homes: dict[int, str] = {}
    for facade in FACADES:
        for name, value in _exported(facade):
            if not _is_api_object(value):
                continue
            home = homes.setdefault(id(value), f"{facade}.{name}")
            assert home == f"{facade}.{name}", f"{facade}.{name} is also exported as {home}"
    assert len(homes) > ROOT_LIMIT


@pytest.mark.parametrize("facade", FACADES)
def test_a_submodule_never_hides_an_export_of_the_same_name(facade: str) -> None:
    """Importing ``pkg.x`` binds the module as ``pkg.x``; an exported ``x`` must stay the export.

    ``rxcord.operators`` names its stages after their modules, ``rxcord.sinks`` its ``deliver``.
    """
    module = _facade(facade)
    submodules = {info.name for info in pkgutil.iter_modules(getattr(module, "__path__", []))}
    for name in sorted(set(module.__all__) & submodules):
        importlib.import_module(f"{facade}.{name}")
        assert not isinstance(getattr(module, name), ModuleType), f"{facade}.{name}"
    if facade == "rxcord.sinks":
        assert "deliver" in submodules and "deliver" in module.__all__  # the case stays covered


@pytest.mark.parametrize("facade", FACADES)
def test_unknown_names_raise_attribute_error(facade: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = _facade(facade).nope


@pytest.mark.parametrize("facade", FACADES)
def test_importing_a_facade_loads_nothing_but_the_facade(facade: str) -> None:
    """Names load lazily: importing a façade imports its packages and ``rxcord.core.facade``, no more."""
    code = (
        f"import json, sys, {facade}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rxcord'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    parts = facade.split(".")
    packages = {".".join(parts[: i + 1]) for i in range(len(parts))}
    assert set(json.loads(out.stdout)) == {*packages, "rxcord.core", "rxcord.core.facade"}


def test_every_exception_derives_from_the_error_root() -> None:
    exceptions = [value for facade in FACADES for _, value in _exported(facade) if _is_exception(value)]
    assert len(exceptions) > 10
    for error in exceptions:
        assert issubclass(error, rxcord.RxcordError), error
    for module in _package_modules():
        for value in vars(module).values():
            public = not value.__name__.startswith("_") if _is_exception(value) else False
            if public and value.__module__.startswith("rxcord"):  # raised to callers, named or not
                assert issubclass(value, rxcord.RxcordError), value


def test_every_exception_name_ends_in_error() -> None:
    """Public names and every exception class a module of the package defines (private ones too)."""
    public = [
        f"{facade}.{name}" for facade in FACADES for name, value in _exported(facade) if _is_exception(value)
    ]
    assert public and [name for name in public if not name.endswith("Error")] == []
    defined = {
        value.__qualname__
        for module in _package_modules()
        for value in vars(module).values()
        if _is_exception(value) and value.__module__.split(".")[0] == "rxcord"  # a façade's, once adopted
    }
    assert "RxcordError" in defined
    assert sorted(name for name in defined if not name.endswith("Error")) == []


def test_former_exception_names_are_the_same_classes() -> None:
    """Renamed to end in Error; the old names stay importable for callers, outside __all__."""
    from rxcord.core.errors import RedactedError, SseLineTooLongError
    from rxcord.core.redact import RedactedException
    from rxcord.providers.sse import SseLineTooLong

    assert rxcord.SseLineTooLong is SseLineTooLong is SseLineTooLongError is rxcord.SseLineTooLongError
    assert RedactedException is RedactedError
    assert "SseLineTooLong" not in rxcord.__all__


def test_the_version_is_read_from_the_installed_metadata() -> None:
    from importlib.metadata import version

    assert rxcord.__version__ == version("rxcord")
    assert "__version__" not in rxcord.__all__


def _is_exception(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _package_modules() -> list[Any]:
    skip = ("rxcord.__main__",)
    names = [info.name for info in pkgutil.walk_packages(rxcord.__path__, "rxcord.") if info.name not in skip]
    out = []
    for name in names:
        try:
            out.append(importlib.import_module(name))
        except ImportError:  # an optional extra that is not installed
            continue
    return out


def test_logging_is_one_namespace_switched_as_a_whole() -> None:
    """logger.enable("rxcord") turns on log lines of every subpackage; disable turns them off."""
    from loguru import logger

    from rxcord.operators import RawStreamChunk
    from rxcord.providers.chat_completions.normalizer import ChatCompletionsNormalizer

    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{name} {message}")
    try:
        normalizer = ChatCompletionsNormalizer(provider="openai")
        chunk = RawStreamChunk(provider="openai", data=["not an object"])
        normalizer.feed(chunk)
        assert lines == []  # disabled by default, as a library should be
        logger.enable("rxcord")
        normalizer.feed(chunk)
        assert any(line.startswith("rxcord.providers.chat_completions.normalizer") for line in lines)
        logger.disable("rxcord")
        count = len(lines)
        normalizer.feed(chunk)
        assert len(lines) == count
    finally:
        logger.disable("rxcord")
        logger.remove(sink)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("rxcord-*.whl")
    return built


def test_the_wheel_installs_one_top_level_package(wheel: Path, tmp_path: Path) -> None:
    """Installed from the wheel, rxcord and its dist-info are the only importable top-level names."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    top = {entry.name for entry in target.iterdir() if entry.name != "bin"}
    dist_info = f"rxcord-{rxcord.__version__}.dist-info"
    assert top == {"rxcord", dist_info}
    with zipfile.ZipFile(wheel) as archive:
        names = {name.split("/", 1)[0] for name in archive.namelist()}
        assert names == {"rxcord", dist_info}
        members = set(archive.namelist())
    required_paths = (
        "rxcord/py.typed",
        "rxcord/core/types.py",
        "rxcord/operators/flush.py",
        "rxcord/data/",
        "rxcord/decisions/__init__.py",
        "rxcord/hooks/__init__.py",
    )
    for required in required_paths:
        assert any(m.startswith(required) for m in members), required
    env = {**os.environ, "PYTHONPATH": str(target)}
    probe = "import rxcord, rxcord.decisions, rxcord.hooks, rxcord.compose.run; print(rxcord.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env, cwd=tmp_path
    )
    assert out.stdout.strip().startswith(str(target))


def test_a_users_module_type_checks_against_the_installed_package(tmp_path: Path) -> None:
    """mypy --strict resolves ``import rxcord`` under the README's install command (strict editable)."""
    user = tmp_path / "bot.py"
    user.write_text(
        "import rxcord\n"
        "from rxcord.decisions import DecisionProtocol\n"
        "from rxcord.hooks import UsageReport\n\n"
        "def answer(result: rxcord.StreamResult) -> str:\n"
        "    return result.visible_text\n\n"
        "def report(usage: UsageReport) -> UsageReport:\n"
        "    return usage\n\n"
        "pipeline: rxcord.Pipeline = rxcord.Pipeline.default().remove('clean')\n"
        "protocol: DecisionProtocol = DecisionProtocol.OPENROUTER\n"
        "wrong: int = rxcord.Pipeline.default()\n"
        "also_wrong: int = DecisionProtocol.OPENROUTER\n",
        encoding="utf-8",
    )
    mypy = Path(sys.executable).with_name("mypy")
    out = subprocess.run(
        [str(mypy), "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(user)],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    # Exactly the two deliberate errors: the root's and a room façade's types are seen (not Any,
    # not a missing module, not "does not explicitly export").
    assert out.stdout.count("error: Incompatible types in assignment") == 2, out.stdout
    assert "Found 2 errors" in out.stdout, out.stdout
