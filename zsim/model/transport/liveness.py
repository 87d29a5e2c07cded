"""What notices a peer that went silent: ZMTP heartbeats and TCP keepalive (docs/model.md,
"Outages").

A connection whose route can go down (a ``[[fault]]`` on one of its links) gets one
``Liveness``; elsewhere nothing goes silent (a crashed process's kernel resets the
connection at once, ``StreamConnection.crash_side``), so nothing is made.

* ZMTP heartbeats (libzmq 4.3.5 ``stream_engine_base_t::timer_event``,
  ``produce_ping_message``, ``zmtp_engine_t::process_heartbeat_message``): a side with
  ``heartbeat_ivl`` sends a PING every interval; the first PING not answered arms a timeout
  of ``heartbeat_timeout`` (its ``heartbeat_ivl`` when unset), which any message from the
  peer cancels and which, when it fires, fails the engine (``timeout_error``). The peer
  answers a PING with a PONG and, when the PING carries a ``heartbeat_ttl``, fails its own
  engine if nothing more arrives within it. A PING crosses the route if it is up when the
  PING leaves, its PONG if the way back is up when the PONG leaves; neither waits behind
  data in the send buffer (known difference: behind a full buffer a real PING waits, and
  with a timeout shorter than the buffer's drain, a loaded but live connection can time out).
* TCP keepalive (``tcp_keepalive_timer``): a side with ``tcp_keepalive`` = 1 whose
  connection has nothing in flight and nothing unsent probes the peer once it has heard
  nothing for ``tcp_keepalive_idle`` seconds (Linux's 7,200 when unset), then every
  ``tcp_keepalive_intvl`` (75); a probe is answered if the route is up both ways; after
  ``tcp_keepalive_cnt`` (9) unanswered probes the socket fails with ETIMEDOUT. A side with
  data in flight is left to the retransmission timer (``network.Flow._timeout``).

Either failure is the engine's error: the connection breaks as any broken connection does
(``StreamConnection.link_broken``: what the engines and kernels held is lost, the pipes
terminate on the bind side, the connecting side reconnects after ``reconnect_ivl``), at
both ends at once (for real, the other end learns of it when it next hears from the first).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .network import any_down

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine
    from .network import Flow

#: Linux's defaults when a socket sets ``tcp_keepalive`` but not the rest
#: (``net.ipv4.tcp_keepalive_time``, ``_intvl``, ``_probes``)
KEEPALIVE_IDLE_S = 7200.0
KEEPALIVE_INTVL_S = 75.0
KEEPALIVE_CNT = 9


class _Side:
    """One end of the connection: its engine, the flow it sends by (``out``) and the one it
    reads (``into``), and its socket's options."""

    peer: _Side  # the other end (``Liveness``)

    def __init__(self, engine: Engine, out: Flow, into: Flow, options: Any) -> None:
        self.engine = engine
        self.out = out
        self.into = into
        self.options = options
        self.there = sum(d.latency for d in out.route)  # one way to the peer
        self.back = sum(d.latency for d in out.way_back)  # one way from the peer
        self.timeout_at = -1.0  # the armed heartbeat timeout's deadline (-1: none)
        self.ttl_at = -1.0  # the TTL the peer's last PING asked for (-1: none)
        self.probing_since = -1.0  # keepalive: when its unanswered probes began
        self.reset_at = -1.0  # keepalive: when a probe meets a reset from the peer's restarted host
        # timers, made by ``Liveness`` for the mechanisms the socket's options turn on
        self.ping: Any = None
        self.timeout_timer: Any = None
        self.ttl_timer: Any = None
        self.keepalive: Any = None
        self.keepalive_deadline: Any = None

    def up(self, t: float) -> bool:
        """Whether a frame sent at ``t`` reaches the peer."""
        return not any_down(self.out.route, t)

    def heard_at(self) -> float:
        """The last time anything from the peer arrived: data, or an ACK of its own."""
        return max(self.into.heard_at, self.out.heard_at)


class Liveness:
    """The heartbeats and keepalive of one established connection (``stream.Link``)."""

    def __init__(self, link: Any, c_engine: Engine, b_engine: Engine, c2b: Flow, b2c: Flow, c_options: Any, b_options: Any) -> None:
        self.link = link
        env = link.ctx.env
        self.clock = link.ctx.clock
        self.done = False
        self.sides = (_Side(c_engine, c2b, b2c, c_options), _Side(b_engine, b2c, c2b, b_options))
        self.sides[0].peer, self.sides[1].peer = self.sides[1], self.sides[0]
        now = self.clock.now
        for side, peer in (self.sides, self.sides[::-1]):
            opts = side.options
            if opts.heartbeat_ivl > 0:
                ivl = opts.heartbeat_ivl / 1000.0
                timeout = (opts.heartbeat_timeout if opts.heartbeat_timeout > 0 else opts.heartbeat_ivl) / 1000.0
                ttl = opts.heartbeat_ttl / 1000.0 if opts.heartbeat_ttl > 0 else 0.0
                ping = env.timer(functools.partial(self._ping, side, peer, ivl, timeout, ttl))
                ping.arm(ivl)
                side.ping = ping
                side.timeout_timer = env.timer(functools.partial(self._timeout, side))
                peer.ttl_timer = env.timer(functools.partial(self._ttl, peer))
            if opts.tcp_keepalive == 1:
                idle = opts.tcp_keepalive_idle if opts.tcp_keepalive_idle > 0 else KEEPALIVE_IDLE_S
                intvl = opts.tcp_keepalive_intvl if opts.tcp_keepalive_intvl > 0 else KEEPALIVE_INTVL_S
                cnt = opts.tcp_keepalive_cnt if opts.tcp_keepalive_cnt > 0 else KEEPALIVE_CNT
                keepalive = env.timer(functools.partial(self._keepalive, side, idle, intvl, cnt))
                keepalive.arm_at(now + idle)
                side.keepalive = keepalive
                side.keepalive_deadline = env.timer(functools.partial(self._keepalive_expired, side, idle))

    # -- ZMTP heartbeats -------------------------------------------------------------------

    def _ping(self, side: _Side, peer: _Side, ivl: float, timeout: float, ttl: float) -> None:
        """``heartbeat_ivl_timer_id``: a PING now; its PONG, if both ways are up, cancels the
        timeout; unanswered, the first such PING arms it."""
        if self.done:
            return
        now = self.clock.now
        reaches = side.up(now)
        if reaches and peer.engine.closed:
            self._fail(side, "reset by the restarted host")  # its host came back without the connection
            return
        if reaches and ttl > 0:
            # the peer's ttl timer restarts when the PING arrives (any message cancels it)
            peer.ttl_at = now + side.there + ttl
            peer.ttl_timer.arm_at(peer.ttl_at)
        answered = reaches and peer.up(now + side.there)
        pong_at = now + side.there + peer.there
        if answered and side.timeout_at >= 0.0 and pong_at < side.timeout_at:
            side.timeout_at = -1.0  # any message from the peer cancels it (decode_and_push)
            side.timeout_timer.cancel()
        elif not answered and side.timeout_at < 0.0:
            side.timeout_at = now + timeout
            side.timeout_timer.arm_at(side.timeout_at)
        side.ping.arm(ivl)

    def _timeout(self, side: _Side) -> None:
        """``heartbeat_timeout_timer_id``: no message within the timeout of an unanswered PING."""
        if not self.done and side.timeout_at >= 0.0:
            self._fail(side, "heartbeat timeout")

    def _ttl(self, side: _Side) -> None:
        """``heartbeat_ttl_timer_id``: the peer's PINGs asked to hear again within their TTL."""
        if not self.done and side.ttl_at >= 0.0 and self.clock.now >= side.ttl_at:
            self._fail(side, "heartbeat ttl")

    # -- TCP keepalive ---------------------------------------------------------------------

    def _keepalive(self, side: _Side, idle: float, intvl: float, cnt: int) -> None:
        """``tcp_keepalive_timer``: idle for ``idle`` seconds, probe ``cnt`` times ``intvl``
        apart; an answered probe (both ways up) resets it, none fails the socket."""
        if self.done:
            return
        now = self.clock.now
        out = side.out
        if out.snd_nxt > out.snd_una or out.written > out.snd_nxt:
            side.keepalive.arm(idle)  # data in flight or unsent: the retransmission timer's
            return
        heard = side.heard_at()
        if now - heard < idle:
            side.keepalive.arm_at(heard + idle)
            return
        peer = side.peer
        for probe in range(cnt):
            at = now + probe * intvl
            if peer.engine.closed and side.up(at):
                # the probe reaches a host that crashed and came back: a reset
                side.reset_at = at + side.there
                side.keepalive_deadline.arm_at(side.reset_at)
                return
            if side.up(at) and peer.up(at + side.there):
                out.heard_at = at + side.there + side.back  # its ACK
                side.keepalive.arm_at(out.heard_at + idle)
                return
        # every probe unanswered (the route stays down through them): ETIMEDOUT after the
        # last one's interval, unless something arrives first
        side.probing_since = now
        side.keepalive_deadline.arm_at(now + cnt * intvl)

    def _keepalive_expired(self, side: _Side, idle: float) -> None:
        if self.done:
            return
        if side.reset_at >= 0.0:
            self._fail(side, "reset by the restarted host")
            return
        if side.heard_at() > side.probing_since:
            side.keepalive.arm_at(side.heard_at() + idle)
            return
        self._fail(side, "keepalive")

    # ---------------------------------------------------------------------------------------

    def _fail(self, side: _Side, reason: str) -> None:
        """The engine's error (``stream_engine_base_t::error``): the connection breaks
        (``network.Flow.break_connection``, which records what noticed it)."""
        self.stop()
        side.out.break_connection(reason, "timeout")

    def stop(self) -> None:
        """The connection is gone: no more PINGs, timeouts or probes."""
        self.done = True
