"""tcp and ipc connections: what ``World`` asks of a connect, over libzmq's three parts.

socket --pipe(SNDHWM)--> session/engine --kernel bytes--> engine/session --pipe(RCVHWM)-->
socket. libzmq splits a connection into its connecter (``stream_connecter_base_t``: the
attempts and retries; here ``connecter.Connecter``), its sessions (``session_base_t``: the
I/O-thread end of each socket's pipes, which ends as LINGER says; ``session.Session``) and
an engine per established connection (``stream_engine_base_t``: bytes between the kernel
and the pipes; ``engine.Engine``, on the two kernel directions of a ``Link``).
``StreamConnection`` ties them together: the connect side gets its pipes at ``connect()``
(unless ``immediate``), the bind side after the handshake (``engine_ready``);
disconnects, reconnects and the ipc EPOLLHUP loss of docs/model.md are decided here.

Each session runs on an I/O thread of its socket's context (``context.IoThread``): a
connect's is chosen at ``connect()`` (``socket_base_t::connect_internal``), an accepted
connection's at the accept (``stream_listener_base_t::create_engine``), the least loaded
(``ctx_t::choose_io_thread``); the connecter orders the handshakes they serve.

A ROUTER that connects learns its peer's routing id at the handshake: the engine pushes it
into the pipe the ROUTER attached at ``connect()`` (``stream_engine_base_t::mechanism_ready``)
and the ROUTER identifies the peer on that ``activate_read`` (``sockets.Router``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from ..pipe import MSG_ID, Pipe
from ..socket import Socket
from .connecter import Connecter
from .connection import Connection, Lingering
from .engine import Engine, Wire
from .losses import drop_displaced, in_flight, record_discarded, record_lost
from .session import Session

if TYPE_CHECKING:  # pragma: no cover
    from ...sampler import Sampler
    from ..params import TransportParams
    from .network import Path

def _watches(options: Any) -> bool:
    """ZMTP heartbeats or TCP keepalive are on (``zsim.model.transport.liveness``)."""
    return bool(options.heartbeat_ivl > 0 or options.tcp_keepalive == 1)


class Link:
    """One established tcp/ipc connection: two engines and two kernel directions."""

    liveness: Any = None  # heartbeats and keepalive, on a route with [[fault]]s (``Liveness``)

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

            # each sending kernel charges its send buffer by its own host's profile
            c_per_segment = params_of(c_sock.process, self.ctx.params).transport(transport).sndbuf_per_segment_bytes
            b_per_segment = params_of(b_sock.process, self.ctx.params).transport(transport).sndbuf_per_segment_bytes
            self.c2b, self.b2c = path.wires(c_sock.name, b_sock.name, fn, c_sock.options, b_sock.options, self.ctx.clock.now,
                                            c_per_segment, b_per_segment)
            self.c_engine = LinkEngine(self, c_session, self.c2b, self.b2c)
            self.b_engine = LinkEngine(self, b_session, self.b2c, self.c2b)
            if path.faulty and (_watches(c_sock.options) or _watches(b_sock.options)):
                # a route that can go down: heartbeats and keepalive notice a silent peer
                from .liveness import Liveness

                self.liveness = Liveness(self, self.c_engine, self.b_engine, self.c2b.flow, self.b2c.flow, c_sock.options,
                                         b_sock.options)
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
        name = f"conn.{connector.name}.{endpoint.text}"
        latency = self.params.hop_latency
        # the hop latency of both directions of every link this connection makes
        self.latency_sampler = latency.sampler(None if latency.is_constant else ctx.stream(f"{name}.latency"))
        wakeup = self.params.io_wakeup
        self.io_wakeup = wakeup.sampler(None if wakeup.is_constant else ctx.stream(f"io.{connector.name}.{endpoint.text}"))
        #: the link between the two hosts (``network.Path``); None: loopback
        self.path: Path | None = None
        # socket_base_t::connect_internal: the session's I/O thread is chosen at connect()
        self.c_session = Session(self, connector, "connect", choose_io_thread(connector.process.io_threads))
        self.b_session: Session | None = None
        self.link: Link | None = None
        self.links = 0
        self.closed = False
        self.c_peer: Peer | None = None
        self.b_peer: Peer | None = None
        self.immediate = bool(connector.options.immediate)
        self.connecter = Connecter(self)
        #: ZMQ_CONNECT_ROUTING_ID: the name the connecting ROUTER gave this peer when its
        #: connect attached the pipe (router_t::identify_peer), kept across handshakes
        self.connect_routing_id: str | None = None
        if not self.immediate:
            self._create_connect_pipes()
        self.connecter.attempt()

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

    # -- connected ------------------------------------------------------------------------

    def engine_ready(self, binder: Socket, accept_io: IoThread) -> None:
        """The handshake with ``binder`` completed (``session_base_t::engine_ready`` on
        both sides): the bind side's session and pipes, an engine each, a ``Link``."""
        if binder.type not in self.connector.traits.valid_peers:
            self._types_refused(binder)
            return
        self.links += 1
        provisional = self.b_peer
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
        if link.liveness is not None:
            link.liveness.stop()
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
        if b_session.engine_error(RULE_DISCONNECT) and self.b_session is b_session:
            self.b_session = None
        # connect side
        c_session = link.c_session
        if c_session.terminating:
            c_session.gone()
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
            self.connecter.reconnect()

    def _go_silent(self, link: Link, dead: Engine) -> None:
        """``dead``'s host crashed: its engine stops and its kernel sends nothing more (the
        flow from it closes, so the peer gets no ACK), and nothing reaches it while its links
        are down. The peer's side lives on, unaware: its TCP retransmits, backing off; its
        socket keeps queueing. It learns only by a reset when something of its reaches the
        restarted host (``network.Flow.arrived``), by heartbeats or keepalive
        (``liveness.Liveness``), or when TCP gives up (``tcp_retries2``); then the connection
        breaks (``link_broken``) and what each side held is recorded lost."""
        out = link.c2b if dead is link.c_engine else link.b2c
        into = link.b2c if dead is link.c_engine else link.c2b
        dead.shutdown()
        flow = getattr(out, "flow", None)
        if flow is not None:
            flow.close()
        flow = getattr(into, "flow", None)
        if flow is not None:
            flow.dead_receiver = True

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
        self.connecter.stop()

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
                self.connecter.listener_gone()
                return
        session.terminate(sock, discard, rule, keep_inbound)

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

    def serves(self, sock: Socket) -> bool:
        return (self.b_session is not None and self.b_session.socket is sock) or self.connecter.binder is sock

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

    def crash_side(self, sock: Socket, silent: bool = False) -> None:
        """The process of ``sock`` died: no linger, its kernel data is gone, the peer sees a
        reset. With its host (``silent``, a connection across a link): its kernel answers
        nothing, so the peer is told nothing now (``_go_silent``)."""
        link = self.link
        if link is not None and not link.broken:
            if silent and self.path is not None:
                self._go_silent(link, link.c_engine if sock is self.connector else link.b_engine)
            else:
                self.link_broken(link, "crash", None, rule=RULE_CRASH)
        session = self.c_session if sock is self.connector else self.b_session
        if sock is self.connector:
            self._stop_connecting()
        if session is not None:
            session.crash(sock, RULE_CRASH)
