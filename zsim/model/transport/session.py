"""A connection's session: the I/O-thread end of one socket's two pipes (``session_base_t``).

libzmq splits a tcp or ipc connection three ways: the connecter makes the TCP connection
and retries (``stream_connecter_base_t``, here ``connecter.Connecter``), the engine moves
bytes between the kernel and the pipes (``stream_engine_base_t``, ``engine.Engine``), and
the session owns the socket's pipes on the connection and outlives its engines: it is made
at ``connect()`` (the connect side) or at the accept (the bind side), gets an engine for
each established connection, and ends as LINGER says (``session_base_t::process_term``).
This module is that session; ``stream.StreamConnection`` ties the three together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..context import IoThread
from ..fates import RULE_LINGER
from ..peer import Peer
from ..pipe import Message, Pipe, PipeEndpoint
from ..socket import Socket
from .losses import record_discarded, record_lost, wire_messages

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine
    from .stream import Link, StreamConnection


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
            self.close()

    def finish(self) -> None:
        """The session is gone: its I/O thread serves one session less."""
        if not self.done:
            self.done = True
            self.io_thread.load -= 1

    # -- ending ----------------------------------------------------------------------------

    def terminate(self, sock: Socket, discard: bool, rule: int, keep_inbound: bool = False) -> None:
        """``session_base_t::process_term``: its socket closed, disconnected or unbound.
        What came in and was not read is lost (``rule``), unless ``keep_inbound``: then the
        socket still reads it up to the delimiter. What the socket sent goes out as LINGER
        says: all of it (-1), none (0, or ``discard``), or what the engine takes before
        LINGER ms (the rest under ``rule``); then the fd closes (``close``)."""
        if self.terminating:
            return
        self.terminating = True
        peer = self.peer
        in_pipe = self.in_pipe
        if keep_inbound and in_pipe is not None and in_pipe.queue and sock.is_open and peer is not None:
            # the socket end waits for the delimiter (pipe_t::process_pipe_term with
            # _delay): what came in is still read, then the peer is forgotten
            in_pipe.mark_delimited()
            sock.post_peer_closing(peer)
        else:
            # Inbound messages the application never read are gone with the socket.
            if in_pipe is not None:
                record_lost(self.ctx, in_pipe.drain(), sock.index, in_pipe.index, rule)
            if peer is not None:
                sock.detach(peer)
        out_pipe = self.out_pipe
        linger = sock.options.linger
        if out_pipe is None:
            self.close()
            return
        out_pipe.mark_delimited()
        engine = self.engine
        if discard or linger == 0:
            self._discard_out(sock, rule)
            return
        if not out_pipe.queue and (engine is None or not engine.out_batch):
            self.close()
            return
        if engine is not None:
            engine.kick_out()
        if linger > 0:
            self.linger_timer = self.ctx.env.timer(lambda: self._linger_expired(sock, rule))
            self.linger_timer.arm(linger / 1000.0)

    def _discard_out(self, sock: Socket, rule: int) -> None:
        out_pipe = self.out_pipe
        if out_pipe is not None:
            record_lost(self.ctx, out_pipe.drain(), sock.index, out_pipe.index, rule)
        self.close()

    def _linger_expired(self, sock: Socket, rule: int) -> None:
        if not self.done:
            self._discard_out(sock, rule)

    def close(self) -> None:
        """The closing side's engine has everything (or LINGER gave up): the fd closes."""
        if self.done:
            return
        self.finish()
        if self.linger_timer is not None:
            self.linger_timer.cancel()
        engine = self.engine
        link = cast("Link", engine.link) if engine is not None else None
        if engine is not None and link is not None and not link.broken:
            # The last batch goes to the kernel; the fd is closed after it (FIN).
            now = self.ctx.clock.now
            out_wire = engine.out_wire
            if engine.out_batch:
                out_wire.push_last(engine.out_batch)
                engine.drop_output()
                out_wire.observe(now)
            engine.shutdown()
            self.engine = None
            # Whatever the peer sent us and we never decoded is lost.
            sock = self.socket
            in_index = self.in_pipe.index if self.in_pipe is not None else -1
            lost = engine.undecoded() + wire_messages(engine.in_wire, engine)
            record_lost(self.ctx, lost, sock.index, in_index, RULE_LINGER)
            engine.in_wire.clear()
            engine.drop_input()
            engine.in_wire.observe(now)
            # the link lives on until the other side reads EOF
            other = link.b_engine if engine is link.c_engine else link.c_engine
            other.peer_closed()
        self.socket.process.session_closed(self)

    def gone(self) -> None:
        """The connect side's session, terminating, lost its connection: nothing is left
        for it to send."""
        self.finish()
        self.socket.process.session_closed(self)

    def engine_error(self, rule: int) -> bool:
        """The bind side's session after its engine failed (``session_base_t::
        engine_error`` -> ``terminate``): what the socket queued for the peer is discarded
        (``rule``); what came in is read up to the delimiter if the socket is open, else
        lost. False if it had ended already."""
        peer = self.peer
        if peer is None or self.done:
            return False
        self.finish()
        binder = self.socket
        out_pipe, in_pipe = self.out_pipe, self.in_pipe
        if out_pipe is not None:
            binder.discarded += record_discarded(self.ctx, out_pipe.drain(), binder.index, out_pipe.index, rule)
        if in_pipe is not None and in_pipe.queue and binder.is_open:
            # readable until the delimiter
            in_pipe.mark_delimited()
            binder.post_peer_closing(peer)
        else:
            if in_pipe is not None and in_pipe.queue:
                record_lost(self.ctx, in_pipe.drain(), binder.index, in_pipe.index, RULE_LINGER)
            binder.post_detach(peer)
        return True

    def crash(self, sock: Socket, rule: int) -> None:
        """Its process died: what its pipes hold is lost (``rule``), no LINGER."""
        for pipe in (self.out_pipe, self.in_pipe):
            if pipe is not None and pipe.queue:
                record_lost(self.ctx, pipe.drain(), sock.index, pipe.index, rule)
        self.finish()
        self.terminating = True
        if self.peer is not None:
            sock.detach(self.peer)
