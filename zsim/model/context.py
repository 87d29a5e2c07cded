"""The services every socket, connection and workload of one run shares: ``ctx_t``'s part.

libzmq's ``ctx_t`` owns the endpoint registry (``register_endpoint``, pending inproc
connects) and gives each socket its mailbox and I/O threads; the OS owns the listening
sockets. ``Context`` is that part of the simulated world: the clock, the parameters, the
ledger and random streams, the registry of pipes (their index in the records), of
listeners and of connects waiting for one, message ids, and the wake-up bookkeeping of
threads. Sockets and transports are given a ``Context``; only ``World`` (processes and
socket lifecycles, above them) knows every socket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .kernel import Environment
from .params import ModelParams, params_of
from .pipe import Pipe, WakeGroup
from .sink import LedgerSink


class PipeInfo:
    """Static description of a pipe for results (``from``, ``to``, kind)."""

    __slots__ = ("pipe", "name", "frm", "to", "kind")

    def __init__(self, pipe: Pipe, name: str, frm: str, to: str, kind: str) -> None:
        self.pipe = pipe
        self.name = name
        self.frm = frm
        self.to = to
        self.kind = kind


class IoThread:
    """One of a context's I/O threads (``io_thread_t``, ``[[process]] io_threads``): the
    thread that runs the sessions, connecters and engines of its connections.

    ``load`` is what ``ctx_t::choose_io_thread`` compares: libzmq counts the file
    descriptors in the thread's poller; here, the tcp/ipc sessions the thread serves (a
    connect's from ``connect()`` on, an accepted connection's from the accept), which is
    that count without the listeners and without the lag before a new descriptor is
    registered. ``handshakes_until`` is when the last handshake it serves completes: its
    poller serves events one at a time in the order they come, so a handshake started
    after another on the same thread does not complete before it
    (``stream.StreamConnection._attempt``). ``cpu`` is the ``cpu.Thread`` it runs on
    (``[machine] cores``), None for a core of its own."""

    __slots__ = ("name", "load", "handshakes_until", "cpu")

    def __init__(self, name: str) -> None:
        self.name = name
        self.load = 0
        self.handshakes_until = float("-inf")
        self.cpu: Any = None


def choose_io_thread(threads: list[IoThread]) -> IoThread:
    """``ctx_t::choose_io_thread``: the least loaded thread (the first of equals), whose
    load grows by the session it now serves (``IoThread.load``)."""
    chosen = threads[0]
    for thread in threads:
        if thread.load < chosen.load:
            chosen = thread
    chosen.load += 1
    return chosen


class Context:
    """Shared services of one simulation run (see the module docstring)."""

    def __init__(self, env: Environment, params: ModelParams, ledger: LedgerSink, streams: Callable[[str], np.random.Generator]) -> None:
        self.env = env
        self.clock = env.clock  # the time as a C double: see kernel.Clock
        self.params = params
        self.ledger = ledger
        self.stream = streams
        self.pipes: list[Pipe] = []
        self.pipe_info: list[PipeInfo] = []
        self.links: list[Any] = []  # tcp/ipc links (zsim.model.transport.Link), for results
        # endpoint key -> the socket listening there (ctx_t endpoints / the OS's listeners)
        self.listeners: dict[tuple[str, str, str], Any] = {}
        # inproc connects made before anybody bound the name (ctx_t::pending_connections)
        self.pending_inproc: dict[tuple[str, str, str], list[Any]] = {}
        # tcp/ipc connects retrying until a listener appears (their ``Connecter``s)
        self.waiting_connects: dict[tuple[str, str, str], list[Any]] = {}
        self.next_message_id = 0
        #: messages the applications sent (``AppThread``: a C counter, read by the run's summary)
        self.n_sent = 0
        self.trace_depth = False
        self.waking = False  # an application thread's wake-up is running (no recursion)
        # what the running application call owes for waking threads: pipes add to it
        # (Pipe.write), the call's AppThread clears it before and reads it after
        self.wake_debt = 0.0
        self.wake_groups: dict[Any, WakeGroup] = {}
        self.until_s: float | None = None
        #: the links between hosts (``transport.network.Network``); None: one machine
        self.network: Any = None
        #: every application thread's calls (``zsim.model.appthread.AppThread``), for what
        #: is still blocked when the run ends
        self.app_threads: list[Any] = []

    def new_pipe(self, name: str, frm: str, to: str, kind: str, hwm: int, writer: Any, reader: Any, conflate: bool, owner: Any) -> Pipe:
        pipe = Pipe(self.env, name, hwm, writer, reader, conflate, index=len(self.pipes))
        pipe.owner = owner
        # an application thread writing to a pipe whose reader is another thread pays for
        # waking it: inproc (the peer's application thread), tcp/ipc "send" pipes (the I/O
        # thread); an I/O thread writing a "recv" pipe is not charged. The pipes one
        # thread reads share its sleep state (see Pipe.wake_group):
        # an inproc pipe is read by its reading socket's thread, a "send" pipe by the
        # writer's process's I/O thread (one per context, libzmq's default io_threads=1)
        # the cost is the writing thread's machine's (its process's host's profile)
        params = params_of(getattr(writer, "process", None), self.params)
        if kind == "inproc":
            pipe.wake_cost = params.transport("inproc").wake_cost
            group_key: Any = ("app", id(reader))
        elif kind == "send":
            transport = getattr(owner, "transport", None)
            if transport in ("tcp", "ipc"):
                pipe.wake_cost = params.transport(transport).wake_cost
            group_key = ("io", getattr(writer, "process", None))
        if pipe.wake_cost is not None:
            pipe.debt = self
            group = self.wake_groups.get(group_key)
            if group is None:
                group = self.wake_groups[group_key] = WakeGroup()
            pipe.wake_group = group
        if self.trace_depth:
            pipe.trace = []
        self.pipes.append(pipe)
        self.pipe_info.append(PipeInfo(pipe, name, frm, to, kind))
        return pipe

    def term_endpoint(self, sock: Any, endpoint: Any) -> None:
        """The ``term_endpoint`` command a session sends its socket when it will not
        reconnect (``session_base_t::reconnect`` with RECONNECT_IVL <= 0): the socket lets
        the endpoint go as ``zmq_disconnect`` does. Only the world knows a socket's
        endpoints (``World.term_endpoint``)."""

    def rename_pipe(self, pipe: Pipe, name: str, frm: str | None = None, to: str | None = None) -> None:
        info = self.pipe_info[pipe.index]
        pipe.name = info.name = name
        if frm is not None:
            info.frm = frm
        if to is not None:
            info.to = to
