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

from .context import Context
from .fates import AGAIN, RULE_FILTERED, RULE_HWM, RULE_NO_DELIMITER, RULE_NO_PEERS, RULE_REQ_STATE, SENT
from .peer import Peer, Subscriptions
from .pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID, UNSUBSCRIBE_ID, Message, Pipe
from .routing import Distribute, FairQueue, LoadBalance, RouteByIdentity
from .socket import Socket, SocketOptions


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
    """``dealer_t``: load-balanced sends, fair-queued reads."""

    __slots__ = ("lb", "fq")

    def xinit(self) -> None:
        self.lb = LoadBalance()
        self.fq = FairQueue()

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
    reply from that request's pipe only."""

    __slots__ = ("reply_pipe", "awaiting_reply")

    def xinit(self) -> None:
        Dealer.xinit(self)
        self.reply_pipe: Pipe | None = None
        self.awaiting_reply = False
        self.fsm = True

    def send_refused(self) -> bool:
        """``req_t::xsend``: a request while the reply to the last one is pending is EFSM."""
        return self.awaiting_reply

    def recv_refused(self) -> bool:
        """``req_t::xrecv``: a recv before a request was sent is EFSM."""
        return not self.awaiting_reply

    def xsend(self, msg: Message) -> int:
        if self.awaiting_reply:
            raise RuntimeError(f"REQ socket {self.name}: send while a reply is pending (EFSM)")
        envelope = msg[MSG_ENVELOPE]
        if BOTTOM not in envelope:
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
        if self.awaiting_reply:
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
    bound) and be free. Until then its pipe is anonymous (``_anonymous_pipes``): not
    in the routing table, not in the fair queue. The arrival is an ``activate_read`` on
    the pipe (the session or the context writes the routing id into it), which
    ``xread_activated`` answers by identifying the peer. A peer presenting a routing id
    another peer already has stays anonymous for good: 4.3.5 without ROUTER_HANDOVER
    "ignore[s] peers with duplicate ID", and having read that id, never looks at the
    pipe again (no read fails, so no ``activate_read`` comes): nothing it sends is read
    (test_router_handover.cpp:100)."""

    __slots__ = ("fq", "router", "anonymous")

    def xinit(self) -> None:
        self.fq = FairQueue()
        self.router = RouteByIdentity(self, bool(self.options.router_mandatory))
        # router_t::_anonymous_pipes, by the inbound pipe (what activate_read names): the
        # peer whose routing id has not arrived, or None once its id was read and refused
        self.anonymous: dict[Pipe, Peer | None] = {}

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
        or false (its id has not arrived, or is taken)."""
        key = peer.routing_key
        if key is None or not self.router.add(key, peer):
            return False
        _attach_in(self.fq, peer)
        return True

    def xattach(self, peer: Peer) -> None:
        if not self._identify(peer) and peer.in_pipe is not None:
            self.anonymous[peer.in_pipe] = peer if peer.routing_key is None else None

    def xterminated(self, peer: Peer) -> None:
        pipe = peer.in_pipe
        if pipe is not None and self.anonymous and pipe in self.anonymous:
            del self.anonymous[pipe]
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
    subscriptions, and the application receives each new one and each last cancel."""

    __slots__ = ("dist", "all_subs", "pending_subscriptions")

    def xinit(self) -> None:
        self.dist = Distribute(self, bool(self.options.xpub_nodrop))
        self.all_subs = Subscriptions()  # union over peers, to pass only new ones up
        self.pending_subscriptions: list[Message] = []  # for the application's recv

    def xsend(self, msg: Message) -> int:
        return self.dist.send(msg)

    def xoptions_changed(self, name: str) -> None:
        if name == "xpub_nodrop":
            self.dist.nodrop = bool(self.options.xpub_nodrop)

    def xrecv(self) -> Message | None:
        if self.pending_subscriptions:
            return self.pending_subscriptions.pop(0)
        return None

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
        # xpub_t::xpipe_terminated: unsubscribe what only this peer wanted.
        for prefix in list(peer.applied.prefixes):
            if self.all_subs.remove(prefix):
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
        subscribers keep the prefix.
        """
        while True:
            msg = pipe.read()
            if msg is None:
                return
            kind = msg[MSG_ID]
            prefix = msg[MSG_TOPIC]
            if kind == SUBSCRIBE_ID:
                if peer.applied.set_once(prefix):
                    if self.all_subs.add(prefix):
                        self._pass_up(prefix, True)
            elif kind == UNSUBSCRIBE_ID:
                if peer.applied.remove(prefix):
                    if self.all_subs.remove(prefix):
                        self._pass_up(prefix, False)  # last_value_removed
                else:
                    self._pass_up(prefix, False)  # not_found

    def _pass_up(self, prefix: str, subscribe: bool) -> None:
        """A (un)subscription for the application's recv."""
        self.pending_subscriptions.append((SUBSCRIBE_ID if subscribe else UNSUBSCRIBE_ID, self.clock.now, 0, 0, prefix, (), self.index,
                                           -1))
        if self.waiters and not self.wake_pending:
            self._schedule_wake()


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

    def _pass_up(self, prefix: str, subscribe: bool) -> None:
        """Nothing goes up: a PUB's application reads nothing."""


class XSub(Socket):
    """``xsub_t``: fair-queued reads; the subscriptions its application sends are cached
    and sent to every peer, and replayed into every new pipe."""

    __slots__ = ("fq",)  # own_subs is Socket's: a peer reads it (peer.RemoteEnd)

    def xinit(self) -> None:
        self.fq = FairQueue()
        self.own_subs = Subscriptions(tuple(self.options.subscribe))

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
        """``xsub_t::xsend`` of a (un)subscription: cache it and send it to every peer."""
        own = self.own_subs
        assert own is not None  # xinit made it
        self.process_commands(throttle=True)
        if subscribe:
            own.add(prefix)
        elif not own.remove(prefix):
            return SENT
        for peer in self.peers:
            if peer.attached and peer.out_pipe is not None:
                self.write_subscription(peer.out_pipe, prefix, subscribe)
        return SENT

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """``ZMQ_SUBSCRIBE``/``ZMQ_UNSUBSCRIBE`` (``sub_t::xsetsockopt``: a subscription
        message through ``xsub_t::xsend``): cached, sent to every peer."""
        if name not in ("subscribe", "unsubscribe"):
            return False
        self.send_subscription(str(value), name == "subscribe")
        return True

    def xhiccuped(self, pipe: Pipe) -> None:
        """``xsub_t::xhiccuped``: a reconnected pipe gets every subscription again."""
        own = self.own_subs
        if own:
            for prefix in list(own.prefixes):
                self.write_subscription(pipe, prefix, True)


class Sub(XSub):
    """``sub_t``: an XSUB that drops what matches none of its subscriptions on receive;
    subscribed to everything when made, it never filters (the same path as PULL)."""

    __slots__ = ("receives_all",)

    def xinit(self) -> None:
        XSub.xinit(self)
        self.receives_all = self.own_subs is not None and self.own_subs.all

    def xsetsockopt(self, name: str, value: Any) -> bool:
        handled = XSub.xsetsockopt(self, name, value)
        self.receives_all = self.own_subs is not None and self.own_subs.all  # the filter changed
        return handled

    def xrecv(self) -> Message | None:
        fq: FairQueue = self.fq
        if self.receives_all:
            return _take(self, fq)
        subs: Subscriptions = self.own_subs  # type: ignore[assignment]  # xinit made it
        while True:
            msg = fq.take()
            if msg is None:
                return None
            pipe: Pipe = fq.last
            self.last_pipe_index = pipe.index
            if not subs.all and not subs.matches(msg[MSG_TOPIC]):
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
        while fq.has_in():
            pipe: Pipe = fq.pipes[fq.current]
            msg = pipe.queue[0]
            if subs.all or subs.matches(msg[MSG_TOPIC]):
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
