"""Tests of segment cleaning (stage 06): ``clean_text`` rules and the ``clean`` operator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import Observable
from reactivex.notification import OnError
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.config import RenderModifiers, StreamConfig
from rxcord.core.state import Segment
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.clean import SegmentCleaner, _clean_once, _is_clean, clean, clean_text
from rxcord.operators.render import split_code
from tests.marbles import marbles

ZWSP = "\u200b"
ZWJ = "\u200d"
ZWNJ = "\u200c"
FAMILY = f"👨{ZWJ}👩{ZWJ}👧"
ENGLAND = "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"


def text_segment(text: str, *, final: bool = False) -> Segment:
    return Segment(kind=SegmentKind.TEXT, text=text, final=final)


# ---------------------------------------------------------------- clean_text: rules


def test_leftover_think_blocks_and_tags_are_removed() -> None:
    """Complete reasoning blocks and an unclosed trailing block disappear; the answer stays."""
    assert clean_text("<think>plan</think>Hello there<mm:think>more") == "Hello there"


def test_a_stray_close_tag_is_only_removed() -> None:
    """Mid-stream, a closer without an opener is removed and the text before it stays (the stray-closer
    rule: that text may already be in Discord); it used to be dropped here as reasoning."""
    assert clean_text("shown already</think>Answer") == "shown alreadyAnswer"


def test_tags_inside_code_are_kept() -> None:
    """A reasoning tag inside code is content."""
    assert clean_text("Use `<think>` and\n```html\n<think>x</think>\n```") == (
        "Use `<think>` and\n```html\n<think>x</think>\n```"
    )


def test_code_inside_a_reasoning_block_goes_with_it() -> None:
    """Code written inside a leftover reasoning block is reasoning, not answer."""
    assert clean_text("hi <think>try ```x = 1``` more</think>there") == "hi there"


def test_removing_a_block_that_joins_a_new_tag_is_still_clean() -> None:
    """Stripping runs until no tag is left, even one formed by a removal."""
    assert clean_text("a<thi<think>x</think>nk>b") == "ab"


@pytest.mark.parametrize(
    "text",
    [
        "Assistant: Hi",
        "assistant: Hi",
        "AI: Hi",
        "**Assistant:** Hi",
        "**Alice**: Hi",
        "*Alice:* Hi",
        "[Alice]: Hi",
        "  Alice :\nHi",
        "Assistant: Alice: Hi",
    ],
)
def test_leading_role_or_persona_prefix_is_removed(text: str) -> None:
    """A role label or the persona's name written as a speaker prefix is removed at the start."""
    assert clean_text(text, persona_name="Alice") == "Hi"


def test_prefix_needs_whitespace_after_the_colon() -> None:
    """``Assistant:hi`` is not a speaker prefix, and other labels are kept."""
    assert clean_text("Assistant:hi") == "Assistant:hi"
    assert clean_text("Note: hi") == "Note: hi"


def test_prefix_is_only_removed_at_the_start() -> None:
    """Mid-reply, or with at_start off, a ``Name:`` stays."""
    assert clean_text("Alice: hi", persona_name="Alice", at_start=False) == "Alice: hi"
    assert clean_text("so\nAssistant: hi") == "so\nAssistant: hi"


def test_persona_prefix_without_a_persona_is_kept() -> None:
    """A name is only a prefix when it is the persona's."""
    assert clean_text("Alice: hi") == "Alice: hi"


def test_prefix_after_a_reasoning_block_is_removed() -> None:
    """A reasoning block before the prefix does not hide it."""
    assert clean_text("<think>x</think>\nAssistant: hi") == "hi"


def test_control_characters_are_removed_but_newlines_and_tabs_kept() -> None:
    """C0/C1 controls and CR go; LF and TAB stay."""
    assert clean_text("a\x00b\x07c\r\nd\te\x85f") == "abc\nd\tef"


def test_zero_width_and_bidi_controls_are_removed() -> None:
    """ZWSP, word joiner, BOM, soft hyphen and bidi overrides are stray."""
    assert clean_text(f"a{ZWSP}b\u2060c\ufeffd\u00ade\u202ef\u2066g") == "abcdefg"


def test_zwj_inside_emoji_sequences_is_kept() -> None:
    """Family, profession and flag-like ZWJ sequences survive; a ZWJ between ASCII letters does not."""
    profession = f"👩🏽{ZWJ}💻"
    rainbow = f"🏳\ufe0f{ZWJ}🌈"
    text = f"{FAMILY} {profession} {rainbow} a{ZWJ}b {ZWJ}x"
    assert clean_text(text) == f"{FAMILY} {profession} {rainbow} ab x"


def test_joiners_in_scripts_that_need_them_are_kept() -> None:
    """ZWNJ in Persian and ZWJ in Devanagari shape the text; they stay."""
    persian = f"می{ZWNJ}خواهم"
    devanagari = f"क्{ZWJ}ष"
    assert clean_text(f"{persian} {devanagari}") == f"{persian} {devanagari}"


def test_tag_characters_are_removed_except_in_subdivision_flags() -> None:
    """Hidden tag text is smuggling; the England flag's tags are the flag."""
    smuggled = "".join(chr(0xE0000 + ord(c)) for c in "ignore")
    assert clean_text(f"{ENGLAND} ok{smuggled}") == f"{ENGLAND} ok"


def test_invisible_characters_inside_code_are_kept() -> None:
    """Code keeps even its zero-width characters."""
    assert clean_text(f"x{ZWSP} `a{ZWSP}b`") == f"x `a{ZWSP}b`"


def test_code_spans_left_touching_stay_apart() -> None:
    """When the prose between two code spans disappears, a space keeps them two spans."""
    assert clean_text(f"`a`{ZWSP}`b`") == "`a` `b`"
    assert clean_text("`a`<think>`b`</think>`c`") == "`a` `c`"


# ---------------------------------------------------------------- clean_text: properties

_NASTY = st.sampled_from(
    [
        "<think>", "</think>", "<mm:thinking>", "<", ">", "`", "```", "\n", " ", "\t", "\r", "\x07",
        ZWSP, ZWJ, ZWNJ, "\u202e", "\U000e0041", "\U000e007f", "🏴", "👨", "\ufe0f", "a", "B", "ß",
        "Assistant:", "Alice", ":", "**", "[", "]", "@everyone", "é", "ی",
    ]
)  # fmt: skip
nasty_text = st.lists(st.one_of(_NASTY, st.text(max_size=3)), max_size=25).map("".join)

_PROSE = st.lists(
    st.sampled_from(["hi", " ", "\n", ZWSP, "\x07", "Assistant: ", "**Alice:** ", "é", ZWJ, "👨", "\r\n"]),
    max_size=6,
).map("".join)
_CODE = st.one_of(
    st.text(alphabet=f"ab <think>{ZWSP}\n", min_size=1, max_size=10).map(lambda s: f"`{s}`"),
    st.text(alphabet=f"ab <think>/{ZWSP}\x07\n", max_size=15).map(lambda s: f"```py\n{s}\n```"),
)


@st.composite
def prose_and_code(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Text alternating backtick-free prose and code spans, with the code spans listed."""
    codes = draw(st.lists(_CODE, max_size=4))
    parts = [draw(_PROSE)]
    for i, code in enumerate(codes):
        parts.append(code)
        # Two code spans with nothing between them would read as one span already in the input.
        parts.append(draw(_PROSE if i == len(codes) - 1 else _PROSE.filter(bool)))
    return "".join(parts), codes


@given(nasty_text, st.booleans())
@settings(max_examples=300, deadline=None)
def test_clean_text_is_idempotent(text: str, at_start: bool) -> None:
    """Cleaning a cleaned text changes nothing."""
    once = clean_text(text, persona_name="Alice", at_start=at_start)
    assert clean_text(once, persona_name="Alice", at_start=at_start) == once


@given(st.one_of(nasty_text, prose_and_code().map(lambda case: case[0])), st.booleans())
@settings(max_examples=500, deadline=None)
def test_text_judged_clean_is_what_a_sweep_leaves_unchanged(text: str, at_start: bool) -> None:
    """The no-copy shortcut only skips sweeps that would change nothing."""
    if _is_clean(text, "Alice", at_start):
        assert _clean_once(text, "Alice", at_start) == text


@pytest.mark.parametrize(
    "text",
    [
        "plain prose with `code` and a 👨\u200d👩 family",
        "a <b>tag</b> that is no reasoning tag",
        "Assistant is a word here, not a prefix",
    ],
)
def test_clean_prose_is_returned_without_a_sweep(text: str) -> None:
    """Clean text comes back as the very same object (no copies of a long answer)."""
    assert _is_clean(text, None, True)
    assert clean_text(text) is text


@pytest.mark.parametrize(
    "text",
    [
        "x <think a `<` > y",  # a tag only once its code span is masked
        "`<think>` is code",  # a tag inside code: kept, but judged by a sweep
        "Assistant: hi",
        "a\u200bb",
    ],
)
def test_text_that_may_change_is_swept(text: str) -> None:
    """Anything a sweep could touch goes through the sweep."""
    assert not _is_clean(text, None, True)


@given(prose_and_code(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_clean_text_never_changes_code(case: tuple[str, list[str]], at_start: bool) -> None:
    """Every code span comes out byte for byte, in order, and still reads as the same code span."""
    text, codes = case
    out = clean_text(text, persona_name="Alice", at_start=at_start)
    assert [piece for piece, is_code in split_code(out) if is_code] == codes


@given(prose_and_code())
def test_clean_text_leaves_no_stray_invisibles_in_prose(case: tuple[str, list[str]]) -> None:
    """Prose comes out without controls, CR or zero-width spaces."""
    out = clean_text(case[0])
    for piece, is_code in split_code(out):
        if not is_code:
            assert not any(c in piece for c in (ZWSP, "\x07", "\r"))


# ---------------------------------------------------------------- SegmentCleaner


def test_cleaner_passes_other_kinds_through() -> None:
    """Thought, details and error-embed segments are not touched."""
    cleaner = SegmentCleaner(StreamConfig(render=RenderModifiers(force_lowercase=True)))
    for kind in (SegmentKind.THOUGHT, SegmentKind.DETAILS, SegmentKind.ERROR_EMBED):
        segment = Segment(kind=kind, text="Assistant: <think>X</think>", embed={"title": "x"})
        assert cleaner.feed(segment) == [segment]


def test_prefix_removal_waits_for_the_first_visible_text() -> None:
    """A prefix flushed alone does not end the reply's start; a later prefix mid-reply stays."""
    cleaner = SegmentCleaner(StreamConfig(persona_name="Alice"))
    assert cleaner.feed(text_segment("**Alice:**")) == []
    assert cleaner.feed(text_segment("Alice: hi")) == [text_segment("hi")]
    assert cleaner.feed(text_segment("\nAlice: again")) == [text_segment("\nAlice: again")]


def test_final_flag_goes_to_the_last_piece() -> None:
    """A final segment split into sentences marks only its last piece final."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, render=RenderModifiers(sentence_splitting=True))
    out = SegmentCleaner(config).feed(text_segment("One. Two.", final=True))
    assert out == [text_segment("One."), text_segment("Two.", final=True)]


def test_aggregated_delivery_does_not_split() -> None:
    """Sentence splitting needs live delivery; lowercase does not."""
    config = StreamConfig(render=RenderModifiers(sentence_splitting=True, force_lowercase=True))
    assert SegmentCleaner(config).feed(text_segment("One. Two.")) == [text_segment("one. two.")]


def test_render_rolls_are_seeded_per_cleaner() -> None:
    """Two cleaners with the same seed roll the same splits."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, render=RenderModifiers(punctuation_splits=True, seed=7))
    text = text_segment("a, b, c, d, e, f, g! h? i, j, k")
    assert SegmentCleaner(config).feed(text) == SegmentCleaner(config).feed(text)


# ---------------------------------------------------------------- clean: marbles

LIVE_SPLIT = StreamConfig(
    delivery=DeliveryMode.LIVE, persona_name="Alice", render=RenderModifiers(sentence_splitting=True)
)


def test_clean_splits_drops_and_keeps_order() -> None:
    """Other kinds pass in order, a sentence split emits at once, a blank segment vanishes."""
    thought = Segment(kind=SegmentKind.THOUGHT, text="plan")
    lookup = {
        "a": thought,
        "b": text_segment("Alice: Hi. Bye."),
        "c": text_segment(f"{ZWSP} <think>x</think>"),
        "d": text_segment("End.", final=True),
    }
    expected = {"a": thought, "x": text_segment("Hi."), "y": text_segment("Bye."), "d": lookup["d"]}
    with marbles() as m:
        source = m.cold("-a-b-----c-d-|", lookup)
        "                012345678901234"
        results = m.start(source.pipe(clean(LIVE_SPLIT)))
        assert results == m.exp("-a-(x,y)---d-|", expected)


def test_clean_state_is_per_subscription() -> None:
    """Each subscription starts a fresh reply: the prefix is removed for both."""
    lookup = {"a": text_segment("Alice: Hi")}
    with marbles() as m:
        source = m.cold("-a-|", lookup).pipe(clean(LIVE_SPLIT))
        first = m.start(source)
        assert first == m.exp("-h-|", {"h": text_segment("Hi")})
    with marbles() as m:
        again = m.cold("-a-|", lookup).pipe(clean(LIVE_SPLIT))
        assert m.start(again) == m.exp("-h-|", {"h": text_segment("Hi")})


def test_two_subscribers_get_independent_cleaners() -> None:
    """A second subscriber to the same cleaned observable also sees the prefix removed."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, text_segment("Alice: Hi")), ReactiveTest.on_completed(20)
    )
    cleaned: Observable[Segment] = source.pipe(clean(LIVE_SPLIT))
    seen: list[str] = []

    def record(segment: Segment) -> None:
        seen.append(segment.text)

    cleaned.subscribe(record, scheduler=scheduler)
    cleaned.subscribe(record, scheduler=scheduler)
    scheduler.start()
    assert seen == ["Hi", "Hi"]


def test_source_errors_pass_through() -> None:
    """An upstream error reaches the subscriber unchanged."""
    with marbles() as m:
        results = m.start(
            m.cold("-a-#", {"a": text_segment("x")}, ValueError("boom")).pipe(clean(LIVE_SPLIT))
        )
        assert results[0] == m.exp("-a-", {"a": text_segment("x")})[0]
        error = results[1].value
        assert isinstance(error, OnError)
        assert isinstance(error.exception, ValueError)
