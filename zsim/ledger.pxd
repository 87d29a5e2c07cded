# C declarations for zsim/ledger.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.sink cimport LedgerSink

cdef long _FIELDS, _BLOCK


# not final: it redeclares the LedgerSink methods it implements (a final class may not)
cdef class Ledger(LedgerSink):
    cdef list _blocks
    cdef long _full
    cdef object _current
    cdef double[::1] _block
    cdef long _used

    @cython.locals(i=long, block="double[::1]")
    cdef void _write(self, double mid, double state, double socket_index, double pipe_index, double rule, double now,
                     double t0, double size, double origin, double cause) except *
    cpdef _new_block(self)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef delivered(self, tuple msg, long socket_index, long pipe_index, double now)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef forwarded(self, tuple msg, long socket_index, long pipe_index, double now)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef dropped(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef discarded(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef lost(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    @cython.locals(mid="long long", size="long long", origin="long long", cause="long long")
    cpdef queued(self, tuple msg, long socket_index, long pipe_index, long where, double now)
