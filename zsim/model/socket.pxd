# C declarations for zsim/model/socket.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.context cimport Context
from zsim.model.kernel cimport Clock, FastTimer
from zsim.model.peer cimport Peer, Subscriptions
from zsim.model.pipe cimport Pipe
from zsim.sampler cimport Sampler
from zsim.model.routing cimport SendOwner

cdef int INBOUND_POLL_RATE
cdef int SUBSCRIBE_ID, UNSUBSCRIBE_ID


# not final: each socket type is a subclass (zsim/model/sockets.pxd)
cdef class Socket(SendOwner):
    # SendOwner's first: index, copies, dropped, ledger, clock
    # the fields every message reads first, together (see Receiver in workload.pxd)
    cdef public int state
    cdef public bint wake_pending
    cdef public long ticks
    cdef public long received
    cdef public long last_pipe_index
    cdef public list mailbox
    cdef public list waiters
    cdef public long sent
    cdef public double last_command_time
    cdef public double throttle_s
    cdef public Sampler wake_sampler
    cdef public object options
    cdef public int sndtimeo
    cdef public int rcvtimeo
    cdef public bint fsm
    cdef public object on_activate_read
    cdef public object on_activate_write
    # the rest
    cdef public Context ctx
    cdef public FastTimer wake_timer
    cdef public object env
    cdef public str name
    cdef public str type
    cdef public object traits
    cdef public object process
    cdef public object routing_id
    cdef public list peers
    cdef public Subscriptions own_subs
    cdef public long send_again
    cdef public long send_unroutable
    cdef public long recv_again
    cdef public long discarded
    cdef public double blocked_s
    cdef public long blocked_count
    cdef object __weakref__

    cpdef post(self, fn, arg)
    cpdef post_activate_read(self, Pipe pipe)
    cpdef post_activate_write(self, Pipe pipe, long read_count)
    @cython.locals(now=double, last=double, box=list, arg=object)
    cpdef process_commands(self, bint throttle=*)
    @cython.locals(delay=double, ctx=Context)
    cpdef _schedule_wake(self)
    cpdef _wake_fired(self, event)
    cpdef _wake(self)
    cpdef wait(self, callback)
    cpdef stop_waiting(self, callback=*)
    cpdef _discard(self, tuple msg, Pipe pipe, int rule)
    @cython.locals(pipe=Pipe, read_count=long)
    cpdef _cmd_activate_write(self, tuple arg)
    cpdef attach(self, Peer peer)
    cpdef detach(self, Peer peer)
    cpdef write_subscription(self, Pipe pipe, str prefix, bint subscribe)
    @cython.locals(now=double, last=double)
    cpdef int send(self, tuple msg) except? -1
    cpdef recv(self)
    cpdef options_changed(self, str name)
    cpdef xoptions_changed(self, str name)
    cpdef bint send_refused(self) except? -1
    cpdef bint recv_refused(self) except? -1
    # the type's own side: overridden by each type in zsim/model/sockets.py
    cpdef xinit(self)
    cpdef int xsend(self, tuple msg) except? -1
    cpdef xrecv(self)
    cpdef bint xhas_in(self) except? -1
    cpdef bint xhas_out(self) except? -1
    cpdef xattach(self, Peer peer)
    cpdef xterminated(self, Peer peer)
    cpdef xpeer_closing(self, Peer peer)
    cpdef xread_activated(self, Pipe pipe)
    cpdef xwrite_activated(self, Pipe pipe)
    cpdef xpending(self, Peer peer)
    cpdef xforget(self, Peer peer)
    cpdef xhiccuped(self, Pipe pipe)
    cpdef bint xsetsockopt(self, str name, value) except? -1
    cpdef take_connect_routing_id(self)
    cpdef list held_messages(self)
    cpdef drop_held(self, int rule)
