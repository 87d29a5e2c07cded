# C declarations for zsim/model/peer.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.pipe cimport Pipe


@cython.final
cdef class Subscriptions:
    cdef public dict prefixes
    cdef public bint all

    cpdef bint add(self, str prefix)
    cpdef bint remove(self, str prefix)
    cpdef bint set_once(self, str prefix)
    cpdef bint matches(self, str topic)


@cython.final
cdef class Peer:
    # what every PUB's send reads of each peer first, together (see Receiver in workload.pxd)
    cdef public bint attached
    cdef public bint alive
    cdef public bint in_fq
    cdef public bint listed
    cdef public Subscriptions applied
    cdef public Pipe out_pipe
    cdef public Subscriptions remote_subs
    cdef public Pipe in_pipe
    # the rest
    cdef public object socket
    cdef public object remote
    cdef public object conn
    cdef public object routing_key
