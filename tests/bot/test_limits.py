"""``rxcord.bot.limits``: every cap at its boundary, restarts, cost from reported vs [prices], refusals.

The clock is injected (a list the test moves): no test reads the wall clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest

from rxcord import StreamStatus, TurnResult, Usage
from rxcord.bot.config import LimitsSection, ModelPrice, parse_config
from rxcord.bot.counters import SqliteCounters
from rxcord.bot.limits import REACTION, Limits, answered_model, charge_of
from rxcord.compose.stopped import estimated_usage
from rxcord.compose.turn import Attempt
from rxcord.core.state import StreamResult

NOON = 1_780_000_000.0 - 1_780_000_000.0 % 86_400 + 12 * 3600  # a UTC noon, on an hour boundary
OFF = LimitsSection(requests_per_user=0, concurrent_per_user=0, concurrent_per_channel=0)


class Clock:
    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def turn(
    usage: Usage | None, model: str = "deepseek/deepseek-r1", status: StreamStatus = StreamStatus.COMPLETED
) -> TurnResult:
    result = StreamResult(status=status)
    attempt = Attempt(label=f"openrouter:{model}#key1", status=status)
    return TurnResult(result=result, results=(result,), attempts=(attempt,), usage=usage)


def make(
    path: Path, section: LimitsSection, clock: Clock, prices: dict[str, ModelPrice] | None = None
) -> Limits:
    return Limits(section, prices or {}, store=SqliteCounters(path, section), clock=clock)


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[list[Limits]]:
    made: list[Limits] = []
    yield made
    for limits in made:
        await limits.close()


async def ask(
    limits: Limits, n: int, *, user: str = "u1", channel: str = "c1", guild: str | None = "g1"
) -> list[str | None]:
    """Send *n* messages and settle each at once (no concurrency), returning each refusal."""
    out = []
    for i in range(n):
        message_id = f"{user}-{channel}-{i}-{id(out)}"
        refusal = await limits.check(user=user, channel=channel, guild=guild, message_id=message_id)
        if refusal is None:
            await limits.release(message_id, turn(Usage(input_tokens=0, output_tokens=0)))
        out.append(refusal)
    return out


@pytest.mark.parametrize("sent", [4, 5, 6])
async def test_requests_per_user_at_the_boundary(tmp_path: Path, opened: list[Limits], sent: int) -> None:
    clock = Clock(NOON + 48 * 60)  # 12 minutes before the hour ends
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, requests_per_user=5), clock)
    opened.append(limits)
    refusals = await ask(limits, sent)
    assert refusals[: min(sent, 5)] == [None] * min(sent, 5)
    if sent == 6:
        assert refusals[5] == (
            "You have used 5 of 5 requests this hour; try again in 12 min.\n-# [limits] requests_per_user"
        )
    # Another user is not limited by this one's count.
    assert await ask(limits, 1, user="u2") == [None]


async def test_the_request_window_resets_at_its_end(tmp_path: Path, opened: list[Limits]) -> None:
    clock = Clock()
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, requests_per_user=2), clock)
    opened.append(limits)
    refusal = "You have used 2 of 2 requests this hour; try again in 1 h.\n-# [limits] requests_per_user"
    assert await ask(limits, 3) == [None, None, refusal]
    clock.now = NOON + 3599
    assert (await ask(limits, 1))[0] is not None
    clock.now = NOON + 3600
    assert await ask(limits, 3) == [None, None, refusal]


@pytest.mark.parametrize("running", [1, 2, 3])
async def test_concurrent_per_user_at_the_boundary(
    tmp_path: Path, opened: list[Limits], running: int
) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, concurrent_per_user=2), Clock())
    opened.append(limits)
    results = [
        await limits.check(user="u1", channel=f"thread{i}", guild="g1", message_id=f"m{i}")
        for i in range(running)
    ]
    assert results[:2] == [None] * min(running, 2)
    if running == 3:
        assert results[2] is not None and results[2].startswith("You already have 2 of 2 answers running")
        assert "[limits] concurrent_per_user" in results[2]
        # Settling one (a stopped answer, say) frees its slot.
        await limits.release("m0", turn(Usage(estimated=True)))
        assert await limits.check(user="u1", channel="thread9", guild="g1", message_id="m9") is None


@pytest.mark.parametrize("running", [2, 3, 4])
async def test_concurrent_per_channel_at_the_boundary(
    tmp_path: Path, opened: list[Limits], running: int
) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, concurrent_per_channel=3), Clock())
    opened.append(limits)
    results = [
        await limits.check(user=f"user{i}", channel="c1", guild="g1", message_id=f"m{i}")
        for i in range(running)
    ]
    assert results[:3] == [None] * min(running, 3)
    if running == 4:
        assert results[3] is not None and "3 of 3 answers are already running in this channel" in results[3]
    # Another channel is independent.
    assert await limits.check(user="user0", channel="c2", guild="g1", message_id="other") is None


async def test_a_lease_of_a_process_that_never_settled_expires(tmp_path: Path, opened: list[Limits]) -> None:
    section = attrs.evolve(OFF, concurrent_per_user=1, lease_seconds=600)
    clock = Clock()
    crashed = make(tmp_path / "l.db", section, clock)
    opened.append(crashed)
    assert await crashed.check(user="u1", channel="c1", guild=None, message_id="m0") is None
    restarted = make(tmp_path / "l.db", section, clock)  # the first never settles m0
    opened.append(restarted)
    clock.now += 599
    assert await restarted.check(user="u1", channel="c1", guild=None, message_id="m1") is not None
    clock.now += 1
    assert await restarted.check(user="u1", channel="c1", guild=None, message_id="m1") is None


@pytest.mark.parametrize(("used", "admitted"), [(999, True), (1000, False), (1001, False)])
async def test_tokens_per_user_per_day_at_the_boundary(
    tmp_path: Path, opened: list[Limits], used: int, admitted: bool
) -> None:
    clock = Clock()
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, tokens_per_user_per_day=1000), clock)
    opened.append(limits)
    assert await limits.check(user="u1", channel="c1", guild="g1", message_id="m0") is None
    await limits.release("m0", turn(Usage(input_tokens=used - 1, output_tokens=1)))
    refusal = await limits.check(user="u1", channel="c1", guild="g1", message_id="m1")
    assert (refusal is None) is admitted
    if not admitted:
        assert (
            refusal == f"You have used {used} of 1000 tokens today; try again in 12 h.\n"
            "-# [limits] tokens_per_user_per_day"
        )
        clock.now = NOON + 12 * 3600  # UTC midnight: a new day
        assert await limits.check(user="u1", channel="c1", guild="g1", message_id="m1") is None


async def test_tokens_per_guild_counts_every_user_of_the_guild(tmp_path: Path, opened: list[Limits]) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, tokens_per_guild_per_day=100), Clock())
    opened.append(limits)
    for user in ("a", "b"):
        assert await limits.check(user=user, channel="c1", guild="g1", message_id=user) is None
        await limits.release(user, turn(Usage(input_tokens=40, output_tokens=10)))
    refusal = await limits.check(user="c", channel="c1", guild="g1", message_id="c")
    assert refusal is not None and "This server has used 100 of 100 tokens today" in refusal
    assert await limits.check(user="c", channel="c1", guild="g2", message_id="c") is None
    assert (
        await limits.check(user="d", channel="dm", guild=None, message_id="d") is None
    )  # a DM: no guild cap


@pytest.mark.parametrize(("cents", "admitted"), [(99, True), (100, False), (101, False)])
async def test_cost_per_user_per_day_at_the_boundary_from_reported_cost(
    tmp_path: Path, opened: list[Limits], cents: int, admitted: bool
) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, cost_per_user_per_day=1.0), Clock())
    opened.append(limits)
    assert await limits.check(user="u1", channel="c1", guild="g1", message_id="m0") is None
    await limits.release("m0", turn(Usage(input_tokens=10, output_tokens=10, cost=cents / 100)))
    refusal = await limits.check(user="u1", channel="c1", guild="g1", message_id="m1")
    assert (refusal is None) is admitted
    if not admitted:
        assert refusal is not None and refusal.startswith(f"You have used ${cents / 100:.2f} of $1.00 today")


async def test_cost_per_guild_from_prices(tmp_path: Path, opened: list[Limits]) -> None:
    prices = {"deepseek/deepseek-r1": ModelPrice(input_per_million=1.0, output_per_million=3.0)}
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, cost_per_guild_per_day=0.5), Clock(), prices)
    opened.append(limits)
    assert await limits.check(user="a", channel="c1", guild="g1", message_id="a") is None
    # 100k in, 100k out: 0.10 + 0.30 dollars; the second answer takes the guild past 0.50.
    await limits.release("a", turn(Usage(input_tokens=100_000, output_tokens=100_000)))
    assert await limits.check(user="b", channel="c1", guild="g1", message_id="b") is None
    await limits.release("b", turn(Usage(input_tokens=100_000, output_tokens=100_000)))
    refusal = await limits.check(user="c", channel="c1", guild="g1", message_id="c")
    assert refusal is not None and "This server has used $0.80 of $0.50 today" in refusal


def test_cost_is_the_reported_one_else_priced_else_unknown() -> None:
    prices = {"deepseek/deepseek-r1": ModelPrice(input_per_million=2.0, output_per_million=8.0)}
    reported = charge_of(turn(Usage(input_tokens=1000, output_tokens=500, cost=0.42)), prices)
    assert (
        reported[1] is None and reported[0].tokens == 1500 and reported[0].cost == 0.42
    )  # the provider's figure wins
    priced, missing = charge_of(turn(Usage(input_tokens=1000, output_tokens=500)), prices)
    assert missing is None and priced.tokens == 1500
    assert priced.cost == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)
    unknown, missing = charge_of(turn(Usage(input_tokens=7, output_tokens=3), model="other/model"), prices)
    assert unknown.tokens == 10 and unknown.cost is None and missing == "other/model"
    nothing, missing = charge_of(None, prices)
    assert nothing.tokens == 0 and nothing.cost is None and missing is None


def test_the_answered_model_is_the_last_attempts() -> None:
    assert answered_model(turn(None, model="meta/llama:free")) == "meta/llama:free"


@pytest.mark.parametrize(
    "status", [StreamStatus.STOPPED_BY_USER, StreamStatus.FOLLOW_UP_INTERRUPT, StreamStatus.KILLED]
)
async def test_a_stopped_answer_charges_its_estimated_usage(
    tmp_path: Path, opened: list[Limits], status: StreamStatus
) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, tokens_per_user_per_day=500), Clock())
    opened.append(limits)
    assert await limits.check(user="u1", channel="c1", guild="g1", message_id="m0") is None
    # Stopped before the provider reported usage: the estimate, prompt included, is what counts.
    body = {"messages": [{"role": "user", "content": "p" * 1800}]}  # about 450 prompt tokens
    stopped = estimated_usage(StreamResult(status=status, visible_text="v" * 200), body, sent=True)
    assert stopped.usage is not None and stopped.usage.estimated
    assert stopped.usage.input_tokens + stopped.usage.output_tokens >= 500
    result = TurnResult(
        result=stopped,
        results=(stopped,),
        attempts=(Attempt(label="openrouter:m#key1", status=status),),
        usage=stopped.usage,
    )
    await limits.release("m0", result)
    refusal = await limits.check(user="u1", channel="c1", guild="g1", message_id="m1")
    total = stopped.usage.input_tokens + stopped.usage.output_tokens
    assert refusal is not None and f"{total} of 500 tokens" in refusal


async def test_counters_survive_a_restart(tmp_path: Path, opened: list[Limits]) -> None:
    section = attrs.evolve(OFF, requests_per_user=3, tokens_per_user_per_day=100)
    clock = Clock()
    first = make(tmp_path / "l.db", section, clock)
    assert await ask(first, 2) == [None, None]
    assert await first.check(user="u1", channel="c1", guild="g1", message_id="x") is None
    await first.release("x", turn(Usage(input_tokens=60, output_tokens=0)))
    await first.close()
    second = make(tmp_path / "l.db", section, clock)
    opened.append(second)
    refusal = await second.check(user="u1", channel="c1", guild="g1", message_id="y")
    assert refusal is not None and "3 of 3 requests" in refusal
    clock.now += 3600  # a new window, the same day: the tokens are still counted
    assert await second.check(user="u1", channel="c1", guild="g1", message_id="y") is None
    await second.release("y", turn(Usage(input_tokens=40, output_tokens=0)))
    refusal = await second.check(user="u1", channel="c1", guild="g1", message_id="z")
    assert refusal is not None and "100 of 100 tokens" in refusal


async def test_a_refused_request_is_not_counted(tmp_path: Path, opened: list[Limits]) -> None:
    section = attrs.evolve(OFF, requests_per_user=2, concurrent_per_user=1)
    limits = make(tmp_path / "l.db", section, Clock())
    opened.append(limits)
    assert await limits.check(user="u1", channel="c1", guild=None, message_id="m0") is None
    for attempt in range(5):  # refused by the concurrency cap: the request count stays at one
        assert await limits.check(user="u1", channel="c2", guild=None, message_id=f"r{attempt}") is not None
    await limits.release("m0", None)  # a failure before any result: the lease is freed all the same
    assert await limits.check(user="u1", channel="c1", guild=None, message_id="m1") is None


def test_limits_config_errors_name_the_key_and_line() -> None:
    base = '[provider]\nname = "openrouter"\nmodel = "m"\n'
    cases = {
        "[limits]\nrequests_per_user = -1\n": "bot.toml:5: limits.requests_per_user: must be zero or more",
        "[limits]\nwindow_seconds = 0\n": "bot.toml:5: limits.window_seconds: must be a positive integer",
        '[limits]\nrefusal = "shout"\n': "bot.toml:5: limits.refusal: must be reply or reaction, got 'shout'",
        "[limits]\nper_user = 1\n": "bot.toml:5: limits.per_user: unknown key",
        '[prices."openai/gpt-4.1"]\ninput_per_million = -1\noutput_per_million = 1\n': (
            'bot.toml:5: prices."openai/gpt-4.1".input_per_million: must be zero or more, got -1.0'
        ),
        '[prices."openai/gpt-4.1"]\ninput_per_million = 1\n': (
            'bot.toml:4: prices."openai/gpt-4.1".output_per_million: is required'
        ),
        '[scale]\nredis_url_env = "redis://h"\n': "bot.toml:5: scale.redis_url_env: must be the NAME",
    }
    from rxcord.core.errors import ConfigError

    for extra, expected in cases.items():
        with pytest.raises(ConfigError) as caught:
            parse_config(base + extra, source="bot.toml")
        assert str(caught.value).startswith(expected), (extra, str(caught.value))


def test_limits_are_on_by_default_and_prices_parse() -> None:
    config = parse_config(
        '[provider]\nname = "openrouter"\nmodel = "m"\n'
        '[prices."deepseek/deepseek-r1"]\ninput_per_million = 0.55\noutput_per_million = 2.19\n'
    )
    assert config.limits.requests_per_user > 0 and config.limits.concurrent_per_user > 0
    assert config.prices == {
        "deepseek/deepseek-r1": ModelPrice(input_per_million=0.55, output_per_million=2.19)
    }


def test_the_state_file_defaults_next_to_the_config(tmp_path: Path) -> None:
    from rxcord.bot.config import load_config

    (tmp_path / "bot.toml").write_text('[provider]\nname = "openrouter"\nmodel = "m"\n')
    assert load_config(tmp_path / "bot.toml").limits.state_file == str(tmp_path / "rxcord-limits.sqlite3")
    (tmp_path / "bot.toml").write_text(
        '[provider]\nname = "openrouter"\nmodel = "m"\n[limits]\nstate_file = "s/x.db"\n'
    )
    assert load_config(tmp_path / "bot.toml").limits.state_file == str(tmp_path / "s" / "x.db")


class FakeMessage:
    """What ``Limits.admit`` and ``settle`` read of a ``discord.Message``, and its reactions."""

    def __init__(self, number: int, *, user: int = 1, channel: int = 10, guild: int | None = 100) -> None:
        self.id = number
        self.author = SimpleNamespace(id=user)
        self.channel = SimpleNamespace(id=channel)
        self.guild = SimpleNamespace(id=guild, preferred_locale="en-US") if guild is not None else None
        self.reactions: list[str] = []
        self.fail = False

    async def add_reaction(self, emoji: str) -> None:
        if self.fail:
            raise RuntimeError("no permission to react")
        self.reactions.append(emoji)


@pytest.mark.parametrize("guild", [100, None])
async def test_admission_replies_once_over_the_cap_and_settle_frees_the_slot(
    tmp_path: Path, opened: list[Limits], guild: int | None
) -> None:
    limits = make(tmp_path / "l.db", attrs.evolve(OFF, concurrent_per_user=1), Clock())
    opened.append(limits)
    first, second = FakeMessage(1, guild=guild), FakeMessage(2, channel=11, guild=guild)
    assert await limits.admit(first) is None  # type: ignore[arg-type]
    refusal = await limits.admit(second)  # type: ignore[arg-type]
    assert refusal is not None and refusal.startswith("You already have 1 of 1 answers running")
    assert second.reactions == []  # reply mode: the text is the answer manager's to post
    await limits.settle(first, None)  # type: ignore[arg-type]
    assert await limits.admit(second) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("fails", [False, True])
async def test_reaction_mode_reacts_and_returns_no_text(
    tmp_path: Path, opened: list[Limits], fails: bool
) -> None:
    section = attrs.evolve(OFF, requests_per_user=1, refusal="reaction")
    limits = make(tmp_path / "l.db", section, Clock())
    opened.append(limits)
    assert await limits.admit(FakeMessage(1)) is None  # type: ignore[arg-type]
    over = FakeMessage(2)
    over.fail = fails
    assert await limits.admit(over) == ""  # type: ignore[arg-type]
    assert over.reactions == ([] if fails else [REACTION])
