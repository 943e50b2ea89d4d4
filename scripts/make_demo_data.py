"""Regenerate the demo captures in pipeline/data/ (deterministic; run from the repo root).

The captures follow the providers' documented wire formats: OpenRouter's
Chat Completions stream with ``reasoning`` deltas, a chunk-level
``provider`` field, an SSE comment keepalive and a final usage chunk with
``cost``; an OpenAI-compatible backend that leaks ``<think>`` into
``delta.content``; Gemini's ``streamGenerateContent?alt=sse`` with thought
summaries.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "pipeline" / "data"
rng = random.Random(7)


def pieces(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 6)
        out.append(text[i : i + n])
        i += n
    return out


def sse(obj: object) -> str:
    return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"


CODE_LINES = [f"    # step {i}: fold the next record into the running window" for i in range(10)]
LONG_CODE = (
    "```python\n"
    + "\n".join(
        [
            "from collections import deque",
            "",
            "",
            "def moving_average(values, window):",
            '    """Yield the mean of each full window of `values` (O(1) per item)."""',
            "    if window <= 0:",
            '        raise ValueError("window must be positive")',
            "    buf = deque()",
            "    total = 0.0",
        ]
        + [
            line
            for i in range(34)
            for line in (
                f"    # pass {i:02d}: keep the running total exact, even for long inputs",
                "    pass",
            )
        ]
        + [
            "    for value in values:",
            "        buf.append(value)",
            "        total += value",
            "        if len(buf) > window:",
            "            total -= buf.popleft()",
            "        if len(buf) == window:",
            "            yield total / window",
        ]
    )
    + "\n```"
)

ANSWER_1 = (
    "Here is a streaming moving average. It keeps a running total, so each new value costs O(1) "
    "no matter how wide the window is.\n\n"
    + LONG_CODE
    + "\n\nUse it like this: `list(moving_average([1, 2, 3, 4], 2))` gives `[1.5, 2.5, 3.5]`. "
    "The deque holds at most `window` items, so memory stays flat too.\n\n"
    "| input | window | output |\n|---|---|---|\n| [1, 2, 3, 4] | 2 | [1.5, 2.5, 3.5] |\n| [5, 5, 5] | 3 | [5.0] |\n\n"
    "Ping me, @mira, if you want a version for numpy arrays!"
)
REASONING_1 = (
    "The user wants a moving average over a stream. A deque with a running sum gives O(1) per item. "
    "I should validate the window and show an example."
)


def openrouter_reasoning() -> str:
    base = {
        "id": "gen-demo-1",
        "object": "chat.completion.chunk",
        "created": 1764480000,
        "model": "deepseek/deepseek-r1",
        "provider": "DeepInfra",
    }
    out = [": OPENROUTER PROCESSING\n\n"]
    out.append(
        sse(
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            }
        )
    )
    for p in pieces(REASONING_1):
        out.append(
            sse(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": "", "reasoning": p},
                            "finish_reason": None,
                        }
                    ],
                }
            )
        )
    for p in pieces(ANSWER_1):
        out.append(
            sse(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None}
                    ],
                }
            )
        )
    out.append(
        sse(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": "stop",
                        "native_finish_reason": "stop",
                    }
                ],
            }
        )
    )
    out.append(
        sse(
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": 412,
                    "completion_tokens": 968,
                    "total_tokens": 1380,
                    "cost": 0.00231,
                    "prompt_tokens_details": {"cached_tokens": 128},
                    "completion_tokens_details": {"reasoning_tokens": 41},
                },
            }
        )
    )
    out.append("data: [DONE]\n\n")
    return "".join(out)


ANSWER_2 = "<think>They asked for a haiku about rivers. Five, seven, five.</think>Stones remember rain —\nthe river writes its one word\nover and over."


def think_leak() -> str:
    base = {
        "id": "chatcmpl-demo-2",
        "object": "chat.completion.chunk",
        "created": 1764480100,
        "model": "local-qwen3",
    }
    out = [sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]})]
    for p in pieces(ANSWER_2):
        out.append(sse({**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}))
    out.append(sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out.append(
        sse(
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 35, "completion_tokens": 40, "total_tokens": 75},
            }
        )
    )
    out.append("data: [DONE]\n\n")
    return "".join(out)


def gemini() -> str:
    out = []
    thought = "**Planning the answer**\n\nA short, friendly explanation of why the sky is blue."
    out.append(
        "data: "
        + json.dumps(
            {
                "candidates": [
                    {"content": {"parts": [{"text": thought, "thought": True}], "role": "model"}, "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": "gemini-2.5-flash",
            }
        )
        + "\r\n\r\n"
    )
    answer = (
        "Sunlight is a mix of colours. Air molecules scatter short (blue) wavelengths much more than long (red) ones — "
        "that's **Rayleigh scattering** — so blue light reaches your eyes from every direction of the sky."
    )
    for i in range(0, len(answer), 40):
        out.append(
            "data: "
            + json.dumps(
                {
                    "candidates": [
                        {"content": {"parts": [{"text": answer[i : i + 40]}], "role": "model"}, "index": 0}
                    ],
                    "usageMetadata": {
                        "promptTokenCount": 9,
                        "candidatesTokenCount": 1 + i // 8,
                        "thoughtsTokenCount": 31,
                        "totalTokenCount": 41 + i // 8,
                    },
                    "modelVersion": "gemini-2.5-flash",
                }
            )
            + "\r\n\r\n"
        )
    out.append(
        "data: "
        + json.dumps(
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": ""}], "role": "model"},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 9,
                    "candidatesTokenCount": 48,
                    "thoughtsTokenCount": 31,
                    "totalTokenCount": 88,
                },
                "modelVersion": "gemini-2.5-flash",
            }
        )
        + "\r\n\r\n"
    )
    return "".join(out)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "openrouter_reasoning_code.sse").write_text(openrouter_reasoning())
    (OUT / "openai_think_leak.sse").write_text(think_leak())
    (OUT / "google_thoughts.sse").write_text(gemini())
    print(f"wrote demo captures to {OUT}")
