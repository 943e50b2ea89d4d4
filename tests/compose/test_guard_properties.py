"""Chain-level properties of the stage 03 guards (issue 14), under arbitrary chunking.

* Speaker guard: the reply before another speaker's turn reaches Discord; the turn never does.
* Spill guard: visible text streamed before any reasoning disarms it; a reasoning tail glued
  to the first visible content after reasoning is moved to thoughts.

The spill guard runs behind the OpenAI Chat Completions normalizer (raw wire chunks in), so the
properties hold wherever stage 03 wires the guard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import Guards, StreamConfig
from rxcord.core.state import StreamResult
from rxcord.core.types import (
    ChunkNormalizer,
    DeliveryMode,
    StreamStatus,
)
from rxcord.providers.chat_completions.adapter import ChatCompletionsAdapter
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.openai import OpenAIAdapter
from tests.chain_harness import TextFeed, run_planned
from tests.strategies import cut

REPLY_PIECES = [
    "Sure thing. ",
    "Here is the answer! ",
    "\n\n",
    "\n",
    "word ",
    "é👋 ",
    "`code` ",
    "- item\n",
    "Userland is fine. ",
    "the user: said hi ",
    "x" * 120,
]
"""Reply text: never a line that opens another speaker's turn (``the user:`` is mid-line)."""
REPLY = st.lists(st.sampled_from(REPLY_PIECES), min_size=1, max_size=20).map("".join)
TURN = st.sampled_from(["User: thanks!", "**Alice**: hi there", "[User]: more please", "alice : ok"])
CUTS = st.lists(st.integers(min_value=0), max_size=20)


MODES = [DeliveryMode.AGGREGATED, DeliveryMode.LIVE]
"""The delivery modes this chain harness drives (edit-in-place has its own delivery)."""


def _run(
    data: Sequence[Any],
    normalizer: Callable[[], ChunkNormalizer],
    config: StreamConfig,
    guards: Guards | None = None,
) -> tuple[StreamResult, list[str]]:
    return run_planned(data, config, normalizer=normalizer, guards=guards, provider="openai")


def _config(mode: DeliveryMode, **kw: Any) -> StreamConfig:
    return StreamConfig(
        delivery=mode, typing_interval=0, live_idle_flush=1.0, max_messages=10_000, max_flushes=10_000, **kw
    )


def _squash(text: str) -> str:
    return "".join(text.split())


# ------------------------------------------------------------------------------------- speaker guard


@settings(max_examples=80, deadline=None)
@given(REPLY, TURN, CUTS, st.sampled_from(MODES))
def test_speaker_guard_delivers_the_reply_and_withholds_the_turn(
    reply: str, turn: str, cuts: list[int], mode: DeliveryMode
) -> None:
    """However the text is cut, the reply before ``\\nUser:`` reaches Discord and the turn does not."""
    text = reply + "\n" + turn
    config = _config(mode, speaker_names=("User", "Alice"))
    result, messages = _run(cut(text, cuts), TextFeed, config)
    assert result.status is StreamStatus.SPEAKER_GUARD
    assert result.visible_text == reply + "\n"
    assert _squash("".join(messages)) == _squash(reply)
    assert _squash(result.accumulated_text) == _squash(reply)


@settings(max_examples=30, deadline=None)
@given(REPLY, CUTS, st.sampled_from(MODES))
def test_speaker_guard_without_a_turn_delivers_everything(
    reply: str, cuts: list[int], mode: DeliveryMode
) -> None:
    """A reply with no other speaker's turn ends completed with all of it delivered."""
    result, messages = _run(cut(reply, cuts), TextFeed, _config(mode, speaker_names=("User", "Alice")))
    assert result.status is StreamStatus.COMPLETED
    assert result.visible_text == reply
    assert _squash("".join(messages)) == _squash(reply)


# --------------------------------------------------------------------------------------- spill guard

BEFORE = st.sampled_from(["The first part is done, ", "Okay. ", "Right:", "x"])
AFTER = st.sampled_from(
    ["and the second part is easy.Next one", "must do.Hello!", "wait.Actually, yes.", "g it out.hey 👋"]
)
ADAPTERS = st.sampled_from([OpenAIAdapter(), CustomAdapter()])
"""OpenAI (no think hold) and a custom endpoint (the think-tag start window holds the first text)."""
DISARM_ADAPTERS = ADAPTERS
"""The custom endpoint's think-tag start window holds the first text while the reasoning chunk
passes ahead of it: the normalizer's ``after_text`` mark keeps the order for the spill guard."""
REASONING = st.sampled_from(["Let me think.", "hmm", "The user wants a list"])


def _content(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


def _reasoning(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"reasoning": text}}]}


_FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


@settings(max_examples=60, deadline=None)
@given(BEFORE, REASONING, AFTER, CUTS, CUTS, st.sampled_from(MODES), DISARM_ADAPTERS)
def test_spill_guard_disarmed_by_visible_text_before_reasoning(
    before: str,
    reasoning: str,
    after: str,
    cuts_a: list[int],
    cuts_b: list[int],
    mode: DeliveryMode,
    adapter: ChatCompletionsAdapter,
) -> None:
    """Visible text before any reasoning: nothing visible ever moves to thoughts, however it is cut."""
    data = [
        *map(_content, cut(before, cuts_a)),
        _reasoning(reasoning),
        *map(_content, cut(after, cuts_b)),
        _FINISH,
    ]
    result, messages = _run(data, adapter.new_normalizer, _config(mode), adapter.guards)
    assert result.status is StreamStatus.COMPLETED
    assert result.visible_text == before + after
    assert result.reasoning == reasoning
    assert _squash("".join(messages)) == _squash(before + after)


SPILLS = st.sampled_from(
    [("must do.", "Hello!"), ("wait.", "Actually, yes."), ("g it out.", "hey master 👋"), ("ok so.", "Done")]
)


@settings(max_examples=60, deadline=None)
@given(REASONING, SPILLS, CUTS, st.sampled_from(MODES), ADAPTERS)
def test_spill_guard_moves_the_glued_tail_after_reasoning(
    reasoning: str,
    spill: tuple[str, str],
    cuts: list[int],
    mode: DeliveryMode,
    adapter: ChatCompletionsAdapter,
) -> None:
    """Reasoning first, then a glued tail: the tail goes to thoughts and the answer to Discord, any cut."""
    tail, answer = spill
    data = [_reasoning(reasoning), *map(_content, cut(tail + answer, cuts)), _FINISH]
    result, messages = _run(data, adapter.new_normalizer, _config(mode), adapter.guards)
    assert result.visible_text == answer
    assert result.reasoning == reasoning + tail
    assert _squash("".join(messages)) == _squash(answer)
