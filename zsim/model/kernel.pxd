# C declarations for zsim/model/kernel.py (Cython pure-Python mode; see zsim/native.py).
cimport cython


cdef bint _COMPILED


# the heap (heapq's own algorithm: its indices are in range by construction; kernel.py turns
# off bounds checks and negative indices for the module)
@cython.locals(ta=double, tb=double, pa=long, pb=long)
cdef inline bint _before(tuple a, tuple b) except -1
@cython.locals(item=tuple, parent=tuple, parent_pos=Py_ssize_t)
cdef _sift_down(list heap, Py_ssize_t start, Py_ssize_t pos)
@cython.locals(end=Py_ssize_t, start=Py_ssize_t, item=tuple, child=Py_ssize_t, right=Py_ssize_t)
cdef _sift_up(list heap, Py_ssize_t pos)
cpdef _push(list heap, tuple entry)
@cython.locals(last=tuple, first=tuple)
cpdef tuple _pop(list heap)


@cython.final
cdef class Clock:
    cdef public double now


@cython.final
cdef class _TimerEvent:
    cdef public object env
    cdef public object callbacks
    cdef public object _value
    cdef public bint _ok


@cython.final
cdef class Timer:
    cdef public object env
    cdef public object fn
    cdef public bint armed
    cdef public _TimerEvent _event
    cdef public bint _in_heap
    cdef public list _callbacks
    cdef public list _queue
    cdef public object _eid
    cdef public Clock clock

    cpdef arm(self, double delay, int priority=*)
    cpdef arm_at(self, double when, int priority=*)
    cpdef cancel(self)


@cython.final
cdef class FastTimer:
    cdef public object env
    cdef public _TimerEvent _event
    cdef public list _callbacks
    cdef public list _queue
    cdef public object _eid
    cdef public Clock clock

    cpdef arm(self, double delay, int priority=*)
    cpdef arm_at(self, double when, int priority=*)
    cpdef cancel(self)


@cython.locals(timer_event=_TimerEvent, callbacks=list, clock=Clock)
cpdef long _run_events(env, list queue, double horizon, long left) except? -1
