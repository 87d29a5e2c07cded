# C declarations for zsim/sampler.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

cdef long BLOCK, FIRST_BLOCK


@cython.final
cdef class Sampler:
    # what next() reads first: the typed view (a memoryview slice, 208 bytes) after the
    # counters, so that its data pointer shares their cache line
    cdef object _constant
    cdef double _constant_float
    cdef long _index
    cdef long _length
    cdef bint _integer
    cdef double[::1] _values
    # the rest
    cdef object _dist
    cdef object _rng
    cdef long _size

    cpdef _draw(self, rng, long size)
    cpdef _refill(self)
    @cython.locals(index=long)
    cpdef double next_float(self) except? -1.0
    @cython.locals(index=long, value=double)
    cpdef object next(self)
