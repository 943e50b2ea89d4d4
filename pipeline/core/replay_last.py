"""A stream's stop subject: ``ReplaySubject(1)``'s behaviour in one object plus one per subscriber.

Each live stream owns a stop subject that three or four of its stages subscribe to. reactivex's
``ReplaySubject(1, scheduler=ImmediateScheduler())`` holds, for as long as the stream lives, its
own lock, observer list and replay deque, and per subscriber a ``ScheduledObserver`` (a lock, a
queue, a ``SerialDisposable`` with another lock) and a ``RemovableDisposable``: some twenty objects
the collector walks on every full collection, per stream (``bench/notes.md``). ``ReplayLast``
keeps the same observable behaviour with the subject itself and one slots object per subscriber
(``_Subscription``: at once the list link, the per-subscriber delivery state and the disposable).

What a subscriber sees is what ``ReplaySubject(1)`` with immediate scheduling gives it
(``tests/core/test_replay_last.py`` runs both side by side on random scripts):

- a late subscriber gets the last value at once, then the end if the subject ended;
- subscribers are notified in subscribe order; one disposed during a delivery gets nothing more;
- a notification raised while a subscriber is being notified (a stop handler that raises another
  stop) reaches that subscriber after its current callback returns, and in order; subscribers not
  busy get it at once. This is ReplaySubject's per-subscriber queue (``ScheduledObserver``): here
  a subscriber's queue is the interval ``(done, sent]`` of one shared log of the notifications
  of the current delivery, which exists only while a delivery is under way.

Two deliberate differences, both where ``ReplaySubject`` loses a notification: a subscriber whose
callback raises is detached (as ``ScheduledObserver`` does) but the others still get the
notification, and the first error is raised to the outermost caller once all were notified
(``ReplaySubject`` stops at the raise and the others wait for the next notification); and
``dispose()`` during a delivery delivers nothing more (``ReplaySubject`` still runs its queues).

No lock: a stream's stop subject is used on its event loop's thread only (every caller in rxcord
is: the registry, the Redis stop bus, the bot's commands and the chain's own stages; from another
thread, hand the stop over with ``loop.call_soon_threadsafe``). ``lock`` is one shared class
attribute because some reactivex operators take ``source.lock`` of the observable they are piped
from (``take_while``, ``delay``); no stop path does.
"""

from __future__ import annotations

__all__ = ("ReplayLast",)

import threading
from typing import Any, Final, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.internal import DisposedException

_T = TypeVar("_T")

_NEXT: Final = 0
_ERROR: Final = 1
_COMPLETED: Final = 2

_NOTHING: Final[Any] = object()
"""No value yet (``None`` is a value a subject may carry)."""

_SHARED_LOCK: Final = threading.RLock()


class _Subscription(abc.DisposableBase, Generic[_T]):
    """One subscriber: its link in the subject's list, how far it was notified, the disposable.

    ``observer`` is ``None`` once detached; ``next`` is kept then, so a delivery walking the list
    past a subscriber disposed under it still reaches the ones after it.
    """

    __slots__ = ("busy", "done", "next", "observer", "prev", "subject")

    def __init__(self, subject: ReplayLast[_T], observer: abc.ObserverBase[_T], done: int) -> None:
        self.subject: ReplayLast[_T] | None = subject
        self.observer: abc.ObserverBase[_T] | None = observer
        self.done = done
        self.busy = False
        self.prev: _Subscription[_T] | None = None
        self.next: _Subscription[_T] | None = None

    def dispose(self) -> None:
        subject = self.subject
        if subject is not None:
            subject._detach(self)


class _Done(abc.DisposableBase):
    __slots__ = ()

    def dispose(self) -> None:
        pass


_ENDED: Final = _Done()
"""The subscription of a subscriber that came after the end (nothing more can reach it)."""


class ReplayLast(Observable[_T], abc.SubjectBase[_T], abc.DisposableBase):
    """A subject that replays its last value and its end to late subscribers (see the module docstring)."""

    __slots__ = (
        "_base",
        "_depth",
        "_fault",
        "_head",
        "_last",
        "_log",
        "_sent",
        "_tail",
        "exception",
        "is_disposed",
        "is_stopped",
    )

    lock = _SHARED_LOCK

    def __init__(self) -> None:
        # Observable.__init__ is not called on purpose: it gives every instance an RLock and a
        # subscribe function; _subscribe_core below is the subscribe function.
        self.is_stopped = False
        self.is_disposed = False
        self.exception: Exception | None = None
        self._last: Any = _NOTHING
        self._head: _Subscription[_T] | None = None
        self._tail: _Subscription[_T] | None = None
        self._sent = 0
        self._log: list[tuple[int, Any]] | None = None
        self._base = 0
        self._depth = 0
        self._fault: Exception | None = None

    # -- the observer side ------------------------------------------------------

    def check_disposed(self) -> None:
        """Raise reactivex's ``DisposedException`` once disposed (as its subjects do)."""
        if self.is_disposed:
            raise DisposedException()

    def on_next(self, value: _T) -> None:
        self.check_disposed()
        if not self.is_stopped:
            self._last = value
            self._publish(_NEXT, value)

    def on_error(self, error: Exception) -> None:
        self.check_disposed()
        if not self.is_stopped:
            self.is_stopped = True
            self.exception = error
            self._publish(_ERROR, error)

    def on_completed(self) -> None:
        self.check_disposed()
        if not self.is_stopped:
            self.is_stopped = True
            self._publish(_COMPLETED, None)

    def dispose(self) -> None:
        """Forget every subscriber and the last value; using the subject afterwards raises."""
        self.is_disposed = True
        self.is_stopped = True
        self.exception = None
        self._last = _NOTHING
        self._head = self._tail = None
        self._log = None

    # -- the observable side ----------------------------------------------------

    def _subscribe_core(
        self, observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.check_disposed()
        if self.is_stopped:
            # Nothing more can come: replay and end, nothing to keep.
            if self._last is not _NOTHING:
                observer.on_next(self._last)
            if self.exception is not None:
                observer.on_error(self.exception)
            else:
                observer.on_completed()
            return _ENDED
        node = _Subscription(self, observer, self._sent)
        if self._tail is None:
            self._head = node
        else:
            node.prev = self._tail
            self._tail.next = node
        self._tail = node
        self._depth += 1
        try:
            self._run(node, replay=True)
        except BaseException:
            self._unwind()
            raise
        fault = self._leave()
        if fault is not None:
            self._detach(node)  # its subscribe fails: nothing may stay linked to it
            raise fault
        return node

    # -- delivery -----------------------------------------------------------------

    def _publish(self, kind: int, value: Any) -> None:
        """Log the notification and notify every subscriber that was there when it was raised."""
        self._sent += 1
        seq = self._sent
        if self._log is None:
            self._log = []
            self._base = seq
        self._log.append((kind, value))
        self._depth += 1
        try:
            node = self._head
            while node is not None and not self.is_disposed:
                if node.observer is not None and node.done < seq:
                    self._run(node)
                node = node.next
        except BaseException:
            self._unwind()
            raise
        fault = self._leave()
        if fault is not None:
            raise fault

    def _run(self, node: _Subscription[_T], *, replay: bool = False) -> None:
        """Notify *node* of everything it has not seen yet, unless it is being notified already.

        A busy node is in a callback further up the stack; that frame's loop picks up what
        arrived meanwhile, so each subscriber sees the notifications one at a time, in order.
        """
        if node.busy:
            return
        node.busy = True
        try:
            if replay and self._last is not _NOTHING:
                self._send(node, _NEXT, self._last)
            while node.observer is not None and node.done < self._sent and not self.is_disposed:
                log = self._log
                if log is None or node.done < self._base - 1:
                    # Only after a delivery cut short by a BaseException (a cancellation in a
                    # callback): what it left undelivered is gone; go on from what is logged.
                    node.done = self._sent if log is None else self._base - 1
                    continue
                node.done += 1
                kind, value = log[node.done - self._base]
                self._send(node, kind, value)
        finally:
            node.busy = False

    def _send(self, node: _Subscription[_T], kind: int, value: Any) -> None:
        observer = node.observer
        if observer is None:
            return
        try:
            if kind == _NEXT:
                observer.on_next(value)
                return
            self._detach(node)  # an end is the last thing a subscriber gets
            if kind == _ERROR:
                observer.on_error(value)
            else:
                observer.on_completed()
        except Exception as exc:  # the subscriber failed: it gets nothing more, the others still do
            self._detach(node)
            if self._fault is None:
                self._fault = exc

    def _leave(self) -> Exception | None:
        """End of one delivery frame: the outermost drops the log and gives a subscriber's error to raise."""
        self._depth -= 1
        if self._depth:
            return None
        self._log = None
        fault, self._fault = self._fault, None
        return fault

    def _unwind(self) -> None:
        """A delivery frame left by a BaseException: the outermost drops the log (the exception wins)."""
        self._depth -= 1
        if not self._depth:
            self._log = None
            self._fault = None

    def _detach(self, node: _Subscription[_T]) -> None:
        """Unlink *node* (O(1)); its ``next`` stays, for a delivery walking past it."""
        if node.observer is None:
            return
        node.observer = None
        node.subject = None
        if self.is_disposed:
            return
        prev, after = node.prev, node.next
        if prev is None:
            self._head = after
        else:
            prev.next = after
        if after is None:
            self._tail = prev
        else:
            after.prev = prev
        node.prev = None
