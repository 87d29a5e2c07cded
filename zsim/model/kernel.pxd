# C declarations for zsim/model/kernel.py (Cython pure-Python mode; see zsim/native.py).
cimport cython


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
