"""What the world asks of a connection, inproc or stream: one interface, no ``isinstance``.

libzmq has no such class (an inproc connect is a pipe pair the context hands over, a tcp
connect a session with its connecter); the world here keeps both in one list and closes,
crashes and accounts for them alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..fates import RULE_LINGER
from ..peer import Peer
from ..pipe import Pipe
from ..socket import Socket


class Lingering(Protocol):
    """A session that may outlive its socket's close (LINGER): the process waits for it."""

    done: bool


class Connection:
    """A connection from ``connector`` to ``endpoint`` (``InprocConnection``, ``StreamConnection``)."""

    connector: Socket
    endpoint: Any  # zsim.spec.Endpoint: its text, transport, address and key

    def close_side(self, sock: Socket, discard: bool = False, rule: int = RULE_LINGER, keep_inbound: bool = False) -> None:
        """``sock`` closed (``zmq_close``), or ended this connection (``zmq_disconnect``,
        ``zmq_unbind``): its side of the connection goes, with LINGER; what it holds is
        recorded under ``rule``. ``keep_inbound``: the socket stays and reads what came in
        up to the delimiter (an unbind's accepted session)."""
        raise NotImplementedError

    def update_hwms(self, sock: Socket) -> None:
        """``sock`` changed SNDHWM/RCVHWM: its pipes on this connection take them
        (``socket_base_t::update_pipe_options``: ``pipe_t::set_hwms`` on its end,
        ``send_hwms_to_peer`` for the other end)."""
        raise NotImplementedError

    def crash_side(self, sock: Socket, silent: bool = False) -> None:
        """The process of ``sock`` died: no linger, no flush (``silent``: with its host, whose
        kernel answers nothing, so the peer is not told)."""
        raise NotImplementedError

    def refuse(self, peer: Peer) -> None:
        """``peer``'s socket refused the connection (``pair_t``'s second peer)."""
        raise NotImplementedError

    def release(self, peer: Peer, rule: int) -> None:
        """``peer``'s socket terminates its pipes of this connection and stays open
        (``pipe_t::terminate (true)``: a ROUTER handing a routing id over to a new peer).
        What the socket had not read is dropped by ``rule``; what it had queued still
        goes out."""
        raise NotImplementedError

    def on_delimiter(self, pipe: Pipe) -> None:
        """A socket read ``pipe`` up to the delimiter."""
        raise NotImplementedError

    def serves(self, sock: Socket) -> bool:
        """``sock`` is the bind side of this connection although the world did not list it
        there (a tcp/ipc listener learns of a connection at the handshake)."""
        return False

    def lingering(self, sock: Socket) -> list[Lingering]:
        """The sessions of ``sock`` on this connection that may linger after its close."""
        return []

    def destination(self, pipe: Pipe, bound_at: Callable[[Any], int]) -> int:
        """The index of the socket ``pipe`` (one of this connection's, not read by a socket)
        carries messages to, or -1; ``bound_at(endpoint)`` is the socket bound there."""
        raise NotImplementedError
