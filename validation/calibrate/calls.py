"""The ``[api]`` calls: what a ``send()``/``recv()`` costs, a send that drops, and libzmq's
command throttle (``max_command_delay``, ``src/config.hpp``).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
from typing import Any

import zmq

from .common import Progress, _contexts, _endpoints, _pc, _round, _socket, _summary, _time_recv_loop, _time_send_loop, tsc_hz
from .wakeups import measure_sleep_late, measure_timer_jitter

# libzmq 4.3.5 src/config.hpp: max_command_delay = 3000000 (TSC ticks).
MAX_COMMAND_DELAY_TICKS = 3_000_000


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
    hz, source = tsc_hz()
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
