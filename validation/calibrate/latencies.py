"""Per transport: ``connect_s``, ``subscribe_s`` and ``hop_latency_s``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import zmq

from .common import Progress, _bind_in_tmp, _Child, _children, _contexts, _empirical, _Endpoints, _endpoints, _pc, _socket, _summary


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
