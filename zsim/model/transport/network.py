"""TCP over a network link between two hosts (``[[link]]``; docs/model.md, "Links").

A connection between processes on different hosts carries each direction's bytes over one
direction of the link between the hosts instead of the machine's loopback. What is
modelled, at the granularity of the sending engine's writes (a write of many segments is
one train, not one event per packet):

- **Serialization and the bottleneck queue** (``Direction``): each train occupies the
  link for its bytes on the wire at the link's rate: the payload plus, per segment of at
  most MSS bytes, 52 bytes of IPv4 (20), TCP (20) and its timestamp option (12, Linux's
  default ``net.ipv4.tcp_timestamps = 1``) and the 14-byte Ethernet header, which is what a
  qdisc on a Linux interface counts. MSS = MTU - 52. The link serves trains in order
  (``busy_until``); what waits before its turn is the queue, drop-tail at ``queue_bytes``:
  a train that does not fit is dropped whole (an approximation: Linux's TSO bursts of up to
  64 KB are dropped per packet). Propagation adds ``latency_s``.
- **The congestion window** (``Flow``): Linux's initial window of 10 segments (RFC 6928),
  slow start (one MSS more per MSS acknowledged) up to ``ssthresh``, then congestion
  avoidance (one MSS per window; RFC 5681, section 3.1; Linux's default CUBIC grows like
  Reno at the small bandwidth-delay products validated here, its "TCP-friendly" region);
  a loss halves the window (Reno; CUBIC takes 0.7) once per window of data, detected one
  round trip after the lost train left (three duplicate ACKs: fast retransmit, RFC 5681
  section 3.2), or, when nothing was sent after it, after Linux's tail loss probe (two
  round trips, at least 10 ms; RFC 8985). The receiver reads in order: a train that arrives after a lost one waits
  for its retransmission (head-of-line blocking).
- **Windows and buffers**: the bytes between the two engines (in the sender's socket
  buffer, on the link, in the receiver's) are bounded by the connection's kernel capacity
  as on loopback (the profile's ``kernel_capacity``: ``sndbuf``/``rcvbuf`` if set, else
  the autotuned buffers), so a receiver that stops reading closes the window, the
  sender's engine waits for POLLOUT and ZeroMQ's pipes fill behind it exactly as on
  loopback. The sender's buffer frees as the receiver reads, not when the ACK arrives (on
  a long link the sender sees the space up to one propagation delay early).
- **Random loss** (``loss``): each packet of a train is lost with that probability (its
  own random stream per link direction); a train with a lost packet is retransmitted
  whole.

Not modelled: ACKs' use of the reverse direction's bandwidth (66 bytes per two segments),
delayed ACKs, Nagle (ZeroMQ sets TCP_NODELAY), pacing, SACK recovery of several losses in
one window, ECN, reordering, and routing over several links (one link per pair of hosts).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..context import Context
    from ..params import LinkParams
    from .engine import Wire

#: IPv4 (20) + TCP (20) + TCP timestamps (12): the headers of every segment (MSS = MTU - 52)
TCP_IP_HEADER_BYTES = 52
#: the Ethernet header a Linux qdisc counts with each packet (no preamble, FCS or gap)
ETHERNET_HEADER_BYTES = 14
#: Linux's initial congestion window, in segments (RFC 6928; ``TCP_INIT_CWND``)
INITIAL_WINDOW_SEGMENTS = 10
#: what a loss leaves of the window (Reno's halving, RFC 5681 section 3.2)
LOSS_DECREASE = 0.5
#: the round trips a connect over a link costs before both engines are ready: TCP's
#: three-way handshake (one round trip before connect() completes, RFC 793) and ZMTP's
#: greeting and READY exchange, which both sides send at once (one more; src/zmtp_engine.cpp)
HANDSHAKE_ROUND_TRIPS = 2

_ARRIVE, _NOTICE, _ACK, _RESEND = 0, 1, 2, 3
#: Linux sizes a socket's send buffer to twice its congestion window (``tcp_sndbuf_expand``,
#: net/ipv4/tcp_input.c: room for the window in flight and as much again) up to
#: ``tcp_wmem``'s maximum (4 MB), which the profile's kernel capacity bounds here
SNDBUF_WINDOWS = 2.0
#: the shortest wait before a lost tail is sent again (Linux's tail loss probe, RFC 8985)
TAIL_PROBE_MIN_S = 0.01


class Direction:
    """One direction of a ``[[link]]``: its rate, propagation, queue and losses, shared by
    every connection that crosses it that way, with what it carried."""

    def __init__(self, ctx: Context, params: LinkParams, source: str, target: str) -> None:
        self.name = f"{source}->{target}"
        self.link = params.name
        self.rate = params.bandwidth_bps / 8.0  # bytes per second on the wire
        self.latency = params.latency_s
        self.mss = params.mtu_bytes - TCP_IP_HEADER_BYTES
        self.queue_bytes = params.queue_bytes
        self.loss = params.loss
        self.rng = ctx.stream(f"link.{params.name}.{self.name}.loss") if params.loss > 0 else None
        self.busy_until = 0.0
        # what it carried
        self.payload_bytes = 0
        self.wire_bytes = 0
        self.packets = 0
        self.queue_drops = 0  # packets dropped because the queue was full
        self.random_drops = 0  # trains that lost a packet on the way (``loss``; each is sent again whole)
        self.retransmitted = 0  # packets sent again
        self.resent_bytes = 0  # payload bytes sent again
        self.busy_s = 0.0
        self.max_queue_bytes = 0.0

    def wire_size(self, payload: int) -> tuple[int, int]:
        """(packets, bytes on the wire) of a train of ``payload`` bytes."""
        packets = max(1, -(-payload // self.mss))
        return packets, payload + packets * (TCP_IP_HEADER_BYTES + ETHERNET_HEADER_BYTES)

    def transmit(self, now: float, payload: int, again: bool) -> float | None:
        """Send a train of ``payload`` bytes now: when its last byte arrives at the far end,
        or None when it is lost (queue full, or a packet lost on the way)."""
        packets, size = self.wire_size(payload)
        start = self.busy_until if self.busy_until > now else now
        backlog = (start - now) * self.rate
        if again:
            self.retransmitted += packets
            self.resent_bytes += payload
        if backlog + size > self.queue_bytes and backlog > 0:
            self.queue_drops += packets
            return None
        if backlog > self.max_queue_bytes:
            self.max_queue_bytes = backlog
        duration = size / self.rate
        self.busy_until = start + duration
        self.busy_s += duration
        self.packets += packets
        self.wire_bytes += size
        self.payload_bytes += payload
        if self.rng is not None and self.rng.random() < -math.expm1(packets * math.log1p(-self.loss)):
            self.random_drops += 1
            return None
        return self.busy_until + self.latency

    def report(self, span_s: float) -> dict[str, Any]:
        return {
            "payload_bytes": self.payload_bytes,
            "wire_bytes": self.wire_bytes,
            "packets": self.packets,
            "queue_drops": self.queue_drops,
            "random_drops": self.random_drops,
            "retransmitted_packets": self.retransmitted,
            "utilisation": min(1.0, self.busy_s / span_s) if span_s > 0 else 0.0,
            "max_queue_bytes": int(self.max_queue_bytes),
            "goodput_bps": 8.0 * (self.payload_bytes - self.resent_bytes) / span_s if span_s > 0 else 0.0,
        }


class Network:
    """The links of a deployment, by pair of hosts."""

    def __init__(self, ctx: Context, links: Sequence[LinkParams]) -> None:
        self.ctx = ctx
        self.links = list(links)
        self.directions: dict[tuple[str, str], Direction] = {}
        for params in links:
            a, b = params.hosts
            self.directions[(a, b)] = Direction(ctx, params, a, b)
            self.directions[(b, a)] = Direction(ctx, params, b, a)

    def path(self, a_host: str, b_host: str) -> tuple[Direction, Direction] | None:
        """The directions a -> b and b -> a of the link between two hosts; None on one host."""
        if a_host == b_host:
            return None
        forward = self.directions.get((a_host, b_host))
        back = self.directions.get((b_host, a_host))
        if forward is None or back is None:  # zsim.spec refuses a connect between unlinked hosts
            raise AssertionError(f"no link between {a_host!r} and {b_host!r}")
        return forward, back

    def round_trip(self, a_host: str, b_host: str) -> float:
        path = self.path(a_host, b_host)
        return 0.0 if path is None else path[0].latency + path[1].latency

    def report(self, span_s: float) -> dict[str, dict[str, Any]]:
        """``summary["network"]``: per link, per direction, what it carried."""
        found: dict[str, dict[str, Any]] = {}
        for params in self.links:
            a, b = params.hosts
            found[params.name] = {
                "bandwidth_bps": params.bandwidth_bps, "latency_s": params.latency_s, "mtu_bytes": params.mtu_bytes,
                "queue_bytes": params.queue_bytes, "loss": params.loss,
                "directions": {d.name: d.report(span_s) for d in (self.directions[(a, b)], self.directions[(b, a)])},
            }
        return found


class Flow:
    """TCP's sending side for one direction of one connection over a link: the bytes the
    engine wrote wait here until the window lets them onto the link, arrive after it, and
    are handed to the reader in order (``Wire.queue``)."""

    def __init__(self, ctx: Context, wire: Wire, direction: Direction, back: Direction, wakeup: Any) -> None:
        self.ctx = ctx
        self.clock = ctx.clock
        self.wire = wire
        self.direction = direction
        self.back = back  # the ACKs' way
        self.wakeup = wakeup  # the reader's wake-up latency (the transport's hop latency)
        self.mss = direction.mss
        self.cwnd = float(INITIAL_WINDOW_SEGMENTS * self.mss)
        self.ssthresh = math.inf
        self.inflight = 0
        self.unsent: deque[list[Any]] = deque()  # entries [msg, nbytes, last, overhead] not yet sent
        self.resend: deque[tuple[int, list[Any]]] = deque()  # lost trains: (seq, entries)
        self.trains: dict[int, list[list[Any]]] = {}  # seq -> its entries, until handed over
        self.arrived: set[int] = set()
        self.seq = 0  # the next train's number
        self.next_deliver = 0  # the next train the reader may have (in order)
        self.recover_until = -1  # one decrease per window of data
        self.events: list[tuple[float, int, int, int]] = []  # (time, order, kind, seq)
        self.order = 0
        self.outstanding = 0  # bytes (and write overheads) written and not yet handed to the reader
        self.timer = ctx.env.timer(self._fire)
        self.closed = False

    # -- the engine's side -------------------------------------------------------------------

    def write(self, entries: Sequence[list[Any]]) -> None:
        """The engine wrote ``entries`` (already counted in the wire's bytes)."""
        self.unsent.extend(entries)
        self.outstanding += sum(entry[1] + entry[3] for entry in entries)
        self._pump()

    def send_room(self, charged: int, sndbuf: int) -> int:
        """What the sender may have between its engine and the reader's: its send buffer,
        which Linux sizes to twice the congestion window (``tcp_sndbuf_expand``: room for
        the window in flight and as much again queued) unless SO_SNDBUF is set, plus what
        has arrived and waits for the reader (``charged`` counts both)."""
        readable = charged - self.outstanding
        buffer = sndbuf if sndbuf > 0 else int(SNDBUF_WINDOWS * self.cwnd)
        return max(buffer, INITIAL_WINDOW_SEGMENTS * self.mss) + max(readable, 0)

    def pending(self) -> list[list[Any]]:
        """Every entry written and not yet handed to the reader, in order."""
        held = [entry for seq in sorted(self.trains) for entry in self.trains[seq]]
        return held + list(self.unsent)

    def clear(self) -> None:
        self.closed = True
        self.unsent.clear()
        self.resend.clear()
        self.trains.clear()
        self.arrived.clear()
        self.events.clear()
        self.timer.cancel()

    @property
    def idle(self) -> bool:
        """Nothing written is still on its way."""
        return not self.trains and not self.unsent

    # -- the window --------------------------------------------------------------------------

    def _pump(self) -> None:
        now = self.clock.now
        while not self.closed:
            room = self.cwnd - self.inflight
            if self.resend:
                if room <= 0 and self.inflight > 0:
                    return
                seq, lost = self.resend.popleft()
                self._send(now, seq, lost, again=True)
                continue
            if not self.unsent or (room < self.mss and self.inflight > 0):
                return
            budget = max(int(room), self.mss)
            train: list[list[Any]] = []
            size = 0
            while self.unsent and size < budget:
                entry = self.unsent[0]
                take = entry[1] if entry[1] <= budget - size else budget - size
                if take == entry[1]:
                    self.unsent.popleft()
                    train.append(entry)
                else:  # a piece of a large write: the rest stays
                    train.append([entry[0], take, False, entry[3]])
                    entry[1] -= take
                    entry[3] = 0
                size += take
            seq = self.seq
            self.seq += 1
            self.trains[seq] = train
            self._send(now, seq, train, again=False)

    def _send(self, now: float, seq: int, train: list[list[Any]], again: bool) -> None:
        size = sum(entry[1] for entry in train)
        self.inflight += size
        arrival = self.direction.transmit(now, size, again)
        if arrival is None:
            # the sender learns of it a round trip later (duplicate ACKs), or by its timeout
            self._schedule(now + self.direction.latency + self.back.latency + size / self.direction.rate, _NOTICE, seq)
        else:
            self._schedule(arrival, _ARRIVE, seq)

    def _schedule(self, when: float, kind: int, value: int) -> None:
        self.order += 1
        heapq.heappush(self.events, (when, self.order, kind, value))
        head = self.events[0][0]
        now = self.clock.now
        self.timer.arm(head - now if head > now else 0.0)

    def _fire(self) -> None:
        now = self.clock.now
        events = self.events
        while events and events[0][0] <= now:
            _, _, kind, value = heapq.heappop(events)
            if self.closed:
                return
            if kind == _ARRIVE:
                self._arrive(now, value)
            elif kind == _ACK:
                self._acked(value)
            elif kind == _NOTICE:
                self._notice(now, value)
            elif value in self.trains:  # _RESEND: the tail loss probe
                self.resend.append((value, self.trains[value]))
                self._pump()
        if events and not self.closed:
            self.timer.arm(events[0][0] - now)

    def _arrive(self, now: float, seq: int) -> None:
        # its (selective) ACK reaches the sender after the way back: it leaves the flight
        # even when it waits for an earlier train here (SACK, RFC 2018; Linux's default)
        self._schedule(now + self.back.latency, _ACK, sum(entry[1] for entry in self.trains[seq]))
        self.arrived.add(seq)
        delivered = False
        wire = self.wire
        while self.next_deliver in self.arrived:
            seq_now = self.next_deliver
            self.arrived.discard(seq_now)
            train = self.trains.pop(seq_now)
            wire.queue.extend(train)
            self.outstanding -= sum(entry[1] + entry[3] for entry in train)
            self.next_deliver += 1
            delivered = True
        if delivered:
            reader = wire.reader
            if reader is not None:
                reader.kick_in(self.wakeup.next())
            wire.observe(now)

    def _acked(self, size: int) -> None:
        self.inflight -= size
        if self.cwnd < self.ssthresh:
            self.cwnd += size  # slow start
        else:
            self.cwnd += self.mss * size / self.cwnd  # congestion avoidance
        self._pump()
        writer = self.wire.writer
        if writer is not None:
            writer.space_freed()  # the window grew, and with it the send buffer

    def _notice(self, now: float, seq: int) -> None:
        """A lost train, noticed a round trip after it left: retransmitted at once when
        something sent after it can raise duplicate ACKs (fast retransmit), else after the
        tail-loss probe's timeout (two round trips, at least 10 ms: RFC 8985); the window
        shrinks once per window of data."""
        train = self.trains.get(seq)
        if train is None:
            return
        self.inflight -= sum(entry[1] for entry in train)
        if seq > self.recover_until:
            self.ssthresh = max(self.cwnd * LOSS_DECREASE, 2.0 * self.mss)
            self.cwnd = self.ssthresh
            self.recover_until = self.seq - 1
        if self.seq - 1 > seq:
            self.resend.append((seq, train))
            self._pump()
        else:
            probe = max(TAIL_PROBE_MIN_S, 2.0 * (self.direction.latency + self.back.latency))
            self._schedule(now + probe, _RESEND, seq)
