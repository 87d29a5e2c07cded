"""Waits for the real-pyzmq harness, and how late they are.

A workload waits as its scenario says (docs/scenario-format.md, "The program's own
habits"): with ``wait_spin_s = 0``, the default, a plain sleep, which returns 50 to 150 µs
late on Linux (timer slack plus the wake-up), as a plain program's does; with
``wait_spin_s`` > 0, ``wait_until`` sleeps until that long before the deadline (``SPIN_S``,
0.5 ms, several times the usual overshoot, is what the harness used for every wait before
2026-11-26) and spins the rest on the monotonic clock. A longer spin buys nothing on an
idle machine and takes a core from the other processes of the run on a loaded one.

A spinning wait is still late sometimes (the thread is preempted, the GIL is held by
another thread). ``measure_lateness`` records either kind's lateness for waits of given
lengths on an idle machine, and ``validation/calibrate/wakeups.py`` stores it in the profile: a
sleep's as ``[api] sleep_late_s`` (per sleep length), a spinning wait's as
``[api] timer_jitter_s``, so the simulator adds the same lateness to every wait of a
program that waits the same way.

Clock: ``time.perf_counter`` is ``CLOCK_MONOTONIC`` on Linux, one clock for every process of
the machine, so deadlines and timestamps can be compared across processes.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence

#: how long before a deadline the wait stops sleeping and starts spinning
SPIN_S = 0.0005

_pc = time.perf_counter



def wait_until(deadline: float, stop: threading.Event | None = None, spin_s: float = SPIN_S) -> bool:
    """Return at ``deadline`` (``perf_counter`` seconds), or early when ``stop`` is set.

    ``spin_s``: how long before the deadline the sleep ends and the spin starts (a
    workload's ``wait_spin_s``); 0 sleeps all the way, as a plain program's
    ``time.sleep`` does, and returns as late as the machine wakes it.

    Returns True if the deadline was reached, False if ``stop`` ended the wait. The spin is
    a plain loop on the clock: ``time.sleep(0)`` would make each turn about 50 µs late
    (Linux timer slack) and ``os.sched_yield()`` hands the core to any runnable thread for a
    whole time slice (ms late on a busy 2-core machine). Other Python threads of the process
    still get the GIL after ``sys.getswitchinterval()`` (the harness sets 0.2 ms).
    """
    while True:
        remaining = deadline - _pc()
        if remaining <= 0:
            return True
        if stop is not None and stop.is_set():
            return False
        if remaining > spin_s:
            sleep_for = remaining - spin_s
            if stop is not None:
                if stop.wait(sleep_for):
                    return False
            else:
                time.sleep(sleep_for)
            if spin_s <= 0:
                return True  # a plain sleep: as late as it woke
            continue
        # the last fraction of a millisecond: spin, yielding the GIL each turn
        while _pc() < deadline:
            pass
        return True


def wait_for(duration_s: float, stop: threading.Event | None = None, spin_s: float = SPIN_S) -> bool:
    """``wait_until(now + duration_s)``; a duration <= 0 returns at once."""
    if duration_s <= 0:
        return not (stop is not None and stop.is_set())
    return wait_until(_pc() + duration_s, stop, spin_s)


def measure_lateness(waits_s: Sequence[float] = (0.001, 0.01, 0.1), repeats: Sequence[int] = (400, 150, 30),
                     stop: threading.Event | None = None, spin_s: float = SPIN_S) -> dict[float, list[float]]:
    """Lateness (seconds after the deadline) of ``wait_until`` for each wait length
    (``spin_s = 0``: of a plain sleep).

    The deadline is set from the moment the previous wait returned, as a send loop does.
    """
    result: dict[float, list[float]] = {}
    for wait_s, count in zip(waits_s, repeats, strict=True):
        samples: list[float] = []
        for _ in range(count):
            deadline = _pc() + wait_s
            wait_until(deadline, stop, spin_s)
            samples.append(max(0.0, _pc() - deadline))
        result[wait_s] = samples
    return result


def lateness_summary(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {}

    def q(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]

    return {
        "n": len(ordered),
        "median_us": statistics.median(ordered) * 1e6,
        "p90_us": q(0.9) * 1e6,
        "p99_us": q(0.99) * 1e6,
        "max_us": ordered[-1] * 1e6,
    }


# --------------------------------------------------------------------------------------
# CPU starvation: how long this process's threads were ready to run but had no CPU


def run_queue_waits(name_prefix: str | None = None, pids: Sequence[int] = ()) -> dict[int, float]:
    """Run-queue wait (seconds) so far per thread id of this process and of the processes
    ``pids`` (e.g. a child that plays the other side), over threads whose name starts with
    ``name_prefix`` (e.g. ``"ZMQbg/IO/"`` for libzmq's I/O threads), from
    ``/proc/<pid>/task/*/schedstat`` (field 2); empty where the kernel does not keep the
    statistic. Compare two samples thread by thread (``waited_between``): threads come and
    go, so sums of two samples do not subtract.

    This is what a loaded machine does to a real run and nothing else does: a thread that
    sleeps, blocks or spins is not counted, a thread that wanted a core and did not get
    one is."""
    import glob
    import os

    waits: dict[int, float] = {}
    tasks = [task for pid in ("self", *pids) for task in glob.glob(f"/proc/{pid}/task/*")]
    for task in tasks:
        try:
            if name_prefix is not None:
                with open(os.path.join(task, "comm")) as handle:
                    if not handle.read().startswith(name_prefix):
                        continue
            with open(os.path.join(task, "schedstat")) as handle:
                waits[int(os.path.basename(task))] = int(handle.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return waits


def waited_between(before: dict[int, float], after: dict[int, float]) -> float:
    """Run-queue wait between two ``run_queue_waits`` samples, over the threads in both."""
    return sum(max(0.0, after[tid] - before[tid]) for tid in after.keys() & before.keys())


def thread_run_queue_wait_s(native_id: int) -> float | None:
    """Run-queue wait (seconds) of one thread of this process so far, by its native id
    (``threading.get_native_id()``); None where the kernel does not keep it."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class Starvation:
    """``with Starvation() as s: ...`` then ``s.waited_s`` (run-queue wait of this process's
    threads, and of the processes ``pids``, during the block, summed over threads),
    ``s.wall_s`` and ``s.share`` (waited / wall; 0 on an idle machine, about 1 per thread
    that wanted a core and waited all along). Only threads alive at both ends are counted
    (one that ends inside the block has left ``/proc`` by then): measure around work whose
    threads (and libzmq I/O threads, which live as long as their context) exist before and
    after it."""

    def __init__(self, name_prefix: str | None = None, pids: Sequence[int] = ()) -> None:
        self.name_prefix = name_prefix
        self.pids = tuple(pids)
        self.waited_s: float | None = None
        self.wall_s = 0.0
        self._start_waits: dict[int, float] = {}
        self._start = 0.0

    def __enter__(self) -> Starvation:
        self._start_waits = run_queue_waits(self.name_prefix, self.pids)
        self._start = _pc()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = _pc() - self._start
        end = run_queue_waits(self.name_prefix, self.pids)
        if end and self._start_waits:
            self.waited_s = waited_between(self._start_waits, end)

    @property
    def share(self) -> float | None:
        if self.waited_s is None or self.wall_s <= 0:
            return None
        return self.waited_s / self.wall_s

    def describe(self) -> str:
        if self.waited_s is None:
            return "run-queue wait unknown (no /proc/self/task/*/schedstat)"
        return (f"this process's threads waited {self.waited_s * 1000:.1f} ms for a CPU during "
                f"{self.wall_s * 1000:.1f} ms ({(self.share or 0.0) * 100:.1f} %)")


if __name__ == "__main__":  # pragma: no cover - a quick look on this machine
    for wait, values in measure_lateness().items():
        print(f"wait {wait * 1e3:g} ms: {lateness_summary(values)}")
