"""The fault suite: the whole pipeline against scripted fake Discord and provider servers on 127.0.0.1.

Every scenario runs twice on the same provider script: once into the in-memory sink (the
messages the design means to deliver) and once through ``RestSink`` into ``FakeDiscord``
with the scenario's faults. Comparing the two gives, per scenario, the messages expected,
delivered, and the words lost, duplicated and out of order (every word of the answer is
unique, and the error notice counts as one word, so the count does not depend on how live
delivery grouped words into messages); the table is printed and recorded in
``docs/faults.md``. Each scenario states its promise and the test asserts it:

* ``exactly once``: nothing lost, duplicated or out of order (the bot path, with nonces);
* ``at most once``: nothing duplicated or out of order (webhooks: no nonce, so an ambiguous
  failure is not retried and may lose the message it hit);

Edit mode must edit what it created, so an ambiguous create (no message id: a 5xx or a reset
after Discord stored it, a 2xx that is not JSON) is looked for (``rxcord.sinks.lookup``): the
bot path sends the nonce again, a webhook message is found by reading the channel back with
the bot token (or proven absent and sent again); a webhook-only sink cannot read, so the
message is kept as shown and the rest follows in new messages. The ambiguous rows run in all
three delivery modes.
* ``stops``: the stream ends with the typed error or stop, nothing is duplicated and no
  request follows the fault (401, ban) or the stop (403, 404).

``pytest -m faults`` runs exactly this module.
"""

from __future__ import annotations

import collections
import itertools
import tracemalloc
from collections.abc import Callable

import attrs
import pytest

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import DeliveryMode
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.sinks.rest import Backoff, RestSink
from tests.faults.fake_discord import FakeDiscord, Step, gzip_bomb, json_step, rate_limited
from tests.faults.fake_provider import FakeProvider, Plan

pytestmark = pytest.mark.faults

CHANNEL = "300000000000000001"
FAST = Backoff(base=0.01, cap=0.05, jitter=0.01)
REQUEST = ChatRequest(model="fault-model", messages=(Message.user("write twelve paragraphs"),))
TRANSPORT = TransportConfig(
    idle_timeout=0.4,
    first_byte_timeout=2.0,
    backoff=0.01,
    allow_private_network=True,  # 127.0.0.1
)


def _answer() -> list[str]:
    """Twelve paragraphs of 140 unique words (about six Discord messages), cut into 40-character deltas.

    Every word is unique (``p03w017``), so losses, duplicates and order are counted per word:
    that holds whichever way live delivery happened to group the words into messages.
    """
    text = "\n\n".join(" ".join(f"p{n:02d}w{i:03d}" for i in range(140)) for n in range(12))
    return [text[i : i + 40] for i in range(0, len(text), 40)]


PIECES = _answer()
OK = Step()


@attrs.frozen
class Scenario:
    name: str
    promise: str
    """``exactly once``, ``at most once`` or ``stops``."""
    discord: tuple[Step, ...] = ()
    """Answers to the message creates, in order (then: success)."""
    webhook: bool = False
    plans: tuple[Plan, ...] = ()
    """The provider's attempts."""
    quiet_after: int | None = None
    """For ``stops``: requests allowed in total (none may follow the fault)."""
    peak: bool = False
    """Measure the peak of traced memory of the Discord run."""
    delivery: DeliveryMode = DeliveryMode.AGGREGATED
    """Live delivery sends paragraphs while the provider still streams (faults then hit mid-stream)."""
    bot_token: bool = True
    """The sink holds the bot token (``False``: a webhook-only sink, which cannot read messages)."""


@attrs.frozen
class Row:
    scenario: Scenario
    expected: int
    """Messages the in-memory run sent."""
    delivered: int
    """Messages Discord stored."""
    lost: int
    duplicated: int
    out_of_order: int
    status: str
    requests: int
    peak_mib: float | None
    reads: int = 0
    """Channel listings (``GET .../messages``): edit mode looking for a message."""

    def problems(self) -> list[str]:
        found = []
        if self.duplicated or self.out_of_order:
            found.append(f"duplicated {self.duplicated}, out of order {self.out_of_order}")
        if self.scenario.promise == "exactly once" and self.lost:
            found.append(f"lost {self.lost}")
        if self.scenario.quiet_after is not None and self.requests > self.scenario.quiet_after:
            found.append(f"{self.requests} requests, at most {self.scenario.quiet_after} allowed")
        if self.peak_mib is not None and self.peak_mib > 64:
            found.append(f"peak memory {self.peak_mib:.0f} MiB")
        return found


def _bomb() -> bytes:
    if not _BOMB:
        _BOMB.append(gzip_bomb(512 << 20))
    return _BOMB[0]


_BOMB: list[bytes] = []
_NOT_JSON = Step("status", status=200, body=b"<html>stored</html>", store=True)
"""A 2xx whose body is not JSON (a proxy's page): stored, but no message id."""
_AMBIGUOUS = (
    ("500 after stored", json_step(500, {"code": 0}, store=True)),
    ("reset after stored", Step("reset", store=True)),
    ("non-JSON 2xx", _NOT_JSON),
)
_WEBHOOK_ONLY = (
    ("500 before stored", json_step(500, {"code": 0})),
    ("reset before stored", Step("reset")),
)


def _ambiguous_rows() -> tuple[Callable[[], Scenario], ...]:
    """The ambiguous answers on both paths in the three modes (what is not among the rows above).

    Edit mode takes the fault on its first create (the message every later edit needs);
    the other modes on the second.
    """
    rows: list[Callable[[], Scenario]] = []
    for mode in DeliveryMode:
        before = () if mode is DeliveryMode.EDIT else (OK,)
        bot = _AMBIGUOUS if mode is not DeliveryMode.AGGREGATED else _AMBIGUOUS[2:]
        hook = (*_AMBIGUOUS, *_WEBHOOK_ONLY) if mode is not DeliveryMode.AGGREGATED else _AMBIGUOUS[2:]
        webhook_promise = "exactly once" if mode is DeliveryMode.EDIT else "at most once"
        for case, step in bot:
            rows.append(_row(f"{mode.value}: {case}", "exactly once", (*before, step), mode))
        for case, step in hook:
            rows.append(
                _row(f"{mode.value} webhook: {case}", webhook_promise, (*before, step), mode, webhook=True)
            )
    for case, step in (_AMBIGUOUS[0], _WEBHOOK_ONLY[0]):
        rows.append(
            _row(
                f"edit webhook, no bot token: {case}",
                "at most once",
                (step,),
                DeliveryMode.EDIT,
                webhook=True,
                bot_token=False,
            )
        )
    return tuple(rows)


def _row(
    name: str,
    promise: str,
    steps: tuple[Step, ...],
    mode: DeliveryMode,
    *,
    webhook: bool = False,
    bot_token: bool = True,
) -> Callable[[], Scenario]:
    return lambda: Scenario(name, promise, steps, webhook=webhook, delivery=mode, bot_token=bot_token)


_MIDWAY = (OK, OK)
"""Two messages go through before the fault hits the third."""

SCENARIOS: tuple[Callable[[], Scenario], ...] = (
    lambda: Scenario("no fault", "exactly once"),
    lambda: Scenario("429 storm, user scope, JSON", "exactly once", (OK, *[rate_limited(0.05)] * 5)),
    lambda: Scenario(
        "429 storm, global, JSON",
        "exactly once",
        (OK, *[rate_limited(0.05, scope="global", is_global=True)] * 3),
    ),
    lambda: Scenario(
        "429 storm, shared scope, JSON", "exactly once", (*[rate_limited(0.05, scope="shared")] * 3,)
    ),
    lambda: Scenario(
        "429 without JSON (Cloudflare), Retry-After",
        "exactly once",
        (OK, *[rate_limited(json_body=False, scope=None, header="0.1")] * 2),
    ),
    lambda: Scenario(
        "429 header only, user scope", "exactly once", (*[rate_limited(json_body=False, header="0.1")] * 3,)
    ),
    lambda: Scenario(
        "429 without any delay (ban)",
        "stops",
        (*_MIDWAY, json_step(429, {"code": 0, "message": "You are being blocked"})),
        quiet_after=3,
    ),
    lambda: Scenario(
        "5xx before stored", "exactly once", (OK, json_step(500, {"code": 0}), json_step(502, {"code": 0}))
    ),
    lambda: Scenario("5xx after stored", "exactly once", (OK, json_step(500, {"code": 0}, store=True))),
    lambda: Scenario("reset before stored", "exactly once", (OK, Step("reset"), Step("reset"))),
    lambda: Scenario("reset after stored", "exactly once", (OK, Step("reset", store=True))),
    lambda: Scenario(
        "401 mid-stream",
        "stops",
        (*_MIDWAY, json_step(401, {"code": 0, "message": "401: Unauthorized"})),
        quiet_after=3,
    ),
    lambda: Scenario(
        "403 mid-stream (missing access)",
        "stops",
        (*_MIDWAY, json_step(403, {"code": 50013, "message": "Missing Permissions"})),
        quiet_after=3,
    ),
    lambda: Scenario(
        "404 mid-stream (channel deleted)",
        "stops",
        (*_MIDWAY, json_step(404, {"code": 10003, "message": "Unknown Channel"})),
        quiet_after=3,
    ),
    lambda: Scenario(
        "oversized body (2 MiB JSON)",
        "exactly once",
        (OK, json_step(200, {"id": "1", "x": "y" * (2 << 20)}, store=True)),
    ),
    lambda: Scenario(
        "compressed body (512 MiB gzip)",
        "exactly once",
        (OK, Step("status", status=200, raw=_bomb(), encoding="gzip", store=True)),
        peak=True,
    ),
    lambda: Scenario("webhook: no fault", "exactly once", webhook=True),
    lambda: Scenario(
        "webhook: 429 storm, user scope", "exactly once", (OK, *[rate_limited(0.05)] * 5), webhook=True
    ),
    lambda: Scenario(
        "webhook: 429 without JSON",
        "exactly once",
        (OK, rate_limited(json_body=False, scope=None, header="0.1")),
        webhook=True,
    ),
    lambda: Scenario(
        "webhook: 503 before stored", "exactly once", (OK, json_step(503, {"code": 0})), webhook=True
    ),
    lambda: Scenario(
        "webhook: 500 after stored",
        "at most once",
        (OK, json_step(500, {"code": 0}, store=True)),
        webhook=True,
    ),
    lambda: Scenario(
        "webhook: 500 before stored", "at most once", (OK, json_step(500, {"code": 0})), webhook=True
    ),
    lambda: Scenario(
        "webhook: reset after stored", "at most once", (OK, Step("reset", store=True)), webhook=True
    ),
    lambda: Scenario("webhook: reset before stored", "at most once", (OK, Step("reset")), webhook=True),
    lambda: Scenario(
        "webhook: 404 unknown webhook mid-stream",
        "stops",
        (*_MIDWAY, json_step(404, {"code": 10015, "message": "Unknown Webhook"})),
        webhook=True,
        quiet_after=3,
    ),
    lambda: Scenario("provider stalled before commitment", "exactly once", plans=(Plan("stall", 0),)),
    lambda: Scenario("provider dropped before commitment", "exactly once", plans=(Plan("drop", 0),)),
    lambda: Scenario("provider stalled after commitment", "exactly once", plans=(Plan("stall", 30),)),
    lambda: Scenario("provider dropped after commitment", "exactly once", plans=(Plan("drop", 30),)),
    lambda: Scenario(
        "provider cut at an event boundary before commitment", "exactly once", plans=(Plan("cut", 0),)
    ),
    lambda: Scenario(
        "provider cut at an event boundary after commitment", "exactly once", plans=(Plan("cut", 30),)
    ),
    lambda: Scenario("live: no fault", "exactly once", delivery=DeliveryMode.LIVE),
    lambda: Scenario(
        "live: 429 storm and 5xx mid-stream",
        "exactly once",
        (OK, *[rate_limited(0.05)] * 3, json_step(500, {"code": 0}, store=True), Step("reset")),
        delivery=DeliveryMode.LIVE,
    ),
    lambda: Scenario(
        "live: provider stalled after commitment",
        "exactly once",
        plans=(Plan("stall", 120),),
        delivery=DeliveryMode.LIVE,
    ),
    lambda: Scenario(
        "live: provider cut at an event boundary after commitment",
        "exactly once",
        plans=(Plan("cut", 120),),
        delivery=DeliveryMode.LIVE,
    ),
    lambda: Scenario(
        "live: provider dropped after commitment, then 429 and reset",
        "exactly once",
        (OK, rate_limited(0.05), Step("reset", store=True)),
        plans=(Plan("drop", 120),),
        delivery=DeliveryMode.LIVE,
    ),
    lambda: Scenario(
        "live: 401 mid-stream",
        "stops",
        (*_MIDWAY, json_step(401, {"code": 0, "message": "401: Unauthorized"})),
        quiet_after=3,
        delivery=DeliveryMode.LIVE,
    ),
    lambda: Scenario(
        "live webhook: reset after stored",
        "at most once",
        (OK, Step("reset", store=True)),
        webhook=True,
        delivery=DeliveryMode.LIVE,
    ),
    *_ambiguous_rows(),
)


def _records(sink: MemorySink) -> list[str]:
    out = []
    for payload in sink.payloads:
        if payload.get("content"):
            out.append(str(payload["content"]))
        else:
            out.append("[embed] " + " ".join(str(e.get("title", "")) for e in payload.get("embeds") or ()))
    return out


def _units(records: list[str]) -> list[str]:
    """The words of the messages, an error notice counting as one."""
    return [
        unit for record in records for unit in ([record] if record.startswith("[embed]") else record.split())
    ]


def _compare(expected: list[str], actual: list[str]) -> tuple[int, int, int]:
    """(lost, duplicated, out of order) words of ``actual`` against ``expected``."""
    want = collections.Counter(expected)
    got = collections.Counter(actual)
    lost = sum(max(0, want[k] - got[k]) for k in want)
    duplicated = sum(max(0, got[k] - want[k]) for k in got)
    positions = {text: index for index, text in reversed(list(enumerate(expected)))}
    seen = [positions[text] for text in dict.fromkeys(actual) if text in positions]
    out_of_order = sum(1 for a, b in itertools.pairwise(seen) if b < a)
    return lost, duplicated, out_of_order


async def _run(scenario: Scenario) -> Row:
    async with FakeDiscord() as discord:
        context = StreamContext(channel_id=CHANNEL)
        if scenario.webhook:
            hook = discord.add_webhook(CHANNEL)
            context = StreamContext(channel_id=CHANNEL, webhook_id=hook.id, webhook_token=hook.token)
        memory = MemorySink()
        async with FakeProvider(PIECES, list(scenario.plans)) as provider:
            await stream_to_discord(
                OpenAIAdapter(),
                REQUEST,
                sink=memory,
                base_url=provider.base_url,
                api_key="k",
                context=context,
                config=StreamConfig(delivery=scenario.delivery),
                transport=TRANSPORT,
            )
        expected = _records(memory)
        discord.script(*scenario.discord)
        peak: float | None = None
        async with (
            FakeProvider(PIECES, list(scenario.plans)) as provider,
            RestSink(
                discord.base_url, discord.token if scenario.bot_token else None, backoff=FAST, seed=1
            ) as sink,
        ):
            if scenario.peak:
                tracemalloc.start()
            try:
                result = await stream_to_discord(
                    OpenAIAdapter(),
                    REQUEST,
                    sink=sink,
                    base_url=provider.base_url,
                    api_key="k",
                    context=context,
                    config=StreamConfig(delivery=scenario.delivery),
                    transport=TRANSPORT,
                )
                status = result.status.value
            except Exception as exc:  # the table records what reached the caller
                status = f"raised {type(exc).__name__}"
            finally:
                if scenario.peak:
                    peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
                    tracemalloc.stop()
        actual = discord.records(CHANNEL)
        creates = sum(
            1 for method, path in discord.requests if method == "POST" and not path.endswith("typing")
        )
        reads = sum(1 for method, path in discord.requests if method == "GET" and path.endswith("messages"))
    return Row(
        scenario,
        len(expected),
        len(actual),
        *_compare(_units(expected), _units(actual)),
        status,
        creates,
        peak,
        reads,
    )


def _table(rows: list[Row]) -> str:
    header = (
        "scenario",
        "path",
        "delivery",
        "promise",
        "messages expected",
        "messages delivered",
        "words lost",
        "words duplicated",
        "out of order",
        "status",
    )
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for row in rows:
        cells = (
            row.scenario.name,
            "webhook" if row.scenario.webhook else "bot",
            row.scenario.delivery.value,
            row.scenario.promise,
            row.expected,
            row.delivered,
            row.lost,
            row.duplicated,
            row.out_of_order,
            row.status + (f" (peak {row.peak_mib:.0f} MiB)" if row.peak_mib is not None else ""),
        )
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


async def test_fault_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    """Every scenario keeps its promise; the table of figures is printed."""
    rows = [await _run(make()) for make in SCENARIOS]
    table = _table(rows)
    with capsys.disabled():
        print("\n" + table)
    failures = {row.scenario.name: row.problems() for row in rows if row.problems()}
    assert not failures, table
    # The figures must mean something: the faults did hit.
    by_name = {row.scenario.name: row for row in rows}
    assert by_name["no fault"].expected >= 5
    assert by_name["401 mid-stream"].lost > 0 and by_name["webhook: reset before stored"].lost > 0
    assert by_name["webhook: 500 after stored"].lost == 0
    # A clean close before the end marker is a cut, not an answer: retried before commitment,
    # an error after it (it ended "completed" with the partial text before).
    assert by_name["provider cut at an event boundary before commitment"].status == "completed"
    assert by_name["provider cut at an event boundary after commitment"].status == "error"
    assert by_name["live: provider cut at an event boundary after commitment"].status == "error"
    # Edit mode found its messages: by the nonce (no listing), or by reading the channel back.
    assert by_name["edit: non-JSON 2xx"].reads == 0
    assert by_name["edit webhook: 500 after stored"].reads > 0
    assert by_name["edit webhook: 500 before stored"].reads > 0
    # Without the bot token the message stays as shown and the rest follows it: nothing lost.
    unread = by_name["edit webhook, no bot token: 500 after stored"]
    assert unread.reads == 0 and unread.lost == 0
    assert by_name["edit webhook, no bot token: 500 before stored"].lost > 0
