"""The kernel's event heap: the compiled push/pop keep heapq's layout entry for entry.

SimPy's own ``schedule``/``step`` push and pop the same list with ``heapq``; zsim's
compiled ``_push``/``_pop`` compare entries as C numbers but must leave the list exactly
as ``heapq`` would, or the two would disagree on the next event (uncompiled, they are
``heapq``'s functions).
"""

from __future__ import annotations

import heapq
import random

import numpy as np

from zsim.model import kernel


def test_push_and_pop_leave_the_heap_exactly_as_heapq_does():
    rng = random.Random(3)
    ours: list = []
    theirs: list = []
    eid = 0
    for step in range(20_000):
        if theirs and rng.random() < 0.45:
            assert kernel._pop(ours) == heapq.heappop(theirs)
        else:
            # few distinct times and two priorities: ties are common, the eid decides
            time = rng.choice((0.0, 0.5, 1.0, 1.25, 3.0)) + (step // 1000)
            if rng.random() < 0.1:
                time = np.float64(time)  # a user's numpy delay gives a numpy time
            entry = (time, rng.choice((0, 1)), eid, object())
            eid += 1
            kernel._push(ours, entry)
            heapq.heappush(theirs, entry)
        assert ours == theirs
    while theirs:
        assert kernel._pop(ours) == heapq.heappop(theirs)


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
