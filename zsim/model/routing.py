"""libzmq's four routing policies, as small classes over a socket's peers.

* ``LoadBalance`` (``lb_t``): round-robin over pipes with room; a full pipe is deactivated
  and the next one tried, so a message goes to the first pipe with room and is never
  dropped; no pipe with room means EAGAIN (block or ``Again``).
* ``FairQueue`` (``fq_t``): round-robin over pipes that have data, one complete message
  per turn; a pipe found empty is deactivated until ``activate_read``.
* ``Distribute`` (``dist_t`` behind ``xpub_t::xsend``): every matching, eligible pipe gets
  the message; a pipe whose write fails leaves the eligible set until ``write_activated``;
  the message is dropped for that pipe only. PUB never returns EAGAIN unless
  ``xpub_nodrop``.
* ``RouteByIdentity`` (``router_t::xsend``): the first envelope entry names the peer; an
  unknown peer or a full pipe drops the whole message, or with ``router_mandatory``
  returns EHOSTUNREACH / EAGAIN.

The array manipulations copy libzmq's ``array_t::swap`` choreography so that the order in
which peers are served (and so who gets what under pressure) is libzmq's order.

Send results: ``SENT``, ``AGAIN`` (would block), ``UNROUTABLE`` (EHOSTUNREACH).
"""

from __future__ import annotations

from typing import Any

from .fates import AGAIN, RULE_HWM, RULE_NOT_CONNECTED, RULE_NOT_SUBSCRIBED, RULE_UNROUTABLE, SENT, UNROUTABLE
from .peer import Peer
from .pipe import MSG_ENVELOPE, MSG_TOPIC, Message, Pipe, PipeEndpoint
from .sink import LedgerSink


class SendOwner(PipeEndpoint):
    """The socket a dropping policy sends for: it counts the copies it makes and drops,
    and records each drop in the ledger under the socket's index.

    A base class (``zsim.model.socket.Socket`` is one), not a protocol: compiled, a policy
    reads and counts these fields as C fields of its owner, not as Python attributes (a
    PUB's every message adds its copies)."""

    __slots__ = ("index", "copies", "dropped", "ledger", "clock")

    index: int
    copies: int
    dropped: int
    ledger: LedgerSink
    clock: Any  # zsim.model.kernel.Clock: the time, read on the hot path


class PipeArray:
    """``array_t`` under ``lb_t`` and ``fq_t``: the pipes, the first ``active`` of them
    active, served round-robin from ``current``; each pipe keeps its own position in the
    array (``array_item_t``, src/array.hpp), so finding it is O(1).

    A pipe sits in at most two arrays, its writer's ``lb_t`` and its reader's ``fq_t``
    (libzmq's two ``pipe_t`` objects of a pipepair are one ``Pipe`` here), so it keeps
    one position for each: ``out_slot`` and ``in_slot``; ``reads`` says which this array
    uses. A pipe that left its array has -1.
    """

    __slots__ = ("pipes", "active", "current", "peer_of", "reads")

    def __init__(self, reads: bool) -> None:
        self.pipes: list[Pipe] = []
        self.active = 0
        self.current = 0
        self.peer_of: dict[Pipe, Peer] = {}
        self.reads = reads

    def contains(self, pipe: Pipe) -> bool:
        """The pipe is in this array (a pipe keeps its slot from an array a restarted
        socket dropped, so the slot alone does not say)."""
        index = pipe.in_slot if self.reads else pipe.out_slot
        return 0 <= index < len(self.pipes) and self.pipes[index] is pipe

    def _place(self, pipe: Pipe, index: int) -> None:
        self.pipes[index] = pipe
        if self.reads:
            pipe.in_slot = index
        else:
            pipe.out_slot = index

    def swap(self, i: int, j: int) -> None:
        """``array_t::swap`` (with one pipe, every swap is of a pipe with itself: nothing)."""
        if i == j:
            return
        pipes = self.pipes
        a, b = pipes[i], pipes[j]
        pipes[i] = b
        pipes[j] = a
        if self.reads:
            b.in_slot = i
            a.in_slot = j
        else:
            b.out_slot = i
            a.out_slot = j

    def attach(self, pipe: Pipe, peer: Peer) -> None:
        """``lb_t::attach``/``fq_t::attach``: push_back, then swap into the active set."""
        self.pipes.append(pipe)
        self._place(pipe, len(self.pipes) - 1)
        self.peer_of[pipe] = peer
        self.activated(pipe)

    def activated(self, pipe: Pipe) -> None:
        """``lb_t::activated``/``fq_t::activated``: the pipe rejoins the active set."""
        if not self.contains(pipe):
            return
        index = pipe.in_slot if self.reads else pipe.out_slot
        if index < self.active:
            return
        self.swap(index, self.active)
        self.active += 1

    def terminated(self, pipe: Pipe) -> None:
        """``lb_t::pipe_terminated``/``fq_t::pipe_terminated``."""
        if not self.contains(pipe):
            return
        index = pipe.in_slot if self.reads else pipe.out_slot
        if index < self.active:
            self.active -= 1
            self.swap(index, self.active)
            if self.current == self.active:
                self.current = 0
        # array_t::erase: the last element takes the pipe's place
        pipes = self.pipes
        index = pipe.in_slot if self.reads else pipe.out_slot
        last = pipes.pop()
        if last is not pipe:
            self._place(last, index)
        if self.reads:
            pipe.in_slot = -1
        else:
            pipe.out_slot = -1
        del self.peer_of[pipe]


class LoadBalance(PipeArray):
    """``lb_t``: PUSH, DEALER, REQ."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(False)

    def send(self, msg: Message) -> tuple[int, Pipe | None]:
        pipes = self.pipes
        while self.active > 0:
            pipe = pipes[self.current]
            if pipe.check_write():
                pipe.write(msg)
                self.current += 1
                if self.current >= self.active:
                    self.current = 0
                return SENT, pipe
            self.active -= 1
            if self.current < self.active:
                self.swap(self.current, self.active)
            else:
                self.current = 0
        return AGAIN, None

    def has_out(self) -> bool:
        """``lb_t::has_out``: checks pipes from ``current`` on, deactivating full ones."""
        pipes = self.pipes
        while self.active > 0:
            if pipes[self.current].check_write():
                return True
            self.active -= 1
            if self.current < self.active:
                self.swap(self.current, self.active)
            else:
                self.current = 0
        return False


class FairQueue(PipeArray):
    """``fq_t``: PULL, SUB, XSUB, DEALER, ROUTER, REP, PAIR, XPUB (subscriptions)."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        super().__init__(True)
        self.last: Pipe  # the pipe take() read its message from: set by the take() that returns one

    def recv(self) -> tuple[Message | None, Pipe | None]:
        msg = self.take()
        return msg, (self.last if msg is not None else None)

    def take(self) -> Message | None:
        """``recv()`` without the pair: the message, or None; ``last`` is its pipe."""
        pipes = self.pipes
        while self.active > 0:
            pipe = pipes[self.current]
            msg = pipe.read()
            if msg is not None:
                self.current = (self.current + 1) % self.active
                self.last = pipe
                return msg
            self.active -= 1
            self.swap(self.current, self.active)
            if self.current == self.active:
                self.current = 0
        return None

    def has_in(self) -> bool:
        pipes = self.pipes
        while self.active > 0:
            if pipes[self.current].queue:
                return True
            pipe = pipes[self.current]
            if not pipe.reader_asleep:
                pipe.fall_asleep()
            self.active -= 1
            self.swap(self.current, self.active)
            if self.current == self.active:
                self.current = 0
        return False


class Distribute:
    """``dist_t`` + ``xpub_t::xsend`` matching: PUB, XPUB.

    Peers are kept in the order they were added (the order copies are made). A pipe is
    eligible while its writer side is active (libzmq's eligible set: false after a failed
    write until ``write_activated``), ``applied`` (the subscriptions this side has
    received from it) and ``remote_subs`` (what the subscriber itself wants: used only to
    tell the user *why* a copy was lost).
    """

    __slots__ = ("owner", "clock", "peers", "nodrop", "_members", "invert", "counts_joiners")

    def __init__(self, owner: SendOwner, nodrop: bool = False, invert: bool = False) -> None:
        self.owner = owner
        self.clock = owner.clock
        self.peers: list[Peer] = []  # in attach order: the order copies are made
        self.nodrop = nodrop
        self._members: set[int] = set()  # id(peer): membership in O(1) for large fan-outs
        #: ZMQ_INVERT_MATCHING: the eligible pipes that do *not* match get the message
        #: (``xpub_t::xsend`` -> ``dist_t::reverse_match``)
        self.invert = invert
        #: a subscriber whose subscription has not reached this side yet costs a copy,
        #: dropped (the slow joiner); off where the application decides what each pipe is
        #: subscribed to (``xpub_manual``): there, what the subscriber wants says nothing
        self.counts_joiners = True

    def add(self, peer: Peer) -> None:
        if id(peer) not in self._members:
            self._members.add(id(peer))
            self.peers.append(peer)

    def remove(self, peer: Peer) -> None:
        if id(peer) in self._members:
            self._members.discard(id(peer))
            self.peers.remove(peer)

    def check_hwm(self, topic: str) -> bool:
        """``dist_t::check_hwm`` over the matching pipes (``xpub_nodrop``; inverted with
        ``invert``)."""
        invert = self.invert
        for peer in self.peers:
            pipe = peer.out_pipe
            if peer.attached and pipe is not None and pipe.out_active and (peer.applied.matches(topic) != invert):
                if not pipe.check_hwm():
                    return False
        return True

    def has_out(self) -> bool:
        """``dist_t::has_out``: always, even with ``xpub_nodrop`` [measured]."""
        return True

    def send(self, msg: Message) -> int:
        """``xpub_t::xsend`` + ``dist_t::send_to_matching``: a copy to every matching pipe,
        dropped per full pipe; SENT (or AGAIN with ``xpub_nodrop`` when one is full).

        A subscriber whose subscription has not reached this side yet (or whose pipe is
        not attached yet) also costs a copy, dropped as ``not_subscribed_yet`` /
        ``not_connected``: the slow joiner, which libzmq drops without a trace.
        """
        topic = msg[MSG_TOPIC]
        if self.nodrop and not self.check_hwm(topic):
            return AGAIN
        if self.invert:
            return self._send_inverted(msg, topic)
        owner = self.owner
        copies = dropped = 0  # counted locally, added to the socket once
        for peer in self.peers:
            applied = peer.applied
            if peer.attached and (applied.all or applied.matches(topic)):
                pipe = peer.out_pipe
                copies += 1
                # pipe_t::check_write, inlined (the hot path of every PUB)
                hwm = pipe.hwm  # type: ignore[union-attr]
                if pipe.out_active and pipe.state == 0 and (hwm <= 0 or pipe.written - pipe.peers_read < hwm):  # type: ignore[union-attr]
                    pipe.write(msg)  # type: ignore[union-attr]
                elif pipe.check_write():  # type: ignore[union-attr]  # pragma: no cover - same test
                    pipe.write(msg)  # type: ignore[union-attr]
                else:
                    dropped += 1
                    pipe.dropped += 1  # type: ignore[union-attr]
                    owner.ledger.dropped(msg, owner.index, pipe.index, RULE_HWM, self.clock.now)  # type: ignore[union-attr]
            elif peer.alive and peer.remote_subs is not None and self.counts_joiners and peer.remote_subs.matches(topic):
                # The subscriber wants it, but this side cannot know yet: the slow joiner.
                copies += 1
                dropped += 1
                pipe_index = peer.out_pipe.index if peer.out_pipe is not None else -1
                rule = RULE_NOT_SUBSCRIBED if peer.attached else RULE_NOT_CONNECTED
                owner.ledger.dropped(msg, owner.index, pipe_index, rule, self.clock.now)
        owner.copies += copies
        if dropped:
            owner.dropped += dropped
        return SENT

    def _send_inverted(self, msg: Message, topic: str) -> int:
        """``send`` with ZMQ_INVERT_MATCHING: a copy to every attached pipe whose
        subscriptions do not match the topic (a pipe subscribed to nothing gets everything),
        dropped per full pipe. A subscriber not attached yet that would take the message
        (it inverts too, as ZeroMQ asks of both sides: it takes what matches none of its
        subscriptions) costs a copy dropped as ``not_connected``."""
        owner = self.owner
        copies = dropped = 0
        for peer in self.peers:
            pipe = peer.out_pipe
            if peer.attached:
                applied = peer.applied
                if applied.all or applied.matches(topic) or pipe is None:
                    continue
                copies += 1
                if pipe.check_write():
                    pipe.write(msg)
                else:
                    dropped += 1
                    pipe.dropped += 1
                    owner.ledger.dropped(msg, owner.index, pipe.index, RULE_HWM, self.clock.now)
            elif peer.alive and peer.remote_subs is not None and self.counts_joiners and not peer.remote_subs.matches(topic):
                copies += 1
                dropped += 1
                owner.ledger.dropped(msg, owner.index, pipe.index if pipe is not None else -1, RULE_NOT_CONNECTED, self.clock.now)
        owner.copies += copies
        if dropped:
            owner.dropped += dropped
        return SENT


class RouteByIdentity:
    """``router_t``: ROUTER."""

    __slots__ = ("owner", "clock", "by_key", "mandatory")

    def __init__(self, owner: SendOwner, mandatory: bool = False) -> None:
        self.owner = owner
        self.clock = owner.clock
        self.by_key: dict[object, Peer] = {}
        self.mandatory = mandatory

    def add(self, key: object, peer: Peer) -> bool:
        """``router_t::identify_peer``'s ``add_out_pipe``: file ``peer`` under ``key``;
        false if another peer has that routing id already (without ROUTER_HANDOVER, 4.3.5
        "ignore[s] peers with duplicate ID": the newcomer is not filed)."""
        if key in self.by_key:
            return False
        self.by_key[key] = peer
        return True

    def remove(self, key: object, peer: Peer) -> None:
        if self.by_key.get(key) is peer:
            del self.by_key[key]

    def has_out(self) -> bool:
        """``router_t::xhas_out``: always, unless ``router_mandatory`` and no pipe has room."""
        if not self.mandatory:
            return True
        return any(p.out_pipe is not None and p.out_pipe.check_hwm() for p in self.by_key.values())

    def send(self, msg: Message) -> int:
        """``router_t::xsend``: the first envelope entry names the peer; it is stripped.

        An unknown peer or a full pipe drops the message (rules ``unroutable``, ``hwm``),
        or with ``router_mandatory`` returns UNROUTABLE (EHOSTUNREACH) / AGAIN.
        """
        owner = self.owner
        envelope = msg[MSG_ENVELOPE]
        peer = self.by_key.get(envelope[0]) if envelope else None
        now = self.clock.now
        if peer is None or peer.out_pipe is None:
            if self.mandatory:
                return UNROUTABLE
            owner.copies += 1
            owner.dropped += 1
            owner.ledger.dropped(msg, owner.index, -1, RULE_UNROUTABLE, now)
            return SENT
        pipe = peer.out_pipe
        if not pipe.check_write():
            if self.mandatory:
                return AGAIN if not pipe.check_hwm() else UNROUTABLE
            owner.copies += 1
            owner.dropped += 1
            pipe.dropped += 1
            owner.ledger.dropped(msg, owner.index, pipe.index, RULE_HWM, now)
            return SENT
        owner.copies += 1
        pipe.write(msg[:MSG_ENVELOPE] + (envelope[1:],) + msg[MSG_ENVELOPE + 1 :])
        return SENT

