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
    "LightObservable",
    "LightObserver",
    "LightOperator",
    "LightSerial",
    "Relay",
    "relay",
    "subscribe_light",
)

import threading
from collections.abc import Callable
from types import MethodType
from typing import Any, Generic, Protocol, TypeVar

from reactivex import Observable, abc

_T = TypeVar("_T")
_S = TypeVar("_S")
_V = TypeVar("_V")


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
            self.release()

    def on_completed(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.completed()
        finally:
            self.release()

    def attach(self, upstream: abc.DisposableBase) -> None:
        """The upstream's disposable; disposed at once when the stream already ended."""
        if self.stopped:
            upstream.dispose()
        else:
            self.upstream = upstream

    def release(self) -> None:
        """Nothing more from upstream: its subscription disposed (what a terminal event does).

        Apart from ``dispose`` so that a stage whose state is the hop (a ``Relay`` that is
        also the stage's returned disposable) can tear down its own work on ``dispose`` and
        still finish it after its source ended (a send in flight, a backlog).
        """
        self.stopped = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.dispose()

    def dispose(self) -> None:
        self.release()


def _call(function: Callable[..., _V], *args: Any) -> _V:
    return function(*args)


def unbound(callback: Callable[..., _V]) -> tuple[Callable[..., _V], Any]:
    """*callback* as (function, first argument): a bound method is kept as its function and object.

    A bound method is one more object per hop for the collector to walk for the stream's
    life; its function is the class's (shared by every stream) and its object is the
    stage's own state, which the stream holds anyway.
    """
    if type(callback) is MethodType:
        return callback.__func__, callback.__self__
    return _call, callback


class LightObserver(_Hop, Generic[_T]):
    """One source's subscriber: the stage's callbacks, a stop flag and the upstream disposable.

    A bound method given as a callback is held as its function and its object (``unbound``).
    """

    __slots__ = ("_completed_fn", "_completed_of", "_error_fn", "_error_of", "_next_fn", "_next_of")

    def __init__(
        self,
        on_next: Callable[[_T], None],
        on_error: Callable[[Exception], None],
        on_completed: Callable[[], None],
    ) -> None:
        self._next_fn, self._next_of = unbound(on_next)
        self._error_fn, self._error_of = unbound(on_error)
        self._completed_fn, self._completed_of = unbound(on_completed)
        self.stopped = False
        self.upstream = None

    def on_next(self, value: _T) -> None:
        if not self.stopped:
            self._next_fn(self._next_of, value)

    def failed(self, error: Exception) -> None:
        self._error_fn(self._error_of, error)

    def completed(self) -> None:
        self._completed_fn(self._completed_of)


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
    """A stream's disposables, disposed together once, in the order added.

    ``CompositeDisposable`` without its lock; the first two are held in slots, a list only
    from the third on (most stages hold one or two).
    """

    __slots__ = ("_first", "_more", "_second", "is_disposed")

    def __init__(self, *items: abc.DisposableBase) -> None:
        self._first: abc.DisposableBase | None = None
        self._second: abc.DisposableBase | None = None
        self._more: list[abc.DisposableBase] | None = None
        self.is_disposed = False
        for item in items:
            self.add(item)

    def add(self, item: abc.DisposableBase) -> None:
        """Hold *item*; disposed at once when these are disposed already."""
        if self.is_disposed:
            item.dispose()
        elif self._first is None:
            self._first = item
        elif self._second is None:
            self._second = item
        elif self._more is None:
            self._more = [item]
        else:
            self._more.append(item)

    def dispose(self) -> None:
        if self.is_disposed:
            return
        self.is_disposed = True
        first, second, more = self._first, self._second, self._more
        self._first = self._second = self._more = None
        for item in (first, second, *(more or ())):
            if item is not None:
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


class LightObservable(Observable[_T]):
    """An observable whose subscribe is a subclass's ``_subscribe_core``, its state in slots.

    ``Observable(subscribe)`` is the observable, an ``RLock`` and the subscribe closure (a
    function, its tuple of cells, the cells): objects a stream holds for its life, since
    the chain is built per stream. A subclass keeps what it needs as slots; the lock that a
    few reactivex operators take on their source (``delay``, ``amb``) is made on first use.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:  # not Observable.__init__: no subscribe function, no lock yet
        self._lock: threading.RLock | None = None

    @property
    def lock(self) -> threading.RLock:
        if self._lock is None:
            self._lock = threading.RLock()
        return self._lock

    @lock.setter
    def lock(self, value: threading.RLock) -> None:
        self._lock = value

    def _subscribe_core(
        self, observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        raise NotImplementedError


class LightOperator(Generic[_S, _T]):
    """An operator as one slots object: its parameters are slots, its subscribe is ``subscribe_to``.

    A factory returning a closure (``def operator(source): ...``) costs a function, its tuple
    of cells and a cell per parameter, and the closure of the ``Observable`` it returns as
    many again; a stream built per stream holds them all. ``operator(source)`` here is one
    ``LightObservable`` that calls ``subscribe_to(source, observer, scheduler)``.
    """

    __slots__ = ()

    def __call__(self, source: Observable[_S]) -> Observable[_T]:
        return _Piped(self, source)

    def subscribe_to(
        self, source: Observable[_S], observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        """Subscribe one stream: *observer* to what this operator makes of *source*."""
        raise NotImplementedError


class _Piped(LightObservable[_T]):
    """``source.pipe(operator)`` for a ``LightOperator``."""

    __slots__ = ("operator", "source")

    def __init__(self, operator: LightOperator[Any, _T], source: Observable[Any]) -> None:
        super().__init__()
        self.operator = operator
        self.source = source

    def _subscribe_core(
        self, observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return self.operator.subscribe_to(self.source, observer, scheduler)
