"""Application threads: senders, receivers and ``zmq.proxy``.

Each is a small state machine driven by one re-armable timer and by socket wake-ups, not
a generator per message. Time spent in the application is modelled explicitly: a send
call costs the machine's ``send_call_s``, a recv call ``recv_call_s``, each plus the
program's own work around it (the workload's ``loop_cpu_s``: building the message,
bookkeeping; 0 for a bare loop), then the workload's own spacing (``interval``) or
service time. A loop ``send(); sleep(interval)`` therefore sends every
``send_call_s + loop_cpu_s + interval + lateness`` seconds, where the lateness is how late
the machine wakes the wait (its ``time.sleep``, or its precise wait when the program
spins the end of its waits, ``wait_spin_s`` > 0), and ``interval = 0`` means back to back.

Each workload makes its calls through its ``AppThread`` (``zsim.model.appthread``):
``socket_base_t::send``/``recv`` with DONTWAIT and SNDTIMEO, the message ids, the socket's
counters, the wake-up cost of a call and the CPU bursts (with ``[machine] cores`` on the
machine's cores, shared with the other runnable threads, else on a core of its own). The
workload decides only what to send or receive and when. Random draws come from a stream
passed in per workload, so adding or changing one workload leaves the others' draws
unchanged.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

from ..constants import frame_wire_bytes
from .appthread import AppThread
from .fates import AGAIN, BLOCKED, CLOSED, READY, RECEIVED, SENT
from .params import params_of
from .pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID, Message
from .socket import OPEN, Socket
from .sockets import XSub

if TYPE_CHECKING:  # pragma: no cover
    from ..sampler import Sampler
    from .params import ModelParams
    from .world import Process, World

#: pauses a receiver records (start and end) before it only counts them: a long run with a
#: pause a second would otherwise keep millions, and a template of a thousand receivers
#: a thousand times that in its summary
MAX_PAUSE_RECORDS = 200
#: wire bytes of one routing-id frame (5-byte generated id + header) or REQ delimiter
ENVELOPE_FRAME_BYTES = 7


def envelope_wire_bytes(envelope: tuple[Any, ...]) -> int:
    """Wire bytes of a reply's routing-id frames (the delimiter, ``BOTTOM``, counts none)."""
    return (len(envelope) - (BOTTOM in envelope)) * ENVELOPE_FRAME_BYTES


def message_wire_bytes(size: int, topic: str, parts: int) -> tuple[int, int]:
    """(bytes of all frames, bytes on a ZMTP stream) for one message.

    One part: the frame is ``topic + payload``. Several parts: the topic (if any) is its
    own first frame and the payload is split over the other frames.
    """
    topic_len = len(topic.encode()) if topic else 0
    if parts <= 1:
        total = topic_len + size
        return total, frame_wire_bytes(total)
    payload_frames = parts - 1 if topic else parts
    wire = frame_wire_bytes(topic_len) if topic else 0
    # ``extra`` frames of base + 1 bytes, the rest of base bytes: O(1) for any part count
    base, extra = divmod(size, payload_frames)
    wire += extra * frame_wire_bytes(base + 1) + (payload_frames - extra) * frame_wire_bytes(base)
    return topic_len + size, wire


def _jitter_sampler(world: World, name: str, wait_spin_s: float, typical_wait_s: float, params: ModelParams) -> Sampler | None:
    """How late the program's waits end: the machine's ``time.sleep`` (profile
    ``api.sleep_late_s``, for sleeps of about ``typical_wait_s``) for a program that sleeps,
    its precise wait (``api.timer_jitter_s``) for one that spins the end of its waits
    (``wait_spin_s`` > 0)."""
    jitter = params.wait_lateness(wait_spin_s, typical_wait_s)
    if jitter is None or (jitter.is_constant and jitter.value == 0):
        return None
    return jitter.sampler(None if jitter.is_constant else world.stream(f"jitter.{name}"))


class Sender:
    """A ``[[send]]`` workload."""

    is_sender = True

    def __init__(
        self,
        world: World,
        name: str,
        socket: Socket,
        process: Process,
        *,
        count: int | None,
        duration_s: float | None,
        until_s: float | None,
        interval: Sampler,
        size: Sampler,
        start_s: float,
        topics: tuple[str, ...],
        parts: int,
        dontwait: bool,
        on_again: str,
        to: tuple[str, ...],
        pacing: str = "after_send",
        loop_cpu_s: float = 0.0,
        wait_spin_s: float = 0.0,
        on_timeout: str = "retry",
    ) -> None:
        self.world = world
        self.env = world.env
        self.clock = world.clock  # the time as a C double: see kernel.Clock
        self.name = name
        self.socket = socket
        self.process = process
        self.count = count
        self.limit = count if count is not None else -1  # count as a C integer (-1: none)
        self.end_s = start_s + duration_s if duration_s is not None else None
        self.until_s = until_s
        self.interval = interval
        self.size = size
        self.start_s = start_s
        self.topics = topics or ("",)
        self.parts = parts
        self.dontwait = dontwait  # Scenario.never_waits: the flag or sndtimeo = 0
        self.on_again = on_again
        self.to = to
        self.timer = self.env.fast_timer(self._fire)
        # pacing "schedule": attempts at start_s + the drawn intervals, whatever the send
        # calls cost (an open arrival process; behind schedule it sends back to back);
        # "after_send": the next attempt an interval after the previous call returned.
        self.schedule = pacing == "schedule"
        self.due = start_s
        self.attempts = 0
        self.sent = 0
        self.again = 0
        self.unroutable = 0
        # when each send refused with EAGAIN returned (zmq.Again: DONTWAIT, or SNDTIMEO
        # expired): zsim explain tells its episodes of refused sends from these
        self.refused_at = array("d")
        self.done = False
        self.blocked_s = 0.0  # this workload's time blocked in send (its socket's is shared)
        self.awaiting_reply = False
        self.request_sent_at = 0.0
        self.rtt = array("d")
        # a REQ's wait for its reply: RCVTIMEO expiring ends the recv with EAGAIN, then
        # "retry" waits again (recv once more), "stop" ends the workload (the REQ cannot
        # send before that reply came)
        self.on_timeout = on_timeout
        self.reply_timeouts = 0
        params = params_of(process, world.params)
        # an attempt costs the send call plus the program's own work around it
        self.send_cost = params.send_call_s + loop_cpu_s
        # a send that queues nothing (a PUB dropping to every subscriber) is cheaper
        drop_call = params.send_drop_call_s if params.send_drop_call_s is not None else params.send_call_s
        self.drop_cost = drop_call + loop_cpu_s
        self.recv_cost = params.recv_call_s  # a REQ's reply: part of the same iteration
        self.wait_spin_s = wait_spin_s
        self.jitter = _jitter_sampler(world, name, wait_spin_s, interval.mean, params)
        self.ledger = world.ledger
        self.is_request = socket.traits.request
        self._topic_index = 0
        self._to_index = 0
        self._shapes: dict[tuple[int, str], tuple[int, int]] = {}
        self.origin = socket.index
        self._fixed_tail: tuple[Any, ...] | None = None
        if len(self.topics) == 1 and not to and size.constant is not None:
            total, wire = message_wire_bytes(max(0, int(size.constant)), self.topics[0], parts)
            if self.is_request:
                wire += 2
            self._fixed_tail = (total, wire, self.topics[0], (), self.origin)
        self.finished_at: float | None = None
        self.thread = AppThread(world)  # its calls, their counters and its CPU
        self.after_call = self._after_call  # what follows a scheduled send's burst: one bound method, made once
        self.on_send_done = self._send_done  # what ends a blocked send: made once
        self.on_reply_done = self._reply_done  # what ends a blocked wait for the reply: made once

    def start(self) -> None:
        self.timer.arm_at(self.start_s)

    def stop(self) -> None:
        if not self.done:
            self.done = True
            self.finished_at = self.clock.now
        self.timer.cancel()
        self.thread.cancel()
        self.thread.abandon(self)

    def resume(self) -> None:
        """The process restarted: carry on with the attempts that are left."""
        if self.count is not None and self.attempts >= self.count:
            return
        self.due = self.clock.now  # a restarted schedule starts now, it does not catch up the crash
        self.done = False
        self.awaiting_reply = False
        self.finished_at = None
        self.timer.arm(0.0)

    def _finish(self) -> None:
        self.stop()
        process = self.process
        if process.exit_after_sends and all(
            w.done for w in process.workloads if isinstance(w, Sender)
        ):
            process.exit()

    def _next_message(self, now: float) -> Message:
        topics = self.topics
        if len(topics) == 1:
            topic = topics[0]
        else:
            topic = topics[self._topic_index]
            self._topic_index = (self._topic_index + 1) % len(topics)
        size = self.size.next()
        key = (size, topic)
        shape = self._shapes.get(key)
        if shape is None:
            total, wire = message_wire_bytes(max(0, size), topic, self.parts)
            if self.is_request:
                wire += 2  # the REQ's empty delimiter frame
            if len(self._shapes) > 4096:
                self._shapes.clear()
            shape = self._shapes[key] = (total, wire)
        envelope: tuple[Any, ...] = ()
        if self.to:
            envelope = (self.to[self._to_index],)
            self._to_index = (self._to_index + 1) % len(self.to)
        return self.thread.message(now, shape[0], shape[1], topic, envelope, self.origin)

    def _fire(self, event: object = None) -> None:
        if self.done or (event is not None and event is not self.timer._event):
            return
        now = self.clock.now
        sock = self.socket
        if sock.state != OPEN:
            self._finish()
            return
        if (self.limit >= 0 and self.attempts >= self.limit) or (self.end_s is not None and now >= self.end_s):
            self._finish()
            return
        self.attempts += 1
        thread = self.thread
        tail = self._fixed_tail
        queued_before = sock.copies - sock.dropped
        if tail is not None:
            # one topic, one size, no envelope: only the id and the time change
            status = thread.send_new(sock, now, tail, self.dontwait, self.on_send_done)
        else:
            status = thread.send(sock, self._next_message(now), self.dontwait, self.on_send_done)
        if status == SENT:
            # _sent, inlined: this is the hot path
            cost = self.send_cost if sock.copies - sock.dropped != queued_before else self.drop_cost
            cost += thread.wake_s
            self.sent += 1
            if self.is_request:
                self.awaiting_reply = True
                self.request_sent_at = now
                self._await_reply()
                return
            if self.schedule:
                self._next_scheduled(cost)
                return
            wait = self.interval.next_float()
            if wait > 0 and self.jitter is not None:
                wait += self.jitter.next_float()
            thread.burst(cost, self.timer, wait)
        elif status != BLOCKED:
            self._failed(status)

    def _send_done(self, status: int) -> None:
        """A blocked send ended (``AppThread.send``): sent, failed, or its socket closed."""
        if status == CLOSED:
            self._finish()
            return
        self.blocked_s += self.clock.now - self.thread.since
        if status == SENT:
            self._sent()
        else:
            self._failed(status)

    def _sent(self) -> None:
        self.sent += 1
        if self.is_request:
            self.awaiting_reply = True
            self.request_sent_at = self.clock.now
            self._await_reply()
            return
        self._next(self.send_cost)

    def _next(self, cost: float) -> None:
        """Arm the next attempt after a call that took ``cost`` seconds from now."""
        if self.schedule:
            self._next_scheduled(cost)
        else:
            self.thread.burst(cost, self.timer, self._wait())

    def _next_scheduled(self, cost: float) -> None:
        self.due += self.interval.next_float()
        self.thread.burst_until(cost, self.timer, self.due, self.jitter, self.after_call)

    def _after_call(self) -> None:
        """With cores: the send call's burst is over; sleep until the next attempt is due."""
        due = self.due
        if due > self.clock.now:
            if self.jitter is not None:
                due += self.jitter.next_float()
            self.thread.sleep_until(self.timer, due)
        else:
            self.timer.arm(0.0)

    def _wait(self) -> float:
        wait = self.interval.next_float()
        if wait > 0 and self.jitter is not None:
            wait += self.jitter.next_float()
        return wait

    def _failed(self, status: int) -> None:
        """A send ended without sending (the socket's counters are ``AppThread``'s)."""
        if status == AGAIN:
            self.again += 1
            self.refused_at.append(self.clock.now)
        else:
            self.unroutable += 1
        if self.on_again == "stop":
            self._finish()
            return
        self._next(self.send_cost)

    # REQ: send, then recv the reply
    def _await_reply(self) -> None:
        thread = self.thread
        msg = thread.recv(self.socket, False, self.on_reply_done)
        if msg is not None:
            self._reply(msg)
        elif thread.status != BLOCKED:
            self._reply_done(thread.status)

    def _reply_done(self, status: int) -> None:
        """The recv of the reply ended (``AppThread.recv``): the reply, RCVTIMEO, or closed."""
        if self.done:
            return
        if status == RECEIVED:
            msg = self.thread.got
            self.thread.got = None
            self._reply(msg)  # type: ignore[arg-type]  # RECEIVED: a message
            return
        if status == AGAIN:
            # zmq.Again after RCVTIMEO (counted on the socket by the call)
            self.reply_timeouts += 1
            if self.on_timeout == "retry" and not (self.world.until_s is None and self.world.quiescent()):
                self.thread.burst(self.recv_cost, self.timer, 0.0)
                self.timer.set_fn(self._retry_reply)
                return
        self._finish()

    def _retry_reply(self, event: object = None) -> None:
        """``on_timeout = "retry"``: after the failed call, wait for the reply again."""
        if event is not None and event is not self.timer._event:
            return
        self.timer.set_fn(self._fire)
        if not self.done:
            self._await_reply()

    def _reply(self, msg: Message) -> None:
        now = self.clock.now
        self.thread.received(self.socket, msg, now)
        self.rtt.append(now - self.request_sent_at)
        self.awaiting_reply = False
        self._next(self.recv_cost + self.send_cost)


class Receiver:
    """A ``[[recv]]`` workload: recv, then spend the service time; reply if asked."""

    is_sender = False

    def __init__(
        self,
        world: World,
        name: str,
        socket: Socket,
        process: Process,
        *,
        service: Sampler,
        start_s: float,
        count: int | None,
        duration_s: float | None,
        reply: bool,
        reply_size: Sampler | None,
        pause_every: Sampler | None,
        pause: Sampler | None,
        on_timeout: str,
        forward_to: Socket | None = None,
        busy: bool = False,
        loop_cpu_s: float = 0.0,
        wait_spin_s: float = 0.0,
    ) -> None:
        self.world = world
        self.env = world.env
        self.clock = world.clock  # the time as a C double: see kernel.Clock
        self.name = name
        self.socket = socket
        self.process = process
        self.service = service
        self.start_s = start_s
        self.count = count
        self.limit = count if count is not None else -1  # count as a C integer (-1: none)
        self.end_s = start_s + duration_s if duration_s is not None else None
        self.reply = reply
        self.reply_size = reply_size
        self.pause_every = pause_every
        self.pause = pause
        self.on_timeout = on_timeout
        self.timer = self.env.fast_timer(self._try)
        self.received = 0
        self.done = False
        self.waiting = False
        # a message costs the recv call plus the program's own work around it
        params = params_of(process, world.params)
        self.recv_cost = params.recv_call_s + loop_cpu_s
        self.send_cost = params.send_call_s
        self.wait_spin_s = wait_spin_s
        self.jitter = _jitter_sampler(world, name, wait_spin_s, service.mean, params)
        # a pause (a GC stall) is a sleep of its own length: late as a sleep of that length
        self.pause_jitter = _jitter_sampler(world, f"{name}.pause", wait_spin_s, pause.mean, params) if pause is not None else None
        self.ledger = world.ledger
        self.next_pause_at = float("inf")
        self.paused_s = 0.0
        # when it paused: (start, end) of the first MAX_PAUSE_RECORDS pauses, flat, and how many
        # there were (zsim explain and the run page say when a stall began)
        self.pauses = array("d")
        self.pause_count = 0
        self.pending_reply: Message | None = None
        self.forward_to = forward_to
        self.busy = busy  # the service time is CPU work (a busy loop), not a sleep
        self.thread = AppThread(world)  # its calls, their counters and its CPU
        # what ends a blocked recv or forward send: bound methods made once
        self.on_recv_done = self._recv_done
        self.on_forward_done = self._forward_done

    def start(self) -> None:
        if self.pause_every is not None:
            self.next_pause_at = self.start_s + self.pause_every.next()
        self.timer.arm_at(self.start_s)

    def stop(self) -> None:
        self.done = True
        self.timer.cancel()
        self.thread.cancel()
        self.waiting = False
        self.thread.abandon(self)

    def resume(self) -> None:
        if self.count is not None and self.received >= self.count:
            return
        self.done = False
        self.waiting = False
        self.pending_reply = None
        self.timer.set_fn(self._try)
        self.timer.arm(0.0)

    def _try(self, event: object = None) -> None:
        if self.done or (event is not None and event is not self.timer._event):
            return
        sock = self.socket
        now = self.clock.now
        if sock.state != OPEN or (self.limit >= 0 and self.received >= self.limit) or (self.end_s is not None and now >= self.end_s):
            self.stop()
            return
        if now >= self.next_pause_at:
            # a stall (GC pause, page fault storm): the thread does not call recv
            length = self.pause.next()  # type: ignore[union-attr]
            if length > 0 and self.pause_jitter is not None:
                length += self.pause_jitter.next()
            self.paused_s += length
            self.pause_count += 1
            if self.pause_count <= MAX_PAUSE_RECORDS:
                self.pauses.append(now)
                self.pauses.append(now + length)
            self.next_pause_at = now + length + self.pause_every.next()  # type: ignore[union-attr]
            self.timer.arm(length)
            return
        thread = self.thread
        msg = thread.recv(sock, False, self.on_recv_done)
        if msg is not None:
            self._got(msg)
        elif thread.status == BLOCKED:
            self.waiting = True
        else:
            self._recv_done(thread.status)

    def _recv_done(self, status: int) -> None:
        """The recv ended (``AppThread.recv``): a message, RCVTIMEO (counted by the call),
        or the socket closed."""
        self.waiting = False
        if self.done:
            return
        if status == RECEIVED:
            thread = self.thread
            msg = thread.got
            thread.got = None
            self._got(msg)  # type: ignore[arg-type]  # RECEIVED: a message
            return
        if status != AGAIN:
            self.stop()
            return
        if self.on_timeout == "stop":
            self.stop()
            return
        if self.world.until_s is None and self.world.quiescent():
            # A real loop would poll forever; with no horizon the simulation ends when
            # nothing can move any more, so the retries stop here.
            self.stop()
            return
        self.thread.burst(self.recv_cost, self.timer, 0.0)

    def _got(self, msg: Message) -> None:
        thread = self.thread
        now = self.clock.now
        self.received += 1
        thread.received(self.socket, msg, now)
        service = self.service.next_float()
        if service > 0 and self.jitter is not None and not self.busy:
            service += self.jitter.next_float()  # a sleep wakes late; a busy loop ends on time
        busy = self.recv_cost + service
        if self.forward_to is not None:
            # a pipeline stage: the result is a new message sent on another socket
            size = self.reply_size.next() if self.reply_size is not None else msg[2]
            total, wire = message_wire_bytes(size, msg[4], 1)
            self.pending_reply = thread.message(now + busy, total, wire, msg[4], (), self.forward_to.index, msg[MSG_ID])
            self.timer.set_fn(self._send_forward)
        elif self.reply:
            size = self.reply_size.next() if self.reply_size is not None else msg[2]
            total, wire = message_wire_bytes(size, "", 1)
            envelope = msg[MSG_ENVELOPE]
            wire += envelope_wire_bytes(envelope)
            self.pending_reply = thread.message(now + busy, total, wire, "", envelope, self.socket.index, msg[MSG_ID])
            self.timer.set_fn(self._send_reply)
        if self.busy:
            thread.burst(busy, self.timer, 0.0)
        else:
            thread.burst(self.recv_cost, self.timer, service)  # on a core of its own: busy, as one time

    def _send_forward(self, event: object = None) -> None:
        """Send the stage's result with a blocking ``send()`` (SNDTIMEO bounds it; a result
        that cannot be sent, ``zmq.Again``, is skipped, counted on the socket)."""
        if event is not None and event is not self.timer._event:
            return
        self.timer.set_fn(self._try)
        msg = self.pending_reply
        self.pending_reply = None
        target = self.forward_to
        if msg is None or self.done or target is None:
            return
        status = self.thread.send(target, (msg[0], self.clock.now) + msg[2:], False, self.on_forward_done)
        if status != BLOCKED:
            self._forward_done(status)

    def _forward_done(self, status: int) -> None:
        """The stage's send ended: on to the next recv after the call, unless its socket closed."""
        if self.done:
            return
        if status == CLOSED:
            self.stop()
            return
        thread = self.thread
        thread.burst(self.send_cost + thread.wake_s, self.timer, 0.0)

    def _send_reply(self, event: object = None) -> None:
        if event is not None and event is not self.timer._event:
            return
        self.timer.set_fn(self._try)
        msg = self.pending_reply
        self.pending_reply = None
        sock = self.socket
        if msg is not None and not self.done:
            # a reply never blocks (REP and ROUTER drop; a DEALER's EAGAIN is counted)
            self.thread.send(sock, (msg[0], self.clock.now) + msg[2:], True, None)
        self.thread.burst(self.send_cost, self.timer, 0.0)


#: ``zmq::proxy_burst_size`` (src/config.hpp): the most messages one ``forward`` moves
PROXY_BURST_SIZE = 1000


class Proxy:
    """``zmq.proxy(frontend, backend)``, as libzmq 4.3.5's ``proxy`` loop (src/proxy.cpp).

    It polls both sockets (``zmq_poll`` through ``AppThread.poll``); a side with POLLIN
    whose other side has POLLOUT is forwarded, the requests (frontend -> backend) first,
    then the replies, each as a burst (``forward``): up to ``PROXY_BURST_SIZE`` messages,
    each a recv with DONTWAIT and a *blocking* send, until the source has none. So a full
    DEALER/PUSH backend pushes back on the frontend (no POLLOUT: the frontend is not read,
    but a burst under way blocks in its send), while an XPUB backend (always POLLOUT)
    drops. A send honours the target's SNDTIMEO: one that fails (EAGAIN when it expires,
    EHOSTUNREACH from a ROUTER_MANDATORY) makes ``zmq_proxy`` return -1, and so does a
    burst's first recv finding nothing; the proxy ends there, the message it held is
    dropped (rule ``send_failed`` or ``unroutable``), and ``failed`` says why.
    Subscriptions received by an XPUB are passed to the XSUB, which sends them upstream.
    """

    is_sender = False

    def __init__(self, world: World, name: str, frontend: Socket, backend: Socket, process: Process) -> None:
        self.world = world
        self.env = world.env
        self.clock = world.clock  # the time as a C double: see kernel.Clock
        self.name = name
        self.frontend = frontend
        self.backend = backend
        self.process = process
        self.socket = None  # a proxy is stopped by its process, not by one socket
        self.timer = self.env.fast_timer(self._tick)
        self.done = False
        self.waiting = False
        self.forwarded = 0
        #: why zmq_proxy returned (None: it did not): "EAGAIN", "EHOSTUNREACH"
        self.failed: str | None = None
        self.failed_at: float | None = None
        params = params_of(process, world.params)
        self.cost = params.recv_call_s + params.send_call_s
        self.ledger = world.ledger
        self.thread = AppThread(world)  # its calls, their counters and its CPU
        self.sockets = (frontend, backend)
        # the burst under way (source None: none), how many it moved, and whether the
        # replies are forwarded after it (backend POLLIN with frontend POLLOUT at the poll)
        self.source: Socket | None = None
        self.target: Socket | None = None
        self.moved = 0
        self.replies_next = False
        # bound methods made once: the call layer finds its callbacks by identity
        self.on_ready = self._ready
        self.on_poll_done = self._poll_done
        self.on_forward_done = self._forward_done

    def start(self) -> None:
        self.timer.arm(0.0)

    def stop(self) -> None:
        self.done = True
        self.timer.cancel()
        self.thread.cancel()
        self.waiting = False
        self.source = self.target = None
        self.thread.abandon(self)

    def resume(self) -> None:
        if self.failed is not None:
            return  # zmq_proxy returned: the thread that ran it is over
        self.done = False
        self.source = self.target = None
        self.timer.arm(0.0)

    def _ready(self) -> bool:
        """What the proxy's poll waits for: a side with a message whose other side takes one."""
        front, back = self.frontend, self.backend
        return (front.has_in() and back.has_out()) or (back.has_in() and front.has_out())

    def _tick(self, event: object = None) -> None:
        if self.done or (event is not None and event is not self.timer._event):
            return
        if self.source is not None:
            self._next()
        else:
            self._step()

    def _step(self) -> None:
        """One turn of the proxy loop: poll everything now, forward what can move."""
        front, back = self.frontend, self.backend
        if not front.is_open or not back.is_open:
            self.stop()
            return
        front_in, front_out = front.has_in(), front.has_out()
        back_in, back_out = back.has_in(), back.has_out()
        if front_in and back_out:
            self.replies_next = back_in and front_out
            self._burst(front, back)
        elif back_in and front_out:
            self.replies_next = False
            self._burst(back, front)
        else:
            # nothing can move: zmq_poll until something can
            status = self.thread.poll(self.sockets, self.on_ready, -1.0, self.on_poll_done, False)
            if status == BLOCKED:
                self.waiting = True
            else:
                self._poll_done(status)

    def _poll_done(self, status: int) -> None:
        self.waiting = False
        if self.done:
            return
        if status == READY:
            self._step()
        else:
            self.stop()  # a socket closed under the poll

    def _burst(self, source: Socket, target: Socket) -> None:
        self.source, self.target, self.moved = source, target, 0
        self._next()

    def _next(self) -> None:
        """The burst's next message: recv with DONTWAIT, then a blocking send."""
        source, target = self.source, self.target
        if source is None or target is None:
            return
        if not source.is_open or not target.is_open:
            self.stop()
            return
        thread = self.thread
        msg = thread.try_recv(source) if self.moved < PROXY_BURST_SIZE else None
        if msg is None:
            if self.moved == 0:
                # forward(): "if (errno == EAGAIN && i > 0) return 0; return -1": the
                # poll said POLLIN and the recv found nothing: zmq_proxy returns -1
                self._fail("EAGAIN")
                return
            self._burst_over()
            return
        thread.took(source, msg, self.clock.now)
        self.forwarded += 1
        self.moved += 1
        if msg[MSG_ID] < 0:
            # a subscription from an XPUB, or an XSUB forwarding it upstream
            if isinstance(target, XSub):
                target.send_subscription(msg[MSG_TOPIC], msg[MSG_ID] == SUBSCRIBE_ID)
            self._burn()
            return
        status = thread.forward(target, msg, self.on_forward_done)
        if status == BLOCKED:
            self.waiting = True
        else:
            self._forward_done(status)

    def _burst_over(self) -> None:
        """The source has no more: the replies' burst if the poll found one, else poll."""
        if self.replies_next and self.source is self.frontend:
            self.replies_next = False
            if self.backend.is_open and self.frontend.is_open:
                self._burst(self.backend, self.frontend)
                return
        self.source = self.target = None
        self._step()

    def _forward_done(self, status: int) -> None:
        """The blocking send of a forwarded message ended: on, or zmq_proxy returns."""
        self.waiting = False
        if self.done:
            return
        if status == SENT:
            self._burn()
        elif status == CLOSED:
            self.stop()
        else:
            self._fail("EAGAIN" if status == AGAIN else "EHOSTUNREACH")

    def _fail(self, why: str) -> None:
        self.failed = why
        self.failed_at = self.clock.now
        self.stop()

    def _burn(self) -> None:
        """The recv and send calls of one forwarded message, then the burst goes on."""
        self.thread.burst(self.cost, self.timer, 0.0)
