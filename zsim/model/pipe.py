"""One direction of one connection: libzmq's ``pipe_t`` over a ``ypipe_t``.

The writer may write while ``hwm <= 0 or written - peers_read < hwm`` (``pipe_t::check_hwm``);
a failed check deactivates the writer side (``_out_active = false``) until an
``activate_write`` command arrives. The reader reports its progress every
``lwm = (hwm + 1) // 2`` complete messages (``pipe_t::read``); the report is a command the
writer applies when it processes commands, so the writer's view of the queue lags the
truth exactly as libzmq's does. A reader that finds the pipe empty goes to sleep and the
next write sends it ``activate_read`` (``ypipe_t::flush`` returning false).

Messages are tuples ``(id, t0, size, wire, topic, envelope, origin, cause)`` shared between
the copies a fan-out makes; the pipe never looks inside them. ``cause`` is the id of the
message this one answers or was made from (a reply's request, a pipeline stage's task), -1
for none: the ledger keeps it, so a run's results rebuild request -> reply and task ->
result times (``zsim.results``). Control messages (subscriptions, probes) have a
negative id. The envelope is the routing ids in front of the body, first frame first (a
ROUTER pushes the sender's on receive and routes by, and strips, the first one on send),
followed by ``BOTTOM`` when the message carries an empty delimiter frame.

Depth statistics (max, time integral, time at each level, payload bytes) are kept here
because they are the numbers users size buffers by; they cost a few hundred instructions a
message (docs/speed.md, "The core benchmarks").
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import TYPE_CHECKING, Any

from ..constants import compute_lwm

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Environment

Message = tuple[Any, ...]  # (id, t0, size, wire, topic, envelope, origin socket index, cause id)

#: depths counted one by one in a pipe's time-at-level record; above, 8 buckets an octave
LEVEL_EXACT = 64


def level_bucket(depth: int) -> int:
    """The bucket of a depth in ``Pipe.levels``: the depth itself below ``LEVEL_EXACT``,
    then eight buckets an octave (64-71 is bucket 64, 72-79 bucket 65, ... 128-143 bucket 72)."""
    if depth < LEVEL_EXACT:
        return depth
    octave = depth.bit_length() - 1
    return LEVEL_EXACT + (octave - 6) * 8 + ((depth >> (octave - 3)) & 7)


def bucket_floor(bucket: int) -> int:
    """The smallest depth of a bucket (``level_bucket``'s inverse)."""
    if bucket < LEVEL_EXACT:
        return bucket
    octave, sub = divmod(bucket - LEVEL_EXACT, 8)
    return (8 + sub) << (octave + 3)

MSG_ID = 0
MSG_T0 = 1
MSG_SIZE = 2
MSG_WIRE = 3
MSG_TOPIC = 4
MSG_ENVELOPE = 5
MSG_ORIGIN = 6
MSG_CAUSE = 7

SUBSCRIBE_ID = -1
UNSUBSCRIBE_ID = -2
#: the empty message a socket with ZMQ_PROBE_ROUTER writes to each new peer
#: (``router_t::xattach_pipe``, ``dealer_t::xattach_pipe``): no application sent it
PROBE_ID = -3

#: the empty delimiter frame (libzmq's "bottom" of the traceback stack), the envelope's
#: last entry when the message has one: a REQ puts it under its request (req_t::xsend),
#: a REP reads the routing ids down to it and sends them back with the reply (rep_t),
#: and both throw away a message without it (rep_t::xrecv, req_t::xrecv). Only its
#: presence is modelled; its 2 wire bytes are in the REQ's request.
BOTTOM = ""


class WakeGroup:
    """The pipes one reading thread serves: how many of them it is awake for, and since
    when it has slept (all of them drained)."""

    __slots__ = ("awake", "asleep_since")

    def __init__(self) -> None:
        self.awake = 0
        self.asleep_since = 0.0


class PipeEndpoint:
    """What a pipe needs from the objects at its two ends (a socket or a session).

    A base class, not a protocol: compiled, a pipe posts its commands to a socket by a C
    call (every message's write to a sleeping reader, every LWM reads)."""

    __slots__ = ()

    def post_activate_write(self, pipe: Pipe, read_count: int) -> None:
        raise NotImplementedError

    def post_activate_read(self, pipe: Pipe) -> None:
        raise NotImplementedError


ACTIVE = 0
TERMINATING = 1  # delimiter written: no more writes
CLOSED = 2


class Pipe:
    """A message queue with libzmq's HWM/LWM accounting."""

    __slots__ = (
        "env",
        "clock",
        "name",
        "hwm",
        "lwm",
        "queue",
        "written",
        "read_count",
        "peers_read",
        "out_active",
        "reader_asleep",
        "writer",
        "reader",
        "conflate",
        "state",
        "delimited",
        "max_depth",
        "area",
        "last_change",
        "levels",
        "bytes",
        "max_bytes",
        "area_bytes",
        "dropped",
        "index",
        "trace",
        "owner",
        "on_displace",
        "asleep_since",
        "wake_cost",
        "debt",
        "wake_group",
        "wake_counted",
        "out_slot",
        "in_slot",
    )

    def __init__(
        self,
        env: Environment,
        name: str,
        hwm: int,
        writer: PipeEndpoint | None = None,
        reader: PipeEndpoint | None = None,
        conflate: bool = False,
        index: int = -1,
    ) -> None:
        self.env = env
        self.clock = env.clock  # the time as a C double: see kernel.Clock
        self.name = name
        self.conflate = conflate
        if conflate:
            hwm = 0  # ypipe_conflate_t: one slot, no HWM
        self.hwm = hwm
        self.lwm = compute_lwm(hwm)
        self.queue: deque[Message] = deque()
        self.written = 0
        self.read_count = 0
        self.peers_read = 0
        self.out_active = True
        self.reader_asleep = False
        self.writer = writer
        self.reader = reader
        self.state = ACTIVE
        self.delimited = False  # the delimiter has been written behind the queued messages
        self.max_depth = 0
        self.area = 0.0
        self.last_change = env.now
        # the time it spent at each depth (``level_bucket``; grown as deeper levels are
        # reached), for the time-weighted percentiles of its level (``level_percentile``)
        self.levels = array("d", bytes(8 * LEVEL_EXACT // 4))  # depths 0-15, grown when deeper
        # the time before it existed counts as empty, as in mean_depth (over the whole run)
        self.levels[0] = env.now
        # the payload bytes it holds now, at most, and their time integral (the mean)
        self.bytes = 0
        self.max_bytes = 0
        self.area_bytes = 0.0
        self.dropped = 0
        self.index = index  # position in the world's pipe table (for records)
        self.trace: list[float] | None = None  # flat (time, depth) pairs when tracing
        self.owner: Any = None  # the connection this pipe belongs to
        self.on_displace: Any = None  # conflate: called with the message pushed out
        # Waking the reader's thread costs the writer time (an eventfd write that lets the
        # woken thread run first): wake_cost(idle seconds) -> seconds, added to ``debt``
        # (the World), which the writing workload pays after its send call.
        self.asleep_since = 0.0
        self.wake_cost: Any = None
        self.debt: Any = None
        # The pipes one thread reads (an I/O thread's sessions, or one socket's inproc
        # pipes) share a WakeGroup: the thread sleeps only when all of them are drained,
        # and a write wakes it (and costs) only then (libzmq: one mailbox per thread).
        self.wake_group: WakeGroup | None = None
        self.wake_counted = False  # counted in wake_group.awake
        # the pipe's position in its writer's lb_t array and its reader's fq_t array, -1
        # outside (libzmq's array_item_t: routing.PipeArray)
        self.out_slot = -1
        self.in_slot = -1

    # -- queries ---------------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Messages physically in the pipe now (the truth, not the writer's view)."""
        return len(self.queue)

    def check_hwm(self) -> bool:
        """``pipe_t::check_hwm``: true if the writer's view says there is room."""
        hwm = self.hwm
        return hwm <= 0 or self.written - self.peers_read < hwm

    def check_write(self) -> bool:
        """``pipe_t::check_write``: room, writer active and pipe not terminating."""
        if not self.out_active or self.state != ACTIVE:
            return False
        hwm = self.hwm
        if hwm > 0 and self.written - self.peers_read >= hwm:
            self.out_active = False
            return False
        return True

    # -- writer side -----------------------------------------------------------------

    def write(self, msg: Message) -> None:
        """Append a complete message (call ``check_write`` first) and flush it.

        A conflating pipe keeps only the newest message and hands the one it pushed out
        to ``on_displace`` (``ypipe_conflate_t``).
        """
        queue = self.queue
        now = self.clock.now
        depth = len(queue)
        dt = now - self.last_change
        if dt > 0.0:
            self.area += depth * dt
            self.area_bytes += self.bytes * dt
            self._dwell(depth, dt)
        self.last_change = now
        if self.conflate and depth:
            displaced = queue.popleft()
            depth -= 1
            self.bytes -= displaced[2]  # MSG_SIZE (a literal: a module constant is a dict lookup when compiled)
            if self.on_displace is not None:
                self.on_displace(displaced)
        queue.append(msg)
        self.written += 1
        depth += 1
        if depth > self.max_depth:
            self.max_depth = depth
        size = self.bytes + msg[2]  # MSG_SIZE
        self.bytes = size
        if size > self.max_bytes:
            self.max_bytes = size
        if self.trace is not None:
            self.trace.append(now)
            self.trace.append(depth)
        if self.reader_asleep:
            self.reader_asleep = False
            group = self.wake_group  # set exactly when wake_cost is (World.new_pipe)
            if group is not None:
                if group.awake == 0:
                    asleep = group.asleep_since if group.asleep_since > self.asleep_since else self.asleep_since
                    self.debt.wake_debt += self.wake_cost(now - asleep)
                group.awake += 1
                self.wake_counted = True
            self.reader.post_activate_read(self)  # type: ignore[union-attr]

    def apply_activate_write(self, read_count: int) -> bool:
        """The writer processes ``activate_write(n)``; true if the pipe became writable."""
        if read_count > self.peers_read:
            self.peers_read = read_count
        if not self.out_active and self.state == ACTIVE:
            self.out_active = True
            return True
        return False

    # -- reader side -----------------------------------------------------------------

    def read(self) -> Message | None:
        """Pop one complete message, or None (and the reader goes to sleep)."""
        queue = self.queue
        if not queue:
            if not self.reader_asleep:
                self.fall_asleep()
            if self.delimited and self.owner is not None:
                self.owner.on_delimiter(self)
            return None
        now = self.clock.now
        depth = len(queue)
        dt = now - self.last_change
        if dt > 0.0:
            self.area += depth * dt
            self.area_bytes += self.bytes * dt
            self._dwell(depth, dt)
        self.last_change = now
        msg = queue.popleft()
        self.bytes -= msg[2]  # MSG_SIZE
        if self.trace is not None:
            self.trace.append(now)
            self.trace.append(depth - 1)
        count = self.read_count + 1
        self.read_count = count
        lwm = self.lwm
        if lwm and count % lwm == 0:
            self.writer.post_activate_write(self, count)  # type: ignore[union-attr]
        return msg

    # -- termination -----------------------------------------------------------------

    def mark_delimited(self) -> None:
        """The writer closed: a delimiter now sits behind the queued messages."""
        self.delimited = True
        self.state = TERMINATING
        self.out_active = False
        if self.reader_asleep:
            self.reader_asleep = False
            self.reader.post_activate_read(self)  # type: ignore[union-attr]

    def fall_asleep(self) -> None:
        """The reader found the pipe empty: it will need an activate_read to look again."""
        self.reader_asleep = True
        self.asleep_since = self.clock.now
        if self.wake_counted:
            self.reader_idle()

    def reader_idle(self) -> None:
        """The reading thread stops serving this pipe without draining it (an engine
        waiting for POLLOUT): it no longer keeps its thread awake. The pipe is not
        asleep, so writes to it send no activate_read (and wake nobody)."""
        if self.wake_counted:
            self.wake_counted = False
            group = self.wake_group
            if group is not None:  # always: only a pipe with a group counts itself awake
                group.awake -= 1
                if group.awake == 0:
                    group.asleep_since = self.clock.now

    def drain(self) -> list[Message]:
        """Remove and return everything queued (the pipe is being destroyed)."""
        now = self.clock.now
        if self.wake_counted:
            self.reader_idle()
        dt = now - self.last_change
        if dt > 0.0:
            self.area += len(self.queue) * dt
            self.area_bytes += self.bytes * dt
            self._dwell(len(self.queue), dt)
        self.last_change = now
        items = list(self.queue)
        self.queue.clear()
        self.bytes = 0
        if self.trace is not None and items:
            self.trace.append(now)
            self.trace.append(0)
        self.state = CLOSED
        return items

    def mean_depth(self, now: float, since: float = 0.0) -> float:
        span = now - since
        if span <= 0:
            return float(len(self.queue))
        return (self.area + len(self.queue) * (now - self.last_change)) / span

    def mean_bytes(self, now: float, since: float = 0.0) -> float:
        """The payload bytes it held, averaged over time."""
        span = now - since
        if span <= 0:
            return float(self.bytes)
        return (self.area_bytes + self.bytes * (now - self.last_change)) / span

    def _dwell(self, depth: int, dt: float) -> None:
        """``dt`` seconds spent at ``depth`` messages (a C array of doubles when compiled)."""
        bucket = depth if depth < 64 else level_bucket(depth)  # LEVEL_EXACT
        if bucket >= len(self.levels):
            self._grow(bucket)
        self.levels[bucket] += dt

    def _grow(self, bucket: int) -> None:
        """Room for ``bucket`` in ``levels`` (twice the buckets, at least: rarely called)."""
        grown = array("d", bytes(8 * max(bucket + 1, 2 * len(self.levels))))
        grown[:len(self.levels)] = array("d", self.levels)
        self.levels = grown

    def level_percentile(self, now: float, q: float) -> int:
        """The time-weighted ``q`` quantile of its depth (``level_percentiles``)."""
        return self.level_percentiles(now, (q,))[0]

    def level_percentiles(self, now: float, qs: tuple[float, ...]) -> list[int]:
        """The time-weighted quantiles ``qs`` of its depth (each 0 < q <= 1, ascending), in
        one pass: for each, the least level L such that it held at most L messages for at
        least ``q`` of the run's time (before it was made it held nothing, as ``mean_depth``
        counts); a level of 64 or more is known to its bucket (an eighth of an octave) and
        answered by the bucket's top, never below the truth, at most its ``max_depth``."""
        levels = list(self.levels)
        depth = len(self.queue)
        bucket = depth if depth < LEVEL_EXACT else level_bucket(depth)
        if bucket >= len(levels):
            levels.extend([0.0] * (bucket + 1 - len(levels)))
        levels[bucket] += max(0.0, now - self.last_change)
        total = sum(levels)
        if total <= 0.0:
            return [depth] * len(qs)
        found: list[int] = []
        running = 0.0
        for index, seconds in enumerate(levels):
            running += seconds
            while len(found) < len(qs) and running >= qs[len(found)] * total * (1.0 - 1e-12):
                found.append(index if index < LEVEL_EXACT else min(self.max_depth, bucket_floor(index + 1) - 1))
            if len(found) == len(qs):
                return found
        return found + [self.max_depth] * (len(qs) - len(found))  # pragma: no cover - the sum reaches q * total

    def __repr__(self) -> str:
        return f"<Pipe {self.name} depth={len(self.queue)} hwm={self.hwm} W={self.written} R={self.read_count} P={self.peers_read}>"
