# C declarations for zsim/model/routing.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.kernel cimport Clock
from zsim.model.peer cimport Peer, Subscriptions
from zsim.model.pipe cimport Pipe, PipeEndpoint
from zsim.model.sink cimport LedgerSink

# constants imported from the .py modules, as C integers here
cdef int MSG_ENVELOPE, MSG_TOPIC
cdef int AGAIN, SENT, UNROUTABLE, RULE_HWM, RULE_NOT_CONNECTED, RULE_NOT_SUBSCRIBED, RULE_UNROUTABLE


cdef class SendOwner(PipeEndpoint):
    # what a dropping policy reads and counts of its socket (zsim.model.socket.Socket)
    cdef public long index
    cdef public long copies
    cdef public long dropped
    cdef public LedgerSink ledger
    cdef public Clock clock


cdef class PipeArray:
    cdef public list pipes
    cdef public long active
    cdef public long current
    cdef public dict peer_of
    cdef public bint reads

    @cython.locals(index=long)
    cdef bint contains(self, Pipe pipe)
    cdef void _place(self, Pipe pipe, long index)
    @cython.locals(pipes=list, a=Pipe, b=Pipe)
    cdef void swap(self, long i, long j)
    cpdef attach(self, Pipe pipe, Peer peer)
    @cython.locals(index=long)
    cpdef activated(self, Pipe pipe)
    @cython.locals(index=long, pipes=list, last=Pipe)
    cpdef terminated(self, Pipe pipe)


@cython.final
cdef class LoadBalance(PipeArray):
    @cython.locals(pipe=Pipe)
    cpdef tuple send(self, tuple msg)
    cpdef bint has_out(self)


@cython.final
cdef class FairQueue(PipeArray):
    cdef public Pipe last

    cpdef tuple recv(self)
    @cython.locals(pipe=Pipe)
    cpdef take(self)
    @cython.locals(pipe=Pipe)
    cpdef bint has_in(self)


@cython.final
cdef class Distribute:
    cdef public SendOwner owner
    cdef public Clock clock
    cdef public list peers
    cdef public bint nodrop
    cdef public set _members
    cdef public bint invert
    cdef public bint counts_joiners

    cpdef add(self, Peer peer)
    cpdef remove(self, Peer peer)
    @cython.locals(peer=Peer, pipe=Pipe, invert=bint)
    cpdef bint check_hwm(self, str topic)
    cpdef bint has_out(self)
    @cython.locals(owner=SendOwner, peer=Peer, pipe=Pipe, applied=Subscriptions, copies=long, dropped=long, hwm=long)
    cpdef int send(self, tuple msg) except? -1
    @cython.locals(owner=SendOwner, peer=Peer, pipe=Pipe, applied=Subscriptions, copies=long, dropped=long)
    cpdef int _send_inverted(self, tuple msg, str topic) except? -1


@cython.final
cdef class RouteByIdentity:
    cdef public SendOwner owner
    cdef public Clock clock
    cdef public dict by_key
    cdef public bint mandatory

    cpdef bint add(self, object key, Peer peer)
    cpdef remove(self, object key, Peer peer)
    @cython.locals(owner=SendOwner, peer=Peer, pipe=Pipe, now=double)
    cpdef int send(self, tuple msg) except? -1
