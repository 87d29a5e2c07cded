"""An application thread's calls into its sockets: ``socket_base_t::send``/``recv``, once.

libzmq's ``socket_base_t::send`` (``src/socket_base.cpp``) looks at the socket's commands,
tries the type's ``xsend``, and on EAGAIN either returns at once (``ZMQ_DONTWAIT``, or
``SNDTIMEO`` = 0) or blocks: it waits for the next command to the socket and tries again,
until ``SNDTIMEO`` expires (EAGAIN). ``socket_base_t::recv`` does the same with ``xrecv``
and ``RCVTIMEO``. ``AppThread`` is that call for one application thread of the model: a
``[[send]]``, ``[[recv]]`` or ``[[proxy]]`` workload (``zsim.model.workload``) or a socket
scripted in SimPy (``zsim.app.AppSocket``). It owns

* the message factory: every application message gets its id here (``message``);
* the send and receive attempts and their counters on the socket (``sent``,
  ``send_again``, ``send_unroutable``, ``received``, ``recv_again``, ``blocked_s``,
  ``blocked_count``) and the run's count of sent messages (``Context.n_sent``);
* the blocked send: the wait for a command, the retry and ``SNDTIMEO`` (``send``);
* the cost of waking the threads a call's writes woke (``wake_s``: the call's own, read
  after it; pipes charge it to the running call, see ``zsim.model.pipe.Pipe.write``);
* the CPU bursts of the thread (``burst``): on the machine's cores when ``[machine]
  cores`` is set (``cpu``, a ``zsim.model.cpu.Thread``), else on a core of its own, where
  a burst of CPU is simply its length of time.

The workloads decide only what to send or receive and when.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..constants import INBOUND_POLL_RATE
from .fates import AGAIN, RULE_UNROUTABLE, SENT, UNROUTABLE
from .kernel import FastTimer
from .pipe import MSG_ID, Message
from .sink import LedgerSink
from .socket import OPEN, Socket

if TYPE_CHECKING:  # pragma: no cover
    from ..sampler import Sampler
    from .context import Context
    from .cpu import Thread

#: ``send`` blocked: the call ends later, with ``done(status)`` (Python ints, not C: other modules import them)
BLOCKED = 3
#: ``done(CLOSED)``: the socket closed while the call was blocked on it (ETERM)
CLOSED = 4


class Workload(Protocol):
    """What a process knows of its application threads (``zsim.model.world.Process``)."""

    #: the socket whose closing stops it (None: stopped by its process only, a proxy)
    socket: Socket | None
    #: a sender: the run is not over while one has attempts left (``World.quiescent``)
    is_sender: bool
    done: bool

    def stop(self) -> None: ...

    def resume(self) -> None: ...


class AppThread:
    """One application thread's calls (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.clock = ctx.clock  # the time as a C double: see kernel.Clock
        self.ledger: LedgerSink = ctx.ledger  # typed in appthread.pxd: its reports are C calls
        #: its thread on the machine's cores (None: a core of its own, ``[machine] cores = 0``)
        self.cpu: Thread | None = None
        #: what the last send attempt owes for waking the threads it woke (seconds)
        self.wake_s = 0.0
        # the blocked send: its message, socket, since when, what ends it
        self.pending: Message | None = None
        self.target: Socket | None = None
        self.since = 0.0
        self.done_fn: Callable[[int], object] | None = None
        self.count_stop = False
        self.on_retry = self._retry  # the socket's waiter list finds it by identity: made once
        self.timeout_timer = ctx.env.timer(self._timeout)

    # -- messages ------------------------------------------------------------------------

    def message(self, t0: float, size: int, wire: int, topic: str, envelope: tuple[Any, ...], origin: int,
                cause: int = -1) -> Message:
        """A new application message: the next id (``zsim.model.pipe`` describes the tuple);
        ``cause``: the id of the message it answers or was made from (-1: none)."""
        ctx = self.ctx
        mid = ctx.next_message_id
        ctx.next_message_id = mid + 1
        return (mid, t0, size, wire, topic, envelope, origin, cause)

    def send_new(self, sock: Socket, t0: float, shape: tuple[Any, ...], dontwait: bool, done: Callable[[int], object]) -> int:
        """``send`` of a new message ``message(t0, *shape)``: a ``[[send]]`` of one topic and
        one size makes and sends its every message in this one call."""
        ctx = self.ctx
        mid = ctx.next_message_id
        ctx.next_message_id = mid + 1
        return self.send(sock, (mid, t0, shape[0], shape[1], shape[2], shape[3], shape[4], -1), dontwait, done)

    # -- send ----------------------------------------------------------------------------

    def attempt(self, sock: Socket, msg: Message) -> int:
        """One non-blocking ``zmq_send`` of a new message: SENT (counted), AGAIN or
        UNROUTABLE (not counted: the caller may block); ``wake_s`` its wake-up cost."""
        ctx = self.ctx
        ctx.wake_debt = 0.0
        status = sock.send(msg)
        self.wake_s = ctx.wake_debt
        if status == SENT:
            sock.sent += 1
            self.ctx.n_sent += 1
        return status

    def send(self, sock: Socket, msg: Message, dontwait: bool, done: Callable[[int], object]) -> int:
        """``socket_base_t::send``: SENT, a counted failure (AGAIN, UNROUTABLE), or BLOCKED:
        then ``done(status)`` ends the call later (SENT, AGAIN when SNDTIMEO expired,
        UNROUTABLE, CLOSED), SENT and failures already counted."""
        status = self.attempt(sock, msg)
        if status == SENT:
            return SENT
        if status == AGAIN and not dontwait and sock.options.sndtimeo != 0:
            self.pending = msg
            self.target = sock
            self.done_fn = done
            self.since = self.clock.now
            sock.blocked_count += 1
            sock.wait(self.on_retry)
            timeout = sock.options.sndtimeo
            if timeout > 0:
                self.timeout_timer.arm(timeout / 1000.0)
            return BLOCKED
        self.failed(sock, status)
        return status

    def _retry(self) -> None:
        """A command reached the socket: try the blocked send again (its ``xsend``)."""
        msg = self.pending
        sock = self.target
        if msg is None or sock is None:
            return
        if sock.state != OPEN:
            self._end(CLOSED)
            return
        ctx = self.ctx
        ctx.wake_debt = 0.0
        status = sock.xsend(msg)
        self.wake_s = ctx.wake_debt
        if status == AGAIN:
            sock.wait(self.on_retry)
            return
        sock.blocked_s += self.clock.now - self.since
        if status == SENT:
            sock.sent += 1
            self.ctx.n_sent += 1
        else:
            self.failed(sock, status)
        self._end(status)

    def _timeout(self) -> None:
        """SNDTIMEO expired: the blocked send fails with EAGAIN."""
        sock = self.target
        if self.pending is None or sock is None:
            return
        sock.blocked_s += self.clock.now - self.since
        self.failed(sock, AGAIN)
        self._end(AGAIN)

    def _end(self, status: int) -> None:
        done = self.done_fn
        self.pending = None  # over: nothing for cancel() to count
        self.cancel()
        if done is not None:
            done(status)

    def cancel(self) -> None:
        """The thread stops (its process exits, its socket closes): no blocked send any more.
        With ``count_stop``, the time it was blocked counts in the socket's ``blocked_s``."""
        sock = self.target
        if sock is not None:
            sock.stop_waiting(self.on_retry)
            if self.count_stop and self.pending is not None:
                sock.blocked_s += self.clock.now - self.since
        self.timeout_timer.cancel()
        self.pending = None
        self.target = None
        self.done_fn = None

    def forward(self, sock: Socket, msg: Message) -> int:
        """``zmq.proxy``'s send of a message it received: SENT (counted on the socket, not a
        new message), AGAIN, or UNROUTABLE: a ROUTER_MANDATORY without that peer drops it."""
        status = sock.send(msg)
        if status == SENT:
            sock.sent += 1
        elif status == UNROUTABLE:
            sock.send_unroutable += 1
            sock.copies += 1
            sock.dropped += 1
            self.ledger.dropped(msg, sock.index, -1, RULE_UNROUTABLE, self.clock.now)
            return SENT
        return status

    def failed(self, sock: Socket, status: int) -> None:
        """Count a send that ended without sending (EHOSTUNREACH or EAGAIN)."""
        if status == UNROUTABLE:
            sock.send_unroutable += 1
        else:
            sock.send_again += 1

    def blocked(self, sock: Socket, since: float) -> None:
        """Count a send that blocked from ``since`` until now (if it did block)."""
        now = self.clock.now
        if now > since:
            sock.blocked_s += now - since
            sock.blocked_count += 1

    # -- recv ----------------------------------------------------------------------------

    def recv(self, sock: Socket) -> Message | None:
        """One non-blocking ``zmq_recv`` attempt (``socket_base_t::recv``: commands every
        ``INBOUND_POLL_RATE`` calls, and again before giving up)."""
        sock.ticks += 1
        if sock.ticks >= INBOUND_POLL_RATE:
            sock.process_commands()
            sock.ticks = 0
        msg = sock.xrecv()
        if msg is None:
            if sock.mailbox:
                sock.process_commands()
            sock.ticks = 0
            msg = sock.xrecv()
        return msg

    def woken_recv(self, sock: Socket) -> Message | None:
        """A blocked recv's retry after a command (``xrecv``; a message resets the ticks)."""
        msg = sock.xrecv()
        if msg is not None:
            sock.ticks = 0
        return msg

    def received(self, sock: Socket, msg: Message, now: float) -> None:
        """Count a message the application received; one with an id is delivered."""
        sock.received += 1
        if msg[MSG_ID] >= 0:
            self.ledger.delivered(msg, sock.index, sock.last_pipe_index, now)

    def took(self, sock: Socket, msg: Message, now: float) -> None:
        """Count a message ``zmq.proxy`` received to pass on; one with an id is forwarded."""
        sock.received += 1
        if msg[MSG_ID] >= 0:
            self.ledger.forwarded(msg, sock.index, sock.last_pipe_index, now)

    def recv_failed(self, sock: Socket) -> None:
        """Count a recv that ended with EAGAIN (DONTWAIT, or RCVTIMEO expired)."""
        sock.recv_again += 1

    # -- the thread's CPU ----------------------------------------------------------------

    def burst(self, cpu: float, timer: FastTimer, wait: float) -> None:
        """Burn ``cpu`` seconds of CPU, then arm ``timer`` ``wait`` seconds later."""
        thread = self.cpu
        if thread is None:
            timer.arm(cpu + wait)  # a core of its own: the burst takes its length
        else:
            thread.run(cpu, timer, wait)

    def burst_until(self, cpu: float, timer: FastTimer, due: float, jitter: Sampler | None, then: Callable[[], object]) -> None:
        """Burn ``cpu`` seconds, then sleep until ``due`` (waking ``jitter`` late), or go on
        at once if that is past. With cores, ``then()`` follows the burst and calls
        ``sleep_until``; on a core of its own the end of the burst is known now."""
        thread = self.cpu
        if thread is not None:
            thread.run_then(cpu, then)
            return
        ready = self.clock.now + cpu
        if due > ready:
            if jitter is not None:
                due += jitter.next_float()  # the thread sleeps until then, and wakes late
            timer.arm_at(due)
        else:
            timer.arm_at(ready)  # behind schedule: the next send goes back to back

    def sleep_until(self, timer: FastTimer, due: float) -> None:
        """After ``burst_until``'s burst, with cores: a precise wait until ``due``."""
        thread = self.cpu
        assert thread is not None
        thread.wait_until(timer, due)

    def abandon(self, owner: object) -> None:
        """``owner`` stopped: nothing of its work follows on the cores (``Thread.abandon``)."""
        thread = self.cpu
        if thread is not None:
            thread.abandon(owner)
