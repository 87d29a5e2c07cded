"""TCP over a network link between two hosts (docs/model.md, "Links").

A ``[[link]]`` joins two hosts; each direction is the sending host's interface: a drop-tail
queue of ``queue_bytes`` in front of a wire that serializes frames at ``bandwidth_bps`` and
delivers them ``latency_s`` later (``Direction``), each of the four its own (the link's
``reverse`` gives the way back other values); a flow's ACKs come back over the other
direction's propagation, so a round trip is the two latencies added. A tcp connection between processes on the
two hosts keeps its two ``Wire`` objects, but each carries its bytes through a ``Flow``: the sending
kernel's TCP (send buffer, congestion window, TCP small queues, loss recovery) and the
receiving kernel's buffer and advertised window. Its engines are ``LinkEngine`` objects: they
write into the send buffer's free space, read only the bytes that have arrived in order,
and the send buffer frees on ACK, not on read.

Granularity: a flow sends *trains*, each what Linux would put into the qdisc at once (one
autosized skb, about a millisecond at the pacing rate: ``tcp_tso_autosize`` in
``net/ipv4/tcp_output.c``). A train's frames are serialized analytically (the direction's
``busy_until``: no event per packet), its bytes arrive together when its last frame has,
and one cumulative ACK answers it. Arrivals and ACKs of a direction are FIFO in time, so each
is a deque served by one re-armable timer. Drops and random loss are decided per frame.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..occupancy import recording_now
from .engine import Engine, Wire

if TYPE_CHECKING:  # pragma: no cover
    from ..context import Context
    from ..params import LinkParams

#: IPv4 (20) + TCP (20) + the timestamps option (12, ``net.ipv4.tcp_timestamps = 1``): the
#: MSS is the MTU less these (``tcp_mss_to_mtu`` in ``net/ipv4/tcp_output.c``)
IP_TCP_HEADER_BYTES = 52
#: the Ethernet header a veth's (or NIC's) qdisc counts per packet (no preamble or FCS)
ETHERNET_HEADER_BYTES = 14
#: RFC 6928 / ``TCP_INIT_CWND`` in ``include/net/tcp.h``
INITIAL_WINDOW_SEGMENTS = 10
#: CUBIC's multiplicative decrease (``beta = 717`` / 1024 in ``net/ipv4/tcp_cubic.c``)
LOSS_BETA = 717 / 1024
#: ``TCP_RTO_MIN`` (``include/net/tcp.h``): the retransmission timeout's floor
RTO_MIN_S = 0.2
#: RFC 5681 section 3.2: three duplicate ACKs start a fast retransmit
DUPACK_THRESHOLD = 3
#: ``net.ipv4.tcp_wmem`` = 4096 16384 4194304 and ``tcp_rmem`` = 4096 131072 6291456
TCP_WMEM_MAX = 4 * 1024 * 1024
TCP_RMEM_DEFAULT = 131072
TCP_RMEM_MAX = 6 * 1024 * 1024
#: ``tcp_sndbuf_expand`` (``net/ipv4/tcp_input.c``) charges each segment of the window one
#: power-of-two buffer of MSS + ``MAX_TCP_HEADER`` + ``skb_shared_info`` plus the ``sk_buff``
#: (the sending host's profile, ``TransportParams.sndbuf_per_segment_bytes``: 2,304 bytes on
#: a minimal kernel config, 4,352 on distributions'), twice over ("Cubic needs 1.7 factor,
#: rounded to 2"; CUBIC and Reno have no ``sndbuf_expand`` hook, BBR's asks for 3)
SNDBUF_WINDOWS = 2
#: the advertised window's share of the receive buffer (``tcp_win_from_space`` with
#: ``TCP_DEFAULT_SCALING_RATIO``, half: the rest pays for the skbs)
RCV_WINDOW_SHARE = 0.5
#: ``sk_pacing_shift`` = 10: a skb and TCP small queues hold about 1/1024 s at the pacing
#: rate; the pacing rate is 120 % of the delivery rate (``tcp_update_pacing_rate``,
#: ``sysctl_tcp_pacing_ca_ratio``), which on a link it fills is the link's rate
PACING_SHIFT_S = 1.0 / 1024
PACING_RATIO = 1.2
#: the bytes of a 64 KB GSO skb (``GSO_LEGACY_MAX_SIZE``): the largest train
MAX_TRAIN_BYTES = 65536
#: What a recording link direction appends after each train (``Direction.trace``, after the
#: time): the bytes in its queue just after it, the nanoseconds of serialization of every
#: frame it accepted so far, when (ns) its last queued frame will have left, and the packets
#: dropped at its queue or lost on the way so far. Both times stay as they are until the
#: next train, so the serialization done by any time t is ``serialization - max(0, until - t)``
TRACE_FIELDS = ("queue_bytes", "serialization_ns", "busy_until_ns", "drops")
#: SO_SNDBUF/SO_RCVBUF: capped at ``wmem_max``/``rmem_max`` (212992), with Linux's floors
LINUX_MAX_BUF = 212992


class Direction:
    """One direction of a link: the sending host's interface queue and the wire after it."""

    def __init__(self, ctx: Context, params: LinkParams, src: str, dst: str) -> None:
        self.ctx = ctx
        self.env = ctx.env
        self.clock = ctx.clock
        self.link = params.name
        self.name = f"{src}->{dst}"
        # this direction's own rate, propagation, queue and loss (a [[link]]'s ``reverse``
        # gives the way back its own); the MTU is the link's
        way = params.way(backward=src != params.hosts[0])
        self.rate = way.bandwidth_bps / 8.0  # bytes per second on the wire
        self.latency = way.latency_s
        self.queue_bytes = way.queue_bytes
        self.mss = params.mtu_bytes - IP_TCP_HEADER_BYTES
        self.header = IP_TCP_HEADER_BYTES + ETHERNET_HEADER_BYTES
        self.loss = way.loss
        self.rng = ctx.stream(f"link.{params.name}.{src}->{dst}.loss") if way.loss > 0 else None
        self.reverse: Direction = self
        self.busy_until = 0.0  # when the last frame queued so far has left
        # trains on the wire: [arrival time, flow, first byte, end byte, sent at]
        self.arrivals: deque[tuple[float, Flow, int, int, float]] = deque()
        self.arrival_timer = self.env.timer(self._arrive)
        # ACKs of flows sending this way, coming back: [time, flow, ack, window edge, sent at]
        self.acks: deque[tuple[float, Flow, int, int, float]] = deque()
        self.ack_timer = self.env.timer(self._ack)
        # what the answers show (summary["network"])
        self.bytes = 0  # payload carried
        self.packets = 0
        self.queue_drops = 0
        self.loss_drops = 0
        self.retransmits = 0
        self.resent_bytes = 0  # payload of the retransmissions it carried
        self.busy_s = 0.0
        self.first_sent_at = -1.0  # when it first carried a frame (its active span starts)
        self.max_queue_bytes = 0
        #: the flows of the connections that send this way (their report: ``connections``)
        self.flows: list[Flow] = []
        #: inside ``zsim.model.occupancy.recording()`` (a run report): after every train queued,
        #: ``time`` and the ``TRACE_FIELDS`` levels, which the report's recorder folds into a
        #: bounded series as the run goes on (``zsim.report_run.series``); None otherwise
        self.trace: list[float] | None = [] if recording_now() else None
        self.trace_emptied_at = 0.0  # the last time the trace says its queue ran empty
        #: a train: about a millisecond at the pacing rate, at least two segments
        train = max(2 * self.mss, int(PACING_RATIO * self.rate * PACING_SHIFT_S))
        self.train_bytes = min(MAX_TRAIN_BYTES, train // self.mss * self.mss)
        #: TCP small queues (``tcp_small_queue_check``): a flow keeps at most two skbs in
        #: the qdisc; the rest waits in its socket
        self.small_queue_bytes = 2 * self.train_bytes

    def queued(self, now: float) -> float:
        """Bytes in the queue not yet serialized."""
        return (self.busy_until - now) * self.rate if self.busy_until > now else 0.0

    def transmit(self, flow: Flow, lo: int, hi: int, retransmit: bool) -> float:
        """Queue the segments of bytes ``[lo, hi)``; returns when the last accepted one leaves.

        Frames that do not fit the queue are dropped (drop-tail, like tbf's or pfifo's
        ``limit``); each serialized frame is lost with probability ``loss``. The bytes
        that arrive are delivered together when the train's last frame has arrived; the
        lost ones are reported to the flow with the time it finds out.
        """
        now = self.clock.now
        if self.trace is not None:
            self.trace_idle(now)
        mss, header, rate = self.mss, self.header, self.rate
        nbytes = hi - lo
        segments = (nbytes + mss - 1) // mss
        backlog = self.queued(now)
        room = self.queue_bytes - backlog
        full_frame = mss + header
        fits = segments if nbytes + segments * header <= room else max(0, int(room // full_frame))
        accepted_end = hi if fits == segments else lo + fits * mss
        frames = (accepted_end - lo) + fits * header
        start = self.busy_until if self.busy_until > now else now
        end = start + frames / rate
        if fits:
            if self.first_sent_at < 0.0:
                self.first_sent_at = start
            self.busy_until = end
            self.busy_s += frames / rate
            self.packets += fits
            self.bytes += accepted_end - lo
            if retransmit:
                self.resent_bytes += accepted_end - lo
            queued = backlog + frames
            if queued > self.max_queue_bytes:
                self.max_queue_bytes = int(queued)
        if retransmit:
            self.retransmits += segments
        arrive = end + self.latency
        delivered = [(lo, accepted_end)] if fits else []
        if self.rng is not None and fits:
            lost = self.rng.random(fits) < self.loss
            if lost.any():
                delivered = []
                first = lo
                for index in range(fits):
                    seg_lo = lo + index * mss
                    if lost[index]:
                        self.loss_drops += 1
                        if seg_lo > first:
                            delivered.append((first, seg_lo))
                        first = min(seg_lo + mss, accepted_end)
                        later = fits - index - 1  # segments behind it: each a duplicate ACK
                        flow.lose(seg_lo, first, arrive + self.reverse.latency, later >= DUPACK_THRESHOLD)
                if first < accepted_end:
                    delivered.append((first, accepted_end))
        if accepted_end < hi:
            self.queue_drops += segments - fits
            # the frames behind an accepted one are acknowledged as duplicates
            flow.lose(accepted_end, hi, arrive + self.reverse.latency, False if fits < DUPACK_THRESHOLD else True)
        for first, last in delivered:
            self.arrivals.append((arrive, flow, first, last, now))
        if delivered and not self.arrival_timer.armed:
            self.arrival_timer.arm_at(self.arrivals[0][0])
        trace = self.trace
        if trace is not None:
            trace.extend((now, int(self.queued(now)), int(round(self.busy_s * 1e9)), int(round(self.busy_until * 1e9)),
                          self.queue_drops + self.loss_drops))
        return end

    def trace_idle(self, now: float) -> None:
        """If the queue ran empty since the trace's last point, say when: a queue drains between
        trains, and without this point the trace would hold its last level until the next train."""
        trace = self.trace
        if trace is not None and self.busy_s > 0.0 and self.trace_emptied_at < self.busy_until <= now:
            trace.extend((self.busy_until, 0, int(round(self.busy_s * 1e9)), int(round(self.busy_until * 1e9)),
                          self.queue_drops + self.loss_drops))
            self.trace_emptied_at = self.busy_until

    def _arrive(self) -> None:
        self._deliver_due(self.arrivals, self.arrival_timer, Flow.arrived)

    def _deliver_due(self, queue: Any, timer: Any, handle: Any) -> None:
        """Hand each entry ``(due, flow, a, b, sent_at)`` of ``queue`` due by now to its flow,
        ``handle(flow, a, b, sent_at)``, unless the flow closed; arm ``timer`` for the next."""
        now = self.clock.now
        while queue and queue[0][0] <= now:
            _, flow, a, b, sent_at = queue.popleft()
            if not flow.closed:
                handle(flow, a, b, sent_at)
        if queue:
            timer.arm_at(queue[0][0])

    def send_ack(self, flow: Flow, ack: int, edge: int, sent_at: float) -> None:
        """The receiver's ACK (or window update) for a flow sending this way, back over the
        reverse direction (ACKs are not queued behind the reverse direction's data)."""
        self.acks.append((self.clock.now + self.reverse.latency, flow, ack, edge, sent_at))
        if not self.ack_timer.armed:
            self.ack_timer.arm_at(self.acks[0][0])

    def _ack(self) -> None:
        self._deliver_due(self.acks, self.ack_timer, Flow.acked)

    def report(self, elapsed: float) -> dict[str, Any]:
        active = self.busy_until - self.first_sent_at if self.first_sent_at >= 0.0 else 0.0
        connections: dict[str, dict[str, float]] = {}
        samples: dict[str, list[float]] = {}
        for flow in self.flows:  # a reconnection's flows add to the same name
            entry = connections.setdefault(flow.wire.name, {"sending_s": 0.0, "window_limited_s": 0.0, "sndbuf_limited_s": 0.0,
                                                            "bytes": 0, "max_rtt_s": 0.0, "max_cwnd_bytes": 0,
                                                            "max_sndbuf_bytes": 0})
            sending, limited, by_sndbuf = flow.times(elapsed)
            entry["sending_s"] += sending
            entry["window_limited_s"] += limited
            entry["sndbuf_limited_s"] += by_sndbuf
            entry["max_sndbuf_bytes"] = max(entry["max_sndbuf_bytes"], flow.sndbuf)
            entry["sndbuf_fixed"] = 1 if flow.sndbuf_fixed else 0  # SO_SNDBUF set (else autotuned)
            entry["bytes"] += flow.snd_una
            entry["max_rtt_s"] = max(entry["max_rtt_s"], flow.max_rtt)
            entry["max_cwnd_bytes"] = max(entry["max_cwnd_bytes"], int(flow.max_cwnd))
            total = samples.setdefault(flow.wire.name, [0.0, 0])
            total[0] += flow.rtt_sum
            total[1] += flow.rtt_samples
        for name, entry in connections.items():
            entry["throughput_bps"] = 8.0 * entry["bytes"] / entry["sending_s"] if entry["sending_s"] > 0 else 0.0
            rtt_sum, count = samples[name]
            entry["rtt_s"] = rtt_sum / count if count else math.nan
            if not count:
                entry["max_rtt_s"] = math.nan
        return {
            "bandwidth_bps": self.rate * 8.0,
            "latency_s": self.latency,
            "queue_limit_bytes": self.queue_bytes,
            "bytes": self.bytes,
            "packets": self.packets,
            "utilisation": min(1.0, self.busy_s / elapsed) if elapsed > 0 else 0.0,
            # busy over the span from its first frame to its last: a link idle before and after a burst
            # is still saturated during it
            "active_utilisation": min(1.0, self.busy_s / active) if active > 0 else 0.0,
            "max_queue_bytes": self.max_queue_bytes,
            "queue_drops": self.queue_drops,
            "loss_drops": self.loss_drops,
            "retransmits": self.retransmits,
            # what the receivers got out of it: payload carried the first time, per second
            "goodput_bps": 8.0 * (self.bytes - self.resent_bytes) / elapsed if elapsed > 0 else 0.0,
            # per connection sending this way ("pub->sub", ``zsim.metrics.CONNECTION_FIELDS``): how long it was sending
            # and how much of that the receiver's window or its own send buffer held it back (``Flow.times``),
            # the payload acknowledged and its rate while sending, its round-trip times, its largest
            # congestion window and send buffer
            "connections": connections,
        }


class Flow:
    """One direction of one tcp connection over a link: the sender's TCP and the receiver's
    buffer. Byte counters are sequence numbers from 0: ``written`` (by the sending engine),
    ``snd_nxt``/``snd_una`` (sent / cumulatively acknowledged), ``rcv_nxt`` (arrived in
    order), ``read`` (by the receiving engine)."""

    def __init__(self, direction: Direction, wire: LinkWire, sndbuf: int, rcvbuf: int, sndbuf_per_segment: int) -> None:
        self.direction = direction
        self.wire = wire
        self.env = direction.env
        self.clock = direction.clock
        mss = direction.mss
        self.mss = mss
        self.closed = False
        # sender
        self.written = 0
        self.snd_nxt = 0
        self.snd_una = 0
        self.cwnd = float(INITIAL_WINDOW_SEGMENTS * mss)
        self.ssthresh = math.inf
        self.recovery_point = -1  # in recovery (no further decrease) until this is acknowledged
        self.cwnd_limited = False
        self.srtt = 0.0
        self.rttvar = 0.0
        # what the answers show per connection (``Direction.report``): every RTT sample (a train's
        # send to its ACK: the link's queue and serialization, both propagations, the receiver's
        # ACK delay; not the wait in the sender's buffer), and the largest congestion window
        self.rtt_sum = 0.0
        self.rtt_samples = 0
        self.max_rtt = 0.0
        self.max_cwnd = self.cwnd
        # tcp_info's tcpi_rwnd_limited (``tcp_chrono_start(sk, TCP_CHRONO_RWND_LIMITED)`` in
        # tcp_write_xmit, net/ipv4/tcp_output.c): the time the receiver's window, not the congestion
        # window, held back data while the reader kept up (its buffer less than half full: a window
        # closed by a reader that stopped is the reader's limit, not the window's)
        self.window_limited_s = 0.0
        self.window_limited_since = -1.0
        # tcpi_sndbuf_limited (TCP_CHRONO_SNDBUF_LIMITED, started in tcp_sendmsg_locked when the
        # writer waits for space), counted only while everything in the buffer has been sent and
        # no loss is being recovered: the buffer, full of bytes in flight, not the congestion
        # window, the link or a retransmission, held the writer back
        self.writer_waiting = False
        self.sndbuf_limited_s = 0.0
        self.sndbuf_limited_since = -1.0
        # tcpi_busy_time (TCP_CHRONO_BUSY): the time it had data written and not yet acknowledged,
        # the denominator of its rate and of the limited shares (idle gaps between bursts are not
        # sending)
        self.busy_s = 0.0
        self.busy_since = -1.0
        # SO_SNDBUF: fixed, and Linux doubles the value (sk_setsockopt: sk_sndbuf = 2 x val);
        # else autotuned with the window (tcp_sndbuf_expand), up to tcp_wmem's maximum. The
        # buffer is counted in payload bytes: an engine's writes of several KB make skbs
        # whose truesize is within 2 % of their payload (wmem_queued against Send-Q, ss -tm,
        # measured 2026-11-27 over a veth pair)
        self.sndbuf_fixed = sndbuf >= 0
        self.sndbuf_per_segment = sndbuf_per_segment
        self.sndbuf = 2 * min(max(sndbuf, 2304), LINUX_MAX_BUF) if sndbuf >= 0 else 0
        self._expand_sndbuf()
        self.trains: deque[tuple[float, float]] = deque()  # (leaves at, bytes) in the qdisc
        self.small_queue_timer = self.env.timer(self.push)
        self.retransmit_queue: list[tuple[int, int]] = []
        self.losses: list[tuple[float, int, int, bool]] = []  # (found at, lo, hi, by dupacks)
        self.loss_timer = self.env.timer(self._losses_found)
        # receiver
        self.rcv_nxt = 0
        self.read = 0
        self.out_of_order: list[tuple[int, int]] = []
        self.ooo_bytes = 0
        self.rcvbuf_fixed = rcvbuf >= 0
        space = min(max(rcvbuf, 1152), LINUX_MAX_BUF) if rcvbuf >= 0 else int(TCP_RMEM_DEFAULT * RCV_WINDOW_SHARE)
        self.rcv_window = space
        self.window_edge = space  # the right edge of the receiver's window, as the sender last heard it
        self.copied = 0  # read since ``copied_since`` (receive-buffer autotuning)
        self.copied_since = 0.0
        self.advertised = space  # the right edge the receiver last advertised
        self.ack_pending = False  # data arrived, the reader is woken: the ACK waits for its read
        self.ack_sent_at = 0.0

    # -- sender --------------------------------------------------------------------------

    def _expand_sndbuf(self) -> None:
        """``tcp_sndbuf_expand``: 2 x max(``TCP_INIT_CWND``, cwnd) x the per-segment charge,
        never shrinking, up to ``tcp_wmem``'s maximum (its third term, ``reordering`` + 1, is 4: the
        model reorders nothing, so ``tp->reordering`` stays ``net.ipv4.tcp_reordering`` = 3)."""
        if not self.sndbuf_fixed:
            segments = max(INITIAL_WINDOW_SEGMENTS, int(self.cwnd / self.mss))
            self.sndbuf = min(TCP_WMEM_MAX, max(self.sndbuf, SNDBUF_WINDOWS * segments * self.sndbuf_per_segment))

    def send_space(self) -> int:
        """Free bytes of the send buffer (unacknowledged and unsent bytes fill it)."""
        return self.sndbuf - (self.written - self.snd_una)

    def writable(self) -> bool:
        """``sk_stream_is_writeable``: free space at least half of what is queued."""
        queued = self.written - self.snd_una
        return self.sndbuf - queued >= queued // 2

    def write(self, nbytes: int) -> None:
        self.written += nbytes
        self.push()

    def writer_waits(self, waiting: bool) -> None:
        """The sending engine waits for room in the send buffer (or stopped waiting)."""
        self.writer_waiting = waiting
        self._sndbuf_limit()

    def _sndbuf_limit(self) -> None:
        # not while it recovers a loss: then the retransmission, not the buffer, holds it back
        limited = (self.writer_waiting and self.snd_nxt >= self.written and not self.closed and not self.losses
                   and not self.retransmit_queue and self.snd_una >= self.recovery_point)
        if limited:
            if self.sndbuf_limited_since < 0.0:
                self.sndbuf_limited_since = self.clock.now
        elif self.sndbuf_limited_since >= 0.0:
            self.sndbuf_limited_s += self.clock.now - self.sndbuf_limited_since
            self.sndbuf_limited_since = -1.0

    def push(self) -> None:
        """``tcp_write_xmit``: retransmissions first, then new data as far as the congestion
        window, the receiver's window and TCP small queues allow."""
        if self.closed:
            return
        direction = self.direction
        now = self.clock.now
        if self.busy_since < 0.0 and self.written > self.snd_una:
            self.busy_since = now
        trains = self.trains
        while trains and trains[0][0] <= now:
            trains.popleft()
        while self.retransmit_queue:
            lo, hi = self.retransmit_queue.pop(0)
            if hi > self.snd_una:
                trains.append((direction.transmit(self, max(lo, self.snd_una), hi, True), hi - lo))
        unsent = self.written - self.snd_nxt
        while unsent > 0:
            in_qdisc = 0.0
            for _leaves, nbytes in trains:
                in_qdisc += nbytes
            room = direction.small_queue_bytes - in_qdisc
            if room < min(unsent, direction.train_bytes):
                # tcp_tsq_handler: resume when the oldest skb has left the qdisc
                if not self.small_queue_timer.armed:
                    self.small_queue_timer.arm_at(trains[0][0])
                if self.window_limited_since >= 0.0:
                    self._window_limit_ends(now)
                return
            in_flight = self.snd_nxt - self.snd_una - self.ooo_bytes
            by_cwnd = int(self.cwnd) - in_flight
            by_rwnd = self.window_edge - self.snd_nxt
            allowed = min(unsent, by_cwnd, by_rwnd, direction.train_bytes)
            if allowed < unsent and allowed < direction.train_bytes:
                allowed = allowed // self.mss * self.mss  # only whole segments, except the tail
            self.cwnd_limited = by_cwnd < unsent and by_cwnd <= by_rwnd
            if allowed <= 0:  # an ACK or a window update sends more
                if by_rwnd <= by_cwnd and 2 * (self.rcv_nxt - self.read) < self.rcv_window:
                    if self.window_limited_since < 0.0:
                        self.window_limited_since = now
                elif self.window_limited_since >= 0.0:
                    self._window_limit_ends(now)
                return
            lo = self.snd_nxt
            self.snd_nxt = lo + allowed
            trains.append((direction.transmit(self, lo, lo + allowed, False), allowed))
            unsent -= allowed
        if self.window_limited_since >= 0.0:
            self._window_limit_ends(now)
        if self.writer_waiting:
            self._sndbuf_limit()

    def _window_limit_ends(self, now: float) -> None:
        self.window_limited_s += now - self.window_limited_since
        self.window_limited_since = -1.0

    def times(self, now: float) -> tuple[float, float, float]:
        """(seconds it had data written and not yet acknowledged, up to ``now``; of those,
        seconds the receiver's window held it back, and seconds its send buffer did)."""
        busy = self.busy_s
        if self.busy_since >= 0.0:
            busy += now - self.busy_since
        limited = self.window_limited_s
        if self.window_limited_since >= 0.0:
            limited += now - self.window_limited_since
        by_sndbuf = self.sndbuf_limited_s
        if self.sndbuf_limited_since >= 0.0:
            by_sndbuf += now - self.sndbuf_limited_since
        return busy, limited, by_sndbuf

    def lose(self, lo: int, hi: int, found_at: float, by_dupacks: bool) -> None:
        """Bytes ``[lo, hi)`` will not arrive: found by duplicate ACKs one round trip after
        (RFC 5681 3.2), else by the retransmission timeout (RFC 6298, ``TCP_RTO_MIN``)."""
        if not by_dupacks:
            # __tcp_set_rto: srtt + the variance term, which is at least TCP_RTO_MIN
            found_at = self.clock.now + self.srtt + max(RTO_MIN_S, 4 * self.rttvar)
        self.losses.append((found_at, lo, hi, by_dupacks))
        self.losses.sort()
        self.loss_timer.arm_at(self.losses[0][0])

    def _losses_found(self) -> None:
        if self.closed:
            return
        now = self.clock.now
        while self.losses and self.losses[0][0] <= now:
            _, lo, hi, by_dupacks = self.losses.pop(0)
            if hi <= self.snd_una:
                continue
            if lo >= self.recovery_point:
                # one reduction per window of data (RFC 5681 3.2, RFC 6582)
                self.ssthresh = max(2.0 * self.mss, self.cwnd * LOSS_BETA)
                self.cwnd = self.ssthresh if by_dupacks else float(self.mss)
                self.recovery_point = self.snd_nxt
            self.retransmit_queue.append((lo, hi))
        if self.losses:
            self.loss_timer.arm_at(self.losses[0][0])
        self.push()

    def acked(self, ack: int, edge: int, sent_at: float) -> None:
        now = self.clock.now
        if edge > self.window_edge:
            self.window_edge = edge
        if ack > self.snd_una:
            newly = ack - self.snd_una
            self.snd_una = ack
            if ack >= self.written and self.busy_since >= 0.0:
                self.busy_s += now - self.busy_since
                self.busy_since = -1.0
            sample = now - sent_at
            self.rtt_sum += sample
            self.rtt_samples += 1
            if sample > self.max_rtt:
                self.max_rtt = sample
            if self.srtt == 0.0:
                self.srtt, self.rttvar = sample, sample / 2
            else:  # RFC 6298 2.3
                self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
                self.srtt = 0.875 * self.srtt + 0.125 * sample
            if ack >= self.recovery_point and self.cwnd_limited:
                if self.cwnd < self.ssthresh:
                    self.cwnd += newly  # slow start (RFC 5681 3.1)
                else:
                    self.cwnd += self.mss * newly / self.cwnd  # congestion avoidance
                if self.cwnd > self.max_cwnd:
                    self.max_cwnd = self.cwnd
                self._expand_sndbuf()
            writer = self.wire.writer
            if writer is not None:
                writer.space_freed()
        self.push()

    # -- receiver ------------------------------------------------------------------------

    def arrived(self, lo: int, hi: int, sent_at: float) -> None:
        before = self.rcv_nxt
        if lo <= self.rcv_nxt:
            if hi > self.rcv_nxt:
                self.rcv_nxt = hi
                if self.out_of_order:
                    self._merge()
        else:
            self.out_of_order.append((lo, hi))
            self.out_of_order.sort()
            self.ooo_bytes += hi - lo
        reader = self.wire.reader
        if self.rcv_nxt > before and reader is not None and not reader.input_stopped and not reader.closed:
            # the reader is woken and reads first: the ACK goes after its reads, carrying the
            # window they reopened (__tcp_ack_snd_check defers it, tcp_cleanup_rbuf sends it)
            if not self.ack_pending:
                self.ack_pending = True
                self.ack_sent_at = sent_at
            reader.kick_in(reader.latency.next())
        else:
            self.direction.send_ack(self, self.rcv_nxt, self._edge(), sent_at)

    def _merge(self) -> None:
        pending = self.out_of_order
        while pending and pending[0][0] <= self.rcv_nxt:
            lo, hi = pending.pop(0)
            self.ooo_bytes -= hi - lo
            if hi > self.rcv_nxt:
                self.rcv_nxt = hi

    def _edge(self) -> int:
        """The right edge of the window the receiver advertises: what its buffer has room for."""
        edge = self.read + self.rcv_window
        if edge > self.advertised:
            self.advertised = edge
        return edge

    def readable(self) -> int:
        return self.rcv_nxt - self.read

    def consumed(self, nbytes: int, stopped: bool) -> bool:
        """The reading engine took ``nbytes`` (and stopped reading if ``stopped``): its
        buffer has room again. Returns whether the engine reads again at once.

        Autotuning (``tcp_rcv_space_adjust``): once per round trip, a window of twice what
        the application read in it plus 16 segments, up to ``tcp_rmem``'s maximum. When the
        sender waits for room, a window update goes back (``tcp_cleanup_rbuf``)."""
        self.read += nbytes
        more = not stopped and self.rcv_nxt > self.read
        now = self.clock.now
        if not self.rcvbuf_fixed:
            self.copied += nbytes
            if now - self.copied_since >= self.srtt:
                target = 2 * self.copied + 16 * self.mss
                if target > self.rcv_window:
                    self.rcv_window = min(target, int(TCP_RMEM_MAX * RCV_WINDOW_SHARE))
                self.copied = 0
                self.copied_since = now
        if self.ack_pending:
            if more:
                return more  # the ACK goes when the reader has taken what arrived, or stops
            self.ack_pending = False
            self.direction.send_ack(self, self.rcv_nxt, self._edge(), self.ack_sent_at)
            return more
        # tcp_cleanup_rbuf: a window update when the window left (as last advertised) is at most half
        # the buffer's and reading has at least doubled it
        left = self.advertised - self.rcv_nxt
        if 2 * left <= self.rcv_window and self.read + self.rcv_window - self.rcv_nxt >= 2 * left:
            self.direction.send_ack(self, self.rcv_nxt, self._edge(), now)
        return more

    def close(self) -> None:
        """The connection is gone: nothing more is sent, arrives or is acknowledged."""
        self.closed = True
        self.small_queue_timer.cancel()
        self.loss_timer.cancel()
        self._sndbuf_limit()


class LinkWire(Wire):
    """A ``Wire`` whose bytes cross a link: ``queue`` holds everything written and not yet
    read (send buffer, link, receive buffer); its ``flow`` says how much has arrived."""

    __slots__ = ("flow",)
    flow: Flow

    def push_last(self, batch: Any) -> None:
        before = self.bytes
        super().push_last(batch)
        self.flow.written += self.bytes - before
        self.flow.push()

    def clear(self) -> None:
        super().clear()
        self.flow.close()


class LinkEngine(Engine):
    """``stream_engine_base_t`` over a link: the same engine, but the kernel it writes into
    is a send buffer that frees on ACK, and it reads only what has arrived."""

    out_wire: LinkWire
    in_wire: LinkWire

    def _write(self) -> None:
        wire = self.out_wire
        flow = wire.flow
        batch = self.out_batch
        free = flow.send_space()
        if free <= 0:
            self._wait_for_space()
            wire.observe(self.clock.now)
            return
        moved = 0
        completed = 0
        while batch and free > 0:
            entry = batch[0]
            msg, remaining = entry
            n = remaining if remaining <= free else free
            last = n == remaining
            wire.queue.append([msg, n, last, 0])
            moved += n
            free -= n
            if last:
                batch.popleft()
                completed += 1
            else:
                entry[1] = remaining - n
        wire.bytes += moved
        wire.msgs += completed
        wire.charged += moved
        self.out_bytes -= moved
        wire.observe(self.clock.now)
        flow.write(moved)
        if self.out_bytes > 0:
            self._wait_for_space()
        else:
            self.kick_out()
        pipe = self.session.out_pipe
        if pipe is not None and pipe.delimited and not self.out_batch and not pipe.queue:
            self.session.delimiter_reached()

    def _wait_for_space(self) -> None:
        super()._wait_for_space()
        self.out_wire.flow.writer_waits(True)

    def space_freed(self) -> None:
        """ACKed bytes left the send buffer: POLLOUT once ``sk_stream_is_writeable``."""
        if self.out_waiting_space and not self.closed:
            if self.out_batch and not self.out_wire.flow.writable():
                return
            self.out_waiting_space = False
            self.out_wire.flow.writer_waits(False)
            if self.out_batch:
                now = self.clock.now
                when = max(now, self.out_free_at)
                if not self.out_timer.armed:
                    self.out_timer.arm(when - now)

    def _in_event(self) -> None:
        if self.closed or self.input_stopped:
            return
        wire = self.in_wire
        flow = wire.flow
        readable = flow.readable()
        if readable <= 0:
            if wire.peer_closed and not wire.queue:
                self.link.engine_error(self, "eof")
            return
        # One recv(), of only the bytes that have arrived in order.
        budget = self._recv_budget(wire.queue)
        if budget > readable:
            budget = readable
        decoded, taken, _freed = self._decode(wire.queue, budget)  # a link wire charges payload only
        wire.bytes -= taken
        wire.msgs -= len(decoded)
        wire.charged -= taken
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
                flow.consumed(taken, True)
                wire.observe(self.clock.now)
                return
        more = flow.consumed(taken, False)
        wire.observe(self.clock.now)
        if more or (wire.peer_closed and not wire.queue):
            self.kick_in()


class Path:
    """The two directions between two hosts, as a connection from ``a`` to ``b`` sees them."""

    __slots__ = ("forward", "backward")

    def __init__(self, forward: Direction, backward: Direction) -> None:
        self.forward = forward
        self.backward = backward

    @property
    def round_trip_s(self) -> float:
        return self.forward.latency + self.backward.latency

    def handshake_s(self) -> float:
        """connect() to both engines ready: the TCP three-way handshake (RFC 793 3.4: the
        connecter is established after one round trip, its ACK reaches the listener half a
        round trip later), then ZMTP 3 (``zmtp_engine_t::handshake``, RFC 23): each side's
        greeting answers the other's signature and the NULL mechanism's READY follows the
        greeting, so the connecter has the listener's READY three round trips after its SYN."""
        return 3.0 * self.round_trip_s

    def wires(self, c_name: str, b_name: str, capacity_fn: Any, c_opts: Any, b_opts: Any, now: float,
              c_per_segment: int, b_per_segment: int) -> tuple[LinkWire, LinkWire]:
        """The two ``LinkWire`` objects of a connection from the connecter (on ``a``) to the
        binder; each sender's buffer is charged its own host's ``*_per_segment`` bytes per segment."""
        c2b = LinkWire(f"{c_name}->{b_name}", capacity_fn, c_opts.sndbuf, b_opts.rcvbuf, c_opts.sndhwm, now)
        b2c = LinkWire(f"{b_name}->{c_name}", capacity_fn, b_opts.sndbuf, c_opts.rcvbuf, b_opts.sndhwm, now)
        c2b.flow = Flow(self.forward, c2b, c_opts.sndbuf, b_opts.rcvbuf, c_per_segment)
        b2c.flow = Flow(self.backward, b2c, b_opts.sndbuf, c_opts.rcvbuf, b_per_segment)
        self.forward.flows.append(c2b.flow)
        self.backward.flows.append(b2c.flow)
        return c2b, b2c


class Network:
    """The scenario's links, by the pair of hosts they join (zsim does not route)."""

    def __init__(self, ctx: Context, links: Sequence[LinkParams]) -> None:
        self.links: dict[str, tuple[Direction, Direction]] = {}
        self._paths: dict[tuple[str, str], Path] = {}
        for params in links:
            a, b = params.hosts
            forward, backward = Direction(ctx, params, a, b), Direction(ctx, params, b, a)
            forward.reverse, backward.reverse = backward, forward
            self.links[params.name] = (forward, backward)
            self._paths[(a, b)] = Path(forward, backward)
            self._paths[(b, a)] = Path(backward, forward)

    def path(self, a_host: str, b_host: str) -> Path | None:
        """The link's two directions from ``a_host`` to ``b_host``; None on one host (loopback)."""
        if a_host == b_host:
            return None
        path = self._paths.get((a_host, b_host))
        if path is None:
            raise ValueError(f"no link between hosts {a_host!r} and {b_host!r}")  # zsim.spec refuses such a connect
        return path

    def report(self, elapsed: float) -> dict[str, dict[str, dict[str, Any]]]:
        """``summary["network"]``: per link, per direction, what it carried and dropped."""
        return {name: {d.name: d.report(elapsed) for d in directions} for name, directions in self.links.items()}
