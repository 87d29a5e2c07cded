# cython: boundscheck=False, wraparound=False
"""The simulation clock: a SimPy environment with a lean run loop and re-armable timers.

Everything in the model is a SimPy event; users can mix their own ``env.process(...)``
generators with the model. Two additions keep the hot path cheap:

* ``Environment.run`` is SimPy's loop (``simpy.core.Environment.step``) inlined, so each
  event costs one heap pop and its callbacks, not a method call and a ``try`` per step.
* ``Timer`` is an event that can be scheduled again after it fired, so a sender that
  fires a million times reuses one object instead of allocating a ``Timeout`` per message.
  Timers are ordinary SimPy events while scheduled (``callbacks`` is a list, ``_ok`` is
  true), which is all ``Environment.step`` needs.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count
from typing import Any

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, URGENT, Event, EventCallbacks, EventPriority

from ..errors import ZsimError

__all__ = ["Clock", "Environment", "FastTimer", "Timer", "NORMAL", "URGENT"]

#: True when this module runs compiled: the heap's entries are then compared as C numbers
#: (``_push``/``_pop``); uncompiled, ``heapq``'s C functions are faster than Python sifts
_COMPILED = not __file__.endswith((".py", ".pyc"))


def _before(a: tuple, b: tuple) -> bool:
    """``a < b`` for two heap entries ``(time, priority, eid, event)``, as ``heapq`` compares
    them: the first field that differs decides (eids are unique, so never the event)."""
    ta, tb = a[0], b[0]
    if ta != tb:
        return ta < tb
    pa, pb = a[1], b[1]
    if pa != pb:
        return pa < pb
    return a[2] < b[2]  # type: ignore[no-any-return]


def _sift_down(heap: list, start: int, pos: int) -> None:
    """``heapq._siftdown``: move ``heap[pos]`` up towards ``start`` while it sorts before its parent."""
    item = heap[pos]
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        if _before(item, parent):
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = item


def _sift_up(heap: list, pos: int) -> None:
    """``heapq._siftup``: the same steps, so the heap's layout is ``heapq``'s, entry for entry."""
    end = len(heap)
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < end:
        right = child + 1
        if right < end and not _before(heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _sift_down(heap, start, pos)


def _push(heap: list, entry: tuple) -> None:
    """``heapq.heappush`` (the same heap, so SimPy's own ``heappush``/``heappop`` share it)."""
    heap.append(entry)
    _sift_down(heap, 0, len(heap) - 1)


def _pop(heap: list) -> tuple:
    """``heapq.heappop``."""
    last = heap.pop()
    if heap:
        first = heap[0]
        heap[0] = last
        _sift_up(heap, 0)
        return first  # type: ignore[no-any-return]
    return last  # type: ignore[no-any-return]


if not _COMPILED:
    # uncompiled, the callers call heapq's C functions themselves (no Python call between)
    globals().update(_push=heappush, _pop=heappop)


class Clock:
    """The simulation time, ``Environment.now``, in a field the compiled model reads as a C double.

    ``Environment._now`` (what SimPy reads and writes) is this field: the model's hot path
    reads ``clock.now`` directly instead of an attribute lookup on the environment, which
    as a ``simpy.Environment`` subclass keeps its fields in a ``__dict__``.
    """

    __slots__ = ("now",)

    def __init__(self, now: float = 0.0) -> None:
        self.now = now


class _TimerEvent:
    """The heap entry of a ``Timer``: reused while the timer fires normally.

    Not a ``simpy.events.Event``, but what SimPy's own ``Environment.step`` reads of one
    (``callbacks``, ``_ok``, ``_value``), so ``run(until=event)``, which steps with
    SimPy's loop, processes it too; ``Environment.run`` tests for it by type first.
    """

    __slots__ = ("env", "callbacks", "_value", "_ok")

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.callbacks: EventCallbacks | None = None
        self._value = None
        self._ok = True


class Timer:
    """A re-armable timer that calls ``fn()`` each time it fires.

    ``arm(delay)`` schedules it ``delay`` seconds from now; arming an armed timer moves it.
    ``cancel()`` withdraws a pending firing: the heap entry stays and is ignored when it
    pops, and the next ``arm`` then uses a fresh event so the two entries never share one.
    """

    __slots__ = ("env", "fn", "armed", "_event", "_in_heap", "_callbacks", "_queue", "_eid", "clock")

    def __init__(self, env: Environment, fn: Callable[[], Any]) -> None:
        self.env = env
        self.fn = fn
        self.armed = False
        self._event = _TimerEvent(env)
        self._in_heap = False
        # The run loop never mutates a callbacks list, so one list serves every firing.
        self._callbacks: EventCallbacks = [self._fire]
        self._queue: list[Any] = env._queue  # SimPy's heap; a timer's entry is its _TimerEvent
        self._eid = env._eid
        self.clock = env.clock

    def _fire(self, event: Event) -> None:
        if event is not self._event:
            return  # a cancelled firing
        self._in_heap = False
        if self.armed:
            self.armed = False
            self.fn()

    def arm(self, delay: float, priority: EventPriority = NORMAL) -> None:
        if self._in_heap:
            self._event = _TimerEvent(self.env)
        event = self._event
        event.callbacks = self._callbacks
        self._in_heap = True
        self.armed = True
        _push(self._queue, (self.clock.now + delay, priority, next(self._eid), event))

    def arm_at(self, when: float, priority: EventPriority = NORMAL) -> None:
        now = self.clock.now
        self.arm(when - now if when > now else 0.0, priority)

    def cancel(self) -> None:
        self.armed = False


class FastTimer:
    """A re-armable timer whose callback takes the event itself: no guard layer.

    For callbacks that check their own state when they run (a stopped workload returns
    at once), so a firing after ``stop`` is harmless and no cancel is needed.
    """

    __slots__ = ("env", "_event", "_callbacks", "_queue", "_eid", "clock")

    def __init__(self, env: Environment, fn: Callable[[Event], Any]) -> None:
        self.env = env
        self._event = _TimerEvent(env)
        self._callbacks = [fn]
        self._queue: list[Any] = env._queue  # SimPy's heap; a timer's entry is its _TimerEvent
        self._eid = env._eid
        self.clock = env.clock

    def arm(self, delay: float, priority: EventPriority = NORMAL) -> None:
        event = self._event
        if event.callbacks is not None:
            # still pending: a second firing needs its own heap entry
            event = self._event = _TimerEvent(self.env)
        event.callbacks = self._callbacks
        _push(self._queue, (self.clock.now + delay, priority, next(self._eid), event))

    def arm_at(self, when: float, priority: EventPriority = NORMAL) -> None:
        now = self.clock.now
        self.arm(when - now if when > now else 0.0, priority)

    def cancel(self) -> None:
        """Nothing to do: the callback ignores a firing it no longer wants."""

    def current(self, event: Event) -> bool:
        """True if ``event`` is this timer's latest arming (not a superseded one)."""
        return event is self._event

    def set_fn(self, fn: Callable[[Event], Any]) -> None:
        self._callbacks[0] = fn


class _Call(Event):
    """A one-shot scheduled callback (cheaper than ``Timeout`` plus a callback append)."""

    __slots__ = ()

    def __init__(self, env: Environment, fn: Callable[[Event], Any]) -> None:
        self.env = env
        self.callbacks = [fn]
        self._value = None
        self._ok = True


class Environment(simpy.Environment):
    """``simpy.Environment`` with ``call_later`` and an inlined run loop."""

    def __init__(self, initial_time: float = 0) -> None:
        #: the time, read by the model as ``clock.now``; ``_now`` below is this field
        self.clock = Clock()
        super().__init__(initial_time)
        self._eid = count()
        #: Events processed by ``run`` so far.
        self.events_processed = 0
        #: Called every ``monitor_every`` events by ``run`` (work limits, progress); it may
        #: raise to stop the run. ``None``: no checks, the plain loop.
        self.monitor: Callable[[], Any] | None = None
        self.monitor_every = 16384

    @property  # type: ignore[override]
    def _now(self) -> float:
        """SimPy's time field, kept in ``clock`` (what ``now``, ``schedule`` and ``step`` read)."""
        return self.clock.now

    @_now.setter
    def _now(self, value: float) -> None:
        self.clock.now = float(value)

    def call_later(self, delay: float, fn: Callable[[], Any], priority: EventPriority = NORMAL) -> None:
        """Call ``fn()`` ``delay`` seconds from now."""
        event = _Call(self, lambda _event: fn())
        _push(self._queue, (self._now + delay, priority, next(self._eid), event))

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` at the current time, after the events already due now."""
        event = _Call(self, lambda _event: fn())
        _push(self._queue, (self._now, NORMAL, next(self._eid), event))

    def timer(self, fn: Callable[[], Any]) -> Timer:
        return Timer(self, fn)

    def fast_timer(self, fn: Callable[[Event], Any]) -> FastTimer:
        return FastTimer(self, fn)

    def run(self, until: float | Event | None = None) -> Any:  # noqa: C901 - hot loop
        """Run until the queue is empty, a time is reached, or an event is processed.

        Same contract as ``simpy.Environment.run``; when ``until`` is a time, the clock is
        left at exactly that time (SimPy does the same with an URGENT stop event). With a
        ``monitor`` set, it is called after every ``monitor_every`` events while the run
        goes on (never for a run that ends within its chunk), and ``events_processed``
        counts them.
        """
        stop_at: float | None = None
        if until is not None:
            if isinstance(until, Event):
                return super().run(until)
            stop_at = float(until)
            if stop_at < self._now:
                raise ValueError(f"until ({stop_at}) must be >= now ({self._now})")
        horizon = float("inf") if stop_at is None else stop_at
        monitor = self.monitor
        chunk = self.monitor_every if monitor is not None else 1 << 62
        try:
            while self._queue:
                # Up to ``chunk`` events, then the monitor: one counter per event, not a call.
                left = _run_events(self, self._queue, horizon, chunk)
                self.events_processed += chunk - left
                if left:
                    break  # the horizon or an empty queue ended the chunk: the run is over
                if monitor is not None:
                    monitor()
        except StopSimulation as exc:
            return exc.args[0]
        except EmptySchedule:  # pragma: no cover - cannot happen with the guard above
            pass
        if stop_at is not None:
            self._now = stop_at
        return None


def _run_events(env: Environment, queue: list, horizon: float, left: int) -> int:
    """Process up to ``left`` events due by ``horizon``; returns how many of ``left`` remain."""
    clock = env.clock
    while queue and left:
        if queue[0][0] > horizon:
            break
        now, _, _, event = _pop(queue)
        clock.now = now
        if type(event) is _TimerEvent:
            # a timer: always ok, one callback (the compiled loop calls it with typed fields)
            timer_event: _TimerEvent = event
            callbacks = timer_event.callbacks
            timer_event.callbacks = None
            for callback in callbacks:  # type: ignore[union-attr]  # a timer in the heap has its callbacks
                callback(event)
        else:
            callbacks = event.callbacks
            event.callbacks = None  # SimPy's own mark of a processed event
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                value = event._value
                if isinstance(value, ZsimError):
                    raise value  # zsim's own errors carry fields (path, reason) args cannot rebuild
                exc = type(value)(*value.args)
                exc.__cause__ = value
                raise exc
        left -= 1
    return left
