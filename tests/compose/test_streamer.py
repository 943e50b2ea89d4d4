"""The one client object: a ``Streamer`` gives what the free functions give, with what it holds.

Every stream is a bundled capture served by ``ReplayServer`` on 127.0.0.1; assertions compare
results and count requests and sessions, never time.
"""

from __future__ import annotations

import importlib
import sys
from importlib import resources

import aiohttp
import attrs
import pytest

import rxcord
from rxcord.compose.run import stream_to_discord
from rxcord.compose.streamer import Streamer
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import InputError, MissingExtraError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import StreamStatus
from rxcord.providers.hooks import denial_translator_registered, request_hook_registered
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import UsageReport
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

LOCAL = TransportConfig(allow_private_network=True)
REQUEST = ChatRequest(model="local-qwen3", messages=(Message.user("hi"),))
KEY = "sk-streamer-test-0000"
CAPTURE = resources.files("rxcord.data").joinpath("openai_think_leak.sse").read_bytes()


def _comparable(result: StreamResult) -> StreamResult:
    """The result without what differs per run by design (each send's nonce is random)."""
    return attrs.evolve(
        result,
        messages=tuple(
            attrs.evolve(m, payload={k: v for k, v in m.payload.items() if k != "nonce"})
            for m in result.messages
        ),
    )


@attrs.define
class Counting:
    """A session factory whose sessions count their requests (aiohttp trace hooks)."""

    sessions: list[aiohttp.ClientSession] = attrs.field(factory=list)
    requests: int = 0

    def __call__(self) -> aiohttp.ClientSession:
        trace = aiohttp.TraceConfig()

        async def started(*_: object) -> None:
            self.requests += 1

        trace.on_request_start.append(started)
        session = aiohttp.ClientSession(trace_configs=[trace])
        self.sessions.append(session)
        return session


async def test_stream_gives_the_result_of_stream_to_discord() -> None:
    """Same capture, same arguments: the Streamer's result and sink equal the free function's."""
    free_sink, held_sink = MemorySink(), MemorySink()
    async with ReplayServer(body=CAPTURE) as server:
        free = await stream_to_discord(
            OpenAIAdapter(), REQUEST, sink=free_sink, base_url=server.base_url, api_key=KEY, transport=LOCAL
        )
        async with Streamer(sink=held_sink, transport=LOCAL) as streamer:
            held = await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY)
        assert len(server.requests) == 2
    assert free.status is StreamStatus.COMPLETED and free.visible_text
    assert _comparable(held) == _comparable(free)
    assert held_sink.contents == free_sink.contents


async def test_a_provider_name_resolves_through_the_registry() -> None:
    sink = MemorySink()
    async with ReplayServer(body=CAPTURE) as server, Streamer(sink=sink, transport=LOCAL) as streamer:
        result = await streamer.stream("openai", REQUEST, base_url=server.base_url, api_key=KEY)
        with pytest.raises(InputError, match="unknown provider 'nope'"):
            await streamer.stream("nope", REQUEST, base_url=server.base_url, api_key=KEY)
        assert len(server.requests) == 1  # the unknown name sent nothing
    assert result.status is StreamStatus.COMPLETED and sink.contents


async def test_per_call_overrides_replace_the_held_values_for_that_call_only() -> None:
    """Held: a 40-character limit on channel 5; one call overrides sink, context, config; the next is held."""
    held_sink, other_sink = MemorySink(), MemorySink()
    streamer = Streamer(
        sink=held_sink,
        transport=LOCAL,
        context=StreamContext(channel_id="5"),
        config=StreamConfig(message_limit=40),
    )
    async with ReplayServer(body=CAPTURE) as server, streamer:
        overridden = await streamer.stream(
            OpenAIAdapter(),
            REQUEST,
            base_url=server.base_url,
            api_key=KEY,
            sink=other_sink,
            context=StreamContext(channel_id="7"),
            config=StreamConfig(),
        )
        assert held_sink.contents == [] and len(other_sink.contents) == 1
        held = await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY)
        with pytest.raises(InputError, match="unknown override"):
            await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, sinkk=other_sink)
        assert len(server.requests) == 2  # the refused override sent nothing
    assert [m.channel_id for m in overridden.messages] == ["7"]
    assert len(held_sink.contents) > 1 and all(len(text) <= 40 for text in held_sink.contents)
    assert {m.channel_id for m in held.messages} == {"5"}
    assert "".join("".join(held_sink.contents).split()) == "".join(other_sink.contents[0].split())


async def test_per_call_secrets_add_to_the_held_ones() -> None:
    """A secret held and a secret per call are both redacted from the text Discord gets."""
    body = CAPTURE.replace(b'"rain "', b'"held-secret-1 call-secret-2 rain "')
    sink = MemorySink()
    held = Streamer(sink=sink, transport=LOCAL, secrets=["held-secret-1"])
    async with ReplayServer(body=body) as server, held as streamer:
        await streamer.stream(
            OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY, secrets=["call-secret-2"]
        )
    text = "".join(sink.contents)
    assert "Stones" in text
    assert "held-secret-1" not in text and "call-secret-2" not in text


async def test_turn_falls_back_to_the_next_key_as_run_turn_does() -> None:
    """First key refused (401), second answers: the Streamer's turn and run_turn try the same keys."""
    refused = (401, "application/json", b'{"error": {"message": "bad key", "code": "invalid_api_key"}}')
    answer = (200, "text/event-stream", CAPTURE)
    keys = ["sk-first-key-0000", "sk-second-key-0000"]
    outcomes = []
    for run in ("free", "held"):
        sink = MemorySink()
        async with ReplayServer(body=b"", responses=[refused, answer]) as server:
            candidates = fallback_order(OpenAIAdapter(), ["local-qwen3"], keys, base_url=server.base_url)
            if run == "free":
                turn = await run_turn(candidates, REQUEST, sink=sink, transport=LOCAL)
            else:
                async with Streamer(sink=sink, transport=LOCAL) as streamer:
                    turn = await streamer.turn(candidates, REQUEST)
            sent = [r.headers.get("Authorization", "") for r in server.requests]
        outcomes.append((sent, [a.status for a in turn.attempts], turn.result.status, sink.contents))
    assert outcomes[0] == outcomes[1]
    sent, statuses, status, contents = outcomes[1]
    assert sent == [f"Bearer {k}" for k in keys]
    assert statuses == [StreamStatus.ERROR, StreamStatus.COMPLETED] and status is StreamStatus.COMPLETED
    assert contents


async def test_the_owned_session_is_used_and_closed_on_exit() -> None:
    factory = Counting()
    async with ReplayServer(body=CAPTURE) as server:
        async with Streamer(sink=MemorySink(), transport=LOCAL, session_factory=factory) as streamer:
            for _ in range(3):
                await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY)
            assert [s.closed for s in factory.sessions] == [False]
        assert len(server.requests) == 3
    assert factory.requests == 3  # every stream went through the one owned session
    assert [s.closed for s in factory.sessions] == [True]
    assert streamer.active_session is None


async def test_an_exception_inside_still_closes_the_session_and_disposes_the_hooks() -> None:
    factory = Counting()
    streamer = Streamer(sink=MemorySink(), session_factory=factory, request_hook=lambda request: None)
    before = request_hook_registered()
    with pytest.raises(RuntimeError, match="boom"):
        async with streamer:
            assert request_hook_registered()
            raise RuntimeError("boom")
    assert [s.closed for s in factory.sessions] == [True]
    assert request_hook_registered() == before
    async with streamer:  # a closed Streamer opens again, with a new session
        assert len(factory.sessions) == 2
        with pytest.raises(InputError, match="already open"):
            await streamer.__aenter__()
    assert [s.closed for s in factory.sessions] == [True, True]


async def test_a_passed_session_is_used_and_never_closed() -> None:
    factory = Counting()
    session = factory()
    try:
        held = Streamer(sink=MemorySink(), transport=LOCAL, session=session)
        async with ReplayServer(body=CAPTURE) as server, held as streamer:
            await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY)
        assert factory.requests == 1 and not session.closed
        assert len(factory.sessions) == 1  # no session of the Streamer's own
    finally:
        await session.close()


async def test_hooks_are_in_force_while_open_only() -> None:
    reports: list[UsageReport] = []
    streamer = Streamer(
        sink=MemorySink(),
        transport=LOCAL,
        usage_reporter=reports.append,
        request_hook=lambda request: None,
        denial_translator=lambda failure, context: None,
    )
    with pytest.raises(InputError, match="async with"):
        await streamer.stream(OpenAIAdapter(), REQUEST, base_url="http://127.0.0.1:1", api_key=KEY)
    before = (request_hook_registered(), denial_translator_registered())
    async with ReplayServer(body=CAPTURE) as server, streamer:
        assert request_hook_registered() and denial_translator_registered()
        await streamer.stream(OpenAIAdapter(), REQUEST, base_url=server.base_url, api_key=KEY)
    assert (request_hook_registered(), denial_translator_registered()) == before
    assert len(reports) == 1 and reports[0].provider == "openai"


def test_streamer_is_public() -> None:
    assert rxcord.Streamer is Streamer and "Streamer" in rxcord.__all__


def _without(monkeypatch: pytest.MonkeyPatch, package: str, *modules: str) -> None:
    """Make *package* (and its submodules) fail to import; forget *modules* so they import again."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")] or [package]:
        monkeypatch.setitem(sys.modules, name, None)
    for module in modules:
        monkeypatch.delitem(sys.modules, module, raising=False)


@pytest.mark.parametrize(
    ("package", "module", "facade", "name", "extra"),
    [
        ("discord", "rxcord.sinks.discordpy", "rxcord", "DiscordPySink", "discord"),
        ("redis", "rxcord.sinks.ratelimit.redis", "rxcord.sinks", "RedisStore", "redis"),
        ("redis", "rxcord.io.stop_bus", "rxcord.io", "RedisStopBus", "redis"),
    ],
)
def test_a_missing_extra_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, package: str, module: str, facade: str, name: str, extra: str
) -> None:
    """Importing a name whose optional dependency is missing raises MissingExtraError naming the extra."""
    _without(monkeypatch, package, module)
    home = importlib.import_module(facade)
    monkeypatch.delitem(vars(home), name, raising=False)  # the lazy export imports again
    with pytest.raises(MissingExtraError, match=rf"pip install 'rxcord\[{extra}\]'") as caught:
        getattr(home, name)
    assert caught.value.extra == extra and caught.value.name == package
    assert isinstance(caught.value, ImportError)  # an optional-import guard still catches it
    with pytest.raises(MissingExtraError):
        importlib.import_module(module)


def test_a_missing_matplotlib_names_the_plot_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from rxcord.cli.timeline_plot import plot_timeline
    from rxcord.core.errors import PlotUnavailableError
    from rxcord.operators import Timeline

    _without(monkeypatch, "matplotlib")
    with pytest.raises(PlotUnavailableError, match=r"pip install 'rxcord\[plot\]'") as caught:
        plot_timeline(Timeline())
    assert isinstance(caught.value, MissingExtraError) and caught.value.extra == "plot"
