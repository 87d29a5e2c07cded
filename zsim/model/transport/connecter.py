"""A connection's connecter: the connect attempts of a tcp or ipc ``connect()`` and their
retries (``stream_connecter_base_t``, ``tcp_connecter_t``/``ipc_connecter_t``).

An attempt finds the listener or not (``start_connecting``); one that finds it starts the
handshake (TCP connect, ZMTP greeting and READY), which completes after its drawn latency
(``[tcp] connect_s``) on the two I/O threads that serve it. Both serve it one event at a
time in the order events come, so it does not complete before a handshake started earlier
on either of them: connects made one after another from one context attach in that order,
and the round robin of a REQ, DEALER or PUSH that binds follows it (test_spec_req.cpp:34).
Handshakes that share no I/O thread keep their own times. An attempt that fails, and a
connection that breaks, try again after ``reconnect_ivl`` plus a random part of it, or
doubling up to ``reconnect_ivl_max`` (``get_new_reconnect_ivl``); with nobody listening, the
next attempt is placed when a listener appears.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..context import IoThread, choose_io_thread
from ..peer import Peer

if TYPE_CHECKING:  # pragma: no cover
    from ..socket import Socket
    from .stream import StreamConnection

#: The reconnect attempts a connect replays one by one when the listener it waited for
#: appears (each draws its jitter). Past this many (about 25 minutes of the default
#: 100-200 ms intervals), the next attempt is placed by the retries' steady phase instead:
#: replaying 10^8 s of retries took half an hour of one Python loop no run limit could stop.
REPLAYED_ATTEMPTS = 10_000


class Connecter:
    """The attempts, the handshake's timing and the retries of one ``StreamConnection``."""

    def __init__(self, conn: StreamConnection) -> None:
        self.conn = conn
        ctx = self.ctx = conn.ctx
        self.clock = ctx.clock
        connector = conn.connector
        # one random stream per drawn quantity, named after the connection: a reconnect or
        # a longer handshake leaves the hop latencies (and every other connection) alone
        name = f"conn.{connector.name}.{conn.endpoint.text}"
        self.rng = ctx.stream(f"{name}.reconnect")  # the reconnect jitter
        handshake = conn.params.handshake
        self.handshake = handshake.sampler(None if handshake.is_constant else ctx.stream(f"{name}.handshake"))
        self.attempt_timer = ctx.env.timer(self.attempt)
        #: a connect whose SYNs all go unanswered (a route down: ``network.Path.connect_wait``)
        #: fails after ``tcp_syn_retries``, and the connect tries again after its interval
        self.syn_timer = ctx.env.timer(self.retry)
        self.handshake_timer = ctx.env.timer(self._handshake_done)
        #: the socket the handshake under way reaches
        self.binder: Socket | None = None
        #: the I/O thread the binder's context chose for the connection it is accepting
        #: (the bind-side session's, once the handshake completes); None: no handshake
        self.accept_io: IoThread | None = None
        self.last_attempt = self.clock.now
        self.waiting_for_listener = False
        self.pending_delay = 0.0
        self.backoff_ms = 0

    def attempt(self) -> None:
        """``tcp_connecter_t::start_connecting``: the listener is there or it is not."""
        conn = self.conn
        if conn.closed or not conn.connector.is_open:
            return
        self.last_attempt = self.clock.now
        binder = self.ctx.listeners.get(conn.endpoint.key)
        if binder is None or not binder.is_open:
            self.retry()
            return
        network = self.ctx.network
        wait = 0.0
        if network is not None:
            conn.path = network.path(conn.connector.process.host, binder.process.host)
            if conn.path is not None:
                found = conn.path.connect_wait(self.clock.now)
                if found is None:
                    # every SYN lost on a route that stays down: ETIMEDOUT after the last one's
                    # timeout, then libzmq's reconnect interval (tcp_connecter_t::out_event -> close)
                    from .network import SYN_WAITS_S

                    self.syn_timer.arm(sum(SYN_WAITS_S))
                    return
                wait = found
        # TCP connect + ZMTP greeting + READY: engine_ready on both sides.
        self.binder = binder
        if conn.b_peer is None or not conn.b_peer.alive:
            # For loss accounting the binder knows a subscriber is on its way.
            provisional = Peer(binder, conn.connector, conn)
            binder.add_pending_peer(provisional)
            conn.b_peer = provisional
        # stream_listener_base_t::create_engine: the accepted connection's session goes
        # to the least loaded I/O thread of the binder's context
        self.release_accept()
        accept_io = self.accept_io = choose_io_thread(binder.process.io_threads)
        delay = self.handshake.next()
        if conn.path is not None:
            # a SYN lost while the route is down is sent again (``network.SYN_WAITS_S``)
            delay += conn.path.handshake_s() + wait
        # Both I/O threads serve the handshake, each one event at a time in the order the
        # events come: it completes after its own latency, and not before a handshake
        # either thread started earlier (their completions keep the order they started in;
        # handshakes on other threads keep their own times).
        done_at = self.clock.now + delay
        connect_io = conn.c_session.io_thread
        if connect_io.handshakes_until > done_at:
            done_at = connect_io.handshakes_until
        if accept_io.handshakes_until > done_at:
            done_at = accept_io.handshakes_until
        connect_io.handshakes_until = accept_io.handshakes_until = done_at
        self.handshake_timer.arm_at(done_at)

    def _handshake_done(self) -> None:
        conn = self.conn
        binder = self.binder
        if conn.closed or not conn.connector.is_open:
            self.release_accept()
            return
        listening = self.ctx.listeners.get(conn.endpoint.key)
        if binder is None or not binder.is_open or listening is not binder:
            self.release_accept()
            self.retry()
            return
        accept_io = self.accept_io
        assert accept_io is not None  # chosen by the attempt that armed this handshake
        self.accept_io = None
        conn.engine_ready(listening, accept_io)

    def release_accept(self) -> None:
        """The connection being accepted will not be: its I/O thread serves one less."""
        if self.accept_io is not None:
            self.accept_io.load -= 1
            self.accept_io = None

    def handshaking_with(self, sock: Socket) -> bool:
        """A handshake with ``sock`` is under way."""
        return self.binder is sock and self.handshake_timer.armed

    def listener_gone(self) -> None:
        """The listener went during the handshake: the attempt fails, and the connect
        tries again after its reconnect interval."""
        conn = self.conn
        if self.handshake_timer.armed and not conn.closed and conn.connector.is_open:
            self.handshake_timer.cancel()
            self.retry()
        self.handshake_timer.cancel()
        self.release_accept()

    def reconnect_delay(self) -> float | None:
        """``stream_connecter_base_t::get_new_reconnect_ivl``, in seconds."""
        opts = self.conn.connector.options
        ivl = opts.reconnect_ivl
        if ivl <= 0:
            return None
        if opts.reconnect_ivl_max > 0:
            # exponential backoff up to the maximum, no jitter
            current = self.backoff_ms if self.backoff_ms else ivl
            self.backoff_ms = min(current * 2, opts.reconnect_ivl_max)
            return current / 1000.0
        return (ivl + int(self.rng.integers(0, ivl))) / 1000.0

    def retry(self) -> None:
        """Try again after the reconnect interval (``add_reconnect_timer``)."""
        conn = self.conn
        delay = self.reconnect_delay()
        if delay is None:
            conn.closed = True  # RECONNECT_IVL <= 0: the endpoint is given up
            return
        if self.ctx.listeners.get(conn.endpoint.key) is None:
            # Nobody listens: do not fill the schedule with failing attempts; the next
            # attempt is computed when a listener appears (World.open_binds).
            self.waiting_for_listener = True
            self.ctx.waiting_connects.setdefault(conn.endpoint.key, []).append(self)
            self.pending_delay = delay
            return
        self.attempt_timer.arm(delay)

    def reconnect(self) -> None:
        """The connection broke: the next attempt after the interval from now."""
        self.last_attempt = self.clock.now
        self.retry()

    def listener_appeared(self) -> None:
        """A socket bound the endpoint: the next reconnect attempt after now happens."""
        if not self.waiting_for_listener or self.conn.closed:
            return
        self.waiting_for_listener = False
        attempt = self.last_attempt + self.pending_delay
        now = self.clock.now
        replayed = 0
        while attempt < now:
            if replayed == REPLAYED_ATTEMPTS:
                attempt = now + self._steady_wait(now - attempt)
                break
            delay = self.reconnect_delay()
            if delay is None:
                self.conn.closed = True
                return
            attempt += delay
            replayed += 1
        self.attempt_timer.arm(attempt - now)

    def _steady_wait(self, behind: float) -> float:
        """Seconds from now to the next attempt of a connect that has retried for far longer
        than its interval and whose last replayed attempt was ``behind`` seconds ago."""
        opts = self.conn.connector.options
        if opts.reconnect_ivl_max > 0:
            # the backoff reached its maximum within 32 doublings: attempts every backoff_ms
            period = self.backoff_ms / 1000.0
            late = math.fmod(behind, period)
            return period - late if late > 0 else 0.0
        # Intervals of ivl + U{0 .. ivl-1} ms: the one under way at a time far from the
        # start is drawn in proportion to its length (a renewal process in equilibrium,
        # by rejection: a draw d is kept with probability d / longest), and the time is
        # uniform within it
        ivl = opts.reconnect_ivl
        longest = 2 * ivl - 1
        while True:
            length = ivl + int(self.rng.integers(0, ivl))
            if self.rng.random() * longest < length:
                return length * (1.0 - self.rng.random()) / 1000.0

    def stop(self) -> None:
        """The connector is gone (closed, crashed, disconnected): no more attempts,
        handshakes, or waiting for a listener to appear."""
        self.attempt_timer.cancel()
        self.syn_timer.cancel()
        self.handshake_timer.cancel()
        self.release_accept()
        if self.waiting_for_listener:
            waiting = self.ctx.waiting_connects.get(self.conn.endpoint.key, [])
            if self in waiting:
                waiting.remove(self)
            self.waiting_for_listener = False
