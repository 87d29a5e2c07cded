# C declarations for zsim/model/cpu.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.kernel cimport Clock, FastTimer, Timer
from zsim.sampler cimport Sampler

cdef double DONE_S
cdef double INFINITY
cdef int MAX_EXACT_SETS

cdef class Thread


cdef class Core:
    cpdef burst(self, double cpu, FastTimer timer, double wait)
    cpdef burst_until(self, double cpu, FastTimer timer, double due, Sampler jitter, then)
    cpdef sleep_until(self, FastTimer timer, double due)
    cpdef abandon(self, owner)


@cython.final
cdef class OwnCore(Core):
    cdef public Clock clock


@cython.locals(fast=FastTimer)
cdef inline _arm(object timer, double delay)


@cython.final
cdef class Machine:
    cdef public object env
    cdef public str host
    cdef public Clock clock
    cdef public int cores
    cdef public frozenset all_cores
    cdef public object params
    cdef public double wakeup_s
    cdef public double io_wake_s
    cdef public double efficiency
    cdef public list threads
    cdef public list running
    cdef public double updated_at
    cdef public FastTimer timer
    cdef public bint armed
    cdef public bint any_restricted
    cdef public int max_runnable

    @cython.locals(other=Thread, using=int)
    cpdef bint contended(self, Thread thread)
    @cython.locals(now=double, elapsed=double, running=list, other=Thread)
    cpdef start(self, Thread thread, double cpu)
    @cython.locals(now=double, elapsed=double, thread=Thread)
    cpdef _advance(self)
    @cython.locals(thread=Thread, now=double, soonest=double, end=double, running=list)
    cpdef _reschedule(self)
    @cython.locals(now=double, elapsed=double, thread=Thread, done=list, still=list, running=list)
    cpdef _complete(self, event=*)
    @cython.locals(thread=Thread, count=int, cores=int, rate=double)
    cpdef _share(self)


@cython.final
cdef class Thread(Core):
    cdef public Machine machine
    cdef public str name
    cdef public str kind
    cdef public str process
    cdef public frozenset affinity
    cdef public bint restricted
    cdef public int index
    cdef public double remaining
    cdef public double work
    cdef public double rate
    cdef public double started_at
    cdef public double end_at
    cdef public object then_timer
    cdef public double then_wait
    cdef public object then_fn
    cdef public object queue
    cdef public bint busy
    cdef public double last_end
    cdef public Timer wake_timer
    cdef public object pending
    cdef public double cpu_s
    cdef public double waited_s
    cdef public long wake_waits
    cdef public long bursts
    cdef public bint in_run
    cdef public bint woke
    cdef public list asleep
    cdef public double spin_cpu_s
    cdef public bint spinning
    cdef public double wait_spin_s

    cpdef run(self, double cpu, timer, double wait=*)
    cpdef run_then(self, double cpu, fn)
    cpdef wait_until(self, timer, double until)
    @cython.locals(spin=double)
    cpdef wait(self, timer, double wait)
    cpdef submit(self, task)
    @cython.locals(machine=Machine, now=double)
    cpdef _enqueue(self, tuple item)
    cpdef _woken(self)
    @cython.locals(cpu=double, wait=double)
    cpdef _begin(self, tuple item)
    @cython.locals(wait=double)
    cpdef finished(self)
