"""Connections between sockets, split by concept.

* ``connection``: what the world asks of every connection;
* ``inproc``: one shared pipe per direction (``ctx_t::connect_inproc_sockets``);
* ``engine``: kernel socket buffers and the ZMTP stream engines of tcp/ipc;
* ``connecter``: a tcp/ipc connect's attempts, handshakes and reconnects
  (``stream_connecter_base_t``);
* ``session``: a socket's end of a tcp/ipc connection and its linger (``session_base_t``);
* ``stream``: tcp/ipc connections: the connecter, the sessions and the engines together;
* ``losses``: what a closing, broken or conflating connection does to the messages it
  holds, written to the ledger once each.

Transports are given a ``Context`` (pipes, endpoints, ledger), never the ``World``.
"""

from .connection import Connection, Lingering
from .engine import Engine, Wire
from .inproc import InprocConnection
from .losses import in_flight
from .session import Session
from .stream import Link, StreamConnection

__all__ = ["Connection", "Engine", "InprocConnection", "Lingering", "Link", "Session", "StreamConnection", "Wire", "in_flight"]
