# C declarations for zsim/model/appthread.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.context cimport Context
from zsim.model.cpu cimport Core
from zsim.model.kernel cimport Clock, FastTimer, Timer
from zsim.model.sink cimport LedgerSink
from zsim.model.socket cimport Socket
from zsim.sampler cimport Sampler

cdef int INBOUND_POLL_RATE, OPEN, AGAIN, SENT, UNROUTABLE, RULE_UNROUTABLE, RULE_SEND_FAILED, MSG_ID
cdef int BLOCKED, CLOSED, EFSM, RECEIVED, READY, TIMEOUT, IDLE, SENDING, FORWARDING, RECEIVING, POLLING


@cython.final
cdef class AppThread:
    cdef public Context ctx
    cdef public Clock clock
    cdef public Core cpu
    cdef public double wake_s
    cdef public LedgerSink ledger
    cdef public int status
    cdef public object got
    cdef public int kind
    cdef public object pending
    cdef public Socket target
    cdef public double since
    cdef public object done_fn
    cdef public tuple poll_sockets
    cdef public object poll_ready
    cdef public bint count_stop
    cdef public object on_retry
    cdef public Timer timeout_timer

    @cython.locals(ctx=Context, mid=long)
    cpdef tuple message(self, double t0, size, wire, topic, envelope, origin, long long cause=*)
    @cython.locals(ctx=Context, mid=long)
    cpdef int send_new(self, Socket sock, double t0, tuple shape, bint dontwait, done) except? -1
    @cython.locals(ctx=Context, status=int)
    cpdef int attempt(self, Socket sock, tuple msg) except? -1
    @cython.locals(ctx=Context, status=int)
    cpdef int send_control(self, Socket sock, tuple msg) except? -1
    @cython.locals(status=int)
    cpdef int send(self, Socket sock, tuple msg, bint dontwait, done) except? -1
    @cython.locals(status=int)
    cpdef int forward(self, Socket sock, tuple msg, done) except? -1
    cpdef _forward_failed(self, Socket sock, tuple msg, int status)
    cpdef failed(self, Socket sock, int status)
    cpdef try_recv(self, Socket sock)
    cpdef recv(self, Socket sock, bint dontwait, done)
    cpdef received(self, Socket sock, tuple msg, double now)
    cpdef took(self, Socket sock, tuple msg, double now)
    @cython.locals(sock=Socket)
    cpdef int poll(self, tuple sockets, ready, double timeout_s, done, bint check=*) except? -1
    @cython.locals(timeout=int)
    cpdef _block(self, Socket sock, int kind, done)
    @cython.locals(sock=Socket, each=Socket, ctx=Context, status=int, kind=int)
    cpdef _retry(self)
    @cython.locals(sock=Socket, kind=int)
    cpdef _timeout(self)
    cpdef _end(self, int status)
    cpdef bint blocked_call(self)
    cpdef double blocked_send_s(self)
    @cython.locals(sock=Socket, each=Socket, kind=int)
    cpdef cancel(self)
    cpdef burst(self, double cpu, FastTimer timer, double wait)
    cpdef burst_until(self, double cpu, FastTimer timer, double due, Sampler jitter, then)
    cpdef sleep_until(self, FastTimer timer, double due)
    cpdef abandon(self, owner)
