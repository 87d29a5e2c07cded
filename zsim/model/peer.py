"""What a socket knows about one connection (``Peer``) and subscription sets.

Below the routing policies and the socket: a policy routes over peers, a socket keeps a
list of them, a transport creates them. ``Peer.socket`` is typed as ``Any`` on purpose:
the peer is owned by its socket, and nothing here calls it.
"""

from __future__ import annotations

from typing import Any, Protocol

from .pipe import Pipe


class Subscriptions:
    """A set of topic prefixes (libzmq's mtrie for one pipe, or a SUB's own list)."""

    __slots__ = ("prefixes", "all")

    def __init__(self, prefixes: tuple[str, ...] = ()) -> None:
        self.prefixes: dict[str, int] = {}
        self.all = False
        for prefix in prefixes:
            self.add(prefix)

    def add(self, prefix: str) -> bool:
        """Add one reference; true if the prefix is new."""
        count = self.prefixes.get(prefix, 0)
        self.prefixes[prefix] = count + 1
        if prefix == "":
            self.all = True
        return count == 0

    def remove(self, prefix: str) -> bool:
        """Remove one reference; true if the prefix is gone."""
        count = self.prefixes.get(prefix, 0)
        if count <= 0:
            return False
        if count == 1:
            del self.prefixes[prefix]
            if prefix == "":
                self.all = False
            return True
        self.prefixes[prefix] = count - 1
        return False

    def set_once(self, prefix: str) -> bool:
        """mtrie per pipe: a pipe is in a prefix's set at most once."""
        if prefix in self.prefixes:
            return False
        return self.add(prefix)

    def matches(self, topic: str) -> bool:
        if self.all:
            return True
        for prefix in self.prefixes:
            if topic.startswith(prefix):
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self.prefixes)


class RemoteEnd(Protocol):
    """The far end of a connection as a ``Peer`` sees it: a ``Socket``, or the stand-in
    for the binder of an inproc connect that nobody has bound yet."""

    name: str
    own_subs: Subscriptions | None

    @property
    def routing_id(self) -> str | None:
        """Its routing id; None while it is not known (``UnboundEnd``)."""


class Peer:
    """What one socket knows about one connection: its two pipes and routing state."""

    __slots__ = (
        "socket",
        "remote",
        "conn",
        "out_pipe",
        "in_pipe",
        "attached",
        "applied",
        "remote_subs",
        "routing_key",
        "alive",
        "in_fq",
        "listed",
    )

    def __init__(self, socket: Any, remote: RemoteEnd, conn: Any) -> None:
        self.socket = socket
        self.remote: RemoteEnd = remote
        self.conn = conn
        self.out_pipe: Pipe | None = None
        self.in_pipe: Pipe | None = None
        self.attached = False
        self.listed = False  # in its socket's ``peers`` (a flag: a list scan is O(peers))
        self.applied = Subscriptions()  # subscriptions received from this peer (PUB side)
        # What the subscriber wants, to tell "not subscribed yet" from "not wanted".
        self.remote_subs: Subscriptions | None = remote.own_subs
        # the routing id the remote end presented (what a ROUTER files the peer under);
        # None until it arrives: a connect learns it at the handshake (tcp, ipc) or when
        # somebody binds the name (inproc)
        self.routing_key: str | None = remote.routing_id
        self.alive = True
        self.in_fq = False

    def __repr__(self) -> str:
        return f"<Peer {self.socket.name}->{self.remote.name} attached={self.attached}>"


class UnboundEnd:
    """The far end of a connect that nobody has bound yet: an inproc name still pending
    (``ctx_t::pend_connection``) or a tcp/ipc endpoint before the handshake names it.

    It has no routing id yet: libzmq's engine pushes the peer's routing id into the pipe
    after the handshake (``stream_engine_base_t::mechanism_ready``), and the context
    writes the binder's when the name is bound (``ctx_t::connect_inproc_sockets``)."""

    def __init__(self, endpoint: Any) -> None:
        self.name: str = endpoint.text
        self.routing_id: str | None = None
        self.own_subs: Subscriptions | None = None
