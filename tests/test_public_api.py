"""The public surface: ``import rxcord`` names, the wheel's one top-level package, typing for users."""

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
from typing import Any

import pytest

import rxcord

ROOT = Path(__file__).resolve().parent.parent

# The public surface, pinned: adding or removing a name is a deliberate change of this list.
PUBLIC = [
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
]


def test_the_public_surface_is_pinned() -> None:
    assert sorted(rxcord.__all__) == PUBLIC


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in rxcord.__all__:
        value = getattr(rxcord, name)
        assert value is not None, name
        if isinstance(value, type) or inspect.isfunction(value):
            assert (getattr(value, "__doc__", None) or "").strip(), f"{name} has no docstring"
    assert set(rxcord.__all__) <= set(dir(rxcord))


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = rxcord.nope  # type: ignore[attr-defined]


def test_import_rxcord_loads_nothing_but_the_facade() -> None:
    """Names load lazily: importing the package alone imports none of its modules."""
    code = "import sys, rxcord; print(json.dumps(sorted(m for m in sys.modules if m.startswith('rxcord'))))"
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == ["rxcord"]


def test_every_exception_derives_from_the_error_root() -> None:
    for name in rxcord.__all__:
        value = getattr(rxcord, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, rxcord.RxcordError), name
    from rxcord.cli.timeline_plot import PlotUnavailableError
    from rxcord.providers.sse import SseLineTooLongError
    from rxcord.sinks.ratelimit import InvalidRequestLimitError

    for error in (PlotUnavailableError, SseLineTooLongError, InvalidRequestLimitError, rxcord.RateLimitError):
        assert issubclass(error, rxcord.RxcordError), error


def test_every_exception_name_ends_in_error() -> None:
    """Public names and every exception class a module of the package defines (private ones too)."""
    public = [name for name in rxcord.__all__ if _is_exception(getattr(rxcord, name))]
    assert public and [name for name in public if not name.endswith("Error")] == []
    defined = {
        value.__qualname__
        for module in _package_modules()
        for value in vars(module).values()
        if _is_exception(value) and value.__module__ == module.__name__
    }
    assert "RxcordError" in defined
    assert sorted(name for name in defined if not name.endswith("Error")) == []


def test_former_exception_names_are_the_same_classes() -> None:
    """Renamed to end in Error; the old names stay importable for callers, outside __all__."""
    from rxcord.core.redact import RedactedError, RedactedException
    from rxcord.providers.sse import SseLineTooLong, SseLineTooLongError

    assert rxcord.SseLineTooLong is SseLineTooLong is SseLineTooLongError is rxcord.SseLineTooLongError
    assert RedactedException is RedactedError
    assert "SseLineTooLong" not in rxcord.__all__


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

    from rxcord.providers import openai_wire

    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{name} {message}")
    try:
        normalizer = openai_wire.ChatCompletionsNormalizer(provider="openai")
        chunk = rxcord.RawStreamChunk(provider="openai", data=["not an object"])
        normalizer.feed(chunk)
        assert lines == []  # disabled by default, as a library should be
        logger.enable("rxcord")
        normalizer.feed(chunk)
        assert any(line.startswith("rxcord.providers.openai_wire") for line in lines)
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
    for required in ("rxcord/py.typed", "rxcord/core/types.py", "rxcord/operators/flush.py", "rxcord/data/"):
        assert any(m.startswith(required) for m in members), required
    env = {**os.environ, "PYTHONPATH": str(target)}
    probe = "import rxcord, rxcord.compose.run, rxcord.sinks.rest; print(rxcord.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env, cwd=tmp_path
    )
    assert out.stdout.strip().startswith(str(target))


def test_a_users_module_type_checks_against_the_installed_package(tmp_path: Path) -> None:
    """mypy --strict resolves ``import rxcord`` under the README's install command (strict editable)."""
    user = tmp_path / "bot.py"
    user.write_text(
        "import rxcord\n\n"
        "def answer(result: rxcord.StreamResult) -> str:\n"
        "    return result.visible_text\n\n"
        "pipeline: rxcord.Pipeline = rxcord.Pipeline.default().remove('clean')\n"
        "wrong: int = rxcord.Pipeline.default()\n",
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
    # Exactly the one deliberate error: rxcord's types are seen (not Any, not a missing module).
    assert "error: Incompatible types in assignment" in out.stdout, out.stdout
    assert "Found 1 error" in out.stdout, out.stdout
