# C declarations for zsim/model/socket.py (Cython pure-Python mode; see zsim/native.py).
cimport cython

from zsim.model.context cimport Context
from zsim.model.kernel cimport Clock, FastTimer
from zsim.model.peer cimport Peer, Subscriptions
from zsim.model.pipe cimport Pipe
from zsim.sampler cimport Sampler
from zsim.model.routing cimport Distribute, FairQueue, LoadBalance, RouteByIdentity, SendOwner

cdef int INBOUND_POLL_RATE
cdef int MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID, UNSUBSCRIBE_ID
cdef int AGAIN, SENT, RULE_FILTERED, RULE_HWM, RULE_NO_DELIMITER, RULE_NO_PEERS, RULE_REQ_STATE


# not final: it overrides PipeEndpoint's commands (Cython refuses that in a final class)
cdef class Socket(SendOwner):
    # SendOwner's first: index, copies, dropped, ledger, clock
    # the fields every message reads first, together (see Receiver in workload.pxd)
    cdef public int state
    cdef public bint plain_recv
    cdef public bint reads_subscriptions
    cdef public bint wake_pending
    cdef public long ticks
    cdef public long received
    cdef public long last_pipe_index
    cdef public list mailbox
    cdef public FairQueue fq
    cdef public list waiters
    cdef public Distribute dist
    cdef public object xsend
    cdef public long sent
    cdef public double last_command_time
    cdef public double throttle_s
    cdef public Sampler wake_sampler
    cdef public object options
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
    cdef public LoadBalance lb
    cdef public RouteByIdentity router
    cdef public Peer pair_peer
    cdef public Subscriptions all_subs
    cdef public list pending_subscriptions
    cdef public Pipe reply_pipe
    cdef public bint awaiting_reply
    cdef public Peer reply_peer
    cdef public object reply_envelope
    cdef public long send_again
    cdef public long send_unroutable
    cdef public long recv_again
    cdef public long discarded
    cdef public double blocked_s
    cdef public long blocked_count
    cdef public long lost_on_close
    cdef object __weakref__

    @cython.locals(policy=object)
    cpdef _init_routing(self)
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
    cpdef _cmd_activate_read(self, Pipe pipe)
    @cython.locals(pipe=Pipe, read_count=long)
    cpdef _cmd_activate_write(self, tuple arg)
    @cython.locals(now=double, last=double, dist=Distribute)
    cpdef int send(self, tuple msg) except? -1
    cpdef int _send_lb(self, tuple msg) except? -1
    @cython.locals(pipe=Pipe, from_pipe=Pipe)
    cpdef int _send_request(self, tuple msg) except? -1
    @cython.locals(peer=Peer, pipe=Pipe, now=double)
    cpdef int _send_reply(self, tuple msg) except? -1
    @cython.locals(peer=Peer, pipe=Pipe)
    cpdef int _send_pair(self, tuple msg) except? -1
    cpdef recv(self)
    @cython.locals(fq=FairQueue)
    cpdef xrecv(self)
    @cython.locals(pipe=Pipe, fq=FairQueue, subs=Subscriptions, peer=Peer)
    cpdef _xrecv_typed(self)
