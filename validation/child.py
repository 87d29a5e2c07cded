"""One OS process of a real run: a ``[[process]]`` of a scenario on real pyzmq sockets.

Started by ``validation.harness`` as ``python -m validation.child PLAN.json``. Protocol on
stdin/stdout (one JSON object or command per line):

1. the child creates its ``zmq.Context`` and prints ``{"ready": true}``;
2. the parent answers ``t0 <perf_counter seconds>``: the shared time origin (``CLOCK_MONOTONIC``
   is one clock for all processes);
3. the child runs its timeline and prints a heartbeat ``{"hb": {...}}`` every 50 ms (last
   activity, whether its senders are done) so the parent can tell when the run is quiet;
4. at ``scenario.until_s``, on ``stop`` from the parent, at its hard time limit, or when the
   parent disappears (stdin closed), it takes its counters, writes ``<process>.json`` (and
   latency/round-trip samples as ``.npy``) into the results directory, prints
   ``{"done": true}`` and leaves with ``os._exit`` (no linger: the run is over).

Inside the process: one thread per socket (it creates, binds and connects the socket at
``open_at_s``, runs that socket's ``[[send]]``/``[[recv]]`` workloads, makes its ``[[call]]``s
at their times (``CallTimeline``), closes it at ``close_at_s``), one thread per ``[[proxy]]``
(``zmq.proxy_steerable`` with a capture socket that counts what is forwarded), and the main
thread for the timeline: process exit
(``exit_at_s``/``exit_after_sends``: stop the workloads, close every socket with its LINGER,
``ctx.term()``; a term still blocked at the end is reported as ``term_blocked``) and crash
(``crash_at_s``: results written, then SIGKILL).

Workloads follow docs/scenario-format.md exactly: ``send(); wait(interval)`` with the next
attempt ``interval`` after the send call returned, ``recv(); wait(service)`` then the reply.
Waits are ``validation.timing.wait_until`` with the workload's ``wait_spin_s``: a plain
sleep (0, the default), or a sleep whose last ``wait_spin_s`` is spun; a workload's
``loop_cpu_s`` is computed after each attempt (on top of this harness's own loop, which
``validation.harness_program`` declares to the simulator); a ``busy = true`` service
time is CPU work instead: the thread computes until its own CPU clock
(``time.thread_time``) has advanced by the service time, as the model takes it, so a
thread sharing its core takes longer in wall time. With
``[machine] cores`` or an ``affinity`` the process is pinned to its CPUs before its
context starts (``os.sched_setaffinity``), and ``io_threads`` sizes its context's I/O
threads (``zmq.Context(io_threads=n)``). Random draws use the
simulator's streams (``zsim.build.stream_factory``) under the same names, so a seed gives
the same intervals, sizes and service times in both.

Every data message carries a header at the end of its last frame, when the frame is large
enough: ``<magic, kind, workload, sequence number, send time>`` (16 bytes), or without the
time (8 bytes). Receivers use it for latency and to record which indices arrived. A reply or
a stage's result (a message *caused* by another) carries, just before that header, the stamp
of the first message of its chain, its *root*: ``<magic, [[send]] index, send time>`` (11
bytes; ``ROOT``), copied from the request it answers (the request's own header, or the root
it carried itself). A socket that receives a caused message records the time from its root's
send to now with the root's sender, so that the harness gives request -> reply times per
socket (the root was sent from the socket that receives) and end-to-end times per source
(``validation.harness.causal_times``), as the simulator does from its ledger
(``zsim.results.causal_times``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import sys
import threading
import time
import traceback
from array import array
from collections.abc import Generator
from typing import Any

import numpy as np
import zmq

from validation.timing import wait_until
from zsim.build import stream_factory
from zsim.distributions import parse_distribution
from zsim.socket_types import TYPES, names

_pc = time.perf_counter
_cpu = time.thread_time

MAGIC_FULL = 0xA5
MAGIC_SHORT = 0xA6
KIND_DATA = 1
KIND_REPLY = 2
FULL = struct.Struct("<BBHId")  # magic, kind, workload index, sequence, send time
SHORT = struct.Struct("<BBHI")
MAGIC_ROOT = 0xA7
#: before the FULL header of a caused message: its root's magic, [[send]] index, send time
ROOT = struct.Struct("<BHd")
#: the last frame a caused message needs to carry its root's stamp as well as its own header
CAUSED_SIZE = ROOT.size + FULL.size
HEARTBEAT_S = 0.05
#: how long the process looks for worker-thread errors after writing its counters
AFTER_SNAPSHOT_S = 0.02

SOCKET_TYPES = {name: getattr(zmq, name) for name in TYPES}
ROUTING_ID_TYPES = frozenset(names("has_routing_id"))


def subscribes_by_message(type_name: str) -> bool:
    """An XSUB subscribes by sending ``\\x01prefix`` messages (it has no ZMQ_SUBSCRIBE)."""
    t = TYPES[type_name]
    return t.sends_subscriptions and not t.filters_on_recv


class Closing(Exception):
    """The socket reached its ``close_at_s`` (or the process is leaving)."""


# --------------------------------------------------------------------------------------
# Messages


def build_frames(size: int, topic: str, parts: int, kind: int, widx: int, seq: int, now: float,
                 root: tuple[int, float] | None = None) -> list[bytes]:
    """Frames of one message, as the simulator sizes them (``message_wire_bytes``).

    One part: ``topic + payload``. Several: the topic (if any) as its own first frame, the
    payload split over the others. The header goes at the end of the last frame; ``root``
    (a reply's or result's: the [[send]] index and send time of its chain's first message)
    just before it, when the frame has room for both (``CAUSED_SIZE``).
    """
    topic_b = topic.encode() if topic else b""
    if root is not None and parts <= 1 and size >= CAUSED_SIZE:
        return [topic_b + _zeros(size - CAUSED_SIZE) + _pack_root(MAGIC_ROOT, root[0] & 0xFFFF, root[1])
                + _pack_full(MAGIC_FULL, kind, widx & 0xFFFF, seq & 0xFFFFFFFF, now)]
    if parts <= 1:
        if size >= FULL.size:
            return [topic_b + _zeros(size - FULL.size) + _pack_full(MAGIC_FULL, kind, widx & 0xFFFF, seq & 0xFFFFFFFF, now)]
        if size >= SHORT.size:
            return [topic_b + _zeros(size - SHORT.size) + _pack_short(MAGIC_SHORT, kind, widx & 0xFFFF, seq & 0xFFFFFFFF)]
        return [topic_b + _zeros(size)]
    payload_frames = parts - 1 if topic_b else parts
    base, extra = divmod(size, payload_frames)
    sizes = [base + (1 if i < extra else 0) for i in range(payload_frames)]
    frames = [_zeros(n) for n in sizes]
    last = sizes[-1]
    if last >= FULL.size:
        frames[-1] = _zeros(last - FULL.size) + _pack_full(MAGIC_FULL, kind, widx & 0xFFFF, seq & 0xFFFFFFFF, now)
    elif last >= SHORT.size:
        frames[-1] = _zeros(last - SHORT.size) + _pack_short(MAGIC_SHORT, kind, widx & 0xFFFF, seq & 0xFFFFFFFF)
    return ([topic_b] if topic_b else []) + frames


def split_envelope(frames: list[bytes], sock_type: str, body_frames: dict[str, int]) -> tuple[list[bytes], list[bytes]]:
    """(envelope, body) of a received message, as the simulator keeps them: the envelope is
    every frame the routing put before the sender's own frames (routing ids, the REQ
    delimiter), however many hops added them, at a ROUTER or a DEALER alike (a DEALER
    worker behind a ROUTER broker gets the client's id and delimiter and must send them
    back). The body's frame count is the sending workload's (``body_frames``, by header
    key; a reply or a forwarded result is one frame). A message too short to carry the
    header falls back on the envelope's shape: a ROUTER's id, and the delimiter after it."""
    header = parse_header(frames[-1]) if frames else None
    if header is not None:
        kind, widx = header[0], header[1]
        count = body_frames.get(f"s{widx}", 1) if kind == KIND_DATA else 1
        if 0 < count <= len(frames):
            return frames[:len(frames) - count], frames[len(frames) - count:]
    if TYPES[sock_type].prepends_identity:
        envelope = frames[:2] if len(frames) > 2 and frames[1] == b"" else frames[:1]
        return envelope, frames[len(envelope):]
    return [], frames


_ZEROS: dict[int, bytes] = {}
_pack_full = FULL.pack
_pack_short = SHORT.pack
_pack_root = ROOT.pack


def _zeros(n: int) -> bytes:
    """``n`` zero bytes, cached per length (sizes are usually constant)."""
    block = _ZEROS.get(n)
    if block is None:
        block = bytes(n)
        if len(_ZEROS) < 4096:
            _ZEROS[n] = block
    return block


def parse_header(frame: bytes) -> tuple[int, int, int, float | None] | None:
    """(kind, workload index, sequence, send time or None) from a last frame, if present."""
    n = len(frame)
    if n >= FULL.size and frame[n - FULL.size] == MAGIC_FULL:
        magic, kind, widx, seq, sent = FULL.unpack_from(frame, n - FULL.size)
        return kind, widx, seq, sent
    if n >= SHORT.size and frame[n - SHORT.size] == MAGIC_SHORT:
        magic, kind, widx, seq = SHORT.unpack_from(frame, n - SHORT.size)
        return kind, widx, seq, None
    return None


def parse_root(frame: bytes) -> tuple[int, float] | None:
    """(the root's [[send]] index, its send time) from the last frame of a caused message
    (a reply or a stage's result) that carries it, else None."""
    n = len(frame)
    if n >= CAUSED_SIZE and frame[n - FULL.size] == MAGIC_FULL and frame[n - CAUSED_SIZE] == MAGIC_ROOT:
        _magic, widx, sent = ROOT.unpack_from(frame, n - CAUSED_SIZE)
        return widx, sent
    return None


def root_of(frames: list[bytes]) -> tuple[int, float] | None:
    """The root a message answering ``frames`` (a request, or a task for a stage) carries on:
    the request's own [[send]] stamp when it was sent by a [[send]], else the root it
    carried itself (a reply answered again, a result forwarded again). None without one (a
    frame too small for the stamps)."""
    header = parse_header(frames[-1]) if frames else None
    if header is None:
        return None
    kind, widx, _seq, sent = header
    if kind == KIND_DATA:
        return (widx, sent) if sent is not None else None
    return parse_root(frames[-1])


# --------------------------------------------------------------------------------------
# Statistics


class SocketStats:
    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = 0
        self.send_again = 0
        self.send_unroutable = 0
        self.received = 0
        self.recv_again = 0
        self.blocked_s = 0.0
        self.blocked_count = 0
        self.first_recv: float | None = None
        self.last_recv: float | None = None
        self.first_sent: float | None = None  # send time of the first message received
        self.latency = array("d")
        self.indices: dict[str, array] = {}
        self.opened = False
        # per caused message received (a reply, a stage's result): its root's [[send]]
        # index, the time from the root's send to now, and whether it ended its chain here
        # (it caused nothing further: zsim.results.causal_times counts an end-to-end time
        # only there)
        self.causal_root = array("H")
        self.causal_s = array("d")
        self.causal_end = array("B")
        #: caused messages received without their root's stamp (a frame under CAUSED_SIZE)
        self.causal_unstamped = 0

    def record(self, frames: list[bytes], now: float, end: bool = True, root: tuple[int, float] | None = None) -> int:
        """Count a delivered message; returns the index of its causal record (-1: none).
        ``end``: what receives it answers or forwards nothing; ``root``: the root when the
        receiver knows it better than the message can say (a REQ's reply answers the
        request it sent last)."""
        self.received += 1
        if self.first_recv is None:
            self.first_recv = now
        self.last_recv = now
        header = parse_header(frames[-1]) if frames else None
        if header is None:
            return self._causal(root, now, end)
        kind, widx, seq, sent = header
        key = f"{'s' if kind == KIND_DATA else 'r'}{widx}"
        seqs = self.indices.get(key)
        if seqs is None:
            seqs = self.indices[key] = array("I")
        seqs.append(seq)
        if sent is not None:
            self.latency.append(now - sent)
            if self.first_sent is None:
                self.first_sent = sent
        if kind != KIND_DATA and root is None:
            root = parse_root(frames[-1])
            if root is None:
                self.causal_unstamped += 1
        return self._causal(root, now, end)

    def _causal(self, root: tuple[int, float] | None, now: float, end: bool) -> int:
        if root is None:
            return -1
        self.causal_root.append(root[0] & 0xFFFF)
        self.causal_s.append(now - root[1])
        self.causal_end.append(1 if end else 0)
        return len(self.causal_end) - 1


# --------------------------------------------------------------------------------------
# Workloads: generators that yield requests to the socket's scheduler
#   ("wait", deadline, spin_s) -> True, or False when the process is stopping
#   ("spin", cpu_s)           -> True once the thread has computed cpu_s seconds of its
#                                own CPU time, False when the process is stopping
#   ("send", frames, dontwait) -> "sent" | "again" | "unroutable"
#   ("recv",)                  -> list of frames, or None when RCVTIMEO expired


def _sampler(raw: Any, rng: Any, unit: str = "s", integer: bool = False) -> Any:
    if raw is None:
        return None
    dist = parse_distribution(raw, "plan", unit)
    return dist.sampler(None if dist.is_constant else rng, integer)


class SendTask:
    def __init__(self, plan: dict[str, Any], proc: Process, stats: SocketStats) -> None:
        self.plan = plan
        self.proc = proc
        self.stats = stats
        self.name = plan["name"]
        streams = proc.streams
        names = plan["streams"]  # zsim.spec.SendSpec.streams: the simulator's names
        self.interval = _sampler(plan["interval"], streams(names["interval"]))
        self.size = _sampler(plan["size"], streams(names["size"]), "bytes", integer=True)
        self.attempts = 0
        self.sent = 0
        self.again = 0
        self.unroutable = 0
        self.finished_at: float | None = None
        self.rtt = array("d")
        self.replies = 0
        self.reply_timeouts = 0  # a REQ's recv of its reply that RCVTIMEO ended
        self.done = False
        # The workload's own schedule: each attempt is due when the previous send call (and
        # reply, for a REQ) returned plus the drawn interval. What ZeroMQ takes (time inside
        # send and receive calls, blocking included) moves the schedule; what the harness
        # and the machine take (wait lateness, Python between calls, a starved CPU) is
        # lateness against it.
        self.scheduled_start: float | None = None
        # pacing "schedule": attempt k is due at start + the first k drawn intervals, what
        # the calls take does not move it (behind schedule: back to back until caught up)
        self.scheduled = plan.get("pacing") == "schedule"
        self.pauses_s = 0.0  # drawn intervals whose wait completed
        # after_send: the usual lateness of those waits on this machine (the profile's, which
        # the model adds too): the program's own pace, not the machine falling behind
        self.usual_late_s = 0.0
        self.zmq_s = 0.0  # inside send/recv calls
        self.progress_at: float | None = None  # when the last call or wait returned

    def run(self) -> Generator[Any, Any, None]:
        plan, proc, stats = self.plan, self.proc, self.stats
        t0 = proc.t0
        count = plan["count"]
        end = t0 + plan["start_s"] + plan["duration_s"] if plan["duration_s"] is not None else None
        horizon = t0 + proc.horizon_s if proc.horizon_s is not None else None
        if end is None or (horizon is not None and horizon < end):
            end = horizon
        topics = plan["topics"] or [""]
        to = [t.encode() for t in plan["to"]]
        parts = plan["parts"]
        dontwait = plan["dontwait"]
        stop_on_again = plan["on_again"] == "stop"
        stop_on_timeout = plan.get("on_timeout", "retry") == "stop"
        is_req = TYPES[plan["socket_type"]].request
        widx = plan["index"]
        spin = plan.get("wait_spin_s", 0.0)
        loop_cpu = plan.get("loop_cpu_s", 0.0)
        expected_late = plan.get("expected_late_s", 0.0)
        try:
            self.scheduled_start = t0 + plan["start_s"]
            if not (yield ("wait", t0 + plan["start_s"], spin)):
                return
            self.progress_at = _pc()
            topic_i = to_i = 0
            back_to_back_checks = 0
            while True:
                now = _pc()
                if (count is not None and self.attempts >= count) or (end is not None and now >= end):
                    return
                seq = self.attempts
                self.attempts += 1
                topic = topics[topic_i]
                topic_i = (topic_i + 1) % len(topics)
                size = max(0, int(self.size.next()))
                frames = build_frames(size, topic, parts, KIND_DATA, widx, seq, now)
                if to:
                    frames.insert(0, to[to_i])
                    to_i = (to_i + 1) % len(to)
                call = _pc()
                status = yield ("send", frames, dontwait)
                self.progress_at = returned = _pc()
                self.zmq_s += returned - call
                if status == "sent":
                    self.sent += 1
                    stats.sent += 1
                    proc.last_activity = now
                    if is_req:
                        while True:
                            reply = yield ("recv",)
                            if reply is not None:
                                break
                            # zmq.Again: RCVTIMEO expired before the reply came
                            self.reply_timeouts += 1
                            stats.recv_again += 1
                            if stop_on_timeout:
                                return
                        self.progress_at = done_at = _pc()
                        self.zmq_s += done_at - returned
                        # a REQ's reply answers the request it sent last: its root, stamped
                        # in it or not (a reply too small to carry the stamp)
                        stats.record(reply, done_at, root=(widx, now))
                        self.replies += 1
                        self.rtt.append(done_at - now)
                else:
                    if status == "unroutable":
                        self.unroutable += 1
                        stats.send_unroutable += 1
                    else:
                        self.again += 1
                        stats.send_again += 1
                    if stop_on_again:
                        return
                if loop_cpu > 0 and not (yield ("spin", loop_cpu)):
                    return
                pause = self.interval.next()
                if self.scheduled:
                    due = self.scheduled_start + self.pauses_s + pause
                    self.pauses_s += pause  # the schedule advances whether or not we wait
                    if due > _pc() or back_to_back_checks >= 64:
                        back_to_back_checks = 0
                        if not (yield ("wait", due, spin)):
                            return
                        self.progress_at = _pc()
                    else:
                        back_to_back_checks += 1  # behind schedule: the next send at once
                elif pause > 0 or back_to_back_checks >= 64:
                    back_to_back_checks = 0
                    if not (yield ("wait", _pc() + pause, spin)):
                        return
                    self.pauses_s += pause
                    if pause > 0:
                        self.usual_late_s += expected_late
                    self.progress_at = _pc()
                else:
                    # back to back: no wait, but look at the stop flag now and then
                    back_to_back_checks += 1
        finally:
            self.finish()

    def schedule(self) -> dict[str, Any] | None:
        """How far this workload fell behind its own schedule (None before it started).

        ``behind_s``: lateness of the last step against its scheduled time (the scheduled
        start plus the drawn intervals plus the time ZeroMQ calls took, plus, with
        ``after_send``, each wait's usual lateness on this machine, ``usual_late_s``);
        ``rate_fraction``: the share of the program's own pace achieved,
        ``(pauses + usual late) / (pauses + usual late + behind)`` (None for back-to-back
        sends, which request no rate)."""
        start, progress = self.scheduled_start, self.progress_at
        if start is None or progress is None:
            return None
        pauses, zmq_s, usual = self.pauses_s, self.zmq_s, self.usual_late_s
        # after_send: ZeroMQ's call time and the waits' usual lateness move the schedule;
        # "schedule": nothing does
        behind = max(0.0, progress - start - pauses - (0.0 if self.scheduled else zmq_s + usual))
        return {
            "behind_s": behind,
            "pauses_s": pauses,
            "zmq_s": zmq_s,
            "usual_late_s": usual,
            "rate_fraction": ((pauses + usual) / (pauses + usual + behind)) if pauses > 0 else None,
        }

    def finish(self) -> None:
        if not self.done:
            self.done = True
            self.finished_at = _pc()
            self.proc.sender_finished()


class RecvTask:
    def __init__(self, plan: dict[str, Any], proc: Process, stats: SocketStats) -> None:
        self.plan = plan
        self.proc = proc
        self.stats = stats
        self.name = plan["name"]
        streams = proc.streams
        names = plan["streams"]  # zsim.spec.RecvSpec.streams: the simulator's names
        self.service = _sampler(plan["service"], streams(names["service"]))
        self.reply_size = _sampler(plan["reply_size"], streams(names["reply_size"]), "bytes", integer=True)
        self.pause_every = _sampler(plan["pause_every"], streams(names["pause_every"]))
        self.pause = _sampler(plan["pause"], streams(names["pause"]))
        self.received = 0
        self.paused_s = 0.0
        self.replies_sent = 0
        self.done = False

    def run(self) -> Generator[Any, Any, None]:
        plan, proc, stats = self.plan, self.proc, self.stats
        t0 = proc.t0
        count = plan["count"]
        start = t0 + plan["start_s"]
        end = start + plan["duration_s"] if plan["duration_s"] is not None else None
        reply = plan["reply"]
        forward = plan.get("forward_to") is not None
        sock_type = plan["socket_type"]
        stop_on_timeout = plan["on_timeout"] == "stop"
        busy = plan.get("busy", False)
        widx = plan["index"]
        body_frames = plan.get("body_frames", {})
        # the envelope matters only to what answers or forwards, and to a ROUTER (whose
        # routing id is not the body); elsewhere the loop stays what measure_app_loop measured
        # (validation/harness-program.toml)
        split = reply or forward or TYPES[sock_type].prepends_identity
        next_pause = start + self.pause_every.next() if self.pause_every is not None else float("inf")
        spin = plan.get("wait_spin_s", 0.0)
        loop_cpu = plan.get("loop_cpu_s", 0.0)
        try:
            if not (yield ("wait", start, spin)):
                return
            while True:
                now = _pc()
                if (count is not None and self.received >= count) or (end is not None and now >= end):
                    return
                if now >= next_pause:
                    length = self.pause.next()
                    self.paused_s += length
                    next_pause = now + length + self.pause_every.next()
                    if not (yield ("wait", now + length, spin)):
                        return
                    continue
                frames = yield ("recv",)
                if frames is None:
                    stats.recv_again += 1
                    if stop_on_timeout:
                        return
                    continue
                got = _pc()
                proc.touch()
                envelope, body = split_envelope(frames, sock_type, body_frames) if split else ([], frames)
                message = body if body else frames
                # a message this workload answers or forwards is a hop of its chain, not its
                # end (if the run ends before the answer goes out, the chain is in flight)
                stats.record(message, got, end=not (reply or forward))
                root = root_of(message) if reply or forward else None
                self.received += 1
                service = self.service.next()
                if busy:  # one computation: the loop's own work, then the service
                    request: tuple = ("spin", loop_cpu + service)
                else:
                    if loop_cpu > 0:
                        if not (yield ("spin", loop_cpu)):
                            return
                        got = _pc()
                    request = ("wait", got + service, spin)
                if not (yield request):
                    return
                if forward:
                    # a pipeline stage (zguide taskwork): the result goes out on another
                    # socket of this thread, with a blocking send
                    size = max(0, int(self.reply_size.next())) if self.reply_size is not None else sum(len(f) for f in body)
                    out = build_frames(size, "", 1, KIND_REPLY, widx, self.replies_sent, _pc(), root)
                    status = yield ("forward", out)
                    if status == "sent":
                        self.replies_sent += 1
                    continue
                if reply:
                    if self.reply_size is not None:
                        size = max(0, int(self.reply_size.next()))
                    else:
                        size = sum(len(f) for f in body)
                    out = envelope + build_frames(size, "", 1, KIND_REPLY, widx, self.replies_sent, _pc(), root)
                    # The simulator's reply never blocks (REP and ROUTER drop, a DEALER that
                    # gets EAGAIN counts it): DONTWAIT.
                    status = yield ("send", out, True)
                    if status == "sent":
                        stats.sent += 1
                        self.replies_sent += 1
                    elif status == "unroutable":
                        stats.send_unroutable += 1
                    else:
                        stats.send_again += 1
        finally:
            # a copy whose answer had not gone out when the run ended is a chain still in
            # flight, no end: as the simulator counts it (zsim.results.causal_times,
            # chains_at_end), it gives no end-to-end time
            self.done = True


# --------------------------------------------------------------------------------------
# A socket and its workloads


class SocketAgent:
    """Owns one socket: open, workloads, close. All zmq calls on it happen in this thread."""

    def __init__(self, plan: dict[str, Any], proc: Process) -> None:
        self.plan = plan
        self.proc = proc
        self.name = plan["name"]
        self.stats = SocketStats(self.name)
        self.tasks: list[Any] = []
        self.sock: zmq.Socket | None = None
        self.lateness = array("d")  # how late each timed wait returned
        self.send_time = 0.0  # time inside send calls that did not block
        self.send_calls = 0
        close_at = plan["close_at_s"]
        self.close_deadline: float | None = None if close_at is None else None
        self.close_at = close_at
        self.thread = threading.Thread(target=self.main, name=f"socket-{self.name}", daemon=True)
        # a socket a [[recv]] of this socket forwards to: opened and used by this thread
        self.forward: SocketAgent | None = None
        self.owned = False  # this socket is another agent's forward socket
        #: the [[call]]s of this thread's sockets (None: it makes none, and waits as before)
        self.timeline: CallTimeline | None = None

    # -- socket set-up ------------------------------------------------------------------

    def open(self) -> zmq.Socket:
        plan = self.plan
        ctx = self.proc.ctx
        sock = ctx.socket(SOCKET_TYPES[plan["type"]])
        apply_options(sock, plan)
        for endpoint in plan["bind"]:
            sock.bind(endpoint)
        for endpoint in plan["connect"]:
            sock.connect(endpoint)
        if subscribes_by_message(plan["type"]):
            for prefix in plan["options"]["subscribe"]:
                sock.send(b"\x01" + prefix.encode())
        self.stats.opened = True
        return sock

    def main(self) -> None:
        proc = self.proc
        stop = proc.stop
        try:
            if not wait_until(proc.t0 + self.plan["open_at_s"], stop):
                return
            if self.close_at is not None:
                self.close_deadline = proc.t0 + self.close_at
            self.sock = self.open()
            if self.forward is not None:
                self.forward.sock = self.forward.open()
            try:
                if self.timeline is not None:
                    self.timeline.start()
                gens = [task.run() for task in self.tasks]
                if len(gens) == 1:
                    self.run_one(gens[0])
                elif gens:
                    self.run_many(gens)
                if self.timeline is not None:
                    self._calls_before(float("inf"), 0.0)  # the calls left, until the close
                if self.close_deadline is not None:
                    wait_until(self.close_deadline, stop)
                else:
                    stop.wait()
            except (Closing, zmq.ContextTerminated):
                pass
            finally:
                for task in self.tasks:
                    if isinstance(task, SendTask):
                        task.finish()
                with contextlib.suppress(Exception):
                    self.sock.close()
                if self.forward is not None and self.forward.sock is not None:
                    with contextlib.suppress(Exception):
                        self.forward.sock.close()
        except zmq.ContextTerminated:
            pass
        except Exception:  # noqa: BLE001 - reported in the results, the run goes on
            proc.error(f"socket {self.name}: {traceback.format_exc(limit=6)}")
        finally:
            for task in self.tasks:
                if isinstance(task, SendTask):
                    task.finish()

    # -- blocking operations, bounded by close_at_s and the next [[call]] ---------------------

    def _limit_ms(self, option_ms: int, began: float) -> int:
        """The timeout to use for one blocking call: the option, cut at close_at_s (and, on
        a thread with [[call]]s, at the next call: ``_limit_at_calls_ms``)."""
        if self.timeline is not None:
            return self._limit_at_calls_ms(option_ms, began)
        if self.close_deadline is None:
            return option_ms
        remaining = int((self.close_deadline - _pc()) * 1000) + 1
        if remaining <= 0:
            raise Closing()
        return remaining if option_ms < 0 else min(option_ms, remaining)

    def _limit_at_calls_ms(self, option_ms: int, began: float) -> int:
        """``_limit_ms`` on a thread with [[call]]s: the calls due now are made first, then
        the wait is cut at the next one (or the close); the option (SNDTIMEO/RCVTIMEO) counts
        from ``began``, the start of the send or receive, as the simulator arms it once when
        the call blocks (``zsim.model.appthread``)."""
        timeline = self.timeline
        assert timeline is not None
        while True:
            now = _pc()
            close = self.close_deadline
            if close is not None and now >= close:
                raise Closing()
            upcoming = timeline.next_at
            if upcoming is not None and now >= upcoming:
                timeline.make_due()
                continue
            left = option_ms if option_ms < 0 else max(0, option_ms - int((now - began) * 1000))
            cut = close if upcoming is None else upcoming if close is None else min(close, upcoming)
            if cut is None:
                return left
            remaining = int((cut - now) * 1000) + 1
            return remaining if left < 0 else min(left, remaining)

    def _calls_before(self, deadline: float, spin_s: float) -> bool:
        """Wait for and make every call due before ``deadline`` (and before the close), each
        at its time; False when the process is stopping."""
        timeline = self.timeline
        assert timeline is not None
        stop = self.proc.stop
        while True:
            upcoming = timeline.next_at
            if upcoming is None or upcoming >= deadline or (self.close_deadline is not None and upcoming >= self.close_deadline):
                return True
            if not wait_until(upcoming, stop, spin_s):
                return False
            timeline.make_due(upcoming)

    def _compute(self, cpu_s: float) -> bool | None:
        """``compute`` on a thread with [[call]]s: the work stops at each call's time for the
        calls, then goes on with what it had left (the simulator makes a call at its time
        whatever the thread is doing)."""
        timeline = self.timeline
        assert timeline is not None
        stop = self.proc.stop
        target = _cpu() + cpu_s
        while True:
            upcoming, close = timeline.next_at, self.close_deadline
            until = close if upcoming is None else upcoming if close is None else min(close, upcoming)
            done = compute(target - _cpu(), stop, until)
            if done is not None:
                return done
            if close is not None and _pc() >= close:
                return None
            timeline.make_due()

    def make_call(self, call: dict[str, Any]) -> None:
        """One [[call]] on this socket (``make_call``)."""
        assert self.sock is not None
        make_call(self.sock, self.plan, call, self.proc)

    def send_blocking(self, frames: list[bytes], dontwait: bool) -> str:
        sock = self.sock
        assert sock is not None
        stats = self.stats
        single = len(frames) == 1
        try:
            began = _pc()
            if single:
                sock.send(frames[0], zmq.DONTWAIT)
            else:
                sock.send_multipart(frames, zmq.DONTWAIT)
            self.send_time += _pc() - began
            self.send_calls += 1
            return "sent"
        except zmq.Again:
            if dontwait:
                return "again"
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EHOSTUNREACH:
                return "unroutable"
            raise
        # would block: wait like a blocking zmq_send, up to SNDTIMEO (and close_at_s)
        stats.blocked_count += 1
        began = _pc()
        option = self.plan["options"]["sndtimeo"]
        try:
            while True:
                limit = self._limit_ms(option, began)
                if self.close_deadline is not None or self.timeline is not None:
                    sock.sndtimeo = limit
                try:
                    if single:
                        sock.send(frames[0])
                    else:
                        sock.send_multipart(frames)
                    return "sent"
                except zmq.Again:
                    if self.close_deadline is not None and _pc() >= self.close_deadline:
                        raise Closing() from None
                    if option >= 0 and _pc() - began >= option / 1000.0 - 0.0005:
                        return "again"
                except zmq.ZMQError as exc:
                    if exc.errno == zmq.EHOSTUNREACH:
                        return "unroutable"
                    raise
        finally:
            stats.blocked_s += _pc() - began

    def recv_blocking(self) -> list[bytes] | None:
        sock = self.sock
        assert sock is not None
        option = self.plan["options"]["rcvtimeo"]
        multipart = self.plan["multipart"]
        began = _pc()
        while True:
            if self.close_deadline is not None or self.timeline is not None:
                sock.rcvtimeo = self._limit_ms(option, began)
            try:
                if multipart:
                    return sock.recv_multipart()
                return [sock.recv()]
            except zmq.Again:
                if self.close_deadline is not None and _pc() >= self.close_deadline:
                    raise Closing() from None
                if option >= 0 and _pc() - began >= option / 1000.0 - 0.0005:
                    return None

    # -- schedulers ------------------------------------------------------------------------

    def run_one(self, gen: Generator[Any, Any, None]) -> None:
        """One workload on the socket: plain blocking calls (the most faithful)."""
        stop = self.proc.stop
        timeline = self.timeline
        value: Any = None
        while True:
            try:
                request = gen.send(value)
            except StopIteration:
                return
            op = request[0]
            if timeline is not None and timeline.next_at is not None and _pc() >= timeline.next_at:
                timeline.make_due()
            if op == "spin":
                value = compute(request[1], stop, self.close_deadline) if timeline is None else self._compute(request[1])
                if value is None:  # closing before the work was done
                    gen.close()
                    raise Closing()
            elif op == "wait":
                deadline = request[1]
                if timeline is not None and not self._calls_before(deadline, request[2]):
                    value = False
                    continue
                if self.close_deadline is not None and deadline > self.close_deadline:
                    wait_until(self.close_deadline, stop)
                    gen.close()
                    raise Closing()
                value = wait_until(deadline, stop, request[2])
                if value:
                    late = _pc() - deadline
                    if late >= 0.0:
                        self.lateness.append(late)
            elif op == "send":
                value = self.send_blocking(request[1], request[2])
            elif op == "forward":
                assert self.forward is not None
                value = self.forward.send_blocking(request[1], False)
                if value == "sent":
                    self.forward.stats.sent += 1
                elif value == "unroutable":
                    self.forward.stats.send_unroutable += 1
                else:
                    self.forward.stats.send_again += 1
            else:
                value = self.recv_blocking()

    def run_many(self, gens: list[Generator[Any, Any, None]]) -> None:
        """Several workloads on one socket (one thread may use a socket): a small scheduler.

        Timed waits, non-blocking sends and receives; a send that would block and a pending
        receive wait in ``zmq_poll`` (which wakes on the socket's commands like a blocked call).
        """
        sock = self.sock
        assert sock is not None
        stop = self.proc.stop
        opts = self.plan["options"]
        multipart = self.plan["multipart"]
        timeline = self.timeline
        pending: dict[int, list[Any]] = {}
        for index, gen in enumerate(gens):
            try:
                pending[index] = [gen.send(None), None]  # request, blocking-started-at
            except StopIteration:
                pass
        while pending:
            if stop.is_set():
                return
            now = _pc()
            if self.close_deadline is not None and now >= self.close_deadline:
                raise Closing()
            if timeline is not None and timeline.next_at is not None and now >= timeline.next_at:
                timeline.make_due()
                now = _pc()
            progressed = False
            for index in list(pending):
                request, since = pending[index]
                op = request[0]
                result: Any = _NOTHING
                if op == "spin":
                    # CPU work: the thread computes, its other workloads wait
                    result = compute(request[1], stop, self.close_deadline) if timeline is None else self._compute(request[1])
                    if result is None:
                        raise Closing()
                elif op == "wait":
                    if now >= request[1]:
                        result = True
                        self.lateness.append(now - request[1])
                elif op == "forward":
                    assert self.forward is not None
                    result = self.forward.send_blocking(request[1], False)
                    if result == "sent":
                        self.forward.stats.sent += 1
                    elif result == "unroutable":
                        self.forward.stats.send_unroutable += 1
                    else:
                        self.forward.stats.send_again += 1
                elif op == "send":
                    frames, dontwait = request[1], request[2]
                    try:
                        sock.send_multipart(frames, zmq.DONTWAIT)
                        result = "sent"
                    except zmq.Again:
                        if dontwait:
                            result = "again"
                        elif since is None:
                            pending[index][1] = now
                            self.stats.blocked_count += 1
                        elif opts["sndtimeo"] >= 0 and now - since >= opts["sndtimeo"] / 1000.0:
                            result = "again"
                    except zmq.ZMQError as exc:
                        if exc.errno != zmq.EHOSTUNREACH:
                            raise
                        result = "unroutable"
                    if result is not _NOTHING and since is not None:
                        self.stats.blocked_s += now - since
                else:
                    try:
                        result = sock.recv_multipart(zmq.DONTWAIT) if multipart else [sock.recv(zmq.DONTWAIT)]
                    except zmq.Again:
                        if since is None:
                            pending[index][1] = now
                        elif opts["rcvtimeo"] >= 0 and now - since >= opts["rcvtimeo"] / 1000.0:
                            result = None
                if result is _NOTHING:
                    continue
                progressed = True
                try:
                    pending[index] = [gens[index].send(result), None]
                except StopIteration:
                    del pending[index]
            if progressed or not pending:
                continue
            # nothing can move now: wait for the earliest deadline or a socket event
            deadlines = []
            events = 0
            for request, since in pending.values():
                if request[0] == "wait":
                    deadlines.append(request[1])
                elif request[0] == "send":
                    events |= zmq.POLLOUT
                    if opts["sndtimeo"] >= 0 and since is not None:
                        deadlines.append(since + opts["sndtimeo"] / 1000.0)
                else:
                    events |= zmq.POLLIN
                    if opts["rcvtimeo"] >= 0 and since is not None:
                        deadlines.append(since + opts["rcvtimeo"] / 1000.0)
            if self.close_deadline is not None:
                deadlines.append(self.close_deadline)
            if timeline is not None and timeline.next_at is not None:
                deadlines.append(timeline.next_at)
            deadline = min(deadlines) if deadlines else None
            if events:
                timeout_ms = None if deadline is None else max(0, int((deadline - _pc()) * 1000) - 1)
                if timeout_ms is None or timeout_ms > 0:
                    sock.poll(timeout_ms if timeout_ms is not None else 100, events)
                    continue
            if deadline is not None:
                # a workload's own wait, spun or slept as it asks (one thread: one way)
                spins = [request[2] for request, _since in pending.values() if request[0] == "wait"]
                wait_until(deadline, stop, max(spins) if spins else 0.0)


_NOTHING = object()


def make_call(sock: zmq.Socket, plan: dict[str, Any], call: dict[str, Any], proc: Process) -> None:
    """One [[call]] on ``sock`` (``zsim.build.perform_call``), by the thread that owns it:
    zmq_bind, zmq_unbind, zmq_connect or zmq_disconnect of each endpoint, zmq_setsockopt of
    each option in order (``plan``'s options follow: a timeout holds from the next send or
    receive), or (un)subscriptions (an XSUB sends them as messages). What libzmq refuses is
    reported with the counts; the run goes on."""
    action = call["action"]
    try:
        for endpoint in call["endpoints"]:
            if action == "bind":
                sock.bind(endpoint)
            elif action == "unbind":
                sock.unbind(endpoint)
            elif action == "connect":
                sock.connect(endpoint)
            else:
                sock.disconnect(endpoint)
        for name, value in call["options"]:
            sock.setsockopt(getattr(zmq, name.upper()), value.encode() if isinstance(value, str) else int(value))
            if name in plan["options"]:
                plan["options"][name] = value
        subscribe = action == "subscribe"
        for prefix in call["prefixes"]:
            if subscribes_by_message(plan["type"]):
                sock.send((b"\x01" if subscribe else b"\x00") + prefix.encode())
            else:
                sock.setsockopt(zmq.SUBSCRIBE if subscribe else zmq.UNSUBSCRIBE, prefix.encode())
    except zmq.ZMQError as exc:
        proc.error(f"socket {plan['name']}: {call['label']} ({action}): {exc}")


class CallTimeline:
    """The ``[[call]]``s on the sockets one thread owns (its socket, and the one a stage of
    it forwards to), in the scenario's order: the thread makes each at its time, as the
    simulator does (``zsim.build.perform_call``); ZeroMQ sockets are not thread-safe. Every
    blocking wait of the thread ends at ``next_at`` (``SocketAgent._limit_at_calls_ms``,
    ``_calls_before``, ``_compute``, ``run_many``), the thread makes the calls due
    (``make_due``) and goes on with what it was doing."""

    def __init__(self, proc: Process, entries: list[tuple[float, int, SocketAgent, dict[str, Any]]]) -> None:
        self.proc = proc
        #: (at_s, the call's place in the scenario, the socket's agent, the call), in time order
        self.entries = sorted(entries, key=lambda entry: (entry[0], entry[1]))
        #: perf_counter time of the next call (None: none left, or not started)
        self.next_at: float | None = None

    def start(self) -> None:
        """The thread's sockets are open: the calls are due from t0 + at_s on (those due now
        are made now)."""
        self._advance()
        self.make_due()

    def _advance(self) -> None:
        self.next_at = self.proc.t0 + self.entries[0][0] if self.entries else None

    def make_due(self, upto: float | None = None) -> None:
        """Make every call due by now (or by ``upto``, when a wait for it has just ended). A
        process that is leaving makes no more calls (the simulator skips them too)."""
        limit = _pc() if upto is None else max(upto, _pc())
        t0 = self.proc.t0
        while self.entries and t0 + self.entries[0][0] <= limit:
            _at, _order, agent, call = self.entries.pop(0)
            if not self.proc.stop.is_set():
                agent.make_call(call)
        self._advance()


def apply_options(sock: zmq.Socket, plan: dict[str, Any]) -> None:
    """Set the scenario's options (only those that differ from libzmq's defaults)."""
    opts = plan["options"]
    sock_type = plan["type"]
    if sock_type in ROUTING_ID_TYPES:
        sock.setsockopt(zmq.ROUTING_ID, plan["routing_id"].encode())
    for name, option, default in (
        ("sndhwm", zmq.SNDHWM, 1000), ("rcvhwm", zmq.RCVHWM, 1000), ("linger", zmq.LINGER, -1),
        ("sndtimeo", zmq.SNDTIMEO, -1), ("rcvtimeo", zmq.RCVTIMEO, -1),
        ("sndbuf", zmq.SNDBUF, -1), ("rcvbuf", zmq.RCVBUF, -1),
        ("reconnect_ivl", zmq.RECONNECT_IVL, 100), ("reconnect_ivl_max", zmq.RECONNECT_IVL_MAX, 0),
        ("heartbeat_ivl", zmq.HEARTBEAT_IVL, 0), ("heartbeat_timeout", zmq.HEARTBEAT_TIMEOUT, -1),
        ("heartbeat_ttl", zmq.HEARTBEAT_TTL, 0), ("tcp_keepalive", zmq.TCP_KEEPALIVE, -1),
        ("tcp_keepalive_idle", zmq.TCP_KEEPALIVE_IDLE, -1), ("tcp_keepalive_intvl", zmq.TCP_KEEPALIVE_INTVL, -1),
        ("tcp_keepalive_cnt", zmq.TCP_KEEPALIVE_CNT, -1),
    ):
        if opts.get(name, default) != default:
            sock.setsockopt(option, int(opts[name]))
    for name, option in (("immediate", zmq.IMMEDIATE), ("conflate", zmq.CONFLATE),
                         ("router_mandatory", zmq.ROUTER_MANDATORY), ("xpub_nodrop", zmq.XPUB_NODROP),
                         # XPUB_VERBOSE before XPUB_VERBOSER: the latter sets both of xpub_t's flags
                         ("xpub_verbose", zmq.XPUB_VERBOSE), ("xpub_verboser", zmq.XPUB_VERBOSER), ("xpub_manual", zmq.XPUB_MANUAL),
                         ("invert_matching", zmq.INVERT_MATCHING), ("router_handover", zmq.ROUTER_HANDOVER),
                         ("probe_router", zmq.PROBE_ROUTER), ("req_relaxed", zmq.REQ_RELAXED), ("req_correlate", zmq.REQ_CORRELATE)):
        if opts[name]:
            sock.setsockopt(option, 1)
    if opts["connect_routing_id"] is not None:
        # taken by the next connect (binds do not use it): the socket's first
        sock.setsockopt(zmq.CONNECT_ROUTING_ID, opts["connect_routing_id"].encode())
    if TYPES[sock_type].filters_on_recv:
        for prefix in opts["subscribe"]:
            sock.setsockopt(zmq.SUBSCRIBE, prefix.encode())


# --------------------------------------------------------------------------------------
# Proxies


class ProxyAgent:
    """``zmq.proxy_steerable(frontend, backend, capture, control)`` in its own thread.

    The capture socket sees every forwarded message; a counter thread classifies them by
    the side they came in through (from the message header's origin workload, or, for an
    XPUB, subscription messages), which gives ``received``/``sent`` per proxy socket as the
    simulator counts them. The control socket ends the proxy at a socket's ``close_at_s``.
    """

    def __init__(self, plan: dict[str, Any], proc: Process, front: dict[str, Any], back: dict[str, Any]) -> None:
        self.plan = plan
        self.proc = proc
        self.name = plan["name"]
        self.front_plan, self.back_plan = front, back
        self.front_stats = SocketStats(front["name"])
        self.back_stats = SocketStats(back["name"])
        self.forwarded = 0
        self.unknown = 0
        #: why zmq.proxy_steerable returned, if a send in it failed (EAGAIN, EHOSTUNREACH)
        self.failed: str | None = None
        self.failed_at: float | None = None
        self.capture_endpoint = f"inproc://zsim-capture-{self.name}"
        self.control_endpoint = f"inproc://zsim-control-{self.name}"
        self.counter_ready = threading.Event()
        self.counter_stop = threading.Event()
        self.thread = threading.Thread(target=self.main, name=f"proxy-{self.name}", daemon=True)
        self.counter = threading.Thread(target=self.count_loop, name=f"proxy-count-{self.name}", daemon=True)

    def count_loop(self) -> None:
        ctx = self.proc.ctx
        try:
            pull = ctx.socket(zmq.PULL)
        except zmq.ContextTerminated:
            self.counter_ready.set()
            return
        pull.setsockopt(zmq.RCVHWM, 0)
        pull.setsockopt(zmq.LINGER, 0)
        pull.bind(self.capture_endpoint)
        self.counter_ready.set()
        sides = self.plan["sides"]
        front_is_xpub = TYPES[self.front_plan["type"]].app_sees_subscriptions
        back_is_xpub = TYPES[self.back_plan["type"]].app_sees_subscriptions
        try:
            while not self.counter_stop.is_set():
                if not pull.poll(50):
                    continue
                while True:
                    try:
                        frames = pull.recv_multipart(zmq.DONTWAIT)
                    except zmq.Again:
                        break
                    self.forwarded += 1
                    self.proc.touch()
                    header = parse_header(frames[-1])
                    side = None
                    if header is not None:
                        side = sides.get(f"{'s' if header[0] == KIND_DATA else 'r'}{header[1]}")
                    elif len(frames) == 1 and frames[0][:1] in (b"\x00", b"\x01") and (front_is_xpub or back_is_xpub):
                        side = "front" if front_is_xpub else "back"
                    if side == "front":
                        self.front_stats.received += 1
                        self.back_stats.sent += 1
                    elif side == "back":
                        self.back_stats.received += 1
                        self.front_stats.sent += 1
                    else:
                        self.unknown += 1
        except zmq.ContextTerminated:
            pass
        finally:
            with contextlib.suppress(Exception):
                pull.close()

    def main(self) -> None:
        proc = self.proc
        stop = proc.stop
        ctx = proc.ctx
        opened: list[tuple[dict[str, Any], zmq.Socket]] = []
        capture = control = None
        try:
            self.counter.start()
            self.counter_ready.wait(5)
            for plan in sorted((self.front_plan, self.back_plan), key=lambda p: p["open_at_s"]):
                if not wait_until(proc.t0 + plan["open_at_s"], stop):
                    return
                sock = ctx.socket(SOCKET_TYPES[plan["type"]])
                apply_options(sock, plan)
                for endpoint in plan["bind"]:
                    sock.bind(endpoint)
                for endpoint in plan["connect"]:
                    sock.connect(endpoint)
                if subscribes_by_message(plan["type"]):
                    for prefix in plan["options"]["subscribe"]:
                        sock.send(b"\x01" + prefix.encode())
                (self.front_stats if plan is self.front_plan else self.back_stats).opened = True
                opened.append((plan, sock))
            socks = {id(p): s for p, s in opened}
            front, back = socks[id(self.front_plan)], socks[id(self.back_plan)]
            capture = ctx.socket(zmq.PUSH)
            capture.setsockopt(zmq.SNDHWM, 0)
            capture.setsockopt(zmq.LINGER, 0)
            capture.connect(self.capture_endpoint)
            control = ctx.socket(zmq.PAIR)
            control.setsockopt(zmq.LINGER, 0)
            control.bind(self.control_endpoint)
            closes = [p["close_at_s"] for p in (self.front_plan, self.back_plan) if p["close_at_s"] is not None]
            if closes:
                threading.Thread(target=self._terminate_at, args=(proc.t0 + min(closes),), daemon=True).start()
            try:
                zmq.proxy_steerable(front, back, capture, control)
            except zmq.ContextTerminated:
                pass
            except zmq.ZMQError as exc:
                # a send inside the proxy failed (SNDTIMEO expired, a ROUTER_MANDATORY
                # without that peer): zmq_proxy returns -1 and the proxy is over
                if exc.errno not in (zmq.EAGAIN, zmq.EHOSTUNREACH):
                    raise
                self.failed = "EAGAIN" if exc.errno == zmq.EAGAIN else "EHOSTUNREACH"
                self.failed_at = _pc()
            # ended by a close_at_s: close what is due, keep the rest until its time
            for plan, sock in sorted(opened, key=lambda item: item[0]["close_at_s"] if item[0]["close_at_s"] is not None else 1e18):
                if plan["close_at_s"] is not None:
                    wait_until(proc.t0 + plan["close_at_s"], stop)
                else:
                    stop.wait()
                with contextlib.suppress(Exception):
                    sock.close()
        except zmq.ContextTerminated:
            pass
        except Exception:  # noqa: BLE001
            proc.error(f"proxy {self.name}: {traceback.format_exc(limit=6)}")
        finally:
            for _plan, sock in opened:
                with contextlib.suppress(Exception):
                    sock.close()
            for extra in (capture, control):
                if extra is not None:
                    with contextlib.suppress(Exception):
                        extra.close()
            self.counter_stop.set()

    def _terminate_at(self, deadline: float) -> None:
        if not wait_until(deadline, self.proc.stop):
            return
        with contextlib.suppress(Exception):
            sock = self.proc.ctx.socket(zmq.PAIR)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.control_endpoint)
            sock.send(b"TERMINATE")
            sock.close()


# --------------------------------------------------------------------------------------
# The process


class Process:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.name = plan["process"]
        if plan.get("cpus"):
            # before the context exists: its I/O threads, and every thread started
            # later, inherit the mask
            os.sched_setaffinity(0, plan["cpus"])
        self.ctx = zmq.Context(io_threads=plan.get("io_threads", 1))
        self.stop = threading.Event()  # the process is exiting or the run is over
        self.end = threading.Event()  # the parent said stop (or went away)
        #: the main thread has something to look at at once: ``end``, or the senders are done
        #: (``exit_after_sends`` starts the exit then, not at the next heartbeat)
        self.wake = threading.Event()
        #: this machine's dropped PUB send just before the run (``probe_speed``), or None
        self.speed_probe_drop_s: float | None = None
        self.t0 = 0.0
        self.cpu0 = 0.0
        self.io_cpu0 = 0.0
        self.horizon_s = plan["horizon_s"]
        self.streams = stream_factory(plan["seed"])
        self.last_activity = 0.0
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.unfinished_senders = len(plan["sends"])
        self.senders_done = threading.Event()
        if self.unfinished_senders == 0:
            self.senders_done.set()
        self.exit_started: float | None = None
        self.exit_completed: float | None = None
        self.term_thread: threading.Thread | None = None
        self.agents: dict[str, SocketAgent] = {}
        self.proxies: list[ProxyAgent] = []
        socket_plans = {s["name"]: s for s in plan["sockets"]}
        proxied: set[str] = set()
        for proxy_plan in plan["proxies"]:
            front, back = socket_plans[proxy_plan["frontend"]], socket_plans[proxy_plan["backend"]]
            self.proxies.append(ProxyAgent(proxy_plan, self, front, back))
            proxied.update((front["name"], back["name"]))
        for sock_plan in plan["sockets"]:
            if sock_plan["name"] not in proxied:
                self.agents[sock_plan["name"]] = SocketAgent(sock_plan, self)
        self.send_tasks: list[SendTask] = []
        self.recv_tasks: list[RecvTask] = []
        for send_plan in plan["sends"]:
            agent = self.agents[send_plan["socket"]]
            task = SendTask(send_plan, self, agent.stats)
            agent.tasks.append(task)
            self.send_tasks.append(task)
        for recv_plan in plan["recvs"]:
            agent = self.agents[recv_plan["socket"]]
            recv_task = RecvTask(recv_plan, self, agent.stats)
            agent.tasks.append(recv_task)
            self.recv_tasks.append(recv_task)
            target = recv_plan.get("forward_to")
            if target is not None:
                agent.forward = self.agents[target]
                self.agents[target].owned = True
        for agent in self.agents.values():
            # one timeline per thread: its socket's calls and its forward socket's
            members = [agent] if agent.forward is None else [agent, agent.forward]
            entries = [(call["at_s"], call["order"], member, call) for member in members for call in member.plan.get("calls", ())]
            if entries and not agent.owned:
                timeline = CallTimeline(self, entries)
                for member in members:
                    member.timeline = timeline
        self.busy_threads = len(self.agents) + len(self.proxies) > 1

    # -- called from worker threads ------------------------------------------------------------

    def touch(self) -> None:
        self.last_activity = _pc()

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)

    def _errors_copy(self) -> list[str]:
        with self.lock:
            return list(self.errors)

    def sender_finished(self) -> None:
        with self.lock:
            self.unfinished_senders -= 1
            if self.unfinished_senders <= 0:
                self.senders_done.set()
                self.wake.set()

    # -- lifecycle -------------------------------------------------------------------------

    def start_exit(self) -> None:
        if self.exit_started is not None:
            return
        self.exit_started = _pc()
        self.stop.set()

        def term() -> None:
            with contextlib.suppress(Exception):
                self.ctx.term()
            self.exit_completed = _pc()

        self.term_thread = threading.Thread(target=term, name="ctx-term", daemon=True)
        self.term_thread.start()

    def heartbeat(self) -> dict[str, Any]:
        return {
            "activity": (self.last_activity - self.t0) if self.last_activity else 0.0,
            "senders_done": self.senders_done.is_set(),
            "exiting": self.exit_started is not None,
            "exited": self.exit_completed is not None,
        }

    def snapshot(self, crashed: bool = False) -> dict[str, Any]:
        now = _pc()
        t0 = self.t0

        def rel(value: float | None) -> float | None:
            return None if value is None else value - t0

        results_dir = self.plan["results_dir"]
        sockets: dict[str, Any] = {}
        all_stats = [a.stats for a in self.agents.values()]
        for proxy in self.proxies:
            all_stats.extend((proxy.front_stats, proxy.back_stats))
        for stats in all_stats:
            # Worker threads keep appending while this runs (a horizon stops nobody): read
            # every growing array through an atomic copy (``array[:]`` is one C call under
            # the GIL). A NumPy view of the live array would export its buffer, and an
            # append in that window raises BufferError in the worker thread.
            latency = _copy(stats.latency)
            sockets[stats.name] = {
                "sent": stats.sent, "send_again": stats.send_again, "send_unroutable": stats.send_unroutable,
                "received": stats.received, "recv_again": stats.recv_again, "blocked_s": stats.blocked_s,
                "blocked_count": stats.blocked_count, "first_recv_s": rel(stats.first_recv),
                "last_recv_s": rel(stats.last_recv), "first_sent_s": rel(stats.first_sent), "opened": stats.opened,
                "indices": {origin: _runs(seqs[:].tolist()) for origin, seqs in list(stats.indices.items())},
            }
            if len(latency):
                np.save(os.path.join(results_dir, f"latency-{stats.name}.npy"), latency)
            causal = _causal_copy(stats)
            if len(causal):
                np.save(os.path.join(results_dir, f"causal-{stats.name}.npy"), causal)
            if stats.causal_unstamped:
                sockets[stats.name]["causal_unstamped"] = stats.causal_unstamped
        senders = {}
        for task in self.send_tasks:
            senders[task.name] = {
                "socket": task.plan["socket"], "attempts": task.attempts, "sent": task.sent, "again": task.again,
                "unroutable": task.unroutable, "finished_at_s": rel(task.finished_at) if task.done else None,
                "schedule": task.schedule(),
            }
            if TYPES[task.plan["socket_type"]].request:
                senders[task.name]["reply_timeouts"] = task.reply_timeouts
            rtt = _copy(task.rtt)
            if len(rtt):
                np.save(os.path.join(results_dir, f"rtt-{task.name}.npy"), rtt)
        receivers = {t.name: {"socket": t.plan["socket"], "received": t.received, "paused_s": t.paused_s} for t in self.recv_tasks}
        lateness = [copy for copy in (_copy(a.lateness) for a in self.agents.values()) if len(copy)]
        if lateness:
            np.save(os.path.join(results_dir, f"lateness-{self.name}.npy"), np.concatenate(lateness))
        send_calls = sum(a.send_calls for a in self.agents.values())
        send_time = sum(a.send_time for a in self.agents.values())
        proxies = {p.name: {"frontend": p.front_plan["name"], "backend": p.back_plan["name"], "forwarded": p.forwarded,
                            "unclassified": p.unknown} for p in self.proxies}
        for p in self.proxies:
            if p.failed is not None:
                proxies[p.name]["failed"] = p.failed
                proxies[p.name]["failed_at_s"] = rel(p.failed_at)
        return {
            "process": self.name,
            "snapshot_s": now - t0,
            "last_activity_s": rel(self.last_activity) if self.last_activity else None,
            "exit_started_s": rel(self.exit_started),
            "exit_completed_s": rel(self.exit_completed),
            "term_blocked": self.exit_started is not None and self.exit_completed is None and not crashed,
            "crashed_s": (now - t0) if crashed else None,
            # every thread of the process (workloads, libzmq's I/O threads, the harness's
            # own) since t0: compared with the model's per-process CPU (summary.machine)
            "cpu_s": time.process_time() - self.cpu0,
            "io_cpu_s": io_thread_cpu_s() - self.io_cpu0,  # of which libzmq's I/O threads
            "sockets": sockets,
            "senders": senders,
            "receivers": receivers,
            "proxies": proxies,
            "send_calls": send_calls,
            "send_call_time_s": send_time,
            "replies_sent": sum(t.replies_sent for t in self.recv_tasks),
            "replies_received": sum(t.replies for t in self.send_tasks),
            "errors": self._errors_copy(),
            "speed_probe_drop_s": self.speed_probe_drop_s,
        }

    def write_results(self, crashed: bool = False) -> None:
        result = self.snapshot(crashed)
        self._write(result)
        if crashed:  # SIGKILL follows at once: the crash time is what the results say
            return
        # A worker thread that failed while the counters were read reports it a moment
        # later; the process leaves with os._exit, so look once more and keep the error.
        time.sleep(AFTER_SNAPSHOT_S)
        with self.lock:
            late = self.errors[len(result["errors"]):]
        if late:
            result["errors"] = result["errors"] + [f"after the counters were taken: {e}" for e in late]
            self._write(result)

    def _write(self, result: dict[str, Any]) -> None:
        path = os.path.join(self.plan["results_dir"], f"{self.name}.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(result, handle)
        os.replace(tmp, path)

    def warm_up(self) -> None:
        """Start the context's I/O and reaper threads now, as an application that made its
        context at start-up has them, instead of at the first socket's ``open_at_s``."""
        sock = self.ctx.socket(zmq.PAIR)
        sock.setsockopt(zmq.LINGER, 0)
        sock.bind(f"inproc://zsim-warm-up-{os.getpid()}")
        sock.close()

    def probe_speed(self) -> None:
        """With a back-to-back ``[[send]]`` (its pace is the machine's speed), measure this
        machine's dropped PUB send now, before the run, exactly as the profile's
        ``send_drop_call_s`` is measured (``validation.calibrate.measure_send_dropped``):
        ``compare.speed_check`` compares it with the profile, seconds from the blast
        instead of after the run."""
        def back_to_back(raw: Any) -> bool:
            if raw is None:
                return True
            dist = parse_distribution(raw, "plan", "s")
            return bool(dist.is_constant and dist.value == 0)

        if not any(back_to_back(t.plan["interval"]) for t in self.send_tasks):
            return
        from .calibrate import measure_send_dropped

        self.speed_probe_drop_s = float(measure_send_dropped(quick=True)["median_s"])

    def run(self) -> None:
        self.probe_speed()
        self.warm_up()
        emit({"ready": True})
        self.t0 = read_t0()
        self.cpu0 = time.process_time()
        self.io_cpu0 = io_thread_cpu_s()
        threading.Thread(target=self._read_commands, name="stdin", daemon=True).start()
        if self.busy_threads:
            sys.setswitchinterval(0.0002)
        for proxy in self.proxies:
            proxy.thread.start()
        for agent in self.agents.values():
            if not agent.owned:
                agent.thread.start()
        plan = self.plan
        t0 = self.t0
        exit_at = t0 + plan["exit_at_s"] if plan["exit_at_s"] is not None else None
        crash_at = t0 + plan["crash_at_s"] if plan["crash_at_s"] is not None else None
        horizon = t0 + self.horizon_s if self.horizon_s is not None else None
        hard = t0 + plan["hard_limit_s"] + 2.0
        next_beat = _pc()
        while True:
            self.wake.clear()  # what set it is looked at below; a later set ends the wait
            now = _pc()
            if self.end.is_set() or now >= hard or (horizon is not None and now >= horizon):
                break
            if crash_at is not None and now >= crash_at:
                self.stop.set()
                self.write_results(crashed=True)
                emit({"done": True, "hb": self.heartbeat()})
                os.kill(os.getpid(), signal.SIGKILL)
            if self.exit_started is None and (
                (exit_at is not None and now >= exit_at)
                or (plan["exit_after_sends"] and self.senders_done.is_set())
            ):
                self.start_exit()
            if now >= next_beat:
                emit({"hb": self.heartbeat()})
                next_beat = now + HEARTBEAT_S
            # sleep to the next thing to do; precise for timeline events
            events = [next_beat]
            for value in (exit_at if self.exit_started is None else None, crash_at, horizon):
                if value is not None:
                    events.append(value)
            target = min(events)
            if target - _pc() < 0.003:
                wait_until(target, self.wake)
            else:
                self.wake.wait(min(target - _pc() - 0.002, HEARTBEAT_S))
                if plan["exit_after_sends"] and self.exit_started is None and self.senders_done.is_set():
                    continue
        self.write_results()
        emit({"done": True, "hb": self.heartbeat()})
        sys.stdout.flush()
        os._exit(0)

    def _read_commands(self) -> None:
        try:
            for line in sys.stdin:
                if line.strip() == "stop":
                    break
        except Exception:  # noqa: BLE001
            pass
        # "stop", or the parent closed our stdin (it is gone): end the run
        self.end.set()
        self.wake.set()


_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def io_thread_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's libzmq I/O threads, the
    threads libzmq names ``ZMQbg/IO/n`` (``thread_t::setSchedulingParameters``), read from
    ``/proc/self/task/*/stat`` in clock ticks (10 ms); 0 where /proc has no such threads."""
    total = 0
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/stat") as handle:
                stat = handle.read()
            name = stat[stat.find("(") + 1 : stat.rfind(")")]
            if name.startswith("ZMQbg/IO"):
                fields = stat[stat.rfind(")") + 2 :].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return total * _TICK_S


def _copy(values: array) -> np.ndarray:
    """A NumPy copy of an ``array('d')`` another thread may be appending to: the slice is
    taken in one step and owns its buffer, so the live array never exports its own."""
    return np.frombuffer(values[:], dtype=np.float64)


def _causal_copy(stats: SocketStats) -> np.ndarray:
    """A socket's causal records as rows (root [[send]] index, seconds since the root's
    send, 1 where the chain ended there); each array copied in one step (another thread may
    be appending: the rows all three hold)."""
    roots = np.frombuffer(stats.causal_root[:], dtype=np.uint16)
    times = np.frombuffer(stats.causal_s[:], dtype=np.float64)
    ends = np.frombuffer(stats.causal_end[:], dtype=np.uint8)
    n = min(len(roots), len(times), len(ends))
    return np.stack([roots[:n].astype(np.float64), times[:n], ends[:n].astype(np.float64)], axis=1)


def _runs(values: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for value in sorted(set(values)):
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return runs


_emit_lock = threading.Lock()


def emit(message: dict[str, Any]) -> None:
    with _emit_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def read_t0(timeout_s: float = 120.0) -> float:
    ready, _, _ = select.select([sys.stdin], [], [], timeout_s)
    if not ready:
        os._exit(3)
    line = sys.stdin.readline()
    if not line.startswith("t0 "):
        os._exit(3)
    return float(line.split()[1])


def compute(cpu_s: float, stop: threading.Event | None = None, until: float | None = None) -> bool | None:
    """CPU work (``[[recv]] busy = true``): a busy loop until this thread's own CPU clock
    has advanced by ``cpu_s``, so the thread holds a core (and this process's GIL) all
    along and, sharing its core, takes longer than ``cpu_s`` in wall time, as the model's
    threads do. True when done, False when ``stop`` ended it, None when the wall clock
    reached ``until`` (the socket is closing) first."""
    target = _cpu() + cpu_s
    while True:
        if _cpu() >= target:
            return True
        if stop is not None and stop.is_set():
            return False
        now = _pc()
        if until is not None and now >= until:
            return None
        end = now + 0.001
        while _pc() < end and _cpu() < target:
            pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as handle:
        plan = json.load(handle)
    process = Process(plan)
    try:
        process.run()
    except BaseException:  # noqa: BLE001 - always leave results behind if we can
        process.error(traceback.format_exc(limit=8))
        with contextlib.suppress(Exception):
            process.write_results()
        sys.stdout.flush()
        os._exit(1)
    return 0


if __name__ == "__main__":
    main()
