"""rxcord.operators: the stage operators a user puts in a ``Pipeline``, and the values they see.

The stage operators of stages 03-06 (``normalize`` ... ``accumulate``, ``flush``, ``clean``,
``typing_heartbeat``), the pure state machines behind them that a notebook drives by hand
(``Flusher``, ``ThinkStripper``, ``SpillGuard``, ``VerbatimToolParser``), the ``Timeline``
recorder and the stage value types a user stage gets (``ProcessedChunk``, ``StreamState``,
``Segment``, ...). The rooms below hold the knowledge the stages share: ``markdown/`` (where a
message may be cut) and ``reasoning/`` (the stage 03 reasoning guards).

Names load lazily and carry this façade's name as ``__module__`` (``rxcord.core.facade``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import keep_exports_over_submodules, lazy_exports

_EXPORTS = {
    # the stage operators, in the pipeline's order
    "normalize": "rxcord.operators.normalize",
    "redact_secrets": "rxcord.operators.redact_secrets",
    "think_strip": "rxcord.operators.reasoning.think_strip",
    "spill_guard": "rxcord.operators.reasoning.spill_guard",
    "verbatim_tools": "rxcord.operators.verbatim_tools",
    "prefill": "rxcord.operators.reasoning.prefill",
    "speaker_guard": "rxcord.operators.speaker_guard",
    "idle_timeout": "rxcord.operators.idle_timeout",
    "stop_gate": "rxcord.operators.stop_gate",
    "accumulate": "rxcord.operators.accumulate",
    "flush": "rxcord.operators.flush",
    "clean": "rxcord.operators.clean",
    "typing_heartbeat": "rxcord.operators.typing_heartbeat",
    # the pure forms a notebook or a user stage calls directly
    "Flusher": "rxcord.operators.flusher",
    "ThinkStripper": "rxcord.operators.reasoning.think_strip",
    "SpillGuard": "rxcord.operators.reasoning.spill_guard",
    "VerbatimToolParser": "rxcord.operators.verbatim_tools",
    "split_think_blocks": "rxcord.operators.reasoning.tags",
    "clean_text": "rxcord.operators.clean",
    "apply_render": "rxcord.operators.render",
    "resolve_mentions": "rxcord.operators.mentions",
    "drain": "rxcord.operators.aio",
    # the timeline recorder
    "Timeline": "rxcord.operators.timeline",
    "TimelineEvent": "rxcord.operators.timeline",
    # the values a user stage sees
    "Batch": "rxcord.core.types",
    "ChunkType": "rxcord.core.types",
    "ProcessedChunk": "rxcord.core.types",
    "RawStreamChunk": "rxcord.core.types",
    "Segment": "rxcord.core.state",
    "SegmentKind": "rxcord.core.types",
    "StreamState": "rxcord.core.state",
    "TypingPulse": "rxcord.core.state",
}

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


# A stage module named like its operator (flush.py defines flush) never hides the operator.
keep_exports_over_submodules(__name__, _EXPORTS)

if TYPE_CHECKING:
    from rxcord.core.state import Segment as Segment
    from rxcord.core.state import StreamState as StreamState
    from rxcord.core.state import TypingPulse as TypingPulse
    from rxcord.core.types import Batch as Batch
    from rxcord.core.types import ChunkType as ChunkType
    from rxcord.core.types import ProcessedChunk as ProcessedChunk
    from rxcord.core.types import RawStreamChunk as RawStreamChunk
    from rxcord.core.types import SegmentKind as SegmentKind
    from rxcord.operators.accumulate import accumulate as accumulate
    from rxcord.operators.aio import drain as drain
    from rxcord.operators.clean import clean as clean
    from rxcord.operators.clean import clean_text as clean_text
    from rxcord.operators.flush import flush as flush
    from rxcord.operators.flusher import Flusher as Flusher
    from rxcord.operators.idle_timeout import idle_timeout as idle_timeout
    from rxcord.operators.mentions import resolve_mentions as resolve_mentions
    from rxcord.operators.normalize import normalize as normalize
    from rxcord.operators.reasoning.prefill import prefill as prefill
    from rxcord.operators.reasoning.spill_guard import SpillGuard as SpillGuard
    from rxcord.operators.reasoning.spill_guard import spill_guard as spill_guard
    from rxcord.operators.reasoning.tags import split_think_blocks as split_think_blocks
    from rxcord.operators.reasoning.think_strip import ThinkStripper as ThinkStripper
    from rxcord.operators.reasoning.think_strip import think_strip as think_strip
    from rxcord.operators.redact_secrets import redact_secrets as redact_secrets
    from rxcord.operators.render import apply_render as apply_render
    from rxcord.operators.speaker_guard import speaker_guard as speaker_guard
    from rxcord.operators.stop_gate import stop_gate as stop_gate
    from rxcord.operators.timeline import Timeline as Timeline
    from rxcord.operators.timeline import TimelineEvent as TimelineEvent
    from rxcord.operators.typing_heartbeat import typing_heartbeat as typing_heartbeat
    from rxcord.operators.verbatim_tools import VerbatimToolParser as VerbatimToolParser
    from rxcord.operators.verbatim_tools import verbatim_tools as verbatim_tools
