"""inproc connections (``socket_base_t::connect_internal``, ``ctx_t::connect_inproc_sockets``).

One pipe per direction shared by both sockets; its HWM is the connector's SNDHWM plus the
binder's RCVHWM (0 = unlimited if either is 0). Connect-before-bind makes the pipes with
the connector's own HWMs and raises them to the sums at bind time. The binder learns of
the pipe through a ``bind`` command at its next command processing.

There is no session, so no LINGER: a socket that closes leaves what it sent readable by its
peer up to the delimiter. A connect nobody has bound yet is the context's
(``ctx_t::pend_connection``): if its socket closes first, the pipe with its messages and
delimiter waits for whoever binds the name (``ctx_t::connect_pending``), and goes only with
the context (``ctx_t::terminate``: ``World.drop_pending_inproc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...constants import compute_lwm
from ..context import Context
from ..fates import RULE_CRASH, RULE_LINGER
from ..peer import Peer, UnboundEnd
from ..pipe import Pipe
from ..socket import Socket
from .connection import Connection
from .losses import drop_displaced, record_lost


def _sum_hwm(a: int, b: int) -> int:
    """``pipe_t::set_hwms`` with boost: unlimited if either side is unlimited."""
    if a <= 0 or b <= 0:
        return 0
    return a + b


def _boosted(hwm: int, boost: int) -> int:
    """``pipe_t::set_hwms`` of one direction: ``hwm + max(boost, 0)``, unlimited (0) when
    either is 0 (a boost of -1, none, leaves the HWM as it is)."""
    if hwm <= 0 or boost == 0:
        return 0
    return hwm + max(boost, 0)


class InprocConnection(Connection):
    """An inproc connection: two shared pipes, no session, no engine."""

    transport = "inproc"

    def __init__(self, ctx: Context, connector: Socket, endpoint: Any, binder: Socket | None) -> None:
        self.ctx = ctx
        self.endpoint = endpoint
        self.connector = connector
        self.binder: Socket | None = None
        self.closed = False
        opts = connector.options
        # get_effective_conflate_option on the connector only, for both directions
        self.conflate = bool(opts.conflate) and connector.traits.conflate
        self.c2b: Pipe | None = None
        self.b2c: Pipe | None = None
        self.c_peer: Peer | None = None
        self.b_peer: Peer | None = None
        # each end's set_hwms_boost: the other socket's (sndhwm, rcvhwm) when the pipes
        # were attached to both (socket_base_t::connect_internal, ctx_t::connect_inproc_sockets)
        self.c_boost: tuple[int, int] = (-1, -1)
        self.b_boost: tuple[int, int] = (-1, -1)
        # ZMQ_CONNECT_ROUTING_ID: the name the connecting ROUTER gives this peer, for good
        # (router_t::identify_peer of the pipe the connect attaches)
        self.connect_routing_id = connector.take_connect_routing_id()
        if binder is not None:
            self._create(binder, pending=False)
            binder.add_pending_peer(self.b_peer)  # type: ignore[arg-type]
            connector.attach(self.c_peer)  # type: ignore[arg-type]
            binder.post_attach(self.b_peer)  # type: ignore[arg-type]
        else:
            self._create(None, pending=True)
            connector.attach(self.c_peer)  # type: ignore[arg-type]
            ctx.pending_inproc.setdefault(endpoint.key, []).append(self)

    def _create(self, binder: Socket | None, pending: bool) -> None:
        ctx = self.ctx
        c = self.connector
        if pending or binder is None:
            c2b_hwm, b2c_hwm = c.options.sndhwm, c.options.rcvhwm
        else:
            c2b_hwm = _sum_hwm(c.options.sndhwm, binder.options.rcvhwm)
            b2c_hwm = _sum_hwm(binder.options.sndhwm, c.options.rcvhwm)
        to_name = binder.name if binder is not None else self.endpoint.text
        self.c2b = ctx.new_pipe(f"{c.name}->{to_name}", c.name, to_name, "inproc", c2b_hwm, c, binder, self.conflate, self)
        self.b2c = ctx.new_pipe(f"{to_name}->{c.name}", to_name, c.name, "inproc", b2c_hwm, binder, c, self.conflate, self)
        if self.conflate:
            drop_displaced(self.ctx, self.c2b, c)
            if binder is not None:
                drop_displaced(self.ctx, self.b2c, binder)
        self.c_peer = Peer(c, binder if binder is not None else UnboundEnd(self.endpoint), self)
        self.c_peer.out_pipe, self.c_peer.in_pipe = self.c2b, self.b2c
        if self.connect_routing_id is not None:
            self.c_peer.routing_key = self.connect_routing_id
        if binder is not None:
            self._make_binder_peer(binder)

    def _make_binder_peer(self, binder: Socket) -> None:
        self.binder = binder
        c = self.connector
        self.c_boost = (binder.options.sndhwm, binder.options.rcvhwm)
        self.b_boost = (c.options.sndhwm, c.options.rcvhwm)
        self.b_peer = Peer(binder, c, self)
        self.b_peer.out_pipe, self.b_peer.in_pipe = self.b2c, self.c2b
        # Now that the binder is known, the connector's peer can see its routing id.
        peer = self.c_peer
        assert peer is not None  # _create made it before any binder could appear
        peer.remote = binder
        if self.connect_routing_id is None:
            peer.routing_key = binder.routing_id
        peer.remote_subs = binder.own_subs

    def bound(self, binder: Socket) -> None:
        """``ctx_t::connect_inproc_sockets`` for a connection made before the bind."""
        c = self.connector
        assert self.c2b is not None and self.b2c is not None
        self.c2b.hwm = _sum_hwm(c.options.sndhwm, binder.options.rcvhwm)
        self.c2b.lwm = compute_lwm(self.c2b.hwm)
        self.b2c.hwm = _sum_hwm(binder.options.sndhwm, c.options.rcvhwm)
        self.b2c.lwm = compute_lwm(self.b2c.hwm)
        self.c2b.reader = binder
        self.b2c.writer = binder
        self.ctx.rename_pipe(self.c2b, f"{c.name}->{binder.name}", to=binder.name)
        self.ctx.rename_pipe(self.b2c, f"{binder.name}->{c.name}", frm=binder.name)
        if self.conflate:
            drop_displaced(self.ctx, self.b2c, binder)
        peer = self.c_peer
        assert peer is not None
        arrives = peer.routing_key is None and peer.attached
        self._make_binder_peer(binder)
        b_peer = self.b_peer
        assert b_peer is not None
        # The bind side processes the bind command inside its own bind() call.
        binder.attach(b_peer)
        if not c.is_open:
            # The connector closed before the bind: the pipe comes terminated (the
            # binder reads it to the delimiter and can never write to it), which the
            # binder learns at its next command processing, after every pending
            # connection of this bind() is attached (a PAIR keeps the first)
            binder.post_peer_closing(b_peer)
        elif arrives and c.traits.prepends_identity:
            # connect_inproc_sockets writes the binder's routing id into the pipe a ROUTER
            # connector reads (send_routing_id, if the connector is still open): it
            # identifies the binder when it processes that activate_read
            c.post_activate_read(self.b2c)

    def refuse(self, peer: Peer) -> None:
        self.close_side(peer.socket, discard=True)

    def release(self, peer: Peer, rule: int) -> None:
        """inproc has no session: the socket's end terminates as at its close, and the
        peer reads what is left up to the delimiter (``pipe_t::terminate``)."""
        self.close_side(peer.socket, rule=rule)

    # -- termination -------------------------------------------------------------------

    def update_hwms(self, sock: Socket) -> None:
        """``pipe_t::set_hwms`` with the boosts of an inproc pipe pair: this end writes up to
        its SNDHWM plus the peer's RCVHWM and reads with the LWM of its RCVHWM plus the
        peer's SNDHWM, the peer's at the time the pipes were made (``set_hwms_boost``); the
        other end gets ``set_hwms(SNDHWM, RCVHWM)`` of this socket with its own boosts
        (``send_hwms_to_peer``), this socket's values at that time: libzmq 4.3.5 takes this
        socket's RCVHWM, not the peer's SNDHWM, for the peer's writes to it."""
        if self.conflate or self.c2b is None or self.b2c is None or self.binder is None:
            return
        if sock is self.connector:
            mine, out_pipe, in_pipe, boost, peer_boost = self.c_peer, self.c2b, self.b2c, self.c_boost, self.b_boost
        elif sock is self.binder:
            mine, out_pipe, in_pipe, boost, peer_boost = self.b_peer, self.b2c, self.c2b, self.b_boost, self.c_boost
        else:
            return
        if mine is None or not mine.attached:
            # socket_base_t::update_pipe_options walks the pipes the socket has attached: a
            # bind side that has not processed its "bind" command yet keeps the pipe's HWMs
            return
        options = sock.options
        # this end: set_hwms(rcvhwm, sndhwm) with boost (peer sndhwm, peer rcvhwm)
        out_pipe.hwm = _boosted(options.sndhwm, boost[1])
        in_pipe.lwm = compute_lwm(_boosted(options.rcvhwm, boost[0]))
        # the peer end: set_hwms(sndhwm, rcvhwm) of this socket, with the peer end's boost
        # (this socket's options when the pipes were made)
        in_pipe.hwm = _boosted(options.rcvhwm, peer_boost[1])
        out_pipe.lwm = compute_lwm(_boosted(options.sndhwm, peer_boost[0]))

    def close_side(self, sock: Socket, discard: bool = False, rule: int = RULE_LINGER, keep_inbound: bool = False) -> None:
        """``sock`` closed or disconnected: its unread inbound messages are lost; its
        outbound ones stay readable by the peer until the delimiter, whatever its LINGER
        (inproc has no session: ``socket_base_t::process_term`` terminates the pipe, and the
        peer's pipe waits for its reader to reach the delimiter, ``pipe_t::process_pipe_term``;
        ``keep_inbound`` does not arise: an inproc unbind ends no connection).

        A connect nobody has bound yet keeps them too: the context holds the pending
        connection, pipe and delimiter, for whoever binds the name later
        (``ctx_t::pend_connection``, ``connect_inproc_sockets``), until the context ends
        (``drop_pending``)."""
        if self.closed:
            return
        ctx = self.ctx
        mine = self.c_peer if sock is self.connector else self.b_peer
        other = self.b_peer if sock is self.connector else self.c_peer
        if mine is None:
            return
        out_pipe, in_pipe = mine.out_pipe, mine.in_pipe
        sock.detach(mine)
        if in_pipe is not None:
            record_lost(ctx, in_pipe.drain(), sock.index, in_pipe.index, rule)
        if other is None and not discard:
            if out_pipe is not None:
                out_pipe.mark_delimited()
            return
        if other is None or not other.socket.is_open or discard:
            if out_pipe is not None:
                record_lost(ctx, out_pipe.drain(), sock.index, out_pipe.index, rule)
            if other is not None:
                other.socket.detach(other)
            self.closed = True
            return
        if out_pipe is not None:
            out_pipe.mark_delimited()
            if not out_pipe.queue:
                self.on_delimiter(out_pipe)
        # The peer can no longer write to us; it learns so at its next command processing.
        other.socket.post_peer_closing(other)

    def drop_pending(self, rule: int) -> None:
        """The connector's context ends with this connect still unbound: ``ctx_t::terminate``
        binds a PAIR to the name and closes it, and what the pipe holds goes with it."""
        if self.closed or self.binder is not None:
            return
        if self.connector.is_open:
            self.close_side(self.connector, discard=True, rule=rule)
            return
        pipe = self.c2b
        if pipe is not None:
            record_lost(self.ctx, pipe.drain(), self.connector.index, pipe.index, rule)
        self.closed = True

    def crash_side(self, sock: Socket, silent: bool = False) -> None:
        """Both pipes are gone with the process: what they hold is lost."""
        self.close_side(sock, discard=True, rule=RULE_CRASH)

    def on_delimiter(self, pipe: Pipe) -> None:
        """The reader consumed everything up to the delimiter: the pipe pair is gone."""
        other = self.b_peer if pipe is self.c2b else self.c_peer
        if other is not None and other.alive:
            other.socket.post_detach(other)
        self.closed = True

    def destination(self, pipe: Pipe, bound_at: Callable[[Any], int]) -> int:
        """A pipe with no reader yet: the connector's is meant for whoever binds the name."""
        if pipe.writer is self.connector:
            return self.binder.index if self.binder is not None else bound_at(self.endpoint)
        return self.connector.index
