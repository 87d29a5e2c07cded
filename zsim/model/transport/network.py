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

import bisect
import math
from collections import deque
from collections.abc import Callable, Sequence
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
#: ``TCP_TIMEOUT_MIN`` (2 jiffies, taken as 10 ms): the shortest tail loss probe timeout
TLP_MIN_S = 0.01
#: ``TCP_RTO_MAX``: the backed-off retransmission timeout's ceiling
RTO_MAX_S = 120.0
#: how long a connection's retransmissions go unanswered before TCP gives up on it
#: (``retransmits_timed_out`` with ``tcp_model_timeout``: ``tcp_retries2`` = 15 timeouts from
#: ``TCP_RTO_MIN``, doubling to ``TCP_RTO_MAX`` after 9: (2^10 - 1) x 0.2 s + 6 x 120 s)
RETRIES2_TIMEOUT_S = 1023 * RTO_MIN_S + 6 * RTO_MAX_S
#: a connect's SYN unanswered is sent again after ``TCP_TIMEOUT_INIT`` (1 s): the first
#: ``tcp_syn_linear_timeouts`` + 1 times after 1 s each (``net.ipv4.tcp_syn_linear_timeouts`` = 4,
#: Linux 6.5; ``tcp_retransmit_timer`` doubles only once ``total_rto`` exceeds it), then
#: doubling, ``tcp_syn_retries`` (6) + 4 retransmissions in all (``tcp_write_timeout``):
#: SYNs at 0, 1, 2, 3, 4, 5, 7, 11, 19, 35 and 67 s, and connect() fails with ETIMEDOUT at
#: 131 s (measured on Linux 6.18 through a blackholed route: the same times, failed at 133.7 s)
SYN_TIMEOUT_S = 1.0
SYN_LINEAR_TIMEOUTS = 4
SYN_RETRIES = 6
#: the waits between a connect's SYNs, and after the last before it fails
SYN_WAITS_S = tuple(SYN_TIMEOUT_S * (1 << max(0, k - SYN_LINEAR_TIMEOUTS - 1)) for k in range(1, SYN_RETRIES + SYN_LINEAR_TIMEOUTS + 2))
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
#: ``sk_pacing_shift`` = 10: an autosized skb and TCP small queues hold about 1/1024 s at the
#: pacing rate (``tcp_tso_autosize``, ``tcp_small_queue_check``)
PACING_SHIFT_S = 1.0 / 1024
#: ``tcp_update_pacing_rate``: the pacing rate is max(cwnd, packets out) x MSS / srtt, times
#: ``sysctl_tcp_pacing_ss_ratio`` (200 %) while cwnd is below half of ssthresh, else
#: ``sysctl_tcp_pacing_ca_ratio`` (120 %); on a link it fills, 120 % of the link's rate
PACING_SS_RATIO = 2.0
PACING_RATIO = 1.2
#: ``sk_gso_max_size`` (``GSO_LEGACY_MAX_SIZE``, a veth's and most NICs'): the largest skb
MAX_TRAIN_BYTES = 65536
#: ``tcp_tso_autosize`` adds ``sk_gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`` (9, the
#: default since Linux 5.18): on a path whose smallest round trip is under 512 us a skb is
#: a full 64 KB, at 1 ms half of it, from about 16 ms nothing
TSO_RTT_LOG = 9
#: ``net.ipv4.tcp_min_tso_segs``: a skb holds at least two segments
MIN_TSO_SEGS = 2
#: ``net.ipv4.tcp_limit_output_bytes`` (4 MB from Linux 6.8; 1 MB before): TCP small queues'
#: cap when the qdisc does not pace (no fq)
TCP_LIMIT_OUTPUT_BYTES = 4 * 1024 * 1024
#: CUBIC (``net/ipv4/tcp_cubic.c``): ``C`` = ``bic_scale`` 41 x 10 / 1024 segments per s^3,
#: ``fast_convergence`` on, and the Reno-friendly estimate's growth ``beta_scale`` (one
#: segment per ``8 / beta_scale`` windows acknowledged: 15, an integer in the kernel)
CUBIC_C = 41 * 10 / 1024
CUBIC_BETA_SCALE = 8 * (1024 + 717) // 3 // (1024 - 717)
#: HyStart's delay detection (``hystart_update``, ``hystart_detect`` = 3): from 16 segments
#: (``hystart_low_window``) a round's first 8 RTT samples (``HYSTART_MIN_SAMPLES``) above the
#: connection's smallest by an eighth of it, clamped to [4 ms, 16 ms], end slow start
HYSTART_LOW_WINDOW = 16
HYSTART_MIN_SAMPLES = 8
HYSTART_DELAY_MIN_S = 0.004
HYSTART_DELAY_MAX_S = 0.016
#: a SYN or SYN-ACK frame on the wire: IPv4 + TCP with MSS, SACK, timestamps and window
#: scale options (40 + 20) + Ethernet 14: what the handshake's first RTT sample serializes
SYN_FRAME_BYTES = 74
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
        self.queue_drops = 0  # packets its queue dropped, of which ...
        self.local_drops = 0  # ... whole skbs refused to their own host's TCP (local congestion)
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
        #: tbf's bucket (``max_size``), as ``zsim validate`` sets it: two full frames, or a millisecond
        #: at the rate if that is more. A GSO skb larger than it is cut into segments and each queued
        #: while there is room (``tbf_segment``); a smaller one is queued or refused whole
        self.burst_bytes = max(2 * (self.mss + self.header), int(self.rate / 1000))
        #: how a train's bytes arrive: in chunks of about a millisecond at 120 % of the
        #: link's rate (at least two segments, what a receiver acknowledges at once), each
        #: when its last frame has, so a 64 KB skb over a slow link is not delivered whole
        chunk = max(2 * self.mss, int(PACING_RATIO * self.rate * PACING_SHIFT_S))
        self.chunk_bytes = min(MAX_TRAIN_BYTES, chunk // self.mss * self.mss)
        #: [[fault]]s on this direction (``Network.apply_faults``): the intervals it is down
        #: (sorted, apart) and those it loses each packet with a probability, each (start,
        #: end, probability, random stream); a direction without any takes none of these paths
        self.faulty = False
        self.down: list[tuple[float, float]] = []
        self.down_ends: list[float] = []
        self.lossy: list[tuple[float, float, float, Any]] = []
        self.lossy_until = 0.0  # when the last of them ends
        self.outage_drops = 0  # frames lost on the wire while it was down ...
        self.fault_loss_drops = 0  # ... and to a loss fault
        self.acks_lost = 0  # ACKs of flows sending this way lost on their way back while it was down
        self.fault_fields = False  # the network has faults: report the fields of ``_fault_report``
        # the first frame to arrive after each interval it was down ended: (end, arrival)
        self.recovered: list[tuple[float, float]] = []
        self._recovered_index = 0

    def add_faults(self, down: Sequence[tuple[float, float]], lossy: Sequence[tuple[float, float, float, Any]]) -> None:
        """Intervals this direction is down (merged with those it has) and loses packets."""
        merged: list[tuple[float, float]] = []
        for start, end in sorted([*self.down, *down]):
            if merged and start <= merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        self.down = merged
        self.down_ends = [end for _, end in merged]
        self.lossy = sorted([*self.lossy, *lossy], key=lambda entry: entry[0])
        self.lossy_until = max((end for _, end, _, _ in self.lossy), default=0.0)
        self.faulty = bool(self.down or self.lossy)

    def down_at(self, t: float) -> bool:
        """Whether it is down at ``t`` (frames on its wire are lost)."""
        index = bisect.bisect_right(self.down_ends, t)  # the first interval not over by t
        return index < len(self.down) and self.down[index][0] <= t

    def _note_arrival(self, at: float) -> None:
        """A frame that left at ``at`` - latency arrives at ``at``: the first after every
        interval it was down that had ended by the time the frame left."""
        down = self.down
        index = self._recovered_index
        left = at - self.latency
        while index < len(down) and down[index][1] <= left:
            self.recovered.append((down[index][1], at))
            index += 1
        self._recovered_index = index

    def down_s(self, until: float) -> float:
        """Seconds it was down from 0 to ``until``."""
        return sum(max(0.0, min(end, until) - start) for start, end in self.down if start < until)

    def _fault_losses(self, start: float, fits: int, lost: Any) -> Any:
        """Which of ``fits`` frames serialized one after another from ``start`` are lost to a
        fault: on the wire while the direction is down (``outage_drops``), or at a loss fault's
        probability (``fault_loss_drops``); ``lost`` (random loss, or None) is kept. Returns a
        list of causes per frame (None: arrives, "loss", "down", "fault"), or ``lost`` itself when
        no fault overlaps the frames."""
        frame_s = (self.mss + self.header) / self.rate
        end = start + fits * frame_s
        # the intervals not over by ``start`` (the down ones apart and sorted, their ends too)
        down = self.down[bisect.bisect_right(self.down_ends, start):]
        lossy = self.lossy if self.lossy_until > start else []
        if not (down and down[0][0] < end) and not any(a < end and b > start for a, b, _, _ in lossy):
            return lost
        causes: list[str | None] = ["loss" if lost is not None and lost[i] else None for i in range(fits)]
        for down_start, down_end in down:
            if down_start >= end:
                break
            first = max(0, math.ceil((down_start - start) / frame_s - 1e-9))
            last = min(fits, math.ceil((down_end - start) / frame_s - 1e-9))
            for i in range(first, last):
                causes[i] = "down"
        for lossy_start, lossy_end, probability, rng in lossy:
            if lossy_start >= end:
                break
            if lossy_end <= start:
                continue
            for i in range(fits):
                at = start + i * frame_s
                if causes[i] is None and lossy_start <= at < lossy_end and rng.random() < probability:
                    causes[i] = "fault"
        return causes

    def queued(self, now: float) -> float:
        """Bytes in the queue not yet serialized."""
        return (self.busy_until - now) * self.rate if self.busy_until > now else 0.0

    def relay(self, flow: Flow, lo: int, hi: int, sent_at: float) -> None:
        """Bytes ``[lo, hi)`` of ``flow`` reached the switch at this direction's sending end
        (sent at ``sent_at``): they go out of its port onto this link, drop-tail by packet. The
        port is not the sending host's own qdisc: no TCP small queues, and what does not fit is
        lost to TCP, found as any loss on the way is (RACK or a tail loss probe)."""
        now = self.clock.now
        if self.trace is not None:
            self.trace_idle(now)
        mss = self.mss
        segments = (hi - lo + mss - 1) // mss
        backlog = self.queued(now)
        room = self.queue_bytes - backlog
        fits = segments if hi - lo + segments * self.header <= room else max(0, int(room // (mss + self.header)))
        self._carry(flow, lo, hi, segments, fits, backlog, now, False, sent_at)

    def transmit(self, flow: Flow, lo: int, hi: int, retransmit: bool) -> float:
        """Queue the segments of bytes ``[lo, hi)`` (one skb); returns when the last accepted
        one leaves, or -1 when the queue took none of them.

        Frames that do not fit the queue are dropped (drop-tail, like tbf's or pfifo's
        ``limit``); each serialized frame is lost with probability ``loss``. A skb the queue
        refuses whole is the sending host's own qdisc saying ``NET_XMIT_DROP``: TCP keeps it
        unsent and reduces its window (local congestion, ``tcp_enter_cwr`` in
        ``__tcp_transmit_skb``), so it is not reported lost. One whose first segments fit is
        accepted and its tail dropped (``tbf_segment`` answers ``NET_XMIT_SUCCESS`` when any
        segment was queued): those are lost, as on the wire, and TCP finds them so. The
        bytes that arrive are delivered in chunks (``chunk_bytes``), each when its last frame
        has arrived; the lost ones are reported to the flow with the time it finds out.
        """
        now = self.clock.now
        if self.trace is not None:
            self.trace_idle(now)
        mss, header = self.mss, self.header
        nbytes = hi - lo
        segments = (nbytes + mss - 1) // mss
        backlog = self.queued(now)
        room = self.queue_bytes - backlog
        full_frame = mss + header
        wire_bytes = nbytes + segments * header
        if wire_bytes <= room:
            fits = segments
        elif wire_bytes <= self.burst_bytes:
            fits = 0  # a skb within tbf's bucket is queued whole or refused whole
        else:
            fits = max(0, int(room // full_frame))  # tbf_segment: the segments that fit are queued
        if not fits and segments:
            # the host's own qdisc refused the whole skb: TCP keeps it and slows (no loss)
            self.queue_drops += segments
            self.local_drops += segments
            trace = self.trace
            if trace is not None:
                trace.extend((now, int(backlog), int(round(self.busy_s * 1e9)), int(round(self.busy_until * 1e9)),
                              self.queue_drops + self.loss_drops))
            return -1.0
        return self._carry(flow, lo, hi, segments, fits, backlog, now, retransmit, now)

    def _carry(self, flow: Flow, lo: int, hi: int, segments: int, fits: int, backlog: float, now: float, retransmit: bool,
               sent_at: float) -> float:
        """Serialize the first ``fits`` of the ``segments`` segments of ``[lo, hi)`` behind what the
        queue holds (``backlog`` bytes), drop the rest, lose each with probability ``loss``, and
        deliver what arrives in chunks (``chunk_bytes``); returns when the last accepted one leaves."""
        mss, header, rate = self.mss, self.header, self.rate
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
        delivered = [(lo, accepted_end)] if fits else []
        lost: Any = None
        if self.rng is not None and fits:
            lost = self.rng.random(fits) < self.loss
            if not lost.any():
                lost = None
        if self.faulty and fits:
            causes = self._fault_losses(start, fits, lost)
            lost = causes if causes is not None and any(causes) else None
        if lost is not None:
            delivered = []
            first = lo
            for index in range(fits):
                seg_lo = lo + index * mss
                cause = lost[index]
                if cause:
                    if cause == "down":
                        self.outage_drops += 1
                    elif cause == "fault":
                        self.fault_loss_drops += 1
                    self.loss_drops += 1
                    if seg_lo > first:
                        delivered.append((first, seg_lo))
                    first = min(seg_lo + mss, accepted_end)
                    flow.dropped(seg_lo, first, retransmit)
            if first < accepted_end:
                delivered.append((first, accepted_end))
        if accepted_end < hi:
            self.queue_drops += segments - fits
            flow.dropped(accepted_end, hi, retransmit)
        chunk = self.chunk_bytes
        arrivals = self.arrivals
        latency = self.latency
        if self.down and delivered and self._recovered_index < len(self.down):
            self._note_arrival(start + latency)
        for first, last in delivered:
            while first < last:
                # a chunk ends at a multiple of chunk_bytes from the skb's start, or at the range's end
                stop = min(last, lo + ((first - lo) // chunk + 1) * chunk)
                sent_bytes = stop - lo
                arrivals.append((start + (sent_bytes + ((sent_bytes + mss - 1) // mss) * header) / rate + latency,
                                 flow, first, stop, sent_at))
                first = stop
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
        self._deliver_due(self.arrivals, self.arrival_timer, self._hand_on)

    def _hand_on(self, flow: Flow, lo: int, hi: int, sent_at: float) -> None:
        """Bytes that crossed this direction: to the flow's receiver, or, on a route through
        switches, out of the next link's port."""
        hops = flow.next_hops
        if hops is None:
            flow.arrived(lo, hi, sent_at)
            return
        after = hops.get(self)
        if after is None:
            flow.arrived(lo, hi, sent_at)
        else:
            after.relay(flow, lo, hi, sent_at)

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
        way back's propagation (``Flow.ack_latency``: the links of the route back; ACKs are
        not queued behind the reverse directions' data). While a direction of the way back is
        down, the ACK is lost (a route with faults only)."""
        now = self.clock.now
        if flow.back_faulty and any_down(flow.way_back, now):
            self.acks_lost += 1
            return
        due = now + flow.ack_latency
        acks = self.acks
        if acks and due < acks[-1][0]:
            # flows leaving by this direction to different hosts come back over routes of
            # different lengths: keep the deque in time order
            index = len(acks)
            while index and acks[index - 1][0] > due:
                index -= 1
            acks.insert(index, (due, flow, ack, edge, sent_at))
            if self.ack_timer.armed:
                self.ack_timer.cancel()
        else:
            acks.append((due, flow, ack, edge, sent_at))
        if not self.ack_timer.armed:
            self.ack_timer.arm_at(acks[0][0])

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
            "local_drops": self.local_drops,
            "loss_drops": self.loss_drops,
            "retransmits": self.retransmits,
            # what the receivers got out of it: payload carried the first time, per second
            "goodput_bps": 8.0 * (self.bytes - self.resent_bytes) / elapsed if elapsed > 0 else 0.0,
            # per connection sending this way ("pub->sub", ``zsim.metrics.CONNECTION_FIELDS``): how long it was sending
            # and how much of that the receiver's window or its own send buffer held it back (``Flow.times``),
            # the payload acknowledged and its rate while sending, its round-trip times, its largest
            # congestion window and send buffer
            "connections": connections,
        } | (self._fault_report(elapsed) if self.fault_fields else {})

    def _fault_report(self, elapsed: float) -> dict[str, Any]:
        """With [[fault]]s: how long it was down, the frames lost on its wire while down and
        to loss faults, the ACKs lost on their way back, and the retransmission timeouts of
        the flows that send this way."""
        return {"down_s": self.down_s(elapsed), "outage_drops": self.outage_drops, "fault_loss_drops": self.fault_loss_drops,
                "acks_lost": self.acks_lost, "timeouts": sum(flow.timeouts for flow in self.flows if flow.direction is self)}


class Flow:
    """One direction of one tcp connection over a link: the sender's TCP and the receiver's
    buffer. Byte counters are sequence numbers from 0: ``written`` (by the sending engine),
    ``snd_nxt``/``snd_una`` (sent / cumulatively acknowledged), ``rcv_nxt`` (arrived in
    order), ``read`` (by the receiving engine)."""

    # a route without [[fault]]s (``__init__`` sets them per flow)
    faulty = False
    back_faulty = False
    rto_timer: Any = None
    resend_until = 0
    heard_at = 0.0  # on a route with faults: when its sender last had an ACK, or its receiver data
    dead_receiver = False  # its receiver's host crashed: what reaches it is answered by a reset

    def __init__(self, direction: Direction, wire: LinkWire, sndbuf: int, rcvbuf: int, sndbuf_per_segment: int,
                 hops: Sequence[Direction] = (), back: Sequence[Direction] = ()) -> None:
        self.direction = direction
        # the route: ``direction`` (the sending host's own interface) then the switches' ports
        # (``hops``, empty on one link), and the way back (``back``; empty: ``direction.reverse``)
        route = list(hops) or [direction]
        way_back = list(back) or [direction.reverse]
        #: on a route through switches, each direction's next one (None: one link)
        self.next_hops: dict[Direction, Direction] | None = (
            dict(zip(route[:-1], route[1:], strict=True)) if len(route) > 1 else None)
        #: the way back's propagation: when an ACK (and what it shows) reaches the sender
        self.ack_latency = sum(d.latency for d in way_back)
        #: a route with [[fault]]s: ACKs are lost while the way back is down, tail loss probes
        #: while either way is, and a retransmission timer backs off until the route is back
        #: (``_timeout``); without, none of it runs
        self.route = route
        self.way_back = way_back
        self.faulty = any(d.faulty for d in route) or any(d.faulty for d in way_back)
        self.back_faulty = any(d.down for d in way_back)
        self.timeouts = 0  # retransmission timeouts (RTOs) that fired
        self.backoff = 0  # icsk_backoff: doublings of the timeout since the last new ACK
        self.retrans_stamp = -1.0  # when the oldest unacknowledged data was sent, while timing out
        self.resend_until = 0  # after a timeout, what is sent again below this is a retransmission
        self.rto_timer = direction.env.timer(self._timeout) if self.faulty else None
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
        self.recovery_point = -1  # in recovery or CWR (no further decrease) until this is acknowledged
        # tcp_cwnd_validate: whether the window was used up in the current window of data
        # (``is_cwnd_limited``, kept until ``cwnd_usage_seq`` is acknowledged), and the most
        # bytes in flight meanwhile (``max_packets_out``): the window grows only when it limits
        self.cwnd_limited = False
        self.cwnd_usage_seq = 0
        self.max_in_flight = 0
        # the handshake's round trip is the first RTT sample (tcp_synack_rtt_meas,
        # tcp_ack_update_rtt): two small frames serialized and both propagations
        handshake = sum(d.latency + SYN_FRAME_BYTES / d.rate for d in route + way_back)
        self.srtt = handshake
        self.rttvar = handshake / 2
        self.min_rtt = handshake  # tcp_min_rtt (and CUBIC's delay_min) ...
        self.tso_extra = 0  # ... and what tcp_tso_autosize adds for it (_set_min_rtt)
        self.size_goal = MAX_TRAIN_BYTES // mss * mss  # tcp_xmit_size_goal: tcp_sendmsg's skbs
        self._set_min_rtt(handshake)
        # CUBIC (bictcp_update): the epoch (-1: none yet), the window before the last reduction
        # (segments), the cubic's origin and K, acknowledged segments since the epoch and the
        # Reno-friendly estimate (tcp_friendliness), and HyStart's round (hystart_update)
        self.epoch_start = -1.0
        self.last_max_cwnd = 0.0
        self.origin = 0.0
        self.cubic_k = 0.0
        self.ack_cnt = 0.0
        self.reno_cwnd = 0.0
        self.hystart_end = 0
        self.hystart_samples = 0
        self.hystart_rtt = math.inf
        self.last_sent_at = -1.0  # when it last handed a skb to the qdisc (tcp_wstamp_ns)
        self.unacked: deque[tuple[int, float]] = deque()  # (end, sent at) of the skbs in flight, oldest first
        self.in_recovery = False  # in fast recovery or loss (icsk_ca_state >= TCP_CA_Recovery)
        self.probe_timer = self.env.timer(self.push)  # tcp_probe_timer after a local drop with nothing out
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
        self.unfound: list[tuple[int, int, float]] = []  # (lo, hi, sent at) lost, until a later segment's arrival shows it
        self.probe_loss_timer = self.env.timer(self._loss_probe)
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

    def pacing_rate(self) -> float:
        """``tcp_update_pacing_rate``: bytes per second, from the window and the smoothed RTT."""
        in_flight = self.snd_nxt - self.snd_una
        window = self.cwnd if self.cwnd >= in_flight else float(in_flight)
        ratio = PACING_SS_RATIO if self.cwnd < self.ssthresh / 2 else PACING_RATIO
        return ratio * window / self.srtt if self.srtt > 0.0 else math.inf

    def skb_bytes(self, pacing: float) -> int:
        """``tcp_tso_autosize``: about 1/1024 s at the pacing rate, plus the whole of
        ``sk_gso_max_size`` halved once per 512 us of the smallest round trip
        (``tcp_tso_rtt_log``: ``tso_extra``), at most 64 KB, at least two segments; whole segments."""
        size = pacing * PACING_SHIFT_S + self.tso_extra
        if size >= MAX_TRAIN_BYTES:
            return self.size_goal
        segments = int(size) // self.mss
        return (segments if segments > MIN_TSO_SEGS else MIN_TSO_SEGS) * self.mss

    def _set_min_rtt(self, rtt: float) -> None:
        self.min_rtt = rtt
        shift = int(rtt * 1e6) >> TSO_RTT_LOG
        self.tso_extra = MAX_TRAIN_BYTES >> shift if shift < 32 else 0

    def push(self) -> None:
        """``tcp_write_xmit``: retransmissions first, then new data as far as the congestion
        window, the receiver's window and TCP small queues allow, one autosized skb at a time."""
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
            lo, hi = self.retransmit_queue[0]
            if hi > self.snd_una:
                leaves = direction.transmit(self, max(lo, self.snd_una), hi, True)
                if leaves < 0.0:  # refused by its own qdisc: tried again later, window reduced
                    self._local_drop(now)
                    return
                trains.append((leaves, hi - lo))
            self.retransmit_queue.pop(0)
        unsent = self.written - self.snd_nxt
        if unsent <= 0:
            if self.cwnd - (self.snd_nxt - self.snd_una - self.ooo_bytes) < self.mss:
                self._cwnd_validate(True)
            if self.window_limited_since >= 0.0:
                self._window_limit_ends(now)
            if self.writer_waiting:
                self._sndbuf_limit()
            return
        pacing = self.pacing_rate()
        skb = self.skb_bytes(pacing)
        mss = self.mss
        sent_any = False
        is_limited = False
        while unsent > 0:
            in_flight = self.snd_nxt - self.snd_una - self.ooo_bytes
            by_cwnd = int(self.cwnd) - in_flight
            by_rwnd = self.window_edge - self.snd_nxt
            # one skb: as much as the windows and the autosize allow, wherever tcp_sendmsg's skbs
            # end (tcp_grow_skb, Linux 6.10: the head skb takes data from the next ones)
            allowed = min(unsent, by_cwnd, by_rwnd, skb)
            if allowed < unsent and allowed < skb:
                allowed = allowed // mss * mss  # only whole segments, except the tail
            if allowed <= 0:  # an ACK or a window update sends more
                if by_cwnd <= by_rwnd and by_cwnd < unsent:
                    is_limited = True
                if by_rwnd <= by_cwnd and 2 * (self.rcv_nxt - self.read) < self.rcv_window:
                    if self.window_limited_since < 0.0:
                        self.window_limited_since = now
                elif self.window_limited_since >= 0.0:
                    self._window_limit_ends(now)
                break
            if trains and in_flight > 0:
                # tcp_small_queue_check: no more while what this socket has in the qdisc (its
                # frames' truesize) exceeds two of the skb it would send (its payload and one
                # head: the profile's per-segment charge less the MSS), or 1/1024 s at the pacing
                # rate, at most tcp_limit_output_bytes; never with nothing unacknowledged
                # (tcp_rtx_queue_empty)
                in_qdisc = self._in_qdisc(now)
                limit = max(2.0 * (allowed + self.sndbuf_per_segment - mss), pacing * PACING_SHIFT_S)
                if limit > TCP_LIMIT_OUTPUT_BYTES:
                    limit = TCP_LIMIT_OUTPUT_BYTES
                if in_qdisc > limit:
                    # tcp_wfree / tcp_tsq_handler: resume when enough of its frames have left
                    if not self.small_queue_timer.armed:
                        self.small_queue_timer.arm_at(self._below(in_qdisc - limit, now))
                    if self.window_limited_since >= 0.0:
                        self._window_limit_ends(now)
                    break
            if allowed < unsent and allowed >= 2 * mss and self._defer(allowed, by_cwnd, by_rwnd, unsent, skb, now):
                is_limited = is_limited or by_cwnd < by_rwnd and by_cwnd <= min(unsent, MAX_TRAIN_BYTES)
                break
            lo = self.snd_nxt
            leaves = direction.transmit(self, lo, lo + allowed, lo < self.resend_until)
            if leaves < 0.0:  # refused whole by its own qdisc (NET_XMIT_DROP): kept, window reduced
                self._local_drop(now)
                break
            self.snd_nxt = lo + allowed
            self.last_sent_at = now
            self.unacked.append((lo + allowed, now))
            trains.append((leaves, allowed))
            unsent -= allowed
            sent_any = True
        else:
            if self.window_limited_since >= 0.0:
                self._window_limit_ends(now)
        # tcp_write_xmit's end: cwnd-limited if what is in flight fills the window
        if self.cwnd - (self.snd_nxt - self.snd_una - self.ooo_bytes) < mss:
            is_limited = True
        if sent_any or is_limited:
            self._cwnd_validate(is_limited)
        rto_timer = self.rto_timer
        if rto_timer is not None and sent_any and not rto_timer.armed:
            rto_timer.arm(self._rto())  # tcp_event_new_data_sent -> tcp_rearm_rto
        if self.writer_waiting:
            self._sndbuf_limit()

    def _rto(self) -> float:
        """``icsk_rto`` backed off: srtt + max(``TCP_RTO_MIN``, 4 rttvar) (``__tcp_set_rto``),
        doubled ``backoff`` times, at most ``TCP_RTO_MAX`` (``inet_csk_rto_backoff``)."""
        rto = self.srtt + max(RTO_MIN_S, 4.0 * self.rttvar)
        return min(RTO_MAX_S, rto * (1 << min(self.backoff, 30)))

    def path_down(self, t: float) -> bool:
        """Whether a direction of its route or of the way back is down at ``t``."""
        return any_down(self.route, t) or any_down(self.way_back, t)

    def _timeout(self) -> None:
        """``tcp_retransmit_timer``: nothing acknowledged for a whole timeout. After
        ``RETRIES2_TIMEOUT_S`` of it TCP gives up (``tcp_write_timeout``: ETIMEDOUT, and libzmq's
        engine errors, ``_give_up``). Otherwise ``tcp_enter_loss``: the first timeout of an episode
        sets ssthresh by CUBIC's hook, the window is one segment and CUBIC starts over; everything
        unacknowledged is sent again from the first byte, in slow start (go-back-N: Linux skips
        what SACK showed arrived, which a route down both ways has not shown); the timeout
        doubles (``icsk_backoff``) until an ACK of new data."""
        if self.closed or self.snd_una >= self.snd_nxt:
            return
        now = self.clock.now
        if self.retrans_stamp < 0.0:
            self.retrans_stamp = self.unacked[0][1] if self.unacked else now
        elif now - self.retrans_stamp >= RETRIES2_TIMEOUT_S:
            self._give_up()
            return
        if self.backoff == 0:
            self._reduce()
        self.cwnd = float(self.mss)
        self.last_max_cwnd = 0.0
        self.hystart_end = self.snd_nxt
        self.recovery_point = self.snd_nxt
        self.in_recovery = True
        if self.snd_nxt > self.resend_until:
            self.resend_until = self.snd_nxt
        self.snd_nxt = self.snd_una
        self.unacked.clear()
        self.retransmit_queue.clear()
        self.losses.clear()
        self.loss_timer.cancel()
        self.unfound.clear()
        self.probe_loss_timer.cancel()
        self.timeouts += 1
        self.backoff += 1
        assert self.rto_timer is not None
        self.rto_timer.arm(self._rto())
        self.push()

    def _reset(self) -> None:
        """A segment reached a host that crashed and came back: its kernel knows no such
        connection and answers with a reset (``tcp_v4_send_reset``); the sender's engine reads
        ECONNRESET and the connection breaks (on the sender's side: it was gone on the other)."""
        self.break_connection("reset by the restarted host", "reset")

    def _give_up(self) -> None:
        """``tcp_write_err``: the socket's error is ETIMEDOUT; the engine writing into it sees
        it and the connection breaks (``stream_engine_base_t::error``: its pipes terminate,
        a connecting side reconnects). Both ends break at once: a one-way flow's receiver
        would learn of it only when it next sends (a reset), which the model does not wait for."""
        self.break_connection("tcp_retries2", "timeout")

    def break_connection(self, cause: str, error: str) -> None:
        """Something noticed the peer silent or gone (``cause``: tcp_retries2, a reset, a
        heartbeat or keepalive timeout, ``liveness``): the network records it (``Network.failed``:
        each fault's time to detect) and the engine writing into this flow fails with ``error``,
        which breaks the connection (``stream.StreamConnection.link_broken``)."""
        network = self.direction.ctx.network
        if network is not None:
            network.failed(self.clock.now, cause, self.route)
        engine = self.wire.writer
        if engine is not None and not engine.closed:
            engine.link.engine_error(engine, error)
        else:
            self.close()

    def _queued_segments(self, leaves: float, nbytes: float, now: float) -> int:
        """Of a train of ``nbytes`` whose last frame leaves the qdisc at ``leaves``, the segments
        still in it at ``now`` (its frames leave one by one before the last)."""
        segments = -(-int(nbytes) // self.mss)
        frame_s = (self.mss + self.direction.header) / self.direction.rate
        left = math.ceil((leaves - now) / frame_s)  # the frames leaving after now
        return segments if left > segments else left

    def _in_qdisc(self, now: float) -> float:
        """``sk_wmem_alloc`` of its frames in the qdisc: tbf segments a GSO skb larger than its
        bucket, and each segment is charged its own truesize (the profile's per-segment charge)."""
        segments = 0
        for leaves, nbytes in self.trains:
            segments += self._queued_segments(leaves, nbytes, now)
        return segments * self.sndbuf_per_segment

    def _below(self, excess: float, now: float) -> float:
        """When ``excess`` bytes of truesize of its frames in the qdisc will have left (its
        frames leave in order): the departure of the frame that brings it to the limit."""
        per_segment = self.sndbuf_per_segment
        frame_s = (self.mss + self.direction.header) / self.direction.rate
        to_leave = int(excess // per_segment) + 1  # frames that must leave
        for leaves, nbytes in self.trains:
            queued = self._queued_segments(leaves, nbytes, now)
            if to_leave <= queued:
                # its frames still queued leave at leaves - (queued - 1) * frame_s, ... , leaves
                when = leaves - (queued - to_leave) * frame_s
                return when if when > now else leaves
            to_leave -= queued
        return self.trains[-1][0]

    def _defer(self, allowed: int, by_cwnd: int, by_rwnd: int, unsent: int, skb: int, now: float) -> bool:
        """``tcp_tso_should_defer``, a TSO Nagle test: when the windows let out only part of the
        skb at the head of the queue, wait for more (an ACK) unless in recovery, the last skb
        left over 1 ms ago, a full autosized skb fits, a third of the window fits
        (``tcp_tso_win_divisor`` = 3) or the oldest skb in flight was sent less than half an RTT
        ago. Called with the bytes it would send now, less than what waits."""
        if self.in_recovery or now - self.last_sent_at > 0.001:
            return False
        limit = by_cwnd if by_cwnd < by_rwnd else by_rwnd
        if limit >= skb:
            return False
        if unsent > self.size_goal and limit >= self.size_goal:  # a full skb of the write queue can go
            return False
        window = self.cwnd if self.cwnd < self.window_edge - self.snd_una else self.window_edge - self.snd_una
        if limit >= window / 3:
            return False
        if not self.unacked or now - self.unacked[0][1] < self.srtt / 2:
            return False
        return True

    def _cwnd_validate(self, is_limited: bool) -> None:
        """``tcp_cwnd_validate`` after sending: whether the window was used up is kept for the
        window of data sent so far (until ``cwnd_usage_seq`` is acknowledged) unless it is used
        up again; meanwhile the most bytes in flight are remembered (``max_packets_out``)."""
        in_flight = self.snd_nxt - self.snd_una - self.ooo_bytes
        if (self.snd_una >= self.cwnd_usage_seq or is_limited
                or (not self.cwnd_limited and in_flight > self.max_in_flight)):
            self.cwnd_limited = is_limited
            self.max_in_flight = in_flight
            self.cwnd_usage_seq = self.snd_nxt

    def _growing(self) -> bool:
        """``tcp_is_cwnd_limited``: the window limited sending in this window of data, or, in slow
        start, is less than twice the most that was in flight."""
        if self.cwnd_limited:
            return True
        return self.cwnd < self.ssthresh and self.cwnd < 2 * self.max_in_flight

    def _local_drop(self, now: float) -> None:
        """Its own qdisc refused a whole skb: ``tcp_enter_cwr`` (CUBIC's reduction, once per window
        of data, no retransmission) and a retry when one of its skbs leaves the qdisc, on the next
        ACK, or, with nothing in flight, by the zero-window probe timer (``tcp_check_probe_timer``)."""
        if self.snd_una >= self.recovery_point:
            self._reduce()
            self.cwnd = self.ssthresh
            self.recovery_point = self.snd_nxt
        if self.trains:
            if not self.small_queue_timer.armed:
                self.small_queue_timer.arm_at(self.trains[0][0])
        elif self.snd_nxt <= self.snd_una and not self.probe_timer.armed:
            self.probe_timer.arm(max(RTO_MIN_S, self.srtt + max(RTO_MIN_S, 4 * self.rttvar)))

    def _reduce(self) -> None:
        """CUBIC's ``ssthresh`` hook (``cubictcp_recalc_ssthresh``): a new epoch, the window it
        reached remembered (less with fast convergence, when it fell short of the last), and
        ssthresh 0.7 of it, at least two segments."""
        segments = self.cwnd / self.mss
        self.epoch_start = -1.0
        if segments < self.last_max_cwnd:
            self.last_max_cwnd = segments * (1.0 + LOSS_BETA) / 2.0
        else:
            self.last_max_cwnd = segments
        self.ssthresh = max(2.0 * self.mss, self.cwnd * LOSS_BETA)

    def _cubic_grow(self, acked: float, now: float) -> None:
        """``bictcp_update`` and ``tcp_cong_avoid_ai``: grow the window toward the cubic
        W(t) = C (t - K)^3 + W_max, t since the epoch plus the smallest RTT, or by the
        Reno-friendly estimate when that is ahead (``tcp_friendliness``)."""
        mss = self.mss
        cwnd = self.cwnd / mss
        self.ack_cnt += acked
        if self.epoch_start < 0.0:
            self.epoch_start = now
            self.ack_cnt = acked
            self.reno_cwnd = cwnd
            if self.last_max_cwnd <= cwnd:
                self.cubic_k = 0.0
                self.origin = cwnd
            else:
                self.cubic_k = ((self.last_max_cwnd - cwnd) / CUBIC_C) ** (1.0 / 3.0)
                self.origin = self.last_max_cwnd
        t = now - self.epoch_start + self.min_rtt
        offs = t - self.cubic_k
        target = self.origin + CUBIC_C * offs * offs * offs
        cnt = cwnd / (target - cwnd) if target > cwnd else 100.0 * cwnd
        if self.last_max_cwnd == 0.0 and cnt > 20.0:
            cnt = 20.0  # the first epoch, before any loss: at least 5 % a window
        step = cwnd * CUBIC_BETA_SCALE / 8.0
        if self.ack_cnt > step:
            grown = int(self.ack_cnt / step)
            self.ack_cnt -= grown * step
            self.reno_cwnd += grown
        if self.reno_cwnd > cwnd:
            max_cnt = cwnd / (self.reno_cwnd - cwnd)
            if cnt > max_cnt:
                cnt = max_cnt
        if cnt < 2.0:
            cnt = 2.0
        self.cwnd += mss * acked / cnt

    def _hystart(self, sample: float, ack: int) -> None:
        """HyStart's delay detection (``hystart_update``): a round (a window of data) whose first
        eight RTT samples all exceed the smallest by the threshold ends slow start."""
        if ack > self.hystart_end:  # bictcp_hystart_reset: a new round
            self.hystart_end = self.snd_nxt
            self.hystart_samples = 0
            self.hystart_rtt = math.inf
        if self.hystart_samples < HYSTART_MIN_SAMPLES:
            self.hystart_samples += 1
            if sample < self.hystart_rtt:
                self.hystart_rtt = sample
            if self.hystart_samples == HYSTART_MIN_SAMPLES:
                threshold = min(HYSTART_DELAY_MAX_S, max(HYSTART_DELAY_MIN_S, self.min_rtt / 8))
                if self.hystart_rtt > self.min_rtt + threshold:
                    self.ssthresh = self.cwnd

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

    def dropped(self, lo: int, hi: int, retransmit: bool) -> None:
        """Bytes ``[lo, hi)`` were dropped or lost on the way (``retransmit``: sent again and lost
        again). The loss is found when a segment sent after them arrives (SACK and RACK, which
        orders by send time and so finds a lost retransmission as well: ``tcp_rack_detect_loss``)
        and its ACK is back; when none arrives, a tail loss probe finds it
        (``tcp_schedule_loss_probe``: two smoothed RTTs after, at least ``TCP_TIMEOUT_MIN``; the
        probe's ACK one RTT later). Fast recovery follows, one window reduction per episode."""
        self.unfound.append((lo, hi, self.clock.now))
        if not self.probe_loss_timer.armed:
            self.probe_loss_timer.arm(max(TLP_MIN_S, 2.0 * self.srtt))

    def _loss_probe(self) -> None:
        """The tail loss probe's ACK shows every loss not yet found."""
        if self.closed:
            return
        if self.faulty and self.path_down(self.clock.now):
            return  # the probe or its ACK is lost: the retransmission timer finds what is
        found_at = self.clock.now + self.srtt
        for lo, hi, _sent_at in self.unfound:
            self.lose(lo, hi, found_at, True)
        self.unfound.clear()

    def lose(self, lo: int, hi: int, found_at: float, by_dupacks: bool) -> None:
        """Bytes ``[lo, hi)`` will not arrive: found at ``found_at`` (``by_dupacks``: fast
        recovery, RFC 5681 3.2, RFC 6675), else by the retransmission timeout (RFC 6298,
        ``TCP_RTO_MIN``)."""
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
                # one reduction per window of data (RFC 5681 3.2, RFC 6582), by CUBIC's hook
                self._reduce()
                if by_dupacks:
                    self.cwnd = self.ssthresh
                else:
                    # tcp_enter_loss: one segment, and CUBIC starts over (cubictcp_state on
                    # TCP_CA_Loss resets its state, HyStart's too)
                    self.cwnd = float(self.mss)
                    self.last_max_cwnd = 0.0
                    self.hystart_end = self.snd_nxt
                self.recovery_point = self.snd_nxt
                self.in_recovery = True
            self.retransmit_queue.append((lo, hi))
        if self.losses:
            self.loss_timer.arm_at(self.losses[0][0])
        self.push()

    def acked(self, ack: int, edge: int, sent_at: float) -> None:
        now = self.clock.now
        if self.faulty:
            self.heard_at = now
        if edge > self.window_edge:
            self.window_edge = edge
        if ack > self.snd_una:
            newly = ack - self.snd_una
            self.snd_una = ack
            rto_timer = self.rto_timer
            if rto_timer is not None:
                # tcp_ack: new data acknowledged; the timeout is no longer backed off and
                # restarts (tcp_rearm_rto), or stops with nothing in flight
                self.backoff = 0
                self.retrans_stamp = -1.0
                if ack > self.snd_nxt:
                    self.snd_nxt = ack  # what a timeout sent again had arrived before it
                if ack >= self.snd_nxt:
                    rto_timer.cancel()
                else:
                    rto_timer.arm(self._rto())
            unacked = self.unacked
            while unacked and unacked[0][0] <= ack:
                unacked.popleft()
            if self.in_recovery and ack >= self.recovery_point:
                self.in_recovery = False
            if ack >= self.written and self.busy_since >= 0.0:
                self.busy_s += now - self.busy_since
                self.busy_since = -1.0
            sample = now - sent_at
            self.rtt_sum += sample
            self.rtt_samples += 1
            if sample > self.max_rtt:
                self.max_rtt = sample
            # RFC 6298 2.3 (the handshake gave the first sample)
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
            self.srtt = 0.875 * self.srtt + 0.125 * sample
            if sample < self.min_rtt:
                self._set_min_rtt(sample)
            if ack >= self.recovery_point and self._growing():
                if self.cwnd < self.ssthresh:
                    # slow start (tcp_slow_start: up to ssthresh, the rest in congestion avoidance)
                    if self.cwnd >= HYSTART_LOW_WINDOW * self.mss:
                        self._hystart(sample, ack)
                    room = self.ssthresh - self.cwnd
                    grow = newly if newly <= room else room
                    self.cwnd += grow
                    newly -= int(grow)
                if newly > 0 and self.cwnd >= self.ssthresh:
                    self._cubic_grow(newly / self.mss, now)
                if self.cwnd > self.max_cwnd:
                    self.max_cwnd = self.cwnd
                self._expand_sndbuf()
            writer = self.wire.writer
            if writer is not None:
                writer.space_freed()
        self.push()

    # -- receiver ------------------------------------------------------------------------

    def arrived(self, lo: int, hi: int, sent_at: float) -> None:
        if self.dead_receiver:
            self._reset()
            return
        before = self.rcv_nxt
        if self.faulty:
            self.heard_at = self.clock.now
        unfound = self.unfound
        if unfound:
            # bytes sent after a lost segment arrived: their (selective) ACK shows it lost (RACK
            # orders by send time, so a lost retransmission is found as a first loss is)
            found = [entry for entry in unfound if entry[2] < sent_at or entry[1] <= lo]
            if found:
                found_at = self.clock.now + self.ack_latency
                for entry in found:
                    unfound.remove(entry)
                    self.lose(entry[0], entry[1], found_at, True)
                if not unfound:
                    self.probe_loss_timer.cancel()
        if lo <= self.rcv_nxt:
            if hi > self.rcv_nxt:
                self.rcv_nxt = hi
                if self.out_of_order:
                    self._merge()
        elif not (self.faulty and any(a <= lo and hi <= b for a, b in self.out_of_order)):
            # (after a timeout a sender goes back and sends again what may be here already)
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
        self.probe_timer.cancel()
        self.probe_loss_timer.cancel()
        self.loss_timer.cancel()
        if self.rto_timer is not None:
            self.rto_timer.cancel()
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


def any_down(directions: Sequence[Direction], t: float) -> bool:
    """Whether one of ``directions`` (a route, or its way back) is down at ``t``."""
    return any(d.down_at(t) for d in directions)


class Path:
    """The directions between two hosts, as a connection from ``a`` to ``b`` sees them: the
    links of its route, each crossed ``a`` to ``b`` (``hops``), and those of the way back
    (``back``); one each on a single link."""

    __slots__ = ("hops", "back")

    def __init__(self, hops: Sequence[Direction], back: Sequence[Direction]) -> None:
        self.hops = list(hops)
        self.back = list(back)

    @property
    def forward(self) -> Direction:
        """The first direction: ``a``'s own interface."""
        return self.hops[0]

    @property
    def backward(self) -> Direction:
        """The first direction of the way back: ``b``'s own interface."""
        return self.back[0]

    @property
    def faulty(self) -> bool:
        """A direction of the route, or of the way back, has [[fault]]s."""
        return any(d.faulty for d in self.hops) or any(d.faulty for d in self.back)

    @property
    def round_trip_s(self) -> float:
        return sum(d.latency for d in self.hops) + sum(d.latency for d in self.back)

    def handshake_s(self) -> float:
        """connect() to both engines ready: the TCP three-way handshake (RFC 793 3.4: the
        connecter is established after one round trip, its ACK reaches the listener half a
        round trip later), then ZMTP 3 (``zmtp_engine_t::handshake``, RFC 23): each side's
        greeting answers the other's signature and the NULL mechanism's READY follows the
        greeting, so the connecter has the listener's READY three round trips after its SYN."""
        return 3.0 * self.round_trip_s

    def connect_wait(self, now: float) -> float | None:
        """Seconds from ``now`` until a connect's SYN crosses the route and its SYN-ACK comes
        back: 0 unless a direction is down then; a SYN lost is sent again after each of
        ``SYN_WAITS_S`` (``tcp_retransmit_timer`` on a SYN_SENT socket); None when every one is
        lost: connect() fails with ETIMEDOUT, ``sum(SYN_WAITS_S)`` after the first."""
        if not any(d.down for d in self.hops) and not any(d.down for d in self.back):
            return 0.0
        there = sum(d.latency for d in self.hops)
        wait = 0.0
        for timeout in SYN_WAITS_S:
            at = now + wait
            if not any_down(self.hops, at) and not any_down(self.back, at + there):
                return wait
            wait += timeout
        return None

    def wires(self, c_name: str, b_name: str, capacity_fn: Any, c_opts: Any, b_opts: Any, now: float,
              c_per_segment: int, b_per_segment: int) -> tuple[LinkWire, LinkWire]:
        """The two ``LinkWire`` objects of a connection from the connecter (on ``a``) to the
        binder; each sender's buffer is charged its own host's ``*_per_segment`` bytes per segment."""
        c2b = LinkWire(f"{c_name}->{b_name}", capacity_fn, c_opts.sndbuf, b_opts.rcvbuf, c_opts.sndhwm, now)
        b2c = LinkWire(f"{b_name}->{c_name}", capacity_fn, b_opts.sndbuf, c_opts.rcvbuf, b_opts.sndhwm, now)
        c2b.flow = Flow(self.hops[0], c2b, c_opts.sndbuf, b_opts.rcvbuf, c_per_segment, self.hops, self.back)
        b2c.flow = Flow(self.back[0], b2c, b_opts.sndbuf, c_opts.rcvbuf, b_per_segment, self.back, self.hops)
        for direction in self.hops:  # every link the connection crosses reports it (``connections``)
            direction.flows.append(c2b.flow)
        for direction in self.back:
            direction.flows.append(b2c.flow)
        return c2b, b2c


class Network:
    """The scenario's links, and the route between two hosts: one link, or several through
    ``[[switch]]``es (``router``, from ``zsim.spec.route``: the shortest, and only, one)."""

    def __init__(self, ctx: Context, links: Sequence[LinkParams],
                 router: Callable[[str, str], Sequence[tuple[str, bool]]] | None = None) -> None:
        self.links: dict[str, tuple[Direction, Direction]] = {}
        self._paths: dict[tuple[str, str], Path] = {}
        #: connections broken because something noticed their peer had gone silent:
        #: (when, what: heartbeat timeout, heartbeat ttl, keepalive, tcp_retries2, the links crossed)
        self.failures: list[tuple[float, str, frozenset[str]]] = []
        self._router = router
        for params in links:
            a, b = params.hosts
            forward, backward = Direction(ctx, params, a, b), Direction(ctx, params, b, a)
            forward.reverse, backward.reverse = backward, forward
            self.links[params.name] = (forward, backward)
            if router is None:
                self._paths[(a, b)] = Path([forward], [backward])
                self._paths[(b, a)] = Path([backward], [forward])

    def path(self, a_host: str, b_host: str) -> Path | None:
        """The directions from ``a_host`` to ``b_host`` and back; None on one host (loopback)."""
        if a_host == b_host:
            return None
        path = self._paths.get((a_host, b_host))
        if path is None:
            if self._router is None:
                raise ValueError(f"no link between hosts {a_host!r} and {b_host!r}")  # zsim.spec refuses such a connect
            hops = [self.links[name][0 if forward else 1] for name, forward in self._router(a_host, b_host)]
            path = Path(hops, [hop.reverse for hop in reversed(hops)])
            self._paths[(a_host, b_host)] = path
        return path

    def report(self, elapsed: float) -> dict[str, dict[str, dict[str, Any]]]:
        """``summary["network"]``: per link, per direction, what it carried and dropped."""
        return {name: {d.name: d.report(elapsed) for d in directions} for name, directions in self.links.items()}

    def failed(self, at: float, reason: str, route: Sequence[Direction]) -> None:
        """A connection over ``route`` broke at ``at`` because ``reason`` noticed its peer silent."""
        self.failures.append((at, reason, frozenset(d.link for d in route)))

    def apply_faults(self, faults: Sequence[Any], links: Sequence[Any], until: float | None,
                     stream: Callable[[str], Any]) -> None:
        """The scenario's ``[[fault]]``s (``zsim.spec.FaultSpec``) on the directions of the links
        they cut (both ways), each with its intervals (``FaultSpec.intervals``: one, or failures
        and repairs drawn from the fault's own random stream up to ``until``)."""
        self.faults: list[tuple[Any, list[tuple[float, float]], list[str]]] = []
        for fault in faults:
            intervals = fault.intervals(stream, until)
            cut = [link.name for link in fault.links_cut(links)]
            for name in cut:
                for direction in self.links[name]:
                    if fault.kind == "loss":
                        lossy = [(start, end, fault.loss, stream(f"fault.{fault.name}.{name}.{direction.name}"))
                                 for start, end in intervals]
                        direction.add_faults((), lossy)
                    else:
                        direction.add_faults(intervals, ())
            self.faults.append((fault, intervals, cut))
        if self.faults:
            for directions in self.links.values():
                for direction in directions:
                    direction.fault_fields = True

    def report_faults(self, elapsed: float) -> dict[str, dict[str, Any]]:
        """``summary["faults"]``: per fault, its kind, the links it cut, how many times it
        happened and for how long in all (up to ``elapsed``), its intervals, and how long after
        each ended the first frame crossed one of its links again (``recovery_s``: the mean,
        ``longest_recovery_s``; NaN when nothing crossed after)."""
        found: dict[str, dict[str, Any]] = {}
        for fault, intervals, cut in getattr(self, "faults", []):
            within = [(start, min(end, elapsed)) for start, end in intervals if start < elapsed]
            recoveries: list[float] = []
            for _start, end in within:
                if end >= elapsed:
                    continue
                firsts = [arrival - end for name in cut for direction in self.links[name]
                          for ended, arrival in direction.recovered if ended >= end - 1e-12 and arrival >= end]
                if firsts:
                    recoveries.append(min(firsts))
            # what noticed it: the first connection over its links broken after each interval began
            detected: list[float] = []
            reasons: dict[str, int] = {}
            for start, end in within:
                later = [(at, reason) for at, reason, crossed in self.failures
                         if at >= start and crossed.intersection(cut) and (end >= elapsed or at <= end + RETRIES2_TIMEOUT_S)]
                if later:
                    at, reason = min(later)
                    detected.append(at - start)
            for at, reason, crossed in self.failures:
                if crossed.intersection(cut) and any(start <= at for start, _ in within):
                    reasons[reason] = reasons.get(reason, 0) + 1
            found[fault.name] = {
                "kind": fault.kind,
                "links": cut,
                "count": len(within),
                "down_s": sum(end - start for start, end in within),
                "intervals": [[start, end] for start, end in within[:100]],
                "recovery_s": sum(recoveries) / len(recoveries) if recoveries else math.nan,
                "longest_recovery_s": max(recoveries) if recoveries else math.nan,
                # from an interval's start to the first connection over its links that something
                # broke (heartbeats, keepalive, tcp_retries2; NaN: nothing noticed), the mean,
                # and how many broke, by what
                "detect_s": sum(detected) / len(detected) if detected else math.nan,
                "disconnects": sum(reasons.values()),
                "disconnected_by": reasons,
            }
        return found
