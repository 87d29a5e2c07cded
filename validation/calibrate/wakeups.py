"""Waking up: what a send costs when it wakes a sleeping thread (``send_wake_cost``), how
late a sleep returns (``[api] sleep_late_s``), how late a precise wait returns
(``[api] timer_jitter_s``), and the CPU an event costs a thread that was idle.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import zmq

from .common import EMPIRICAL_POINTS, _Child, _children, _contexts, _quantile, _round, _socket, _thread_cpu_ns, _zmq_io_threads


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
