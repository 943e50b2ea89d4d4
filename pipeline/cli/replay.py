"""``rxcord replay``: serve a capture on 127.0.0.1, run the full chain, report the result.

``--timeline out.png`` records the stream's timeline (``rxcord.operators.timeline``)
and writes its plot; on a terminal, a live count of routed chunks is shown on
stderr while the replay runs (``rxcord.cli.progress``).
"""

from __future__ import annotations

__all__ = ("ReplayOptions", "replay_and_serve", "replay_command", "run_replay")

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs

from rxcord.cli.progress import Progress
from rxcord.cli.report import report_from_result, to_json_obj
from rxcord.compose.pipeline import Pipeline, Stage, StageContext
from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext, TableStyle
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, Message, ToolSpec
from rxcord.core.state import StreamResult, StreamState
from rxcord.core.types import DeliveryMode, Operator, StopKind
from rxcord.operators.timeline import Timeline
from rxcord.providers.registry import default_registry
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.base import DiscordSink
from rxcord.testing.replay import Chunking, ReplayServer

if TYPE_CHECKING:
    from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

REPLAY_MODEL = "replay-model"
"""The model name replays ask for (the capture decides what comes back)."""
REPLAY_CHANNEL = "100000000000000001"
"""The channel replays deliver into."""


@attrs.frozen(kw_only=True)
class ReplayOptions:
    """Everything ``rxcord replay`` takes, as values."""

    capture: Path
    provider: str
    status: int = 200
    content_type: str | None = None
    tools: tuple[str, ...] = ()
    delivery: DeliveryMode = DeliveryMode.AGGREGATED
    tables: TableStyle = TableStyle.PICTURE
    sink: str = "emulator"
    chunking: Chunking = Chunking()
    stop: tuple[StopKind, int] | None = None
    pace_ms: float = 0.0
    config: StreamConfig | None = None
    """Overrides the stream configuration (tests, notebooks)."""
    emulator: EmulatorConfig | None = None
    """The Discord emulator's limits and faults (default: Discord's)."""
    timeline: Timeline | None = None
    """Records the stream's timeline, rate-limit waits included."""
    progress: Progress | None = None
    """Counts routed chunks while the replay runs."""
    running_emulator: DiscordEmulator | None = None
    """Deliver into this started emulator and leave it running (``--serve``); ``emulator`` is unused."""


@attrs.frozen(kw_only=True)
class ReplayOutcome:
    """A replay's result and what the replay server saw."""

    result: StreamResult
    connection_closed: bool
    requests: int


async def replay_and_serve(
    args: argparse.Namespace, show: Callable[[dict[str, Any]], None], say: Callable[[str], None]
) -> None:
    """``rxcord replay ... --serve``: replay into an emulator that stays up with its page until interrupted.

    *show* prints the report, then *say* prints ``page: URL`` (the replay's channel selected)
    and the emulator's REST base URL.
    """
    if args.sink != "emulator":
        raise InputError("--serve needs --sink emulator")
    from rxcord.testing.emulator import DiscordEmulator

    emulator = DiscordEmulator()
    await emulator.start()
    try:
        show(await replay_command(args, emulator=emulator))
        say(f"page: {emulator.page_url}#{REPLAY_CHANNEL}")
        say(f"emulator: {emulator.base_url} (serving until interrupted)")
        await asyncio.Event().wait()
    finally:
        await emulator.close()


async def replay_command(
    args: argparse.Namespace, *, emulator: DiscordEmulator | None = None
) -> dict[str, Any]:
    """Run ``rxcord replay`` from parsed arguments (into *emulator* when given); return the JSON report."""
    options = ReplayOptions(
        capture=Path(args.capture),
        provider=args.provider,
        status=args.status,
        content_type=args.content_type,
        tools=tuple(name.strip() for name in args.tools.split(",") if name.strip()),
        delivery=DeliveryMode(args.delivery),
        tables=TableStyle(getattr(args, "tables", TableStyle.PICTURE.value)),
        sink=args.sink,
        chunking=Chunking(size=args.chunk_bytes, seed=args.random_chunks),
        stop=args.stop,
        pace_ms=args.pace,
        running_emulator=emulator,
    )
    plot_path: str | None = getattr(args, "timeline", None)
    if plot_path:
        from rxcord.cli.timeline_plot import require_matplotlib

        # Before the replay, not after it.
        require_matplotlib()
        if not Path(plot_path).parent.is_dir():
            raise InputError(f"--timeline: no such directory: {Path(plot_path).parent}")
        options = attrs.evolve(options, timeline=Timeline())
    with Progress("replay", unit="chunks") as progress:
        outcome = await run_replay(attrs.evolve(options, progress=progress))
    if plot_path and options.timeline is not None:
        from rxcord.cli.timeline_plot import save_timeline

        label = f"{options.capture.name} ({options.provider}, {options.delivery.value} delivery)"
        try:
            save_timeline(options.timeline, plot_path, label=label)
        except OSError as exc:
            raise InputError(f"cannot write the timeline to {plot_path}: {exc.strerror or exc}") from None
    return to_json_obj(report_from_result(outcome.result, connection_closed=outcome.connection_closed))


def _content_type(options: ReplayOptions) -> str:
    if options.content_type:
        return options.content_type
    return "application/json" if options.capture.suffix == ".json" else "text/event-stream"


async def run_replay(options: ReplayOptions) -> ReplayOutcome:
    """Replay *options.capture* through the full pipeline."""
    if not options.capture.is_file():
        raise InputError(f"capture not found: {options.capture}")
    registry = default_registry()
    if options.provider not in registry.names():
        raise InputError(f"unknown provider {options.provider!r} (known: {', '.join(registry.names())})")
    adapter_options: dict[str, Any] = {}
    if options.provider == "custom":
        adapter_options = {
            "tool_names": frozenset(options.tools),
            "verbatim_tool_calling": bool(options.tools),
        }
    adapter = registry.create(options.provider, **adapter_options)
    chat = ChatRequest(
        model=REPLAY_MODEL,
        messages=(Message.user("replay"),),
        tools=tuple(ToolSpec(name=name) for name in options.tools),
    )
    server = ReplayServer(
        body=options.capture.read_bytes(),
        status=options.status,
        content_type=_content_type(options),
        chunking=options.chunking,
        pace=options.pace_ms / 1000.0,
    )
    config = options.config or StreamConfig(delivery=options.delivery, tables=options.tables)
    # The replay server is on 127.0.0.1 by design: the SSRF guard's opt-out is needed for it.
    transport = TransportConfig(allow_private_network=True, transient_retries=0)
    sink_cm = _sink(options.sink, options.emulator, options.timeline, options.running_emulator)
    async with server, sink_cm as sink:
        http = adapter.build_request(chat, base_url=server.base_url, api_key="replay-key", stream=True)
        job = StreamJob(
            adapter=adapter,
            request=http,
            sink=sink,
            context=StreamContext(channel_id=REPLAY_CHANNEL),
            config=config,
            transport=transport,
            pipeline=_pipeline(options),
        )
        result = await run_stream(job, nonce_prefix="replay", timeline=options.timeline)
        if server.requests and not server.requests[-1].completed:
            with contextlib.suppress(TimeoutError):
                await server.wait_finished(timeout=2.0 + options.pace_ms / 1000.0 * 2)
        closed = any(served.closed_early for served in server.requests)
        return ReplayOutcome(result=result, connection_closed=closed, requests=len(server.requests))


def _pipeline(options: ReplayOptions) -> Pipeline:
    """The default stages, plus ``--stop KIND@N`` and the progress count after the orchestrator."""
    pipeline = Pipeline.default()
    point = "accumulate"
    if options.stop is not None:
        kind, count = options.stop
        pipeline = pipeline.insert_after(point, Stage("stop_after", lambda c: _stop_after(c, kind, count)))
        point = "stop_after"
    if options.progress is not None:
        pipeline = pipeline.insert_after(point, "progress", options.progress.tap())
    return pipeline


def _stop_after(context: StageContext, kind: StopKind, count: int) -> Operator[StreamState, StreamState]:
    from rxcord.operators.stop_after import stop_after

    if context.stop_sink is None:
        raise InputError("--stop needs the stream's stop subject")
    return stop_after(count, kind, context.stop_sink)


@contextlib.asynccontextmanager
async def _sink(
    kind: str,
    emulator_config: EmulatorConfig | None = None,
    timeline: Timeline | None = None,
    running: DiscordEmulator | None = None,
) -> AsyncIterator[DiscordSink]:
    if kind == "memory":
        from rxcord.sinks.memory import MemorySink

        yield MemorySink()
        return
    from rxcord.sinks.ratelimit import RateLimiter
    from rxcord.sinks.rest import RestSink
    from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

    emulator = running or DiscordEmulator(emulator_config or EmulatorConfig())
    base_url = emulator.base_url if running is not None else await emulator.start()
    limiter = RateLimiter(on_wait=timeline.rate_limit_wait if timeline is not None else None)
    try:
        async with aiohttp.ClientSession() as session:
            yield RestSink(base_url, emulator.config.token, session=session, limiter=limiter)
    finally:
        if running is None:
            await emulator.close()
