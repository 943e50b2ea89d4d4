"""Tests for the verbatim tool-call parser (stage 03, Custom endpoints)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import FunctionType
from typing import Any, cast

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import operators as ops
from reactivex.testing import ReactiveTest

from rxcord.core.types import (
    ChunkType,
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.operators.verbatim_tools import MAX_CALL_CHARS, VerbatimToolParser, verbatim_tools
from tests.marbles import marbles
from tests.strategies import cut as split_at
from tests.work import assert_linear

TOOLS = ("generate_image", "web_search")
Item = str | FunctionCall


def call(name: str = "generate_image", seq: int = 0, /, **args: Any) -> FunctionCall:
    return FunctionCall(name=name, args=args, id=f"verbatim_{seq}")


def merged(items: Iterable[Item]) -> list[Item]:
    """Adjacent text pieces joined, empty pieces dropped."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, str):
            if not item:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += item
                continue
        out.append(item)
    return out


def run(chunks: Sequence[str] | str, names: Iterable[str] = TOOLS) -> list[Item]:
    """Feed *chunks* to a fresh parser, finish it, merge the text."""
    parser = VerbatimToolParser(names)
    items: list[Item] = []
    for chunk in [chunks] if isinstance(chunks, str) else chunks:
        items += parser.feed(chunk)
    items += parser.finish()
    return merged(items)


def every_split(text: str) -> list[list[str]]:
    """The text fed whole, one character at a time, and cut at every single position."""
    return [[text], list(text)] + [[text[:k], text[k:]] for k in range(1, len(text))]


def assert_split_invariant(text: str, expected: list[Item]) -> None:
    for chunks in every_split(text):
        assert run(chunks) == expected, chunks


# --- the seed's examples ---------------------------------------------------------------------


def test_seed_inline_code_call_after_narration() -> None:
    """Seed: narration is text and the backticked call is recovered, backticks consumed."""
    text = 'Fine. `generate_image({"prompt":"a cat","mode":"txt2img"})`'
    expected: list[Item] = ["Fine. ", call(prompt="a cat", mode="txt2img")]
    assert run(text) == expected
    assert_split_invariant(text, expected)


def test_seed_bare_call_after_narration() -> None:
    """Seed: the same call with no backticks is recovered too."""
    text = 'Fine. generate_image({"prompt":"a cat","mode":"txt2img"})'
    assert run(text) == ["Fine. ", call(prompt="a cat", mode="txt2img")]


def test_seed_name_mentioned_in_prose_is_released_as_text() -> None:
    """Seed: `generate_image (it makes art)` fails validation and is released unchanged."""
    text = "You can use generate_image (it makes art) for that."
    assert run(text) == [text]
    assert_split_invariant(text, [text])


def test_seed_close_paren_inside_json_string_does_not_close_early() -> None:
    """Seed: the scan is quote-aware, a `)` inside a JSON string is part of the value."""
    text = 'generate_image({"prompt": "a cat :) (smiling)"}) done'
    assert run(text) == [call(prompt="a cat :) (smiling)"), " done"]


def test_seed_only_exposed_tool_names_trigger() -> None:
    """Seed: a well-formed call of a tool that is not exposed stays text."""
    text = 'delete_everything({"really": true})'
    assert run(text) == [text]


def test_seed_prose_is_emitted_before_the_call_resolves() -> None:
    """Seed: narration leaves at once; the call resolves on a later chunk."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed('Fine. `generate_image({"prompt":') == ["Fine. "]
    assert parser.feed(' "a cat"') == []
    assert parser.feed("})` there.") == [call(prompt="a cat"), " there."]
    assert parser.finish() == []


def test_seed_call_resolves_at_stream_flush() -> None:
    """Seed: a call whose closing never comes is resolved at finish()."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed('Sure.\n```json\ngenerate_image({"prompt": "a cat"})') == ["Sure.\n"]
    assert parser.finish() == [call(prompt="a cat")]


# --- body validation -------------------------------------------------------------------------


def test_empty_parentheses_mean_empty_arguments() -> None:
    """`name()` is a call with `{}` arguments."""
    assert run("web_search()") == [call("web_search")]
    assert run("web_search(  \n )") == [call("web_search")]


def test_name_with_prose_in_parentheses_is_text() -> None:
    """`generate_image(it makes art)` fails at the first non-blank character."""
    text = "generate_image(it makes art) is nice"
    assert run(text) == [text]
    assert_split_invariant(text, [text])


def test_name_used_as_a_word_is_text() -> None:
    """`use generate_image to draw` has no anchor and passes through."""
    assert run("use generate_image to draw") == ["use generate_image to draw"]


def test_name_followed_by_space_then_json_is_not_an_anchor() -> None:
    """The anchor is `name(` with no space, so `name ({...})` stays text."""
    text = 'generate_image ({"prompt": "x"})'
    assert run(text) == [text]


def test_suffix_of_a_longer_identifier_does_not_trigger() -> None:
    """`my_generate_image(` is another identifier, not an anchor."""
    text = 'my_generate_image({"prompt": "x"}) and regenerate_image({})'
    assert run(text) == [text]
    assert_split_invariant(text, [text])


def test_dotted_or_hyphenated_prefix_does_not_trigger() -> None:
    """`client.generate_image(` and `x-generate_image(` are qualified names, not anchors."""
    for text in ['client.generate_image({"prompt": "x"})', 'x-generate_image({"prompt": "x"})']:
        assert run(text) == [text]


def test_name_followed_by_identifier_chars_is_not_an_anchor() -> None:
    """`generate_images(` is a different name."""
    text = 'generate_images({"prompt": "x"})'
    assert run(text) == [text]


def test_non_object_json_body_is_text() -> None:
    """Arrays, strings and numbers are not argument objects."""
    for text in ["generate_image([1, 2])", 'generate_image("a cat")', "generate_image(42)"]:
        assert run(text) == [text]


def test_second_argument_is_text() -> None:
    """A JSON object followed by anything but `)` fails (arity)."""
    text = 'generate_image({"prompt": "x"}, {"n": 2})'
    assert run(text) == [text]


def test_invalid_json_object_is_text() -> None:
    """A balanced but invalid object fails at `)` and is released unchanged."""
    for text in ['generate_image({"prompt": tru})', 'generate_image({"a": 1,})', "generate_image({])"]:
        assert run(text) == [text], text


def test_python_dict_and_keyword_style_are_text() -> None:
    """Only JSON is accepted: single quotes and keyword arguments fail."""
    for text in ["generate_image({'prompt': 'x'})", 'generate_image(prompt="x")']:
        assert run(text) == [text], text


def test_prose_after_open_brace_fails_early_without_holding() -> None:
    """Letters JSON cannot hold outside strings end the candidate at once, not at the bound."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("generate_image({ hmm, let me think") == ["generate_image({ hmm, let me think"]


def test_escaped_quote_inside_string() -> None:
    """A `\\"` does not end the string, so the parenthesis after it is still inside."""
    text = r'generate_image({"prompt": "say \")\" now", "n": 1})'
    expected: list[Item] = [call(prompt='say ")" now', n=1)]
    assert run(text) == expected
    assert_split_invariant(text, expected)


def test_escaped_backslash_before_closing_quote() -> None:
    """`"\\\\"` ends the string at its second quote."""
    text = r'generate_image({"path": "C:\\", "n": [1, {"x": null}]})'
    assert run(text) == [call(path="C:\\", n=[1, {"x": None}])]


def test_braces_and_brackets_inside_strings_do_not_count() -> None:
    """Brackets inside strings do not change the depth."""
    text = 'generate_image({"prompt": "}}]] {"})!'
    assert run(text) == [call(prompt="}}]] {"), "!"]


def test_literal_newline_inside_string_is_accepted() -> None:
    """Models often write raw newlines in long values; JSON is parsed leniently there."""
    assert run('generate_image({"prompt": "line1\nline2"})') == [call(prompt="line1\nline2")]


def test_nested_values_and_all_json_literals() -> None:
    """Numbers with exponents, booleans, null and nesting are valid arguments."""
    text = 'web_search({"q": "x", "n": -1.5e+3, "safe": false, "r": true, "z": null, "o": {"a": [1]}})'
    assert run(text) == [call("web_search", q="x", n=-1500.0, safe=False, r=True, z=None, o={"a": [1]})]


# --- wrappers --------------------------------------------------------------------------------


def test_fenced_json_block_is_consumed() -> None:
    """A fenced block holding only the call is recovered without leaking the fence."""
    text = 'Drawing it now.\n```json\ngenerate_image({"prompt": "a cat"})\n```\nEnjoy!'
    expected: list[Item] = ["Drawing it now.\n", call(prompt="a cat"), "\nEnjoy!"]
    assert run(text) == expected
    assert_split_invariant(text, expected)


def test_fenced_block_without_info_string_and_crlf() -> None:
    """A bare ``` fence, CRLF line ends and indentation are accepted."""
    text = '```\r\n  generate_image({"prompt": "a cat"})\r\n```'
    assert run(text) == [call(prompt="a cat")]


def test_longer_fence_needs_matching_closer() -> None:
    """A four-backtick fence closes with four backticks."""
    text = '````json\ngenerate_image({"prompt": "x"})\n````'
    assert run(text) == [call(prompt="x")]


def test_several_calls_in_one_fence() -> None:
    """A fence may hold several calls separated by whitespace; all are recovered in order."""
    text = '```json\ngenerate_image({"prompt": "x"})\nweb_search({"q": "y"})\n```'
    expected: list[Item] = [call(prompt="x"), call("web_search", 1, q="y")]
    assert run(text) == expected
    assert_split_invariant(text, expected)


def test_fence_with_other_content_is_a_code_example() -> None:
    """A fence holding anything besides calls is released as text, all of it."""
    text = '```json\ngenerate_image({"prompt": "x"})\nThis draws a cat.\n```'
    assert run(text) == [text]
    assert_split_invariant(text, [text])


def test_fence_with_unknown_second_name_is_text() -> None:
    """A second call in the fence must use an exposed name too."""
    text = '```\ngenerate_image({"prompt": "x"})\nrm_rf({})\n```'
    assert run(text) == [text]


def test_inline_span_with_more_content_is_text() -> None:
    """An inline span must close right after `)`, else it is an example in prose."""
    text = 'Try `generate_image({"prompt": "x"}) later` maybe'
    assert run(text) == [text]
    assert_split_invariant(text, [text])


def test_double_backtick_span() -> None:
    """A ``double-backtick`` span wraps a call like a single one."""
    assert run('ok ``generate_image({"prompt": "x"})`` ok') == ["ok ", call(prompt="x"), " ok"]


def test_inline_span_unclosed_at_end_is_resolved() -> None:
    """At stream end a call missing only its closing backtick is recovered."""
    assert run('Fine. `generate_image({"prompt": "x"})') == ["Fine. ", call(prompt="x")]


def test_ordinary_code_spans_pass_through() -> None:
    """Backticks around other code are text, whatever the chunking."""
    text = "Use `print(x)` or\n```python\nprint(1)\n```\nthen ``` done"
    assert run(text) == [text]
    assert_split_invariant(text, [text])


# --- several calls, failures followed by calls -----------------------------------------------


def test_multiple_calls_in_one_reply_in_order() -> None:
    """All calls of a reply are recovered, in order, with the prose between them."""
    text = 'First generate_image({"prompt": "a"}), then `web_search({"q": "b"})` and generate_image()'
    expected: list[Item] = [
        "First ",
        call(prompt="a"),
        ", then ",
        call("web_search", 1, q="b"),
        " and ",
        call("generate_image", 2),
    ]
    assert run(text) == expected
    assert_split_invariant(text, expected)


def test_anchor_right_after_a_failed_one_is_found() -> None:
    """Scanning resumes at the failing character, so a call nested in a mention is found."""
    assert run("generate_image(generate_image({}))") == ["generate_image(", call(), ")"]


def test_ids_are_deterministic_per_parser() -> None:
    """Ids count from verbatim_0 in every parser."""
    for _ in range(2):
        items = run("web_search() web_search()")
        assert [item.id for item in items if isinstance(item, FunctionCall)] == ["verbatim_0", "verbatim_1"]


def test_overlapping_tool_names() -> None:
    """With tools `gen` and `generate_image`, each anchors on its own name."""
    names = ("gen", "generate_image")
    assert run('gen() generate_image({"a": 1})', names) == [
        call("gen"),
        " ",
        call("generate_image", 1, a=1),
    ]
    assert run(["ge", "n", "erate_image()"], names) == [call("generate_image")]


def test_tool_names_with_regex_characters_are_literal() -> None:
    """Names are escaped: `a.b` does not match `axb`."""
    assert run("axb() a.b()", ["a.b"]) == ["axb() ", call("a.b")]


# --- holding ---------------------------------------------------------------------------------


def test_trailing_partial_name_is_held_then_released() -> None:
    """`gen` at a chunk end is held until the next chunk shows it is not a call."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("I will gen") == ["I will "]
    assert parser.feed("tly help") == ["gently help"]


def test_trailing_complete_name_is_held() -> None:
    """A complete name at a chunk end is held until the next character."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("use generate_image") == ["use "]
    assert parser.feed(" now") == ["generate_image now"]


def test_trailing_partial_name_inside_identifier_is_not_held() -> None:
    """`my_gen` cannot become an anchor, so nothing is held."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("call my_gen") == ["call my_gen"]


def test_trailing_backtick_and_fence_opener_are_held() -> None:
    """A backtick run or an open fence line at a chunk end may be a call wrapper: held."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("Look: `") == ["Look: "]
    assert parser.feed("x` and\n```js") == ["`x` and\n"]
    assert parser.feed("on\n") == []
    assert parser.feed('{"a": 1}') == ['```json\n{"a": 1}']


def test_text_without_candidates_is_released_immediately() -> None:
    """Prose with no backtick and no name prefix at its end leaves at once, unchanged."""
    parser = VerbatimToolParser(TOOLS)
    for chunk in ["Hello", " there, ", "how are you?\n", "Fine (really)."]:
        assert parser.feed(chunk) == [chunk]
    assert parser.finish() == []


def test_held_partial_is_released_at_finish() -> None:
    """A held partial name comes out unchanged at stream end."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("the end: web_se") == ["the end: "]
    assert parser.finish() == ["web_se"]


def test_no_tool_names_means_pass_through() -> None:
    """Without tools the parser releases everything as is."""
    parser = VerbatimToolParser([])
    assert parser.feed('generate_image({"a": 1}) `') == ['generate_image({"a": 1}) `']
    assert parser.finish() == []


def test_names_outside_the_identifier_alphabet_are_ignored() -> None:
    """A name with a space cannot be anchored reliably and is ignored."""
    assert run("my tool()", ["my tool"]) == ["my tool()"]


def test_parser_is_reusable_after_finish() -> None:
    """After finish() the parser starts clean and keeps counting ids."""
    parser = VerbatimToolParser(TOOLS)
    assert parser.feed("web_search(") == []
    assert parser.finish() == ["web_search("]
    assert parser.feed("web_search()") == [call("web_search")]


# --- stream end ------------------------------------------------------------------------------


def test_call_missing_only_its_parenthesis_resolves_at_end() -> None:
    """`name({...})` without the final `)` is recovered at finish()."""
    assert run('generate_image({"prompt": "x"} ') == [call(prompt="x")]


def test_incomplete_calls_at_end_are_text() -> None:
    """An unbalanced object, an open string or a bare `name(` at the end is released as text."""
    for text in ['generate_image({"prompt": "x"', 'generate_image({"prompt": "x', "generate_image(  "]:
        assert run(text) == [text], text


def test_fence_with_incomplete_second_call_at_end_is_text() -> None:
    """A fence is all or nothing: an incomplete second call releases it all."""
    text = "```\ngenerate_image({})\nweb_sea"
    assert run(text) == [text]


# --- bounds ----------------------------------------------------------------------------------


def test_oversized_call_is_released_at_the_bound() -> None:
    """A candidate over MAX_CALL_CHARS is released as text, and scanning goes on after it."""
    head = 'generate_image({"prompt": "'
    filler = "x" * (MAX_CALL_CHARS - len(head))
    text = head + filler + '"}) then web_search()'
    parser = VerbatimToolParser(TOOLS)
    items = merged(parser.feed(text[:1000]) + parser.feed(text[1000:]) + parser.finish())
    assert items == [head + filler + '"}) then ', call("web_search")]
    assert run(text) == items


def test_call_just_under_the_bound_is_recovered() -> None:
    """A candidate of exactly MAX_CALL_CHARS characters is still a call."""
    head = 'generate_image({"prompt": "'
    text = head + "x" * (MAX_CALL_CHARS - len(head) - 3) + '"})'
    assert len(text) == MAX_CALL_CHARS
    chunks = [text[k : k + 4096] for k in range(0, len(text), 4096)]
    assert run(chunks) == [call(prompt="x" * (MAX_CALL_CHARS - len(head) - 3))]


def test_name_too_long_inside_fence_fails_deterministically() -> None:
    """A long identifier after a fenced call releases the fence as text under any split."""
    text = "```\nweb_search()\n" + "w" * 40 + "()\n```"
    assert_split_invariant(text, [text])


# --- performance -----------------------------------------------------------------------------


def test_prose_in_tiny_chunks_holds_little_and_runs_linearly() -> None:
    """Prose in 3-character deltas: a bounded hold, and four times the text is four times the work.

    Work is counted in bytecode instructions (``tests.work``), not timed.
    """
    line = "The generator draws `code` and gen images, web pages, ``` fences.\n"

    def run(copies: int) -> None:
        prose = line * 50 * copies
        parser = VerbatimToolParser(TOOLS)
        out: list[Item] = []
        for k in range(0, len(prose), 3):
            out += parser.feed(prose[k : k + 3])
            assert len(parser._tail) < 100  # the held suffix never grows
        out += parser.finish()
        assert merged(out) == [prose]

    assert_linear(run, 1)


def test_long_call_in_one_character_deltas_is_linear() -> None:
    """A call body fed one character at a time is never rescanned: 4x the body is 4x the work."""

    def run(copies: int) -> None:
        body = '{"prompt": "' + 'a (b) \\" c ' * 300 * copies + '"}'
        parser = VerbatimToolParser(TOOLS)
        out: list[Item] = []
        for ch in f"generate_image({body})":
            out += parser.feed(ch)
        out += parser.finish()
        assert out == [call(prompt='a (b) " c ' * 300 * copies)]

    assert_linear(run, 1)


# --- properties ------------------------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "generate_image",
        "gen",
        "web_search",
        "web_",
        "my_",
        ".",
        "-",
        "(",
        ")",
        "()",
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        "`",
        "``",
        "```",
        "```json\n",
        "\n",
        "\r\n",
        " ",
        ",",
        ":",
        "1",
        "true",
        "x",
        "'",
        "it makes art",
        '{"prompt": "a cat"}',
        '{"p": "b)("}',
        'generate_image({"prompt": "a cat"})',
        "`web_search()`",
        "Fine. ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(_FRAGMENTS, max_size=24), cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_any_chunking_gives_the_same_text_and_calls(parts: list[str], cuts: list[int]) -> None:
    """Split invariance: any chunking of the same content gives the same merged output."""
    text = "".join(parts)
    assert run(split_at(text, cuts)) == run(text)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_FRAGMENTS, max_size=16))
def test_one_character_chunks_give_the_same_output(parts: list[str]) -> None:
    """Split invariance at its finest: one character per delta."""
    text = "".join(parts)
    assert run(list(text)) == run(text)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_FRAGMENTS, max_size=24), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_text_is_conserved_when_no_call_is_recovered(parts: list[str], cuts: list[int]) -> None:
    """When no call is recovered, the released text is exactly the input."""
    text = "".join(parts)
    items = run(split_at(text, cuts))
    if not any(isinstance(item, FunctionCall) for item in items):
        assert "".join(item for item in items if isinstance(item, str)) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text(), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_text_without_tool_names_passes_through_unchanged(text: str, cuts: list[int]) -> None:
    """Arbitrary text that never contains a tool name comes out exactly as it went in."""
    names = ("generate_image",)
    if "generate_image" in text:
        return
    assert run(split_at(text, cuts), names) == ([text] if text else [])


# --- the operator ----------------------------------------------------------------------------


def T(content: str, **kwargs: Any) -> ProcessedChunk:
    return ProcessedChunk.text(content, **kwargs)


def C(function_call: FunctionCall, **kwargs: Any) -> ProcessedChunk:
    return ProcessedChunk.call(function_call, **kwargs)


def test_operator_emits_prose_before_the_call_in_order() -> None:
    """One input chunk with prose and a call gives a text chunk, then a call chunk."""
    with marbles() as m:
        src = m.cold("-a-----b-|", {"a": T('Fine. `generate_image({"prompt": "x"})`'), "b": T(" ok")})
        "             0123456789"
        expected = m.exp("-(A,B)-C-|", {"A": T("Fine. "), "B": C(call(prompt="x")), "C": T(" ok")})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_call_completes_on_a_later_chunk() -> None:
    """Prose leaves with the first chunk; the call comes with the chunk that closes it."""
    lookup = {"a": T('Fine. `generate_image({"prompt":'), "b": T(' "a cat"'), "c": T("})` ok")}
    with marbles() as m:
        src = m.cold("-a-b-c-----|", lookup)
        "             012345678901"
        expected = m.exp("-A---(C,D)-|", {"A": T("Fine. "), "C": C(call(prompt="a cat")), "D": T(" ok")})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_completion_resolves_a_pending_call() -> None:
    """At completion the held call is resolved and emitted before on_completed."""
    lookup = {"a": T("Sure.\n```json\n"), "b": T('generate_image({"prompt": "x"})')}
    with marbles() as m:
        src = m.cold("-a-b-|", lookup)
        expected = m.exp("-A---(C,|)", {"A": T("Sure.\n"), "C": C(call(prompt="x"))})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_completion_releases_incomplete_call_as_text() -> None:
    """At completion a call that cannot resolve is released as text."""
    with marbles() as m:
        src = m.cold("-a-|", {"a": T('generate_image({"prompt": ')})
        expected = m.exp("---(A,|)", {"A": T('generate_image({"prompt": ')})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_done_chunk_resolves_held_call_first() -> None:
    """A done chunk ends the stream: the held call is emitted before it."""
    done = ProcessedChunk.done(finish_reason=FinishReason.STOP)
    lookup = {"a": T('`web_search({"q": "x"})'), "d": done}
    with marbles() as m:
        src = m.cold("-a-d-----|", lookup)
        expected = m.exp("---(C,D)-|", {"C": C(call("web_search", q="x")), "D": done})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_error_chunk_releases_held_text_first() -> None:
    """An error chunk passes through after the held text is released."""
    error = ProcessedChunk.fail(ProviderError(type=ErrorType.TIMEOUT, message="slow", retryable=True))
    with marbles() as m:
        src = m.cold("-a-e-----|", {"a": T("see web_"), "e": error})
        expected = m.exp("-A-(B,E)-|", {"A": T("see "), "B": T("web_"), "E": error})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_native_call_chunk_passes_through() -> None:
    """A native function_call chunk passes unchanged, after anything held."""
    native = C(FunctionCall(name="web_search", args={"q": "n"}, id="call_1"))
    with marbles() as m:
        src = m.cold("-a-n-|", {"a": T("hi"), "n": native})
        expected = m.exp("-a-n-|", {"a": T("hi"), "n": native})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_text_without_names_passes_through_unchanged() -> None:
    """Chunks with no tool names come out as the same chunks."""
    lookup = {"a": T("Hello ", serving_provider="p"), "b": T("world."), "c": T("")}
    with marbles() as m:
        src = m.cold("-a-b-|", lookup)
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == m.exp("-a-b-|", lookup)


def test_operator_keeps_thoughts_on_first_derived_chunk() -> None:
    """Thoughts and usage of an input chunk ride on its first output chunk only."""
    thought = (ThoughtLogEntry(kind=ThoughtKind.RAW, text="hmm"),)
    usage = Usage(input_tokens=3, output_tokens=4)
    source = ProcessedChunk(
        type=ChunkType.TEXT,
        content='`web_search({"q": "x"})` ok',
        thoughts=thought,
        usage=usage,
        serving_provider="p",
    )
    results: list[ProcessedChunk] = []
    reactivex.of(source).pipe(verbatim_tools(TOOLS)).subscribe(results.append)
    first, second = results
    assert first.function_call == call("web_search", q="x")
    assert (first.thoughts, first.usage, first.serving_provider) == (thought, usage, "p")
    assert second == T(" ok", serving_provider="p")


def test_operator_keeps_thoughts_when_everything_is_held() -> None:
    """A fully held chunk with thoughts becomes an empty text chunk carrying them."""
    thought = (ThoughtLogEntry(kind=ThoughtKind.RAW, text="hmm"),)
    with marbles() as m:
        src = m.cold("-a-b-|", {"a": T("web_sea", thoughts=thought), "b": T("rch()")})
        expected = m.exp("-A-B-|", {"A": T("", thoughts=thought), "B": C(call("web_search"))})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == expected


def test_operator_drops_plain_chunks_that_are_fully_held() -> None:
    """A plain chunk whose text is all held emits nothing until it resolves."""
    with marbles() as m:
        src = m.cold("-a-b-|", {"a": T("web_sea"), "b": T("rch()")})
        assert m.start(src.pipe(verbatim_tools(TOOLS))) == m.exp("---B-|", {"B": C(call("web_search"))})


def test_operator_without_tool_names_is_the_identity() -> None:
    """With no tools the operator returns the source itself."""
    source = reactivex.of(T("generate_image()"))
    assert verbatim_tools([])(source) is source


def _is_value_error(error: Exception) -> bool:
    return isinstance(error, ValueError)


def test_operator_forwards_upstream_errors() -> None:
    """An upstream error reaches the subscriber as on_error."""
    with marbles() as m:
        src = m.cold("-a-#", {"a": T("hi")}, error=ValueError("boom"))
        results = m.start(src.pipe(verbatim_tools(TOOLS)))
    expected = [
        ReactiveTest.on_next(201, T("hi")),
        ReactiveTest.on_error(203, cast(FunctionType, _is_value_error)),  # a type predicate
    ]
    assert expected == results


def test_operator_state_is_per_subscription() -> None:
    """Each subscription gets its own parser: ids restart and nothing held leaks across."""
    op = verbatim_tools(TOOLS)
    source = reactivex.of(T("x web_sea"), T("rch()"))
    first: list[ProcessedChunk] = []
    second: list[ProcessedChunk] = []
    shared = source.pipe(op)
    shared.subscribe(first.append)
    shared.subscribe(second.append)
    assert first == second == [T("x "), C(call("web_search"))]


def test_operator_repr_names_the_tools() -> None:
    """The operator shows its tool names in a notebook."""
    assert "generate_image" in repr(verbatim_tools(["generate_image"]))


@pytest.mark.parametrize("chunking", [1, 2, 5, 1000])
def test_operator_output_is_chunking_invariant(chunking: int) -> None:
    """The operator's merged text and calls do not depend on the deltas' sizes."""
    text = 'Fine. `generate_image({"prompt": "a cat"})` and ```json\nweb_search({"q": "x"})\n``` bye'
    source = reactivex.from_iterable([T(text[k : k + chunking]) for k in range(0, len(text), chunking)])
    results: list[ProcessedChunk] = []
    source.pipe(verbatim_tools(TOOLS), ops.to_list()).subscribe(results.extend)
    items = merged(chunk.function_call or chunk.content for chunk in results)
    assert items == ["Fine. ", call(prompt="a cat"), " and ", call("web_search", 1, q="x"), " bye"]
