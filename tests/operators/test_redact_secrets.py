"""Secrets in the text stream: the incremental holdback and the stage 03 guard over it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.redact import REDACTED, Redactor, SecretHoldback
from rxcord.core.types import (
    ChunkType,
    ErrorType,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.redact_secrets import TAIL, redact_secrets, tail_at_stop
from tests.strategies import CUTS, cut
from tests.work import assert_linear

KEY = "sk-live-Q7x2Wm9Rt4"
TOKEN = "MTk4NjIy.bot-token.Xq9z"
REDACTOR = Redactor.of(KEY, TOKEN)


def _stream(holdback: SecretHoldback, pieces: list[str]) -> str:
    return "".join(holdback.feed(piece) for piece in pieces) + holdback.finish()


def _leaks(text: str) -> list[str]:
    return [secret for secret in (KEY, TOKEN) if secret in text]


# -- the holdback ---------------------------------------------------------------------------------

PROSE = st.text(alphabet=st.sampled_from(list("sk-liveQ7MTk4 .\n")), max_size=60)


@settings(max_examples=400, deadline=None)
@given(before=PROSE, after=PROSE, secret=st.sampled_from([KEY, TOKEN]), cuts=CUTS)
def test_a_secret_cut_anywhere_is_redacted_the_same(
    before: str, after: str, secret: str, cuts: list[int]
) -> None:
    """The same text cut anywhere (inside the secret too) gives one output, without the secret."""
    text = before + secret + after + secret
    whole = _stream(REDACTOR.holdback(), [text])
    assert _stream(REDACTOR.holdback(), cut(text, cuts, keep_empty=True)) == whole
    assert _leaks(whole) == []
    assert whole == REDACTOR.text(text)  # one secret, no overlaps: what the one redactor gives


@settings(max_examples=300, deadline=None)
@given(
    secrets=st.lists(st.text(alphabet="ab-", min_size=8, max_size=12), min_size=1, max_size=3),
    text=st.text(alphabet="ab-x", max_size=80),
    cuts=CUTS,
)
def test_overlapping_secrets_never_leak_and_are_split_invariant(
    secrets: list[str], text: str, cuts: list[int]
) -> None:
    """Secrets that overlap or nest (a small alphabet makes them): one output, no secret in it."""
    redactor = Redactor.of(*secrets)
    text = text + secrets[0] + text
    whole = _stream(redactor.holdback(), [text])
    assert _stream(redactor.holdback(), cut(text, cuts, keep_empty=True)) == whole
    assert [s for s in redactor.needles if s in whole] == []
    assert REDACTED in whole


def test_only_what_may_start_a_secret_is_held() -> None:
    """Text that cannot start a secret is released at once; a possible start waits for the next delta."""
    holdback = REDACTOR.holdback()
    assert holdback.feed("hello there ") == "hello there "
    assert holdback.feed("and sk-li") == "and "
    assert holdback.holding() == "sk-li"
    assert holdback.feed("ght") == "sk-light"
    assert holdback.holding() == ""
    assert holdback.feed(KEY[:-1]) == ""
    assert holdback.feed(KEY[-1] + "!") == f"{REDACTED}!"


def test_the_escaped_forms_are_needles() -> None:
    """Percent-encoded and JSON-escaped (``\\/``) forms: what a byte scan of the wire meets."""
    slashed = Redactor.of("abc/def+ghi=jk")
    holdback = slashed.holdback()
    assert _stream(holdback, ["x abc%2Fdef%2B", "ghi%3Djk y abc\\/def+", "ghi=jk z"]) == (
        f"x {REDACTED} y {REDACTED} z"
    )
    assert slashed.data(b'{"k": "abc\\/def+ghi=jk"}') == b'{"k": "[redacted]"}'


def test_the_holdback_is_linear_in_the_stream() -> None:
    """Work counted on adversarial text (every position a possible start) fed one character at a time."""
    redactor = Redactor.of("aaaaaaaaaaaaaaab", "aaaab-aaaaaaaaaa")

    def run(size: int) -> None:
        holdback = redactor.holdback()
        for char in "a" * size + "b" + "aaaab-" * size:
            holdback.feed(char)
        holdback.finish()

    assert_linear(run, 300)


def test_the_hold_stays_bounded() -> None:
    """Each delta costs its length plus the hold, and the hold never grows past twice the longest
    secret (plus a replacement): the stream's work is linear, whatever its shape."""
    bound = 2 * max(map(len, REDACTOR.needles)) + len(REDACTED)
    holdback = REDACTOR.holdback()
    widest = 0
    for step in range(3000):
        holdback.feed((KEY + TOKEN)[step % 7 : step % 7 + 3] + ("sk-live-Q7x2" if step % 5 else ""))
        widest = max(widest, len(holdback.holding()))
    assert 0 < widest <= bound


def test_prose_is_linear_and_mostly_skipped() -> None:
    """Ordinary text fed in deltas: work grows with the text, not with what came before."""
    text = "so the key starts with sk- and then some more words, see? " * 4

    def run(size: int) -> None:
        holdback = REDACTOR.holdback()
        for _ in range(size):
            holdback.feed(text)
        holdback.finish()

    assert_linear(run, 20)


# -- the guard ------------------------------------------------------------------------------------


def _run(chunks: list[ProcessedChunk]) -> list[ProcessedChunk]:
    transducer = redact_secrets(REDACTOR).factory()
    out = [one for chunk in chunks for one in transducer.feed(chunk)]
    return [*out, *transducer.finish()]


def _visible(chunks: list[ProcessedChunk]) -> str:
    return "".join(c.content for c in chunks if c.type is ChunkType.TEXT)


def _reasoning(chunks: list[ProcessedChunk]) -> str:
    return "".join(
        t.text for c in chunks for t in c.thoughts if t.kind in (ThoughtKind.RAW, ThoughtKind.SUMMARY)
    )


def test_a_clean_chunk_passes_as_itself() -> None:
    chunk = ProcessedChunk.text("nothing to see", serving_provider="x")
    assert _run([chunk]) == [chunk]
    assert _run([chunk])[0] is chunk


@settings(max_examples=200, deadline=None)
@given(cuts=CUTS, thought_cuts=CUTS)
def test_visible_and_reasoning_text_are_redacted_across_chunks(
    cuts: list[int], thought_cuts: list[int]
) -> None:
    visible = f"the key: {KEY}, the token {TOKEN}."
    reasoning = f"the user pasted {KEY} so I must not repeat it"
    parts = cut(visible, cuts)
    thoughts = cut(reasoning, thought_cuts)
    chunks = [
        ProcessedChunk.text(
            parts[i] if i < len(parts) else "",
            thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text=thoughts[i]),) if i < len(thoughts) else (),
        )
        for i in range(max(len(parts), len(thoughts)))
    ]
    out = _run(chunks)
    assert _visible(out) == REDACTOR.text(visible)
    assert _reasoning(out) == REDACTOR.text(reasoning)


def test_held_text_is_released_before_a_call_and_calls_and_errors_are_redacted() -> None:
    call = FunctionCall(name="lookup", args={"query": f"is {KEY} valid", "n": [TOKEN, 3]}, id="c1")
    error = ProviderError(type=ErrorType.API_ERROR, message=f"key {KEY} revoked", retryable=False)
    out = _run([ProcessedChunk.text("see sk-li"), ProcessedChunk.call(call), ProcessedChunk.fail(error)])
    assert [c.type for c in out] == [ChunkType.TEXT, ChunkType.TEXT, ChunkType.FUNCTION_CALL, ChunkType.ERROR]
    assert _visible(out) == "see sk-li"
    assert out[2].function_call is not None and out[2].function_call.args == {
        "query": f"is {REDACTED} valid",
        "n": [REDACTED, 3],
    }
    assert out[3].error is not None and out[3].error.message == f"key {REDACTED} revoked"


def test_each_chunk_notes_the_tail_a_stop_releases_as_reasoning() -> None:
    """What a graceful stop would release after each chunk: the redacted tails, as reasoning."""
    transducer = redact_secrets(REDACTOR).factory()
    thought = (ThoughtLogEntry(kind=ThoughtKind.RAW, text="they sent MTk4"),)
    [first] = transducer.feed(ProcessedChunk.text("one sk-live-Q7", thoughts=thought))
    assert first.content == "one " and first.metadata[TAIL] == ("sk-live-Q7", "MTk4")
    assert [t.text for t in first.thoughts] == ["they sent "]
    stop_chunk = tail_at_stop(first)
    assert stop_chunk is not None and stop_chunk.content == ""
    assert [t.text for t in stop_chunk.thoughts] == ["MTk4", "sk-live-Q7"]
    [second] = transducer.feed(
        ProcessedChunk.text(KEY[10:], thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text="N"),))
    )
    assert second.content == REDACTED and second.metadata[TAIL] == ("", "MTk4N")
    [third] = transducer.feed(
        ProcessedChunk.text("", thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text="!"),))
    )
    assert TAIL not in third.metadata and tail_at_stop(third) is None
    assert [t.text for t in third.thoughts] == ["MTk4N!"]


def test_an_entry_all_held_stays_empty() -> None:
    """A chunk whose reasoning is all held still carries an entry (it arms the spill guard)."""
    transducer = redact_secrets(REDACTOR).factory()
    [out] = transducer.feed(
        ProcessedChunk.text("hi", thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text="sk-"),))
    )
    assert [(t.kind, t.text) for t in out.thoughts] == [(ThoughtKind.RAW, "")]


def test_the_guard_is_linear_in_the_stream() -> None:
    """The stage over many chunks, each ending in a possible start of a secret: work counted."""
    thought = (ThoughtLogEntry(kind=ThoughtKind.RAW, text="hmm sk-li"),)
    chunk = ProcessedChunk.text("and sk-live-Q7 or MTk", thoughts=thought)

    def run(size: int) -> None:
        transducer = redact_secrets(REDACTOR).factory()
        for _ in range(size):
            transducer.feed(chunk)
        transducer.finish()

    assert_linear(run, 50)
