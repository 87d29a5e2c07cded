"""Measure, with real pyzmq over loopback, the timing and buffer parameters of a zsim profile.

The simulator (``zsim``) never imports ``zmq``; this module is its only link to the machine.
``calibrate()`` runs a fixed set of measurements and returns (and optionally writes as TOML)
the calibration profile that ``zsim/profiles/*.toml`` holds:

- ``[api]``: cost of one pyzmq ``send``/``recv`` call, the libzmq command throttle
  (``max_command_delay`` = 3,000,000 TSC ticks, ``src/config.hpp``), the overshoot of
  ``time.sleep(0.001)`` and ``timer_jitter_s``, the lateness of the harness's precise wait
  (``validation.timing.wait_until``) for waits of 1, 10 and 100 ms;
- ``[inproc]``, ``[tcp]``, ``[ipc]``: connection set-up delay, subscription travel time and
  one-way latency as distributions; for tcp and ipc also the I/O-thread (engine) cost per message
  and per byte;
- ``[tcp.kernel]``, ``[ipc.kernel]``: how many messages a PUSH can hand to a PULL that never
  reads, per payload size and HWM pair (pipes + engine batches + kernel buffers).

``run_experiments()`` runs the validation experiments documented in
``validation/calibration-notes.md`` (slow joiner, the ipc termination loss of libzmq issue #4660,
PUB/SUB drops under backpressure, PUB and DONTWAIT); they are not part of the profile.

Every measurement is bounded in time (socket timeouts, poll timeouts, process join timeouts),
uses tcp ports chosen by the kernel (``tcp://127.0.0.1:0`` + ``LAST_ENDPOINT``) and ipc paths in a
``tempfile.mkdtemp()`` directory that is removed afterwards. Work that must happen in a different
OS process (engine throughput, ping-pong, context termination) runs in ``spawn`` children.

Clocks: ``time.perf_counter()`` is ``CLOCK_MONOTONIC`` on Linux, shared by all processes, so
timestamps taken in different processes are compared directly.

Usage::

    python -m validation.calibrate --out zsim/profiles/default.toml [--quick]
    python -m validation.calibrate --experiments results.json [--quick]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime
import glob
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import zmq

from zsim.calibration import fit_kernel
from zsim.errors import EnvironmentFault
from zsim.tomlw import to_toml

__all__ = ["calibrate", "run_experiments", "to_toml", "main"]

# libzmq 4.3.5 src/config.hpp: max_command_delay = 3000000 (TSC ticks).
MAX_COMMAND_DELAY_TICKS = 3_000_000
KERNEL_PAYLOADS = [10, 100, 1000, 10000, 100000, 1000000]
ENGINE_PAYLOADS = [10, 100, 1000, 10000, 100000, 1000000]
EMPIRICAL_POINTS = 50

_SPAWN = multiprocessing.get_context("spawn")
_pc = time.perf_counter
_SEQ = struct.Struct("<Q")

Progress = Callable[[str], Any]


# --------------------------------------------------------------------------------------------
# Small helpers: endpoints, statistics, thread CPU clocks, child processes
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Machine description
# --------------------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _tsc_hz() -> tuple[float, str]:
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
        "name": f"{platform.system().lower()}-{platform.machine()}-loopback-{short_cpu}-{cores}cores",
        "measured_on": datetime.date.today().isoformat(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": f"{cpu}, {cores} cores",
        "libzmq": zmq.zmq_version(),
        "pyzmq": zmq.__version__,
        "python": platform.python_version(),
        "quick": quick,
    }


# --------------------------------------------------------------------------------------------
# [api]
# --------------------------------------------------------------------------------------------

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


def measure_api(quick: bool, progress: Progress) -> tuple[dict, dict]:
    """The ``[api]`` section and its notes."""
    count = 20_000 if quick else 200_000
    repeats = 3 if quick else 7
    payload = b"x" * 10
    notes: dict[str, Any] = {"count_per_repeat": count, "repeats": repeats}

    pub_means, push_reader_means, push_unlimited_means, recv_means = [], [], [], []
    with _endpoints() as endpoints, _contexts(1) as (ctx,):
        for _ in range(repeats):
            # PUB with no subscriber: every message is dropped by dist_t (nothing matches).
            pub = _socket(ctx, zmq.PUB)
            endpoints.bind(pub, "inproc")
            pub_means.append(_time_send_loop(pub, count, payload))
            pub.close()

            # PUSH -> PULL over inproc with a reader thread draining as fast as it can.
            pull = _socket(ctx, zmq.PULL, rcvtimeo=10_000)
            endpoint = endpoints.bind(pull, "inproc")
            push = _socket(ctx, zmq.PUSH, sndtimeo=10_000)
            push.connect(endpoint)

            def reader(sock: zmq.Socket = pull) -> None:
                recv = sock.recv
                with contextlib.suppress(zmq.Again):
                    for _ in range(count):
                        recv()

            thread = threading.Thread(target=reader, daemon=True)
            thread.start()
            push_reader_means.append(_time_send_loop(push, count, payload))
            thread.join(timeout=15)

            # Same pair with unlimited HWMs and no reader: the send call alone.
            push.sndhwm = 0
            pull.rcvhwm = 0
            push_unlimited_means.append(_time_send_loop(push, count, payload))
            # recv() with the messages already queued (the "full queue" case).
            recv_means.append(_time_recv_loop(pull, count))
            push.close()
            pull.close()

    throttle = measure_command_throttle(quick)
    sleep_late = measure_sleep_late(quick)
    jitter = measure_timer_jitter(quick)
    dropped = measure_send_dropped(quick)
    api: dict[str, Any] = {
        "send_call_s": _round(statistics.median(push_reader_means)),
        "send_drop_call_s": _round(dropped["median_s"]),
        "recv_call_s": _round(statistics.median(recv_means)),
        "command_throttle_s": _round(throttle["computed_s"]),
        "sleep_late_s": sleep_late["tables"],
        "timer_jitter_s": {"dist": "empirical", "values_s": jitter["values_s"]},
    }
    notes.update(
        sleep_late={key: value for key, value in sleep_late.items() if key != "tables"},
        timer_jitter={key: value for key, value in jitter.items() if key != "pooled_s"},
        send_pub_no_subscriber_s=_summary(pub_means),
        send_push_inproc_reader_thread_s=_summary(push_reader_means),
        send_push_inproc_unlimited_no_reader_s=_summary(push_unlimited_means),
        recv_queued_inproc_s=_summary(recv_means),
        command_throttle=throttle,
        send_dropped=dropped,
    )
    progress(
        f"  api: send PUB {statistics.median(pub_means) * 1e6:.3f} us, PUSH+reader "
        f"{api['send_call_s'] * 1e6:.3f} us, recv {api['recv_call_s'] * 1e6:.3f} us, throttle "
        f"{api['command_throttle_s'] * 1e3:.4f} ms (observed {throttle['observed_median_s'] * 1e3:.4f} ms), "
        f"sleep late median {sleep_late['per_wait']['1ms']['median_us']:.1f} us, timer jitter median "
        f"{jitter['per_wait']['1ms']['median_us']:.1f} us (p99 {jitter['per_wait']['1ms']['p99_us']:.1f} us)"
    )
    return api, notes


def measure_send_dropped(quick: bool) -> dict:
    """``send_drop_call_s``: a PUB send that queues nothing (the only subscriber, over tcp in
    its own context, is stalled and its pipe full), one sender thread, back to back."""
    count = 20_000 if quick else 200_000
    repeats = 3 if quick else 5
    means = []
    for _ in range(repeats):
        with _contexts(2) as (pub_ctx, sub_ctx):
            pub = _socket(pub_ctx, zmq.PUB, sndhwm=10)
            pub.bind("tcp://127.0.0.1:0")
            endpoint = pub.getsockopt_string(zmq.LAST_ENDPOINT)
            sub = _socket(sub_ctx, zmq.SUB, rcvhwm=10)
            sub.setsockopt(zmq.SUBSCRIBE, b"")
            sub.connect(endpoint)
            time.sleep(0.2)
            payload = b"x" * 100
            for _ in range(5000):  # fill the pipe and the kernel: from here on it drops
                pub.send(payload)
            means.append(_time_send_loop(pub, count, payload))
    return {**_summary(means), "median_s": statistics.median(means), "count_per_repeat": count,
            "method": "PUB (SNDHWM 10) to a stalled SUB over tcp, 100 B, after 5,000 warm-up sends"}


def measure_app_loop(quick: bool) -> dict:
    """``send_loop_s`` and ``recv_loop_s``: the validation harness's own application loop per
    attempt, beyond the ZeroMQ call: not the machine's (no profile holds it) but the
    harness's, declared in ``validation/harness-program.toml``
    (``validation.harness_program``). The harness itself runs (``run_real``, its own child
    process, as in ``zsim validate``): a PUB with no subscriber sends back to back (every
    send drops in ``dist_t``, the cheapest call), and a PULL drains messages a PUSH of the
    same process queued before it started. What an attempt takes there, less the same call
    with the same 64-byte message timed in a bare loop here (a PUB without subscriber; a
    ``recv()`` of a queued message), is the loop's work: building the frames, the generator
    and its scheduler, the statistics. (The size matters: a message over 33 bytes is
    allocated, a shorter one is not.)"""
    from validation.harness import run_real

    count = 20_000 if quick else 100_000
    size = 64  # carries the full header: the receiver records a latency, as most runs do
    # one after the other, so that no two of the process's threads share the GIL: the PUSH
    # fills, the PULL drains, then the PUB drops (at most 10 us a message each)
    fill_start = 0.2
    recv_start = fill_start + count * 10e-6 + 0.3
    send_start = recv_start + count * 10e-6 + 0.3
    raw = {
        "scenario": {"name": "app-loop", "profile": "ideal"},
        "process": [{"name": "a"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "a", "bind": ["inproc://loop-pub"]},
            {"name": "push", "type": "PUSH", "process": "a", "bind": ["inproc://loop-pull"],
             "options": {"sndhwm": 0}},
            {"name": "pull", "type": "PULL", "process": "a", "connect": ["inproc://loop-pull"],
             "options": {"rcvhwm": 0}},
        ],
        "send": [
            {"socket": "pub", "name": "drops", "count": count, "size_bytes": size, "start_s": send_start},
            {"socket": "push", "name": "fill", "count": count, "size_bytes": size, "start_s": fill_start},
        ],
        "recv": [{"socket": "pull", "count": count, "start_s": recv_start}],
    }
    payload = b"x" * size
    bare_sends, bare_recvs = [], []
    with _contexts(1) as (ctx,):
        for index in range(3 if quick else 5):
            pub = _socket(ctx, zmq.PUB)
            pub.bind(f"inproc://loop-bare-pub-{index}")
            bare_sends.append(_time_send_loop(pub, count, payload))
            pub.close()
            pull = _socket(ctx, zmq.PULL, rcvhwm=0)
            pull.bind(f"inproc://loop-bare-pull-{index}")
            push = _socket(ctx, zmq.PUSH, sndhwm=0)
            push.connect(f"inproc://loop-bare-pull-{index}")
            for _ in range(count):
                push.send(payload)
            bare_recvs.append(_time_recv_loop(pull, count))
            push.close()
            pull.close()
    bare_send_s, bare_recv_s = statistics.median(bare_sends), statistics.median(bare_recvs)
    sends, recvs = [], []
    for seed in range(2 if quick else 3):
        summary = run_real(raw, seed, timeout_s=60 + count * 1e-4)
        finished = summary["senders"]["drops"].get("finished_at_s")
        pulled = summary["sockets"]["pull"]
        first_recv, last_recv = pulled.get("first_recv_s"), pulled.get("last_recv_s")
        if finished is not None and (last_recv or 0.0) < send_start:  # else they overlapped
            sends.append((finished - send_start) / count)
        if pulled["received"] == count and first_recv is not None and last_recv is not None:
            recvs.append((last_recv - first_recv) / (count - 1))
    if not sends or not recvs:
        # never a figure that looks measured (max(0.0, nan) would be 0.0)
        raise EnvironmentFault("calibrate: harness loop." + ("send_cpu_s" if not sends else "recv_cpu_s"),
                               "no harness run measured it (the phases overlapped or messages went missing: "
                               "the machine was too busy); run calibrate again on a quieter machine")
    send_attempt, recv_message = statistics.median(sends), statistics.median(recvs)
    return {
        "send_loop_s": max(0.0, send_attempt - bare_send_s),
        "recv_loop_s": max(0.0, recv_message - bare_recv_s),
        "send_attempt_s": _summary(sends),
        "recv_message_s": _summary(recvs),
        "bare_send_s": bare_send_s,
        "bare_recv_s": bare_recv_s,
        "count_per_run": count,
        "size_bytes": size,
        "method": ("validation harness, one process: a PUB without subscriber sending back to back "
                   "(finished_at - start) / count, and a PULL draining messages already queued "
                   "(last_recv - first_recv) / (count - 1); less the bare call of the same kind"),
    }


def harness_program_toml(loop: dict) -> str:
    """``validation/harness-program.toml`` from ``measure_app_loop``'s result."""
    head = ("# The validation harness's own loop, beyond a bare pyzmq loop (validation/harness_program.py),\n"
            "# written by python -m validation.calibrate --harness-program (measure_app_loop):\n"
            f"# {loop['method']}.\n\n")
    return head + to_toml({
        "machine": {"measured_on": time.strftime("%Y-%m-%d"), "machine": _cpu_model(), "python": platform.python_version(),
                    "pyzmq": zmq.__version__},
        "loop": {"send_cpu_s": _round(loop["send_loop_s"]), "recv_cpu_s": _round(loop["recv_loop_s"])},
    })


def measure_send_wake_cost(transport: str, quick: bool) -> dict:
    """``[<transport>] send_wake_cost``: how long a send() call takes when the thread it
    wakes (the I/O thread; for inproc the receiving application thread) has slept for a
    while: one message every 0.1 ms and every 1 ms, run through the validation harness
    itself (sender and receiver in their own processes, as in ``zsim validate``), which
    times each send call alone (``real.send_call_s``). On a 2-vCPU VM the woken thread
    often runs first on the sender's core, and the sender pays for it."""
    from validation.harness import run_real

    gaps = (0.0001, 0.001)
    sends = 150 if quick else 600
    endpoint = {"inproc": "inproc://wake", "ipc": "ipc://wake", "tcp": "tcp://127.0.0.1:5555"}[transport]
    per_gap: dict[str, Any] = {}
    for gap in gaps:
        processes = [{"name": "a"}] if transport == "inproc" else [{"name": "a"}, {"name": "b"}]
        raw = {
            "scenario": {"name": f"wake-{transport}-{gap}", "profile": "ideal"},
            "process": processes,
            "socket": [
                {"name": "push", "type": "PUSH", "process": "a", "connect": [endpoint], "open_at_s": 0.05},
                {"name": "pull", "type": "PULL", "process": processes[-1]["name"], "bind": [endpoint]},
            ],
            "send": [{"socket": "push", "count": sends, "interval_s": gap, "size_bytes": 16, "start_s": 0.3}],
            "recv": [{"socket": "pull"}],
        }
        values = []
        for seed in range(2 if quick else 3):
            summary = run_real(raw, seed, timeout_s=30)
            call = (summary.get("real") or {}).get("send_call_s")
            if call is not None:
                values.append(call)
        per_gap[f"{gap * 1e3:g}ms"] = {"median_s": statistics.median(values) if values else None, "runs_s": values}
    costs = [per_gap[f"{gap * 1e3:g}ms"]["median_s"] or 0.0 for gap in gaps]
    return {
        "idle_s": list(gaps),
        "cost_s": [_round(c) for c in costs],
        "per_gap": per_gap,
        "method": "validation harness: PUSH -> PULL, one 16-byte message per gap, mean send() call (real.send_call_s)",
    }


def measure_command_throttle(quick: bool) -> dict:
    """``max_command_delay`` in seconds: computed from the TSC rate, and observed.

    Observation (inproc, one thread): a PUSH (SNDHWM 1) -> PULL (RCVHWM 1) pipe (summed HWM 2,
    LWM 1) is filled with DONTWAIT sends after an idle gap (so the first send processes commands
    and restarts the throttle window), then the PULL drains it, which posts ``activate_write`` to
    the PUSH's mailbox. DONTWAIT sends that fail do not look at the mailbox, and the throttled
    ``process_commands(0, true)`` at the start of ``send`` only does so once 3e6 ticks have passed
    since the window started; the first successful send therefore comes one throttle period after
    the first fill send.
    """
    hz, source = _tsc_hz()
    computed = MAX_COMMAND_DELAY_TICKS / hz
    repeats = 15 if quick else 60
    observed: list[float] = []
    with _contexts(1) as (ctx,):
        pull = _socket(ctx, zmq.PULL, rcvhwm=1, rcvtimeo=1000)
        pull.bind(f"inproc://throttle-{os.getpid()}")
        push = _socket(ctx, zmq.PUSH, sndhwm=1)
        push.connect(f"inproc://throttle-{os.getpid()}")
        for _ in range(repeats):
            time.sleep(0.005)
            window_start = _pc()
            filled = 0
            while True:
                try:
                    push.send(b"x", zmq.DONTWAIT)
                    filled += 1
                except zmq.Again:
                    break
            for _ in range(filled):
                pull.recv()
            spin_start = _pc()
            while _pc() - spin_start < 0.05:
                try:
                    push.send(b"x", zmq.DONTWAIT)
                except zmq.Again:
                    continue
                observed.append(_pc() - window_start)
                pull.recv()
                break
    return {
        "tsc_hz": hz,
        "tsc_source": source,
        "max_command_delay_ticks": MAX_COMMAND_DELAY_TICKS,
        "computed_s": computed,
        "observed_s": _summary(observed),
        "observed_median_s": statistics.median(observed) if observed else math.nan,
    }


SLEEP_WAITS_S = (0.0001, 0.001, 0.01, 0.1)


def measure_sleep_late(quick: bool) -> dict:
    """``[api] sleep_late_s``: how late a plain ``time.sleep`` returns, per sleep length.

    The simulator adds a draw to every wait of a program that sleeps (a workload's
    ``wait_spin_s = 0``, the default), from the table measured for the sleep length nearest
    to the workload's mean wait: a 100 ms sleep wakes about twice as late as a 1 ms one
    (timer slack, deeper idle states). Each table is ``EMPIRICAL_POINTS`` mid-point
    quantiles of sleeps on an otherwise idle machine."""
    from validation.timing import lateness_summary, measure_lateness

    repeats = (200, 100, 40, 10) if quick else (1000, 600, 200, 60)
    by_wait = measure_lateness(SLEEP_WAITS_S, repeats, spin_s=0.0)
    tables = []
    per_wait: dict[str, Any] = {}
    for wait_s, values in by_wait.items():
        ordered = sorted(values)
        per_wait[f"{wait_s * 1e3:g}ms"] = lateness_summary(values)
        tables.append({"wait_s": wait_s, "dist": "empirical",
                       "values_s": [_round(_quantile(ordered, (i + 0.5) / EMPIRICAL_POINTS)) for i in range(EMPIRICAL_POINTS)]})
    return {"tables": tables, "per_wait": per_wait, "method": "time.sleep (a plain program's wait), idle machine"}


def measure_timer_jitter(quick: bool) -> dict:
    """Lateness of a precise wait (``validation.timing.wait_until``: sleep until 0.5 ms
    before the deadline, then spin).

    The simulator adds a draw of ``[api] timer_jitter_s`` to every wait of a program that
    spins the end of its waits (a workload's ``wait_spin_s`` > 0; ``sleep_late_s`` is for
    one that sleeps). Waits of 1, 10 and 100 ms on an otherwise idle machine, pooled with
    equal weight per wait length.
    """
    from validation.timing import lateness_summary, measure_lateness

    repeats = (100, 40, 10) if quick else (600, 200, 40)
    by_wait = measure_lateness((0.001, 0.01, 0.1), repeats)
    pooled: list[float] = []
    per_wait: dict[str, Any] = {}
    weight = min(len(values) for values in by_wait.values())
    for wait_s, values in by_wait.items():
        per_wait[f"{wait_s * 1e3:g}ms"] = lateness_summary(values)
        ordered = sorted(values)
        # equal weight per wait length: the same number of quantiles from each
        pooled.extend(_quantile(ordered, (i + 0.5) / weight) for i in range(weight))
    pooled.sort()
    # Mid-point quantiles: each of the EMPIRICAL_POINTS values stands for the same share of
    # the mass (min/max end points would give a rare 4 ms preemption a 2 % weight).
    values = [_round(_quantile(pooled, (i + 0.5) / EMPIRICAL_POINTS)) for i in range(EMPIRICAL_POINTS)]
    return {"per_wait": per_wait, "pooled_s": pooled, "values_s": values,
            "method": "validation.timing.wait_until (sleep to 0.5 ms before, then spin), idle machine"}


# --------------------------------------------------------------------------------------------
# connect_s, subscribe_s, hop_latency_s
# --------------------------------------------------------------------------------------------

def _connect_samples(transport: str, count: int, endpoints: _Endpoints) -> dict[str, list[float]]:
    """Bind-side view (blocked bound PUSH send returns) and connect-side view (first message).

    Two contexts (two I/O threads), as two processes would have; inproc needs one context.
    """
    bind_view: list[float] = []
    connect_view: list[float] = []
    n_contexts = 1 if transport == "inproc" else 2
    with _contexts(n_contexts) as made:
        bind_ctx, connect_ctx = made[0], made[-1]
        for index in range(count + 2):  # the first two are warm-up
            # Bind-side view: the bound PUSH is already blocked in send() when connect() is called.
            push = _socket(bind_ctx, zmq.PUSH, sndtimeo=3000)
            endpoint = endpoints.bind(push, transport)
            pull = _socket(connect_ctx, zmq.PULL, rcvtimeo=3000)
            box: dict[str, float] = {}
            entered = threading.Event()

            def blocked_send(sock: zmq.Socket = push, box: dict = box, entered: threading.Event = entered) -> None:
                entered.set()
                try:
                    sock.send(b"x")
                    box["t"] = _pc()
                except zmq.Again:
                    pass

            thread = threading.Thread(target=blocked_send, daemon=True)
            thread.start()
            entered.wait(2)
            time.sleep(0.002)  # let the thread enter the blocking zmq_msg_send (GIL released)
            t_connect = _pc()
            pull.connect(endpoint)
            with contextlib.suppress(zmq.Again):
                pull.recv()
            thread.join(5)
            if index >= 2 and "t" in box:
                bind_view.append(box["t"] - t_connect)
            push.close()
            pull.close()

            # Connect-side view: a bound PULL is blocked in recv(); the connecting PUSH sends at once.
            pull = _socket(bind_ctx, zmq.PULL, rcvtimeo=3000)
            endpoint = endpoints.bind(pull, transport)
            push = _socket(connect_ctx, zmq.PUSH, sndtimeo=3000)
            box = {}
            entered = threading.Event()

            def blocked_recv(sock: zmq.Socket = pull, box: dict = box, entered: threading.Event = entered) -> None:
                entered.set()
                try:
                    sock.recv()
                    box["t"] = _pc()
                except zmq.Again:
                    pass

            thread = threading.Thread(target=blocked_recv, daemon=True)
            thread.start()
            entered.wait(2)
            time.sleep(0.002)
            t_connect = _pc()
            push.connect(endpoint)
            push.send(b"x")
            thread.join(5)
            if index >= 2 and "t" in box:
                connect_view.append(box["t"] - t_connect)
            push.close()
            pull.close()
    return {"bind_side": bind_view, "connect_side": connect_view}


def _subscribe_samples(transport: str, count: int, endpoints: _Endpoints) -> list[float]:
    """SUB connect()+subscribe(b"") until the bound XPUB's blocked recv() returns b"\\x01"."""
    samples: list[float] = []
    n_contexts = 1 if transport == "inproc" else 2
    with _contexts(n_contexts) as made:
        bind_ctx, connect_ctx = made[0], made[-1]
        for index in range(count + 2):
            xpub = _socket(bind_ctx, zmq.XPUB, rcvtimeo=3000)
            endpoint = endpoints.bind(xpub, transport)
            sub = _socket(connect_ctx, zmq.SUB)
            box: dict[str, Any] = {}
            entered = threading.Event()

            def blocked_recv(sock: zmq.Socket = xpub, box: dict = box, entered: threading.Event = entered) -> None:
                entered.set()
                try:
                    box["frame"] = sock.recv()
                    box["t"] = _pc()
                except zmq.Again:
                    pass

            thread = threading.Thread(target=blocked_recv, daemon=True)
            thread.start()
            entered.wait(2)
            time.sleep(0.002)
            t_connect = _pc()
            sub.connect(endpoint)
            sub.setsockopt(zmq.SUBSCRIBE, b"")
            thread.join(5)
            if index >= 2 and box.get("frame") == b"\x01":
                samples.append(box["t"] - t_connect)
            sub.close()
            xpub.close()
    return samples


def _ping_pong(sock: zmq.Socket, count: int, gap_s: float) -> list[float]:
    """Round trips of a 10-byte message; ``gap_s`` pause between pings (idle connection) or none."""
    payload = b"x" * 10
    for _ in range(20):  # warm-up
        sock.send(payload)
        sock.recv()
    rtts = []
    for _ in range(count):
        if gap_s:
            time.sleep(gap_s)
        start = _pc()
        sock.send(payload)
        sock.recv()
        rtts.append(_pc() - start)
    return rtts


def _echo_loop(sock: zmq.Socket) -> int:
    echoed = 0
    while True:
        try:
            message = sock.recv()
        except zmq.Again:
            return echoed
        if message == b"stop":
            return echoed
        sock.send(message)
        echoed += 1


def _echo_child(conn: Any, transport: str, tmpdir: str) -> int:
    with _contexts(1) as (ctx,):
        sock = _socket(ctx, zmq.PAIR, rcvtimeo=10_000, sndtimeo=10_000)
        conn.send(_bind_in_tmp(sock, transport, tmpdir, "echo"))
        echoed = _echo_loop(sock)
        sock.close()
    return echoed


def _rtt_samples(transport: str, count: int, endpoints: _Endpoints, gap: float = 0.001) -> list[float]:
    if transport == "inproc":
        with _contexts(1) as (ctx,):
            echo = _socket(ctx, zmq.PAIR, rcvtimeo=10_000, sndtimeo=10_000)
            endpoint = endpoints.bind(echo, "inproc")
            thread = threading.Thread(target=_echo_loop, args=(echo,), daemon=True)
            thread.start()
            ping = _socket(ctx, zmq.PAIR, rcvtimeo=5000, sndtimeo=5000)
            ping.connect(endpoint)
            rtts = _ping_pong(ping, count, gap)
            ping.send(b"stop")
            thread.join(5)
            ping.close()
            echo.close()
        return rtts
    with _children(_Child(_echo_child, transport=transport, tmpdir=endpoints.tmpdir)) as (child,):
        endpoint = child.recv(30)
        with _contexts(1) as (ctx,):
            ping = _socket(ctx, zmq.PAIR, rcvtimeo=5000, sndtimeo=5000)
            ping.connect(endpoint)
            rtts = _ping_pong(ping, count, gap)
            ping.send(b"stop")
            ping.close()
        child.result(15)
    return rtts


def measure_latencies(transport: str, api: dict, quick: bool, progress: Progress) -> tuple[dict, dict]:
    """connect_s, subscribe_s and hop_latency_s for one transport."""
    connect_count = 20 if quick else 150
    rtt_count = 100 if quick else 1000
    with _endpoints() as endpoints:
        connect = _connect_samples(transport, connect_count, endpoints)
        subscribe = _subscribe_samples(transport, connect_count, endpoints)
        rtts = _rtt_samples(transport, rtt_count, endpoints)
        rtts_busy = _rtt_samples(transport, rtt_count, endpoints, gap=0.0)
    call_cost = api["send_call_s"] + api["recv_call_s"]
    half = [rtt / 2 for rtt in rtts]
    hop = [max(h - call_cost, 0.0) for h in half]
    section = {
        "connect_s": _empirical(connect["bind_side"]),
        "subscribe_s": _empirical(subscribe),
        "hop_latency_s": _empirical(hop),
    }
    notes = {
        "connect_bind_side_ms": _summary(connect["bind_side"], 1e3),
        "connect_connect_side_first_message_ms": _summary(connect["connect_side"], 1e3),
        "subscribe_ms": _summary(subscribe, 1e3),
        "rtt_us": _summary(rtts, 1e6),
        "rtt_back_to_back_us": _summary(rtts_busy, 1e6),
        "half_rtt_us": _summary(half, 1e6),
        "hop_latency_us": _summary(hop, 1e6),
        "subtracted_call_cost_us": call_cost * 1e6,
    }
    progress(
        f"  {transport}: connect (bind side) median {notes['connect_bind_side_ms']['median']} ms, "
        f"connect side {notes['connect_connect_side_first_message_ms']['median']} ms, subscribe "
        f"{notes['subscribe_ms']['median']} ms, half RTT {notes['half_rtt_us']['median']} us"
    )
    return section, notes


# --------------------------------------------------------------------------------------------
# Engine cost (throughput PUSH -> PULL, one process each)
# --------------------------------------------------------------------------------------------

def _engine_receiver(conn: Any, transport: str, tmpdir: str) -> dict:
    with _contexts(1) as (ctx,):
        pull = _socket(ctx, zmq.PULL, rcvtimeo=10_000)
        io_threads = _zmq_io_threads()
        if not io_threads:
            raise RuntimeError("libzmq I/O thread not found")
        endpoint = _bind_in_tmp(pull, transport, tmpdir, "engine")
        conn.send(endpoint)
        io_cpu0 = sum(_thread_cpu_ns(t) for t in io_threads)
        app_cpu0 = time.thread_time_ns()
        recv = pull.recv
        first = recv()
        t_first = t_last = _pc()
        count = 1
        nbytes = len(first)
        while True:
            message = recv()
            if not message:
                break
            t_last = _pc()
            count += 1
            nbytes += len(message)
        io_cpu = sum(_thread_cpu_ns(t) for t in io_threads) - io_cpu0
        app_cpu = time.thread_time_ns() - app_cpu0
        pull.close()
    return {
        "count": count,
        "bytes": nbytes,
        "wall_s": t_last - t_first,
        "io_cpu_s": io_cpu / 1e9,
        "app_cpu_s": app_cpu / 1e9,
    }


def _engine_sender(conn: Any, endpoint: str, size: int, duration_s: float) -> dict:
    payload = b"x" * size
    chunk = max(1, 100_000 // max(size, 100))
    with _contexts(1) as (ctx,):
        push = _socket(ctx, zmq.PUSH, sndtimeo=10_000)
        push.linger = -1
        io_threads = _zmq_io_threads()
        if not io_threads:
            raise RuntimeError("libzmq I/O thread not found")
        push.connect(endpoint)
        io_cpu0 = sum(_thread_cpu_ns(t) for t in io_threads)
        app_cpu0 = time.thread_time_ns()
        send = push.send
        count = 0
        start = _pc()
        while _pc() - start < duration_s:
            for _ in range(chunk):
                send(payload)
            count += chunk
        send_wall = _pc() - start
        push.send(b"")
        conn.send("sent")
        if conn.poll(30):
            conn.recv()  # the receiver has seen the terminator: our engine has finished
        io_cpu = sum(_thread_cpu_ns(t) for t in io_threads) - io_cpu0
        app_cpu = time.thread_time_ns() - app_cpu0
        push.close(linger=0)
    return {"count": count, "send_wall_s": send_wall, "io_cpu_s": io_cpu / 1e9, "app_cpu_s": app_cpu / 1e9}


def _engine_run(transport: str, size: int, duration_s: float, tmpdir: str) -> dict:
    receiver = _Child(_engine_receiver, transport=transport, tmpdir=tmpdir)
    with _children(receiver):
        endpoint = receiver.recv(30)
        sender = _Child(_engine_sender, endpoint=endpoint, size=size, duration_s=duration_s)
        with _children(sender):
            sender.recv(duration_s + 40)
            received = receiver.result(30)
            sender.send("done")
            sent = sender.result(30)
    return {"size": size, "sender": sent, "receiver": received}


def _weighted_linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Fit y = a + b*x minimising the squared *relative* error (weights 1/y^2)."""
    weights = [1.0 / (y * y) for y in ys]
    s = sum(weights)
    sx = sum(w * x for w, x in zip(weights, xs, strict=True))
    sy = sum(w * y for w, y in zip(weights, ys, strict=True))
    sxx = sum(w * x * x for w, x in zip(weights, xs, strict=True))
    sxy = sum(w * x * y for w, x, y in zip(weights, xs, ys, strict=True))
    slope = (s * sxy - sx * sy) / (s * sxx - sx * sx)
    return (sy - slope * sx) / s, slope


def measure_engine(transport: str, quick: bool, progress: Progress) -> tuple[dict, dict]:
    """engine_s_per_msg / engine_s_per_byte from PUSH -> PULL at full speed, one process each.

    For each payload size the sender pushes as fast as Python can for ``duration`` seconds. We
    record wall throughput at the receiver and the CPU time of each side's libzmq I/O thread
    (``/proc/self/task/<tid>/schedstat``), which is where the engines run. The profile takes the
    I/O-thread CPU per message (the slower of the two sides at each size) and fits a + b*size.
    """
    duration = 0.25 if quick else 1.0
    repeats = 1 if quick else 3
    rows = []
    with _endpoints() as endpoints:
        for size in ENGINE_PAYLOADS:
            runs = [_engine_run(transport, size, duration, endpoints.tmpdir) for _ in range(repeats)]
            per = []
            for run in runs:
                n = run["receiver"]["count"]
                per.append({
                    "msgs_per_s": (n - 1) / run["receiver"]["wall_s"] if run["receiver"]["wall_s"] > 0 else math.nan,
                    "sender_io_s_per_msg": run["sender"]["io_cpu_s"] / n,
                    "receiver_io_s_per_msg": run["receiver"]["io_cpu_s"] / n,
                    "sender_app_s_per_msg": run["sender"]["app_cpu_s"] / n,
                    "receiver_app_s_per_msg": run["receiver"]["app_cpu_s"] / n,
                    "count": n,
                })
            row: dict[str, Any] = {"size": size, "count": [p["count"] for p in per]}
            for key in per[0]:
                if key != "count":
                    row[key] = statistics.median(p[key] for p in per)
            row["mb_per_s"] = row["msgs_per_s"] * size / 1e6
            row["wall_s_per_msg"] = 1.0 / row["msgs_per_s"]
            row["engine_s_per_msg"] = max(row["sender_io_s_per_msg"], row["receiver_io_s_per_msg"])
            rows.append(row)
            progress(
                f"  {transport} engine {size:>7} B: {row['msgs_per_s']:>10.0f} msg/s {row['mb_per_s']:8.1f} MB/s; "
                f"I/O CPU/msg send {row['sender_io_s_per_msg'] * 1e6:.3f} us recv "
                f"{row['receiver_io_s_per_msg'] * 1e6:.3f} us"
            )
    sizes = [r["size"] for r in rows]
    engine_a, engine_b = _weighted_linear_fit(sizes, [r["engine_s_per_msg"] for r in rows])
    wall_a, wall_b = _weighted_linear_fit(sizes, [r["wall_s_per_msg"] for r in rows])
    send_a, send_b = _weighted_linear_fit(sizes, [r["sender_io_s_per_msg"] for r in rows])
    recv_a, recv_b = _weighted_linear_fit(sizes, [r["receiver_io_s_per_msg"] for r in rows])
    section = {"engine_s_per_msg": _round(max(engine_a, 0.0)), "engine_s_per_byte": _round(max(engine_b, 0.0))}
    notes = {
        "duration_s": duration,
        "repeats": repeats,
        "rows": [{k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        "fit_engine_max_side": {"a_s": engine_a, "b_s_per_byte": engine_b},
        "fit_sender_io": {"a_s": send_a, "b_s_per_byte": send_b},
        "fit_receiver_io": {"a_s": recv_a, "b_s_per_byte": recv_b},
        "fit_wall": {"a_s": wall_a, "b_s_per_byte": wall_b},
    }
    return section, notes


# --------------------------------------------------------------------------------------------
# Kernel (in-flight) capacity
# --------------------------------------------------------------------------------------------

def _tcp_queues(port: int) -> list[dict]:
    """Socket memory of the loopback connection on ``port`` as ``ss -tnm`` reports it (notes only)."""
    try:
        text = subprocess.run(
            ["ss", "-tnmH", "state", "established", f"( sport = :{port} or dport = :{port} )"],
            capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            local = fields[2]
            row = {"role": "receiver" if local.endswith(f":{port}") else "sender",
                   "recv_q": int(fields[0]), "send_q": int(fields[1])}
            rows.append(row)
        elif "skmem:" in line and rows:
            skmem = re.search(r"skmem:\(([^)]*)\)", line)
            if skmem:
                for item in skmem.group(1).split(","):
                    key = re.match(r"[a-z]+", item)
                    if key and key.group(0) in ("r", "rb", "t", "tb", "w"):
                        rows[-1][key.group(0)] = int(item[len(key.group(0)):])
    return rows


def _kernel_accepted(transport: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None,
                     endpoints: _Endpoints, max_seconds: float,
                     snapshot: list | None = None) -> tuple[int, bool]:
    """Messages a PUSH (blocking send, SNDTIMEO 300 ms) hands over before the first Again.

    The PULL (bound, own context) reads one warm-up message so the connection is fully up,
    then never reads again. Returns (count, truncated); truncated means ``max_seconds`` ran out
    before the first Again, so the count is a lower bound. With a list in ``snapshot`` (tcp
    only) the kernel queues of the connection are appended to it before closing.
    """
    extra = {} if buffers is None else {"sndbuf": buffers, "rcvbuf": buffers}
    truncated = False
    with _contexts(2) as (receiver_ctx, sender_ctx):
        pull = _socket(receiver_ctx, zmq.PULL, rcvhwm=rcvhwm, rcvtimeo=3000, **extra)
        endpoint = endpoints.bind(pull, transport)
        push = _socket(sender_ctx, zmq.PUSH, sndhwm=sndhwm, sndtimeo=3000, **extra)
        push.connect(endpoint)
        push.send(b"warm-up")
        pull.recv()
        push.sndtimeo = 300
        payload = b"x" * size
        send = push.send
        accepted = 0
        deadline = _pc() + max_seconds
        try:
            while True:
                for _ in range(100):
                    send(payload)
                    accepted += 1
                if _pc() > deadline:
                    truncated = True
                    break
        except zmq.Again:
            pass
        if snapshot is not None and transport == "tcp":
            snapshot.append(_tcp_queues(int(endpoint.rsplit(":", 1)[1])))
        push.close()
        pull.close()
    return accepted, truncated


def measure_kernel(transport: str, quick: bool, progress: Progress) -> tuple[dict, dict]:
    """Messages accepted by a PUSH to a PULL that never reads, per payload size and HWM pair.

    Each (configuration, size) cell is repeated up to ``repeats`` times, but no new repetition
    starts once the cell has used ``cell_budget`` seconds (small messages with HWM 1 take about
    85 us per message to fill the ~4 MB of tcp buffers, i.e. ~30 s per run). A run that reaches
    ``run_cap`` seconds stops early and is flagged as truncated (a lower bound).
    """
    repeats = 1 if quick else 5
    run_cap = 4.0 if quick else 60.0
    cell_budget = 0.0 if quick else 40.0
    configs: list[tuple[str | None, int, int, int | None]] = [
        (None, 10, 10, None),
        ("hwm_1_1", 1, 1, None),
        ("hwm_100_100", 100, 100, None),
    ]
    if transport == "tcp":
        configs.append(("sndbuf_rcvbuf_65536", 10, 10, 65536))
    section: dict[str, Any] = {}
    notes: dict[str, Any] = {"max_repeats": repeats, "run_cap_s": run_cap, "cell_budget_s": cell_budget,
                             "truncated": [], "seconds_per_run": {}, "tcp_queues": {}}
    with _endpoints() as endpoints:

        def cell(key: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None) -> list[int]:
            counts: list[int] = []
            snapshot: list = []
            cell_start = _pc()
            while len(counts) < repeats and (not counts or _pc() - cell_start < cell_budget):
                count, truncated = _kernel_accepted(transport, size, sndhwm, rcvhwm, buffers, endpoints,
                                                    run_cap, snapshot if not counts else None)
                counts.append(count)
                if truncated:
                    notes["truncated"].append([key, size, count])
            notes["seconds_per_run"][f"{key} {size}"] = round((_pc() - cell_start) / len(counts), 3)
            if snapshot and snapshot[0]:
                notes["tcp_queues"][f"{key} {size}"] = snapshot[0]
            return counts

        for key, sndhwm, rcvhwm, buffers in configs:
            name = key or "hwm_10_10"
            runs = [cell(name, size, sndhwm, rcvhwm, buffers) for size in KERNEL_PAYLOADS]
            table = {
                "payload_bytes": list(KERNEL_PAYLOADS),
                "accepted": [_median_int(r) for r in runs],
                "accepted_runs": runs,
            }
            if key is None:
                section.update(table)
            else:
                section[key] = table
            progress(f"  {transport} kernel {name}: {table['accepted']}")
        if transport == "ipc":
            # libzmq applies SNDBUF/RCVBUF only to tcp sockets (tcp_open_socket, tcp listener).
            check = {}
            for size in (10, 1000):
                check[size] = {
                    f"sndbuf_rcvbuf_{buffers or 'default'}": cell(f"ipc_sndbuf_{buffers}", size, 10, 10, buffers)
                    for buffers in (None, 65536, 4096)
                }
            notes["ipc_sndbuf_check"] = check
            progress(f"  ipc SNDBUF/RCVBUF check (HWM 10/10): {check}")
    if notes["truncated"]:
        progress(f"  {transport} kernel: runs stopped at the {run_cap} s cap (lower bounds): {notes['truncated']}")
    return section, notes


# --------------------------------------------------------------------------------------------
# The profile
# --------------------------------------------------------------------------------------------

def calibrate(out_path: str | None, quick: bool = False, progress: Progress = print,
              notes: dict | None = None) -> dict:
    """Measure this machine and return the calibration profile; write it as TOML if asked.

    The returned dict has the profile sections ``profile``, ``api``, ``inproc``, ``tcp`` and
    ``ipc``. If ``notes`` is given, it is filled with the measurement details that
    validation/calibration-notes.md reports (raw summaries, alternative views, fits).
    """
    from zsim.files import atomic_write, prepare_output_file

    if out_path:
        # before 95 s of measuring: a folder, a file inside a file or a read-only place is
        # refused now (ScenarioError, exit 2; EnvironmentFault, exit 1), not at the end
        prepare_output_file(out_path, "profile file")
    started = _pc()
    profile: dict[str, Any] = {"profile": _machine_section(quick)}
    if notes is None:
        notes = {}
    progress(f"calibrate ({'quick' if quick else 'full'}) on {profile['profile']['machine']}")

    phases: dict[str, float] = {}

    def timed(name: str, func: Callable[..., Any], *args: Any) -> Any:
        phase_start = _pc()
        value = func(*args)
        phases[name] = round(_pc() - phase_start, 2)
        progress(f"  ({name}: {phases[name]:.1f} s)")
        return value

    progress("[api]")
    profile["api"], notes["api"] = timed("api", measure_api, quick, progress)
    for transport in ("inproc", "tcp", "ipc"):
        progress(f"[{transport}]")
        section, notes[transport] = timed(f"{transport} latencies", measure_latencies, transport,
                                          profile["api"], quick, progress)
        wake = timed(f"{transport} wake cost", measure_send_wake_cost, transport, quick)
        section["send_wake_cost"] = {"idle_s": wake["idle_s"], "cost_s": wake["cost_s"]}
        notes[f"{transport}_wake_cost"] = wake
        progress(f"  {transport}: send that wakes a thread idle 0.1 ms / 1 ms: "
                 f"{wake['cost_s'][0] * 1e6:.1f} / {wake['cost_s'][1] * 1e6:.1f} us")
        if transport != "inproc":
            engine, notes[f"{transport}_engine"] = timed(f"{transport} engine", measure_engine,
                                                         transport, quick, progress)
            section.update(engine)
            kernel, notes[f"{transport}_kernel"] = timed(f"{transport} kernel", measure_kernel,
                                                         transport, quick, progress)
            section["kernel"] = kernel
        profile[transport] = section
    progress("[scheduler]")
    profile["scheduler"], notes["scheduler"] = timed("scheduler", measure_scheduler, quick, progress)
    # The kernel's effective capacity is what is left once the model accounts for
    # everything else on the path: fitted by simulating the same protocol (zsim.calibration).
    progress("[fit kernel capacities by simulation]")
    profile = timed("kernel fit", fit_kernel, profile, progress)
    notes["phase_seconds"] = phases
    notes["wall_time_s"] = _pc() - started
    progress(f"calibration took {notes['wall_time_s']:.1f} s")

    if out_path:
        truncated = [[transport] + cell for transport in ("tcp", "ipc")
                     for cell in notes.get(f"{transport}_kernel", {}).get("truncated", [])]
        # all at once: a reader (or a crash) never sees half a profile
        atomic_write(out_path, to_toml(profile, header=_toml_header(quick, truncated)))
        progress(f"wrote {out_path}")
    return profile


def _toml_header(quick: bool, truncated: list) -> str:
    mode = " --quick" if quick else ""
    text = (
        "# zsim calibration profile, measured with real pyzmq over loopback by\n"
        f"#   python -m validation.calibrate --out <file>{mode}\n"
        "# Times in seconds, sizes in bytes. Method and raw numbers: validation/calibration-notes.md\n"
    )
    if truncated:
        text += "# Kernel runs stopped by the time cap before the first Again (counts are lower bounds):\n"
        text += "".join(f"#   {t} {key} payload {size}: {count}\n" for t, key, size, count in truncated)
    return text + "\n"


# --------------------------------------------------------------------------------------------
# [scheduler]: the cores and what sharing them costs (zsim.model.cpu)
# --------------------------------------------------------------------------------------------

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
print(json.dumps({"runs": runs[1:], "cpu_s": time.thread_time() - cpu0, "wall_s": last - start}))
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
    its uninterrupted runs (a jump of the clock over ``gap_s`` is someone else's slice) and
    the CPU it got in ``duration_s``."""
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


def _event_receiver(conn: Any) -> dict:
    with _contexts(1) as (ctx,):
        pull = _socket(ctx, zmq.PULL, rcvtimeo=10_000)
        io_threads = _zmq_io_threads()
        conn.send(pull.bind_to_random_port("tcp://127.0.0.1"))
        count = conn.recv()
        pull.recv()
        io0, app0 = sum(_thread_cpu_ns(t) for t in io_threads), time.thread_time_ns()
        for _ in range(count):
            pull.recv()
        return {"io_s": (sum(_thread_cpu_ns(t) for t in io_threads) - io0) / 1e9 / count,
                "app_s": (time.thread_time_ns() - app0) / 1e9 / count}


def _event_sender(conn: Any, port: int, count: int, gap_s: float) -> dict:
    with _contexts(1) as (ctx,):
        push = _socket(ctx, zmq.PUSH, sndtimeo=10_000)
        io_threads = _zmq_io_threads()
        push.connect(f"tcp://127.0.0.1:{port}")
        push.send(b"x" * 16)
        time.sleep(0.2)
        io0, app0 = sum(_thread_cpu_ns(t) for t in io_threads), time.thread_time_ns()
        sleep_cpu = 0
        for _ in range(count):
            before = time.thread_time_ns()
            time.sleep(gap_s)
            sleep_cpu += time.thread_time_ns() - before
            push.send(b"x" * 16)
        app = time.thread_time_ns() - app0
        time.sleep(0.2)
        return {"io_s": (sum(_thread_cpu_ns(t) for t in io_threads) - io0) / 1e9 / count,
                "send_s": (app - sleep_cpu) / 1e9 / count, "sleep_s": sleep_cpu / 1e9 / count}


def measure_wake_cpu(quick: bool) -> dict:
    """CPU that waking up costs, which the per-message costs measured at full speed (where
    batches amortise it) do not show: a PUSH sends 16 bytes every 1 ms over tcp, so every
    message is an event of its own. Per message: the receiving and sending I/O threads'
    CPU (an engine event: the poller's wake-up, the syscall, the mailbox), the receiving
    application thread's (a blocked recv woken), the sender's send and its sleep."""
    count = 500 if quick else 2000
    receiver = _Child(_event_receiver)
    with _children(receiver):
        port = receiver.recv(30)
        receiver.send(count)
        sender = _Child(_event_sender, port=port, count=count, gap_s=0.001)
        with _children(sender):
            sent = sender.result(count * 0.01 + 60)
            received = receiver.result(30)
    return {
        "messages": count,
        "receiver_io_event_s": _round(received["io_s"], 9),
        "receiver_app_wake_s": _round(received["app_s"], 9),
        "sender_io_event_s": _round(sent["io_s"], 9),
        "sender_send_s": _round(sent["send_s"], 9),
        "sender_sleep_s": _round(sent["sleep_s"], 9),
    }


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


# --------------------------------------------------------------------------------------------
# Experiments for the notes (not part of the profile)
# --------------------------------------------------------------------------------------------

def _publish_loop(pub: zmq.Socket, spacing_s: float, should_stop: Callable[[], bool],
                  max_seconds: float) -> array:
    """Publish sequence numbers with busy-wait spacing; return when each send() returned.

    The timestamp is taken after the call, so a message stamped before a SUB's connect() was
    certainly published before the SUB's pipe existed.
    """
    times = array("d")
    append = times.append
    send = pub.send
    pack = _SEQ.pack
    seq = 0
    next_time = _pc()
    deadline = next_time + max_seconds
    while True:
        now = _pc()
        while now < next_time:
            now = _pc()
        send(pack(seq))
        append(_pc())
        seq += 1
        next_time += spacing_s
        if seq % 64 == 0 and (now > deadline or should_stop()):
            return times


def _slow_joiner_publisher(conn: Any, transport: str, tmpdir: str, spacing_s: float) -> bytes:
    with _contexts(1) as (ctx,):
        pub = _socket(ctx, zmq.PUB)
        conn.send(_bind_in_tmp(pub, transport, tmpdir, "sj"))
        times = _publish_loop(pub, spacing_s, conn.poll, 28.0)
        conn.recv()
        pub.close()
    return times.tobytes()


def _slow_joiner_subscribe(ctx: zmq.Context, endpoint: str, repeats: int) -> list[dict]:
    joins = []
    for _ in range(repeats):
        sub = _socket(ctx, zmq.SUB, rcvtimeo=3000)
        t_connect = _pc()
        sub.connect(endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        try:
            first = _SEQ.unpack(sub.recv()[:8])[0]
            joins.append({"t_connect": t_connect, "t_recv": _pc(), "first_seq": first})
        except zmq.Again:
            joins.append({"t_connect": t_connect, "t_recv": None, "first_seq": None})
        sub.close()
        time.sleep(0.03)
    return joins


def experiment_slow_joiner(transport: str, spacing_s: float, repeats: int) -> dict:
    """Messages published between SUB connect() and the first message the SUB receives."""
    with _endpoints() as endpoints:
        if transport == "inproc":
            old_interval = sys.getswitchinterval()
            sys.setswitchinterval(1e-4)  # the publisher thread busy-waits while holding the GIL
            try:
                with _contexts(1) as (ctx,):
                    pub = _socket(ctx, zmq.PUB)
                    endpoint = endpoints.bind(pub, "inproc")
                    stop = threading.Event()
                    box: dict[str, array] = {}
                    thread = threading.Thread(
                        target=lambda: box.setdefault("t", _publish_loop(pub, spacing_s, stop.is_set, 28.0)),
                        daemon=True)
                    thread.start()
                    time.sleep(0.05)
                    joins = _slow_joiner_subscribe(ctx, endpoint, repeats)
                    stop.set()
                    thread.join(30)
                    times = box["t"]
                    pub.close()
            finally:
                sys.setswitchinterval(old_interval)
        else:
            child = _Child(_slow_joiner_publisher, transport=transport, tmpdir=endpoints.tmpdir, spacing_s=spacing_s)
            with _children(child), _contexts(1) as (ctx,):
                endpoint = child.recv(30)
                time.sleep(0.05)
                joins = _slow_joiner_subscribe(ctx, endpoint, repeats)
                child.send("stop")
                times = array("d")
                times.frombytes(child.result(40))
    lost, latency, match_delay = [], [], []
    for join in joins:
        if join["first_seq"] is None:
            continue
        first_after_connect = bisect.bisect_left(times, join["t_connect"])
        lost.append(join["first_seq"] - first_after_connect)
        latency.append(join["t_recv"] - join["t_connect"])
        match_delay.append(times[join["first_seq"]] - join["t_connect"])
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else math.nan
    return {
        "transport": transport,
        "spacing_s": spacing_s,
        "publish_rate_msgs_per_s": round(rate),
        "repeats": repeats,
        "timeouts": sum(1 for j in joins if j["first_seq"] is None),
        "lost_after_connect": lost,
        "lost_summary": _summary(lost),
        "first_message_sent_after_connect_ms": _summary(match_delay, 1e3),
        "first_message_received_after_connect_ms": _summary(latency, 1e3),
    }


def _termination_sender(conn: Any, transport: str, tmpdir: str, bind: bool, endpoint: str | None,
                        count: int, spacing_s: float) -> dict:
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)  # LINGER left at its default (-1)
    if bind:
        conn.send(_bind_in_tmp(push, transport, tmpdir, "term"))
    else:
        assert endpoint is not None, "a connecting side is given the binder's endpoint"
        push.connect(endpoint)
    conn.recv()  # both sides are set up
    start = _pc()
    for index in range(count):
        push.send(b"Message %d" % index)
        time.sleep(spacing_s)
    t_close = _pc()
    push.close()
    ctx.term()
    return {"send_s": t_close - start, "term_s": _pc() - t_close}


def _termination_receiver(conn: Any, transport: str, tmpdir: str, bind: bool, endpoint: str | None,
                          rcvhwm: int, read_sleep_s: float, sleep_before_recv: bool) -> dict:
    with _contexts(1) as (ctx,):
        pull = _socket(ctx, zmq.PULL, rcvhwm=rcvhwm, rcvtimeo=3000)
        if bind:
            conn.send(_bind_in_tmp(pull, transport, tmpdir, "term"))
        else:
            assert endpoint is not None, "a connecting side is given the binder's endpoint"
            pull.connect(endpoint)
        conn.recv()
        received = []
        start = _pc()
        for _ in range(30):
            if sleep_before_recv:
                time.sleep(read_sleep_s)
            try:
                message = pull.recv()
            except zmq.Again:
                break
            received.append((int(message.split()[-1]), round(_pc() - start, 3)))
            if not sleep_before_recv:
                time.sleep(read_sleep_s)
        pull.close()
    return {"received": [index for index, _ in received], "times_s": [t for _, t in received]}


def _termination_run(transport: str, rcvhwm: int, spacing_s: float, sleep_before_recv: bool,
                     pull_binds: bool, tmpdir: str, tag: str) -> dict:
    directory = os.path.join(tmpdir, tag)
    os.makedirs(directory, exist_ok=True)
    receiver_kwargs = {"transport": transport, "tmpdir": directory, "rcvhwm": rcvhwm,
                       "read_sleep_s": 0.4, "sleep_before_recv": sleep_before_recv}
    sender_kwargs = {"transport": transport, "tmpdir": directory, "count": 10, "spacing_s": spacing_s}
    if pull_binds:
        receiver = _Child(_termination_receiver, bind=True, endpoint=None, **receiver_kwargs)
        endpoint = receiver.recv(30)
        sender = _Child(_termination_sender, bind=False, endpoint=endpoint, **sender_kwargs)
    else:
        sender = _Child(_termination_sender, bind=True, endpoint=None, **sender_kwargs)
        endpoint = sender.recv(30)
        receiver = _Child(_termination_receiver, bind=False, endpoint=endpoint, **receiver_kwargs)
    with _children(receiver, sender):
        time.sleep(0.3)  # connection established before the first send
        receiver.send("go")
        sender.send("go")
        received = receiver.result(40)
        try:
            sent: Any = sender.result(5)
        except (TimeoutError, RuntimeError) as exc:
            sent = {"error": str(exc).splitlines()[0]}
    return {
        "transport": transport, "rcvhwm": rcvhwm, "send_spacing_s": spacing_s,
        "sleep_before_recv": sleep_before_recv, "pull_binds": pull_binds,
        "received": received["received"], "recv_times_s": received["times_s"], "sender": sent,
    }


def experiment_termination(quick: bool, progress: Progress) -> list[dict]:
    """The zeromq-dev 2014 report / libzmq #4660 (ipc EPOLLHUP on a stopped engine loses the kernel's
    tail: ``stream_engine_base_t::in_event_internal``; docs/model.md), several variants."""
    repeats = 1 if quick else 3
    cases = []
    for transport in ("ipc", "tcp"):
        for rcvhwm in (1, 2):
            for _ in range(repeats):
                cases.append((transport, rcvhwm, 0.2, False, True))
    for _ in range(1 if quick else 2):
        for transport in ("ipc", "tcp"):
            for rcvhwm in (1, 2):
                cases.append((transport, rcvhwm, 0.2, True, True))     # sleep before each recv
                cases.append((transport, rcvhwm, 0.01, False, True))   # 10 ms send spacing
                cases.append((transport, rcvhwm, 0.2, False, False))   # PUSH binds, PULL connects
    if quick:
        cases = cases[: 4 * repeats] + [c for c in cases[4 * repeats:] if c[1] == 1 and c[0] == "ipc"]
    results: list[dict] = []
    with _endpoints() as endpoints:
        # Runs are sleep-dominated (0.2 s sends, 0.4 s reads), so four run side by side.
        batch = 4
        for start in range(0, len(cases), batch):
            group = cases[start:start + batch]
            outputs: list[Any] = [None] * len(group)

            def run(slot: int, case: tuple, outputs: list[Any] = outputs, start: int = start) -> None:
                try:
                    transport, rcvhwm, spacing_s, sleep_before_recv, pull_binds = case
                    outputs[slot] = _termination_run(transport, rcvhwm, spacing_s, sleep_before_recv, pull_binds,
                                                     tmpdir=endpoints.tmpdir, tag=f"t{start + slot}")
                except Exception as exc:  # recorded, the other runs go on
                    outputs[slot] = {"case": case, "error": repr(exc)}

            threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(group)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            for output in outputs:
                results.append(output)
                progress(f"  termination: {output}")
    return results


def _blast_publisher(conn: Any, transport: str, tmpdir: str, sndhwm: int, count: int, size: int,
                     dontwait: bool, nodrop: bool) -> dict:
    with _contexts(1) as (ctx,):
        pub = _socket(ctx, zmq.XPUB if nodrop else zmq.PUB, sndhwm=sndhwm)
        if nodrop:
            pub.setsockopt(zmq.XPUB_NODROP, 1)
        conn.send(_bind_in_tmp(pub, transport, tmpdir, "blast"))
        # Say hello every 10 ms until the parent reports that the SUB has heard one.
        deadline = _pc() + 10
        while not conn.poll(0.01):
            _try_send(pub, b"hello")
            if _pc() > deadline:
                raise TimeoutError("subscriber never joined")
        conn.recv()
        pad = b"x" * max(0, size - 8)
        pack = _SEQ.pack
        again = 0
        flags = zmq.DONTWAIT if dontwait else 0
        send = pub.send
        start = _pc()
        for seq in range(count):
            try:
                send(pack(seq) + pad, flags)
            except zmq.Again:
                again += 1
            if seq % 10000 == 0 and _pc() - start > 25:
                break
        elapsed = _pc() - start
        conn.send("sent")
        conn.poll(30)
        pub.close()
    return {"sent": count, "again": again, "send_s": elapsed}


def _try_send(sock: zmq.Socket, data: bytes) -> None:
    with contextlib.suppress(zmq.Again):
        sock.send(data, zmq.DONTWAIT)


def _blast_subscriber(conn: Any, endpoint: str, rcvhwm: int, stall_s: float, read: bool) -> dict:
    with _contexts(1) as (ctx,):
        sub = _socket(ctx, zmq.SUB, rcvhwm=rcvhwm, rcvtimeo=5000)
        sub.connect(endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        while sub.recv() != b"hello":
            pass
        conn.send("joined")
        time.sleep(stall_s)
        if not read:
            conn.recv()
            sub.close()
            return {"received": 0}
        sub.rcvtimeo = 1000
        seqs = array("q")
        while True:
            try:
                message = sub.recv()
            except zmq.Again:
                break
            if message != b"hello":
                seqs.append(_SEQ.unpack(message[:8])[0])
        sub.close()
    return {"seqs": seqs.tobytes()}


def _gap_analysis(seqs: Sequence[int], count: int) -> dict:
    """Runs of consecutive received sequence numbers and the gaps between them."""
    if not seqs:
        return {"received": 0}
    runs, gaps = [], []
    run_start = prev = seqs[0]
    for seq in seqs[1:]:
        if seq != prev + 1:
            runs.append(prev - run_start + 1)
            gaps.append(seq - prev - 1)
            run_start = seq
        prev = seq
    runs.append(prev - run_start + 1)
    ordered = all(b > a for a, b in zip(seqs, seqs[1:], strict=False))
    later_runs = runs[1:]
    return {
        "received": len(seqs),
        "lost": count - len(seqs),
        "in_order": ordered,
        "first_seq": seqs[0],
        "last_seq": seqs[-1],
        "gaps": len(gaps),
        "first_run": runs[0],
        "later_runs_summary": _summary(later_runs) if later_runs else None,
        "later_run_lengths_top": _top_counts(later_runs),
        "gap_sizes_summary": _summary(gaps) if gaps else None,
        "tail_lost": count - 1 - seqs[-1],
    }


def _top_counts(values: Sequence[int], top: int = 6) -> list[list[int]]:
    counts: dict[int, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [[k, v] for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:top]]


def experiment_pub_backpressure(transport: str, sndhwm: int, count: int = 300_000) -> dict:
    """PUB (SNDHWM) -> SUB (RCVHWM 10) stalled 1 s: received count, gaps, where drops were."""
    with _endpoints() as endpoints:
        pub = _Child(_blast_publisher, transport=transport, tmpdir=endpoints.tmpdir, sndhwm=sndhwm,
                     count=count, size=100, dontwait=False, nodrop=False)
        with _children(pub):
            endpoint = pub.recv(30)
            sub = _Child(_blast_subscriber, endpoint=endpoint, rcvhwm=10, stall_s=1.0, read=True)
            with _children(sub):
                sub.recv(20)
                pub.send("go")
                pub.recv(30)
                seqs = array("q")
                seqs.frombytes(sub.result(40)["seqs"])
                pub.send("done")
                sent = pub.result(20)
    result = {"transport": transport, "pub_sndhwm": sndhwm, "sub_rcvhwm": 10, "sent": count,
              "send_s": round(sent["send_s"], 3)}
    result.update(_gap_analysis(list(seqs), count))
    return result


def experiment_pub_dontwait(sndhwm: int = 1, count: int = 200_000, nodrop: bool = False) -> dict:
    """Does PUB (or XPUB with XPUB_NODROP) raise Again with DONTWAIT to a stalled SUB?"""
    with _endpoints() as endpoints:
        pub = _Child(_blast_publisher, transport="tcp", tmpdir=endpoints.tmpdir, sndhwm=sndhwm,
                     count=count, size=100, dontwait=True, nodrop=nodrop)
        with _children(pub):
            endpoint = pub.recv(30)
            sub = _Child(_blast_subscriber, endpoint=endpoint, rcvhwm=1, stall_s=0.0, read=False)
            with _children(sub):
                sub.recv(20)
                pub.send("go")
                pub.recv(40)
                sub.send("done")
                sub.result(10)
                pub.send("done")
                sent = pub.result(20)
    return {"socket": "XPUB+XPUB_NODROP" if nodrop else "PUB", "sndhwm": sndhwm, "sub_rcvhwm": 1,
            "sends": count, "again": sent["again"], "send_s": round(sent["send_s"], 3)}


def run_experiments(quick: bool = False, progress: Progress = print) -> dict:
    """The experiments of validation/calibration-notes.md; each one is bounded (< 30 s)."""
    results: dict[str, Any] = {"machine": _machine_section(quick)}
    started = _pc()
    progress("[experiment 1] slow joiner")
    joiner = []
    for transport in ("tcp", "ipc", "inproc"):
        for spacing, repeats in ((1e-4, 5 if quick else 20), (0.0, 3 if quick else 10)):
            result = experiment_slow_joiner(transport, spacing, repeats)
            joiner.append(result)
            progress(f"  {transport} spacing {spacing * 1e3} ms ({result['publish_rate_msgs_per_s']} msg/s): "
                     f"lost {result['lost_summary']}, first msg sent after connect "
                     f"{result['first_message_sent_after_connect_ms']} ms")
    results["slow_joiner"] = joiner

    progress("[experiment 2] termination with RCVHWM (reference 7.3)")
    results["termination"] = experiment_termination(quick, progress)

    progress("[experiment 3] PUB -> stalled SUB, 300,000 x 100 B")
    backpressure = []
    for transport in ("tcp", "ipc"):
        for sndhwm in (10, 0):
            result = experiment_pub_backpressure(transport, sndhwm)
            backpressure.append(result)
            progress(f"  {result}")
    results["pub_backpressure"] = backpressure

    progress("[experiment 4] PUB DONTWAIT")
    dontwait = [experiment_pub_dontwait(1, 200_000, False), experiment_pub_dontwait(1, 200_000, True)]
    for result in dontwait:
        progress(f"  {result}")
    results["pub_dontwait"] = dontwait
    results["wall_time_s"] = _pc() - started
    return results


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m validation.calibrate",
        description="Measure libzmq/pyzmq timing and buffer parameters on this machine for zsim.")
    parser.add_argument("--out", metavar="FILE", help="write the calibration profile (TOML) here")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (under a minute)")
    parser.add_argument("--notes-json", metavar="FILE",
                        help="also write the calibration measurement details (JSON) here")
    parser.add_argument("--harness-program", metavar="FILE",
                        help="measure only the validation harness's own loop cost and write it here "
                             "(validation/harness-program.toml is the one zsim validate reads)")
    parser.add_argument("--experiments", metavar="FILE",
                        help="run the notes experiments instead of calibrating; write JSON here")
    args = parser.parse_args(argv)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from zsim.errors import EnvironmentFault, ZsimError
    from zsim.files import atomic_write, prepare_output_file

    try:
        if args.experiments:
            prepare_output_file(args.experiments, "experiments file")
            results = run_experiments(args.quick, progress)
            atomic_write(args.experiments, json.dumps(results, indent=1, default=str))
            progress(f"wrote {args.experiments} in {results['wall_time_s']:.1f} s")
            return 0
        if args.harness_program:
            prepare_output_file(args.harness_program, "harness program file")
            atomic_write(args.harness_program, harness_program_toml(measure_app_loop(args.quick)))
            progress(f"wrote {args.harness_program}")
            return 0
        if args.notes_json:
            prepare_output_file(args.notes_json, "notes file")
        notes: dict[str, Any] = {}
        profile = calibrate(args.out, quick=args.quick, progress=progress, notes=notes)
        if args.notes_json:
            atomic_write(args.notes_json, json.dumps(notes, indent=1, default=str))
    except ZsimError as exc:  # one line; an OS refusal exits 1, bad input 2 (as zsim does)
        print(f"python -m validation.calibrate: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, EnvironmentFault) else 2
    if not args.out:
        sys.stdout.write(to_toml(profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
