"""A ZeroMQ socket: routing policies over per-peer pipes, a command mailbox, an app API.

The application side (workloads, proxies) calls ``send(msg)`` and ``recv()``, which never
block: they return ``SENT``/``AGAIN``/``UNROUTABLE`` or a message/None, after processing
commands exactly where libzmq does (``socket_base_t::send``: at most once per
``command_throttle_s``; ``recv``: every ``INBOUND_POLL_RATE`` calls and whenever nothing is
readable). Blocking is the caller's choice: ``wait(callback)`` registers it until a
command arrives, which is when libzmq's blocked thread wakes and retries.

Commands from the other end of a pipe (``activate_read``, ``activate_write``, ``bind``,
``pipe_term``) go to the mailbox; they take effect when the socket processes commands, so
a busy PUB keeps dropping to a pipe its reader has already emptied, as libzmq does.

This is ``socket_base_t``: what every type shares. Each type is a subclass in ``sockets``
(``push_t``, ``dealer_t``, ... in libzmq) that owns its routing policies and implements the
``x`` methods ``socket_base_t`` calls (``xsend``, ``xrecv``, ``xhas_in``, ``xhas_out``,
``xattach``, ``xterminated``, ...); the base class's are those of a type that has no such
side (it cannot send, receive, or has no pipes of that direction). The routing classes
are in ``routing``; transport details (sessions, engines) stay in ``transport``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..constants import INBOUND_POLL_RATE
from ..socket_types import TYPES, SocketType
from .context import Context
from .params import params_of
from .peer import Peer, Subscriptions
from .pipe import SUBSCRIBE_ID, UNSUBSCRIBE_ID, Message, Pipe
from .routing import SendOwner

NEW = 0
OPEN = 1
CLOSED = 2


class SocketOptions(Protocol):
    """The ``zmq_setsockopt`` options the model reads (``zsim.spec.SocketOptions`` is one:
    the model does not import the scenario format). Milliseconds as libzmq has them."""

    @property
    def sndhwm(self) -> int: ...
    @property
    def rcvhwm(self) -> int: ...
    @property
    def linger(self) -> int: ...
    @property
    def sndtimeo(self) -> int: ...
    @property
    def rcvtimeo(self) -> int: ...
    @property
    def subscribe(self) -> tuple[str, ...]: ...
    @property
    def immediate(self) -> bool: ...
    @property
    def conflate(self) -> bool: ...
    @property
    def router_mandatory(self) -> bool: ...
    @property
    def xpub_nodrop(self) -> bool: ...
    @property
    def sndbuf(self) -> int: ...
    @property
    def rcvbuf(self) -> int: ...
    @property
    def reconnect_ivl(self) -> int: ...
    @property
    def reconnect_ivl_max(self) -> int: ...
    @property
    def xpub_verbose(self) -> bool: ...
    @property
    def xpub_verboser(self) -> bool: ...
    @property
    def xpub_manual(self) -> bool: ...
    @property
    def invert_matching(self) -> bool: ...
    @property
    def router_handover(self) -> bool: ...
    @property
    def probe_router(self) -> bool: ...
    @property
    def connect_routing_id(self) -> str | None: ...
    @property
    def req_relaxed(self) -> bool: ...
    @property
    def req_correlate(self) -> bool: ...


class Socket(SendOwner):
    """One simulated ZeroMQ socket, ``socket_base_t`` (its ``index``, ``copies``,
    ``dropped``, ``ledger`` and ``clock`` are ``SendOwner``'s fields). Made by
    ``sockets.new_socket``, as the subclass of its type."""

    __slots__ = (
        "ctx", "env", "name", "type", "traits", "process", "options", "routing_id", "state", "peers",
        "mailbox", "last_command_time", "ticks", "waiters", "wake_pending", "own_subs",
        "sent", "send_again", "send_unroutable", "received", "recv_again", "discarded",
        "blocked_s", "blocked_count", "last_pipe_index", "fsm", "sndtimeo", "rcvtimeo",
        "throttle_s", "wake_sampler", "on_activate_read", "on_activate_write", "wake_timer",
        "__weakref__",
    )

    def __init__(
        self,
        ctx: Context,
        index: int,
        name: str,
        type_name: str,
        process: Any,
        options: SocketOptions,
        routing_id: str,
    ) -> None:
        self.ctx = ctx
        self.env = ctx.env
        self.clock = ctx.clock  # the time as a C double: see kernel.Clock
        self.index = index
        self.name = name
        self.type = type_name
        self.traits: SocketType = TYPES[type_name]
        self.process = process
        self.options = options
        # the options a blocked call reads, as C fields (``set_options`` keeps them current)
        self.sndtimeo: int = options.sndtimeo
        self.rcvtimeo: int = options.rcvtimeo
        #: the type has a state machine that may refuse a call (REQ, REP): ``send_refused``
        self.fsm = False
        self.routing_id = routing_id
        self.state = NEW
        self.peers: list[Peer] = []
        self.mailbox: list[tuple[Callable[[Any], None], Any]] = []
        # the commands every message may post, as bound methods made once: process_commands
        # knows them by identity and calls them directly
        self.on_activate_read = self.xread_activated
        self.on_activate_write = self._cmd_activate_write
        self.last_command_time = float("-inf")
        self.ticks = 0
        # the application's blocked calls on this socket (a DEALER may have a sender and a
        # receiver workload blocked at the same time, as in a poll loop)
        self.waiters: list[Callable[[], None]] = []
        self.wake_pending = False
        # a wake-up that does not run at once: one firing per arm, as env.call_later, by
        # a reused timer instead of an event and a closure per wake-up
        self.wake_timer = ctx.env.fast_timer(self._wake_fired)
        # SUB: options.subscribe; XSUB: the subscriptions its application sends at once
        # (xsub_t caches them and xattach_pipe replays them into every pipe); None for
        # the other types (a peer reads it: peer.RemoteEnd).
        self.own_subs: Subscriptions | None = None
        self.xinit()
        # statistics
        self.sent = 0
        self.send_again = 0
        self.send_unroutable = 0
        self.received = 0
        self.recv_again = 0
        self.dropped = 0
        self.discarded = 0
        self.copies = 0
        self.blocked_s = 0.0
        self.blocked_count = 0
        self.last_pipe_index = -1
        # the costs of the machine its process runs on (its host's profile)
        params = params_of(process, ctx.params)
        self.throttle_s = params.command_throttle_s
        self.ledger = ctx.ledger
        wake = params.app_wake
        self.wake_sampler = wake.sampler(None if wake.is_constant else ctx.stream(f"wake.{name}")) if wake is not None else None

    def xinit(self) -> None:
        """The type's routing policies and state, new (at creation and ``reset``)."""

    def reset(self) -> None:
        """A fresh socket of the same name and options (a restarted process); stats stay."""
        self.state = NEW
        for peer in self.peers:
            peer.listed = False
        self.peers = []
        self.mailbox = []
        self.last_command_time = float("-inf")
        self.ticks = 0
        self.waiters = []
        self.wake_pending = False
        self.xinit()

    # ------------------------------------------------------------------------------
    # commands

    def post(self, fn: Callable[[Any], None], arg: Any) -> None:
        """A command for this socket's application thread."""
        if self.state == CLOSED:
            # The reaper owns a closed socket and processes its commands at once.
            fn(arg)
            return
        self.mailbox.append((fn, arg))
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def post_activate_read(self, pipe: Pipe) -> None:
        self.post(self.on_activate_read, pipe)

    def post_activate_write(self, pipe: Pipe, read_count: int) -> None:
        self.post(self.on_activate_write, (pipe, read_count))

    def process_commands(self, throttle: bool = False) -> None:
        if throttle:
            now = self.clock.now
            last = self.last_command_time
            if last <= now and now - last <= self.throttle_s:
                return
            self.last_command_time = now
        while self.mailbox:
            box = self.mailbox
            self.mailbox = []
            for fn, arg in box:
                if fn is self.on_activate_read:
                    self.xread_activated(arg)
                elif fn is self.on_activate_write:
                    self._cmd_activate_write(arg)
                else:
                    fn(arg)

    def _schedule_wake(self) -> None:
        """A command reached a blocked application thread: it wakes after a thread
        wake-up latency (futex/eventfd plus scheduling; profile ``api.wake_s``).

        With no latency the thread runs at once (it is the same instant), unless another
        wake-up is already running on the stack: then it is queued for this instant, so
        chains of wake-ups never recurse.
        """
        self.wake_pending = True
        delay = self.wake_sampler.next_float() if self.wake_sampler is not None else 0.0
        if delay > 0:
            self.wake_timer.arm(delay)
            return
        ctx = self.ctx
        if ctx.waking:
            self.wake_timer.arm(0.0)  # after what is due now (env.call_soon)
            return
        ctx.waking = True
        try:
            self._wake()
        finally:
            ctx.waking = False

    def _wake_fired(self, event: Any) -> None:
        self._wake()  # every firing: each was a wake-up scheduled

    def _wake(self) -> None:
        self.wake_pending = False
        waiters = self.waiters
        if not waiters:
            return
        self.process_commands()
        if len(waiters) == 1:
            waiters[0]()
            return
        for callback in list(waiters):
            if callback in self.waiters:
                callback()

    def wait(self, callback: Callable[[], None]) -> None:
        """Block an application call until a command arrives, then call ``callback``."""
        if callback not in self.waiters:
            self.waiters.append(callback)
        if self.mailbox and not self.wake_pending:
            self._schedule_wake()

    def stop_waiting(self, callback: Callable[[], None] | None = None) -> None:
        """``callback`` is no longer blocked (every waiter when None: the socket closed)."""
        if callback is None:
            self.waiters.clear()
        elif callback in self.waiters:
            self.waiters.remove(callback)

    def _cmd_activate_write(self, arg: tuple[Pipe, int]) -> None:
        pipe, read_count = arg
        if pipe.apply_activate_write(read_count):
            self.xwrite_activated(pipe)

    def post_attach(self, peer: Peer) -> None:
        """``bind`` command: a connection's pipes reach this socket (attached when it
        processes commands)."""
        self.post(self.attach, peer)

    def post_detach(self, peer: Peer) -> None:
        """``pipe_term`` reached this socket: forget the peer when it processes commands."""
        self.post(self.detach, peer)

    def post_peer_closing(self, peer: Peer) -> None:
        """``pipe_term`` from the peer's side while its messages are still queued here."""
        self.post(self.peer_closing, peer)

    def peer_closing(self, peer: Peer) -> None:
        """``pipe_t::process_pipe_term`` at the surviving end: stop routing to the peer,
        keep reading what it already sent (the peer is detached once its inbound pipe is
        drained, or now if it has none)."""
        self.xpeer_closing(peer)
        if peer.in_pipe is None or not peer.in_fq:
            self.detach(peer)

    # ------------------------------------------------------------------------------
    # peers and pipes

    def add_pending_peer(self, peer: Peer) -> None:
        """A connection to this socket is being made: known for loss accounting only."""
        if not peer.listed:
            peer.listed = True
            self.peers.append(peer)
        self.xpending(peer)

    def forget_pending_peer(self, peer: Peer) -> None:
        """The connection ``add_pending_peer`` announced came with another peer."""
        if peer.listed:
            peer.listed = False
            self.peers.remove(peer)
        self.xforget(peer)

    def attach(self, peer: Peer) -> None:
        """``socket_base_t::attach_pipe`` + the type's ``xattach_pipe``."""
        if self.state == CLOSED or not peer.alive:
            return
        if not peer.listed:
            peer.listed = True
            self.peers.append(peer)
        peer.attached = True
        self.xattach(peer)

    def detach(self, peer: Peer) -> None:
        """The connection is gone: forget its pipes (``pipe_terminated``)."""
        peer.alive = False
        peer.attached = False
        if peer.listed:
            peer.listed = False
            self.peers.remove(peer)
        self.xterminated(peer)
        if self.waiters and not self.wake_pending:
            self._schedule_wake()

    def write_subscription(self, pipe: Pipe, prefix: str, subscribe: bool) -> None:
        """A (un)subscription into ``pipe``; one that does not fit is silently lost
        (``xsub_t::send_subscription``)."""
        if pipe.check_write():
            wire = len(prefix.encode()) + 1 + 2
            pipe.write((SUBSCRIBE_ID if subscribe else UNSUBSCRIBE_ID, self.clock.now, 0, wire, prefix, (), self.index, -1))

    def _discard(self, msg: Message, pipe: Pipe, rule: int) -> None:
        """A message read from ``pipe`` that the socket throws away by ``rule`` (a control
        message, such as a probe, is no copy: nothing is counted)."""
        if msg[0] < 0:  # MSG_ID
            return
        self.discarded += 1
        self.ledger.discarded(msg, self.index, pipe.index, rule, self.clock.now)

    # ------------------------------------------------------------------------------
    # sending

    def send(self, msg: Message) -> int:
        """One non-blocking ``zmq_send`` attempt: SENT, AGAIN or UNROUTABLE.

        ``socket_base_t::send`` first calls ``process_commands(0, true)``: commands are
        looked at only if more than ``max_command_delay`` passed since the last look.
        """
        now = self.clock.now
        last = self.last_command_time
        if not (last <= now and now - last <= self.throttle_s):
            self.last_command_time = now
            if self.mailbox:
                self.process_commands()
        return self.xsend(msg)

    def has_out(self) -> bool:
        """ZMQ_POLLOUT."""
        return self.xhas_out()

    def options_changed(self, name: str) -> None:
        """``zmq_setsockopt`` changed option ``name`` (``options`` is the new set): what the
        socket keeps of it as fields follows (the type's own: ``xoptions_changed``)."""
        options = self.options
        self.sndtimeo = options.sndtimeo
        self.rcvtimeo = options.rcvtimeo
        if name and name != "subscribe" and name != "unsubscribe":
            # socket_base_t::setsockopt offers the option to the type first (xsetsockopt:
            # XPUB_VERBOSE, ROUTER_HANDOVER, REQ_RELAXED, PROBE_ROUTER, ...), whose fields
            # follow it; (un)subscriptions are World.subscribe's
            self.xsetsockopt(name, getattr(options, name))
        self.xoptions_changed(name)

    def xoptions_changed(self, name: str) -> None:
        """The type's fields read from an option that changed (ROUTER_MANDATORY, ...)."""

    def send_refused(self) -> bool:
        """The type's state machine refuses a send now (EFSM; only where ``fsm``)."""
        return False

    def recv_refused(self) -> bool:
        """The type's state machine refuses a recv now (EFSM; only where ``fsm``)."""
        return False

    # ------------------------------------------------------------------------------
    # receiving

    def recv(self) -> Message | None:
        """One non-blocking ``zmq_recv`` attempt (``socket_base_t::recv``)."""
        self.ticks += 1
        if self.ticks >= INBOUND_POLL_RATE:
            self.process_commands()
            self.ticks = 0
        msg = self.xrecv()
        if msg is not None:
            return msg
        if self.mailbox:
            self.process_commands()
        self.ticks = 0
        return self.xrecv()

    def has_in(self) -> bool:
        """ZMQ_POLLIN (``zmq_poll`` processes commands first)."""
        self.process_commands()
        return self.xhas_in()

    # ------------------------------------------------------------------------------
    # the type's own side (socket_base_t's virtual x methods): a type without it

    def xsend(self, msg: Message) -> int:
        """The type's send (``socket_base_t::xsend``): SENT, AGAIN or UNROUTABLE."""
        raise RuntimeError(f"{self.type} sockets do not send application messages")

    def xrecv(self) -> Message | None:
        """The type's recv (``socket_base_t::xrecv``), without the command processing of
        ``recv()``: workloads call it directly when they have just processed commands."""
        return None

    def xhas_in(self) -> bool:
        return False

    def xhas_out(self) -> bool:
        return False

    def xattach(self, peer: Peer) -> None:
        """``xattach_pipe``: the peer's pipes join the type's policies."""

    def xterminated(self, peer: Peer) -> None:
        """``xpipe_terminated``: the peer's pipes leave the type's policies."""

    def xpeer_closing(self, peer: Peer) -> None:
        """The peer's side closed: stop routing to it (its inbound pipe is read on)."""

    def xread_activated(self, pipe: Pipe) -> None:
        """``xread_activated``: an inbound pipe has messages again."""

    def xwrite_activated(self, pipe: Pipe) -> None:
        """``xwrite_activated``: an outbound pipe has room again."""

    def xpending(self, peer: Peer) -> None:
        """A connection is on its way (``add_pending_peer``)."""

    def xforget(self, peer: Peer) -> None:
        """A pending peer is replaced (``forget_pending_peer``)."""

    def xhiccuped(self, pipe: Pipe) -> None:
        """``xhiccuped``: a reconnect emptied the outbound ``pipe`` of a connect."""

    def xsetsockopt(self, name: str, value: Any) -> bool:
        """The type's own ``zmq_setsockopt`` (``socket_base_t::xsetsockopt``): True when the
        type took option ``name`` (its fields follow ``value`` now); False when it is not
        one of the type's options (libzmq's EINVAL from ``xsetsockopt``, after which
        ``socket_base_t::setsockopt`` tries ``options_t``, which knows neither
        ``subscribe`` nor ``unsubscribe``)."""
        return False

    def take_connect_routing_id(self) -> str | None:
        """The routing id the peer of this connect gets, consumed by it
        (``routing_socket_base_t::extract_connect_routing_id``); None: the peer's own."""
        return None

    def held_messages(self) -> list[tuple[Message, int]]:
        """Messages the socket read from its pipes and holds for its application, each with
        the index of the pipe it came from (an XPUB's user messages: ``xpub_t::_pending_data``)."""
        return []

    def drop_held(self, rule: int) -> None:
        """The socket is gone (closed, crashed): what it held is lost by ``rule``."""

    # ------------------------------------------------------------------------------
    # lifecycle

    @property
    def is_open(self) -> bool:
        return self.state == OPEN

    def __repr__(self) -> str:
        return f"<Socket {self.name} {self.type}>"
