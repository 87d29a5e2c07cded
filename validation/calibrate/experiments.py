"""The experiments of validation/calibration-notes.md (slow joiner, the ipc termination
loss of libzmq #4660, PUB/SUB drops under backpressure, PUB and DONTWAIT); not part of
the profile (``python -m validation.calibrate --experiments FILE``).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import os
import struct
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import zmq

from .common import Progress, _bind_in_tmp, _Child, _children, _contexts, _endpoints, _machine_section, _pc, _socket, _summary

_SEQ = struct.Struct("<Q")


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

    progress("[experiment 2] termination with RCVHWM (libzmq #4660)")
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
