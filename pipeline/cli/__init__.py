"""rxcord.cli: the ``rxcord`` command line and its presentation (reports, progress, timeline plots).

The package is the room; this module is its façade: the timeline plot and the replay runner the
``rxcord replay`` command drives, for notebooks and scripts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "plot_timeline": "rxcord.cli.timeline_plot",
    "PlotUnavailableError": "rxcord.core.errors",
    "ReplayOptions": "rxcord.cli.replay",
    "ReplayOutcome": "rxcord.cli.replay",
    "run_replay": "rxcord.cli.replay",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.cli.replay import ReplayOptions as ReplayOptions
    from rxcord.cli.replay import ReplayOutcome as ReplayOutcome
    from rxcord.cli.replay import run_replay as run_replay
    from rxcord.cli.timeline_plot import plot_timeline as plot_timeline
    from rxcord.core.errors import PlotUnavailableError as PlotUnavailableError
