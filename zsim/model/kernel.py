# cython: boundscheck=False, wraparound=False
"""The simulation clock: a SimPy environment with a lean run loop and re-armable timers.

Everything in the model is a SimPy event; users can mix their own ``env.process(...)``
generators with the model. Three additions keep the hot path cheap:

* The pending events are an ``EventQueue``: a heap of typed arrays (time, order key,
  slot), not SimPy's list of ``(time, priority, eid, event)`` tuples, so scheduling an
  event allocates nothing and a sift compares C numbers in a few contiguous kilobytes.
  ``schedule``, ``peek`` and ``step`` are SimPy's, over it. Uncompiled, the queue is
  ``HeapqQueue``, SimPy's own tuples under ``heapq``; both pop events in the same order.
* ``Environment.run`` is SimPy's loop (``simpy.core.Environment.step``) inlined, so each
  event costs one pop and its callbacks, not a method call and a ``try`` per step.
* ``Timer`` is an event that can be scheduled again after it fired, so a sender that
  fires a million times reuses one object instead of allocating a ``Timeout`` per message.
  Timers carry what ``step`` reads of an event while scheduled (``callbacks`` is a list,
  ``_ok`` is true).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count
from typing import Any, Protocol

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, URGENT, Event, EventCallbacks, EventPriority

from ..errors import ZsimError

__all__ = ["Clock", "Environment", "FastTimer", "Timer", "NORMAL", "URGENT"]

#: True when this module runs compiled: the pending events are then an ``EventQueue`` of
#: typed arrays; uncompiled, a ``HeapqQueue`` (``heapq``'s C functions over tuples are faster
#: than any heap written in Python). Both pop the same events in the same order.
_COMPILED = not __file__.endswith((".py", ".pyc"))

#: an entry's order key: ``priority * _PRIORITY_STEP + eid`` (eids stay below 2**56), so
#: comparing keys compares ``(priority, eid)`` as SimPy's ``(time, priority, eid, event)``
#: tuples do
_PRIORITY_STEP = 1 << 56
#: the priorities a key can hold; SimPy uses URGENT (0), NORMAL (1) and -1 (an event whose
#: callbacks a ``StopSimulation`` interrupted, put back in front)
MIN_PRIORITY = -64
MAX_PRIORITY = 63
#: above every order key (2**62, a C long long): ``run_through`` runs all that is due at its horizon
_LAST_KEY = (MAX_PRIORITY + 1) * _PRIORITY_STEP


class EventQueue:
    """The pending events: a binary heap ordered by ``(time, priority, eid)``, SimPy's order.

    The heap is three typed arrays (time, order key, slot), so a sift compares and moves C
    numbers in a few contiguous kilobytes; the events themselves sit in ``events`` at their
    slot and are touched only on push and pop. A heap of ``(time, priority, eid, event)``
    tuples (SimPy's) allocates a tuple, a float and an int per event and chases pointers
    to them on every comparison: at 1,000 subscribers, a thousand pending service timers
    no longer fit the first-level cache that way.

    ``eid`` numbers the pushes, so two events due at the same time with the same priority
    pop in the order they were scheduled; with unique keys the pop order is the total
    order, whatever the heap's layout, so this and ``HeapqQueue`` pop the same sequence.
    """

    __slots__ = ("times", "keys", "slots", "events", "free", "n_free", "size", "capacity", "next_eid")

    def __init__(self, capacity: int = 64) -> None:
        self.size = 0
        self.capacity = 0
        self.next_eid = 0
        self.times = array("d")  # the heap, three fields per entry: when it is due,
        self.keys = array("q")  # its order key among entries due at the same time,
        self.slots = array("q")  # and where its event is in ``events``
        self.free = array("q")  # free slots in ``events``, a stack of n_free
        self.events: list[Any] = []  # by slot; None where free
        self.n_free = 0
        self._grow(max(1, capacity))

    def _grow(self, capacity: int) -> None:
        """Arrays of ``capacity`` entries holding the current ones."""
        size = self.size
        # array.array: typed storage without numpy; the compiled fields are views of it
        times = array("d", bytes(8 * capacity))
        keys = array("q", bytes(8 * capacity))
        slots = array("q", bytes(8 * capacity))
        free = array("q", bytes(8 * capacity))
        if size:
            times[:size] = self.times[:size]
            keys[:size] = self.keys[:size]
            slots[:size] = self.slots[:size]
        if self.n_free:
            free[: self.n_free] = self.free[: self.n_free]
        self.times, self.keys, self.slots, self.free = times, keys, slots, free
        self.capacity = capacity

    def __len__(self) -> int:
        return self.size

    def first_time(self) -> float:
        """When the next event is due (the queue is not empty)."""
        return self.times[0]

    def stop_key(self) -> int:
        """The order key an URGENT event pushed now would get (its eid is used up, as
        SimPy's stop event uses one): ``run(until)`` stops before any later key at ``until``."""
        key = URGENT * _PRIORITY_STEP + self.next_eid
        self.next_eid += 1
        return key

    def push(self, when: float, priority: int, event: Any) -> None:
        """Schedule ``event`` at ``when``; ``ValueError`` unless ``MIN_PRIORITY <= priority <= MAX_PRIORITY``."""
        if priority < MIN_PRIORITY or priority > MAX_PRIORITY:
            _bad_priority(priority)
        size = self.size
        if size == self.capacity:
            self._grow(2 * self.capacity)
        key = priority * _PRIORITY_STEP + self.next_eid
        self.next_eid += 1
        if self.n_free:
            self.n_free -= 1
            slot = self.free[self.n_free]
            self.events[slot] = event
        else:
            slot = len(self.events)
            self.events.append(event)
        self.size = size + 1
        self._rise(size, when, key, slot)

    def _rise(self, pos: int, when: float, key: int, slot: int) -> None:
        """``heapq._siftdown``: put the entry ``(when, key, slot)`` at the hole ``pos``, moving
        it up towards the root while it sorts before its parent. (The fields are indexed
        directly: compiled, a local copy of a memoryview costs a reference count each.)"""
        while pos > 0:
            parent = (pos - 1) >> 1
            parent_time = self.times[parent]
            if when < parent_time or (when == parent_time and key < self.keys[parent]):
                self.times[pos] = parent_time
                self.keys[pos] = self.keys[parent]
                self.slots[pos] = self.slots[parent]
                pos = parent
                continue
            break
        self.times[pos] = when
        self.keys[pos] = key
        self.slots[pos] = slot

    def pop(self) -> Any:
        """Remove and return the next event (the queue is not empty; its time is ``first_time()``)."""
        times, keys, slots = self.times, self.keys, self.slots
        slot = slots[0]
        event = self.events[slot]
        self.events[slot] = None
        self.free[self.n_free] = slot
        self.n_free += 1
        size = self.size - 1
        self.size = size
        if size == 0:
            return event
        # heapq._siftup: the hole at the root goes down along the earlier child to a leaf,
        # then the last entry fills it and rises to its place
        when = times[size]
        key = keys[size]
        slot = slots[size]
        pos = 0
        child = 1
        while child < size:
            right = child + 1
            if right < size:
                right_time = times[right]
                child_time = times[child]
                if right_time < child_time or (right_time == child_time and keys[right] < keys[child]):
                    child = right
            times[pos] = times[child]
            keys[pos] = keys[child]
            slots[pos] = slots[child]
            pos = child
            child = 2 * pos + 1
        self._rise(pos, when, key, slot)
        return event


class HeapqQueue:
    """``EventQueue``'s twin for pure Python: SimPy's heap of ``(time, priority, eid, event)``
    tuples under ``heapq``'s C functions (``_run_events_pure`` pops ``heap`` itself)."""

    __slots__ = ("heap", "eids")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, Any]] = []
        self.eids = count()

    def __len__(self) -> int:
        return len(self.heap)

    def first_time(self) -> float:
        return self.heap[0][0]

    def stop_key(self) -> int:
        """As ``EventQueue.stop_key``."""
        return URGENT * _PRIORITY_STEP + next(self.eids)

    def push(self, when: float, priority: int, event: Any) -> None:
        if priority < MIN_PRIORITY or priority > MAX_PRIORITY:
            _bad_priority(priority)  # as EventQueue, so both modes accept the same calls
        heappush(self.heap, (when, priority, next(self.eids), event))

    def pop(self) -> Any:
        return heappop(self.heap)[3]


class PendingEvents(Protocol):
    """What ``EventQueue`` and ``HeapqQueue`` both are to the ``Environment``."""

    def __len__(self) -> int: ...

    def first_time(self) -> float: ...

    def stop_key(self) -> int: ...

    def push(self, when: float, priority: int, event: Any) -> None: ...

    def pop(self) -> Any: ...


def _bad_priority(priority: int) -> None:
    raise ValueError(f"event priority must be in [{MIN_PRIORITY}, {MAX_PRIORITY}], got {priority}")


def new_queue() -> PendingEvents:
    """The queue this process's kernel runs on (compiled: typed arrays; pure: heapq)."""
    return EventQueue() if _COMPILED else HeapqQueue()


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
    """The queue entry of a ``Timer``: reused while the timer fires normally.

    Not a ``simpy.events.Event``, but what ``Environment.step`` reads of one (``callbacks``,
    ``_ok``, ``_value``), so ``run(until=event)``, which steps with SimPy's loop, processes
    it too; the run loop tests for it by type first (``_process``).
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

    __slots__ = ("env", "fn", "armed", "_event", "_in_heap", "_callbacks", "_queue", "clock")

    def __init__(self, env: Environment, fn: Callable[[], Any]) -> None:
        self.env = env
        self.fn = fn
        self.armed = False
        self._event = _TimerEvent(env)
        self._in_heap = False
        # The run loop never mutates a callbacks list, so one list serves every firing.
        self._callbacks: EventCallbacks = [self._fire]
        self._queue = env._queue  # the pending events; a timer's entry is its _TimerEvent
        self.clock = env.clock

    def _fire(self, event: object) -> None:
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
        self._queue.push(self.clock.now + delay, priority, event)

    def arm_at(self, when: float, priority: EventPriority = NORMAL) -> None:
        """Schedule it at the time ``when`` (now if that is past), exactly: not as the delay
        ``when - now`` added back to now, which rounds to a neighbour of ``when`` once
        ``when > 2 * now`` (a firing must find ``clock.now == when``: ``cpu.Machine``)."""
        if self._in_heap:
            self._event = _TimerEvent(self.env)
        event = self._event
        event.callbacks = self._callbacks
        self._in_heap = True
        self.armed = True
        now = self.clock.now
        self._queue.push(when if when > now else now, priority, event)

    def cancel(self) -> None:
        self.armed = False


class FastTimer:
    """A re-armable timer whose callback takes the event itself: no guard layer.

    For callbacks that check their own state when they run (a stopped workload returns
    at once), so a firing after ``stop`` is harmless and no cancel is needed.
    """

    __slots__ = ("env", "_event", "_callbacks", "_queue", "clock")

    def __init__(self, env: Environment, fn: Callable[[Event], Any]) -> None:
        self.env = env
        self._event = _TimerEvent(env)
        self._callbacks = [fn]
        self._queue = env._queue  # the pending events; a timer's entry is its _TimerEvent
        self.clock = env.clock

    def arm(self, delay: float, priority: EventPriority = NORMAL) -> None:
        event = self._event
        if event.callbacks is not None:
            # still pending: a second firing needs its own heap entry
            event = self._event = _TimerEvent(self.env)
        event.callbacks = self._callbacks
        self._queue.push(self.clock.now + delay, priority, event)

    def arm_at(self, when: float, priority: EventPriority = NORMAL) -> None:
        """Schedule it at the time ``when`` (now if that is past), exactly (``Timer.arm_at``)."""
        event = self._event
        if event.callbacks is not None:
            event = self._event = _TimerEvent(self.env)
        event.callbacks = self._callbacks
        now = self.clock.now
        self._queue.push(when if when > now else now, priority, event)

    def cancel(self) -> None:
        """Nothing to do: the callback ignores a firing it no longer wants."""

    def current(self, event: object) -> bool:
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
    """``simpy.Environment`` with ``call_later``, re-armable timers and an inlined run loop.

    SimPy's public API works unchanged: ``process``, ``timeout``, ``event``, ``all_of``,
    ``any_of``, ``schedule``, ``peek``, ``step``, ``run`` and ``now``, so user processes run
    beside the model. The pending events are not SimPy's list of tuples but ``_queue``, an
    ``EventQueue`` (compiled) or ``HeapqQueue`` (pure Python); ``schedule``, ``peek`` and
    ``step`` are SimPy's, over that queue. Code that pushes onto SimPy's private ``_queue``
    list with ``heapq`` gets a ``TypeError`` instead of an event that never fires.
    """

    _queue: PendingEvents  # type: ignore[assignment]  # SimPy's is a list of tuples

    def __init__(self, initial_time: float = 0) -> None:
        #: the time, read by the model as ``clock.now``; ``_now`` below is this field
        self.clock = Clock()
        super().__init__(initial_time)
        self._queue = new_queue()
        #: Events processed by ``run`` so far.
        self.events_processed = 0
        #: Called every ``monitor_every`` events by ``run`` (work limits, progress); it may
        #: raise to stop the run. ``None``: no checks, the plain loop.
        self.monitor: Callable[[], Any] | None = None
        self.monitor_every = 16384

    @property
    def _now(self) -> float:
        """SimPy's time field, kept in ``clock`` (what ``now`` reads)."""
        return self.clock.now

    @_now.setter
    def _now(self, value: float) -> None:
        self.clock.now = float(value)

    # -- SimPy's scheduling API, over the queue ------------------------------------------

    def schedule(self, event: Event, priority: EventPriority = NORMAL, delay: float = 0) -> None:
        """Schedule ``event`` with ``priority`` after ``delay`` (``simpy.Environment.schedule``)."""
        self._queue.push(self.clock.now + delay, int(priority), event)

    def peek(self) -> float:
        """When the next event is due, or infinity (``simpy.Environment.peek``)."""
        return self._queue.first_time() if len(self._queue) else float("inf")

    def step(self) -> None:
        """Process the next event (``simpy.Environment.step``, also what ``run(until=event)``
        steps with); ``EmptySchedule`` when there is none."""
        queue = self._queue
        if not len(queue):
            raise EmptySchedule()
        self.clock.now = queue.first_time()
        event = queue.pop()
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # SimPy's own recovery: the callbacks not yet run go back in front of the queue
            event.callbacks = callbacks[callbacks.index(callback) + 1 :]
            self.schedule(event, EventPriority(-1))
            raise
        _raise_if_failed(event)

    # -- zsim's additions --------------------------------------------------------------

    def call_later(self, delay: float, fn: Callable[[], Any], priority: EventPriority = NORMAL) -> None:
        """Call ``fn()`` ``delay`` seconds from now."""
        self._queue.push(self.clock.now + delay, priority, _Call(self, lambda _event: fn()))

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` at the current time, after the events already due now."""
        self._queue.push(self.clock.now, NORMAL, _Call(self, lambda _event: fn()))

    def timer(self, fn: Callable[[], Any]) -> Timer:
        return Timer(self, fn)

    def fast_timer(self, fn: Callable[[Event], Any]) -> FastTimer:
        return FastTimer(self, fn)

    def run(self, until: float | Event | None = None) -> Any:
        """Run until the queue is empty, a time is reached, or an event is processed.

        Same contract as ``simpy.Environment.run``, to the event: with ``until`` a time,
        SimPy schedules an URGENT stop event then, so what was due at exactly ``until`` stays
        pending unless it is URGENT and was scheduled before the call; the same events run
        here, the clock is left at ``until``, and the spent stop event is left pending
        there, as SimPy leaves it (so ``peek()`` returns ``until``). With a ``monitor`` set,
        it is called after every ``monitor_every`` events while the run goes on (never for
        a run that ends within its chunk), and ``events_processed`` counts them.
        """
        if until is None:
            return self._run(float("inf"), _LAST_KEY)
        if isinstance(until, Event):
            return super().run(until)
        at = float(until)
        if at <= self.clock.now:
            # SimPy's check, in its words
            raise ValueError(f"until ({at}) must be greater than the current simulation time")
        # SimPy's stop event: URGENT, at ``until``, numbered now (so it takes an eid, as there)
        value = self._run(at, self._queue.stop_key())
        if self.clock.now == at:
            # SimPy's step puts its stop event back, callbacks spent, in front at ``until``
            # (priority -1, as any event whose callbacks a StopSimulation cut short): so
            # ``peek()`` reads ``until`` and the next run starts with that empty event
            spent = Event(self)
            spent._ok, spent._value = True, None
            self._queue.push(at, -1, spent)
        return value

    def run_through(self, until: float | None) -> Any:
        """``run(until)``, but every event due at or before ``until`` runs, whatever its
        priority: a scenario's horizon ``until_s`` includes what is due at that instant.
        ``None``: until the queue is empty."""
        if until is None:
            return self._run(float("inf"), _LAST_KEY)
        at = float(until)
        if at < self.clock.now:
            raise ValueError(f"until ({at}) must be >= now ({self.clock.now})")
        return self._run(at, _LAST_KEY)

    def _run(self, horizon: float, stop_key: int) -> Any:
        """Process the events due before ``horizon``, and those due at it whose order key
        (``priority * _PRIORITY_STEP + eid``) is at most ``stop_key``; then the clock reads
        ``horizon`` (unless it is infinite)."""
        monitor = self.monitor
        chunk = self.monitor_every if monitor is not None else 1 << 62
        queue = self._queue
        try:
            while len(queue):
                # Up to ``chunk`` events, then the monitor: one counter per event, not a call.
                # compiled: an EventQueue; uncompiled, _run_events is _run_events_pure
                left = _run_events(self, queue, horizon, stop_key, chunk)  # type: ignore[arg-type]
                self.events_processed += chunk - left
                if left:
                    break  # the horizon or an empty queue ended the chunk: the run is over
                if monitor is not None:
                    monitor()
        except StopSimulation as exc:
            return exc.args[0]
        if horizon != float("inf"):
            self.clock.now = horizon
        return None


def _raise_if_failed(event: Any) -> None:
    """A failed event nobody defused crashes the run, as in SimPy (``Environment.step``)."""
    if not event._ok and not hasattr(event, "_defused"):
        value = event._value
        if isinstance(value, ZsimError):
            raise value  # zsim's own errors carry fields (path, reason) args cannot rebuild
        exc = type(value)(*value.args)
        exc.__cause__ = value
        raise exc


def _run_events(env: Environment, queue: EventQueue, horizon: float, stop_key: int, left: int) -> int:
    """Process up to ``left`` events due by ``horizon`` (at it, those keyed at most
    ``stop_key``); returns how many of ``left`` remain."""
    clock = env.clock
    while queue.size and left:
        now = queue.times[0]
        if now >= horizon and (now > horizon or queue.keys[0] > stop_key):
            break
        event = queue.pop()
        clock.now = now
        _process(event)
        left -= 1
    return left


def _run_events_pure(env: Environment, queue: HeapqQueue, horizon: float, stop_key: int, left: int) -> int:
    """``_run_events`` over a ``HeapqQueue``: ``heapq.heappop`` on its list, no method call."""
    clock = env.clock
    heap = queue.heap
    while heap and left:
        first = heap[0]
        if first[0] >= horizon and (first[0] > horizon or first[1] * _PRIORITY_STEP + first[2] > stop_key):
            break
        now, _, _, event = heappop(heap)
        clock.now = now
        # _process(event), inlined: a Python call per event cost 7% of a pure-Python message
        callbacks = event.callbacks
        event.callbacks = None
        for callback in callbacks:
            callback(event)
        if type(event) is not _TimerEvent and not event._ok:
            _raise_if_failed(event)
        left -= 1
    return left


def _process(event: Any) -> None:
    """Run ``event``'s callbacks (SimPy's ``step`` without the pop)."""
    if type(event) is _TimerEvent:
        # a timer: always ok, one callback (the compiled loop calls it with typed fields)
        timer_event: _TimerEvent = event
        callbacks = timer_event.callbacks
        timer_event.callbacks = None
        for callback in callbacks:  # type: ignore[union-attr]  # a timer in the heap has its callbacks
            callback(event)
        return
    callbacks = event.callbacks
    event.callbacks = None  # SimPy's own mark of a processed event
    for callback in callbacks:
        callback(event)
    _raise_if_failed(event)


if not _COMPILED:
    globals().update(_run_events=_run_events_pure)
