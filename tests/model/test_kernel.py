"""The kernel's event queue and SimPy's scheduling API over it.

Compiled, the pending events are an ``EventQueue`` of typed arrays; uncompiled, a
``HeapqQueue`` of SimPy's ``(time, priority, eid, event)`` tuples under ``heapq``. Both must
pop exactly the events ``heapq`` would, in the same order, or the two modes' ledgers would
differ. ``EventQueue`` runs uncompiled too (slowly), so these tests check it in both modes.
"""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest
import simpy

from zsim.model import kernel


@pytest.mark.parametrize("queue_type", [kernel.EventQueue, kernel.HeapqQueue])
def test_the_queue_pops_what_heapq_pops_in_the_same_order(queue_type):
    rng = random.Random(3)
    ours = queue_type()
    theirs: list = []
    eid = 0
    for step in range(20_000):
        if theirs and rng.random() < 0.45:
            when, _, _, event = heapq.heappop(theirs)
            assert ours.first_time() == when
            assert ours.pop() is event
        else:
            # few distinct times and three priorities: ties are common, priority then eid decide
            when = rng.choice((0.0, 0.5, 1.0, 1.25, 3.0)) + (step // 1000)
            if rng.random() < 0.1:
                when = np.float64(when)  # a user's numpy delay gives a numpy time
            priority = rng.choice((-1, 0, 1))
            event = object()
            ours.push(when, priority, event)
            heapq.heappush(theirs, (when, priority, eid, event))
            eid += 1
        assert len(ours) == len(theirs)
    while theirs:
        assert ours.pop() is heapq.heappop(theirs)[3]
    assert len(ours) == 0


def test_the_typed_queue_grows_and_reuses_the_slots_it_frees():
    empty = kernel.EventQueue(capacity=0)  # grows from one entry
    empty.push(1.0, 1, "a")
    empty.push(0.5, 1, "b")
    assert [empty.pop(), empty.pop()] == ["b", "a"]
    queue = kernel.EventQueue(capacity=2)
    events = [object() for _ in range(100)]
    for i, event in enumerate(events):
        queue.push(float(100 - i), 1, event)  # latest first: every push rises to the root
    assert queue.capacity == 128 and len(queue) == 100
    assert [queue.pop() for _ in range(100)] == events[::-1]
    # the slots are free again: the next pushes reuse them and grow no list
    for event in events[:50]:
        queue.push(1.0, 1, event)
    assert len(queue.events) == 100
    assert [queue.pop() for _ in range(50)] == events[:50]
    assert all(event is None for event in queue.events)  # a popped event is not kept alive


def test_simpy_timeouts_and_zsim_timers_share_one_order():
    env = kernel.Environment()
    seen = []
    timer = env.fast_timer(lambda _event: seen.append(("timer", env.now)))

    def user():
        for _ in range(3):
            yield env.timeout(0.5)
            seen.append(("user", env.now))

    env.process(user())  # the process starts when the run does: its timeouts are scheduled then
    timer.arm(0.5)
    env.call_later(1.0, lambda: seen.append(("call", env.now)))
    env.run()
    # at equal times, first scheduled first: the timer and the call were scheduled before the
    # user's first and second timeouts
    assert seen == [("timer", 0.5), ("user", 0.5), ("call", 1.0), ("user", 1.0), ("user", 1.5)]


def test_simpys_public_scheduling_api_works_on_the_queue():
    env = kernel.Environment()
    seen = []
    late, urgent = env.event(), env.event()
    late.callbacks.append(lambda _e: seen.append(("late", env.now)))
    urgent.callbacks.append(lambda _e: seen.append(("urgent", env.now)))
    late._ok = urgent._ok = True
    env.schedule(late, simpy.core.NORMAL, 2.0)
    env.schedule(urgent, simpy.core.URGENT, 2.0)  # scheduled later, same time, urgent: first
    assert env.peek() == 2.0
    env.step()
    assert seen == [("urgent", 2.0)] and env.now == 2.0
    env.step()
    assert seen == [("urgent", 2.0), ("late", 2.0)]
    assert env.peek() == float("inf")
    with pytest.raises(simpy.core.EmptySchedule):
        env.step()
    # a key holds priorities -64..63; beyond, both queues refuse rather than misorder
    for call in (lambda: env.schedule(env.event(), 1000), lambda: env.call_later(1.0, print, priority=200),
                 lambda: env.fast_timer(print).arm(1.0, priority=-65)):
        with pytest.raises(ValueError, match=r"priority must be in \[-64, 63\]"):
            call()


def _until_trace(env, seed: int) -> list:
    """What a run on ``env`` does when it stops at times that events are due at: which
    events ran, in which order, and ``now`` and ``peek()`` after each stop."""
    rng = random.Random(seed)
    trace: list = []

    def note(label):
        return lambda _event: trace.append((label, env.now))

    def at(delay, priority, label):
        event = env.event()
        event._ok, event._value = True, None  # a triggered event, scheduled by hand as SimPy's own code does
        event.callbacks.append(note(label))
        if rng.random() < 0.3:  # some events schedule more at the same instant
            event.callbacks.append(lambda _event: at(0.0, rng.choice((0, 1)), label + "+"))
        env.schedule(event, priority, delay)

    def process(label):
        trace.append((label, "started", env.now))
        yield env.timeout(rng.choice((0.0, 1.0)))
        trace.append((label, "resumed", env.now))

    for i in range(40):
        at(float(rng.randrange(4)), rng.choice((0, 1)), f"e{i}")
    for stop in (1.0, 2.0, 2.5, 3.0):
        # due now, before the run: a process's start is URGENT, a zero timeout NORMAL
        env.process(process(f"p{stop}"))
        env.timeout(0.0).callbacks.append(note(f"t{stop}"))
        env.run(until=stop)
        trace.append(("stop", env.now, env.peek()))
    env.run()
    trace.append(("end", env.now, env.peek()))
    return trace


@pytest.mark.parametrize("seed", range(4))
def test_run_until_a_time_runs_what_simpy_runs_and_leaves_the_same_pending(seed):
    """SimPy stops a timed run with an URGENT event scheduled when ``run`` is called: what
    is due at exactly ``until`` stays pending unless it is URGENT and older. zsim's loop
    filters by order key instead of scheduling that event, and must stop at the same place."""
    theirs = _until_trace(simpy.Environment(), seed)
    ours = _until_trace(kernel.Environment(), seed)
    assert ours == theirs
    assert any(entry[0] == "stop" and entry[1] == entry[2] for entry in theirs)  # events were left due at a stop


def test_run_until_refuses_the_present_as_simpy_does_and_the_horizon_includes_it():
    env = kernel.Environment()
    ran = []
    env.timeout(1.0).callbacks.append(lambda _e: ran.append(env.now))
    env.run(until=0.5)
    with pytest.raises(ValueError, match="until .* must be greater than the current simulation time"):
        env.run(until=0.5)
    env.run_through(1.0)  # a scenario's horizon: what is due at until_s happens
    assert ran == [1.0] and env.now == 1.0


def test_run_until_an_event_returns_its_value_and_keeps_the_rest_pending():
    env = kernel.Environment()

    def worker():
        yield env.timeout(1.5)
        return "done"

    proc = env.process(worker())
    timer_fired = []
    env.fast_timer(lambda _e: timer_fired.append(env.now)).arm(5.0)
    assert env.run(until=proc) == "done"  # SimPy's own loop, stepping this queue
    assert env.now == 1.5 and timer_fired == []
    env.run()
    assert timer_fired == [5.0]


def test_a_failed_event_nobody_waits_for_crashes_the_run_as_in_simpy():
    env = kernel.Environment()

    def failing():
        yield env.timeout(1.0)
        raise KeyError("boom")

    env.process(failing())
    with pytest.raises(KeyError, match="boom"):
        env.run()
