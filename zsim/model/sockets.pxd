# C declarations for zsim/model/sockets.py (Cython pure-Python mode; see zsim/native.py).
# A final class may not redeclare the methods it overrides: their locals are typed by
# annotations in the .py.
cimport cython

from zsim.model.context cimport Context
from zsim.model.peer cimport Peer, Subscriptions
from zsim.model.pipe cimport Pipe
from zsim.model.routing cimport Distribute, FairQueue, LoadBalance, RouteByIdentity
from zsim.model.socket cimport Socket

cdef int MSG_ENVELOPE, MSG_ID, MSG_TOPIC, MSG_WIRE, PROBE_ID, SUBSCRIBE_ID, UNSUBSCRIBE_ID, REQUEST_ID_WIRE
cdef int AGAIN, SENT, RULE_DISCONNECT, RULE_FILTERED, RULE_HWM, RULE_NO_DELIMITER, RULE_NO_PEERS, RULE_REQ_STATE

cdef _attach_in(FairQueue fq, Peer peer)
cdef _terminate_in(FairQueue fq, Peer peer)
cdef _probe(Socket sock, Peer peer)
cdef inline _take(Socket sock, FairQueue fq)


@cython.final
cdef class Pull(Socket):
    cdef public FairQueue fq


@cython.final
cdef class Push(Socket):
    cdef public LoadBalance lb


# not final: REQ is a DEALER (req_t : dealer_t)
cdef class Dealer(Socket):
    cdef public LoadBalance lb
    cdef public FairQueue fq
    cdef public bint probe_router

    @cython.locals(pipe=Pipe)
    cpdef int xsend(self, tuple msg) except? -1
    cpdef xrecv(self)


@cython.final
cdef class Req(Dealer):
    cdef public Pipe reply_pipe
    cdef public bint awaiting_reply
    cdef public bint strict
    cdef public bint correlate
    cdef public long long request_id


@cython.final
cdef class Router(Socket):
    cdef public FairQueue fq
    cdef public RouteByIdentity router
    cdef public dict anonymous
    cdef public bint handover
    cdef public bint probe_router
    cdef public object connect_routing_id


@cython.final
cdef class Rep(Socket):
    cdef public FairQueue fq
    cdef public Peer reply_peer
    cdef public object reply_envelope
    cdef public bint sending_reply


@cython.final
cdef class Pair(Socket):
    cdef public FairQueue fq
    cdef public Peer pair_peer


# not final: PUB is an XPUB (pub_t : xpub_t)
cdef class XPub(Socket):
    cdef public Distribute dist
    cdef public Subscriptions all_subs
    cdef public list pending_subscriptions
    cdef public list pending_sources
    cdef public bint verbose_subs
    cdef public bint verbose_unsubs
    cdef public bint manual
    cdef public dict manual_subs
    cdef public list pending_pipes
    cdef public Peer last_pipe

    cpdef _set_manual(self, bint manual)
    @cython.locals(requested=Subscriptions)
    cpdef _read_subscriptions(self, Pipe pipe, Peer peer)
    cpdef _user_message(self, tuple msg, Pipe pipe)
    cpdef _pass_up(self, str prefix, bint subscribe)


@cython.final
cdef class Pub(XPub):
    pass


# not final: SUB is an XSUB (sub_t : xsub_t)
cdef class XSub(Socket):
    cdef public FairQueue fq

    cpdef xrecv(self)
    cpdef _subscription(self, str prefix, bint subscribe)


@cython.final
cdef class Sub(XSub):
    cdef public bint receives_all
    cdef public bint invert
