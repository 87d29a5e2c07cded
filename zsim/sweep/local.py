"""Engines that run a sweep without Spark: ``serial`` (this process, one run after the
other: the baseline for scaling measurements, and the simplest thing to debug) and
``local`` (a pool of worker processes on this machine, for small studies).

An engine is a context manager with ``slots`` (how many batches run at once) and
``run(batches)``, which yields a ``Completion`` per batch as batches finish, in any order,
and ``None`` now and then while nothing finished (so the caller can show progress).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .plan import Task
from .worker import run_batch

#: Seconds between progress ticks when no batch finished.
TICK_S = 1.0


class Completion(NamedTuple):
    batch: list[Task]
    rows: list[dict[str, Any]] | None
    error: BaseException | None


def task_tuples(batch: Sequence[Task]) -> list[tuple[str, int, int]]:
    return [(task.point, task.replication, task.seed) for task in batch]


class SerialEngine:
    """Every run in this process, in order."""

    name = "serial"
    slots = 1

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.payload = payload

    def __enter__(self) -> SerialEngine:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def describe(self) -> str:
        return "serial (this process)"

    def run(self, batches: Sequence[list[Task]]) -> Iterator[Completion | None]:
        for batch in batches:
            try:
                rows = run_batch(self.payload, task_tuples(batch))
            except Exception as exc:  # noqa: BLE001 - reported by the caller, the sweep goes on
                yield Completion(batch, None, exc)
            else:
                yield Completion(batch, rows, None)


# -- process pool ------------------------------------------------------------------------

_PAYLOAD: Mapping[str, Any] | None = None


def _init_worker(payload: Mapping[str, Any]) -> None:
    global _PAYLOAD
    # Ctrl-C goes to the whole process group; the parent decides what happens (it stops
    # the pool), so a worker must not die half-way through pickling a result.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _PAYLOAD = payload


def _run_in_worker(tasks: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    assert _PAYLOAD is not None
    return run_batch(_PAYLOAD, tasks)


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class ProcessEngine:
    """A ``multiprocessing`` pool on this machine (``--engine local``)."""

    name = "local"

    def __init__(self, payload: Mapping[str, Any], workers: int | None = None) -> None:
        self.payload = payload
        self.slots = workers or default_workers()
        self.pool: Any = None

    def describe(self) -> str:
        return f"local ({self.slots} worker processes)"

    def __enter__(self) -> ProcessEngine:
        methods = multiprocessing.get_all_start_methods()
        # fork is fastest and needs no ``if __name__ == "__main__"`` guard in the caller's
        # script, but forking a process that runs other threads (a Spark gateway, say) is
        # unsafe; then workers come from a clean fork server with zsim imported.
        if "fork" in methods and threading.active_count() == 1:
            method = "fork"
        else:
            method = "forkserver" if "forkserver" in methods else "spawn"
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["zsim.sweep.worker"])
        self.pool = context.Pool(self.slots, initializer=_init_worker, initargs=(self.payload,))
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self.pool is None:
            return
        if exc_type is None:
            self.pool.close()
        else:
            self.pool.terminate()
        self.pool.join()
        self.pool = None

    def run(self, batches: Sequence[list[Task]]) -> Iterator[Completion | None]:
        done: queue.Queue[Completion] = queue.Queue()
        for batch in batches:
            self.pool.apply_async(
                _run_in_worker,
                (task_tuples(batch),),
                callback=lambda rows, batch=batch: done.put(Completion(batch, rows, None)),
                error_callback=lambda exc, batch=batch: done.put(Completion(batch, None, exc)),
            )
        for _ in range(len(batches)):
            while True:
                try:
                    item = done.get(timeout=TICK_S)
                except queue.Empty:
                    yield None
                    continue
                yield item
                break
