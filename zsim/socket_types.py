"""The one table of socket types: everything zsim knows per ZeroMQ socket type.

The scenario checks (``zsim.spec``), the model (``zsim.model``), the scripted-socket API
(``zsim.app``), the warnings (``zsim.checks``) and the real harness (``validation``) all
read ``TYPES[name]``; no other module lists socket types or branches on a type name.

Sources (libzmq 4.3.5): ``src/pub.cpp``/``xpub.cpp`` (dist), ``push.cpp``/``dealer.cpp``/
``req.cpp`` (lb), ``router.cpp``/``rep.cpp`` (identity), ``pair.cpp``, ``pull.cpp``/``sub.cpp``/
``xsub.cpp`` (fq); valid peers: ``mechanism_t::check_socket_type`` (checked in the ZMTP
handshake of tcp and ipc only: inproc connects any two types); conflate: the types whose
``xattach_pipe`` honours ``options.conflate`` (``socket_base_t::attach_pipe`` callers in
``session_base.cpp``/``socket_base.cpp``: DEALER, PULL, PUSH, PUB, SUB).
"""

from __future__ import annotations

from dataclasses import dataclass

# send policies (``zsim.model.routing``)
DIST = "dist"  # fan out to matching pipes, drop per full pipe (dist_t)
LB = "lb"  # round-robin to a pipe with room, else EAGAIN (lb_t)
ROUTE = "route"  # by identity (first envelope entry), drop or EAGAIN/EHOSTUNREACH (router_t)
REPLY = "reply"  # REP: back along the pipe the request came from
PAIR = "pair"  # the single pipe, else EAGAIN
NONE = None

# what happens at a full pipe ("mute" state in the zmq_socket man page)
MUTE_DROP = "drop"
MUTE_BLOCK = "block"


@dataclass(frozen=True)
class SocketType:
    name: str
    send: str | None  # routing policy of zmq_send, None: the type cannot send
    receives: bool  # reads pipes with fq (or the single PAIR pipe)
    mute: str | None
    valid_peers: frozenset[str]
    reads_subscriptions: bool = False  # PUB/XPUB: in-pipes carry subscriptions
    app_sees_subscriptions: bool = False  # XPUB: recv() returns (new) subscriptions
    sends_subscriptions: bool = False  # SUB/XSUB
    filters_on_recv: bool = False  # SUB (options.filter), not XSUB
    prepends_identity: bool = False  # ROUTER: recv gets the peer's routing id
    request: bool = False  # REQ lockstep
    reply: bool = False  # REP lockstep
    single_peer: bool = False  # PAIR: a second peer is refused (pair_t::xattach_pipe)
    conflate: bool = False  # options.conflate takes effect
    has_routing_id: bool = False  # sends its routing id in the handshake (REQ, REP, DEALER, ROUTER)
    probes: bool = False  # ZMQ_PROBE_ROUTER: an empty message to each new peer (router_t, dealer_t::xattach_pipe)
    sends_upstream: bool = False  # XSUB: its application sends (un)subscriptions and messages upstream (xsub_t::xsend)

    @property
    def scheduled_send(self) -> bool:
        """A ``[[send]]`` workload may drive it (REP replies from its ``[[recv]]``)."""
        return self.send is not None and self.send != REPLY

    @property
    def app_send(self) -> bool:
        """``zmq_send`` is valid on it (a scripted ``[[app]]`` may send; an XSUB sends
        upstream)."""
        return self.send is not None or self.sends_upstream

    @property
    def inverts_matching(self) -> bool:
        """ZMQ_INVERT_MATCHING takes effect: the publisher's matching (``xpub_t::xsend``)
        or a filtering subscriber's (``xsub_t::match``); an XSUB does not filter."""
        return self.send == DIST or self.filters_on_recv

    @property
    def app_recv(self) -> bool:
        """``zmq_recv`` is valid on it (XPUB receives subscriptions)."""
        return self.receives or self.app_sees_subscriptions

    @property
    def forward_target(self) -> bool:
        """A ``[[recv]]`` stage may ``forward_to`` it: it sends without an envelope or a
        request/reply state of its own (not ROUTER, REQ or REP)."""
        return self.scheduled_send and self.send != ROUTE and not self.request


    @property
    def replies_to_sender(self) -> bool:
        """A ``[[recv]]`` may answer each request to its sender (``reply = true``): REP
        (lockstep), ROUTER (the routing id it received) and DEALER (the envelope it got)."""
        return self.receives and not self.request and self.send in (REPLY, ROUTE, LB)

    @property
    def addresses_peers(self) -> bool:
        """Sends are addressed by the peer's routing id (``[[send]] to = [...]``)."""
        return self.send == ROUTE


def _t(name: str, send: str | None, receives: bool, mute: str | None, peers: tuple[str, ...], **traits: bool) -> SocketType:
    return SocketType(name, send, receives, mute, frozenset(peers), **traits)


#: In pyzmq's constant order (``zmq.PAIR`` = 0 ... ``zmq.XSUB`` = 10).
TYPES: dict[str, SocketType] = {
    t.name: t
    for t in (
        _t("PAIR", PAIR, True, MUTE_BLOCK, ("PAIR",), single_peer=True),
        _t("PUB", DIST, False, MUTE_DROP, ("SUB", "XSUB"), reads_subscriptions=True, conflate=True),
        _t("SUB", NONE, True, None, ("PUB", "XPUB"), sends_subscriptions=True, filters_on_recv=True, conflate=True),
        _t("REQ", LB, True, MUTE_BLOCK, ("REP", "ROUTER"), request=True, has_routing_id=True, probes=True),
        _t("REP", REPLY, True, MUTE_DROP, ("REQ", "DEALER"), reply=True, has_routing_id=True),
        _t("DEALER", LB, True, MUTE_BLOCK, ("REP", "DEALER", "ROUTER"), conflate=True, has_routing_id=True, probes=True),
        _t("ROUTER", ROUTE, True, MUTE_DROP, ("REQ", "DEALER", "ROUTER"), prepends_identity=True, has_routing_id=True, probes=True),
        _t("PULL", NONE, True, None, ("PUSH",), conflate=True),
        _t("PUSH", LB, False, MUTE_BLOCK, ("PULL",), conflate=True),
        _t("XPUB", DIST, False, MUTE_DROP, ("SUB", "XSUB"), reads_subscriptions=True, app_sees_subscriptions=True),
        _t("XSUB", NONE, True, None, ("PUB", "XPUB"), sends_subscriptions=True, sends_upstream=True),
    )
}

SOCKET_TYPES: tuple[str, ...] = tuple(TYPES)


def names(predicate: str) -> list[str]:
    """The type names with a true ``predicate`` (a field or property), sorted: for messages."""
    return sorted(name for name, t in TYPES.items() if getattr(t, predicate))


def names_by_send(policy: str) -> list[str]:
    """The type names that send with ``policy``, sorted: for messages."""
    return sorted(name for name, t in TYPES.items() if t.send == policy)
