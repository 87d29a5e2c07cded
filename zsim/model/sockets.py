"""The socket types, each a ``Socket`` over its own routing policies, as in libzmq.

``push_t { lb_t }``, ``pull_t { fq_t }``, ``dealer_t { fq_t; lb_t }``, ``router_t { fq_t;
outpipes }``, ``xpub_t { dist_t }``, ``xsub_t { fq_t; subscriptions }``, ``pair_t { pipe }``
(``src/push.hpp``, ``src/dealer.hpp``, ...): each class implements the ``x`` methods
``socket_base_t`` calls, over policies it always has. Where libzmq derives one type from
another (``pub_t`` from ``xpub_t``, ``sub_t`` from ``xsub_t``, ``req_t`` from ``dealer_t``),
so does this module. REP is modelled over its own fair queue and the peer the request came
from (``rep_t`` routes the reply by the routing ids it kept, which is the same pipe).

``zsim.socket_types.TYPES`` stays the table every check reads; ``CLASSES`` maps each of its
names to the class here (``tests/test_socket_types.py`` checks that each class is what its
row says).
"""

from __future__ import annotations

from typing import Any

from ..constants import frame_wire_bytes
from .context import Context
from .fates import AGAIN, RULE_DISCONNECT, RULE_FILTERED, RULE_HWM, RULE_NO_DELIMITER, RULE_NO_PEERS, RULE_REQ_STATE, SENT
from .peer import Peer, Subscriptions
from .pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, MSG_WIRE, PROBE_ID, SUBSCRIBE_ID, UNSUBSCRIBE_ID, Message, Pipe
from .routing import Distribute, FairQueue, LoadBalance, RouteByIdentity
from .socket import Socket, SocketOptions

#: wire bytes of a REQ's request id frame (ZMQ_REQ_CORRELATE: a uint32 in a short frame)
REQUEST_ID_WIRE = frame_wire_bytes(4)


def _attach_in(fq: FairQueue, peer: Peer) -> None:
    """``fq_t::attach`` of the peer's inbound pipe, if it has one."""
    if peer.in_pipe is not None:
        fq.attach(peer.in_pipe, peer)
        peer.in_fq = True


def _take(sock: Socket, fq: FairQueue) -> Message | None:
    """``fq_t::recv``: the next message in turn, its pipe's index the socket's last."""
    msg = fq.take()
    if msg is not None:
        sock.last_pipe_index = fq.last.index
    return msg


def _terminate_in(fq: FairQueue, peer: Peer) -> None:
    """``fq_t::pipe_terminated`` of the peer's inbound pipe, if the queue has it."""
    if peer.in_pipe is not None and peer.in_fq:
        fq.terminated(peer.in_pipe)
        peer.in_fq = False


def _probe(sock: Socket, peer: Peer) -> None:
    """ZMQ_PROBE_ROUTER (``router_t::xattach_pipe``, ``dealer_t::xattach_pipe``): an empty
    message into the new peer's pipe, written only if it fits (``pipe_t::write``); a
    ROUTER reads it as the routing id and an empty frame."""
    pipe = peer.out_pipe
    if pipe is not None and pipe.check_write():
        pipe.write((PROBE_ID, sock.clock.now, 0, frame_wire_bytes(0), "", (), sock.index, -1))


class Pull(Socket):
    """``pull_t``: fair-queued reads, no send."""

    __slots__ = ("fq",)

    def xinit(self) -> None:
        self.fq = FairQueue()

    def xrecv(self) -> Message | None:
        return _take(self, self.fq)

    def xhas_in(self) -> bool:
        return self.fq.has_in()

    def xattach(self, peer: Peer) -> None:
        _attach_in(self.fq, peer)

    def xterminated(self, peer: Peer) -> None:
        _terminate_in(self.fq, peer)

    def xread_activated(self, pipe: Pipe) -> None:
        self.fq.activated(pipe)


class Push(Socket):
    """``push_t``: load-balanced sends, no recv."""

    __slots__ = ("lb",)

    def xinit(self) -> None:
        self.lb = LoadBalance()

    def xsend(self, msg: Message) -> int:
        status, _pipe = self.lb.send(msg)
        if status == SENT:
            self.copies += 1
        return status

    def xhas_out(self) -> bool:
        return self.lb.has_out()

    def xattach(self, peer: Peer) -> None:
        if peer.out_pipe is not None:
            self.lb.attach(peer.out_pipe, peer)

    def xterminated(self, peer: Peer) -> None:
        if peer.out_pipe is not None:
            self.lb.terminated(peer.out_pipe)

    def xpeer_closing(self, peer: Peer) -> None:
        if peer.out_pipe is not None:
            self.lb.terminated(peer.out_pipe)

    def xwrite_activated(self, pipe: Pipe) -> None:
        self.lb.activated(pipe)


class Dealer(Socket):
    """``dealer_t``: load-balanced sends, fair-queued reads; with ``probe_router`` an empty
    message to each new peer."""

    __slots__ = ("lb", "fq", "probe_router")

    def xinit(self) -> None:
        self.lb = LoadBalance()
        self.fq = FairQueue()
        self.probe_router = bool(self.options.probe_router)

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``dealer_t::xsetsockopt``: ZMQ_PROBE_ROUTER."""
        if name == "probe_router":
            self.probe_router = bool(value)
            return True
        return False

    def xsend(self, msg: Message) -> int:
        status, _pipe = self.lb.send(msg)
        if status == SENT:
            self.copies += 1
        return status

    def xrecv(self) -> Message | None:
        return _take(self, self.fq)

    def xhas_in(self) -> bool:
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        return self.lb.has_out()

    def xattach(self, peer: Peer) -> None:
        if self.probe_router:
            _probe(self, peer)
        if peer.out_pipe is not None:
            self.lb.attach(peer.out_pipe, peer)
        _attach_in(self.fq, peer)

    def xterminated(self, peer: Peer) -> None:
        if peer.out_pipe is not None:
            self.lb.terminated(peer.out_pipe)
        _terminate_in(self.fq, peer)

    def xpeer_closing(self, peer: Peer) -> None:
        if peer.out_pipe is not None:
            self.lb.terminated(peer.out_pipe)

    def xread_activated(self, pipe: Pipe) -> None:
        self.fq.activated(pipe)

    def xwrite_activated(self, pipe: Pipe) -> None:
        self.lb.activated(pipe)


class Req(Dealer):
    """``req_t``: a DEALER in lockstep: the empty delimiter under each request, then the
    reply from that request's pipe only. ``req_relaxed`` lets a new request replace the
    one awaiting its reply; ``req_correlate`` puts a request id in front of each request
    and skips replies that do not carry the current one."""

    __slots__ = ("reply_pipe", "awaiting_reply", "strict", "correlate", "request_id")

    def xinit(self) -> None:
        Dealer.xinit(self)
        self.reply_pipe: Pipe | None = None
        self.awaiting_reply = False
        self.fsm = True
        # req_t::_strict (ZMQ_REQ_RELAXED clears it) and _request_id_frames_enabled
        self.strict = not self.options.req_relaxed
        self.correlate = bool(self.options.req_correlate)
        self.request_id = 0
        if self.correlate:
            self.request_id = self._first_request_id()

    def _first_request_id(self) -> int:
        """``req_t::_request_id``'s start: ``generate_random ()``, a random uint32 (drawn
        again when a restarted process makes the socket again)."""
        return int(self.ctx.stream(f"req_id.{self.name}.{self.clock.now!r}").integers(0, 2**32))

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``req_t::xsetsockopt``: ZMQ_REQ_RELAXED, ZMQ_REQ_CORRELATE; then ``dealer_t``'s."""
        if name == "req_relaxed":
            self.strict = not value
            return True
        if name == "req_correlate":
            if value and not self.correlate:
                self.request_id = self._first_request_id()
            self.correlate = bool(value)
            return True
        return Dealer.xsetsockopt(self, name, value)

    def send_refused(self) -> bool:
        """``req_t::xsend``: a request while the reply to the last one is pending is EFSM
        (unless ``req_relaxed``)."""
        return self.awaiting_reply and self.strict

    def recv_refused(self) -> bool:
        """``req_t::xrecv``: a recv before a request was sent is EFSM."""
        return not self.awaiting_reply

    def xsend(self, msg: Message) -> int:
        if self.awaiting_reply:
            if self.strict:
                raise RuntimeError(f"REQ socket {self.name}: send while a reply is pending (EFSM)")
            # req_t::xsend, not strict: the new request ends the wait for the last one's
            # reply; a late reply to it comes from a pipe it no longer expects (or, with
            # req_correlate, carries an old request id) and is skipped. The pipe stays.
            self.awaiting_reply = False
            self.reply_pipe = None
        envelope = msg[MSG_ENVELOPE]
        if self.correlate:
            msg = self._with_request_id(msg)
        elif BOTTOM not in envelope:
            msg = msg[:MSG_ENVELOPE] + (envelope + (BOTTOM,),) + msg[MSG_ENVELOPE + 1 :]
        pipe: Pipe | None
        status, pipe = self.lb.send(msg)
        if status == SENT:
            self.copies += 1
            # req_t remembers the peer; its reply arrives on that peer's inbound pipe
            self.reply_pipe = self.lb.peer_of[pipe].in_pipe  # type: ignore[index]  # SENT: a pipe
            self.awaiting_reply = True
            # req_t::xsend "eats all currently available messages" once the request has a
            # pipe: a late reply to an earlier request (another peer answered too, or the
            # application gave up waiting) must not pose as the answer to this one.
            fq: FairQueue = self.fq
            while True:
                stale = fq.take()
                if stale is None:
                    break
                self._discard(stale, fq.last, RULE_REQ_STATE)
        return status

    def _with_request_id(self, msg: Message) -> Message:
        """``req_t::xsend`` with ZMQ_REQ_CORRELATE: the request's first frame is its id, one
        more than the last request's (each attempt takes the next: a send that would block
        and is tried again gets a new one), then the empty delimiter."""
        self.request_id = (self.request_id + 1) & 0xFFFFFFFF
        envelope = msg[MSG_ENVELOPE]
        if BOTTOM not in envelope:
            envelope = envelope + (BOTTOM,)
        return msg[:MSG_WIRE] + (msg[MSG_WIRE] + REQUEST_ID_WIRE, msg[MSG_TOPIC], (self.request_id,) + envelope) + msg[MSG_ENVELOPE + 1 :]

    def xrecv(self) -> Message | None:
        if not self.awaiting_reply:
            return None  # EFSM: the workload never asks
        fq: FairQueue = self.fq
        while True:
            msg = fq.take()
            if msg is None:
                return None
            pipe: Pipe = fq.last
            self.last_pipe_index = pipe.index
            if pipe is not self.reply_pipe:
                self._discard(msg, pipe, RULE_REQ_STATE)
                continue
            if self.correlate:
                envelope = msg[MSG_ENVELOPE]
                # req_t::xrecv with request ids: the first frame must be the current
                # request's id, the next the empty delimiter; anything else is skipped
                if not envelope or envelope[0] != self.request_id:
                    self._discard(msg, pipe, RULE_REQ_STATE)
                    continue
                if len(envelope) < 2 or envelope[1] != BOTTOM:
                    self._discard(msg, pipe, RULE_NO_DELIMITER)
                    continue
                self.awaiting_reply = False
                self.reply_pipe = None
                return msg[:MSG_ENVELOPE] + (envelope[1:],) + msg[MSG_ENVELOPE + 1 :]  # the id frame is the REQ's own
            if BOTTOM not in msg[MSG_ENVELOPE]:
                # req_t::xrecv: the reply's first frame must be the empty delimiter;
                # a message without it is skipped and the REQ keeps waiting
                self._discard(msg, pipe, RULE_NO_DELIMITER)
                continue
            self.awaiting_reply = False
            self.reply_pipe = None
            return msg

    def xhas_in(self) -> bool:
        if not self.awaiting_reply:
            return False
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        if self.awaiting_reply and self.strict:
            return False
        return self.lb.has_out()

    def xterminated(self, peer: Peer) -> None:
        Dealer.xterminated(self, peer)
        if self.reply_pipe is not None and self.reply_pipe is peer.in_pipe:
            self.reply_pipe = None


class Router(Socket):
    """``router_t`` (src/router.cpp): sends routed by the first envelope entry, reads
    fair-queued with the sender's routing id pushed onto the envelope.

    A peer is routed to and read from only once it is identified (``router_t::
    xattach_pipe``, ``identify_peer``): its routing id must have arrived (``Peer.
    routing_key``; a connect's arrives at the handshake, or when an inproc name is
    bound; ``connect_routing_id`` names it at once) and be free. Until then its pipe is
    anonymous (``_anonymous_pipes``): not in the routing table, not in the fair queue.
    The arrival is an ``activate_read`` on the pipe (the session or the context writes
    the routing id into it), which ``xread_activated`` answers by identifying the peer.
    A peer presenting a routing id another peer already has stays anonymous for good:
    4.3.5 without ROUTER_HANDOVER "ignore[s] peers with duplicate ID", and having read
    that id, never looks at the pipe again (no read fails, so no ``activate_read``
    comes): nothing it sends is read (test_router_handover.cpp:100). With
    ``router_handover`` the new peer takes the id over (the old pipe is terminated);
    ``probe_router`` writes an empty message to each new peer."""

    __slots__ = ("fq", "router", "anonymous", "handover", "probe_router", "connect_routing_id")

    def xinit(self) -> None:
        opts = self.options
        self.fq = FairQueue()
        self.router = RouteByIdentity(self, bool(opts.router_mandatory))
        # router_t::_anonymous_pipes, by the inbound pipe (what activate_read names): the
        # peer whose routing id has not arrived, or None once its id was read and refused
        self.anonymous: dict[Pipe, Peer | None] = {}
        self.handover = bool(opts.router_handover)
        self.probe_router = bool(opts.probe_router)
        self.connect_routing_id: str | None = opts.connect_routing_id

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``router_t::xsetsockopt``: ZMQ_ROUTER_HANDOVER, ZMQ_PROBE_ROUTER, and
        ``routing_socket_base_t``'s ZMQ_CONNECT_ROUTING_ID."""
        if name == "router_handover":
            self.handover = bool(value)
            return True
        if name == "probe_router":
            self.probe_router = bool(value)
            return True
        if name == "connect_routing_id" and value:
            self.connect_routing_id = str(value)
            return True
        return False

    def take_connect_routing_id(self) -> str | None:
        rid = self.connect_routing_id
        self.connect_routing_id = None
        return rid

    def xsend(self, msg: Message) -> int:
        return self.router.send(msg)

    def xoptions_changed(self, name: str) -> None:
        if name == "router_mandatory":
            self.router.mandatory = bool(self.options.router_mandatory)

    def xrecv(self) -> Message | None:
        fq: FairQueue = self.fq
        msg = fq.take()
        if msg is None:
            return None
        pipe: Pipe = fq.last
        self.last_pipe_index = pipe.index
        peer: Peer = fq.peer_of[pipe]
        return msg[:MSG_ENVELOPE] + ((peer.routing_key,) + msg[MSG_ENVELOPE],) + msg[MSG_ENVELOPE + 1 :]

    def xhas_in(self) -> bool:
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        return self.router.has_out()

    def _identify(self, peer: Peer) -> bool:
        """``router_t::identify_peer``: file the peer under its routing id and read it,
        or false (its id has not arrived, or is taken and ROUTER_HANDOVER is off)."""
        key = peer.routing_key
        if key is None:
            return False
        holder = self.router.by_key.get(key)
        if holder is not None and holder is not peer:
            if not self.handover:
                return False
            # identify_peer with ZMQ_ROUTER_HANDOVER: the old pipe is renamed to a generated
            # id and terminated (pipe_t::terminate (true)); the new peer takes the id
            self.router.remove(key, holder)
            holder.conn.release(holder, RULE_DISCONNECT)
        if not self.router.add(key, peer):
            return False
        _attach_in(self.fq, peer)
        return True

    def xattach(self, peer: Peer) -> None:
        """``router_t::xattach_pipe``: the probe first, then ``identify_peer``."""
        if self.probe_router:
            _probe(self, peer)
        if not self._identify(peer) and peer.in_pipe is not None:
            self.anonymous[peer.in_pipe] = peer if peer.routing_key is None else None

    def xterminated(self, peer: Peer) -> None:
        pipe = peer.in_pipe
        if pipe is not None and self.anonymous and pipe in self.anonymous:
            del self.anonymous[pipe]  # router_t::xpipe_terminated: _anonymous_pipes.erase
            return
        self.router.remove(peer.routing_key, peer)
        _terminate_in(self.fq, peer)

    def xpeer_closing(self, peer: Peer) -> None:
        self.router.remove(peer.routing_key, peer)

    def xread_activated(self, pipe: Pipe) -> None:
        """``router_t::xread_activated``: an anonymous pipe's routing id has arrived (it
        is identified, or refused for good), any other pipe rejoins the fair queue."""
        anonymous = self.anonymous
        if not anonymous or pipe not in anonymous:
            self.fq.activated(pipe)
            return
        peer = anonymous[pipe]
        if peer is None or peer.routing_key is None:
            return  # refused already, or its routing id is not here yet
        if self._identify(peer):
            del anonymous[pipe]
        else:
            anonymous[pipe] = None


class Rep(Socket):
    """``rep_t``: a request, then its reply back to the pipe it came from, with the
    routing ids down to the empty delimiter (dropped if that pipe is full or gone)."""

    __slots__ = ("fq", "reply_peer", "reply_envelope", "sending_reply")

    def xinit(self) -> None:
        self.fq = FairQueue()
        self.reply_peer: Peer | None = None
        self.reply_envelope: tuple[Any, ...] = ()
        # rep_t::_sending_reply: a request was received and its reply not yet sent (the
        # peer it came from may have gone meanwhile: the reply is then dropped, no_peer)
        self.sending_reply = False
        self.fsm = True

    def send_refused(self) -> bool:
        """``rep_t::xsend``: a send before a request was received is EFSM."""
        return not self.sending_reply

    def recv_refused(self) -> bool:
        """``rep_t::xrecv``: a recv before the last request's reply was sent is EFSM."""
        return self.sending_reply

    def xsend(self, msg: Message) -> int:
        peer: Peer | None = self.reply_peer
        self.reply_peer = None
        self.sending_reply = False
        now: float = self.clock.now
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

    def xrecv(self) -> Message | None:
        if self.sending_reply:
            return None  # EFSM: reply first
        fq: FairQueue = self.fq
        while True:
            msg = fq.take()
            if msg is None:
                return None
            pipe: Pipe = fq.last
            self.last_pipe_index = pipe.index
            envelope = msg[MSG_ENVELOPE]
            if BOTTOM not in envelope:
                # rep_t::xrecv copies the routing ids into the reply pipe down to the
                # empty delimiter; a message that ends first is malformed: rolled back
                # and skipped whole, and the REP reads on (no reply is owed)
                self._discard(msg, pipe, RULE_NO_DELIMITER)
                continue
            self.reply_peer = fq.peer_of[pipe]
            self.reply_envelope = envelope[: envelope.index(BOTTOM) + 1]
            self.sending_reply = True
            return msg

    def xhas_in(self) -> bool:
        if self.sending_reply:
            return False
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        return self.sending_reply

    def xattach(self, peer: Peer) -> None:
        _attach_in(self.fq, peer)

    def xterminated(self, peer: Peer) -> None:
        _terminate_in(self.fq, peer)
        if self.reply_peer is peer:
            self.reply_peer = None

    def xread_activated(self, pipe: Pipe) -> None:
        self.fq.activated(pipe)


class Pair(Socket):
    """``pair_t``: one peer; a second is refused (``pair_t::xattach_pipe``)."""

    __slots__ = ("fq", "pair_peer")

    def xinit(self) -> None:
        self.fq = FairQueue()
        self.pair_peer: Peer | None = None

    def xsend(self, msg: Message) -> int:
        peer: Peer | None = self.pair_peer
        if peer is None or peer.out_pipe is None or not peer.attached:
            return AGAIN
        pipe = peer.out_pipe
        if not pipe.check_write():
            return AGAIN
        self.copies += 1
        pipe.write(msg)
        return SENT

    def xrecv(self) -> Message | None:
        return _take(self, self.fq)

    def xhas_in(self) -> bool:
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        peer = self.pair_peer
        return peer is not None and peer.out_pipe is not None and peer.out_pipe.check_write()

    def xattach(self, peer: Peer) -> None:
        if self.pair_peer is not None and self.pair_peer is not peer and self.pair_peer.alive:
            peer.attached = False
            peer.conn.refuse(peer)
            return
        self.pair_peer = peer
        _attach_in(self.fq, peer)

    def xterminated(self, peer: Peer) -> None:
        _terminate_in(self.fq, peer)
        if self.pair_peer is peer:
            self.pair_peer = None

    def xpeer_closing(self, peer: Peer) -> None:
        if self.pair_peer is peer:
            self.pair_peer = None

    def xread_activated(self, pipe: Pipe) -> None:
        self.fq.activated(pipe)


class XPub(Socket):
    """``xpub_t``: sends to every matching subscriber (``dist_t``); in-pipes bring
    subscriptions, and the application receives each new one and each last cancel (every
    one with ``xpub_verbose``/``xpub_verboser``), and the messages an XSUB sends upstream.
    With ``xpub_manual`` the application receives every (un)subscription and decides what
    the pipe it came from is subscribed to (``subscribe``/``unsubscribe`` on the XPUB)."""

    __slots__ = ("dist", "all_subs", "pending_subscriptions", "pending_sources", "verbose_subs", "verbose_unsubs", "manual",
                 "manual_subs", "pending_pipes", "last_pipe")

    def xinit(self) -> None:
        opts = self.options
        self.dist = Distribute(self, bool(opts.xpub_nodrop), bool(opts.invert_matching))
        self.all_subs = Subscriptions()  # union over peers, to pass only new ones up
        # for the application's recv (xpub_t::_pending_data): (un)subscriptions, and the
        # messages an XSUB sent upstream; with the index of the pipe each came from (-1: made here)
        self.pending_subscriptions: list[Message] = []
        self.pending_sources: list[int] = []
        # xpub_t::_verbose_subs/_verbose_unsubs: XPUB_VERBOSE sets the first, XPUB_VERBOSER both
        self.verbose_subs = bool(opts.xpub_verbose or opts.xpub_verboser)
        self.verbose_unsubs = bool(opts.xpub_verboser)
        # xpub_t::_manual, _manual_subscriptions (what each pipe asked for), _pending_pipes
        # (the pipe of each (un)subscription passed up, None for one made at a pipe's end)
        # and _last_pipe (that of the last one the application read)
        self.manual = False
        self.manual_subs: dict[Peer, Subscriptions] = {}
        self.pending_pipes: list[Peer | None] = []
        self.last_pipe: Peer | None = None
        self._set_manual(bool(opts.xpub_manual))

    def _set_manual(self, manual: bool) -> None:
        self.manual = manual
        # the application decides what a pipe is subscribed to: what the subscriber wants
        # says nothing about a copy it did not get
        self.dist.counts_joiners = not manual

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``xpub_t::xsetsockopt``: XPUB_VERBOSE, XPUB_VERBOSER, XPUB_MANUAL, and with
        XPUB_MANUAL, ZMQ_SUBSCRIBE/ZMQ_UNSUBSCRIBE applied to the pipe of the last
        (un)subscription the application read (nothing if there is none, or it is gone);
        without XPUB_MANUAL those two are not an XPUB's (EINVAL)."""
        if name == "xpub_verbose":
            self.verbose_subs = bool(value)
            self.verbose_unsubs = False
            return True
        if name == "xpub_verboser":
            self.verbose_subs = self.verbose_unsubs = bool(value)
            return True
        if name == "xpub_manual":
            self._set_manual(bool(value))
            return True
        if (name == "subscribe" or name == "unsubscribe") and self.manual:
            last = self.last_pipe
            if last is not None:
                prefix = str(value)
                if name == "subscribe":
                    if last.applied.set_once(prefix):
                        self.all_subs.add(prefix)
                elif last.applied.remove(prefix):
                    self.all_subs.remove(prefix)
            return True
        return False

    def xsend(self, msg: Message) -> int:
        return self.dist.send(msg)

    def xoptions_changed(self, name: str) -> None:
        if name == "xpub_nodrop":
            self.dist.nodrop = bool(self.options.xpub_nodrop)
        elif name == "invert_matching":
            self.dist.invert = bool(self.options.invert_matching)

    def xrecv(self) -> Message | None:
        if not self.pending_subscriptions:
            return None
        if self.manual and self.pending_pipes:
            # xpub_t::xrecv: reading a message makes its pipe the one manual subscriptions
            # go to; a pipe the distributor no longer has takes none
            last = self.pending_pipes.pop(0)
            self.last_pipe = last if last is not None and last.alive and last.attached else None
        self.last_pipe_index = self.pending_sources.pop(0)
        return self.pending_subscriptions.pop(0)

    def xhas_in(self) -> bool:
        return bool(self.pending_subscriptions)

    def xhas_out(self) -> bool:
        return self.dist.has_out()

    def xattach(self, peer: Peer) -> None:
        self.dist.add(peer)
        if peer.in_pipe is not None:
            self._read_subscriptions(peer.in_pipe, peer)

    def xterminated(self, peer: Peer) -> None:
        self.dist.remove(peer)
        if self.manual:
            # xpub_t::xpipe_terminated, manual: a cancel goes up for every prefix the pipe
            # asked for (each with no pipe for a manual subscription); the pipe leaves the
            # real subscriptions silently
            requested = self.manual_subs.pop(peer, None)
            if requested is not None:
                for prefix in list(requested.prefixes):
                    self._pass_up(prefix, False)
                    self.last_pipe = None
                    self.pending_pipes.append(None)
            for prefix in list(peer.applied.prefixes):
                self.all_subs.remove(prefix)
            if self.last_pipe is peer:
                self.last_pipe = None
        else:
            # xpub_t::xpipe_terminated: unsubscribe what only this peer wanted (with
            # xpub_verboser, everything it wanted: mtrie_t::rm's call_on_uniq is off)
            for prefix in list(peer.applied.prefixes):
                if self.all_subs.remove(prefix) or self.verbose_unsubs:
                    self._pass_up(prefix, False)
        peer.applied = Subscriptions()

    def xpeer_closing(self, peer: Peer) -> None:
        self.dist.remove(peer)

    def xread_activated(self, pipe: Pipe) -> None:
        for peer in self.peers:
            if peer.in_pipe is pipe:
                self._read_subscriptions(pipe, peer)
                return

    def xpending(self, peer: Peer) -> None:
        self.dist.add(peer)

    def xforget(self, peer: Peer) -> None:
        self.dist.remove(peer)

    def _read_subscriptions(self, pipe: Pipe, peer: Peer) -> None:
        """``xpub_t::xread_activated``: apply every (un)subscription waiting in the pipe.

        The application gets a subscription when it is the first for its prefix
        (``mtrie_t::add`` returns true) and an unsubscription unless other pipes still
        want the prefix: ``notify = rm_result != values_remain``, so a cancel for a prefix
        this pipe never subscribed to (``rm`` returns ``not_found``: its subscription was
        lost at a full pipe, or it never sent one) is passed up too, even while other
        subscribers keep the prefix. ``xpub_verbose`` passes up every subscription,
        ``xpub_verboser`` every cancel too. With ``xpub_manual`` nothing is applied: every
        one goes up, with its pipe. A message that is neither is a user message
        (``_user_message``).
        """
        while True:
            msg = pipe.read()
            if msg is None:
                return
            kind = msg[MSG_ID]
            if kind != SUBSCRIBE_ID and kind != UNSUBSCRIBE_ID:
                self._user_message(msg, pipe)
                continue
            prefix = msg[MSG_TOPIC]
            if self.manual:
                requested = self.manual_subs.get(peer)
                if requested is None:
                    requested = self.manual_subs[peer] = Subscriptions()
                if kind == SUBSCRIBE_ID:
                    requested.set_once(prefix)
                else:
                    requested.remove(prefix)
                self.pending_pipes.append(peer)
                self._pass_up(prefix, kind == SUBSCRIBE_ID)
            elif kind == SUBSCRIBE_ID:
                if (peer.applied.set_once(prefix) and self.all_subs.add(prefix)) or self.verbose_subs:
                    self._pass_up(prefix, True)
            elif peer.applied.remove(prefix):
                if self.all_subs.remove(prefix) or self.verbose_unsubs:
                    self._pass_up(prefix, False)  # last_value_removed (or values_remain, verboser)
            else:
                self._pass_up(prefix, False)  # not_found

    def _user_message(self, msg: Message, pipe: Pipe) -> None:
        """A message from upstream that is neither a subscription nor a cancel (an XSUB's
        application sent it): ``xpub_t::xread_activated`` keeps it for the application."""
        self.pending_subscriptions.append(msg)
        self.pending_sources.append(pipe.index)
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def _pass_up(self, prefix: str, subscribe: bool) -> None:
        """A (un)subscription for the application's recv."""
        self.pending_subscriptions.append((SUBSCRIBE_ID if subscribe else UNSUBSCRIBE_ID, self.clock.now, 0, 0, prefix, (), self.index,
                                           -1))
        self.pending_sources.append(-1)
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def held_messages(self) -> list[tuple[Message, int]]:
        return [(msg, source) for msg, source in zip(self.pending_subscriptions, self.pending_sources, strict=True) if msg[MSG_ID] >= 0]

    def drop_held(self, rule: int) -> None:
        now = self.clock.now
        for msg, source in self.held_messages():
            self.ledger.lost(msg, self.index, source, rule, now)
        self.pending_subscriptions = []
        self.pending_sources = []
        self.pending_pipes = []


class Pub(XPub):
    """``pub_t``: an XPUB whose application never sees subscriptions (``pub_t::xrecv``
    fails; ``xhas_in`` is false)."""

    __slots__ = ()

    def xsend(self, msg: Message) -> int:
        # XPub's, written again so that a PUB's every message calls a final class's method
        # (no check for a Python override)
        return self.dist.send(msg)

    def xrecv(self) -> Message | None:
        return None

    def xhas_in(self) -> bool:
        return False

    def xterminated(self, peer: Peer) -> None:
        self.dist.remove(peer)
        peer.applied = Subscriptions()

    def _user_message(self, msg: Message, pipe: Pipe) -> None:
        """``xpub_t::xread_activated``: a PUB never processes user messages (thrown away)."""
        self._discard(msg, pipe, RULE_FILTERED)

    def _pass_up(self, prefix: str, subscribe: bool) -> None:
        """Nothing goes up: a PUB's application reads nothing."""


class XSub(Socket):
    """``xsub_t``: fair-queued reads; what its application sends goes upstream to every
    peer: (un)subscriptions, cached and replayed into every new pipe, and any other
    message as it is."""

    __slots__ = ("fq",)  # own_subs is Socket's: a peer reads it (peer.RemoteEnd)

    def xinit(self) -> None:
        self.fq = FairQueue()
        self.own_subs = Subscriptions(tuple(self.options.subscribe))

    def xsend(self, msg: Message) -> int:
        """``xsub_t::xsend``: a (un)subscription message is applied to the cache and sent
        upstream (a cancel only when it removed the prefix's last reference); any other
        message is sent upstream as it is, to every peer (``dist_t::send_to_all``: dropped
        at a full pipe, never EAGAIN)."""
        kind = msg[MSG_ID]
        if kind == SUBSCRIBE_ID or kind == UNSUBSCRIBE_ID:
            self._subscription(msg[MSG_TOPIC], kind == SUBSCRIBE_ID)
            return SENT
        now = self.clock.now
        for peer in self.peers:
            pipe = peer.out_pipe
            if peer.attached and pipe is not None:
                self.copies += 1
                if pipe.check_write():
                    pipe.write(msg)
                else:
                    self.dropped += 1
                    pipe.dropped += 1
                    self.ledger.dropped(msg, self.index, pipe.index, RULE_HWM, now)
        return SENT

    def xrecv(self) -> Message | None:
        return _take(self, self.fq)

    def xhas_in(self) -> bool:
        return self.fq.has_in()

    def xhas_out(self) -> bool:
        return True  # xsub_t::xhas_out: subscriptions can be sent at any time

    def xattach(self, peer: Peer) -> None:
        _attach_in(self.fq, peer)
        if peer.out_pipe is not None and self.own_subs:
            # xsub_t::xattach_pipe: send every cached subscription into the new pipe.
            for prefix in list(self.own_subs.prefixes):
                self.write_subscription(peer.out_pipe, prefix, True)

    def xterminated(self, peer: Peer) -> None:
        _terminate_in(self.fq, peer)

    def xread_activated(self, pipe: Pipe) -> None:
        self.fq.activated(pipe)

    def send_subscription(self, prefix: str, subscribe: bool) -> int:
        """``zmq_send`` of a (un)subscription by a ``zmq_proxy`` (``socket_base_t::send``:
        commands first, throttled; then ``xsend``)."""
        self.process_commands(throttle=True)
        self._subscription(prefix, subscribe)
        return SENT

    def _subscription(self, prefix: str, subscribe: bool) -> None:
        """``xsub_t::xsend`` of a (un)subscription: cache it and send it to every peer (a
        cancel only when it removed the prefix's last reference: ``trie_t::rm``)."""
        own = self.own_subs
        assert own is not None  # xinit made it
        if subscribe:
            own.add(prefix)
        elif not own.remove(prefix):
            return
        for peer in self.peers:
            if peer.attached and peer.out_pipe is not None:
                self.write_subscription(peer.out_pipe, prefix, subscribe)

    def xhiccuped(self, pipe: Pipe) -> None:
        """``xsub_t::xhiccuped``: a reconnected pipe gets every subscription again."""
        own = self.own_subs
        if own:
            for prefix in list(own.prefixes):
                self.write_subscription(pipe, prefix, True)


class Sub(XSub):
    """``sub_t``: an XSUB that drops what matches none of its subscriptions on receive
    (with ``invert_matching``, what matches one); subscribed to everything and not
    inverting, it never filters (the same path as PULL). Its application cannot send;
    ``subscribe``/``unsubscribe`` set on it send the (un)subscription."""

    __slots__ = ("receives_all", "invert")

    def xinit(self) -> None:
        XSub.xinit(self)
        self.invert = bool(self.options.invert_matching)
        self._filter_changed()

    def _filter_changed(self) -> None:
        self.receives_all = self.own_subs is not None and self.own_subs.all and not self.invert

    def xoptions_changed(self, name: str) -> None:
        if name == "invert_matching":  # an options_t option: read where the filter is applied
            self.invert = bool(self.options.invert_matching)
            self._filter_changed()

    def xsend(self, msg: Message) -> int:
        """``sub_t::xsend``: ENOTSUP."""
        raise RuntimeError(f"{self.type} sockets do not send application messages")

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``sub_t::xsetsockopt``: ZMQ_SUBSCRIBE/ZMQ_UNSUBSCRIBE make a (un)subscription
        message and pass it to ``xsub_t::xsend``."""
        if name == "subscribe" or name == "unsubscribe":
            self._subscription(str(value), name == "subscribe")
            self._filter_changed()
            return True
        return False

    def xrecv(self) -> Message | None:
        fq: FairQueue = self.fq
        if self.receives_all:
            return _take(self, fq)
        subs: Subscriptions = self.own_subs  # type: ignore[assignment]  # xinit made it
        invert = self.invert
        while True:
            msg = fq.take()
            if msg is None:
                return None
            pipe: Pipe = fq.last
            self.last_pipe_index = pipe.index
            if (subs.all or subs.matches(msg[MSG_TOPIC])) == invert:  # xsub_t::match: matching ^ invert_matching
                self._discard(msg, pipe, RULE_FILTERED)
                continue
            return msg

    def xhas_in(self) -> bool:
        """``xsub_t::xhas_in`` with its filter: messages that match no subscription are
        thrown away until one matches (POLLIN is exact: a recv after it succeeds)."""
        fq: FairQueue = self.fq
        if self.receives_all:
            return fq.has_in()
        subs: Subscriptions = self.own_subs  # type: ignore[assignment]  # xinit made it
        invert = self.invert
        while fq.has_in():
            pipe: Pipe = fq.pipes[fq.current]
            msg = pipe.queue[0]
            if (subs.all or subs.matches(msg[MSG_TOPIC])) != invert:
                return True
            fq.take()  # that very message: fq_t reads the current pipe
            self.last_pipe_index = pipe.index
            self._discard(msg, pipe, RULE_FILTERED)
        return False


#: the class of each name of ``zsim.socket_types.TYPES``
CLASSES: dict[str, type[Socket]] = {
    "PAIR": Pair, "PUB": Pub, "SUB": Sub, "REQ": Req, "REP": Rep, "DEALER": Dealer,
    "ROUTER": Router, "PULL": Pull, "PUSH": Push, "XPUB": XPub, "XSUB": XSub,
}


def new_socket(ctx: Context, index: int, name: str, type_name: str, process: Any, options: SocketOptions, routing_id: str) -> Socket:
    """``socket_base_t::create``: the socket of ``type_name``."""
    return CLASSES[type_name](ctx, index, name, type_name, process, options, routing_id)
