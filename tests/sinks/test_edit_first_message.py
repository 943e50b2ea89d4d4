"""Edit mode's first message: at the first safe boundary of the first words, in virtual time."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig
from rxcord.core.state import StreamState
from rxcord.core.types import DeliveryMode, SegmentKind, StreamStatus
from rxcord.sinks.edit_in_place import Preview, edit_previews, snapshot
from tests.marbles import marbles
from tests.sinks.test_edit_in_place import EditRecorder, _cut, _edit_run

EDIT = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)


def _state(delta: str) -> StreamState:
    return StreamState(index=1, delta=delta)


def _shown(values: list[object]) -> list[tuple[float, str]]:
    """(virtual time, text shown) of each preview that carries text."""
    out = []
    for record in values:
        if record.value.kind != "N":  # type: ignore[attr-defined]
            continue
        preview = record.value.value  # type: ignore[attr-defined]
        if isinstance(preview, Preview) and preview.count:
            text = snapshot(preview.deltas[: preview.count], EDIT)
            out.append((record.time - 200, text.rstrip()))  # type: ignore[attr-defined]
    return out


def test_the_first_preview_waits_for_the_first_sentence_end() -> None:
    lookup = {"a": _state("Hel"), "b": _state("lo th"), "c": _state("ere. W"), "d": _state("orld")}
    with marbles() as m:
        out = m.start(m.cold("-a-b-c-d|", lookup).pipe(edit_previews(EDIT)))
    assert _shown(out) == [(5.0, "Hello there."), (7.0, "Hello there. World")]


def test_the_first_preview_waits_for_a_line_end() -> None:
    lookup = {"a": _state("## Ti"), "b": _state("tle\nBo"), "c": _state("dy")}
    with marbles() as m:
        out = m.start(m.cold("-a-b-c|", lookup).pipe(edit_previews(EDIT)))
    assert _shown(out) == [(3.0, "## Title"), (5.0, "## Title\nBody")]


def test_the_first_preview_is_never_inside_a_code_block() -> None:
    lookup = {
        "a": _state("```py\nx = 1. y\n"),
        "b": _state("z = 2\n"),
        "c": _state("```\nDone. "),
        "d": _state("Next"),
    }
    with marbles() as m:
        out = m.start(m.cold("-a-b-c-d|", lookup).pipe(edit_previews(EDIT)))
    # The sentence end and the line ends inside the block are no boundary: its end is.
    assert _shown(out)[0] == (5.0, "```py\nx = 1. y\nz = 2\n```")


def test_without_a_sentence_end_the_first_words_are_shown_at_a_word_boundary() -> None:
    words = [f"word{i} " for i in range(20)]  # 6 characters each, no punctuation
    lookup = {chr(ord("a") + i): _state(word) for i, word in enumerate(words)}
    with marbles() as m:
        out = m.start(m.cold("-" + "-".join(lookup) + "|", lookup).pipe(edit_previews(EDIT)))
    time, text = _shown(out)[0]
    assert text == "word0 word1 word2 word3 word4 word5 word6"  # the first word end at 40 characters
    # The seventh delta (frame 1 + 2 x 6) completes it; the eighth commits the boundary (a
    # cut at the very end of the text fed may still be taken back by what follows).
    assert time == 15.0


def test_an_open_emphasis_is_not_a_first_word_boundary() -> None:
    text = "**" + " ".join(f"w{i}" for i in range(20)) + "** and more words here"
    with marbles() as m:
        lookup = {"a": _state(text[:30]), "b": _state(text[30:64]), "c": _state(text[64:])}
        out = m.start(m.cold("-a-b-c|", lookup).pipe(edit_previews(EDIT)))
    first = _shown(out)[0][1]
    assert first.count("**") == 2 and first.startswith("**w0") and first.endswith("w19**")


def test_nothing_before_the_end_without_a_boundary_the_final_text_still_comes() -> None:
    sink, _ = asyncio.run(_edit_run(["just", " a", " few"], EDIT))
    assert sink.visible() == ["just a few"]
    assert sink.shown == ["just a few"]  # no preview: the final text created the message
    assert sink.edit_calls == 0


def _first_messages(deltas: list[str]) -> tuple[str, list[str]]:
    sink: EditRecorder
    sink, _ = asyncio.run(_edit_run(deltas, EDIT))
    return (sink.shown[0] if sink.shown else ""), sink.visible()


_PIECES = st.sampled_from(
    [
        "Hello",
        " world",
        ". ",
        "\n",
        "\n\n",
        "```py\nx = 1. y\n```\n",
        "`a. b`",
        "**bold** ",
        "word ",
        "é",
        "🙂",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, min_size=1, max_size=30), cuts=st.lists(st.integers(0, 2_000), max_size=20))
def test_the_first_message_and_the_final_messages_do_not_depend_on_the_chunking(
    pieces: list[str], cuts: list[int]
) -> None:
    text = "".join(pieces)
    whole = _first_messages([text])
    split = _first_messages(_cut(text, cuts))
    assert split[1] == whole[1]  # the same final messages
    # The first message is the first words' boundary wherever the deltas were cut (a delta
    # holding the whole text reaches it at once; a split one at the delta that completes it).
    first_whole = whole[0]
    assert split[0] == first_whole or not _has_boundary(text)


def _has_boundary(text: str) -> bool:
    from rxcord.operators.markdown.first_cut import FirstCut

    return FirstCut(EDIT.message_limit).feed(text) is not None


def test_the_first_preview_comes_before_the_end_marker() -> None:
    lookup = {
        "a": _state("Hi. "),
        "b": _state("More"),
        "e": StreamState(index=2, status=StreamStatus.COMPLETED),
    }
    with marbles() as m:
        out = m.start(m.cold("-a-b-e|", lookup).pipe(edit_previews(EDIT)))
    kinds = [(r.time - 200, r.value.value.kind, r.value.value.count) for r in out if r.value.kind == "N"]  # type: ignore[attr-defined]
    # "Hi." is shown once the next delta commits its boundary, before the end marker.
    assert kinds[0] == (3.0, SegmentKind.PREVIEW, 1)
