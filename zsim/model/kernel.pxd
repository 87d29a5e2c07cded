# C declarations for zsim/model/kernel.py (Cython pure-Python mode; see zsim/native.py).
cimport cython


cdef bint _COMPILED


cdef long long _PRIORITY_STEP, _LAST_KEY
cdef long MIN_PRIORITY, MAX_PRIORITY


@cython.final
cdef class EventQueue:
    cdef public double[::1] times
    cdef public long long[::1] keys
    cdef public long long[::1] slots
    cdef public list events
    cdef public long long[::1] free
    cdef public Py_ssize_t n_free
    cdef public Py_ssize_t size
    cdef public Py_ssize_t capacity
    cdef public long long next_eid

    @cython.locals(size=Py_ssize_t, times="double[::1]", keys="long long[::1]", slots="long long[::1]", free="long long[::1]")
    cpdef _grow(self, Py_ssize_t capacity)
    cpdef double first_time(self)
    cpdef long long stop_key(self)
    @cython.locals(size=Py_ssize_t, key="long long", slot="long long")
    cpdef push(self, double when, long priority, object event)
    @cython.locals(parent=Py_ssize_t, parent_time=double)
    cdef inline void _rise(self, Py_ssize_t pos, double when, long long key, long long slot)
    @cython.locals(size=Py_ssize_t, key="long long", slot="long long", pos=Py_ssize_t, child=Py_ssize_t,
                   right=Py_ssize_t, when=double, right_time=double, child_time=double,
                   times="double[::1]", keys="long long[::1]", slots="long long[::1]")
    cpdef object pop(self)


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
    cdef public EventQueue _queue
    cdef public Clock clock

    cpdef arm(self, double delay, int priority=*)
    @cython.locals(event=_TimerEvent, now=double)
    cpdef arm_at(self, double when, int priority=*)
    cpdef cancel(self)


@cython.final
cdef class FastTimer:
    cdef public object env
    cdef public _TimerEvent _event
    cdef public list _callbacks
    cdef public EventQueue _queue
    cdef public Clock clock

    cpdef arm(self, double delay, int priority=*)
    @cython.locals(event=_TimerEvent, now=double)
    cpdef arm_at(self, double when, int priority=*)
    cpdef cancel(self)


@cython.locals(clock=Clock, now=double)
cpdef long _run_events(env, EventQueue queue, double horizon, long long stop_key, long left) except? -1
@cython.locals(timer_event=_TimerEvent, callbacks=list)
cdef inline _process(object event)
