# C declarations for zsim/ledger.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

cdef long _FIELDS, _BLOCK


@cython.final
cdef class Ledger:
    cdef public long n_sent
    cdef list _blocks
    cdef long _full
    cdef object _current
    cdef double[::1] _block
    cdef long _used

    @cython.locals(i=long, block="double[::1]")
    cdef void _write(self, double mid, double state, double socket_index, double pipe_index, double rule, double now,
                     double t0, double size, double origin) except *
    cpdef _new_block(self)
    cpdef sent(self, tuple msg, long socket_index)
    cpdef delivered(self, tuple msg, long socket_index, long pipe_index, double now)
    cpdef forwarded(self, tuple msg, long socket_index, long pipe_index, double now)
    cpdef dropped(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef discarded(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef lost(self, tuple msg, long socket_index, long pipe_index, long rule, double now)
    cpdef queued(self, tuple msg, long socket_index, long pipe_index, long where, double now)
