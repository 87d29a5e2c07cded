# C declarations for zsim/sampler.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

cdef long BLOCK, FIRST_BLOCK


@cython.final
cdef class Sampler:
    cdef object _dist
    cdef object _rng
    cdef bint _integer
    cdef object _block
    cdef double[::1] _values
    cdef long _index
    cdef long _length
    cdef long _drawn
    cdef object _replay
    cdef object _constant
    cdef long _size
    cdef bint _shared

    cpdef _draw(self, rng, long size)
    cpdef _hold(self, block, long keep)
    cpdef _refill(self)
    @cython.locals(index=long, value=double)
    cpdef object next(self)
