"""rxcord.compose: the named-stage pipeline, the one chain, the stream runner and the turn runner.

The package is the room; this module is its façade: the pipeline's building blocks and the
lower-level runners (the entry points, ``Pipeline`` and ``StreamJob`` are exported by the root
``rxcord``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "build_chain": "rxcord.compose.chain",
    "build_stream": "rxcord.compose.run",
    "KeyCooldown": "rxcord.compose.turn",
    "Stage": "rxcord.compose.pipeline",
    "stage03": "rxcord.compose.pipeline",
    "StageContext": "rxcord.compose.pipeline",
    "ToolHandler": "rxcord.compose.turn",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.compose.chain import build_chain as build_chain
    from rxcord.compose.pipeline import Stage as Stage
    from rxcord.compose.pipeline import StageContext as StageContext
    from rxcord.compose.pipeline import stage03 as stage03
    from rxcord.compose.run import build_stream as build_stream
    from rxcord.compose.turn import KeyCooldown as KeyCooldown
    from rxcord.compose.turn import ToolHandler as ToolHandler
