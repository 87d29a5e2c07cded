"""Engines that run a sweep without Spark: ``serial`` (this process, one run after the
other: the baseline for scaling measurements, and the simplest thing to debug) and
``local`` (worker processes on this machine, for small studies).

An engine is a context manager with ``slots`` (how many batches run at once) and
``run(batches)``, which yields a ``Completion`` per batch as batches finish, in any order,
and ``None`` now and then while nothing finished (so the caller can show progress).

The local engine keeps its own worker processes, one pipe each, rather than a
``multiprocessing.Pool`` (which waits for ever for the result of a worker the OOM killer
took). The parent watches every worker's pipe and its process sentinel, so:

* a worker that dies (SIGKILL, a crash) loses its batch, which is reported (the next run
  of the sweep does it), and is replaced; the sweep goes on;
* a batch that runs far beyond its time (``len(batch) x run_timeout_s x BATCH_TIME_FACTOR
  + BATCH_GRACE_S``; each run also has its own limit) is reported lost, its worker killed
  and replaced, so nothing can stall the sweep;
* workers die with the sweep: ``PR_SET_PDEATHSIG`` (Linux) or, elsewhere, a thread that
  watches the parent's pid; and they never hold the sweep's lock (``store`` closes its
  descriptor in every forked child).
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from multiprocessing.connection import wait as wait_for
from typing import Any, NamedTuple

from ..errors import EnvironmentFault, ScenarioError
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


# -- worker processes ---------------------------------------------------------------------

#: A batch may take this many times its runs' time limits ...
BATCH_TIME_FACTOR = 2.0
#: ... plus this many seconds (start-up, scenario building, a loaded machine) before it is
#: declared lost and its worker killed.
BATCH_GRACE_S = 120.0
#: Seconds a worker gets to exit after the last batch before it is killed.
EXIT_GRACE_S = 5.0
#: Workers that die one after the other without finishing a batch before the engine
#: gives up (they cannot start: a broken installation, no memory at all).
MAX_FAILED_STARTS = 8
PR_SET_PDEATHSIG = 1


class WorkerLost(Exception):
    """A worker process died, or was killed for running far too long, with a batch."""


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def die_with_parent(parent_pid: int) -> None:
    """Make this (worker) process die when ``parent_pid`` does, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent_pid:  # the parent died before prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass

    def watch() -> None:  # pragma: no cover - not Linux
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="zsim-parent-watch", daemon=True).start()  # pragma: no cover


def _worker_main(conn: Any, payload: Mapping[str, Any], parent_pid: int | None) -> None:
    """A worker's life: run the batches that come down the pipe until told to stop."""
    # Ctrl-C goes to the whole process group; the parent decides what happens (it stops
    # the workers), so a worker must not die half-way through sending a result.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid if parent_pid is not None else os.getppid())
    from . import store

    store.release_inherited_locks()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        batch_id, tasks = message
        try:
            reply: tuple[int, Any, Any] = (batch_id, run_batch(payload, tasks), None)
        except Exception as exc:  # noqa: BLE001 - the parent reports it, the worker goes on
            try:
                pickle.dumps(exc)
                error: BaseException = exc
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                error = RuntimeError(f"{type(exc).__name__}: {exc}")
            reply = (batch_id, None, error)
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


class _Worker:
    def __init__(self, process: Any, conn: Any) -> None:
        self.process = process
        self.conn = conn
        self.batch_id: int | None = None
        self.deadline: float | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid  # type: ignore[no-any-return]


def _death(process: Any) -> str:
    code = process.exitcode
    if code is None:
        return "is gone"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (the out-of-memory killer, or someone, killed it)" if -code == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {code}"


class ProcessEngine:
    """Worker processes on this machine (``--engine local``); see the module docstring."""

    name = "local"
    #: "fork", "forkserver" or "spawn"; None chooses (fork when this process has one thread).
    start_method: str | None = None

    def __init__(self, payload: Mapping[str, Any], workers: int | None = None, run_timeout_s: float | None = None) -> None:
        from ..limits import MAX_JOBS

        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ScenarioError("--workers", f"must be a whole number >= 1, got {workers!r}")
        if workers is not None and workers > MAX_JOBS:  # each a process: --jobs 100000 is a typo, not a plan
            raise ScenarioError("--workers", f"must be at most {MAX_JOBS:,} (zsim.limits.MAX_JOBS), got {workers:,}")
        self.payload = payload
        self.slots = workers or default_workers()
        self.run_timeout_s = run_timeout_s if run_timeout_s is not None else payload.get("run_timeout_s")
        self.workers: list[_Worker] = []
        self.context: Any = None
        self.parent_pid: int | None = None
        self.failed_starts = 0

    def describe(self) -> str:
        return f"local ({self.slots} worker processes)"

    def batch_deadline_s(self, runs: int) -> float | None:
        """Seconds a batch of ``runs`` runs may take before it is lost (None: no limit)."""
        if not self.run_timeout_s:
            return None
        return runs * float(self.run_timeout_s) * BATCH_TIME_FACTOR + BATCH_GRACE_S

    def __enter__(self) -> ProcessEngine:
        methods = multiprocessing.get_all_start_methods()
        method = self.start_method
        if method is None:
            # fork is fastest and needs no ``if __name__ == "__main__"`` guard in the caller's
            # script, but forking a process that runs other threads (a Spark gateway, say) is
            # unsafe; then workers come from a clean fork server with zsim imported.
            if "fork" in methods and threading.active_count() == 1:
                method = "fork"
            else:
                method = "forkserver" if "forkserver" in methods else "spawn"
        self.context = multiprocessing.get_context(method)
        if method == "forkserver":
            self.context.set_forkserver_preload(["zsim.sweep.worker", "zsim.sweep.local"])
        # A forkserver's children are its own, not ours: they die with it, and it with us.
        self.parent_pid = None if method == "forkserver" else os.getpid()
        try:
            for _ in range(self.slots):
                self.workers.append(self._start())
        except BaseException:
            self._stop(kill=True)
            raise
        return self

    def _start(self) -> _Worker:
        parent_end, child_end = self.context.Pipe(duplex=True)
        process = self.context.Process(target=_worker_main, args=(child_end, self.payload, self.parent_pid),
                                       name="zsim-sweep-worker", daemon=True)
        try:
            process.start()
        except OSError as exc:
            parent_end.close()
            raise EnvironmentFault("--engine local", f"cannot start a worker process: {exc.strerror or exc}") from None
        finally:
            child_end.close()  # the worker has its own end; ours must go, or its death is no EOF
        return _Worker(process, parent_end)

    def _replace(self, worker: _Worker) -> None:
        self._kill(worker)
        index = self.workers.index(worker)
        self.workers[index] = self._start()

    @staticmethod
    def _kill(worker: _Worker) -> None:
        if worker.process.is_alive():
            with contextlib.suppress(OSError):
                worker.process.kill()
        worker.process.join(EXIT_GRACE_S)
        with contextlib.suppress(OSError):
            worker.conn.close()

    def _stop(self, kill: bool) -> None:
        if not kill:
            for worker in self.workers:
                with contextlib.suppress(OSError, ValueError):
                    worker.conn.send(None)
            deadline = time.monotonic() + EXIT_GRACE_S
            for worker in self.workers:
                worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in self.workers:
            self._kill(worker)
        self.workers = []

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._stop(kill=exc_type is not None)

    def run(self, batches: Sequence[list[Task]]) -> Iterator[Completion | None]:
        queue: collections.deque[int] = collections.deque(range(len(batches)))
        remaining = len(batches)
        while remaining:
            for worker in self.workers:  # hand out work
                if worker.batch_id is None and queue:
                    batch_id = queue.popleft()
                    try:
                        worker.conn.send((batch_id, task_tuples(batches[batch_id])))
                    except (OSError, ValueError):  # it died while idle: put the batch back, replace it
                        queue.appendleft(batch_id)
                        self._failed_start(worker)
                        continue
                    worker.batch_id = batch_id
                    limit = self.batch_deadline_s(len(batches[batch_id]))
                    worker.deadline = time.monotonic() + limit if limit is not None else None
            busy = [w for w in self.workers if w.batch_id is not None]
            watched: dict[Any, _Worker] = {}
            for worker in busy:
                watched[worker.conn] = worker
                watched[worker.process.sentinel] = worker
            ready = wait_for(list(watched), timeout=TICK_S) if watched else []
            handled: set[int] = set()
            for item in ready:
                worker = watched[item]
                if id(worker) in handled:
                    continue
                handled.add(id(worker))
                completion = self._collect(worker, batches)
                remaining -= 1
                yield completion
            now = time.monotonic()
            for worker in list(self.workers):
                if worker.batch_id is not None and worker.deadline is not None and now > worker.deadline:
                    batch_id = worker.batch_id
                    runs = len(batches[batch_id])
                    error = WorkerLost(f"worker pid {worker.pid} ran a batch of {runs} runs for more than "
                                       f"{self.batch_deadline_s(runs):.0f} s (run_timeout_s {self.run_timeout_s:g} s per run); "
                                       "it was killed")
                    worker.batch_id = None
                    self._replace(worker)
                    remaining -= 1
                    yield Completion(batches[batch_id], None, error)
            if not ready:
                yield None

    def _failed_start(self, worker: _Worker) -> None:
        self.failed_starts += 1
        if self.failed_starts > MAX_FAILED_STARTS:
            raise EnvironmentFault("--engine local", f"worker processes keep dying before they run anything "
                                                     f"({MAX_FAILED_STARTS} in a row; the last {_death(worker.process)})")
        self._replace(worker)

    def _collect(self, worker: _Worker, batches: Sequence[list[Task]]) -> Completion:
        """The result a ready worker sent or, if its pipe closed or its process ended without
        one, its batch lost (the worker is replaced)."""
        batch_id = worker.batch_id
        assert batch_id is not None
        message = None
        try:
            if worker.conn.poll():
                message = worker.conn.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            message = None
        worker.batch_id = None
        worker.deadline = None
        if message is not None and message[0] == batch_id:
            _, rows, error = message
            self.failed_starts = 0
            if not worker.process.is_alive():  # it sent its rows, then died
                self._replace(worker)
            return Completion(batches[batch_id], rows, error)
        worker.process.join(EXIT_GRACE_S)
        lost = WorkerLost(f"worker pid {worker.pid} {_death(worker.process)} while running a batch of {len(batches[batch_id])} runs")
        self._replace(worker)
        return Completion(batches[batch_id], None, lost)
