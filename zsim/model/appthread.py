"""An application thread's calls into its sockets: ``zmq_send``, ``zmq_recv`` and
``zmq_poll``, written once. The one place in the model where a call waits.

libzmq's ``socket_base_t::send`` (``src/socket_base.cpp``) looks at the socket's commands,
tries the type's ``xsend``, and on EAGAIN either returns at once (``ZMQ_DONTWAIT``, or
``SNDTIMEO`` = 0) or blocks: it waits for the next command to the socket
(``process_commands (timeout, false)``), tries ``xsend`` again, and gives up with EAGAIN
when ``SNDTIMEO`` expires. ``socket_base_t::recv`` does the same with ``xrecv`` and
``RCVTIMEO``; ``zmq_poll`` (``socket_poller_t::wait``) waits for a command to any of its
sockets and looks at their events again, until its timeout. A type's state machine
refuses a call out of turn before any of that (``req_t::xsend``/``xrecv`` and
``rep_t::xsend``/``xrecv``: EFSM). libzmq writes each of these once; so does this module:
``AppThread`` is that call for one application thread of the model, whoever makes it: a
``[[send]]``, ``[[recv]]`` or ``[[proxy]]`` workload (``zsim.model.workload``) or a socket
scripted in SimPy (``zsim.app.AppSocket``). It owns

* the message factory: every application message gets its id here (``message``);
* the calls and their counters on the socket (``sent``, ``send_again``,
  ``send_unroutable``, ``received``, ``recv_again``, ``blocked_s``, ``blocked_count``) and
  the run's count of sent messages (``Context.n_sent``);
* the blocked call: its wait for a command, the retry, the timeout and the socket closing
  under it (``send``, ``forward``, ``recv``, ``poll``; ``done(status)`` ends it later);
* the cost of waking the threads a call's writes woke (``wake_s``: the call's own, read
  after it; pipes charge it to the running call, see ``zsim.model.pipe.Pipe.write``);
* the CPU bursts of the thread (``burst``): on its ``cpu``, a ``zsim.model.cpu.Core``: the
  machine's cores when ``[machine] cores`` is set (a ``Thread``), else a core of its own
  (an ``OwnCore``), where a burst of CPU is simply its length of time.

A thread is in at most one blocking call at a time, as a real one is. The workloads decide
only what to send or receive and when, and what to do with a call's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..constants import INBOUND_POLL_RATE
from .cpu import Core, OwnCore
from .fates import (
    AGAIN,
    BLOCKED,
    CLOSED,
    EFSM,
    READY,
    RECEIVED,
    RULE_SEND_FAILED,
    RULE_UNROUTABLE,
    SENT,
    TIMEOUT,
    UNROUTABLE,
)
from .kernel import FastTimer
from .pipe import MSG_ID, Message
from .sink import LedgerSink
from .socket import OPEN, Socket

if TYPE_CHECKING:  # pragma: no cover
    from ..sampler import Sampler
    from .context import Context

# what a blocked thread waits in
IDLE = 0
SENDING = 1
FORWARDING = 2  # a send of a message received elsewhere (zmq_proxy)
RECEIVING = 3
POLLING = 4


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
        #: where its CPU work runs: a thread on the machine's cores (``zsim.build`` sets it
        #: with ``[machine] cores``) or a core of its own
        self.cpu: Core = OwnCore(ctx.clock)
        #: what the last send attempt owes for waking the threads it woke (seconds)
        self.wake_s = 0.0
        #: the outcome of the last ``recv`` that returned no message, or of a ``poll``
        self.status = 0
        #: the message the last completed blocked ``recv`` got (read it in ``done``)
        self.got: Message | None = None
        # the blocked call: what it waits in, its message (a send), socket(s), since when,
        # what ends it, and (a poll) what it waits for
        self.kind = IDLE
        self.pending: Message | None = None
        self.target: Socket | None = None
        self.since = 0.0
        self.done_fn: Callable[[int], object] | None = None
        self.poll_sockets: tuple[Socket, ...] = ()
        self.poll_ready: Callable[[], bool] | None = None
        #: a send the closing of its socket ends counts the time it was blocked (an app's)
        self.count_stop = False
        self.on_retry = self._retry  # the socket's waiter list finds it by identity: made once
        self.timeout_timer = ctx.env.timer(self._timeout)
        ctx.app_threads.append(self)

    def blocked_send_s(self) -> float:
        """How long a send (or forward) it is blocked in now has been blocked (0: none)."""
        if self.kind == SENDING or self.kind == FORWARDING:
            return self.clock.now - self.since
        return 0.0

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

    def send_control(self, sock: Socket, msg: Message) -> int:
        """``zmq_send`` of a control message: an XSUB's (un)subscription (``xsub_t::xsend``),
        which never blocks (``xsub_t::xhas_out``) and is no message of the run (not
        counted): SENT or CLOSED; ``wake_s`` its wake-up cost."""
        if sock.state != OPEN:
            return CLOSED
        ctx = self.ctx
        ctx.wake_debt = 0.0
        status = sock.send(msg)
        self.wake_s = ctx.wake_debt
        return status

    def send(self, sock: Socket, msg: Message, dontwait: bool, done: Callable[[int], object] | None) -> int:
        """``zmq_send`` of a new message (``socket_base_t::send``): SENT, a counted failure
        (AGAIN, UNROUTABLE), CLOSED, EFSM, or BLOCKED: then ``done(status)`` ends the call
        later (SENT, AGAIN when SNDTIMEO expired, UNROUTABLE, CLOSED), SENT and failures
        already counted. ``done`` may be None only with ``dontwait``."""
        if sock.state != OPEN:
            return CLOSED
        if sock.fsm and sock.send_refused():
            return EFSM
        status = self.attempt(sock, msg)
        if status == SENT:
            return SENT
        if status == AGAIN and not dontwait and sock.sndtimeo != 0:
            self.pending = msg
            self._block(sock, SENDING, done)
            sock.blocked_count += 1
            return BLOCKED
        self.failed(sock, status)
        return status

    def forward(self, sock: Socket, msg: Message, done: Callable[[int], object]) -> int:
        """``zmq_proxy``'s send of a message it received (``forward`` in src/proxy.cpp: a
        blocking ``send``): SENT (counted on the socket; not a new message), CLOSED, or
        BLOCKED, then ``done(status)``. A send that fails (EAGAIN when SNDTIMEO expired,
        EHOSTUNREACH from a ROUTER_MANDATORY without that peer) makes ``zmq_proxy``
        return -1 with the message closed: it is counted, recorded as dropped (rule
        ``send_failed``) and the status returned, for the proxy to end."""
        if sock.state != OPEN:
            return CLOSED
        status = sock.send(msg)
        if status == SENT:
            sock.sent += 1
            return SENT
        if status == AGAIN and sock.sndtimeo != 0:
            self.pending = msg
            self._block(sock, FORWARDING, done)
            sock.blocked_count += 1
            return BLOCKED
        self._forward_failed(sock, msg, status)
        return status

    def _forward_failed(self, sock: Socket, msg: Message, status: int) -> None:
        self.failed(sock, status)
        sock.copies += 1
        sock.dropped += 1
        self.ledger.dropped(msg, sock.index, -1, RULE_SEND_FAILED if status == AGAIN else RULE_UNROUTABLE, self.clock.now)

    def failed(self, sock: Socket, status: int) -> None:
        """Count a send that ended without sending (EHOSTUNREACH or EAGAIN)."""
        if status == UNROUTABLE:
            sock.send_unroutable += 1
        else:
            sock.send_again += 1

    # -- recv ----------------------------------------------------------------------------

    def try_recv(self, sock: Socket) -> Message | None:
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

    def recv(self, sock: Socket, dontwait: bool, done: Callable[[int], object] | None) -> Message | None:
        """``zmq_recv`` (``socket_base_t::recv``): the message, not yet counted (the caller
        says what it was for: ``received``, ``took``), or None with ``status`` saying why:
        AGAIN (DONTWAIT or RCVTIMEO 0; counted), CLOSED, EFSM, or BLOCKED: then
        ``done(status)`` ends the call later with RECEIVED (the message in ``got``), AGAIN
        when RCVTIMEO expired (counted) or CLOSED. ``done`` may be None only with
        ``dontwait``."""
        if sock.state != OPEN:
            self.status = CLOSED
            return None
        if sock.fsm and sock.recv_refused():
            self.status = EFSM
            return None
        msg = self.try_recv(sock)
        if msg is not None:
            return msg
        if dontwait or sock.rcvtimeo == 0:
            sock.recv_again += 1
            self.status = AGAIN
            return None
        self._block(sock, RECEIVING, done)
        self.status = BLOCKED
        return None

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

    # -- poll ----------------------------------------------------------------------------

    def poll(self, sockets: tuple[Socket, ...], ready: Callable[[], bool], timeout_s: float,
             done: Callable[[int], object], check: bool = True) -> int:
        """``zmq_poll`` over ``sockets``: READY if ``ready()`` (the events the caller polls
        for, read with ``Socket.has_in``/``has_out``, which process commands as
        ``zmq_poll`` does) holds now; TIMEOUT if not and ``timeout_s`` is 0; CLOSED if a
        socket is closed; else BLOCKED: ``ready()`` is asked again after each command to
        any of the sockets, and ``done(status)`` ends the call with READY, TIMEOUT (after
        ``timeout_s``; < 0 waits for ever) or CLOSED. ``check=False`` waits for the next
        command before asking ``ready()`` at all."""
        for sock in sockets:
            if sock.state != OPEN:
                return CLOSED
        if check and ready():
            return READY
        if timeout_s == 0:
            return TIMEOUT
        self.poll_sockets = sockets
        self.poll_ready = ready
        self.kind = POLLING
        self.done_fn = done
        self.since = self.clock.now
        self.target = sockets[0]
        for sock in sockets:
            sock.wait(self.on_retry)
        if timeout_s > 0:
            self.timeout_timer.arm(timeout_s)
        return BLOCKED

    # -- the blocked call ----------------------------------------------------------------

    def _block(self, sock: Socket, kind: int, done: Callable[[int], object] | None) -> None:
        """Wait on ``sock`` until a command arrives (``Socket.wait``), with the timeout of
        the call's kind (SNDTIMEO, RCVTIMEO; -1 for ever)."""
        assert done is not None, "a call that may block needs done"
        self.kind = kind
        self.target = sock
        self.done_fn = done
        self.since = self.clock.now
        sock.wait(self.on_retry)
        timeout = sock.rcvtimeo if kind == RECEIVING else sock.sndtimeo
        if timeout > 0:
            self.timeout_timer.arm(timeout / 1000.0)

    def blocked_call(self) -> bool:
        """The thread is in a blocking call now."""
        return self.kind != IDLE

    def _retry(self) -> None:
        """A command reached the socket (``Socket._wake`` processed it): try the blocked
        call again (the type's ``xsend``/``xrecv``, or the poll's events)."""
        kind = self.kind
        sock = self.target
        if kind == IDLE or sock is None:
            return
        if kind == POLLING:
            for each in self.poll_sockets:
                if each.state != OPEN:
                    self._end(CLOSED)
                    return
            ready = self.poll_ready
            if ready is not None and ready():
                self._end(READY)
            else:
                for each in self.poll_sockets:
                    each.wait(self.on_retry)
            return
        if sock.state != OPEN:
            self._end(CLOSED)
            return
        if kind == RECEIVING:
            msg = sock.xrecv()
            if msg is None:
                sock.wait(self.on_retry)
                return
            sock.ticks = 0
            self.got = msg
            self._end(RECEIVED)
            return
        msg = self.pending
        ctx = self.ctx
        ctx.wake_debt = 0.0
        status = sock.xsend(msg)  # type: ignore[arg-type]  # a send always has its message
        self.wake_s = ctx.wake_debt
        if status == AGAIN:
            sock.wait(self.on_retry)
            return
        sock.blocked_s += self.clock.now - self.since
        if status == SENT:
            sock.sent += 1
            if kind == SENDING:
                ctx.n_sent += 1
        elif kind == FORWARDING:
            self._forward_failed(sock, msg, status)  # type: ignore[arg-type]
        else:
            self.failed(sock, status)
        self._end(status)

    def _timeout(self) -> None:
        """The call's timeout expired: a send or recv fails with EAGAIN, a poll returns."""
        kind = self.kind
        sock = self.target
        if kind == IDLE or sock is None:
            return
        if kind == POLLING:
            self._end(TIMEOUT)
            return
        if kind == RECEIVING:
            sock.recv_again += 1
            self._end(AGAIN)
            return
        sock.blocked_s += self.clock.now - self.since
        if kind == FORWARDING:
            self._forward_failed(sock, self.pending, AGAIN)  # type: ignore[arg-type]
        else:
            self.failed(sock, AGAIN)
        self._end(AGAIN)

    def _end(self, status: int) -> None:
        done = self.done_fn
        self.pending = None  # over: nothing for cancel() to count
        self.cancel()
        if done is not None:
            done(status)

    def cancel(self) -> None:
        """The thread stops (its process exits, its socket closes): no blocked call any
        more. With ``count_stop``, the time a send was blocked counts in ``blocked_s``."""
        kind = self.kind
        if kind == POLLING:
            for each in self.poll_sockets:
                each.stop_waiting(self.on_retry)
            self.poll_sockets = ()
            self.poll_ready = None
        else:
            sock = self.target
            if sock is not None:
                sock.stop_waiting(self.on_retry)
                if self.count_stop and self.pending is not None:
                    sock.blocked_s += self.clock.now - self.since
        self.timeout_timer.cancel()
        self.kind = IDLE
        self.pending = None
        self.target = None
        self.done_fn = None

    # -- the thread's CPU ----------------------------------------------------------------

    def burst(self, cpu: float, timer: FastTimer, wait: float) -> None:
        """Burn ``cpu`` seconds of CPU, then arm ``timer`` ``wait`` seconds later."""
        self.cpu.burst(cpu, timer, wait)

    def burst_until(self, cpu: float, timer: FastTimer, due: float, jitter: Sampler | None, then: Callable[[], object]) -> None:
        """Burn ``cpu`` seconds, then sleep until ``due`` (waking ``jitter`` late), or go on
        at once if that is past. Sharing the machine's cores, ``then()`` follows the burst
        and calls ``sleep_until``; on a core of its own the end of the burst is known now."""
        self.cpu.burst_until(cpu, timer, due, jitter, then)

    def sleep_until(self, timer: FastTimer, due: float) -> None:
        """After ``burst_until``'s burst, with cores: a precise wait until ``due``."""
        self.cpu.sleep_until(timer, due)

    def abandon(self, owner: object) -> None:
        """``owner`` stopped: nothing of its work follows on the cores (``Thread.abandon``)."""
        self.cpu.abandon(owner)
