# C declarations for zsim/model/pipe.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.kernel cimport Clock


cpdef Py_ssize_t level_bucket(Py_ssize_t depth)


cdef class WakeGroup:
    cdef public long awake
    cdef public double asleep_since


cdef class Pipe


cdef class PipeEndpoint:
    cpdef post_activate_write(self, Pipe pipe, long read_count)
    cpdef post_activate_read(self, Pipe pipe)


cdef class Pipe:
    # the fields of every write and read first, together (see Receiver in workload.pxd)
    cdef public bint out_active
    cdef public bint reader_asleep
    cdef public bint conflate
    cdef public int state
    cdef public bint delimited
    cdef public bint wake_counted
    cdef public long hwm
    cdef public long written
    cdef public long peers_read
    cdef public long read_count
    cdef public long lwm
    cdef public long max_depth
    cdef public double area
    cdef public double last_change
    cdef public double[::1] levels
    cdef public long bytes
    cdef public long max_bytes
    cdef public double area_bytes
    cdef public object queue
    cdef public Clock clock
    cdef public object trace
    cdef public PipeEndpoint reader
    cdef public PipeEndpoint writer
    cdef public long index
    cdef public WakeGroup wake_group
    cdef public long out_slot
    cdef public long in_slot
    # the rest
    cdef public object env
    cdef public str name
    cdef public long dropped
    cdef public object owner
    cdef public object on_displace
    cdef public double asleep_since
    cdef public object wake_cost
    cdef public object debt

    cpdef bint check_hwm(self)
    cpdef bint check_write(self)
    @cython.locals(now=double, depth=Py_ssize_t, group=WakeGroup, asleep=double, dt=double, size=long)
    cpdef write(self, msg)
    cpdef bint apply_activate_write(self, long read_count)
    @cython.locals(now=double, depth=Py_ssize_t, count=long, lwm=long, dt=double)
    cpdef read(self)
    @cython.locals(bucket=Py_ssize_t)
    cdef _dwell(self, Py_ssize_t depth, double dt)
    cpdef _grow(self, Py_ssize_t bucket)
    cpdef fall_asleep(self)
    cpdef reader_idle(self)
