"""Draw a stream's timeline: one lane per stage, time on the x axis (all stages; optional extra).

Why a picture: a stream is a few hundred events across six stages, and the
interesting facts are relations in time (text arrived at 0.2 s but the first
message left at 1.7 s; the rate limiter held messages 6 to 9). A lane per
stage makes them visible at a glance: raw chunks (02), processed chunks by
type (03), status changes, stops and the result (04), flushes (05), cleaned
segments (06), and Discord sends as bars from request to answer, with
rate-limit waits, pacing pauses and typing calls (07). A stop is a dashed line
across every lane; the time to the first message is annotated.

matplotlib is an optional extra (``pip install 'rxcord[plot]'``), imported
only when a plot is drawn; without it ``PlotUnavailableError`` says what to
install. Figures are built without ``pyplot`` (no global state, no display
needed): a notebook shows the returned ``Figure`` inline, ``save_timeline``
writes a PNG.
"""

from __future__ import annotations

__all__ = ("plot_timeline", "require_matplotlib", "save_timeline")

import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from rxcord.core.errors import PlotUnavailableError
from rxcord.operators.timeline import DELIVERY, LANES, ORCHESTRATOR, Timeline, TimelineEvent

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


_Style = tuple[str, str, str]
"""Marker, colour, legend label."""

_MARKS: Final[dict[tuple[str, str], _Style]] = {
    ("02 transport", "request"): (">", "tab:green", "request sent"),
    ("02 transport", "raw"): ("|", "tab:gray", "raw chunk"),
    ("02 transport", "transport_error"): ("x", "tab:red", "transport error"),
    ("02 transport", "end"): ("<", "black", "source end"),
    ("02 transport", "cancelled"): ("X", "tab:red", "request cancelled"),
    ("03 normalize", "text"): ("|", "tab:blue", "text chunk"),
    ("03 normalize", "thought"): ("|", "tab:purple", "reasoning chunk"),
    ("03 normalize", "empty"): ("|", "lightgray", "empty chunk"),
    ("03 normalize", "function_call"): ("D", "tab:orange", "function call"),
    ("03 normalize", "error"): ("X", "tab:red", "error chunk"),
    ("03 normalize", "done"): ("s", "black", "done (finish, usage)"),
    ("04 orchestrator", "status"): ("o", "tab:orange", "status change"),
    ("04 orchestrator", "stop"): ("v", "tab:red", "stop signal"),
    ("04 orchestrator", "result"): ("*", "black", "result"),
    ("05 flush", "text"): ("v", "tab:blue", "text segment"),
    ("05 flush", "thought"): ("v", "tab:purple", "thought segment"),
    ("05 flush", "details"): ("v", "tab:brown", "details segment"),
    ("05 flush", "error_embed"): ("v", "tab:red", "error embed"),
    ("06 clean", "text"): ("v", "tab:blue", "text segment"),
    ("06 clean", "thought"): ("v", "tab:purple", "thought segment"),
    ("06 clean", "details"): ("v", "tab:brown", "details segment"),
    ("06 clean", "error_embed"): ("v", "tab:red", "error embed"),
    ("07 delivery", "typing"): ("^", "tab:gray", "typing"),
    ("07 delivery", "refused"): ("X", "tab:red", "send refused"),
}
_SPANS: Final[dict[str, tuple[str, str, float, str | None]]] = {
    # kind: colour, label, vertical offset within the lane, hatch
    "send": ("tab:green", "Discord send", 0.0, None),
    "wait": ("tab:red", "rate-limit wait", 0.22, "///"),
    "pause": ("tab:olive", "pacing pause", -0.22, None),
}
_DEFAULT: Final[_Style] = ("o", "tab:gray", "other")


def require_matplotlib() -> None:
    """Fail early, with what to install, when matplotlib is missing.

    Raises:
        PlotUnavailableError: matplotlib cannot be imported.
    """
    if importlib.util.find_spec("matplotlib") is None:  # found, not imported: a CLI check stays cheap
        raise PlotUnavailableError("matplotlib", "plot", "the timeline plot")


def _events(source: Timeline | Iterable[TimelineEvent]) -> list[TimelineEvent]:
    if isinstance(source, Timeline):
        return source.events
    return sorted(source, key=_by_time)


def _by_time(event: TimelineEvent) -> float:
    return event.t


def _first_message(events: list[TimelineEvent]) -> float | None:
    ends = [e.end for e in events if e.lane == DELIVERY and e.kind == "send"]
    return min(ends) if ends else None


def plot_timeline(
    source: Timeline | Iterable[TimelineEvent],
    *,
    title: str | None = None,
    label: str | None = None,
    ax: Axes | None = None,
    width: float = 11.0,
) -> Figure:
    """Draw *source* (a ``Timeline`` or its events) as one lane per stage.

    Args:
        source: The recorded timeline.
        title: The figure title (default: the final status and the time to the first message).
        label: Put before the default title (what was streamed).
        ax: Draw into these axes instead of a new figure.
        width: Width of a new figure, in inches.

    Returns:
        The figure (a notebook displays it inline; ``Figure.savefig`` writes it).

    Raises:
        PlotUnavailableError: matplotlib is not installed.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    events = _events(source)
    lanes = list(LANES) + sorted({e.lane for e in events} - set(LANES))
    row = {lane: len(lanes) - 1 - index for index, lane in enumerate(lanes)}
    if ax is None:
        figure = Figure(figsize=(width, 0.55 * len(lanes) + 1.9), layout="constrained")
        axes = figure.add_subplot()
    else:
        axes = ax
        figure = cast("Figure", ax.get_figure())
    span = max((e.end for e in events), default=0.0) or 1.0
    thin = span * 0.003

    _draw_spans(axes, events, row, thin)
    _draw_marks(axes, events, row)
    stops = [e for e in events if e.lane == ORCHESTRATOR and e.kind == "stop"]
    for event in stops:
        axes.axvline(event.t, color="tab:red", linestyle="--", linewidth=1.0, alpha=0.7)
        axes.annotate(
            event.detail.split(":")[0],
            (event.t, len(lanes) - 0.45),
            color="tab:red",
            fontsize=8,
            xytext=(3, 0),
            textcoords="offset points",
        )
    first = _first_message(events)
    if first is not None:
        axes.axvline(first, color="tab:green", linestyle=":", linewidth=1.2)
        axes.annotate(
            f"first message {first:.3f} s",
            (first, row[DELIVERY] - 0.45),
            color="tab:green",
            fontsize=8,
            xytext=(4, 0),
            textcoords="offset points",
        )
    results = [e for e in events if e.lane == ORCHESTRATOR and e.kind == "result"]
    for event in results:
        axes.annotate(
            event.detail,
            (event.t, row[ORCHESTRATOR]),
            fontsize=8,
            xytext=(6, -3),
            textcoords="offset points",
        )

    axes.set_yticks(range(len(lanes)), list(reversed(lanes)))
    axes.set_ylim(-0.7, len(lanes) - 0.3)
    axes.set_xlim(-span * 0.02, span * 1.08)
    axes.set_xlabel("seconds since the chain was subscribed (scheduler clock)")
    axes.grid(axis="x", alpha=0.3)
    if title is None:
        status = results[-1].detail if results else "running"
        title = f"{label or 'stream timeline'}: {status}" + (
            f", first message after {first:.3f} s" if first is not None else ""
        )
    axes.set_title(title, fontsize=10)
    handles, labels = axes.get_legend_handles_labels()
    if handles and ax is None:
        figure.legend(handles, labels, loc="outside lower center", ncol=7, fontsize=7, frameon=False)
    elif handles:
        axes.legend(handles, labels, fontsize=7)
    return figure


def _draw_marks(axes: Axes, events: list[TimelineEvent], row: dict[str, int]) -> None:
    groups: dict[_Style, list[float]] = {}
    ys: dict[_Style, list[int]] = {}
    for event in events:
        if event.kind in _SPANS and event.lane == DELIVERY:
            continue
        style = _MARKS.get((event.lane, event.kind), _DEFAULT)
        groups.setdefault(style, []).append(event.t)
        ys.setdefault(style, []).append(row[event.lane])
    seen: set[str] = set()
    for style, times in groups.items():
        marker, colour, label = style
        size = 90 if marker == "|" else 26
        axes.scatter(
            times,
            ys[style],
            marker=marker,
            color=colour,
            s=size,
            linewidths=1.0,
            label=None if label in seen else label,
            zorder=3,
        )
        seen.add(label)


def _draw_spans(axes: Axes, events: list[TimelineEvent], row: dict[str, int], thin: float) -> None:
    for kind, (colour, label, offset, hatch) in _SPANS.items():
        bars = [(e.t, max(e.duration, thin)) for e in events if e.lane == DELIVERY and e.kind == kind]
        if not bars:
            continue
        height = 0.36 if kind == "send" else 0.16
        axes.broken_barh(
            bars,
            (row[DELIVERY] + offset - height / 2, height),
            facecolors=colour,
            edgecolor=colour,
            alpha=0.75,
            hatch=hatch,
            label=label,
            zorder=2,
        )


def save_timeline(
    source: Timeline | Iterable[TimelineEvent],
    path: str | Path,
    *,
    title: str | None = None,
    label: str | None = None,
    dpi: int = 110,
) -> Path:
    """Plot *source* (see ``plot_timeline``) and write it as a PNG to *path*; return the path.

    Raises:
        PlotUnavailableError: matplotlib is not installed.
    """
    figure = plot_timeline(source, title=title, label=label)
    target = Path(path)
    figure.savefig(target, dpi=dpi, format="png")
    return target
