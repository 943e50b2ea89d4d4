"""Every endpoint guarded: a built-in provider's base-URL override is a custom endpoint.

The five built-in adapters are pointed at 127.0.0.1 (a raw listener here that counts its
connections and keeps every byte it receives, so "nothing reached it" is a count of 0) and at
cloud metadata addresses (never reached: the network is blocked and every attempt recorded;
names are answered by an injected resolver). Malformed base URLs are one typed ``InputError``
naming the setting on every path: the chat path, the Decisions client, the CLI, the bot config.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from rxcord.bot.config import parse_config
from rxcord.cli.main import main
from rxcord.compose.run import stream_to_discord
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.errors import ConfigError, InputError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import StreamStatus
from rxcord.operators.aio import drain
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.decisions import (
    DecisionCredentials,
    DecisionDirectory,
    DecisionModelOption,
    DecisionProtocol,
    Decisions,
    Question,
    custom_provider,
    reference_for,
)
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.ssrf import OPT_OUT, SsrfGuard, default_base_url, is_custom_endpoint
from rxcord.providers.transport import TransportConfig, stream_source
from rxcord.sinks.memory import MemorySink
from tests.conftest import CAPTURES

KEY = "sk-guard-test-7f3a91"
CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
BUILT_INS: dict[str, Callable[[], ProviderAdapter]] = {
    "openai": OpenAIAdapter,
    "openrouter": OpenRouterAdapter,
    "nvidia": NvidiaAdapter,
    "anthropic": AnthropicAdapter,
    "google": GoogleAdapter,
}
_CHAT_COMPLETIONS = (
    b'data: {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "hello"}}]}\n\n'
    b'data: {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
ANSWERS = {
    "openai": _CHAT_COMPLETIONS,
    "openrouter": _CHAT_COMPLETIONS,
    "nvidia": _CHAT_COMPLETIONS,
    "anthropic": (CAPTURES / "anthropic" / "text.sse").read_bytes(),
    "google": (CAPTURES / "google" / "text.sse").read_bytes(),
}


# -- a listener that counts, a network that is not there ------------------------------------------


class Listener:
    """A raw TCP listener on 127.0.0.1: counts connections, keeps the bytes, answers one SSE body."""

    def __init__(self, body: bytes = _CHAT_COMPLETIONS) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {len(body)}\r\n"
        self.response = (head + "Connection: close\r\n\r\n").encode() + body
        self.connections = 0
        self.received = b""
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Listener:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            self.received += head + await reader.readexactly(int(length.group(1)) if length else 0)
            writer.write(self.response)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away: what it sent is kept
        finally:
            writer.close()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection attempt and name lookup is recorded and fails: nothing leaves the process.

    aiohttp connects through ``loop.sock_connect`` (aiohappyeyeballs) before
    ``loop.create_connection``, and its default resolver calls ``loop.getaddrinfo``: all three.
    """
    attempts: list[str] = []

    def refusing(name: str) -> Any:
        async def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{name}{args[:2]!r}")
            raise OSError(f"the test blocks the network ({name})")

        return refuse

    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", refusing("create_connection"))
    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", refusing("getaddrinfo"))
    monkeypatch.setattr(
        asyncio.selector_events.BaseSelectorEventLoop, "sock_connect", refusing("sock_connect")
    )
    return attempts


def _resolver(answer: Sequence[str], lookups: list[str]) -> Any:
    async def resolve(host: str) -> Sequence[str]:
        lookups.append(host)
        return answer

    return resolve


async def _ask(
    provider: str, base_url: str, transport: TransportConfig | None = None, sink: MemorySink | None = None
) -> Any:
    return await stream_to_discord(
        BUILT_INS[provider](),
        CHAT,
        sink=sink or MemorySink(),
        base_url=base_url,
        api_key=KEY,
        transport=transport,
    )


# -- the rule: another origin is a custom endpoint -------------------------------------------------


@pytest.mark.parametrize("provider", BUILT_INS)
def test_only_the_adapters_own_origin_is_unguarded(provider: str) -> None:
    """The default origin (any spelling of it) is the provider's; another scheme, host or port is custom."""
    adapter = BUILT_INS[provider]()
    default = default_base_url(adapter)
    assert default is not None and default.startswith("https://")
    host = default.removeprefix("https://").split("/")[0]
    assert not is_custom_endpoint(adapter, default)
    assert not is_custom_endpoint(adapter, f"https://{host.upper()}:443/other/path")
    for other in (f"http://{host}/v1", f"https://{host}:8443/v1", f"https://{host}.evil.test/v1"):
        assert is_custom_endpoint(adapter, other), other
    assert is_custom_endpoint(adapter, "http://127.0.0.1:8080/v1")


def test_an_adapter_without_a_default_is_always_guarded() -> None:
    """The custom adapter, and an adapter an application defines without ``default_base_url``."""

    class Homemade:
        name = "homemade"

    for adapter in (CustomAdapter(), Homemade()):
        assert default_base_url(adapter) is None
        assert is_custom_endpoint(adapter, "https://api.openai.com/v1")


# -- built-in adapters: loopback refused by default, allowed with the opt-out ---------------------


@pytest.mark.parametrize("provider", BUILT_INS)
async def test_a_loopback_override_is_refused_by_default_and_reaches_nothing(provider: str) -> None:
    """Default transport: refused before any connection; the listener counts 0, the key is never sent."""
    async with Listener(ANSWERS[provider]) as listener:
        result = await _ask(provider, listener.base_url)
        turn = await run_turn(
            fallback_order(BUILT_INS[provider](), ["m"], [KEY], base_url=listener.base_url),
            CHAT,
            sink=MemorySink(),
        )
    for outcome in (result, turn.result):
        assert outcome.status is StreamStatus.ERROR and outcome.error is not None
        assert outcome.error.code == "ssrf_refused" and "loopback" in outcome.error.message
        assert (
            "allow_private_network" in outcome.error.message and "--allow-loopback" in outcome.error.message
        )
    assert listener.connections == 0 and listener.received == b""


@pytest.mark.parametrize("provider", BUILT_INS)
async def test_with_the_opt_out_a_loopback_override_is_served(provider: str) -> None:
    """``allow_private_network=True``: one connection, the key sent, the answer streamed."""
    sink = MemorySink()
    async with Listener(ANSWERS[provider]) as listener:
        result = await _ask(provider, listener.base_url, TransportConfig(allow_private_network=True), sink)
    assert result.status is StreamStatus.COMPLETED, result.error
    assert sink.contents and listener.connections == 1 and KEY.encode() in listener.received


# -- cloud metadata: refused in every form, with or without the opt-out --------------------------

METADATA = ("169.254.169.254", "100.100.100.200", "168.63.129.16")
"""IPv4 metadata services: AWS/GCP/Azure IMDS/Oracle/OpenStack, Alibaba Cloud, Azure WireServer."""
METADATA_V6 = ("fd00:ec2::254", "fd20:ce::254", "fd00:c1::a9fe:a9fe")
"""IPv6 metadata services: AWS (Nitro), Google Cloud, Oracle Cloud."""


def _v6(prefix: str, value: int) -> str:
    return str(ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix)) | value))


def _carriers(v4: str) -> dict[str, str]:
    """*v4* in every IPv6 form the guard unwraps (RFC 4291, 6052, 3056, 4380, 8215)."""
    bits = int(ipaddress.IPv4Address(v4))
    inverted = ~bits & 0xFFFFFFFF
    return {
        "mapped": f"::ffff:{v4}",
        "mapped-hex": _v6("::ffff:0:0", bits),
        "compatible": f"::{v4}",
        "nat64": _v6("64:ff9b::", bits),
        "local-nat64/96": _v6("64:ff9b:1::", bits),
        # A /48 local-use prefix: 16 bits before the reserved octet (bits 64-71), 16 after it.
        "local-nat64/48": _v6("64:ff9b:1::", ((bits >> 16) << 64) | ((bits & 0xFFFF) << 40)),
        "6to4": _v6("2002::", bits << 80),
        "teredo": _v6("2001:0:4136:e378:8000:63bf::", inverted),
    }


def _integer_forms(v4: str) -> dict[str, str]:
    """*v4* spelled as the C library's ``inet_aton`` also reads it (decimal, octal, hex, short)."""
    octets = [int(part) for part in v4.split(".")]
    bits = int(ipaddress.IPv4Address(v4))
    return {
        "decimal": str(bits),
        "hex": hex(bits),
        "octal": ".".join(f"0{o:o}" for o in octets),
        "dotted-hex": ".".join(hex(o) for o in octets),
        "short": f"{octets[0]}.{octets[1]}.{(octets[2] << 8) | octets[3]}",
    }


RESOLVED_FORMS = [
    *((address, address) for address in (*METADATA, *METADATA_V6)),
    *((f"{address} {form}", spelled) for address in METADATA for form, spelled in _carriers(address).items()),
]
LITERAL_URLS = [
    *((address, f"http://{address}/v1") for address in METADATA),
    *((address, f"http://[{address}]/v1") for address in METADATA_V6),
    *((f"{address} mapped", f"http://[::ffff:{address}]/v1") for address in METADATA),
    *(
        (f"{address} {form}", f"http://{spelled}/v1")
        for address in METADATA
        for form, spelled in _integer_forms(address).items()
    ),
]


@pytest.mark.parametrize(("form", "answer"), RESOLVED_FORMS, ids=[form for form, _ in RESOLVED_FORMS])
@pytest.mark.parametrize("opt_out", [False, True], ids=["default", "opt-out"])
async def test_a_name_resolving_to_metadata_is_refused_even_with_the_opt_out(
    form: str, answer: str, opt_out: bool, no_network: list[str]
) -> None:
    """The injected resolver answers a metadata address in some form: refused, no connection, any opt-out."""
    lookups: list[str] = []
    guard = SsrfGuard(resolver=_resolver([answer], lookups))
    config = TransportConfig(ssrf_guard=guard, allow_private_network=opt_out, transient_retries=0)
    for provider in BUILT_INS:
        result = await _ask(provider, "http://models.internal.test:8080/v1", config)
        assert result.status is StreamStatus.ERROR and result.error is not None, provider
        assert result.error.code == "ssrf_refused", (provider, result.error.message)
        assert "metadata" in result.error.message and "not allowed even with" in result.error.message
    assert lookups == ["models.internal.test"] * len(BUILT_INS)
    assert no_network == []


@pytest.mark.parametrize(("form", "url"), LITERAL_URLS, ids=[form for form, _ in LITERAL_URLS])
@pytest.mark.parametrize("opt_out", [False, True], ids=["default", "opt-out"])
async def test_a_metadata_literal_is_refused_even_with_the_opt_out(
    form: str, url: str, opt_out: bool, no_network: list[str]
) -> None:
    """A metadata address in the URL itself (plain, mapped, integer spellings): refused, never looked up."""
    lookups: list[str] = []
    guard = SsrfGuard(resolver=_resolver(["93.184.216.34"], lookups))
    config = TransportConfig(ssrf_guard=guard, allow_private_network=opt_out, transient_retries=0)
    for provider in BUILT_INS:
        result = await _ask(provider, url, config)
        assert result.status is StreamStatus.ERROR and result.error is not None, provider
        assert result.error.code == "ssrf_refused", (provider, result.error.message)
    assert lookups == [] and no_network == []


async def test_the_default_transport_refuses_the_metadata_address(no_network: list[str]) -> None:
    """No injected guard at all (the system resolver is never needed for a literal): refused, nothing sent."""
    for provider in BUILT_INS:
        result = await _ask(provider, "http://169.254.169.254/latest/meta-data")
        assert result.error is not None and result.error.code == "ssrf_refused", provider
    assert no_network == []


# -- malformed base URLs: one typed input error naming the setting --------------------------------

MALFORMED = [
    ("backslash", "http://127.0.0.1\\@api.openai.com/v1"),
    ("unclosed bracket", "http://[::1/v1"),
    ("port too large", "http://models.test:99999/v1"),
    ("port zero", "http://models.test:0/v1"),
    ("port not a number", "http://models.test:8o8o/v1"),
    ("empty host", "http:///v1"),
    ("empty host with port", "http://:8080/v1"),
    ("userinfo", "https://api.openai.com@127.0.0.1/v1"),
    ("user and password", "https://user:sk-secret@models.test/v1"),
    ("ftp", "ftp://models.test/v1"),
    ("file", "file:///etc/passwd"),
    ("no scheme", "models.test/v1"),
    ("space in host", "http://models .test/v1"),
    ("newline", "http://models.test/v1\r\nX-Injected: 1"),
    ("bad IPv6", "http://[::1::2]/v1"),
    ("bad host", "http://models%2ftest/v1"),
]
MALFORMED_IDS = [name for name, _ in MALFORMED]


def _names_base_url(error: BaseException, setting: str = "base_url") -> None:
    assert isinstance(error, InputError) and not isinstance(error, ValueError)
    assert str(error).startswith(f"{setting}: "), str(error)
    assert "sk-secret" not in str(error)  # the value is not echoed


@pytest.mark.parametrize("url", [url for _, url in MALFORMED], ids=MALFORMED_IDS)
async def test_a_malformed_base_url_is_an_input_error_on_the_chat_path(
    url: str, no_network: list[str]
) -> None:
    """stream_to_discord (every adapter) and run_turn: ``InputError`` naming base_url, before anything."""
    for adapter in (*(make() for make in BUILT_INS.values()), CustomAdapter()):
        with pytest.raises(InputError) as raised:
            await stream_to_discord(adapter, CHAT, sink=MemorySink(), base_url=url, api_key=KEY)
        _names_base_url(raised.value)
    with pytest.raises(InputError) as raised:
        await run_turn(fallback_order(OpenAIAdapter(), ["m"], [KEY], base_url=url), CHAT, sink=MemorySink())
    _names_base_url(raised.value)
    assert no_network == []


@pytest.mark.parametrize("url", [url for _, url in MALFORMED], ids=MALFORMED_IDS)
async def test_a_malformed_request_url_is_an_input_error_from_the_transport(
    url: str, no_network: list[str]
) -> None:
    """``stream_source`` given a request built by hand: on_error gets the typed error, not a ValueError."""
    adapter = CustomAdapter()
    request = adapter.build_request(CHAT, base_url="http://models.test/v1", api_key=KEY)
    forged = type(request)(url=url, body=request.body, headers=request.headers)
    with pytest.raises(InputError) as raised:
        await drain(stream_source(adapter, forged))
    _names_base_url(raised.value)
    assert no_network == []


def _decisions(option: DecisionModelOption) -> Decisions:
    directory = DecisionDirectory(
        options=lambda scope: (option,),
        validate_model=lambda scope, candidate: True,
        credentials=lambda scope, candidate: DecisionCredentials(api_key=KEY),
    )
    return Decisions(directory)


@pytest.mark.parametrize("url", [url for _, url in MALFORMED], ids=MALFORMED_IDS)
@pytest.mark.parametrize("protocol", list(DecisionProtocol), ids=lambda p: p.value)
async def test_a_malformed_base_url_is_an_input_error_in_the_decisions_client(
    url: str, protocol: DecisionProtocol, no_network: list[str]
) -> None:
    """Native and custom entries: ``InputError`` naming base_url, no connection, no key sent."""
    custom = protocol is not DecisionProtocol.OPENROUTER
    option = DecisionModelOption(
        provider=custom_provider("conn-1") if custom else "openrouter",
        model_id="jev",
        protocol=protocol,
        base_url=url,
        max_input_tokens=32_000,
        custom_endpoint_id="1" if custom else None,
    )
    question = Question(id="is_spam", instructions="Unsolicited advertising.")
    with pytest.raises(InputError) as raised:
        await _decisions(option).call_decisions(None, reference_for(option), "evidence", [question])
    _names_base_url(raised.value)
    assert no_network == []


# -- the command line -----------------------------------------------------------------------------


def _chat(*argv: str) -> int:
    return main(["chat", "--provider", "openai", "--model", "m", *argv, "hi"])


async def test_rxcord_chat_refuses_a_loopback_base_url_without_the_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rxcord chat --provider openai --base-url http://127.0.0.1:P``: refused naming --allow-loopback."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    async with Listener() as listener:
        refused = await asyncio.to_thread(_chat, "--base-url", listener.base_url)
        refused_out = capsys.readouterr().out
        assert listener.connections == 0
        served = await asyncio.to_thread(_chat, "--allow-loopback", "--base-url", listener.base_url)
        served_out = capsys.readouterr().out
    assert refused == 0 and "ssrf" in refused_out.lower() and "--allow-loopback" in refused_out
    assert served == 0 and "hello" in served_out and listener.connections == 1


@pytest.mark.parametrize("url", [url for _, url in MALFORMED], ids=MALFORMED_IDS)
def test_rxcord_chat_and_decide_exit_2_naming_the_flag(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed --base-url: exit 2, one line naming the flag, no traceback."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    evidence, questions = tmp_path / "evidence.txt", tmp_path / "questions.json"
    evidence.write_text("evidence", encoding="utf-8")
    questions.write_text('[{"type": "predicate", "id": "a", "instructions": "b"}]', encoding="utf-8")
    decide = ["decide", "--protocol", "openai", "--model", "m", "--base-url", url]
    decide += ["--evidence-file", str(evidence), "--questions-file", str(questions), "--json"]
    for argv in (["chat", "--provider", "openai", "--model", "m", "--base-url", url, "hi"], decide):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("rxcord: --base-url: ") and err.count("\n") == 1, err
        assert "sk-secret" not in err


# -- the bot's configuration ----------------------------------------------------------------------


def _bot_config(base_url: str, *, allow: bool) -> str:
    escaped = base_url.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")
    return (
        f'[provider]\nname = "openai"\nmodel = "m"\nbase_url = "{escaped}"\n'
        f"allow_private_network = {str(allow).lower()}\n"
    )


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/v1", "http://[::1]:8080/v1", "http://10.1.2.3/v1", "http://100.64.0.1/v1"]
)
def test_the_bot_refuses_a_private_base_url_without_the_setting(url: str) -> None:
    """``allow_private_network = false``, a private literal: refused on reading the file, naming it."""
    with pytest.raises(ConfigError) as refused:
        parse_config(_bot_config(url, allow=False), source="bot.toml")
    message = str(refused.value)
    assert message.startswith("bot.toml:4: provider.base_url: ") and "allow_private_network = true" in message
    assert parse_config(_bot_config(url, allow=True)).provider.base_url == url


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/v1",
        "http://100.100.100.200/v1",
        "http://168.63.129.16/v1",
        "http://[fd00:ec2::254]/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://0xa9fea9fe/v1",
    ],
)
def test_the_bot_refuses_a_metadata_base_url_even_with_the_setting(url: str) -> None:
    for allow in (False, True):
        with pytest.raises(ConfigError) as refused:
            parse_config(_bot_config(url, allow=allow))
        assert "provider.base_url" in str(refused.value), str(refused.value)


@pytest.mark.parametrize("url", [url for _, url in MALFORMED], ids=MALFORMED_IDS)
def test_the_bot_refuses_a_malformed_base_url(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(_bot_config(url, allow=True), source="bot.toml")
    assert str(refused.value).startswith("bot.toml:4: provider.base_url: "), str(refused.value)
    assert "sk-secret" not in str(refused.value)


async def test_the_bot_refuses_a_name_at_its_first_request(no_network: list[str]) -> None:
    """A host name cannot be judged when the file is read: the transport refuses it, naming the setting."""
    config = parse_config(_bot_config("http://llm.lan.test:8080/v1", allow=False))
    assert config.provider.base_url is not None
    guard = SsrfGuard(resolver=_resolver(["192.168.1.20"], []))
    transport = TransportConfig(ssrf_guard=guard, allow_private_network=config.provider.allow_private_network)
    result = await _ask("openai", config.provider.base_url, transport)
    assert result.error is not None and result.error.code == "ssrf_refused"
    assert "allow_private_network" in result.error.message and OPT_OUT in result.error.message
    assert no_network == []


async def test_the_network_blocker_blocks(no_network: list[str]) -> None:
    """The fixture this file relies on: aiohttp's connection and its name lookup are recorded and fail."""
    async with aiohttp.ClientSession() as session:
        for url in ("http://127.0.0.1:9/", "http://blocked.test/"):
            with pytest.raises(aiohttp.ClientError):
                await session.get(url)
    assert [attempt.split("(")[0] for attempt in no_network] == ["sock_connect", "getaddrinfo"]
