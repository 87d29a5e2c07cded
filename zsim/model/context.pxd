# C declarations for zsim/model/context.py (Cython pure-Python mode; see zsim/native.py).
# World (zsim/model/world.py) is a Python subclass: it keeps its own fields in a __dict__.

cimport cython

from zsim.model.kernel cimport Clock


@cython.final
cdef class IoThread:
    cdef public str name
    cdef public long load
    cdef public double handshakes_until
    cdef public object cpu


cdef class Context:
    cdef public object env
    cdef public Clock clock
    cdef public object params
    cdef public object ledger
    cdef public object stream
    cdef public list pipes
    cdef public list pipe_info
    cdef public list links
    cdef public dict listeners
    cdef public dict pending_inproc
    cdef public dict waiting_connects
    cdef public long next_message_id
    cdef public long n_sent
    cdef public bint trace_depth
    cdef public bint waking
    cdef public double wake_debt
    cdef public dict wake_groups
    cdef public object until_s
    cdef public object network
    cdef public list app_threads
