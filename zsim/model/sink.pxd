# C declarations for zsim/model/sink.py (Cython pure-Python mode; see zsim/native.py).
# Not final: zsim.ledger.Ledger implements it (and tests record calls in a subclass).


cdef class LedgerSink:
    cpdef delivered(self, tuple msg, long socket_index, long pipe_index, double now)
    cpdef forwarded(self, tuple msg, long socket_index, long pipe_index, double now)
    cpdef dropped(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef discarded(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef lost(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef queued(self, tuple msg, long socket_index, long pipe_index, long where, double now)
