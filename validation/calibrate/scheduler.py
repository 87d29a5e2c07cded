"""The ``[scheduler]`` section: the cores and what sharing them costs (``zsim.model.cpu``),
measured with processes pinned by ``os.sched_setaffinity``.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from .common import Progress, _pc, _quantile, _round
from .wakeups import measure_wake_cpu

# Small children started with ``sys.executable -c``: each pins itself to one CPU first.
_SPIN_CHILD = """
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
duration, gap = float(sys.argv[2]), float(sys.argv[3])
sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
pc = time.perf_counter
runs = []
cpu0 = time.thread_time()
start = last = run_start = pc()
while last < start + duration:
    now = pc()
    if now - last > gap:
        runs.append(last - run_start)
        run_start = now
    last = now
print(json.dumps({"runs": runs[1:], "cpu_s": time.thread_time() - cpu0, "wall_s": last - start, "start_s": start, "end_s": last}))
"""
_ECHO_CHILD = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
os.write(1, b"r")
while os.read(0, 1):
    os.write(1, b"x")
"""


def _start(code: str, *args: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=False)


@contextlib.contextmanager
def _pinned(cpu: int) -> Iterator[None]:
    """This process on ``cpu`` alone, its affinity restored afterwards."""
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def _go(child: subprocess.Popen) -> None:
    """Wait for a ``_SPIN_CHILD`` to be ready, then start it."""
    assert child.stdout is not None and child.stdin is not None
    child.stdout.readline()
    child.stdin.write(b"go\n")
    child.stdin.flush()


def _spinners(cpus: Sequence[int], duration_s: float, gap_s: float = 20e-6) -> list[dict]:
    """Busy loops pinned to ``cpus`` (one each), started together: per spinner the lengths of
    its uninterrupted runs (a jump of the clock over ``gap_s`` is someone else's slice), the
    CPU it got in ``duration_s``, and its window on the shared monotonic clock (``start_s``,
    ``end_s``: the spinners start when each is first scheduled, not at once)."""
    children = [_start(_SPIN_CHILD, cpu, duration_s, gap_s) for cpu in cpus]
    try:
        for child in children:
            _go(child)
        return [json.loads(child.communicate(timeout=duration_s + 30)[0]) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(5)


def _round_trips(cpu_self: int, cpu_other: int, count: int) -> float:
    """Median time of one byte there and back through two pipes, this process on
    ``cpu_self`` and an echo child on ``cpu_other``; on one CPU each round trip is two
    context switches (lmbench's lat_ctx)."""
    child = _start(_ECHO_CHILD, cpu_other)
    assert child.stdin is not None and child.stdout is not None
    try:
        with _pinned(cpu_self):
            out, inp = child.stdin.fileno(), child.stdout.fileno()
            os.read(inp, 1)
            times = []
            for _ in range(count):
                start = _pc()
                os.write(out, b"x")
                os.read(inp, 1)
                times.append(_pc() - start)
            return statistics.median(times)
    finally:
        child.stdin.close()
        child.wait(5)


def _sleep_lateness(cpu: int, count: int, sleep_s: float = 0.001) -> float:
    """Median lateness of ``time.sleep(sleep_s)`` for this process pinned to ``cpu``."""
    with _pinned(cpu):
        late = []
        for _ in range(count):
            start = _pc()
            time.sleep(sleep_s)
            late.append(_pc() - start - sleep_s)
        return statistics.median(late)


def measure_scheduler(quick: bool, progress: Progress) -> tuple[dict, dict]:
    """The ``[scheduler]`` section: the cores this process may use and what sharing them
    costs, measured with pinned processes (``os.sched_setaffinity``), so it needs no
    second core to be idle:

    - ``timeslice_s``: two busy loops pinned to one CPU; each sees the clock jump when the
      other runs; the median uninterrupted run is the slice the scheduler gives a thread
      that shares its core;
    - ``context_switch_s``: a byte there and back between two processes pinned to one CPU
      (two switches a round trip, each with its write and read), halved;
    - ``wakeup_s``: how much later a 1 ms sleep ends when a busy loop holds its CPU than
      when the CPU is idle;
    - ``io_wake_s``: the CPU an idle I/O thread spends on one event (``measure_wake_cpu``,
      the mean of the sending and the receiving side);
    - ``cores``: how many CPUs this process may use, every scenario's default ``[machine]
      cores`` (the notes list them: ``cpus``);
    - notes: the share two busy loops on one CPU each get (the model's efficiency,
      timeslice / (timeslice + switch), is checked against it) and the application
      threads' CPU of waking up, which the model does not charge yet.
    """
    cpus = sorted(os.sched_getaffinity(0))
    duration = 0.5 if quick else 2.0
    count = 2000 if quick else 20000
    cpu = cpus[-1]
    shared = _spinners([cpu, cpu], duration)
    runs = sorted(r for spinner in shared for r in spinner["runs"])
    timeslice = _quantile(runs, 0.5) if runs else 0.0
    share = statistics.mean(spinner["cpu_s"] / spinner["wall_s"] for spinner in shared)
    # a round trip on one CPU is two switches, each with a write and a read: half of it is
    # an upper bound of one switch (on two CPUs the wake-up crosses CPUs, which costs more
    # on a VM, so the difference would not isolate the switch)
    same = _round_trips(cpu, cpu, count)
    other = cpus[0] if len(cpus) > 1 else cpu
    apart = _round_trips(other, cpu, count) if other != cpu else same
    switch = same / 2
    idle_late = _sleep_lateness(cpu, count // 20)
    hog = _start(_SPIN_CHILD, cpu, 60.0, 1.0)
    try:
        _go(hog)
        busy_late = _sleep_lateness(cpu, count // 20)
    finally:
        hog.kill()
        hog.wait(5)
    wakeup = max(0.0, busy_late - idle_late)
    wake = measure_wake_cpu(quick)
    # the cores this process may use: every scenario's default [machine] cores (contention
    # on, as on the machine measured; a scenario says cores = 0 for a core per thread)
    section = {
        "cores": len(cpus),
        "context_switch_s": _round(switch, 9),
        "wakeup_s": _round(wakeup, 9),
        "timeslice_s": _round(timeslice, 9),
        "io_wake_s": _round((wake["receiver_io_event_s"] + wake["sender_io_event_s"]) / 2, 9),
    }
    model_efficiency = timeslice / (timeslice + switch) if timeslice > 0 else 1.0
    notes = {
        "cpus": cpus,
        "shared_cpu": cpu,
        "slices": len(runs),
        "timeslice_quartiles_s": [_round(_quantile(runs, q), 9) for q in (0.25, 0.5, 0.75)] if runs else [],
        "two_spinners_share_each": _round(share, 4),
        "model_share_each": _round(0.5 * model_efficiency, 4),
        "round_trip_same_cpu_s": _round(same, 9),
        "round_trip_two_cpus_s": _round(apart, 9),
        "sleep_1ms_lateness_idle_s": _round(idle_late, 9),
        "sleep_1ms_lateness_cpu_taken_s": _round(busy_late, 9),
        "wake_cpu": wake,
    }
    progress(f"  scheduler: {len(cpus)} cores, slice {timeslice * 1e3:.2f} ms, switch {switch * 1e6:.1f} us, "
             f"wake-up behind a busy thread {wakeup * 1e6:.0f} us; two busy loops on one core get "
             f"{share:.3f} each (model {0.5 * model_efficiency:.3f})")
    progress(f"  waking costs CPU: receiving I/O thread {wake['receiver_io_event_s'] * 1e6:.1f} us, blocked recv "
             f"{wake['receiver_app_wake_s'] * 1e6:.1f} us, sending I/O thread {wake['sender_io_event_s'] * 1e6:.1f} us "
             f"per message one at a time")
    return section, notes
