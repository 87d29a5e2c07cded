"""The byte path of a tcp/ipc connection: kernel buffers (``Wire``) and the ZMTP stream
engine at each end (``stream_engine_base_t``, ``zmtp_engine_t``).

The sending engine pulls whole messages from its pipe only when its batch is empty, up to
8 KB (or one large message), and writes as much as the kernel takes. The receiving engine
reads up to 8 KB (or the rest of a large message) per event and pushes decoded messages
into its pipe; when a push fails it keeps that message, keeps the rest of its buffer, and
stops reading until the socket has read LWM messages (``restart_input``). Pressure
therefore travels back through the kernel to the sender's pipe, where PUB drops and PUSH
blocks.

An engine's CPU work (per message and byte) keeps it busy after each event. With
``[machine] cores`` that work runs on its process's I/O thread (``zsim.model.cpu``), one
event at a time for every engine the thread serves, sharing the cores with the other
threads; without, each engine is its own resource (``out_free_at``/``in_free_at``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ...constants import IN_BATCH_SIZE, OUT_BATCH_SIZE
from ..occupancy import Occupancy
from ..pipe import MSG_WIRE, Message

if TYPE_CHECKING:  # pragma: no cover
    from ..context import Context, IoThread
    from ..cpu import Thread
    from ..params import TransportParams
    from ..pipe import Pipe


class EngineSession(Protocol):
    """What an engine needs from its session (``session_base_t`` as ``i_engine`` sees it)."""

    socket: Any
    out_pipe: Pipe | None
    in_pipe: Pipe | None
    io_thread: IoThread  # the I/O thread its engines run on

    def push(self, msg: Message) -> bool: ...

    def delimiter_reached(self) -> None: ...


class EngineLink(Protocol):
    """What an engine needs from its connection: the shared services, the transport's
    parameters and latency, and where to report an EOF or EPOLLHUP."""

    ctx: Context
    params: TransportParams
    latency_sampler: Any
    transport: str  # "tcp" or "ipc": which of a host's transport costs its engines take

    def engine_error(self, engine: Engine, reason: str) -> None: ...



class Wire:
    """One direction of a stream socket pair: kernel send buffer + receive buffer, in bytes.

    Entries are ``[msg, nbytes, last, overhead]``: a large message may cross in several
    segments; it is complete at the reader when its ``last`` segment has been read. Each
    ``write()`` is one skb whose bookkeeping (``overhead``, charged on its first entry)
    counts against the buffer until the reader has consumed it: on unix sockets that is
    what limits many small writes (Linux charges each skb's truesize against ``wmem_default``;
    see ``params.unix_skb_truesize``).
    """

    __slots__ = ("queue", "bytes", "msgs", "charged", "capacity_fn", "sndbuf", "rcvbuf", "sndhwm", "writer", "reader", "peer_closed",
                 "name", "occupancy")

    def __init__(
        self, name: str, capacity_fn: Callable[[int, int, int, int], int], sndbuf: int, rcvbuf: int, sndhwm: int, now: float
    ) -> None:
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

    def clear(self) -> None:
        """The connection is gone: the kernel frees both buffers (the caller records what
        they held first, and calls ``observe``)."""
        self.queue.clear()
        self.bytes = 0
        self.msgs = 0
        self.charged = 0

    def push_last(self, batch: Any) -> None:
        """The writer's last ``(msg, bytes not yet written)`` go in at close, whatever the
        buffer's room: the kernel keeps what a closed fd wrote (FIN after it)."""
        for msg, remaining in batch:
            self.queue.append([msg, remaining, True, 0])
            self.bytes += remaining
            self.charged += remaining
        self.msgs += len(batch)


class Engine:
    """``stream_engine_base_t`` for one side of one link: out batch and in buffer."""

    def __init__(self, link: EngineLink, session: EngineSession, out_wire: Wire, in_wire: Wire) -> None:
        self.link = link
        self.session = session
        self.ctx = link.ctx
        self.env = link.ctx.env
        self.clock = link.ctx.clock  # the time: see kernel.Clock
        # its own host's costs (a link between hosts with different profiles); the link's
        # when its process has none of its own
        own = getattr(getattr(getattr(session, "socket", None), "process", None), "params", None)
        transport = getattr(link, "transport", None)
        self.params: TransportParams = own.transport(transport) if own is not None and transport else link.params
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
        self.out_cost = 0.0  # the CPU seconds of the last out event's work
        # input
        self.in_buffer: deque[Message] = deque()  # decoded, not yet pushed
        self.partial: Message | None = None  # message whose bytes are arriving
        self.held: Message | None = None  # decoded message whose push failed
        self.input_stopped = False
        self.io_error = False
        self.in_timer = self.env.timer(self._in_event)
        self.in_free_at = 0.0
        self.in_cost = 0.0  # the CPU seconds of the last in event's work
        self.closed = False
        self.latency = link.latency_sampler
        # the machine's thread its session's I/O thread runs on (None: a core of its own)
        self.io: Thread | None = session.io_thread.cpu
        if self.io is not None:
            # events wait for the I/O thread, then burn their cost on it (see _out_task)
            self.out_timer = self.env.timer(self._out_submit)
            self.in_timer = self.env.timer(self._in_submit)
            self.out_queued = self.in_queued = False

    # -- on an I/O thread (``[machine] cores``) ------------------------------------------

    def _out_submit(self) -> None:
        if not self.out_queued and not self.closed:
            self.out_queued = True
            self.io.submit(self._out_task)  # type: ignore[union-attr]

    def _out_task(self) -> float:
        """``out_event`` when the I/O thread gets to it; its cost is the thread's burst
        (``out_cost``, not ``out_free_at - now``: that difference of two times is a multiple
        of the clock's step, 1.5e-8 s at 10^8 s, and an engine's work is 5e-7 s). The I/O
        thread replaces ``out_free_at``."""
        self.out_queued = False
        self.out_free_at = self.clock.now
        self.out_cost = 0.0
        self._out_event()
        self.out_free_at = 0.0
        return self.out_cost

    def _in_submit(self) -> None:
        if not self.in_queued and not self.closed:
            self.in_queued = True
            self.io.submit(self._in_task)  # type: ignore[union-attr]

    def _in_task(self) -> float:
        self.in_queued = False
        self.in_free_at = self.clock.now
        self.in_cost = 0.0
        self._in_event()
        self.in_free_at = 0.0
        return self.in_cost

    # -- output ------------------------------------------------------------------------

    def kick_out(self, delay: float = 0.0) -> None:
        """POLLOUT / activate_read from the socket: run ``out_event`` when the engine is free."""
        if self.closed or self.out_timer.armed:
            return
        now = self.clock.now
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
            self.out_cost = cost
            self.out_free_at = self.clock.now + cost
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
            wire.observe(self.clock.now)  # the batch just pulled waits in the engine
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
        wire.observe(self.clock.now)
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
                now = self.clock.now
                when = max(now, self.out_free_at)
                if not self.out_timer.armed:
                    self.out_timer.arm(when - now)

    # -- input -------------------------------------------------------------------------

    def kick_in(self, delay: float = 0.0) -> None:
        if self.closed or self.input_stopped:
            return
        now = self.clock.now
        when = max(now + delay, self.in_free_at)
        if self.in_timer.armed:
            return
        self.in_timer.arm(when - now)

    def _decode(self, queue: Any, budget: int) -> tuple[list[Message], int, int]:
        """One recv() of up to ``budget`` bytes from the wire's ``queue`` of ``[msg, bytes
        left, last frame, overhead]`` entries: the messages completed (a message read only
        in part stays ``self.partial``), the bytes taken, and the bytes that frees in the
        kernel's accounting (taken plus each finished entry's overhead)."""
        decoded: list[Message] = []
        taken = 0
        freed = 0
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
        return decoded, taken, freed

    def _recv_budget(self, queue: Any) -> int:
        """The bytes one recv() takes: up to 8 KB, or straight into a large message's own
        buffer (the rest of it, when it is the message being decoded)."""
        head_msg = queue[0][0]
        if head_msg[MSG_WIRE] < IN_BATCH_SIZE:
            return IN_BATCH_SIZE
        return int(max(IN_BATCH_SIZE, queue[0][1] if self.partial is head_msg else head_msg[MSG_WIRE]))

    def _in_event(self) -> None:
        if self.closed or self.input_stopped:
            return
        wire = self.in_wire
        if not wire.queue:
            if wire.peer_closed:
                # recv() returned 0: the peer closed cleanly after its data (EOF).
                self.link.engine_error(self, "eof")
            return
        decoded, taken, freed = self._decode(wire.queue, self._recv_budget(wire.queue))
        wire.bytes -= taken
        wire.msgs -= len(decoded)
        wire.charged -= freed
        writer = wire.writer
        if writer is not None:
            writer.space_freed()
        params = self.params
        per_msg = params.engine_s_per_msg * len(decoded)
        per_byte = params.engine_s_per_byte * taken
        self.in_cost = per_msg + per_byte
        self.in_free_at = self.clock.now + per_msg + per_byte
        session = self.session
        for i, msg in enumerate(decoded):
            if not session.push(msg):
                self.held = msg
                self.in_buffer.extend(decoded[i + 1 :])
                self._stop_input()
                wire.observe(self.clock.now)
                return
        wire.observe(self.clock.now)
        if wire.queue or wire.peer_closed:
            self.kick_in()

    def _stop_input(self) -> None:
        """``in_event_internal``: ``session_base_t::push_msg`` failed (EAGAIN: the pipe's
        ``pipe_t::check_hwm``), so ``_input_stopped`` and ``reset_pollin``. The decoder keeps
        the message it could not push (``held``) and ``_inpos``/``_insize`` the undecoded
        rest of the last ``read()`` (``in_buffer``); the kernel keeps what came after."""
        self.input_stopped = True
        if self.in_wire.peer_closed and self.params.hup_loses_kernel_data:
            # The peer had already closed: the same epoll_t::loop pass that reported
            # EPOLLIN reports EPOLLHUP too and calls in_event again, which finds the engine
            # stopped (see peer_closed). Everything was read: nothing is left in the kernel.
            self.io_error = True

    def peer_closed(self) -> None:
        """The other end closed its fd after writing everything.

        ipc (``hup_loses_kernel_data``): Linux marks a unix socket whose peer closed fully
        shut down, and its fd reports EPOLLHUP whatever the events asked for;
        ``epoll_t::loop`` calls ``in_event`` for it, and ``in_event_internal`` on an engine
        whose input is stopped does ``rm_fd`` and sets ``_io_error`` without reading: the
        engine never reads this fd again. tcp: a FIN raises only EPOLLIN|EPOLLRDHUP, masked
        while input is stopped; the engine reads to EOF when it restarts.
        """
        if self.closed:
            return
        self.in_wire.peer_closed = True
        if self.input_stopped:
            if self.params.hup_loses_kernel_data:
                self.io_error = True
        else:
            self.kick_in()

    def restart_input(self) -> None:
        """``stream_engine_base_t::restart_input``: the socket read a multiple of LWM messages
        (``pipe_t::read`` -> ``send_activate_write``; ``session_base_t::write_activated``).

        It pushes the decoder's message, then decodes the rest of the buffer (``_insize``),
        message by message, until a push fails again (EAGAIN: still stopped, the buffer
        keeps the rest). Only a buffer emptied and pushed lets it read the kernel again:
        ``set_pollin`` and a speculative ``in_event_internal``, which takes everything the
        kernel holds (up to 8 KB) into the buffer at once; a restart that still finds a
        message in the buffer reads nothing. So which messages are in the kernel rather
        than in the buffer when an ipc hang-up comes depends on the order of each recv and
        each arrival: a recv just before a message arrives leaves it in the kernel for the
        next restart's read, a recv just after takes it into the buffer now and the next
        restart reads nothing. With ``_io_error`` (the hang-up came while stopped), a
        restart that empties the buffer calls ``error (connection_error)`` instead: what is
        still in the kernel is lost (rule ``engine_hup``).
        """
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
                self.in_wire.observe(self.clock.now)
                return
        self.in_wire.observe(self.clock.now)
        if self.io_error:
            # Everything decoded is in the pipe; what is still in the kernel is lost.
            self.link.engine_error(self, "hup")
            return
        self.input_stopped = False
        self.kick_in()  # speculative read

    # -- teardown ----------------------------------------------------------------------

    def drop_output(self) -> None:
        """Forget the batch not yet written to the kernel (the caller recorded it)."""
        self.out_batch.clear()
        self.out_bytes = 0

    def drop_input(self) -> None:
        """Forget what was read from the kernel and not pushed (the caller recorded it)."""
        self.held = None
        self.in_buffer.clear()
        self.partial = None

    def undecoded(self) -> list[Message]:
        """What this engine read and never pushed: the held message, the decoded ones,
        the one whose bytes were arriving."""
        held = ([self.held] if self.held is not None else []) + list(self.in_buffer)
        if self.partial is not None:
            held.append(self.partial)
        return held

    def shutdown(self) -> None:
        self.closed = True
        self.out_timer.cancel()
        self.in_timer.cancel()
        self.io = None
