"""Generate the benchmark captures: OpenAI-compatible SSE bodies of a given number of chunks.

Each capture is a ``chat.completion.chunk`` stream exactly as OpenAI sends it with
``stream_options.include_usage``: a role chunk, content deltas of 1-6 code points
(realistic token sizes), a finish chunk, a usage chunk, then ``data: [DONE]``. The
text is deterministic markdown (seeded): prose with accented, Greek, Cyrillic and
CJK words, emoji (ZWJ sequences included), inline code, bullet lists and fenced
Python blocks. JSON is compact and written with raw UTF-8 (not ``\\u`` escapes), so
a random write boundary can fall inside a multi-byte character.

The ``reasoning`` variant streams its first 30% of deltas as DeepSeek-style
``delta.reasoning_content`` (``content: null``), then the answer.

A chunk is one SSE event (``[DONE]`` excluded): a capture of N chunks has N - 3
delta events.

Provider families (``CaptureSpec.family``, for the time to the first Discord message
per family): ``anthropic`` writes the same text as Messages API events
(``message_start``, ``content_block_start``, a ``text_delta`` per delta,
``content_block_stop``, ``message_delta``, ``message_stop``), ``google`` as Gemini
``streamGenerateContent?alt=sse`` events (one candidate part per delta, the last with
``finishReason``). ``FIRST_TEXT`` is the index of each family's first text event.

Usage::

    python -m bench.make_captures --out bench/.captures --sizes 1000,10000,100000
"""

from __future__ import annotations

__all__ = (
    "FAMILIES",
    "FIRST_TEXT",
    "CaptureSpec",
    "capture_name",
    "ensure_captures",
    "make_capture",
    "make_text",
)

import argparse
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

MEAN_DELTA = 3.5
"""Mean delta length in code points (deltas are 1-6)."""

_HEAD: dict[str, Any] = {
    "id": "chatcmpl-B7kq2mZpXyT9vLwR4nHc8sJdE1aFg",
    "object": "chat.completion.chunk",
    "created": 1764480000,
    "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "default",
    "system_fingerprint": "fp_0000bench",
}

_WORDS = [
    "the",
    "stream",
    "buffer",
    "chunk",
    "answer",
    "model",
    "token",
    "delta",
    "message",
    "channel",
    "reply",
    "latency",
    "server",
    "client",
    "parser",
    "event",
    "window",
    "bucket",
    "limit",
    "request",
    "response",
    "value",
    "text",
    "code",
    "block",
    "list",
    "item",
    "order",
    "state",
    "flush",
    "segment",
    "queue",
    "round",
    "trip",
    "cost",
    "memory",
    "table",
    "column",
    "row",
    "python",
    "async",
    "await",
    "loop",
    "task",
    "timer",
    "and",
    "or",
    "but",
    "so",
    "then",
    "while",
    "when",
    "because",
    "which",
    "that",
    "this",
    "with",
    "from",
    "into",
    "over",
    "under",
    "after",
    "before",
    "fast",
    "slow",
    "small",
    "large",
    "simple",
    "exact",
    "safe",
    "clear",
    "short",
    "long",
    "first",
    "last",
    "next",
    "every",
    "each",
    "some",
    "many",
    "is",
    "are",
    "was",
    "be",
    "keeps",
    "holds",
    "sends",
    "reads",
    "writes",
    "splits",
    "joins",
    "waits",
    "returns",
    "yields",
    "counts",
    "measures",
]
_UNICODE = (
    "naïve",
    "café",
    "Größe",
    "façade",
    "smörgåsbord",
    "déjà vu",
    "Ελληνικά",
    "русский",
    "日本語",
    "中文字符",
    "한국어",
    "→",
    "≤ 2 ms",
    "€5",
    "🎉",
    "🚀",
    "👩‍💻",
    "👨‍👩‍👧",
    "🇯🇵",
    "✅",
)
_IDENTS = ("moving_average", "deque", "total", "window", "append", "popleft", "asyncio.gather", "buf[i]")


def _sentence(rng: random.Random) -> str:
    words: list[str] = []
    for _ in range(rng.randint(6, 16)):
        roll = rng.random()
        if roll < 0.08:
            words.append(rng.choice(_UNICODE))
        elif roll < 0.13:
            words.append(f"`{rng.choice(_IDENTS)}`")
        elif roll < 0.16:
            words.append(f"**{rng.choice(_WORDS)}**")
        else:
            words.append(rng.choice(_WORDS))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(".....!?")


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))


def _code_block(rng: random.Random) -> str:
    lines = [
        "```python",
        f"def {rng.choice(_IDENTS).split('.')[0].strip('[]i')}_{rng.randint(0, 99)}(values, window):",
    ]
    depth = 1
    for _ in range(rng.randint(4, 14)):
        indent = "    " * depth
        roll = rng.random()
        if roll < 0.2 and depth < 3:
            lines.append(f"{indent}for value in values:  # {rng.choice(_UNICODE)}")
            depth += 1
        elif roll < 0.3 and depth > 1:
            depth -= 1
            lines.append(f"{'    ' * depth}total = 0.0")
        else:
            target = rng.choice(_IDENTS).replace(".", "_")
            lines.append(f"{indent}{target} = {rng.choice(_IDENTS)} + {rng.randint(1, 9)}")
    lines.append("    return total")
    lines.append("```")
    return "\n".join(lines)


def _bullets(rng: random.Random) -> str:
    return "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 5)))


def _short_block(rng: random.Random) -> str:
    """A paragraph-heavy reply's block: one short sentence, a two-item list or a heading."""
    roll = rng.random()
    if roll < 0.7:
        return _sentence(rng)
    if roll < 0.9:
        return "\n".join(f"- {' '.join(rng.choice(_WORDS) for _ in range(3))}" for _ in range(2))
    return f"### {rng.choice(_WORDS)} {rng.choice(_UNICODE)}"


def make_text(chars: int, rng: random.Random, *, prose_only: bool = False, paragraphs: bool = False) -> str:
    """Deterministic markdown of at least *chars* code points.

    *paragraphs*: paragraph-heavy (a blank line every 60-100 code points: the live flusher's
    and the splitter's boundaries at their densest).
    """
    blocks: list[str] = []
    size = 0
    section = 0
    while size < chars:
        roll = rng.random()
        if paragraphs:
            block = _short_block(rng)
        elif prose_only or roll < 0.55:
            block = _paragraph(rng)
        elif roll < 0.7:
            section += 1
            block = f"## Part {section}: {rng.choice(_WORDS)} {rng.choice(_UNICODE)}"
        elif roll < 0.85:
            block = _bullets(rng)
        else:
            block = _code_block(rng)
        blocks.append(block)
        size += len(block) + 2
    return "\n\n".join(blocks)


def _split_deltas(text: str, count: int, rng: random.Random) -> list[str]:
    """Exactly *count* deltas of 1-6 code points covering a prefix of *text*."""
    deltas: list[str] = []
    pos = 0
    for _ in range(count):
        step = rng.randint(1, 6)
        deltas.append(text[pos : pos + step])
        pos += step
    if pos > len(text) or not deltas[-1]:
        raise ValueError("text too short for the requested deltas")
    return deltas


def _event(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
    body = {**_HEAD, "choices": choices, "usage": usage}
    return b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _delta_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _event([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])


FAMILIES = ("openai", "anthropic", "google")
"""The wire formats captures are written in (OpenAI-compatible, Anthropic Messages, Gemini)."""
FIRST_TEXT = {"openai": 1, "anthropic": 2, "google": 0}
"""The index of each family's first event carrying answer text."""


@attrs.frozen
class CaptureSpec:
    """One capture to generate."""

    chunks: int
    reasoning: bool = False
    variant: int = 0
    """Another text of the same shape (live figures give each stream its own, so paragraph
    breaks do not fall on the same chunk in every stream at once)."""
    family: str = "openai"
    """The wire format (``FAMILIES``); reasoning variants are OpenAI-compatible only."""
    paragraphs: bool = False
    """Paragraph-heavy text (``make_text(paragraphs=True)``), OpenAI-compatible only."""

    @property
    def seed(self) -> int:
        """The text's random seed."""
        return 7 + self.variant

    @property
    def name(self) -> str:
        """The file name."""
        return capture_name(
            self.chunks,
            reasoning=self.reasoning,
            variant=self.variant,
            family=self.family,
            paragraphs=self.paragraphs,
        )


def capture_name(
    chunks: int,
    *,
    reasoning: bool = False,
    variant: int = 0,
    family: str = "openai",
    paragraphs: bool = False,
) -> str:
    """``plain-1k.sse``, ``reasoning-100k.sse``, ``plain-250.sse``, ``plain-500-v3.sse``,
    ``anthropic-plain-200-v2.sse``, ``paras-10k.sse`` (paragraph-heavy)."""
    size = f"{chunks // 1000}k" if chunks % 1000 == 0 else str(chunks)
    suffix = f"-v{variant}" if variant else ""
    prefix = "" if family == "openai" else f"{family}-"
    kind = "paras" if paragraphs else "reasoning" if reasoning else "plain"
    return f"{prefix}{kind}-{size}{suffix}.sse"


def _sse(event: str | None, body: dict[str, Any]) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _anthropic(deltas: list[str]) -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 42, "output_tokens": 1},
        },
    }
    out = [
        _sse("message_start", start),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    for piece in deltas:
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
        out.append(_sse("content_block_delta", delta))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": len(deltas)},
    }
    out.append(_sse("message_delta", end))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def _google(deltas: list[str]) -> bytes:
    out = []
    for index, piece in enumerate(deltas):
        candidate: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0}
        if index == len(deltas) - 1:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 42, "candidatesTokenCount": index + 1, "totalTokenCount": 43 + index}
        body = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
            "responseId": "kZQ4aO3xBc2vz7IP0sKn-Ag",
        }
        out.append(_sse(None, body))
    return b"".join(out)


def make_capture(spec: CaptureSpec) -> bytes:
    """The SSE body of *spec* (deterministic)."""
    if spec.chunks < 4:
        raise ValueError("a capture needs at least 4 chunks")
    rng = random.Random(spec.seed * 1_000_003 + spec.chunks * 2 + spec.reasoning)
    if spec.family != "openai":
        # The same number of events: Anthropic frames its deltas with 5 events, Gemini sends deltas only.
        count = spec.chunks - 5 if spec.family == "anthropic" else spec.chunks
        pieces = _split_deltas(make_text(int(count * 6.5), rng), count, rng)
        return _anthropic(pieces) if spec.family == "anthropic" else _google(pieces)
    deltas = spec.chunks - 3
    thinking = int(deltas * 0.3) if spec.reasoning else 0
    answer = deltas - thinking
    out = [_delta_event({"role": "assistant", "content": "", "refusal": None})]
    if thinking:
        reasoning_text = make_text(int(thinking * 6.5), rng, prose_only=True)
        for piece in _split_deltas(reasoning_text, thinking, rng):
            out.append(_delta_event({"content": None, "reasoning_content": piece}))
    text = make_text(int(answer * 6.5), rng, paragraphs=spec.paragraphs)
    for piece in _split_deltas(text, answer, rng):
        out.append(_delta_event({"content": piece}))
    out.append(_delta_event({}, "stop"))
    usage = {
        "prompt_tokens": 42,
        "completion_tokens": deltas,
        "total_tokens": deltas + 42,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": thinking},
    }
    out.append(_event([], usage))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def ensure_captures(directory: Path, specs: Iterable[CaptureSpec]) -> dict[str, Path]:
    """Write every missing capture into *directory*; return name -> path."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for spec in specs:
        path = directory / spec.name
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(make_capture(spec))
            tmp.replace(path)
        paths[spec.name] = path
    return paths


def default_specs(sizes: Iterable[int]) -> list[CaptureSpec]:
    """A plain and a reasoning capture of each size."""
    return [CaptureSpec(size, reasoning) for size in sizes for reasoning in (False, True)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench/.captures", help="directory to write into")
    parser.add_argument("--sizes", default="1000,10000,100000", help="chunk counts, comma separated")
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.sizes.split(",") if part]
    for name, path in ensure_captures(Path(args.out), default_specs(sizes)).items():
        print(f"{path}  ({path.stat().st_size:,} bytes)  {name}")


if __name__ == "__main__":
    main()
