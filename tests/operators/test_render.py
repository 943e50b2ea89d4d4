"""Tests of the render modifiers (stage 06): code detection, lowercase, sentence and punctuation splits."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import RenderModifiers
from rxcord.operators.render import (
    COMMA_SPLIT_P,
    EMPHASIS_SPLIT_P,
    SEMICOLON_SPLIT_P,
    apply_render,
    force_lowercase,
    protected_spans,
    punctuation_roll,
    split_code,
    split_sentences,
)


class _FixedRandom(random.Random):
    """A random source that always returns the same value and counts draws."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value
        self.draws = 0

    def random(self) -> float:
        self.draws += 1
        return self.value


ALWAYS = 0.0  # below every split probability
NEVER = 0.999999

# ---------------------------------------------------------------- strategies

_PROSE_ALPHABET = "abcXYZÄéİß 0123456789.,!?'-"
prose_words = st.text(alphabet=_PROSE_ALPHABET, min_size=1, max_size=12).filter(lambda s: s.strip() != "")
snowflakes = st.integers(min_value=1, max_value=10**19).map(str)
names = st.text(alphabet="abcABC_019", min_size=2, max_size=8)
urls = st.builds(
    lambda host, path: f"https://{host}.com/{path}",
    st.text(alphabet="abcDEF0", min_size=1, max_size=6),
    st.text(alphabet="abcDEF0_/", min_size=0, max_size=8).map(lambda p: p + "Z"),
)
inline_code = st.text(alphabet="abcXYZ .!<>@:/", min_size=1, max_size=10).map(lambda s: f"`{s}`")
fenced_code = st.text(alphabet="abcXYZ .!\n<>@", max_size=20).map(lambda s: f"```py\n{s}\n```")
mentions = st.one_of(
    snowflakes.map(lambda i: f"<@{i}>"),
    snowflakes.map(lambda i: f"<@&{i}>"),
    snowflakes.map(lambda i: f"<#{i}>"),
    st.builds(lambda n, i: f"<:{n}:{i}>", names, snowflakes),
    st.builds(lambda n, i: f"<a:{n}:{i}>", names, snowflakes),
    names.map(lambda n: f"@{n}"),
    snowflakes.map(lambda i: f"<t:{i}:R>"),
)
protected_tokens = st.one_of(urls, inline_code, fenced_code, mentions)
tagged_pieces = st.lists(
    st.one_of(prose_words.map(lambda w: (w, False)), protected_tokens.map(lambda t: (t, True))), max_size=12
)

_MESSY = "ab .!?…\n\n  \t`'\")*e.g.3.14"
messy_text = st.lists(
    st.one_of(
        st.text(alphabet=_MESSY, max_size=6),
        st.sampled_from(
            ["e.g. ", "Dr. ", "1. ", "J. ", "https://x.com/a.b. ", "```\na. b\n\nc\n```", "`x. y`"]
        ),
    ),
    max_size=15,
).map("".join)


# ---------------------------------------------------------------- split_code


def test_split_code_finds_inline_and_fenced_code() -> None:
    """Inline spans and fenced blocks (with a language tag) are code; the rest is prose."""
    text = "a `b` c ```py\nx = 1\n``` d"
    assert split_code(text) == [
        ("a ", False),
        ("`b`", True),
        (" c ", False),
        ("```py\nx = 1\n```", True),
        (" d", False),
    ]


def test_unclosed_fence_runs_to_the_end() -> None:
    """An unclosed fence makes the rest of the text code."""
    assert split_code("a ```py\nx = 1") == [("a ", False), ("```py\nx = 1", True)]


def test_unmatched_backtick_is_literal() -> None:
    """A single backtick without a partner stays prose."""
    assert split_code("it`s ok") == [("it`s ok", False)]


def test_double_backtick_span_may_contain_single_backticks() -> None:
    """A ``...`` span closes only at a run of exactly two backticks."""
    assert split_code("x ``a ` b`` y") == [("x ", False), ("``a ` b``", True), (" y", False)]


@given(st.text(alphabet="ab`\n ", max_size=40))
def test_split_code_pieces_concatenate_to_the_text(text: str) -> None:
    """The pieces always concatenate back to the input."""
    assert "".join(piece for piece, _ in split_code(text)) == text


def test_protected_spans_cover_urls_tokens_and_mentions() -> None:
    """URLs, Discord tokens and @names are protected; trailing sentence punctuation is not part of a URL."""
    text = "see https://x.com/a_(b). <@1> <:Pepe:2> @Alice."
    got = [text[s:e] for s, e in protected_spans(text)]
    assert got == ["https://x.com/a_(b)", "<@1>", "<:Pepe:2>", "@Alice"]


# ---------------------------------------------------------------- force_lowercase


def test_force_lowercase_lowers_prose_only() -> None:
    """Prose is lowercased; code, URLs, mentions, custom emoji and timestamps keep their case."""
    text = "Hello WORLD `CODE` https://Ex.com/Path <@123> <:PepeHappy:99> <t:1:R> @Alice OK"
    assert force_lowercase(text) == (
        "hello world `CODE` https://Ex.com/Path <@123> <:PepeHappy:99> <t:1:R> @Alice ok"
    )


def test_force_lowercase_keeps_fenced_code() -> None:
    """A fenced block keeps its case even across lines."""
    assert force_lowercase("Run:\n```PY\nX = 1\n```\nDone") == "run:\n```PY\nX = 1\n```\ndone"


@given(tagged_pieces)
def test_force_lowercase_never_changes_protected_tokens(pieces: list[tuple[str, bool]]) -> None:
    """Every code span, URL, mention and emoji survives unchanged while prose is lowercased."""
    text = " ".join(piece for piece, _ in pieces)
    expected = " ".join(piece if protected else piece.lower() for piece, protected in pieces)
    assert force_lowercase(text) == expected


@given(st.text(max_size=60))
def test_force_lowercase_is_idempotent(text: str) -> None:
    """Lowercasing twice changes nothing more."""
    once = force_lowercase(text)
    assert force_lowercase(once) == once


# ---------------------------------------------------------------- split_sentences


def test_split_sentences_at_terminators() -> None:
    """Each sentence becomes a message; the whitespace between them is dropped."""
    assert split_sentences("Hi there. How are you? Great!  Bye") == [
        "Hi there.",
        "How are you?",
        "Great!",
        "Bye",
    ]


def test_split_sentences_keeps_decimals_and_abbreviations() -> None:
    """Decimals, e.g., Dr., dotted abbreviations and initials do not end a sentence."""
    text = "Pi is 3.14 e.g. in math. Dr. Who met J. Smith in the U.S. today. Done"
    assert split_sentences(text) == [
        "Pi is 3.14 e.g. in math.",
        "Dr. Who met J. Smith in the U.S. today.",
        "Done",
    ]


def test_number_abbreviation_only_before_a_number() -> None:
    """ "No. 5" stays together, but a sentence ending in "no." still ends."""
    assert split_sentences("Take No. 5 now. I said no. Then left") == [
        "Take No. 5 now.",
        "I said no.",
        "Then left",
    ]


def test_split_sentences_never_splits_code_or_urls() -> None:
    """Periods and blank lines inside code, and a URL's dots, never split."""
    text = "Look at `a. b` here. Code:\n```py\nx = 1. \n\ny = 2\n```\nSee https://x.com/a.b. Ok"
    assert split_sentences(text) == [
        "Look at `a. b` here.",
        "Code:\n```py\nx = 1. \n\ny = 2\n```\nSee https://x.com/a.b.",
        "Ok",
    ]


def test_split_sentences_at_paragraph_breaks() -> None:
    """A blank line splits even without punctuation; a single newline does not."""
    assert split_sentences("Title\nline two\n\nNext para") == ["Title\nline two", "Next para"]


def test_list_markers_are_not_sentences() -> None:
    """An ordered-list marker at a line start does not end a sentence."""
    assert split_sentences("Steps:\n1. Open it.\n2. Close it.") == ["Steps:\n1. Open it.", "2. Close it."]


def test_closers_stay_with_their_sentence() -> None:
    """Closing quotes, brackets and emphasis after the terminator belong to the sentence."""
    assert split_sentences('He said "go." **Really.** Fine') == ['He said "go."', "**Really.**", "Fine"]


def test_whitespace_only_text_has_no_sentences() -> None:
    """Blank text gives no messages."""
    assert split_sentences(" \n\t ") == []


@given(messy_text)
@settings(max_examples=300)
def test_sentences_join_back_to_the_input(text: str) -> None:
    """Pieces appear in order in the input, separated only by whitespace, and are never blank."""
    pieces = split_sentences(text)
    pos = 0
    for piece in pieces:
        assert piece and piece == piece.strip()
        found = text.find(piece, pos)
        assert found >= 0
        assert text[pos:found].strip() == ""
        pos = found + len(piece)
    assert text[pos:].strip() == ""


@given(st.lists(prose_words, max_size=4), fenced_code, st.lists(prose_words, max_size=4))
def test_a_code_block_is_never_split(before: list[str], code: str, after: list[str]) -> None:
    """A fenced block always ends up whole inside one message."""
    text = ". ".join([*before, code, *after])
    assert any(code in piece for piece in split_sentences(text))


# ---------------------------------------------------------------- punctuation_roll


def test_semicolons_are_stripped_without_a_split() -> None:
    """A clause semicolon disappears; code and a winking ;) keep theirs."""
    rng = _FixedRandom(NEVER)
    assert punctuation_roll("i went home; it was late ;) `a; b`", rng) == [
        "i went home it was late ;) `a; b`"
    ]


def test_every_candidate_splits_when_the_rolls_say_so() -> None:
    """With rolls below every probability, commas, semicolons, ! and ? all end a message."""
    rng = _FixedRandom(ALWAYS)
    assert punctuation_roll("yeah, sure; wow! really? ok", rng) == ["yeah", "sure", "wow!", "really?", "ok"]
    assert rng.draws == 4


def test_no_candidate_splits_when_the_rolls_say_no() -> None:
    """With rolls above every probability, only the semicolon changes."""
    rng = _FixedRandom(NEVER)
    assert punctuation_roll("yeah, sure; wow! really? ok", rng) == ["yeah, sure wow! really? ok"]


def test_commas_in_numbers_code_and_urls_are_not_candidates() -> None:
    """Only a comma followed by whitespace in prose is rolled."""
    rng = _FixedRandom(ALWAYS)
    text = "1,000 `a, b` https://x.com/a,b ok"
    assert punctuation_roll(text, rng) == [text]
    assert rng.draws == 0


def test_probabilities_are_documented_constants() -> None:
    """The split probabilities are proper probabilities."""
    for p in (COMMA_SPLIT_P, SEMICOLON_SPLIT_P, EMPHASIS_SPLIT_P):
        assert 0.0 < p < 1.0


@given(st.text(alphabet="ab ,;!?`\n", max_size=40), st.integers(0, 2**32))
def test_punctuation_roll_is_deterministic_for_a_seed(text: str, seed: int) -> None:
    """The same seed gives the same messages; no piece is blank or keeps a clause semicolon."""
    first = punctuation_roll(text, random.Random(seed))
    assert first == punctuation_roll(text, random.Random(seed))
    for piece in first:
        assert piece.strip() == piece and piece
    if "`" not in text:
        assert not any(re.search(r";(\s|$)", piece) for piece in first)


# ---------------------------------------------------------------- apply_render


def test_aggregated_mode_only_lowercases() -> None:
    """Without live delivery, splits are off even when enabled; lowercase still applies."""
    mods = RenderModifiers(force_lowercase=True, sentence_splitting=True, punctuation_splits=True)
    assert apply_render("Hi. Bye, Now", mods, live=False, rng=_FixedRandom(ALWAYS)) == ["hi. bye, now"]


def test_live_mode_splits_sentences_then_lowercases() -> None:
    """Live delivery splits sentences and lowercases each message."""
    mods = RenderModifiers(force_lowercase=True, sentence_splitting=True)
    assert apply_render("Hi @Bob. See `CODE`.", mods, live=True, rng=random.Random(0)) == [
        "hi @Bob.",
        "see `CODE`.",
    ]


def test_live_mode_applies_punctuation_rolls() -> None:
    """Punctuation splits run in live mode."""
    mods = RenderModifiers(punctuation_splits=True)
    assert apply_render("yeah, ok", mods, live=True, rng=_FixedRandom(ALWAYS)) == ["yeah", "ok"]


@pytest.mark.parametrize("live", [False, True])
def test_blank_text_renders_to_nothing(live: bool) -> None:
    """Blank text gives no messages in either mode."""
    assert apply_render(" \n", RenderModifiers(), live=live, rng=random.Random(0)) == []


def test_no_modifiers_keep_the_text() -> None:
    """With every modifier off the text passes through unchanged."""
    assert apply_render(" Hi. There ", RenderModifiers(), live=True, rng=random.Random(0)) == [" Hi. There "]
