"""Shared by the measurements: endpoints, child processes, contexts and sockets, the
bare send/recv timing loops, quantiles, summaries and rounding, and the machine's description.
"""

from __future__ import annotations

import contextlib
import datetime
import glob
import math
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import zmq

from zsim.profile import FORMAT as PROFILE_FORMAT

EMPIRICAL_POINTS = 50

_SPAWN = multiprocessing.get_context("spawn")
_pc = time.perf_counter

Progress = Callable[[str], Any]


class _Endpoints:
    """Hands out inproc names and ipc paths; ipc paths live in one temporary directory."""

    def __init__(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="zsim-calib-")
        self._count = 0

    def bind(self, sock: zmq.Socket, transport: str) -> str:
        """Bind ``sock`` on a fresh endpoint of ``transport`` and return the bound endpoint."""
        self._count += 1
        if transport == "tcp":
            sock.bind("tcp://127.0.0.1:0")
            return sock.getsockopt_string(zmq.LAST_ENDPOINT)
        if transport == "ipc":
            endpoint = f"ipc://{self.tmpdir}/s{self._count}"
        elif transport == "inproc":
            endpoint = f"inproc://calib-{os.getpid()}-{self._count}"
        else:
            raise ValueError(f"unknown transport {transport!r}")
        sock.bind(endpoint)
        return endpoint

    def close(self) -> None:
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@contextlib.contextmanager
def _endpoints() -> Iterator[_Endpoints]:
    endpoints = _Endpoints()
    try:
        yield endpoints
    finally:
        endpoints.close()


def _bind_in_tmp(sock: zmq.Socket, transport: str, tmpdir: str, name: str) -> str:
    """Bind in a child process (which cannot share an ``_Endpoints`` object)."""
    if transport == "tcp":
        sock.bind("tcp://127.0.0.1:0")
        return sock.getsockopt_string(zmq.LAST_ENDPOINT)
    if transport == "ipc":
        endpoint = f"ipc://{tmpdir}/{name}"
        sock.bind(endpoint)
        return endpoint
    raise ValueError(f"transport {transport!r} cannot cross processes")


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of already sorted values (q in [0, 1])."""
    if not sorted_values:
        return math.nan
    position = q * (len(sorted_values) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(sorted_values) - 1)
    frac = position - low
    return sorted_values[low] * (1 - frac) + sorted_values[high] * frac


def _round(value: float, digits: int = 6) -> float:
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits}g}")


def _empirical(values: Sequence[float], points: int = EMPIRICAL_POINTS) -> dict:
    """zsim's empirical distribution: up to ``points`` sorted values (quantiles when more)."""
    ordered = sorted(values)
    if len(ordered) > points:
        ordered = [_quantile(ordered, i / (points - 1)) for i in range(points)]
    return {"dist": "empirical", "values_s": [_round(v) for v in ordered]}


def _summary(values: Sequence[float], scale: float = 1.0) -> dict:
    """Summary statistics for the notes (values multiplied by ``scale``)."""
    ordered = sorted(v * scale for v in values)
    if not ordered:
        return {"n": 0}
    return {
        "n": len(ordered),
        "min": _round(ordered[0], 4),
        "p10": _round(_quantile(ordered, 0.10), 4),
        "median": _round(_quantile(ordered, 0.50), 4),
        "mean": _round(statistics.fmean(ordered), 4),
        "p90": _round(_quantile(ordered, 0.90), 4),
        "max": _round(ordered[-1], 4),
    }


def _median_int(values: Sequence[int]) -> int:
    return int(round(statistics.median(values)))


def _thread_cpu_ns(tid: int) -> int:
    """CPU time of one thread of this process, in ns (schedstat, else utime+stime ticks)."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        with open(f"/proc/self/task/{tid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        return int(ticks * 1e9 / os.sysconf("SC_CLK_TCK"))


def _zmq_io_threads(timeout_s: float = 2.0) -> set[int]:
    """Thread ids of this process's libzmq I/O threads (named ``ZMQbg/IO/<n>``).

    A context starts its threads with its first socket; each thread names itself when it starts
    running, so we poll briefly for the name.
    """
    deadline = _pc() + timeout_s
    while True:
        tids = set()
        for task in glob.glob("/proc/self/task/*"):
            try:
                with open(task + "/comm") as handle:
                    if handle.read().startswith("ZMQbg/IO/"):
                        tids.add(int(os.path.basename(task)))
            except OSError:
                continue
        if tids or _pc() > deadline:
            return tids
        time.sleep(0.001)


def _child_entry(func: Callable[..., Any], conn: Any, kwargs: dict) -> None:
    try:
        result = func(conn, **kwargs)
        conn.send(("__ok__", result))
    except BaseException:  # report everything, including KeyboardInterrupt, to the parent
        with contextlib.suppress(Exception):
            conn.send(("__error__", traceback.format_exc()))
    finally:
        conn.close()


class _Child:
    """A spawned process running ``func(conn, **kwargs)``; ``conn`` is a duplex pipe end.

    ``func`` may ``conn.send`` intermediate messages (read with ``recv``) and returns its result
    (read with ``result``). Every read has a timeout; ``close`` terminates a process that overruns.
    """

    def __init__(self, func: Callable[..., Any], **kwargs: Any) -> None:
        self.conn, child_conn = _SPAWN.Pipe()
        self.proc = _SPAWN.Process(target=_child_entry, args=(func, child_conn, kwargs), daemon=True)
        self.proc.start()
        child_conn.close()

    def _read(self, timeout: float) -> Any:
        if not self.conn.poll(timeout):
            raise TimeoutError(f"child {self.proc.name} silent for {timeout} s")
        try:
            message = self.conn.recv()
        except EOFError as exc:
            raise RuntimeError(f"child {self.proc.name} died (exit code {self.proc.exitcode})") from exc
        if isinstance(message, tuple) and len(message) == 2 and message[0] == "__error__":
            raise RuntimeError(f"child {self.proc.name} failed:\n{message[1]}")
        return message

    def recv(self, timeout: float) -> Any:
        message = self._read(timeout)
        if isinstance(message, tuple) and len(message) == 2 and message[0] == "__ok__":
            raise RuntimeError("child finished while an intermediate message was expected")
        return message

    def send(self, obj: Any) -> None:
        self.conn.send(obj)

    def result(self, timeout: float) -> Any:
        message = self._read(timeout)
        if not (isinstance(message, tuple) and len(message) == 2 and message[0] == "__ok__"):
            raise RuntimeError(f"unexpected message from child: {message!r}")
        return message[1]

    def close(self) -> None:
        self.proc.join(timeout=3)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=2)
        self.conn.close()


@contextlib.contextmanager
def _children(*children: _Child) -> Iterator[tuple[_Child, ...]]:
    try:
        yield children
    finally:
        for child in children:
            child.close()


@contextlib.contextmanager
def _contexts(count: int) -> Iterator[list[zmq.Context]]:
    """``count`` fresh contexts, destroyed with linger 0 on exit."""
    made = [zmq.Context() for _ in range(count)]
    try:
        yield made
    finally:
        for ctx in made:
            ctx.destroy(linger=0)


def _socket(ctx: zmq.Context, kind: int, **options: int) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.linger = 0
    for name, value in options.items():
        sock.setsockopt(getattr(zmq, name.upper()), value)
    return sock


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def tsc_hz() -> tuple[float, str]:
    """The TSC frequency and where it came from.

    Preference: the kernel's refined TSC calibration in ``dmesg``, then its detected value, then
    ``cpu MHz`` from ``/proc/cpuinfo`` (equal to the TSC rate when the CPU has ``constant_tsc``;
    an approximation otherwise).
    """
    with contextlib.suppress(Exception):
        text = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
        refined = re.findall(r"tsc: Refined TSC clocksource calibration: ([0-9.]+) MHz", text)
        if refined:
            return float(refined[-1]) * 1e6, "dmesg 'Refined TSC clocksource calibration'"
        detected = re.findall(r"tsc: Detected ([0-9.]+) MHz processor", text)
        if detected:
            return float(detected[-1]) * 1e6, "dmesg 'tsc: Detected ... MHz processor'"
    with contextlib.suppress(Exception):
        with open("/proc/cpuinfo") as handle:
            text = handle.read()
        mhz = re.findall(r"cpu MHz\s*:\s*([0-9.]+)", text)
        flags = "constant_tsc" in text
        if mhz:
            return float(mhz[0]) * 1e6, "/proc/cpuinfo 'cpu MHz'" + (" (constant_tsc)" if flags else "")
    return 3e9, "fallback 3 GHz (no TSC information found)"


def _machine_section(quick: bool) -> dict:
    cores = os.cpu_count() or 1
    cpu = _cpu_model()
    short_cpu = re.sub(r"[^a-z0-9]+", "-", cpu.lower().replace("(r)", "").replace("(tm)", "")).strip("-")
    return {
        "format": PROFILE_FORMAT,  # what makes the file a profile (zsim.profile.check_is_profile)
        "name": f"{platform.system().lower()}-{platform.machine()}-loopback-{short_cpu}-{cores}cores",
        "measured_on": datetime.date.today().isoformat(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": f"{cpu}, {cores} cores",
        "libzmq": zmq.zmq_version(),
        "pyzmq": zmq.__version__,
        "python": platform.python_version(),
        "quick": quick,
    }


def _time_send_loop(sock: zmq.Socket, count: int, payload: bytes) -> float:
    send = sock.send
    start = _pc()
    for _ in range(count):
        send(payload)
    return (_pc() - start) / count


def _time_recv_loop(sock: zmq.Socket, count: int) -> float:
    """Mean ``recv()`` of ``count`` messages already queued on ``sock``."""
    recv = sock.recv
    start = _pc()
    for _ in range(count):
        recv()
    return (_pc() - start) / count
