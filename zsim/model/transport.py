"""Connections: inproc (one shared pipe per direction) and tcp/ipc (a chain of buffers).

inproc (``socket_base_t::connect_internal``, ``ctx_t::connect_inproc_sockets``)
    One pipe per direction shared by both sockets; its HWM is the connector's SNDHWM plus
    the binder's RCVHWM (0 = unlimited if either is 0). Connect-before-bind makes the
    pipes with the connector's own HWMs and raises them to the sums at bind time. The
    binder learns of the pipe through a ``bind`` command at its next command processing.

tcp and ipc (``session_base_t``, ``stream_engine_base_t``, ``zmtp_engine_t``)
    socket --pipe(SNDHWM)--> session/engine --kernel bytes--> engine/session
    --pipe(RCVHWM)--> socket. The sending engine pulls whole messages from its pipe only
    when its batch is empty, up to 8 KB (or one large message), and writes as much as the
    kernel takes. The receiving engine reads up to 8 KB (or the rest of a large message)
    per event and pushes decoded messages into its pipe; when a push fails it keeps that
    message, keeps the rest of its buffer, and stops reading until the socket has read
    LWM messages (``restart_input``). Pressure therefore travels back through the kernel
    to the sender's pipe, where PUB drops and PUSH blocks. The connect side gets its pipes
    at ``connect()`` (unless ``immediate``), the bind side after the handshake.
    Disconnects, reconnects (``reconnect_ivl`` plus jitter), linger and the ipc EPOLLHUP
    loss of section 7.3 of the reference are modelled here.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..constants import IN_BATCH_SIZE, OUT_BATCH_SIZE, compute_lwm
from .occupancy import Occupancy
from .pipe import MSG_ID, MSG_WIRE, Message, Pipe
from .routing import (
    RULE_CRASH,
    RULE_DISCONNECT,
    RULE_ENGINE_HUP,
    RULE_KERNEL_LOST,
    RULE_LINGER,
)
from .socket import Peer, Socket

if TYPE_CHECKING:  # pragma: no cover
    from ..distributions import Sampler
    from .params import TransportParams
    from .routing import Subscriptions
    from .world import World


def _sum_hwm(a: int, b: int) -> int:
    """``pipe_t::set_hwms`` with boost: unlimited if either side is unlimited."""
    if a <= 0 or b <= 0:
        return 0
    return a + b


def _record_lost(world: World, msgs: Any, socket_index: int, pipe_index: int, rule: int) -> int:
    """Ledger every user message of ``msgs`` as lost; returns how many."""
    now = world.env._now
    lost = 0
    for msg in msgs:
        if msg[MSG_ID] >= 0:
            world.ledger.lost(msg, socket_index, pipe_index, rule, now)
            lost += 1
    return lost


def _record_discarded(world: World, msgs: Any, socket_index: int, pipe_index: int, rule: int) -> int:
    now = world.env._now
    count = 0
    for msg in msgs:
        if msg[MSG_ID] >= 0:
            world.ledger.discarded(msg, socket_index, pipe_index, rule, now)
            count += 1
    return count


# ======================================================================================
# inproc


class InprocConnection:
    """An inproc connection: two shared pipes, no session, no engine."""

    transport = "inproc"

    def __init__(self, world: World, connector: Socket, endpoint: Any, binder: Socket | None) -> None:
        self.world = world
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
        if binder is not None:
            self._create(binder, pending=False)
            binder.add_pending_peer(self.b_peer)  # type: ignore[arg-type]
            connector.attach(self.c_peer)  # type: ignore[arg-type]
            binder.post(binder._cmd_attach, self.b_peer)
        else:
            self._create(None, pending=True)
            connector.attach(self.c_peer)  # type: ignore[arg-type]
            world.pending_inproc.setdefault(endpoint.key, []).append(self)

    def _create(self, binder: Socket | None, pending: bool) -> None:
        world = self.world
        c = self.connector
        if pending or binder is None:
            c2b_hwm, b2c_hwm = c.options.sndhwm, c.options.rcvhwm
        else:
            c2b_hwm = _sum_hwm(c.options.sndhwm, binder.options.rcvhwm)
            b2c_hwm = _sum_hwm(binder.options.sndhwm, c.options.rcvhwm)
        to_name = binder.name if binder is not None else self.endpoint.text
        self.c2b = world.new_pipe(f"{c.name}->{to_name}", c.name, to_name, "inproc", c2b_hwm, c, binder, self.conflate, self)
        self.b2c = world.new_pipe(f"{to_name}->{c.name}", to_name, c.name, "inproc", b2c_hwm, binder, c, self.conflate, self)
        if self.conflate:
            self._set_displace(self.c2b, c)
            if binder is not None:
                self._set_displace(self.b2c, binder)
        self.c_peer = Peer(c, binder if binder is not None else _Placeholder(self.endpoint), self)
        self.c_peer.out_pipe, self.c_peer.in_pipe = self.c2b, self.b2c
        if binder is not None:
            self._make_binder_peer(binder)

    def _set_displace(self, pipe: Pipe, writer: Socket) -> None:
        world = self.world
        from .routing import RULE_CONFLATED

        def displaced(msg: Message, pipe: Pipe = pipe, writer: Socket = writer) -> None:
            if msg[MSG_ID] >= 0:
                writer.dropped += 1
                world.ledger.dropped(msg, writer.index, pipe.index, RULE_CONFLATED, world.env._now)

        pipe.on_displace = displaced

    def _make_binder_peer(self, binder: Socket) -> None:
        self.binder = binder
        c = self.connector
        self.b_peer = Peer(binder, c, self)
        self.b_peer.out_pipe, self.b_peer.in_pipe = self.b2c, self.c2b
        # Now that the binder is known, the connector's peer can see its routing id.
        peer = self.c_peer
        assert peer is not None  # _create made it before any binder could appear
        peer.remote = binder
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
        self.world.rename_pipe(self.c2b, f"{c.name}->{binder.name}", to=binder.name)
        self.world.rename_pipe(self.b2c, f"{binder.name}->{c.name}", frm=binder.name)
        if self.conflate:
            self._set_displace(self.b2c, binder)
        self._make_binder_peer(binder)
        # The bind side processes the bind command inside its own bind() call.
        binder.attach(self.b_peer)  # type: ignore[arg-type]

    def refuse(self, peer: Peer) -> None:
        self.close_side(peer.socket, discard=True)

    # -- termination -------------------------------------------------------------------

    def close_side(self, sock: Socket, discard: bool = False, rule: int = RULE_LINGER) -> None:
        """``sock`` closed: its unread inbound messages are lost; its outbound ones stay
        readable by the peer until the delimiter (inproc has no linger: no session)."""
        if self.closed:
            return
        world = self.world
        mine = self.c_peer if sock is self.connector else self.b_peer
        other = self.b_peer if sock is self.connector else self.c_peer
        if mine is None:
            return
        out_pipe, in_pipe = mine.out_pipe, mine.in_pipe
        sock.detach(mine)
        if in_pipe is not None:
            lost = _record_lost(world, in_pipe.drain(), sock.index, in_pipe.index, rule)
            sock.lost_on_close += lost
        if other is None or not other.socket.is_open or discard:
            if out_pipe is not None:
                lost = _record_lost(world, out_pipe.drain(), sock.index, out_pipe.index, rule)
                sock.lost_on_close += lost
            if other is not None:
                other.socket.detach(other)
            self.closed = True
            return
        if out_pipe is not None:
            out_pipe.mark_delimited()
            if not out_pipe.queue:
                self.on_delimiter(out_pipe)
        # The peer can no longer write to us; it learns so at its next command processing.
        other.socket.post(_peer_closing, other)

    def on_delimiter(self, pipe: Pipe) -> None:
        """The reader consumed everything up to the delimiter: the pipe pair is gone."""
        other = self.b_peer if pipe is self.c2b else self.c_peer
        if other is not None and other.alive:
            other.socket.post(other.socket._cmd_detach, other)
        self.closed = True

    def queued_messages(self) -> list[tuple[Pipe, list[Message]]]:
        return [(p, list(p.queue)) for p in (self.c2b, self.b2c) if p is not None]


def _peer_closing(peer: Peer) -> None:
    """``pipe_t::process_pipe_term`` at the surviving end: stop routing to it, keep reading."""
    sock = peer.socket
    if sock.lb is not None and peer.out_pipe is not None and peer.out_pipe in sock.lb.peer_of:
        sock.lb.terminated(peer.out_pipe)
    if sock.dist is not None:
        sock.dist.remove(peer)
    if sock.router is not None:
        sock.router.remove(peer.routing_key, peer)
    if sock.pair_peer is peer:
        sock.pair_peer = None
    if peer.in_pipe is None or not peer.in_fq:
        sock.detach(peer)


class _Placeholder:
    """The binder of a pending inproc connection, before anybody binds."""

    def __init__(self, endpoint: Any) -> None:
        self.name: str = endpoint.text
        self.routing_id: str = endpoint.text
        self.own_subs: Subscriptions | None = None


# ======================================================================================
# tcp / ipc


class Wire:
    """One direction of a stream socket pair: kernel send buffer + receive buffer, in bytes.

    Entries are ``[msg, nbytes, last, overhead]``: a large message may cross in several
    segments; it is complete at the reader when its ``last`` segment has been read. Each
    ``write()`` is one skb whose bookkeeping (``overhead``, charged on its first entry)
    counts against the buffer until the reader has consumed it: on unix sockets that is
    what limits many small writes (reference section 6.2, ``wmem_default`` in truesize).
    """

    __slots__ = ("queue", "bytes", "msgs", "charged", "capacity_fn", "sndbuf", "rcvbuf", "sndhwm", "writer", "reader", "peer_closed",
                 "name", "occupancy")

    def __init__(self, name: str, capacity_fn: Any, sndbuf: int, rcvbuf: int, sndhwm: int, now: float) -> None:
        self.name = name
        self.queue: deque[list[Any]] = deque()
        self.bytes = 0  # payload bytes in the kernel
        self.msgs = 0  # messages whose last byte is in the kernel
        self.charged = 0  # what the kernel counts against the buffer: bytes + per-write overhead
        self.capacity_fn = capacity_fn
        self.sndbuf = sndbuf
        self.rcvbuf = rcvbuf
        self.sndhwm = sndhwm
        self.writer: Engine | None = None
        self.reader: Engine | None = None
        self.peer_closed = False  # the writer closed its end: EOF after the data
        self.occupancy = Occupancy(now)

    def observe(self, now: float) -> None:
        """Record this direction's levels after a change (kernel, both engines)."""
        writer, reader = self.writer, self.reader
        out_msgs = len(writer.out_batch) if writer is not None else 0
        out_bytes = writer.out_bytes if writer is not None else 0
        in_msgs = in_bytes = 0
        if reader is not None:
            if reader.held is not None:
                in_msgs, in_bytes = 1, reader.held[MSG_WIRE]
            if reader.in_buffer:
                in_msgs += len(reader.in_buffer)
                in_bytes += sum(msg[MSG_WIRE] for msg in reader.in_buffer)
        self.occupancy.update(now, (self.msgs, self.bytes, out_msgs, out_bytes, in_msgs, in_bytes))

    def capacity(self, wire_size: int) -> int:
        return self.capacity_fn(wire_size, self.sndbuf, self.rcvbuf, self.sndhwm)

    def messages(self) -> list[Message]:
        """Messages that have at least one byte in the kernel (each once)."""
        seen: list[Message] = []
        for msg, _nbytes, last, _overhead in self.queue:
            if last:
                seen.append(msg)
        # a message whose last segment is still in the sender's batch is counted there
        return seen


class Engine:
    """``stream_engine_base_t`` for one side of one link: out batch and in buffer."""

    def __init__(self, link: Link, session: Session, out_wire: Wire, in_wire: Wire) -> None:
        self.link = link
        self.session = session
        self.world = link.world
        self.env = link.world.env
        self.params: TransportParams = link.params
        self.out_wire = out_wire
        self.in_wire = in_wire
        out_wire.writer = self
        in_wire.reader = self
        # output
        self.out_batch: deque[list[Any]] = deque()  # [msg, bytes not yet written]
        self.out_bytes = 0
        self.out_waiting_space = False
        self.out_timer = self.env.timer(self._out_event)
        self.out_free_at = 0.0
        # input
        self.in_buffer: deque[Message] = deque()  # decoded, not yet pushed
        self.partial: Message | None = None  # message whose bytes are arriving
        self.held: Message | None = None  # decoded message whose push failed
        self.input_stopped = False
        self.io_error = False
        self.in_timer = self.env.timer(self._in_event)
        self.in_free_at = 0.0
        self.closed = False
        self.latency = link.latency_sampler

    # -- output ------------------------------------------------------------------------

    def kick_out(self, delay: float = 0.0) -> None:
        """POLLOUT / activate_read from the socket: run ``out_event`` when the engine is free."""
        if self.closed or self.out_timer.armed:
            return
        now = self.env._now
        when = max(now + delay, self.out_free_at)
        self.out_timer.arm(when - now)

    def _out_event(self) -> None:
        if self.closed:
            return
        session = self.session
        pipe = session.out_pipe
        params = self.params
        if not self.out_batch:
            if pipe is None:
                return
            # stream_engine_base_t::out_event: pull whole messages only when empty.
            pulled = 0
            while self.out_bytes < OUT_BATCH_SIZE:
                msg = pipe.read()
                if msg is None:
                    break
                self.out_batch.append([msg, msg[MSG_WIRE]])
                self.out_bytes += msg[MSG_WIRE]
                pulled += 1
            if not self.out_batch:
                if pipe.delimited:
                    session.delimiter_reached()
                return
            cost = params.engine_s_per_msg * pulled + params.engine_s_per_byte * self.out_bytes
            self.out_free_at = self.env._now + cost
        self._write()

    def _write(self) -> None:
        wire = self.out_wire
        batch = self.out_batch
        params = self.params
        charge_fn = params.write_charge
        capacity = wire.capacity(batch[0][0][MSG_WIRE])
        if charge_fn is None:
            overhead = params.write_overhead_bytes
            free = capacity - wire.charged - overhead
        else:
            # unix sockets: a write is allowed while the kernel memory charged to the
            # sender is below its buffer; each skb costs its kmalloc'd truesize.
            free = self.out_bytes if wire.charged < capacity else 0
            chunk = params.max_skb_bytes(capacity)
            free = min(free, chunk)
            overhead = charge_fn(free) - free if free > 0 else 0
        if free <= 0:
            self._wait_for_space()
            wire.observe(self.env._now)  # the batch just pulled waits in the engine
            return
        moved = 0
        completed = 0
        first = True
        while batch and free > 0:
            entry = batch[0]
            msg, remaining = entry
            n = remaining if remaining <= free else free
            last = n == remaining
            wire.queue.append([msg, n, last, overhead if first else 0])
            first = False
            moved += n
            free -= n
            if last:
                batch.popleft()
                completed += 1
            else:
                entry[1] = remaining - n
        wire.bytes += moved
        wire.msgs += completed
        wire.charged += moved + overhead
        self.out_bytes -= moved
        wire.observe(self.env._now)
        reader = wire.reader
        if reader is not None and moved:
            reader.kick_in(self.latency.next())
        if self.out_bytes > 0:
            if charge_fn is not None and wire.charged < capacity:
                self._write()  # the same sendmsg() goes on with the next skb
                return
            self._wait_for_space()
        else:
            # POLLOUT stays set: pull again once this batch's processing is done.
            self.kick_out()
        if self.session.out_pipe is not None and self.session.out_pipe.delimited and not self.out_batch and not self.session.out_pipe.queue:
            self.session.delimiter_reached()

    def _wait_for_space(self) -> None:
        """The kernel is full: wait for POLLOUT; meanwhile the I/O thread may sleep."""
        self.out_waiting_space = True
        pipe = self.session.out_pipe
        if pipe is not None and pipe.wake_counted:
            pipe.reader_idle()

    def space_freed(self) -> None:
        """The reader took bytes out of the kernel: POLLOUT once there is enough room.

        Linux reports a stream socket writable only with a margin of free space (tcp:
        ``sk_stream_is_writeable``, free >= a third; unix: ``unix_writable``, free >= three
        quarters), so a stalled engine resumes in chunks, not byte by byte.
        """
        if self.out_waiting_space and not self.closed:
            if self.out_batch:
                wire = self.out_wire
                capacity = wire.capacity(self.out_batch[0][0][MSG_WIRE])
                if capacity - wire.charged < self.params.pollout_free_fraction * capacity:
                    return
            self.out_waiting_space = False
            if self.out_batch:
                now = self.env._now
                when = max(now, self.out_free_at)
                if not self.out_timer.armed:
                    self.out_timer.arm(when - now)

    # -- input -------------------------------------------------------------------------

    def kick_in(self, delay: float = 0.0) -> None:
        if self.closed or self.input_stopped:
            return
        now = self.env._now
        when = max(now + delay, self.in_free_at)
        if self.in_timer.armed:
            return
        self.in_timer.arm(when - now)

    def _in_event(self) -> None:
        if self.closed or self.input_stopped:
            return
        wire = self.in_wire
        if not wire.queue:
            if wire.peer_closed:
                # recv() returned 0: the peer closed cleanly after its data (EOF).
                self.link.engine_error(self, "eof")
            return
        # One recv(): up to 8 KB, or straight into a large message's own buffer.
        head_msg = wire.queue[0][0]
        budget = IN_BATCH_SIZE
        if head_msg[MSG_WIRE] >= IN_BATCH_SIZE:
            budget = max(budget, wire.queue[0][1] if self.partial is head_msg else head_msg[MSG_WIRE])
        decoded: list[Message] = []
        taken = 0
        freed = 0
        queue = wire.queue
        while queue and taken < budget:
            entry = queue[0]
            msg, nbytes, last, overhead = entry
            room = budget - taken
            if nbytes <= room:
                queue.popleft()
                taken += nbytes
                freed += nbytes + overhead
                if last:
                    decoded.append(msg)
                    self.partial = None
                else:
                    self.partial = msg
            else:
                entry[1] = nbytes - room
                taken += room
                freed += room
                self.partial = msg
        wire.bytes -= taken
        wire.msgs -= len(decoded)
        wire.charged -= freed
        writer = wire.writer
        if writer is not None:
            writer.space_freed()
        params = self.params
        self.in_free_at = self.env._now + params.engine_s_per_msg * len(decoded) + params.engine_s_per_byte * taken
        session = self.session
        for i, msg in enumerate(decoded):
            if not session.push(msg):
                self.held = msg
                self.in_buffer.extend(decoded[i + 1 :])
                self._stop_input()
                wire.observe(self.env._now)
                return
        wire.observe(self.env._now)
        if wire.queue or wire.peer_closed:
            self.kick_in()

    def _stop_input(self) -> None:
        self.input_stopped = True
        if self.in_wire.peer_closed and self.params.hup_loses_kernel_data:
            # epoll reports EPOLLHUP although pollin is off; in_event_internal on a
            # stopped engine removes the fd and sets _io_error (section 7.3).
            self.io_error = True

    def peer_closed(self) -> None:
        """The other end closed its fd after writing everything."""
        if self.closed:
            return
        self.in_wire.peer_closed = True
        if self.input_stopped:
            if self.params.hup_loses_kernel_data:
                self.io_error = True
        else:
            self.kick_in()

    def restart_input(self) -> None:
        """``stream_engine_base_t::restart_input``: after the socket read LWM messages."""
        if self.closed or not self.input_stopped:
            return
        session = self.session
        if self.held is not None:
            if not session.push(self.held):
                return
            self.held = None
        while self.in_buffer:
            msg = self.in_buffer.popleft()
            if not session.push(msg):
                self.held = msg
                self.in_wire.observe(self.env._now)
                return
        self.in_wire.observe(self.env._now)
        if self.io_error:
            # Everything decoded is in the pipe; what is still in the kernel is lost.
            self.link.engine_error(self, "hup")
            return
        self.input_stopped = False
        self.kick_in()  # speculative read

    # -- teardown ----------------------------------------------------------------------

    def shutdown(self) -> None:
        self.closed = True
        self.out_timer.cancel()
        self.in_timer.cancel()


class Session:
    """``session_base_t``: the I/O-thread end of one socket's two pipes on a connection."""

    def __init__(self, conn: StreamConnection, socket: Socket, role: str) -> None:
        self.conn = conn
        self.world = conn.world
        self.socket = socket
        self.role = role  # "connect" | "bind"
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
        self.world.env.call_later(delay, lambda: self._activate_write(pipe, read_count))

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


class Link:
    """One established tcp/ipc connection: two engines and two kernel directions."""

    def __init__(self, conn: StreamConnection, c_session: Session, b_session: Session, number: int) -> None:
        self.conn = conn
        self.world = conn.world
        self.params: TransportParams = conn.params
        self.number = number
        c_sock, b_sock = c_session.socket, b_session.socket
        name = f"{c_sock.name}<->{b_sock.name}"
        fn = self.params.kernel_capacity
        transport = conn.transport
        c_snd = c_sock.options.sndbuf if transport == "tcp" else -1
        c_rcv = c_sock.options.rcvbuf if transport == "tcp" else -1
        b_snd = b_sock.options.sndbuf if transport == "tcp" else -1
        b_rcv = b_sock.options.rcvbuf if transport == "tcp" else -1
        self.c2b = Wire(f"{c_sock.name}->{b_sock.name}", fn, c_snd, b_rcv, c_sock.options.sndhwm, self.world.env._now)
        self.b2c = Wire(f"{b_sock.name}->{c_sock.name}", fn, b_snd, c_rcv, b_sock.options.sndhwm, self.world.env._now)
        # conn.rng also draws the handshake time and the reconnect jitter (one stream per
        # sampler would change every tcp/ipc ledger and needs the kernel tables re-fitted)
        self.latency_sampler: Sampler = self.params.hop_latency.sampler(conn.rng, shared_stream=True)
        self.c_engine = Engine(self, c_session, self.c2b, self.b2c)
        self.b_engine = Engine(self, b_session, self.b2c, self.c2b)
        c_session.engine = self.c_engine
        b_session.engine = self.b_engine
        self.broken = False
        self.name = name

    def engines(self) -> tuple[Engine, Engine]:
        return self.c_engine, self.b_engine

    def engine_error(self, engine: Engine, reason: str) -> None:
        """``stream_engine_base_t::error``: the engine is deleted, the link is gone."""
        self.conn.link_broken(self, reason, engine)


class StreamConnection:
    """A ``connect()`` to a tcp or ipc endpoint: the connect-side session, its reconnects,
    and the current link with its bind-side session."""

    def __init__(self, world: World, connector: Socket, endpoint: Any, index: int) -> None:
        self.world = world
        self.env = world.env
        self.endpoint = endpoint
        self.transport = endpoint.transport
        self.params = world.params.transport(self.transport)
        self.connector = connector
        self.index = index
        self.rng = world.stream(f"conn.{connector.name}.{endpoint.text}")
        self.handshake = self.params.handshake.sampler(self.rng, shared_stream=True)
        wakeup = self.params.io_wakeup
        self.io_wakeup = wakeup.sampler(None if wakeup.is_constant else world.stream(f"io.{connector.name}.{endpoint.text}"))
        self.c_session = Session(self, connector, "connect")
        self.b_session: Session | None = None
        self.link: Link | None = None
        self.links = 0
        self.closed = False
        self.attempt_timer = self.env.timer(self._attempt)
        self.handshake_timer = self.env.timer(self._handshake_done)
        self.handshake_binder: Socket | None = None
        self.last_attempt = self.env._now
        self.waiting_for_listener = False
        self.c_peer: Peer | None = None
        self.b_peer: Peer | None = None
        self.immediate = bool(connector.options.immediate)
        self.backoff_ms = 0
        if not self.immediate:
            self._create_connect_pipes()
        self._attempt()

    # -- pipes ---------------------------------------------------------------------------

    def _create_connect_pipes(self, via_command: bool = False) -> None:
        world, c = self.world, self.connector
        remote = _Placeholder(self.endpoint)
        conflate = bool(c.options.conflate) and c.traits.conflate
        label = f"{self.transport}://{self.endpoint.address}"
        out_pipe = world.new_pipe(f"{c.name}->{label} (send)", c.name, label, "send", -1 if conflate else c.options.sndhwm, c,
                                  self.c_session, conflate, self)
        in_pipe = world.new_pipe(f"{label}->{c.name} (recv)", label, c.name, "recv", -1 if conflate else c.options.rcvhwm,
                                 self.c_session, c, conflate, self)
        if conflate:
            _displace_to_ledger(world, out_pipe, c)
            _displace_to_ledger(world, in_pipe, c)
        peer = Peer(c, remote, self)  # type: ignore[arg-type]
        peer.out_pipe, peer.in_pipe = out_pipe, in_pipe
        self.c_peer = peer
        self.c_session.peer = peer
        self.c_session.out_pipe, self.c_session.in_pipe = out_pipe, in_pipe
        if via_command:
            c.post(c._cmd_attach, peer)  # session_base_t::engine_ready -> send_bind
        else:
            c.attach(peer)  # connect_internal attaches in the application thread

    def _create_bind_pipes(self, binder: Socket, number: int) -> Session:
        world = self.world
        c = self.connector
        session = Session(self, binder, "bind")
        conflate = bool(binder.options.conflate) and binder.traits.conflate
        suffix = f" #{number}" if number > 1 else ""
        out_pipe = world.new_pipe(
            f"{binder.name}->{c.name} ({self.transport} send{suffix})", binder.name, c.name, "send",
            -1 if conflate else binder.options.sndhwm, binder, session, conflate, self,
        )
        in_pipe = world.new_pipe(
            f"{c.name}->{binder.name} ({self.transport} recv{suffix})", c.name, binder.name, "recv",
            -1 if conflate else binder.options.rcvhwm, session, binder, conflate, self,
        )
        if conflate:
            _displace_to_ledger(world, out_pipe, binder)
            _displace_to_ledger(world, in_pipe, binder)
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
        self.last_attempt = self.env._now
        binder = self.world.listeners.get(self.endpoint.key)
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
        self.handshake_timer.arm(self.handshake.next())

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
        if self.world.listeners.get(self.endpoint.key) is None:
            # Nobody listens: do not fill the schedule with failing attempts; the next
            # attempt is computed when a listener appears (World.bind).
            self.waiting_for_listener = True
            self.world.waiting_connects.setdefault(self.endpoint.key, []).append(self)
            self._pending_delay = delay
            return
        self.attempt_timer.arm(delay)

    def listener_appeared(self) -> None:
        """A socket bound the endpoint: the next reconnect attempt after now happens."""
        if not self.waiting_for_listener or self.closed:
            return
        self.waiting_for_listener = False
        attempt = self.last_attempt + self._pending_delay
        now = self.env._now
        while attempt < now:
            delay = self._reconnect_delay()
            if delay is None:
                self.closed = True
                return
            attempt += delay
        self.attempt_timer.arm(attempt - now)

    def _handshake_done(self) -> None:
        binder = self.handshake_binder
        if self.closed or not self.connector.is_open:
            return
        if binder is None or not binder.is_open or self.world.listeners.get(self.endpoint.key) is not binder:
            self._schedule_retry()
            return
        self.links += 1
        provisional = self.b_peer
        b_session = self._create_bind_pipes(binder, self.links)
        if provisional is not None and provisional is not self.b_peer:
            if provisional.listed:
                provisional.listed = False
                binder.peers.remove(provisional)
            if binder.dist is not None:
                binder.dist.remove(provisional)
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
        peer.remote = binder
        peer.routing_key = binder.routing_id
        peer.remote_subs = binder.own_subs
        if self.links == 1 and peer.out_pipe is not None and peer.in_pipe is not None:
            c = self.connector
            self.world.rename_pipe(peer.out_pipe, f"{c.name}->{binder.name} ({self.transport} send)", to=binder.name)
            self.world.rename_pipe(peer.in_pipe, f"{binder.name}->{c.name} ({self.transport} recv)", frm=binder.name)
        self.link = Link(self, self.c_session, b_session, self.links)
        # The binder attaches the pipe when it processes the bind command.
        binder.post(binder._cmd_attach, self.b_peer)
        # Both engines start: anything queued on either side flows.
        self.link.c_engine.kick_out()
        self.link.b_engine.kick_out()
        self.world.links.append(self.link)

    def _hiccup_subscriptions(self) -> None:
        peer = self.c_peer
        if peer is None or peer.out_pipe is None:
            return
        pipe = peer.out_pipe
        pipe.drain()
        pipe.state = 0
        pipe.out_active = True
        pipe.peers_read = pipe.written = pipe.read_count = 0
        own = self.connector.own_subs
        if own:
            for prefix in list(own.prefixes):
                self.connector._write_subscription(pipe, prefix, True)

    def refuse(self, peer: Peer) -> None:
        if self.link is not None:
            self.link_broken(self.link, "refused", None)

    # -- breaking --------------------------------------------------------------------------

    def link_broken(self, link: Link, reason: str, by: Engine | None, rule: int | None = None) -> None:
        """The connection is gone. Engines and kernel buffers lose what they hold; the
        bind side's session terminates; the connect side reconnects (section 5.4)."""
        if link.broken:
            return
        link.broken = True
        world = self.world
        c_engine, b_engine = link.c_engine, link.b_engine
        kernel_rule = rule if rule is not None else (RULE_ENGINE_HUP if reason == "hup" else RULE_KERNEL_LOST)
        engine_rule = rule if rule is not None else RULE_DISCONNECT
        for engine, wire in ((c_engine, link.c2b), (b_engine, link.b2c)):
            # One direction: sender's unwritten batch, the kernel, the reader's buffers.
            # A message can straddle them; each is recorded once, where its first byte is.
            reader = wire.reader
            losses = [(msg, sock, pipe_index, kernel_rule if place == IN_KERNEL else engine_rule)
                      for msg, sock, pipe_index, place in in_flight(engine, wire)]
            now = world.env._now
            for msg, where, pipe_index, why in losses:
                if msg[MSG_ID] >= 0:
                    world.ledger.lost(msg, where.index, pipe_index, why, now)
            engine.out_batch.clear()
            engine.out_bytes = 0
            wire.queue.clear()
            wire.bytes = 0
            wire.msgs = 0
            wire.charged = 0
            if reader is not None:
                reader.held = None
                reader.in_buffer.clear()
                reader.partial = None
            wire.observe(now)
        for engine in (c_engine, b_engine):
            engine.shutdown()
            engine.session.engine = None
        if self.link is link:
            self.link = None
        # bind side: session_base_t::engine_error -> terminate
        b_session = b_engine.session
        self._terminate_bind_session(b_session, RULE_DISCONNECT)
        # connect side
        c_session = c_engine.session
        if c_session.terminating:
            self.conn_session_gone(c_session)
            return
        if self.immediate:
            peer = self.c_peer
            if peer is not None:
                self._drop_connect_pipes(RULE_DISCONNECT)
        if self.connector.is_open and not self.closed:
            self.last_attempt = self.env._now
            self._schedule_retry()

    def _terminate_bind_session(self, session: Session, rule: int) -> None:
        peer = session.peer
        if peer is None or session.done:
            return
        session.done = True
        binder = session.socket
        out_pipe, in_pipe = session.out_pipe, session.in_pipe
        if out_pipe is not None:
            n = _record_discarded(self.world, out_pipe.drain(), binder.index, out_pipe.index, rule)
            binder.discarded += n
        if in_pipe is not None and in_pipe.queue and binder.is_open:
            # readable until the delimiter
            in_pipe.mark_delimited()
            binder.post(_peer_closing, peer)
        else:
            if in_pipe is not None and in_pipe.queue:
                _record_lost(self.world, in_pipe.drain(), binder.index, in_pipe.index, RULE_LINGER)
            binder.post(binder._cmd_detach, peer)
        if self.b_session is session:
            self.b_session = None

    def _drop_connect_pipes(self, rule: int) -> None:
        peer = self.c_peer
        if peer is None:
            return
        c = self.connector
        if peer.out_pipe is not None:
            n = _record_discarded(self.world, peer.out_pipe.drain(), c.index, peer.out_pipe.index, rule)
            c.discarded += n
        if peer.in_pipe is not None and peer.in_pipe.queue:
            peer.in_pipe.mark_delimited()
            c.post(_peer_closing, peer)
        else:
            c.post(c._cmd_detach, peer)
        self.c_peer = None

    def on_delimiter(self, pipe: Pipe) -> None:
        """A socket read its inbound pipe up to the delimiter."""
        for peer in (self.c_peer, self.b_peer):
            if peer is not None and peer.in_pipe is pipe and peer.alive:
                peer.socket.post(peer.socket._cmd_detach, peer)

    # -- close / linger ----------------------------------------------------------------------

    def close_side(self, sock: Socket, discard: bool = False, rule: int = RULE_LINGER) -> None:
        """``sock`` closed (``zmq_close``): honour its LINGER on this connection."""
        world = self.world
        if sock is self.connector:
            session = self.c_session
            self.attempt_timer.cancel()
            self.handshake_timer.cancel()
            if self.waiting_for_listener:
                lst = world.waiting_connects.get(self.endpoint.key, [])
                if self in lst:
                    lst.remove(self)
                self.waiting_for_listener = False
            self.closed = True
            provisional = self.b_peer
            if provisional is not None and not provisional.attached and (self.link is None):
                provisional.socket.detach(provisional)
        else:
            session = self.b_session  # type: ignore[assignment]
            if session is None:
                # no established link on this connection; forget any provisional peer
                if self.b_peer is not None and self.b_peer.socket is sock:
                    sock.detach(self.b_peer)
                self.handshake_timer.cancel()
                return
        self._linger(session, sock, discard, rule)

    def _linger(self, session: Session, sock: Socket, discard: bool, rule: int) -> None:
        world = self.world
        if session.terminating:
            return
        session.terminating = True
        peer = session.peer
        # Inbound messages the application never read are gone with the socket.
        if session.in_pipe is not None:
            n = _record_lost(world, session.in_pipe.drain(), sock.index, session.in_pipe.index, rule)
            sock.lost_on_close += n
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
            session.linger_timer = world.env.timer(lambda: self._linger_expired(session, sock, rule))
            session.linger_timer.arm(linger / 1000.0)

    def _discard_out(self, session: Session, sock: Socket, rule: int) -> None:
        out_pipe = session.out_pipe
        if out_pipe is not None:
            n = _record_lost(self.world, out_pipe.drain(), sock.index, out_pipe.index, rule)
            sock.lost_on_close += n
        self.session_finished(session)

    def _linger_expired(self, session: Session, sock: Socket, rule: int) -> None:
        if session.done:
            return
        self._discard_out(session, sock, rule)

    def session_finished(self, session: Session) -> None:
        """The closing side's engine has everything (or linger gave up): close the fd."""
        if session.done:
            return
        session.done = True
        if session.linger_timer is not None:
            session.linger_timer.cancel()
        engine = session.engine
        link = engine.link if engine is not None else None
        if engine is not None and link is not None and not link.broken:
            # The last batch goes to the kernel; the fd is closed after it (FIN).
            out_wire = engine.out_wire
            if engine.out_batch:
                for msg, remaining in engine.out_batch:
                    out_wire.queue.append([msg, remaining, True, 0])
                    out_wire.bytes += remaining
                    out_wire.charged += remaining
                out_wire.msgs += len(engine.out_batch)
                engine.out_batch.clear()
                engine.out_bytes = 0
                out_wire.observe(self.env._now)
            engine.shutdown()
            session.engine = None
            # Whatever the peer sent us and we never decoded is lost.
            sock = session.socket
            in_index = session.in_pipe.index if session.in_pipe is not None else -1
            held = ([engine.held] if engine.held is not None else []) + list(engine.in_buffer)
            if engine.partial is not None:
                held.append(engine.partial)
            lost = held + _wire_messages(engine.in_wire, engine)
            sock.lost_on_close += _record_lost(self.world, lost, sock.index, in_index, RULE_LINGER)
            engine.in_wire.queue.clear()
            engine.in_wire.bytes = 0
            engine.in_wire.msgs = 0
            engine.in_wire.charged = 0
            engine.held = None
            engine.in_buffer.clear()
            engine.partial = None
            engine.in_wire.observe(self.env._now)
            other = link.b_engine if engine is link.c_engine else link.c_engine
            other.out_wire_closed = True  # type: ignore[attr-defined]
            other.peer_closed()
            if self.link is link:
                # The link lives on until the other side reads EOF.
                pass
        self.world.session_closed(session)

    def conn_session_gone(self, session: Session) -> None:
        self.world.session_closed(session)

    def crash_side(self, sock: Socket) -> None:
        """The process of ``sock`` died: no linger, its kernel data is gone, the peer sees a reset."""
        world = self.world
        link = self.link
        if link is not None and not link.broken:
            self.link_broken(link, "crash", None, rule=RULE_CRASH)
        session = self.c_session if sock is self.connector else self.b_session
        if sock is self.connector:
            self.closed = True
            self.attempt_timer.cancel()
            self.handshake_timer.cancel()
            if self.waiting_for_listener:
                lst = world.waiting_connects.get(self.endpoint.key, [])
                if self in lst:
                    lst.remove(self)
        if session is not None:
            for pipe in (session.out_pipe, session.in_pipe):
                if pipe is not None and pipe.queue:
                    sock.lost_on_close += _record_lost(world, pipe.drain(), sock.index, pipe.index, RULE_CRASH)
            session.done = True
            session.terminating = True
            if session.peer is not None:
                sock.detach(session.peer)

    def queued_messages(self) -> list[tuple[Pipe, list[Message]]]:
        out = []
        for session in (self.c_session, self.b_session):
            if session is None:
                continue
            for pipe in (session.out_pipe, session.in_pipe):
                if pipe is not None:
                    out.append((pipe, list(pipe.queue)))
        return out


def _displace_to_ledger(world: World, pipe: Pipe, owner: Socket) -> None:
    from .routing import RULE_CONFLATED

    def displaced(msg: Message) -> None:
        if msg[MSG_ID] >= 0:
            owner.dropped += 1
            world.ledger.dropped(msg, owner.index, pipe.index, RULE_CONFLATED, world.env._now)

    pipe.on_displace = displaced


def _wire_messages(wire: Wire, reader: Engine | None) -> list[Message]:
    """Messages with bytes in the kernel, excluding those the reader already holds and
    those whose tail is still in the writer's batch (the writer accounts for them)."""
    seen: list[Message] = []
    ids: set[int] = set()
    writer = wire.writer
    if writer is not None:
        for entry in writer.out_batch:
            ids.add(id(entry[0]))
    if reader is not None:
        for msg in ([reader.held] if reader.held is not None else []) + list(reader.in_buffer):
            ids.add(id(msg))
        if reader.partial is not None:
            ids.add(id(reader.partial))
    for msg, _nbytes, _last, _overhead in wire.queue:
        key = id(msg)
        if key in ids:
            continue
        ids.add(key)
        seen.append(msg)
    return seen


IN_ENGINE = 1
IN_KERNEL = 2


def in_flight(engine: Engine, wire: Any) -> list[tuple[Message, Socket, int, int]]:
    """What one direction of a link holds outside the pipes, each message once:
    (message, socket it is charged to, that socket's pipe index, IN_ENGINE or IN_KERNEL).

    The reader's buffers (held message, read buffer, partial message) and the kernel queue
    are charged to the reading socket, the sender's unwritten batch to the sending one. A
    message can straddle them; it is listed once, where its first byte is.
    """
    seen: set[int] = set()
    items: list[tuple[Message, Socket, int, int]] = []
    reader = wire.reader
    if reader is not None:
        rsock = reader.session.socket
        rpipe = reader.session.in_pipe.index if reader.session.in_pipe is not None else -1
        buffered = ([reader.held] if reader.held is not None else []) + list(reader.in_buffer)
        if reader.partial is not None:
            buffered.append(reader.partial)
        for msg in buffered:
            if id(msg) not in seen:
                seen.add(id(msg))
                items.append((msg, rsock, rpipe, IN_ENGINE))
        for msg, _nbytes, _last, _overhead in wire.queue:
            if id(msg) not in seen:
                seen.add(id(msg))
                items.append((msg, rsock, rpipe, IN_KERNEL))
    ssock = engine.session.socket
    spipe = engine.session.out_pipe.index if engine.session.out_pipe is not None else -1
    for entry in engine.out_batch:
        msg = entry[0]
        if id(msg) not in seen:
            seen.add(id(msg))
            items.append((msg, ssock, spipe, IN_ENGINE))
    return items
