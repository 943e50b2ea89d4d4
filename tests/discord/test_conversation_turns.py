"""DMs continue from their history; a user's back-to-back messages are one turn (fake source)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.discord import ChatLine, ContextLimits
from rxcord.discord.chain import collect
from tests.discord.test_conversation import BOT, FakeSource

ALICE = "7"
BOB = "8"


def _at(seconds: float, seq: int = 0) -> str:
    """A snowflake sent *seconds* after Discord's epoch (the reader reads the time from the id)."""
    return str((int(seconds * 1000) << 22) | seq)


def _line(seconds: float, text: str, author: str = ALICE, seq: int = 0, **kw: Any) -> ChatLine:
    name = {ALICE: "alice", BOB: "bob", BOT: "bot"}[author]
    return ChatLine(
        id=_at(seconds, seq), channel_id="1", author_id=author, author_name=name, content=text, **kw
    )


async def _collect(
    source: FakeSource, trigger: ChatLine, limits: ContextLimits | None = None, **kw: Any
) -> tuple[list[str], bool]:
    lines, more = await collect(trigger, source, limits or ContextLimits(), assistant_ids={BOT}, **kw)
    return [line.content for line in lines], more


async def test_back_to_back_messages_of_one_user_are_chained() -> None:
    older = _line(100, "unrelated", author=BOB)
    first = _line(200, "look at this:")
    second = _line(230, "and this too")
    trigger = _line(250, "what are they?")
    source = FakeSource.of(older, first, second, trigger)
    assert await _collect(source, trigger) == (["look at this:", "and this too", "what are they?"], False)
    assert source.calls["before"] == 3  # one per line taken, one for bob's that ends it


async def test_a_gap_over_the_bound_or_someone_between_ends_the_chain() -> None:
    first = _line(100, "yesterday's question")
    trigger = _line(161, "a new question")  # 61 s later: over the 60 s default
    assert await _collect(FakeSource.of(first, trigger), trigger) == (["a new question"], False)
    near = _line(150, "just before")
    assert (await _collect(FakeSource.of(near, trigger), trigger))[0] == ["just before", "a new question"]
    between = _line(155, "hi alice", author=BOB)
    assert (await _collect(FakeSource.of(near, between, trigger), trigger))[0] == ["a new question"]
    off = ContextLimits(back_to_back_seconds=0)
    source = FakeSource.of(near, trigger)
    assert (await _collect(source, trigger, off))[0] == ["a new question"]
    assert source.calls["before"] == 0


async def test_a_back_to_back_message_brings_the_reply_chain_it_belongs_to() -> None:
    question = _line(10, "what is rx?")
    answer = _line(20, "a reactive library", author=BOT, reply_to=question.id)
    reply = _line(30, "and rxpy?", reply_to=answer.id)
    trigger = _line(35, "in one line please")
    source = FakeSource.of(question, answer, reply, trigger)
    assert (await _collect(source, trigger))[0] == [
        "what is rx?",
        "a reactive library",
        "and rxpy?",
        "in one line please",
    ]


async def test_the_bound_holds_and_says_more_when_the_chain_goes_on() -> None:
    lines = [_line(10 + i, f"m{i}") for i in range(30)]
    source = FakeSource.of(*lines)
    texts, more = await _collect(source, lines[-1], ContextLimits(max_messages=5))
    assert texts == [f"m{i}" for i in range(25, 30)]
    assert more  # m24 is back-to-back too: the note will say older messages were left out
    assert source.calls["before"] == 5


async def test_a_dm_that_replies_to_nothing_continues_the_dm() -> None:
    dm = [
        _line(10, "hello"),
        _line(20, "hi! how can I help?", author=BOT),
        _line(5000, "what did I say first?"),  # long after: the DM is one conversation anyway
    ]
    trigger = dm[-1]
    assert await _collect(FakeSource.of(*dm), trigger, dm=True) == (
        ["hello", "hi! how can I help?", "what did I say first?"],
        False,
    )
    # The same messages in a server channel: a new question replying to nothing starts afresh.
    assert (await _collect(FakeSource.of(*dm), trigger))[0] == ["what did I say first?"]


async def test_dm_history_is_bounded_by_the_context_limits() -> None:
    dm = [_line(10 * i, f"m{i}", author=BOT if i % 2 else ALICE) for i in range(40)]
    source = FakeSource.of(*dm)
    texts, more = await _collect(source, dm[-1], ContextLimits(max_messages=6), dm=True)
    assert texts == [f"m{i}" for i in range(34, 40)]
    assert more
    assert source.handed_out <= 6 + 1  # one page of the room and one more, to know there is more


@settings(max_examples=60, deadline=None)
@given(
    authors=st.lists(st.sampled_from([ALICE, BOB, BOT]), min_size=1, max_size=60),
    gaps=st.lists(st.integers(0, 120), min_size=60, max_size=60),
    max_messages=st.integers(1, 30),
)
async def test_the_chain_reads_at_most_one_request_per_line_kept_plus_one(
    authors: list[str], gaps: list[int], max_messages: int
) -> None:
    seconds, lines = 1000, []
    for seq, (author, gap) in enumerate(zip(authors, gaps, strict=False)):
        seconds += gap
        lines.append(_line(seconds, f"line {seq}", author=author, seq=seq))
    trigger = _line(seconds + 1, "the question")
    source = FakeSource.of(*lines, trigger)
    texts, _ = await _collect(source, trigger, ContextLimits(max_messages=max_messages))
    assert 1 <= len(texts) <= max_messages
    assert sum(source.calls.values()) <= len(texts)
    assert source.handed_out <= len(texts)
    kept = [line for line in [*lines, trigger] if line.content in texts]
    assert all(line.author_id == ALICE for line in kept)  # only alice's own messages chain
