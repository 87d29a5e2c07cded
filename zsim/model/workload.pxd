# C declarations for zsim/model/workload.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.appthread cimport AppThread
from zsim.model.context cimport Context
from zsim.model.kernel cimport Clock, FastTimer, Timer
from zsim.model.socket cimport Socket
from zsim.sampler cimport Sampler

cdef int OPEN, AGAIN, SENT, BLOCKED, CLOSED, READY, RECEIVED
cdef int MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID


@cython.final
cdef class Sender:
    cdef public AppThread thread
    cdef public Context world
    cdef public object env
    cdef public Clock clock
    cdef public str name
    cdef public Socket socket
    cdef public object process
    cdef public object count
    cdef public long limit
    cdef public object end_s
    cdef public object until_s
    cdef public Sampler interval
    cdef public Sampler size
    cdef public double start_s
    cdef public tuple topics
    cdef public long parts
    cdef public bint dontwait
    cdef public str on_again
    cdef public tuple to
    cdef public FastTimer timer
    cdef public bint schedule
    cdef public double due
    cdef public long attempts
    cdef public long sent
    cdef public long again
    cdef public long unroutable
    cdef public object refused_at
    cdef public bint done
    cdef public double blocked_s
    cdef public bint awaiting_reply
    cdef public double request_sent_at
    cdef public object rtt
    cdef public double send_cost
    cdef public double drop_cost
    cdef public double recv_cost
    cdef public double wait_spin_s
    cdef public Sampler jitter
    cdef public object ledger
    cdef public bint is_request
    cdef public long _topic_index
    cdef public long _to_index
    cdef public dict _shapes
    cdef public long origin
    cdef public object _fixed_tail
    cdef public object finished_at
    cdef public object after_call
    cdef public object on_send_done
    cdef public object on_reply_done
    cdef public str on_timeout
    cdef public long reply_timeouts

    @cython.locals(sock=Socket, status=int, cost=double, wait=double, queued_before=long, thread=AppThread, tail=tuple)
    cpdef _fire(self, event=*)
    cpdef _next(self, double cost)
    @cython.locals(ready=double, due=double)
    cpdef _next_scheduled(self, double cost)
    @cython.locals(due=double)
    cpdef _after_call(self)
    @cython.locals(wait=double)
    cpdef double _wait(self) except? -1.0


@cython.final
cdef class Receiver:
    # the fields of every received message first, together (a few cache lines per
    # workload: a run with 1,000 subscribers touches them all between two messages)
    cdef public bint done
    cdef public bint waiting
    cdef public bint busy
    cdef public bint reply
    cdef public FastTimer timer
    cdef public Clock clock
    cdef public Socket socket
    cdef public object count
    cdef public long limit
    cdef public object end_s
    cdef public double next_pause_at
    cdef public long received
    cdef public Sampler service
    cdef public Sampler jitter
    cdef public Sampler pause_jitter
    cdef public double recv_cost
    cdef public Socket forward_to
    cdef public AppThread thread
    cdef public object on_recv_done
    cdef public object on_forward_done
    # the rest
    cdef public Context world
    cdef public object env
    cdef public str name
    cdef public object process
    cdef public double start_s
    cdef public Sampler reply_size
    cdef public Sampler pause_every
    cdef public Sampler pause
    cdef public str on_timeout
    cdef public double send_cost
    cdef public double wait_spin_s
    cdef public object ledger
    cdef public double paused_s
    cdef public object pauses
    cdef public long pause_count
    cdef public object pending_reply

    @cython.locals(sock=Socket, thread=AppThread)
    cpdef _try(self, event=*)
    @cython.locals(thread=AppThread)
    cpdef _recv_done(self, int status)
    @cython.locals(thread=AppThread, service=double, busy=double)
    cpdef _got(self, tuple msg)


@cython.final
cdef class Proxy:
    cdef public AppThread thread
    cdef public object world
    cdef public object env
    cdef public Clock clock
    cdef public str name
    cdef public Socket frontend
    cdef public Socket backend
    cdef public object process
    cdef public object socket
    cdef public FastTimer timer
    cdef public bint done
    cdef public bint waiting
    cdef public long forwarded
    cdef public object failed
    cdef public object failed_at
    cdef public double cost
    cdef public object ledger
    cdef public tuple sockets
    cdef public Socket source
    cdef public Socket target
    cdef public long moved
    cdef public bint replies_next
    cdef public object on_ready
    cdef public object on_poll_done
    cdef public object on_forward_done
