"""Light subscriptions for the chain's internal hops: fewer objects per live stream.

``Observable.subscribe`` wraps every observer in reactivex's ``AutoDetachObserver``:
the wrapper, a ``SingleAssignmentDisposable`` with its ``RLock``, the returned
``Disposable`` with another ``RLock`` and a bound method, about seven objects the
collector tracks for as long as the stream lives. A live stream holds a dozen such
hops, and with hundreds of streams every full collection walks them all
(``bench/notes.md``). ``subscribe_light`` gives a stage's own callbacks to its
source through ONE slots object that is at once the observer and the disposable.

It keeps what the wrapper guarantees (the rules of ``AutoDetachObserver``):

- nothing reaches the callbacks after a terminal event or after disposal;
- a terminal event disposes the upstream subscription (a stage that completes
  early still closes the HTTP request), also when it happens while subscribing,
  before the upstream's disposable exists;
- an exception raised by the source's subscribe function becomes ``on_error``.

It leaves out the wrapper's locks: the chain runs on one event loop thread. And it
skips the current-thread trampoline, which only matters to an outermost subscribe:
every light subscribe happens inside the subscribe of the stage after it, which
reactivex has already put on the trampoline.
"""

from __future__ import annotations

__all__ = (
    "NO_DISPOSAL",
    "LightDisposables",
    "LightObserver",
    "LightSerial",
    "Relay",
    "relay",
    "subscribe_light",
)

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from reactivex import Observable, abc

_T = TypeVar("_T")


def _ignore_error(_: Exception) -> None:
    """No ``on_error`` given: as reactivex, the error ends the subscription (nothing raised here)."""


def _nothing() -> None:
    pass


class _Hop(abc.ObserverBase[Any], abc.DisposableBase):
    """What every light hop keeps of the wrapper's rules: one terminal event, then the upstream disposed.

    A subclass writes ``on_next`` (checking ``stopped`` first) and what a terminal event does
    (``failed`` / ``completed``); ``on_error`` and ``on_completed`` call them once only.
    """

    __slots__ = ("stopped", "upstream")
    stopped: bool
    upstream: abc.DisposableBase | None

    def failed(self, error: Exception) -> None:
        """The stream failed (called once)."""

    def completed(self) -> None:
        """The source completed (called once)."""

    def on_error(self, error: Exception) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.failed(error)
        finally:
            self.dispose()

    def on_completed(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.completed()
        finally:
            self.dispose()

    def attach(self, upstream: abc.DisposableBase) -> None:
        """The upstream's disposable; disposed at once when the stream already ended."""
        if self.stopped:
            upstream.dispose()
        else:
            self.upstream = upstream

    def dispose(self) -> None:
        self.stopped = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.dispose()


class LightObserver(_Hop, Generic[_T]):
    """One source's subscriber: the stage's callbacks, a stop flag and the upstream disposable."""

    __slots__ = ("_next", "_on_completed", "_on_error")

    def __init__(
        self,
        on_next: Callable[[_T], None],
        on_error: Callable[[Exception], None],
        on_completed: Callable[[], None],
    ) -> None:
        self._next = on_next
        self._on_error = on_error
        self._on_completed = on_completed
        self.stopped = False
        self.upstream = None

    def on_next(self, value: _T) -> None:
        if not self.stopped:
            self._next(value)

    def failed(self, error: Exception) -> None:
        self._on_error(error)

    def completed(self) -> None:
        self._on_completed()


class Relay(_Hop):
    """A stage's per-subscription state that is itself its source's observer (no wrapper at all).

    A subclass writes ``on_next`` (checking ``stopped`` first) and, when the end needs work,
    ``completed`` / ``failed``; ``on_error`` and ``on_completed`` keep the rules of the module
    docstring: once only, then the upstream is disposed. ``relay(source, stage, scheduler)``
    subscribes it.
    """

    __slots__ = ("observer",)

    def __init__(self, observer: abc.ObserverBase[Any]) -> None:
        self.observer = observer
        self.stopped = False
        self.upstream = None

    def on_next(self, value: Any) -> None:
        if not self.stopped:
            self.observer.on_next(value)

    def failed(self, error: Exception) -> None:
        """The stream failed (called once)."""
        self.observer.on_error(error)

    def completed(self) -> None:
        """The source completed (called once)."""
        self.observer.on_completed()


_R = TypeVar("_R", bound="Relay | LightObserver[Any]")


def _subscribe(source: Observable[Any], observer: _R, scheduler: abc.SchedulerBase | None) -> _R:
    try:
        subscription: Any = source._subscribe_core(observer, scheduler)  # what Observable.subscribe calls
    except Exception as exc:
        if observer.stopped:
            raise
        observer.on_error(exc)
        return observer
    if subscription is not None:
        observer.attach(subscription if hasattr(subscription, "dispose") else _Call(subscription))
    return observer


def relay(source: Observable[Any], stage: Relay, scheduler: abc.SchedulerBase | None) -> Relay:
    """Subscribe *stage* to *source*; *stage* is the subscription's disposable."""
    return _subscribe(source, stage, scheduler)


class _Call(abc.DisposableBase):
    """A subscribe function's returned callable as a disposable (reactivex accepts either)."""

    __slots__ = ("_action",)

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action

    def dispose(self) -> None:
        action, self._action = self._action, _nothing
        action()


def subscribe_light(
    source: Observable[_T],
    on_next: Callable[[_T], None],
    on_error: Callable[[Exception], None] | None = None,
    on_completed: Callable[[], None] | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> LightObserver[_T]:
    """Subscribe the callbacks to *source*; the returned observer is the subscription's disposable.

    Called only inside another subscribe (see the module docstring); *source* may be any
    reactivex ``Observable`` (an operator's, a subject, a test's cold observable).
    """
    return _subscribe(
        source, LightObserver(on_next, on_error or _ignore_error, on_completed or _nothing), scheduler
    )


class Observes(Protocol):
    """What ``subscribe_target`` calls: a stage object's three methods."""

    def on_next(self, value: Any, /) -> None: ...

    def on_error(self, error: Exception, /) -> None: ...

    def on_completed(self) -> None: ...


class _TargetObserver(LightObserver[Any]):
    """``LightObserver`` calling a stage object's own methods (no bound method held per hop)."""

    __slots__ = ("target",)

    def __init__(self, target: Observes) -> None:  # the target holds the callbacks
        self.target = target
        self.stopped = False
        self.upstream = None

    def on_next(self, value: Any) -> None:
        if not self.stopped:
            self.target.on_next(value)

    def failed(self, error: Exception) -> None:
        self.target.on_error(error)

    def completed(self) -> None:
        self.target.on_completed()


def subscribe_target(
    source: Observable[Any], target: Observes, scheduler: abc.SchedulerBase | None = None
) -> LightObserver[Any]:
    """``subscribe_light`` with *target*'s ``on_next``, ``on_error`` and ``on_completed``."""
    return _subscribe(source, _TargetObserver(target), scheduler)


class LightDisposables(abc.DisposableBase):
    """A stream's disposables, disposed together once (``CompositeDisposable`` without its lock)."""

    __slots__ = ("_items",)

    def __init__(self, *items: abc.DisposableBase) -> None:
        self._items: list[abc.DisposableBase] | None = list(items)

    def add(self, item: abc.DisposableBase) -> None:
        """Hold *item*; disposed at once when these are disposed already."""
        if self._items is None:
            item.dispose()
        else:
            self._items.append(item)

    @property
    def is_disposed(self) -> bool:
        return self._items is None

    def dispose(self) -> None:
        items, self._items = self._items, None
        for item in items or ():
            item.dispose()


class LightSerial(abc.DisposableBase):
    """One replaceable disposable (``SerialDisposable`` without its lock): setting one disposes the last."""

    __slots__ = ("_current", "is_disposed")

    def __init__(self) -> None:
        self._current: abc.DisposableBase | None = None
        self.is_disposed = False

    @property
    def disposable(self) -> abc.DisposableBase | None:
        return self._current

    @disposable.setter
    def disposable(self, value: abc.DisposableBase | None) -> None:
        if self.is_disposed:
            if value is not None:
                value.dispose()
            return
        previous, self._current = self._current, value
        if previous is not None:
            previous.dispose()

    def dispose(self) -> None:
        self.is_disposed = True
        current, self._current = self._current, None
        if current is not None:
            current.dispose()


class _NoDisposal(abc.DisposableBase):
    __slots__ = ()

    def dispose(self) -> None:
        pass


NO_DISPOSAL: abc.DisposableBase = _NoDisposal()
"""A subscription with nothing to release (shared: disposing it does nothing)."""
