"""The simulated world: processes (contexts), sockets, endpoints, connections, pipes.

``World`` owns the registries that libzmq keeps in the context and the OS keeps in the
kernel (who listens on which endpoint, pending inproc connects, connects waiting for a
listener) and drives socket lifecycles: open (bind, then connect), close (linger), process
exit (close everything, wait for linger like ``zmq_ctx_term``) and crash.

Every message that ends anywhere is reported to ``ledger`` (a ``LedgerSink``); the model
keeps no per-message records of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .appthread import Workload
from .context import Context, IoThread
from .fates import RULE_APP_DISCONNECT, RULE_CRASH, RULE_DISCONNECT, RULE_LINGER, WHERE_PIPE
from .kernel import Environment
from .params import ModelParams
from .pipe import Message, Pipe
from .sink import LedgerSink
from .socket import CLOSED, OPEN, Socket, SocketOptions
from .sockets import new_socket
from .transport import Connection, InprocConnection, Lingering, StreamConnection, in_flight


class Process:
    """A ``[[process]]``: one context, its sockets and workloads, its exit and crash."""

    def __init__(self, world: World, name: str, index: int, io_threads: int = 1) -> None:
        self.world = world
        self.name = name
        self.index = index
        #: its context's I/O threads (``[[process]] io_threads``), named as the machine's
        #: threads are (``io.NAME``, or ``io.NAME.1``, ``io.NAME.2``, ... for several)
        self.io_threads = [IoThread(f"io.{name}" if io_threads == 1 else f"io.{name}.{number + 1}") for number in range(io_threads)]
        self.host = ""  # the [[host]] it runs on ("" the default host)
        #: its host's machine costs (``zsim.build.host_params``): its sockets' and workloads'
        self.params = world.params
        self.sockets: list[Socket] = []
        self.workloads: list[Workload] = []
        self.alive = True
        self.exiting = False
        self.exit_started_at: float | None = None
        self.exit_completed_at: float | None = None
        self.crashed_at: float | None = None
        self.pending_sessions: set[Lingering] = set()
        self.exit_after_sends = False
        self.on_exit: list[Callable[[], None]] = []

    def exit(self) -> None:
        """Close every socket and terminate the context (``zmq_ctx_term``), with LINGER."""
        if self.exiting or not self.alive:
            return
        self.exiting = True
        world = self.world
        self.exit_started_at = world.clock.now
        for workload in self.workloads:
            workload.stop()
        for sock in self.sockets:
            world.close_socket(sock)
        world.drop_pending_inproc(self, RULE_LINGER)
        self._check_done()

    def _check_done(self) -> None:
        if self.exiting and self.alive and not self.pending_sessions:
            self.alive = False
            self.exit_completed_at = self.world.clock.now
            for callback in self.on_exit:
                callback()

    def session_closed(self, session: Lingering) -> None:
        self.pending_sessions.discard(session)
        self._check_done()

    def crash(self, silent: bool = False) -> None:
        """The OS process dies: no linger, no flush (``silent``: with its host, whose kernel
        tells its peers nothing: ``StreamConnection.crash_side``)."""
        if not self.alive:
            return
        world = self.world
        self.crashed_at = world.clock.now
        for workload in self.workloads:
            workload.stop()
        for sock in self.sockets:
            world.crash_socket(sock, silent)
        world.drop_pending_inproc(self, RULE_CRASH)
        self.alive = False
        self.pending_sessions.clear()

    @property
    def term_blocked(self) -> bool:
        """``zmq_ctx_term`` still waiting (LINGER -1 and the peer does not take the data)."""
        return self.exiting and self.alive


class World(Context):
    """Processes, sockets and their lifecycles, over the shared ``Context``."""

    def __init__(self, env: Environment, params: ModelParams, ledger: LedgerSink, streams: Callable[[str], np.random.Generator]) -> None:
        super().__init__(env, params, ledger, streams)
        self.sockets: list[Socket] = []
        self.processes: list[Process] = []
        self.connections: list[Connection] = []
        self.socket_connections: dict[Socket, list[Connection]] = {}
        #: each socket's endpoints now (``bind``/``connect``/``disconnect``/``unbind`` change them)
        self.socket_endpoints: dict[Socket, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
        #: what each socket's program declares (binds, connects, options): a restart's
        self.declared: dict[Socket, tuple[tuple[Any, ...], tuple[Any, ...], SocketOptions]] = {}
        #: each host's parameters ("" the default host: ``params``), by ``zsim.build``
        self.host_params: dict[str, ModelParams] = {"": params}

    # -- construction ---------------------------------------------------------------------

    def add_process(self, name: str, io_threads: int = 1) -> Process:
        process = Process(self, name, len(self.processes), io_threads)
        self.processes.append(process)
        return process

    def add_socket(self, name: str, type_name: str, process: Process, options: SocketOptions, routing_id: str, bind: tuple[Any, ...],
                   connect: tuple[Any, ...]) -> Socket:
        sock = new_socket(self, len(self.sockets), name, type_name, process, options, routing_id)
        self.sockets.append(sock)
        process.sockets.append(sock)
        self.socket_endpoints[sock] = (bind, connect)
        self.declared[sock] = (bind, connect, options)
        self.socket_connections[sock] = []
        return sock

    def reset_socket(self, sock: Socket) -> None:
        """A restarted process makes its socket anew: the endpoints and options its program
        declares, not those later calls changed (``Socket.reset`` clears the rest)."""
        bind, connect, options = self.declared[sock]
        self.socket_endpoints[sock] = (bind, connect)
        sock.options = options
        sock.options_changed("")
        sock.reset()

    # -- socket lifecycle ------------------------------------------------------------------

    def open_socket(self, sock: Socket) -> None:
        """``zmq_socket`` + ``bind`` every endpoint + ``connect`` every endpoint."""
        self.open_binds(sock)
        self.open_connects(sock)

    def open_binds(self, sock: Socket) -> None:
        """Create the socket and bind its endpoints (scheduled before any connect due at
        the same instant, so that "open at 0" means listening before peers connect)."""
        if sock.state == OPEN or not sock.process.alive or sock.process.exiting:
            return
        sock.state = OPEN
        binds, _connects = self.socket_endpoints[sock]
        for endpoint in binds:
            self._bind(sock, endpoint)

    def open_connects(self, sock: Socket) -> None:
        if sock.state != OPEN:
            return
        _binds, connects = self.socket_endpoints[sock]
        for endpoint in connects:
            self._connect(sock, endpoint)

    def _bind(self, sock: Socket, endpoint: Any) -> None:
        """``zmq_bind`` of one endpoint: listen, and take the connects that waited for it."""
        key = endpoint.key
        self.listeners[key] = sock
        if endpoint.transport == "inproc":
            # ctx_t::connect_pending: every connect still pending, also those whose socket
            # closed meanwhile (their messages wait for this reader)
            for conn in self.pending_inproc.pop(key, []):
                if not conn.closed:
                    conn.bound(sock)
                    self.socket_connections[sock].append(conn)
        else:
            for connecter in self.waiting_connects.pop(key, []):
                connecter.listener_appeared()

    def _connect(self, sock: Socket, endpoint: Any) -> None:
        """``zmq_connect`` of one endpoint (``socket_base_t::connect``)."""
        if endpoint.transport == "inproc":
            binder = self.listeners.get(endpoint.key)
            if binder is not None and not binder.is_open:
                binder = None
            conn: Connection = InprocConnection(self, sock, endpoint, binder)
            if binder is not None:
                self.socket_connections[binder].append(conn)
        else:
            conn = StreamConnection(self, sock, endpoint, len(self.connections))
            binder = self.listeners.get(endpoint.key)
            if binder is not None:
                self.socket_connections[binder].append(conn)
        self.connections.append(conn)
        self.socket_connections[sock].append(conn)

    # -- calls a running program makes (``[[call]]``, ``AppSocket``) ---------------------

    def bind(self, sock: Socket, endpoint: Any) -> None:
        """``zmq_bind`` while the socket is open."""
        binds, connects = self.socket_endpoints[sock]
        self.socket_endpoints[sock] = (binds + (endpoint,), connects)
        self._bind(sock, endpoint)

    def connect(self, sock: Socket, endpoint: Any) -> None:
        """``zmq_connect`` while the socket is open."""
        binds, connects = self.socket_endpoints[sock]
        self.socket_endpoints[sock] = (binds, connects + (endpoint,))
        self._connect(sock, endpoint)

    def disconnect(self, sock: Socket, endpoint: Any, rule: int = RULE_APP_DISCONNECT) -> bool:
        """``zmq_disconnect`` (``socket_base_t::term_endpoint``): the connection goes as at a
        close, the socket stays. Messages read from the network and not yet by the
        application are thrown away; those it sent and the engine has not taken go as
        LINGER says (inproc: the peer reads them up to the delimiter, ``pipe_t::terminate
        (true)``). Each is recorded under ``rule`` (``app_disconnect``). False if the socket
        does not connect the endpoint (ENOENT)."""
        binds, connects = self.socket_endpoints[sock]
        if not any(e.key == endpoint.key for e in connects):
            return False
        self.socket_endpoints[sock] = (binds, tuple(e for e in connects if e.key != endpoint.key))
        mine = self.socket_connections[sock]
        for conn in [c for c in mine if c.connector is sock and c.endpoint.key == endpoint.key]:
            self._end_side(conn, sock, keep_inbound=False, rule=rule)
            mine.remove(conn)
        return True

    def term_endpoint(self, sock: Socket, endpoint: Any) -> None:
        """A connection that will not reconnect (RECONNECT_IVL <= 0) broke: when the socket
        processes the session's ``term_endpoint`` command it ends the endpoint as
        ``zmq_disconnect`` does (``socket_base_t::process_term_endpoint``): its pipes go,
        what they held under rule ``disconnect``, and a later ``zmq_connect`` of the
        endpoint is a new connection."""
        if sock.state == OPEN:
            self.disconnect(sock, endpoint, RULE_DISCONNECT)

    def unbind(self, sock: Socket, endpoint: Any) -> bool:
        """``zmq_unbind`` (``term_endpoint`` of a listener): no new connections. inproc: the
        name is unregistered, its connections stay (``ctx_t::unregister_endpoint``); tcp/ipc:
        the sessions the listener accepted terminate with it (its children), what they hold
        for the peer goes as LINGER says (rule ``app_disconnect``), what they brought in is
        still read up to the delimiter; their peers see the connection close and reconnect.
        False if the socket does not bind the endpoint (ENOENT)."""
        binds, connects = self.socket_endpoints[sock]
        if not any(e.key == endpoint.key for e in binds):
            return False
        self.socket_endpoints[sock] = (tuple(e for e in binds if e.key != endpoint.key), connects)
        if self.listeners.get(endpoint.key) is sock:
            del self.listeners[endpoint.key]
        if endpoint.transport != "inproc":
            for conn in self._connections_of(sock):
                if conn.connector is not sock and conn.endpoint.key == endpoint.key:
                    self._end_side(conn, sock, keep_inbound=True)
        return True

    def _end_side(self, conn: Connection, sock: Socket, keep_inbound: bool, rule: int = RULE_APP_DISCONNECT) -> None:
        before = conn.lingering(sock)
        conn.close_side(sock, rule=rule, keep_inbound=keep_inbound)
        for session in before:
            if not session.done:
                sock.process.pending_sessions.add(session)  # zmq_ctx_term waits for it, as for a close

    def subscribe(self, sock: Socket, prefix: str, subscribe: bool) -> None:
        """A ``[[call]]``'s subscribe/unsubscribe, as the type subscribes: a SUB (and an
        XPUB with XPUB_MANUAL) by ``setsockopt(ZMQ_SUBSCRIBE / ZMQ_UNSUBSCRIBE)``, an XSUB
        by sending the (un)subscription message (``xsub_t::xsend``: EINVAL is its answer
        to the option). The filter changes now and the message goes to every peer."""
        if not sock.xsetsockopt("subscribe" if subscribe else "unsubscribe", prefix):
            send_subscription = getattr(sock, "send_subscription", None)
            if send_subscription is not None:
                send_subscription(prefix, subscribe)

    def set_option(self, sock: Socket, name: str, value: Any) -> None:
        """``zmq_setsockopt`` while the socket is open: the option holds from now on where
        libzmq reads it (at the next connection, at close, at the next call); SNDHWM and
        RCVHWM also reach the pipes already attached (``socket_base_t::update_pipe_options``:
        ``pipe_t::set_hwms`` on this end, ``send_hwms_to_peer`` for the other)."""
        sock.options = dataclasses.replace(sock.options, **{name: value})  # type: ignore[type-var]
        sock.options_changed(name)
        if name in ("sndhwm", "rcvhwm"):
            for conn in self._connections_of(sock):
                conn.update_hwms(sock)

    def close_socket(self, sock: Socket) -> None:
        """``zmq_close``: unbind, stop its workloads, terminate every pipe with LINGER."""
        if sock.state != OPEN:
            return
        sock.state = CLOSED
        binds, _connects = self.socket_endpoints[sock]
        for endpoint in binds:
            if self.listeners.get(endpoint.key) is sock:
                del self.listeners[endpoint.key]
        for workload in list(sock.process.workloads):
            if workload.socket is sock:
                workload.stop()
        # calls of other threads still blocked on it (a stage's forward, a poll) end CLOSED
        _end_blocked_calls(sock)
        for conn in self._connections_of(sock):
            before = conn.lingering(sock)
            conn.close_side(sock, rule=RULE_LINGER)
            for session in before:
                if not session.done:
                    sock.process.pending_sessions.add(session)
        # unread inbound messages of peers still attached (pipes of other kinds)
        for peer in list(sock.peers):
            sock.detach(peer)
        sock.drop_held(RULE_LINGER)  # what it had read for its application goes with it

    def crash_socket(self, sock: Socket, silent: bool = False) -> None:
        if sock.state != OPEN:
            sock.state = CLOSED
            return
        sock.state = CLOSED
        sock.waiters.clear()  # the process died: so did every thread blocked on its sockets
        binds, _connects = self.socket_endpoints[sock]
        for endpoint in binds:
            if self.listeners.get(endpoint.key) is sock:
                del self.listeners[endpoint.key]
        for conn in self._connections_of(sock):
            conn.crash_side(sock, silent)
        for peer in list(sock.peers):
            sock.detach(peer)
        sock.drop_held(RULE_CRASH)

    def drop_pending_inproc(self, process: Process, rule: int) -> None:
        """``process``'s context ends (``zmq_ctx_term``, or the process died): the inproc
        connects of its sockets that nobody bound lose what they hold (``ctx_t::terminate``
        connects them to a PAIR it closes at once)."""
        for key, pending in list(self.pending_inproc.items()):
            kept = []
            for conn in pending:
                if conn.connector.process is process:
                    conn.drop_pending(rule)
                else:
                    kept.append(conn)
            if kept:
                self.pending_inproc[key] = kept
            else:
                del self.pending_inproc[key]

    def _connections_of(self, sock: Socket) -> list[Connection]:
        result = list(self.socket_connections.get(sock, []))
        for conn in self.connections:
            if conn not in result and conn.serves(sock):
                result.append(conn)
        return result

    def quiescent(self) -> bool:
        """No sender has work left and no message is anywhere on its way (a REQ sender
        waiting for its reply has none: only a message could move it)."""
        for process in self.processes:
            for workload in process.workloads:
                if workload.is_sender and not workload.done and not getattr(workload, "awaiting_reply", False):
                    return False
        for pipe in self.pipes:
            if pipe.queue:
                return False
        for link in self.links:
            if link.broken:
                continue
            for engine in (link.c_engine, link.b_engine):
                if engine.out_batch or engine.held is not None or engine.in_buffer:
                    return False
            if link.c2b.queue or link.b2c.queue:
                return False
        return True

    # -- end of run ---------------------------------------------------------------------

    def unfinished(self) -> list[tuple[Message, int, int, int]]:
        """Every user message still somewhere: (msg, socket index, pipe index, where)."""
        items: list[tuple[Message, int, int, int]] = []
        seen_pipes: set[int] = set()
        for info in self.pipe_info:
            pipe = info.pipe
            if pipe.index in seen_pipes:
                continue
            seen_pipes.add(pipe.index)
            owner_socket = _socket_of(pipe)
            for msg in pipe.queue:
                if msg[0] >= 0:
                    items.append((msg, owner_socket, pipe.index, WHERE_PIPE))
        for link in self.links:
            if link.broken:
                continue
            for engine, wire in ((link.c_engine, link.c2b), (link.b_engine, link.b2c)):
                for msg, sock, pipe_index, place in in_flight(engine, wire):
                    items.append((msg, sock.index, pipe_index, place))
        for sock in self.sockets:
            for msg, pipe_index in sock.held_messages():  # read from their pipe, not by the application
                items.append((msg, sock.index, pipe_index, WHERE_PIPE))
        return [item for item in items if item[0][0] >= 0]


    def pipe_destinations(self) -> list[int]:
        """For each pipe (by index), the socket its messages are meant for, or -1.

        An inproc pipe or a session's pipe into a socket is read by that socket. A socket's
        pipe into its session carries messages to the other end of the connection: the
        connecting socket for a bind-side session, the socket bound at the endpoint for a
        connect-side one (also while it is still connecting). An inproc connect that nobody
        has bound yet is meant for whoever binds the name.
        """
        binders = {ep.key: sock for sock, (binds, _) in self.socket_endpoints.items() for ep in binds}

        def bound_at(endpoint: Any) -> int:
            sock = binders.get(endpoint.key)
            return sock.index if sock is not None else -1

        destinations = []
        for pipe in self.pipes:
            reader, owner = pipe.reader, pipe.owner
            if isinstance(reader, Socket):
                destinations.append(reader.index)
            elif owner is not None:
                destinations.append(owner.destination(pipe, bound_at))
            else:
                destinations.append(-1)
        return destinations


def _end_blocked_calls(sock: Socket) -> None:
    """The socket closed: every call still blocked on it ends (``AppThread._retry`` finds
    the socket closed: CLOSED)."""
    waiters = list(sock.waiters)
    sock.waiters.clear()
    for callback in waiters:
        callback()


def _socket_of(pipe: Pipe) -> int:
    reader = pipe.reader
    if isinstance(reader, Socket):
        return reader.index
    writer = pipe.writer
    if isinstance(writer, Socket):
        return writer.index
    return -1
