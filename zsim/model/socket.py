"""A ZeroMQ socket: routing policies over per-peer pipes, a command mailbox, an app API.

The application side (workloads, proxies) calls ``send(msg)`` and ``recv()``, which never
block: they return ``SENT``/``AGAIN``/``UNROUTABLE`` or a message/None, after processing
commands exactly where libzmq does (``socket_base_t::send``: at most once per
``command_throttle_s``; ``recv``: every ``INBOUND_POLL_RATE`` calls and whenever nothing is
readable). Blocking is the caller's choice: ``wait(callback)`` registers it until a
command arrives, which is when libzmq's blocked thread wakes and retries.

Commands from the other end of a pipe (``activate_read``, ``activate_write``, ``bind``,
``pipe_term``) go to the mailbox; they take effect when the socket processes commands, so
a busy PUB keeps dropping to a pipe its reader has already emptied, as libzmq does.

Per-type behaviour comes from ``zsim.socket_types.TYPES``; the routing classes are in
``routing``; transport details (sessions, engines) stay in ``transport``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..constants import INBOUND_POLL_RATE
from ..socket_types import DIST, LB, PAIR, REPLY, ROUTE, TYPES, SocketType
from .context import Context
from .fates import (
    AGAIN,
    RULE_FILTERED,
    RULE_HWM,
    RULE_NO_DELIMITER,
    RULE_NO_PEERS,
    RULE_REQ_STATE,
    SENT,
)
from .peer import Peer, Subscriptions
from .pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID, UNSUBSCRIBE_ID, Message, Pipe
from .routing import Distribute, FairQueue, LoadBalance, RouteByIdentity, SendOwner

NEW = 0
OPEN = 1
CLOSED = 2


class Socket(SendOwner):
    """One simulated ZeroMQ socket (its ``index``, ``copies``, ``dropped``, ``ledger`` and
    ``clock`` are ``SendOwner``'s fields)."""

    __slots__ = (
        "ctx", "env", "name", "type", "traits", "process", "options", "routing_id", "state", "peers",
        "mailbox", "last_command_time", "ticks", "waiters", "wake_pending", "own_subs", "lb", "fq", "dist", "router",
        "pair_peer", "all_subs", "pending_subscriptions", "reply_pipe", "awaiting_reply", "reply_peer",
        "reply_envelope", "sent", "send_again", "send_unroutable", "received", "recv_again", "discarded",
        "blocked_s", "blocked_count", "lost_on_close", "last_pipe_index", "xsend", "plain_recv",
        "throttle_s", "wake_sampler", "on_activate_read", "on_activate_write", "wake_timer", "reads_subscriptions",
        "__weakref__",
    )

    def __init__(
        self,
        ctx: Context,
        index: int,
        name: str,
        type_name: str,
        process: Any,
        options: Any,
        routing_id: str,
    ) -> None:
        self.ctx = ctx
        self.env = ctx.env
        self.clock = ctx.clock  # the time as a C double: see kernel.Clock
        self.index = index
        self.name = name
        self.type = type_name
        self.traits: SocketType = TYPES[type_name]
        self.process = process
        self.options = options
        self.routing_id = routing_id
        self.state = NEW
        self.peers: list[Peer] = []
        self.mailbox: list[tuple[Callable[[Any], None], Any]] = []
        # the commands every message may post, as bound methods made once: process_commands
        # knows them by identity and calls them directly
        self.on_activate_read = self._cmd_activate_read
        self.on_activate_write = self._cmd_activate_write
        self.last_command_time = float("-inf")
        self.ticks = 0
        # the application's blocked calls on this socket (a DEALER may have a sender and a
        # receiver workload blocked at the same time, as in a poll loop)
        self.waiters: list[Callable[[], None]] = []
        self.wake_pending = False
        # a wake-up that does not run at once: one firing per arm, as env.call_later, by
        # a reused timer instead of an event and a closure per wake-up
        self.wake_timer = ctx.env.fast_timer(self._wake_fired)
        # SUB: options.subscribe; XSUB: the subscriptions its application sends at once
        # (xsub_t caches them and xattach_pipe replays them into every pipe).
        self.own_subs: Subscriptions | None = (
            Subscriptions(tuple(options.subscribe)) if self.traits.sends_subscriptions else None
        )
        self._init_routing()
        # statistics
        self.sent = 0
        self.send_again = 0
        self.send_unroutable = 0
        self.received = 0
        self.recv_again = 0
        self.dropped = 0
        self.discarded = 0
        self.copies = 0
        self.blocked_s = 0.0
        self.blocked_count = 0
        self.lost_on_close = 0
        self.last_pipe_index = -1
        # xrecv() is the type's own recv (libzmq's socket_base_t::xrecv; xsend is chosen
        # with the routing policy), without the command processing of recv(). Workloads
        # call it directly when they have just processed commands themselves.
        traits = self.traits
        # A SUB subscribed to everything never filters on receive: same path as PULL.
        filters = traits.filters_on_recv and not (self.own_subs is not None and self.own_subs.all)
        plain = traits.receives and not (
            traits.app_sees_subscriptions or traits.request or traits.reply or filters or traits.prepends_identity
        )
        self.plain_recv = plain  # xrecv takes the fair queue's next message as it is
        self.reads_subscriptions = traits.reads_subscriptions  # PUB, XPUB: an in-pipe brings subscriptions
        self.throttle_s = ctx.params.command_throttle_s
        self.ledger = ctx.ledger
        wake = ctx.params.app_wake
        self.wake_sampler = wake.sampler(None if wake.is_constant else ctx.stream(f"wake.{name}")) if wake is not None else None

    def _init_routing(self) -> None:
        traits, options = self.traits, self.options
        send = traits.send
        self.lb: LoadBalance | None = LoadBalance() if send == LB else None
        self.fq: FairQueue | None = FairQueue() if traits.receives else None
        self.dist: Distribute | None = None
        self.router: RouteByIdentity | None = None
        # xsend: the type's own send (socket_base_t::xsend): a dropping policy's own send,
        # or the socket type's on top of lb_t (REQ's lockstep) or its single pipe.
        self.xsend: Callable[[Message], int]
        policy: Any  # untyped for Cython: ``policy.send`` must be a Python bound method
        if send == DIST:
            self.dist = policy = Distribute(self, bool(options.xpub_nodrop))
            self.xsend = policy.send
        elif send == ROUTE:
            self.router = policy = RouteByIdentity(self, bool(options.router_mandatory))
            self.xsend = policy.send
        elif send == LB:
            self.xsend = self._send_request if traits.request else self._send_lb
        elif send == REPLY:
            self.xsend = self._send_reply
        elif send == PAIR:
            self.xsend = self._send_pair
        else:
            self.xsend = self._send_unsupported
        self.pair_peer: Peer | None = None
        self.all_subs = Subscriptions()  # XPUB: union over peers, to pass only new ones up
        self.pending_subscriptions: list[Message] = []  # XPUB: for the application's recv
        # REQ/REP lockstep
        self.reply_pipe: Pipe | None = None
        self.awaiting_reply = False
        self.reply_peer: Peer | None = None
        self.reply_envelope: tuple = ()

    def reset(self) -> None:
        """A fresh socket of the same name and options (a restarted process); stats stay."""
        self.state = NEW
        for peer in self.peers:
            peer.listed = False
        self.peers = []
        self.mailbox = []
        self.last_command_time = float("-inf")
        self.ticks = 0
        self.waiters = []
        self.wake_pending = False
        if self.traits.sends_subscriptions:
            self.own_subs = Subscriptions(tuple(self.options.subscribe))
        self._init_routing()

    # ------------------------------------------------------------------------------
    # commands

    def post(self, fn: Callable[[Any], None], arg: Any) -> None:
        """A command for this socket's application thread."""
        if self.state == CLOSED:
            # The reaper owns a closed socket and processes its commands at once.
            fn(arg)
            return
        self.mailbox.append((fn, arg))
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def post_activate_read(self, pipe: Pipe) -> None:
        self.post(self.on_activate_read, pipe)

    def post_activate_write(self, pipe: Pipe, read_count: int) -> None:
        self.post(self.on_activate_write, (pipe, read_count))

    def process_commands(self, throttle: bool = False) -> None:
        if throttle:
            now = self.clock.now
            last = self.last_command_time
            if last <= now and now - last <= self.throttle_s:
                return
            self.last_command_time = now
        while self.mailbox:
            box = self.mailbox
            self.mailbox = []
            for fn, arg in box:
                if fn is self.on_activate_read:
                    self._cmd_activate_read(arg)
                elif fn is self.on_activate_write:
                    self._cmd_activate_write(arg)
                else:
                    fn(arg)

    def _schedule_wake(self) -> None:
        """A command reached a blocked application thread: it wakes after a thread
        wake-up latency (futex/eventfd plus scheduling; profile ``api.wake_s``).

        With no latency the thread runs at once (it is the same instant), unless another
        wake-up is already running on the stack: then it is queued for this instant, so
        chains of wake-ups never recurse.
        """
        self.wake_pending = True
        delay = self.wake_sampler.next_float() if self.wake_sampler is not None else 0.0
        if delay > 0:
            self.wake_timer.arm(delay)
            return
        ctx = self.ctx
        if ctx.waking:
            self.wake_timer.arm(0.0)  # after what is due now (env.call_soon)
            return
        ctx.waking = True
        try:
            self._wake()
        finally:
            ctx.waking = False

    def _wake_fired(self, event: Any) -> None:
        self._wake()  # every firing: each was a wake-up scheduled

    def _wake(self) -> None:
        self.wake_pending = False
        waiters = self.waiters
        if not waiters:
            return
        self.process_commands()
        if len(waiters) == 1:
            waiters[0]()
            return
        for callback in list(waiters):
            if callback in self.waiters:
                callback()

    def wait(self, callback: Callable[[], None]) -> None:
        """Block an application call until a command arrives, then call ``callback``."""
        if callback not in self.waiters:
            self.waiters.append(callback)
        if self.mailbox and not self.wake_pending:
            self._schedule_wake()

    def stop_waiting(self, callback: Callable[[], None] | None = None) -> None:
        """``callback`` is no longer blocked (every waiter when None: the socket closed)."""
        if callback is None:
            self.waiters.clear()
        elif callback in self.waiters:
            self.waiters.remove(callback)

    def _cmd_activate_read(self, pipe: Pipe) -> None:
        if self.reads_subscriptions:
            self._read_subscriptions(pipe)
        elif self.fq is not None:
            self.fq.activated(pipe)

    def _cmd_activate_write(self, arg: tuple[Pipe, int]) -> None:
        pipe, read_count = arg
        if pipe.apply_activate_write(read_count):
            if self.lb is not None and pipe in self.lb.peer_of:
                self.lb.activated(pipe)

    def post_attach(self, peer: Peer) -> None:
        """``bind`` command: a connection's pipes reach this socket (attached when it
        processes commands)."""
        self.post(self.attach, peer)

    def post_detach(self, peer: Peer) -> None:
        """``pipe_term`` reached this socket: forget the peer when it processes commands."""
        self.post(self.detach, peer)

    def post_peer_closing(self, peer: Peer) -> None:
        """``pipe_term`` from the peer's side while its messages are still queued here."""
        self.post(self.peer_closing, peer)

    def peer_closing(self, peer: Peer) -> None:
        """``pipe_t::process_pipe_term`` at the surviving end: stop routing to the peer,
        keep reading what it already sent (the peer is detached once its inbound pipe is
        drained, or now if it has none)."""
        if self.lb is not None and peer.out_pipe is not None and peer.out_pipe in self.lb.peer_of:
            self.lb.terminated(peer.out_pipe)
        if self.dist is not None:
            self.dist.remove(peer)
        if self.router is not None:
            self.router.remove(peer.routing_key, peer)
        if self.pair_peer is peer:
            self.pair_peer = None
        if peer.in_pipe is None or not peer.in_fq:
            self.detach(peer)

    # ------------------------------------------------------------------------------
    # peers and pipes

    def add_pending_peer(self, peer: Peer) -> None:
        """A connection to this socket is being made: known for loss accounting only."""
        if not peer.listed:
            peer.listed = True
            self.peers.append(peer)
        if self.dist is not None:
            self.dist.add(peer)

    def attach(self, peer: Peer) -> None:
        """``socket_base_t::attach_pipe`` + the type's ``xattach_pipe``."""
        if self.state == CLOSED or not peer.alive:
            return
        if not peer.listed:
            peer.listed = True
            self.peers.append(peer)
        peer.attached = True
        traits = self.traits
        out_pipe, in_pipe = peer.out_pipe, peer.in_pipe
        if traits.single_peer:
            if self.pair_peer is not None and self.pair_peer is not peer and self.pair_peer.alive:
                # pair_t::xattach_pipe: a second peer is refused.
                peer.attached = False
                peer.conn.refuse(peer)
                return
            self.pair_peer = peer
        if self.dist is not None:
            self.dist.add(peer)
            if in_pipe is not None:
                self._read_subscriptions(in_pipe, peer)
        if self.lb is not None and out_pipe is not None:
            self.lb.attach(out_pipe, peer)
        if self.router is not None:
            self.router.add(peer.routing_key, peer)
        if self.fq is not None and in_pipe is not None:
            self.fq.attach(in_pipe, peer)
            peer.in_fq = True
        if traits.sends_subscriptions and out_pipe is not None and self.own_subs:
            # xsub_t::xattach_pipe: send every cached subscription into the new pipe;
            # one that does not fit is silently lost (xsub_t::send_subscription).
            for prefix in list(self.own_subs.prefixes):
                self.write_subscription(out_pipe, prefix, True)

    def detach(self, peer: Peer) -> None:
        """The connection is gone: forget its pipes (``pipe_terminated``)."""
        peer.alive = False
        peer.attached = False
        if peer.listed:
            peer.listed = False
            self.peers.remove(peer)
        if self.dist is not None:
            self.dist.remove(peer)
            if self.traits.app_sees_subscriptions:
                # xpub_t::xpipe_terminated: unsubscribe what only this peer wanted.
                for prefix in list(peer.applied.prefixes):
                    if self.all_subs.remove(prefix):
                        self._queue_subscription_for_app(prefix, False)
            peer.applied = Subscriptions()
        if self.lb is not None and peer.out_pipe is not None:
            self.lb.terminated(peer.out_pipe)
        if self.router is not None:
            self.router.remove(peer.routing_key, peer)
        if self.fq is not None and peer.in_pipe is not None and peer.in_fq:
            self.fq.terminated(peer.in_pipe)
            peer.in_fq = False
        if self.pair_peer is peer:
            self.pair_peer = None
        if self.reply_peer is peer:
            self.reply_peer = None
        if self.reply_pipe is not None and self.reply_pipe is peer.in_pipe:
            self.reply_pipe = None
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    # ------------------------------------------------------------------------------
    # subscriptions

    def write_subscription(self, pipe: Pipe, prefix: str, subscribe: bool) -> None:
        if pipe.check_write():
            wire = len(prefix.encode()) + 1 + 2
            pipe.write((SUBSCRIBE_ID if subscribe else UNSUBSCRIBE_ID, self.clock.now, 0, wire, prefix, (), self.index))

    def send_subscription(self, prefix: str, subscribe: bool) -> int:
        """XSUB ``xsend`` of a (un)subscription: cache it and send it to every peer."""
        assert self.own_subs is not None
        self.process_commands(throttle=True)
        if subscribe:
            self.own_subs.add(prefix)
        elif not self.own_subs.remove(prefix):
            return SENT
        for peer in self.peers:
            if peer.attached and peer.out_pipe is not None:
                self.write_subscription(peer.out_pipe, prefix, subscribe)
        return SENT

    def _read_subscriptions(self, pipe: Pipe, peer: Peer | None = None) -> None:
        """``xpub_t::xread_activated``: apply every (un)subscription waiting in the pipe.

        An XPUB's application gets a subscription when it is the first for its prefix
        (``mtrie_t::add`` returns true) and an unsubscription unless other pipes still
        want the prefix: ``notify = rm_result != values_remain``, so a cancel for a prefix
        this pipe never subscribed to (``rm`` returns ``not_found``: its subscription was
        lost at a full pipe, or it never sent one) is passed up too, even while other
        subscribers keep the prefix.
        """
        if peer is None:
            peer = self._peer_of_in_pipe(pipe)
            if peer is None:
                return
        app = self.traits.app_sees_subscriptions
        while True:
            msg = pipe.read()
            if msg is None:
                return
            kind = msg[MSG_ID]
            prefix = msg[MSG_TOPIC]
            if kind == SUBSCRIBE_ID:
                if peer.applied.set_once(prefix):
                    if self.all_subs.add(prefix) and app:
                        self._queue_subscription_for_app(prefix, True)
            elif kind == UNSUBSCRIBE_ID:
                if peer.applied.remove(prefix):
                    if self.all_subs.remove(prefix) and app:
                        self._queue_subscription_for_app(prefix, False)  # last_value_removed
                elif app:
                    self._queue_subscription_for_app(prefix, False)  # not_found

    def _discard(self, msg: Message, pipe: Pipe | None, rule: int) -> None:
        """A message read from ``pipe`` (never None here: the read returned a message) that
        the socket throws away by ``rule``."""
        self.discarded += 1
        self.ledger.discarded(msg, self.index, pipe.index, rule, self.clock.now)  # type: ignore[union-attr]

    def _queue_subscription_for_app(self, prefix: str, subscribe: bool) -> None:
        self.pending_subscriptions.append((SUBSCRIBE_ID if subscribe else UNSUBSCRIBE_ID, self.clock.now, 0, 0, prefix, (), self.index))
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def _peer_of_in_pipe(self, pipe: Pipe) -> Peer | None:
        for peer in self.peers:
            if peer.in_pipe is pipe:
                return peer
        return None

    # ------------------------------------------------------------------------------
    # sending

    def send(self, msg: Message) -> int:
        """One non-blocking ``zmq_send`` attempt: SENT, AGAIN or UNROUTABLE.

        ``socket_base_t::send`` first calls ``process_commands(0, true)``: commands are
        looked at only if more than ``max_command_delay`` passed since the last look.
        """
        now = self.clock.now
        last = self.last_command_time
        if not (last <= now and now - last <= self.throttle_s):
            self.last_command_time = now
            if self.mailbox:
                self.process_commands()
        dist = self.dist
        if dist is not None:  # xsend, by a C call: a PUB's every message
            return dist.send(msg)
        return self.xsend(msg)

    def _send_unsupported(self, msg: Message) -> int:  # pragma: no cover - spec forbids it
        raise RuntimeError(f"{self.type} sockets do not send application messages")

    def _send_lb(self, msg: Message) -> int:
        status, _pipe = self.lb.send(msg)  # type: ignore[union-attr]
        if status == SENT:
            self.copies += 1
        return status

    def _send_request(self, msg: Message) -> int:
        """REQ: the empty delimiter under the request, load-balance, then wait for the
        reply from that pipe only."""
        if self.awaiting_reply:
            raise RuntimeError(f"REQ socket {self.name}: send while a reply is pending (EFSM)")
        envelope = msg[MSG_ENVELOPE]
        if BOTTOM not in envelope:
            msg = msg[:MSG_ENVELOPE] + (envelope + (BOTTOM,),) + msg[MSG_ENVELOPE + 1 :]
        status, pipe = self.lb.send(msg)  # type: ignore[union-attr]
        if status == SENT:
            self.copies += 1
            # req_t remembers the peer; its reply arrives on that peer's inbound pipe
            self.reply_pipe = self.lb.peer_of[pipe].in_pipe  # type: ignore[union-attr,index]
            self.awaiting_reply = True
            # req_t::xsend "eats all currently available messages" once the request has a
            # pipe: a late reply to an earlier request (another peer answered too, or the
            # application gave up waiting) must not pose as the answer to this one.
            fq = self.fq
            while True:
                stale, from_pipe = fq.recv()  # type: ignore[union-attr]
                if stale is None:
                    break
                self._discard(stale, from_pipe, RULE_REQ_STATE)
        return status

    def _send_reply(self, msg: Message) -> int:
        """REP: back to the pipe the request came from; dropped if full or gone."""
        peer = self.reply_peer
        self.reply_peer = None
        now = self.clock.now
        self.copies += 1
        if peer is None or not peer.alive or peer.out_pipe is None:
            self.dropped += 1
            self.ledger.dropped(msg, self.index, -1, RULE_NO_PEERS, now)
            return SENT
        pipe = peer.out_pipe
        if not pipe.check_write():
            self.dropped += 1
            pipe.dropped += 1
            self.ledger.dropped(msg, self.index, pipe.index, RULE_HWM, now)
            return SENT
        pipe.write(msg[:MSG_ENVELOPE] + (self.reply_envelope,) + msg[MSG_ENVELOPE + 1 :])
        return SENT

    def _send_pair(self, msg: Message) -> int:
        peer = self.pair_peer
        if peer is None or peer.out_pipe is None or not peer.attached:
            return AGAIN
        pipe = peer.out_pipe
        if not pipe.check_write():
            return AGAIN
        self.copies += 1
        pipe.write(msg)
        return SENT

    def has_out(self) -> bool:
        """ZMQ_POLLOUT."""
        send = self.traits.send
        if send == DIST:
            return self.dist.has_out()  # type: ignore[union-attr]
        if send == LB:
            if self.traits.request and self.awaiting_reply:
                return False
            return self.lb.has_out()  # type: ignore[union-attr]
        if send == ROUTE:
            return self.router.has_out()  # type: ignore[union-attr]
        if send == PAIR:
            peer = self.pair_peer
            return peer is not None and peer.out_pipe is not None and peer.out_pipe.check_write()
        if send == REPLY:
            return self.reply_peer is not None
        if self.traits.sends_subscriptions:
            return True  # xsub_t::xhas_out: subscriptions can be sent at any time
        return False

    # ------------------------------------------------------------------------------
    # receiving

    def recv(self) -> Message | None:
        """One non-blocking ``zmq_recv`` attempt (``socket_base_t::recv``)."""
        self.ticks += 1
        if self.ticks >= INBOUND_POLL_RATE:
            self.process_commands()
            self.ticks = 0
        msg = self.xrecv()
        if msg is not None:
            return msg
        if self.mailbox:
            self.process_commands()
        self.ticks = 0
        return self.xrecv()

    def has_in(self) -> bool:
        """ZMQ_POLLIN (``zmq_poll`` processes commands first)."""
        self.process_commands()
        if self.traits.app_sees_subscriptions:
            return bool(self.pending_subscriptions)
        if self.traits.request and not self.awaiting_reply:
            return False
        if self.traits.reply and self.reply_peer is not None:
            return False
        fq = self.fq
        return fq is not None and fq.has_in()

    def xrecv(self) -> Message | None:
        """The type's own recv (``socket_base_t::xrecv``): for PULL, DEALER, PAIR, XSUB and
        a SUB subscribed to everything, the fair queue's next message as it is."""
        if self.plain_recv:
            fq = self.fq
            msg = fq.take()  # type: ignore[union-attr]
            if msg is not None:
                self.last_pipe_index = fq.last.index  # type: ignore[union-attr]
            return msg
        return self._xrecv_typed()

    def _xrecv_typed(self) -> Message | None:
        traits = self.traits
        if traits.app_sees_subscriptions:
            if self.pending_subscriptions:
                return self.pending_subscriptions.pop(0)
            return None
        fq = self.fq
        if fq is None:
            return None
        if traits.request and not self.awaiting_reply:
            return None  # EFSM: the workload never asks
        if traits.reply and self.reply_peer is not None:
            return None  # EFSM: reply first
        while True:
            msg, pipe = fq.recv()
            if msg is None:
                return None
            self.last_pipe_index = pipe.index  # type: ignore[union-attr]
            if traits.filters_on_recv:
                subs = self.own_subs
                if not subs.all and not subs.matches(msg[MSG_TOPIC]):  # type: ignore[union-attr]
                    self._discard(msg, pipe, RULE_FILTERED)
                    continue
                return msg
            if traits.prepends_identity:
                peer = fq.peer_of[pipe]  # type: ignore[index]
                return msg[:MSG_ENVELOPE] + ((peer.routing_key,) + msg[MSG_ENVELOPE],) + msg[MSG_ENVELOPE + 1 :]
            if traits.request:
                if pipe is not self.reply_pipe:
                    self._discard(msg, pipe, RULE_REQ_STATE)
                    continue
                if BOTTOM not in msg[MSG_ENVELOPE]:
                    # req_t::xrecv: the reply's first frame must be the empty delimiter;
                    # a message without it is skipped and the REQ keeps waiting
                    self._discard(msg, pipe, RULE_NO_DELIMITER)
                    continue
                self.awaiting_reply = False
                self.reply_pipe = None
                return msg
            if traits.reply:
                envelope = msg[MSG_ENVELOPE]
                if BOTTOM not in envelope:
                    # rep_t::xrecv copies the routing ids into the reply pipe down to the
                    # empty delimiter; a message that ends first is malformed: rolled back
                    # and skipped whole, and the REP reads on (no reply is owed)
                    self._discard(msg, pipe, RULE_NO_DELIMITER)
                    continue
                self.reply_peer = fq.peer_of[pipe]  # type: ignore[index]
                self.reply_envelope = envelope[: envelope.index(BOTTOM) + 1]
                return msg
            return msg

    # ------------------------------------------------------------------------------
    # lifecycle

    @property
    def is_open(self) -> bool:
        return self.state == OPEN

    def __repr__(self) -> str:
        return f"<Socket {self.name} {self.type}>"
