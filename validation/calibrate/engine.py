"""Engine cost, ``engine_s_per_msg`` and ``engine_s_per_byte``: PUSH -> PULL at full speed,
one process each, the I/O threads' CPU fitted a + b x size.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import zmq

from .common import Progress, _bind_in_tmp, _Child, _children, _contexts, _endpoints, _pc, _round, _socket, _thread_cpu_ns, _zmq_io_threads

ENGINE_PAYLOADS = [10, 100, 1000, 10000, 100000, 1000000]


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
