"""The ``rxcord.operators`` façade: its names, their home, and stage modules never hiding them."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import rxcord.operators

EXPECTED = (
    "Batch",
    "ChunkType",
    "Flusher",
    "ProcessedChunk",
    "RawStreamChunk",
    "Segment",
    "SegmentKind",
    "SpillGuard",
    "StreamState",
    "ThinkStripper",
    "Timeline",
    "TimelineEvent",
    "TypingPulse",
    "VerbatimToolParser",
    "accumulate",
    "apply_render",
    "clean",
    "clean_text",
    "drain",
    "flush",
    "idle_timeout",
    "normalize",
    "prefill",
    "redact_secrets",
    "resolve_mentions",
    "speaker_guard",
    "spill_guard",
    "split_think_blocks",
    "stop_gate",
    "think_strip",
    "typing_heartbeat",
    "verbatim_tools",
)


def test_all_is_pinned() -> None:
    assert rxcord.operators.__all__ == EXPECTED


def test_every_name_is_a_class_or_function_at_home_here() -> None:
    """After access each object says ``rxcord.operators``: the modules behind it are internal."""
    for name in EXPECTED:
        value = getattr(rxcord.operators, name)
        assert inspect.isclass(value) or inspect.isfunction(value), name
        assert value.__module__ == "rxcord.operators", name
        assert value.__name__ == name


def test_a_stage_module_does_not_hide_the_operator_it_is_named_after() -> None:
    """Importing ``rxcord.operators.flush`` (the module) leaves ``rxcord.operators.flush`` the operator."""
    for name in ("flush", "clean", "normalize", "accumulate", "stop_gate", "verbatim_tools"):
        module = importlib.import_module(f"rxcord.operators.{name}")
        assert inspect.ismodule(module)
        exported = getattr(rxcord.operators, name)
        assert inspect.isfunction(exported) and exported is getattr(module, name), name
        assert sys.modules[f"rxcord.operators.{name}"] is module


def test_the_operator_wins_whatever_was_imported_first() -> None:
    """In a fresh interpreter, the module imported before the name is read: still the operator."""
    code = (
        "import rxcord.operators.flush, rxcord.operators.clean\n"
        "from rxcord.operators import clean, flush\n"
        "import inspect\n"
        "assert inspect.isfunction(flush) and inspect.isfunction(clean), (flush, clean)\n"
        "print(flush.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "rxcord.operators"


def test_importing_the_facade_loads_no_stage() -> None:
    """The names load on first use: importing the façade imports none of its stage modules."""
    code = (
        "import sys, rxcord.operators\n"
        "print(sorted(m for m in sys.modules if m.startswith('rxcord.operators.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
