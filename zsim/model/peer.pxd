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
    cdef public object socket
    cdef public object remote
    cdef public object conn
    cdef public Pipe out_pipe
    cdef public Pipe in_pipe
    cdef public bint attached
    cdef public Subscriptions applied
    cdef public Subscriptions remote_subs
    cdef public object routing_key
    cdef public bint alive
    cdef public bint in_fq
    cdef public bint listed
