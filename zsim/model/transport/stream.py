"""tcp and ipc connections (``session_base_t``, ``tcp_connecter_t``/``ipc_connecter_t``).

socket --pipe(SNDHWM)--> session/engine --kernel bytes--> engine/session --pipe(RCVHWM)-->
socket. The connect side gets its pipes at ``connect()`` (unless ``immediate``), the bind
side after the handshake. Disconnects, reconnects (``reconnect_ivl`` plus jitter), linger
and the ipc EPOLLHUP loss of docs/model.md are modelled here; the engines and kernel
buffers are in ``engine``.

Each session runs on an I/O thread of its socket's context (``context.IoThread``): a
connect's is chosen at ``connect()`` (``socket_base_t::connect_internal``), an accepted
connection's at the accept (``stream_listener_base_t::create_engine``), the least loaded
(``ctx_t::choose_io_thread``). A handshake takes its drawn latency (``[tcp] connect_s``), but
both threads serve it one event at a time in the order events come, so it does not complete
before a handshake started earlier on either of them (``StreamConnection._attempt``):
connects made one after another from one context attach in that order, and the round
robin of a REQ, DEALER or PUSH that binds follows it (test_spec_req.cpp:34). Handshakes
that share no I/O thread keep their own times.

A ROUTER that connects learns its peer's routing id at the handshake: the engine pushes it
into the pipe the ROUTER attached at ``connect()`` (``stream_engine_base_t::mechanism_ready``)
and the ROUTER identifies the peer on that ``activate_read`` (``sockets.Router``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ...constants import compute_lwm
from ..context import Context, IoThread, choose_io_thread
from ..fates import (
    RULE_CRASH,
    RULE_DISCONNECT,
    RULE_ENGINE_HUP,
    RULE_KERNEL_LOST,
    RULE_LINGER,
    WHERE_KERNEL,
)
from ..params import params_of
from ..peer import Peer, UnboundEnd
from ..pipe import MSG_ID, Message, Pipe, PipeEndpoint
from ..socket import Socket
from .connection import Connection, Lingering
from .engine import Engine, Wire
from .losses import drop_displaced, in_flight, record_discarded, record_lost, wire_messages

if TYPE_CHECKING:  # pragma: no cover
    from ...sampler import Sampler
    from ..params import TransportParams
    from .network import Path

#: The reconnect attempts a connect replays one by one when the listener it waited for
#: appears (each draws its jitter). Past this many (about 25 minutes of the default
#: 100-200 ms intervals), the next attempt is placed by the retries' steady phase instead:
#: replaying 10^8 s of retries took half an hour of one Python loop no run limit could stop.
REPLAYED_ATTEMPTS = 10_000


class Session(PipeEndpoint):
    """``session_base_t``: the I/O-thread end of one socket's two pipes on a connection."""

    def __init__(self, conn: StreamConnection, socket: Socket, role: str, io_thread: IoThread) -> None:
        self.conn = conn
        self.ctx = conn.ctx
        self.socket = socket
        self.role = role  # "connect" | "bind"
        #: the I/O thread of its socket's context it runs on (``ctx_t::choose_io_thread``
        #: at connect() or at the accept), with its connecter and engines
        self.io_thread = io_thread
        self.peer: Peer | None = None
        self.out_pipe: Pipe | None = None  # socket -> session
        self.in_pipe: Pipe | None = None  # session -> socket
        self.engine: Engine | None = None
        self.terminating = False
        self.linger_timer: Any = None
        self.done = False

    # pipe endpoint protocol (I/O thread: commands take effect after a wake-up latency)
    def post_activate_read(self, pipe: Pipe) -> None:
        engine = self.engine
        if engine is not None:
            engine.kick_out(self.conn.io_wakeup.next())
        elif self.terminating and pipe.delimited and not pipe.queue:
            self.delimiter_reached()

    def post_activate_write(self, pipe: Pipe, read_count: int) -> None:
        delay = self.conn.io_wakeup.next()
        self.ctx.env.call_later(delay, lambda: self._activate_write(pipe, read_count))

    def _activate_write(self, pipe: Pipe, read_count: int) -> None:
        if pipe.apply_activate_write(read_count) and self.engine is not None:
            self.engine.restart_input()

    def push(self, msg: Message) -> bool:
        """``session_base_t::push_msg``: into the session->socket pipe, or fail (EAGAIN)."""
        pipe = self.in_pipe
        if pipe is None or not pipe.check_write():
            return False
        pipe.write(msg)
        return True

    def delimiter_reached(self) -> None:
        """The engine pulled the delimiter: everything queued went to the engine/kernel."""
        if self.terminating and not self.done:
            self.conn.session_finished(self)

    def finish(self) -> None:
        """The session is gone: its I/O thread serves one session less."""
        if not self.done:
            self.done = True
            self.io_thread.load -= 1


class Link:
    """One established tcp/ipc connection: two engines and two kernel directions."""

    def __init__(self, conn: StreamConnection, c_session: Session, b_session: Session, number: int) -> None:
        self.conn = conn
        self.ctx = conn.ctx
        self.params: TransportParams = conn.params
        self.number = number
        c_sock, b_sock = c_session.socket, b_session.socket
        name = f"{c_sock.name}<->{b_sock.name}"
        fn = self.params.kernel_capacity
        self.transport = transport = conn.transport
        c_snd = c_sock.options.sndbuf if transport == "tcp" else -1
        c_rcv = c_sock.options.rcvbuf if transport == "tcp" else -1
        b_snd = b_sock.options.sndbuf if transport == "tcp" else -1
        b_rcv = b_sock.options.rcvbuf if transport == "tcp" else -1
        self.latency_sampler: Sampler = conn.latency_sampler
        self.c_session, self.b_session = c_session, b_session
        path = conn.path
        if path is None:
            self.c2b = Wire(f"{c_sock.name}->{b_sock.name}", fn, c_snd, b_rcv, c_sock.options.sndhwm, self.ctx.clock.now)
            self.b2c = Wire(f"{b_sock.name}->{c_sock.name}", fn, b_snd, c_rcv, b_sock.options.sndhwm, self.ctx.clock.now)
            self.c_engine = Engine(self, c_session, self.c2b, self.b2c)
            self.b_engine = Engine(self, b_session, self.b2c, self.c2b)
        else:
            # the two processes are on hosts joined by a link: TCP over it (imported only
            # here, so a scenario without links never loads it)
            from .network import LinkEngine

            self.c2b, self.b2c = path.wires(c_sock.name, b_sock.name, fn, c_sock.options, b_sock.options, self.ctx.clock.now)
            self.c_engine = LinkEngine(self, c_session, self.c2b, self.b2c)
            self.b_engine = LinkEngine(self, b_session, self.b2c, self.c2b)
        c_session.engine = self.c_engine
        b_session.engine = self.b_engine
        self.broken = False
        self.name = name

    def engine_error(self, engine: Engine, reason: str) -> None:
        """``stream_engine_base_t::error``: the engine is deleted, the link is gone."""
        self.conn.link_broken(self, reason, engine)


class StreamConnection(Connection):
    """A ``connect()`` to a tcp or ipc endpoint: the connect-side session, its reconnects,
    and the current link with its bind-side session."""

    def __init__(self, ctx: Context, connector: Socket, endpoint: Any, index: int) -> None:
        self.ctx = ctx
        self.env = ctx.env
        self.clock = ctx.clock  # the time: see kernel.Clock
        self.endpoint = endpoint
        self.transport = endpoint.transport
        # the connection's handshake, hop latency and I/O wake-up: the connecting host's
        # (a connection on one host has one; across a link each engine takes its own
        # host's costs, Engine.params)
        self.params = params_of(connector.process, ctx.params).transport(self.transport)
        self.connector = connector
        self.index = index
        # one random stream per drawn quantity, named after the connection: a reconnect or
        # a longer handshake leaves the hop latencies (and every other connection) alone
        name = f"conn.{connector.name}.{endpoint.text}"
        self.rng = ctx.stream(f"{name}.reconnect")  # the reconnect jitter
        handshake, latency = self.params.handshake, self.params.hop_latency
        self.handshake = handshake.sampler(None if handshake.is_constant else ctx.stream(f"{name}.handshake"))
        # the hop latency of both directions of every link this connection makes
        self.latency_sampler = latency.sampler(None if latency.is_constant else ctx.stream(f"{name}.latency"))
        wakeup = self.params.io_wakeup
        self.io_wakeup = wakeup.sampler(None if wakeup.is_constant else ctx.stream(f"io.{connector.name}.{endpoint.text}"))
        #: the link between the two hosts (``network.Path``); None: loopback
        self.path: Path | None = None
        # socket_base_t::connect_internal: the session's I/O thread is chosen at connect()
        self.c_session = Session(self, connector, "connect", choose_io_thread(connector.process.io_threads))
        #: the I/O thread the binder's context chose for the connection it is accepting
        #: (the bind-side session's, once the handshake completes); None: no handshake
        self.accept_io: IoThread | None = None
        self.b_session: Session | None = None
        self.link: Link | None = None
        self.links = 0
        self.closed = False
        self.attempt_timer = self.env.timer(self._attempt)
        self.handshake_timer = self.env.timer(self._handshake_done)
        self.handshake_binder: Socket | None = None
        self.last_attempt = self.clock.now
        self.waiting_for_listener = False
        self.c_peer: Peer | None = None
        self.b_peer: Peer | None = None
        self.immediate = bool(connector.options.immediate)
        self.backoff_ms = 0
        #: ZMQ_CONNECT_ROUTING_ID: the name the connecting ROUTER gave this peer when its
        #: connect attached the pipe (router_t::identify_peer), kept across handshakes
        self.connect_routing_id: str | None = None
        if not self.immediate:
            self._create_connect_pipes()
        self._attempt()

    # -- pipes ---------------------------------------------------------------------------

    def _create_connect_pipes(self, via_command: bool = False) -> None:
        ctx, c = self.ctx, self.connector
        remote = UnboundEnd(self.endpoint)
        conflate = bool(c.options.conflate) and c.traits.conflate
        label = f"{self.transport}://{self.endpoint.address}"
        out_pipe = ctx.new_pipe(f"{c.name}->{label} (send)", c.name, label, "send", -1 if conflate else c.options.sndhwm, c,
                                  self.c_session, conflate, self)
        in_pipe = ctx.new_pipe(f"{label}->{c.name} (recv)", label, c.name, "recv", -1 if conflate else c.options.rcvhwm,
                                 self.c_session, c, conflate, self)
        if conflate:
            drop_displaced(ctx, out_pipe, c)
            drop_displaced(ctx, in_pipe, c)
        peer = Peer(c, remote, self)
        peer.out_pipe, peer.in_pipe = out_pipe, in_pipe
        if not via_command:
            # the connect attaches the pipe itself (locally initiated): a ROUTER names it
            # by its ZMQ_CONNECT_ROUTING_ID, if set
            self.connect_routing_id = c.take_connect_routing_id()
            if self.connect_routing_id is not None:
                peer.routing_key = self.connect_routing_id
        self.c_peer = peer
        self.c_session.peer = peer
        self.c_session.out_pipe, self.c_session.in_pipe = out_pipe, in_pipe
        if via_command:
            c.post_attach(peer)  # session_base_t::engine_ready -> send_bind
        else:
            c.attach(peer)  # connect_internal attaches in the application thread

    def _create_bind_pipes(self, binder: Socket, number: int, io_thread: IoThread) -> Session:
        ctx = self.ctx
        c = self.connector
        session = Session(self, binder, "bind", io_thread)
        conflate = bool(binder.options.conflate) and binder.traits.conflate
        suffix = f" #{number}" if number > 1 else ""
        out_pipe = ctx.new_pipe(
            f"{binder.name}->{c.name} ({self.transport} send{suffix})", binder.name, c.name, "send",
            -1 if conflate else binder.options.sndhwm, binder, session, conflate, self,
        )
        in_pipe = ctx.new_pipe(
            f"{c.name}->{binder.name} ({self.transport} recv{suffix})", c.name, binder.name, "recv",
            -1 if conflate else binder.options.rcvhwm, session, binder, conflate, self,
        )
        if conflate:
            drop_displaced(ctx, out_pipe, binder)
            drop_displaced(ctx, in_pipe, binder)
        peer = Peer(binder, c, self)
        peer.out_pipe, peer.in_pipe = out_pipe, in_pipe
        session.peer = peer
        session.out_pipe, session.in_pipe = out_pipe, in_pipe
        self.b_peer = peer
        return session

    # -- connecting ----------------------------------------------------------------------

    def _attempt(self) -> None:
        """``tcp_connecter_t::start_connecting``: the listener is there or it is not."""
        if self.closed or not self.connector.is_open:
            return
        self.last_attempt = self.clock.now
        binder = self.ctx.listeners.get(self.endpoint.key)
        if binder is None or not binder.is_open:
            self._schedule_retry()
            return
        # TCP connect + ZMTP greeting + READY: engine_ready on both sides.
        self.handshake_binder = binder
        if self.b_peer is None or not self.b_peer.alive:
            # For loss accounting the binder knows a subscriber is on its way.
            provisional = Peer(binder, self.connector, self)
            binder.add_pending_peer(provisional)
            self.b_peer = provisional
        # stream_listener_base_t::create_engine: the accepted connection's session goes
        # to the least loaded I/O thread of the binder's context
        self._release_accept()
        accept_io = self.accept_io = choose_io_thread(binder.process.io_threads)
        delay = self.handshake.next()
        network = self.ctx.network
        if network is not None:
            self.path = network.path(self.connector.process.host, binder.process.host)
            if self.path is not None:
                delay += self.path.handshake_s()
        # Both I/O threads serve the handshake, each one event at a time in the order the
        # events come: it completes after its own latency, and not before a handshake
        # either thread started earlier (their completions keep the order they started in;
        # handshakes on other threads keep their own times).
        done_at = self.clock.now + delay
        connect_io = self.c_session.io_thread
        if connect_io.handshakes_until > done_at:
            done_at = connect_io.handshakes_until
        if accept_io.handshakes_until > done_at:
            done_at = accept_io.handshakes_until
        connect_io.handshakes_until = accept_io.handshakes_until = done_at
        self.handshake_timer.arm_at(done_at)

    def _release_accept(self) -> None:
        """The connection being accepted will not be: its I/O thread serves one less."""
        if self.accept_io is not None:
            self.accept_io.load -= 1
            self.accept_io = None

    def _reconnect_delay(self) -> float | None:
        """``stream_connecter_base_t::get_new_reconnect_ivl``, in seconds."""
        opts = self.connector.options
        ivl = opts.reconnect_ivl
        if ivl <= 0:
            return None
        if opts.reconnect_ivl_max > 0:
            # exponential backoff up to the maximum, no jitter
            current = self.backoff_ms if self.backoff_ms else ivl
            self.backoff_ms = min(current * 2, opts.reconnect_ivl_max)
            return current / 1000.0
        return (ivl + int(self.rng.integers(0, ivl))) / 1000.0

    def _schedule_retry(self) -> None:
        delay = self._reconnect_delay()
        if delay is None:
            self.closed = True  # RECONNECT_IVL <= 0: the endpoint is given up
            return
        if self.ctx.listeners.get(self.endpoint.key) is None:
            # Nobody listens: do not fill the schedule with failing attempts; the next
            # attempt is computed when a listener appears (World.open_binds).
            self.waiting_for_listener = True
            self.ctx.waiting_connects.setdefault(self.endpoint.key, []).append(self)
            self._pending_delay = delay
            return
        self.attempt_timer.arm(delay)

    def listener_appeared(self) -> None:
        """A socket bound the endpoint: the next reconnect attempt after now happens."""
        if not self.waiting_for_listener or self.closed:
            return
        self.waiting_for_listener = False
        attempt = self.last_attempt + self._pending_delay
        now = self.clock.now
        replayed = 0
        while attempt < now:
            if replayed == REPLAYED_ATTEMPTS:
                attempt = now + self._steady_wait(now - attempt)
                break
            delay = self._reconnect_delay()
            if delay is None:
                self.closed = True
                return
            attempt += delay
            replayed += 1
        self.attempt_timer.arm(attempt - now)

    def _steady_wait(self, behind: float) -> float:
        """Seconds from now to the next attempt of a connect that has retried for far longer
        than its interval and whose last replayed attempt was ``behind`` seconds ago."""
        opts = self.connector.options
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

    def _handshake_done(self) -> None:
        binder = self.handshake_binder
        if self.closed or not self.connector.is_open:
            self._release_accept()
            return
        listening: Socket | None = self.ctx.listeners.get(self.endpoint.key)
        if binder is None or not binder.is_open or listening is not binder:
            self._release_accept()
            self._schedule_retry()
            return
        if binder.type not in self.connector.traits.valid_peers:
            self._types_refused(binder)
            return
        self.links += 1
        provisional = self.b_peer
        accept_io = self.accept_io
        assert accept_io is not None  # chosen by the _attempt that armed this handshake
        self.accept_io = None
        b_session = self._create_bind_pipes(binder, self.links, accept_io)
        if provisional is not None and provisional is not self.b_peer:
            binder.forget_pending_peer(provisional)
        binder.add_pending_peer(self.b_peer)  # type: ignore[arg-type]
        self.b_session = b_session
        if self.immediate:
            self._create_connect_pipes(via_command=True)
        elif self.connector.traits.sends_subscriptions and self.links > 1:
            # session_base_t::reconnect hiccups a SUB's pipe: unsent (un)subscriptions
            # are dropped and xsub_t::xhiccuped sends every subscription again.
            self._hiccup_subscriptions()
        peer = self.c_peer
        assert peer is not None
        arrives = peer.routing_key is None and peer.attached
        peer.remote = binder
        if self.connect_routing_id is None:
            peer.routing_key = binder.routing_id
        peer.remote_subs = binder.own_subs
        if arrives and self.connector.traits.prepends_identity and peer.in_pipe is not None:
            # stream_engine_base_t::mechanism_ready: a ROUTER's engine pushes the peer's
            # routing id into the pipe it attached at connect(); the socket identifies the
            # peer when it processes that activate_read (router_t::xread_activated)
            self.connector.post_activate_read(peer.in_pipe)
        if self.links == 1 and peer.out_pipe is not None and peer.in_pipe is not None:
            c = self.connector
            self.ctx.rename_pipe(peer.out_pipe, f"{c.name}->{binder.name} ({self.transport} send)", to=binder.name)
            self.ctx.rename_pipe(peer.in_pipe, f"{binder.name}->{c.name} ({self.transport} recv)", frm=binder.name)
        self.link = Link(self, self.c_session, b_session, self.links)
        # The binder attaches the pipe when it processes the bind command.
        binder.post_attach(self.b_peer)  # type: ignore[arg-type]
        # Both engines start: anything queued on either side flows.
        self.link.c_engine.kick_out()
        self.link.b_engine.kick_out()
        self.ctx.links.append(self.link)

    def _types_refused(self, binder: Socket) -> None:
        """The two socket types may not talk (``mechanism_t::check_socket_type`` on the
        READY command's Socket-Type): both engines stop with a protocol error
        (``stream_engine_base_t::error``). The bind side's session ends before it made a
        pipe; the connect side's session terminates and does not reconnect
        (``session_base_t::engine_error``: ``protocol_error`` -> ``terminate``), and its
        pipes go with what was queued in them (rule ``disconnect``). Nothing reaches
        either socket."""
        self._stop_connecting()
        provisional = self.b_peer
        if provisional is not None:
            binder.forget_pending_peer(provisional)
            self.b_peer = None
        self._drop_connect_pipes(RULE_DISCONNECT)
        session = self.c_session
        session.peer = None
        session.out_pipe = session.in_pipe = None

    def _hiccup_subscriptions(self) -> None:
        peer = self.c_peer
        if peer is None or peer.out_pipe is None:
            return
        pipe = peer.out_pipe
        pipe.drain()
        pipe.state = 0
        pipe.out_active = True
        pipe.peers_read = pipe.written = pipe.read_count = 0
        self.connector.xhiccuped(pipe)

    def refuse(self, peer: Peer) -> None:
        if self.link is not None:
            self.link_broken(self.link, "refused", None)

    def release(self, peer: Peer, rule: int) -> None:
        """The socket's end of the session's pipes terminates (``pipe_t::terminate``) and
        the session lives on without them (``session_base_t::pipe_terminated``: ``_pipe =
        NULL``; only a raw socket's session closes the connection): what the socket had not
        read is dropped, what it had queued goes out, and its engine, unable to push, stops
        reading, so what the peer sends from now on stays in the connection."""
        sock = peer.socket
        sessions = [s for s in (self.b_session, self.c_session) if s is not None and s.peer is peer]
        sock.detach(peer)
        for session in sessions:
            in_pipe = session.in_pipe
            if in_pipe is not None:
                record_lost(self.ctx, in_pipe.drain(), sock.index, in_pipe.index, rule)
                session.in_pipe = None
            out_pipe = session.out_pipe
            if out_pipe is not None and not out_pipe.delimited:
                out_pipe.mark_delimited()
                if session.engine is not None:
                    session.engine.kick_out()

    # -- breaking --------------------------------------------------------------------------

    def link_broken(self, link: Link, reason: str, by: Engine | None, rule: int | None = None) -> None:
        """The connection is gone. Engines and kernel buffers lose what they hold; the
        bind side's session terminates; the connect side reconnects (``session_base_t::engine_error``, ``reconnect``)."""
        if link.broken:
            return
        link.broken = True
        ctx = self.ctx
        c_engine, b_engine = link.c_engine, link.b_engine
        kernel_rule = rule if rule is not None else (RULE_ENGINE_HUP if reason == "hup" else RULE_KERNEL_LOST)
        engine_rule = rule if rule is not None else RULE_DISCONNECT
        for engine, wire in ((c_engine, link.c2b), (b_engine, link.b2c)):
            # One direction: sender's unwritten batch, the kernel, the reader's buffers.
            # A message can straddle them; each is recorded once, where its first byte is.
            reader = wire.reader
            losses = [(msg, sock, pipe_index, kernel_rule if place == WHERE_KERNEL else engine_rule)
                      for msg, sock, pipe_index, place in in_flight(engine, wire)]
            now = ctx.clock.now
            for msg, where, pipe_index, why in losses:
                if msg[MSG_ID] >= 0:
                    ctx.ledger.lost(msg, where.index, pipe_index, why, now)
            engine.drop_output()
            wire.clear()
            if reader is not None:
                reader.drop_input()
            wire.observe(now)
        for engine, session in ((c_engine, link.c_session), (b_engine, link.b_session)):
            engine.shutdown()
            session.engine = None
        if self.link is link:
            self.link = None
        # bind side: session_base_t::engine_error -> terminate
        b_session = link.b_session
        self._terminate_bind_session(b_session, RULE_DISCONNECT)
        # connect side
        c_session = link.c_session
        if c_session.terminating:
            self.conn_session_gone(c_session)
            return
        if self.immediate:
            peer = self.c_peer
            if peer is not None:
                self._drop_connect_pipes(RULE_DISCONNECT)
        if self.connector.is_open and not self.closed:
            if self.connector.options.reconnect_ivl <= 0:
                # session_base_t::reconnect: no reconnect interval, so the session sends its
                # socket term_endpoint, which the socket carries out as zmq_disconnect when
                # it processes commands (until then its sends still go into the pipe)
                self._stop_connecting()
                connector, endpoint, ctx = self.connector, self.endpoint, self.ctx
                connector.post(lambda _: ctx.term_endpoint(connector, endpoint), None)
                return
            self.last_attempt = self.clock.now
            self._schedule_retry()

    def _terminate_bind_session(self, session: Session, rule: int) -> None:
        peer = session.peer
        if peer is None or session.done:
            return
        session.finish()
        binder = session.socket
        out_pipe, in_pipe = session.out_pipe, session.in_pipe
        if out_pipe is not None:
            n = record_discarded(self.ctx, out_pipe.drain(), binder.index, out_pipe.index, rule)
            binder.discarded += n
        if in_pipe is not None and in_pipe.queue and binder.is_open:
            # readable until the delimiter
            in_pipe.mark_delimited()
            binder.post_peer_closing(peer)
        else:
            if in_pipe is not None and in_pipe.queue:
                record_lost(self.ctx, in_pipe.drain(), binder.index, in_pipe.index, RULE_LINGER)
            binder.post_detach(peer)
        if self.b_session is session:
            self.b_session = None

    def _drop_connect_pipes(self, rule: int) -> None:
        peer = self.c_peer
        if peer is None:
            return
        c = self.connector
        if peer.out_pipe is not None:
            n = record_discarded(self.ctx, peer.out_pipe.drain(), c.index, peer.out_pipe.index, rule)
            c.discarded += n
        if peer.in_pipe is not None and peer.in_pipe.queue:
            peer.in_pipe.mark_delimited()
            c.post_peer_closing(peer)
        else:
            c.post_detach(peer)
        self.c_peer = None

    def on_delimiter(self, pipe: Pipe) -> None:
        """A socket read its inbound pipe up to the delimiter."""
        for peer in (self.c_peer, self.b_peer):
            if peer is not None and peer.in_pipe is pipe and peer.alive:
                peer.socket.post_detach(peer)

    # -- close / linger ----------------------------------------------------------------------

    def _stop_connecting(self) -> None:
        """The connector is gone (closed or crashed): no more attempts, handshakes, or
        waiting for a listener to appear."""
        self.closed = True
        self.attempt_timer.cancel()
        self.handshake_timer.cancel()
        self._release_accept()
        if self.waiting_for_listener:
            waiting = self.ctx.waiting_connects.get(self.endpoint.key, [])
            if self in waiting:
                waiting.remove(self)
            self.waiting_for_listener = False

    def close_side(self, sock: Socket, discard: bool = False, rule: int = RULE_LINGER, keep_inbound: bool = False) -> None:
        """``sock`` closed (``zmq_close``), disconnected or unbound: honour its LINGER on
        this connection (see ``Connection.close_side``)."""
        if sock is self.connector:
            session = self.c_session
            self._stop_connecting()
            provisional = self.b_peer
            if provisional is not None and not provisional.attached and (self.link is None):
                provisional.socket.detach(provisional)
        else:
            session = self.b_session  # type: ignore[assignment]
            if session is None:
                # no established link on this connection; forget any provisional peer
                if self.b_peer is not None and self.b_peer.socket is sock:
                    sock.detach(self.b_peer)
                if self.handshake_timer.armed and not self.closed and self.connector.is_open:
                    # the listener went during the handshake: the connector's attempt
                    # fails and it tries again after its reconnect interval
                    self.handshake_timer.cancel()
                    self._schedule_retry()
                self.handshake_timer.cancel()
                self._release_accept()
                return
        self._linger(session, sock, discard, rule, keep_inbound)

    def update_hwms(self, sock: Socket) -> None:
        """New HWMs on ``sock``'s pipes here: the socket -> session pipe holds SNDHWM and
        the session reads it with its LWM; the session -> socket pipe holds RCVHWM (tcp and
        ipc pipes have no boost: ``pipe_t::set_hwms`` with -1)."""
        for peer in (self.c_peer, self.b_peer):
            if peer is None or peer.socket is not sock or not peer.attached:
                continue  # update_pipe_options: only the pipes the socket has attached
            options = sock.options
            for pipe, hwm in ((peer.out_pipe, options.sndhwm), (peer.in_pipe, options.rcvhwm)):
                if pipe is not None and pipe.hwm >= 0:  # -1: a conflating pipe keeps its one slot
                    pipe.hwm = hwm
                    pipe.lwm = compute_lwm(hwm)

    def _linger(self, session: Session, sock: Socket, discard: bool, rule: int, keep_inbound: bool = False) -> None:
        ctx = self.ctx
        if session.terminating:
            return
        session.terminating = True
        peer = session.peer
        in_pipe = session.in_pipe
        if keep_inbound and in_pipe is not None and in_pipe.queue and sock.is_open and peer is not None:
            # the socket end waits for the delimiter (pipe_t::process_pipe_term with
            # _delay): what came in is still read, then the peer is forgotten
            in_pipe.mark_delimited()
            sock.post_peer_closing(peer)
        else:
            # Inbound messages the application never read are gone with the socket.
            if in_pipe is not None:
                record_lost(ctx, in_pipe.drain(), sock.index, in_pipe.index, rule)
            if peer is not None:
                sock.detach(peer)
        out_pipe = session.out_pipe
        linger = sock.options.linger
        if out_pipe is None:
            self.session_finished(session)
            return
        out_pipe.mark_delimited()
        engine = session.engine
        if discard or linger == 0 or (engine is None and linger == 0):
            self._discard_out(session, sock, rule)
            return
        if not out_pipe.queue and (engine is None or not engine.out_batch):
            self.session_finished(session)
            return
        if engine is not None:
            engine.kick_out()
        if linger > 0:
            session.linger_timer = ctx.env.timer(lambda: self._linger_expired(session, sock, rule))
            session.linger_timer.arm(linger / 1000.0)

    def _discard_out(self, session: Session, sock: Socket, rule: int) -> None:
        out_pipe = session.out_pipe
        if out_pipe is not None:
            record_lost(self.ctx, out_pipe.drain(), sock.index, out_pipe.index, rule)
        self.session_finished(session)

    def _linger_expired(self, session: Session, sock: Socket, rule: int) -> None:
        if session.done:
            return
        self._discard_out(session, sock, rule)

    def session_finished(self, session: Session) -> None:
        """The closing side's engine has everything (or linger gave up): close the fd."""
        if session.done:
            return
        session.finish()
        if session.linger_timer is not None:
            session.linger_timer.cancel()
        engine = session.engine
        link = cast(Link, engine.link) if engine is not None else None
        if engine is not None and link is not None and not link.broken:
            # The last batch goes to the kernel; the fd is closed after it (FIN).
            out_wire = engine.out_wire
            if engine.out_batch:
                out_wire.push_last(engine.out_batch)
                engine.drop_output()
                out_wire.observe(self.clock.now)
            engine.shutdown()
            session.engine = None
            # Whatever the peer sent us and we never decoded is lost.
            sock = session.socket
            in_index = session.in_pipe.index if session.in_pipe is not None else -1
            lost = engine.undecoded() + wire_messages(engine.in_wire, engine)
            record_lost(self.ctx, lost, sock.index, in_index, RULE_LINGER)
            engine.in_wire.clear()
            engine.drop_input()
            engine.in_wire.observe(self.clock.now)
            other = link.b_engine if engine is link.c_engine else link.c_engine
            other.peer_closed()
            if self.link is link:
                # The link lives on until the other side reads EOF.
                pass
        session.socket.process.session_closed(session)

    def serves(self, sock: Socket) -> bool:
        return (self.b_session is not None and self.b_session.socket is sock) or self.handshake_binder is sock

    def lingering(self, sock: Socket) -> list[Lingering]:
        sessions: list[Lingering] = []
        if self.connector is sock:
            sessions.append(self.c_session)
        if self.b_session is not None and self.b_session.socket is sock:
            sessions.append(self.b_session)
        return sessions

    def destination(self, pipe: Pipe, bound_at: Callable[[Any], int]) -> int:
        """A pipe read by a session: the connecting socket for a bind-side session, the
        socket bound at the endpoint for a connect-side one (also while connecting)."""
        reader = pipe.reader
        if isinstance(reader, Session):
            return self.connector.index if reader.role == "bind" else bound_at(self.endpoint)
        return -1

    def conn_session_gone(self, session: Session) -> None:
        session.finish()
        session.socket.process.session_closed(session)

    def crash_side(self, sock: Socket) -> None:
        """The process of ``sock`` died: no linger, its kernel data is gone, the peer sees a reset."""
        ctx = self.ctx
        link = self.link
        if link is not None and not link.broken:
            self.link_broken(link, "crash", None, rule=RULE_CRASH)
        session = self.c_session if sock is self.connector else self.b_session
        if sock is self.connector:
            self._stop_connecting()
        if session is not None:
            for pipe in (session.out_pipe, session.in_pipe):
                if pipe is not None and pipe.queue:
                    record_lost(ctx, pipe.drain(), sock.index, pipe.index, RULE_CRASH)
            session.finish()
            session.terminating = True
            if session.peer is not None:
                sock.detach(session.peer)
