"""Connections between sockets, split by concept.

* ``inproc``: one shared pipe per direction (``ctx_t::connect_inproc_sockets``);
* ``engine``: kernel socket buffers and the ZMTP stream engines of tcp/ipc;
* ``stream``: tcp/ipc connections, sessions, handshakes, reconnects and linger;
* ``losses``: what a closing, broken or conflating connection does to the messages it
  holds, written to the ledger once each.

Transports are given a ``Context`` (pipes, endpoints, ledger), never the ``World``.
"""

from .engine import Engine, Wire
from .inproc import InprocConnection
from .losses import in_flight
from .stream import Link, Session, StreamConnection

__all__ = ["Engine", "InprocConnection", "Link", "Session", "StreamConnection", "Wire", "in_flight"]
