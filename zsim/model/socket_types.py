"""The one table of socket types: routing policies, mute action, subscriptions, peers.

Every place in the model that behaves differently per socket type reads a field of
``TRAITS[type]``; there are no ``if type == "PUSH"`` chains elsewhere. Sources:
``src/pub.cpp``/``xpub.cpp`` (dist), ``push.cpp``/``dealer.cpp``/``req.cpp`` (lb),
``router.cpp``/``rep.cpp`` (identity), ``pair.cpp``, ``pull.cpp``/``sub.cpp``/``xsub.cpp`` (fq).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..constants import VALID_PEERS

# send policies
DIST = "dist"  # fan out to matching pipes, drop per full pipe
LB = "lb"  # round-robin to a pipe with room, else EAGAIN
ROUTE = "route"  # by identity (first envelope entry), drop or EAGAIN/EHOSTUNREACH
REPLY = "reply"  # REP: back along the pipe the request came from (router_t)
PAIR = "pair"  # the single pipe, else EAGAIN
NONE = None

# what happens at a full pipe ("mute" state in the zmq_socket man page)
MUTE_DROP = "drop"
MUTE_BLOCK = "block"


@dataclass(frozen=True)
class SocketTraits:
    send: str | None
    receives: bool  # reads pipes with fq (or the single PAIR pipe)
    mute: str | None
    reads_subscriptions: bool = False  # PUB/XPUB: in-pipes carry subscriptions
    app_sees_subscriptions: bool = False  # XPUB: recv() returns (new) subscriptions
    sends_subscriptions: bool = False  # SUB/XSUB
    filters_on_recv: bool = False  # SUB (options.filter), not XSUB
    prepends_identity: bool = False  # ROUTER: recv gets the peer's routing id
    request: bool = False  # REQ lockstep
    reply: bool = False  # REP lockstep
    no_delay_on_term: bool = False  # pub_t::xattach_pipe: pipe->set_nodelay()
    valid_peers: frozenset[str] = frozenset()


TRAITS: dict[str, SocketTraits] = {
    "PUB": SocketTraits(DIST, False, MUTE_DROP, reads_subscriptions=True, no_delay_on_term=True, valid_peers=VALID_PEERS["PUB"]),
    "XPUB": SocketTraits(DIST, False, MUTE_DROP, reads_subscriptions=True, app_sees_subscriptions=True, valid_peers=VALID_PEERS["XPUB"]),
    "SUB": SocketTraits(NONE, True, None, sends_subscriptions=True, filters_on_recv=True, valid_peers=VALID_PEERS["SUB"]),
    "XSUB": SocketTraits(NONE, True, None, sends_subscriptions=True, valid_peers=VALID_PEERS["XSUB"]),
    "PUSH": SocketTraits(LB, False, MUTE_BLOCK, valid_peers=VALID_PEERS["PUSH"]),
    "PULL": SocketTraits(NONE, True, None, valid_peers=VALID_PEERS["PULL"]),
    "DEALER": SocketTraits(LB, True, MUTE_BLOCK, valid_peers=VALID_PEERS["DEALER"]),
    "REQ": SocketTraits(LB, True, MUTE_BLOCK, request=True, valid_peers=VALID_PEERS["REQ"]),
    "ROUTER": SocketTraits(ROUTE, True, MUTE_DROP, prepends_identity=True, valid_peers=VALID_PEERS["ROUTER"]),
    "REP": SocketTraits(REPLY, True, MUTE_DROP, reply=True, valid_peers=VALID_PEERS["REP"]),
    "PAIR": SocketTraits(PAIR, True, MUTE_BLOCK, valid_peers=VALID_PEERS["PAIR"]),
}
