"""Sockets a user scripts in SimPy: application logic the scenario format cannot express.

A ``[[send]]`` or ``[[recv]]`` covers the loops of the zguide's first chapters; a
least-recently-used broker, a retry loop with its own timeout or a heartbeat is code.
``App`` hands that code the scenario's sockets as ``AppSocket`` objects whose calls return
SimPy events, as pyzmq's return values::

    def broker(app):
        front, back = app.socket("frontend"), app.socket("backend")

        def loop(env):
            while True:
                request = yield front.recv()          # blocks like zmq_recv
                yield back.send(like=request)        # a new message, same size/topic/envelope

        app.process(loop(app.env))

Each call follows ``socket_base_t::send``/``recv`` on the modelled socket: it processes
commands as libzmq does, blocks while the socket would return EAGAIN (``SNDTIMEO`` /
``RCVTIMEO`` bound the wait), and raises ``zsim.Again`` with ``dontwait=True`` or when the
timeout expires, ``zsim.HostUnreachable`` for a ``router_mandatory`` ROUTER and an unknown
peer, ``zsim.StateError`` for a REQ/REP call out of turn (EFSM) and ``zsim.SocketClosed``
when the socket is closed (its process exits or crashes) while the call waits. A call
takes the profile's ``send_call_s`` / ``recv_call_s`` of simulated time: the event fires
when the call returns. Every message goes through the ledger as a ``[[send]]``'s does: a
copy the app receives is delivered there, a message it sends is a new message (its latency
counts from that send).

The environment is the run's SimPy environment: ``app.env.timeout``, ``env.any_of``,
``env.process`` and the user's own events work beside the model (``docs/api.md``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import threading
import traceback
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from . import trust
from .constants import frame_wire_bytes
from .errors import Again, HostUnreachable, InvalidArgument, NoSuchEndpoint, NotSupported, ScenarioError, SocketClosed, StateError
from .model.appthread import AppThread, Workload
from .model.fates import AGAIN, BLOCKED, CLOSED, EFSM, READY, RECEIVED, SENT, UNROUTABLE
from .model.pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_SIZE, MSG_T0, MSG_TOPIC, PROBE_ID, SUBSCRIBE_ID, UNSUBSCRIBE_ID, Message
from .model.socket import NEW, OPEN, Socket
from .model.sockets import Rep
from .model.workload import envelope_wire_bytes, message_wire_bytes
from .socket_types import names

if TYPE_CHECKING:  # pragma: no cover
    from .build import Model
    from .trust import AppCode

#: types whose application may send: a REP sends its replies (the scenario format does
#: that with [[recv]] reply = true, hence not a ``scheduled_send`` type) / may receive
_APP_CAN_SEND = frozenset(names("app_send"))
_APP_CAN_RECV = frozenset(names("app_recv"))


#: what a received control message is (``zsim.model.pipe``'s negative ids)
_KINDS = {SUBSCRIBE_ID: "subscribe", UNSUBSCRIBE_ID: "unsubscribe", PROBE_ID: "probe"}


class Received:
    """A message an app received: what a pyzmq ``recv_multipart`` would let it see.

    ``envelope``: the routing ids a ROUTER prepended (first = the peer it came from), to
    pass back in ``send(envelope=...)``; ``delimiter``: the message carries an empty
    delimiter frame under them (a REQ's request, a reply to one), which a REP or REQ it
    is passed on to needs; a REP's application sees neither (``rep_t::xrecv`` keeps them
    for the reply); ``kind`` is ``"message"``, or ``"subscribe"`` / ``"unsubscribe"`` for
    what an XPUB hands its application, or ``"probe"`` for the empty message a peer with
    ``probe_router`` sent when it connected.
    """

    __slots__ = ("id", "topic", "size", "envelope", "delimiter", "sent_at", "kind")

    def __init__(self, msg: Message) -> None:
        self.id: int = msg[MSG_ID]
        self.topic: str = msg[MSG_TOPIC]
        self.size: int = msg[MSG_SIZE]
        envelope: tuple[Any, ...] = msg[MSG_ENVELOPE]
        self.delimiter: bool = BOTTOM in envelope
        self.envelope: tuple[Any, ...] = tuple(e for e in envelope if e != BOTTOM) if self.delimiter else envelope
        self.sent_at: float = msg[MSG_T0]
        self.kind = _KINDS.get(self.id, "message")

    def __repr__(self) -> str:
        return f"<Received {self.kind} {self.id} topic={self.topic!r} size={self.size} envelope={self.envelope}>"


class AppSocket(Workload):
    """One scenario socket, driven by SimPy code (``App.socket``): one of its process's
    workloads, stopped when the socket closes; never a sender with attempts left."""

    is_sender = False
    done = False

    def __init__(self, app: App, sock: Socket) -> None:
        self._app = app
        self._sock = sock
        world = app.model.world
        self._world = world
        self._env = world.env
        # the call costs of the machine its process runs on (its [[host]]'s profile; the rule
        # of zsim.model.params.params_of, which the application API may not import)
        params = getattr(sock.process, "params", None) or world.params
        self._send_cost = params.send_call_s
        self._recv_cost = params.recv_call_s
        # its calls into the model (zsim.model.appthread, the one layer where a call waits):
        # each call blocked at once has its own AppThread, as the SimPy process making it
        # is a thread of the application
        self._threads: list[AppThread] = [self._new_thread()]
        # calls waiting on the socket: each fails with SocketClosed if the socket closes
        self._pending: list[Callable[[Exception], None]] = []
        self._poll: simpy.Event | None = None  # the pending poll() without timeout, shared
        self.socket: Socket | None = sock
        self.app_name = app.name
        self.calls = 0  # send/recv/poll calls made (the run's zero-time-loop check reads it)

    def _new_thread(self) -> AppThread:
        thread = AppThread(self._world)
        thread.count_stop = True  # a send the closing socket ends was blocked until then
        return thread

    def _free_thread(self) -> AppThread:
        """An AppThread in no blocking call (a new one if every one is blocked)."""
        for thread in self._threads:
            if not thread.blocked_call():
                return thread
        thread = self._new_thread()
        self._threads.append(thread)
        return thread

    @property
    def name(self) -> str:
        return self._sock.name

    @property
    def type(self) -> str:
        return self._sock.type

    def __repr__(self) -> str:
        return f"<AppSocket {self.name} {self.type}>"

    # -- lifecycle (the process treats an AppSocket as one of its workloads) ----------

    def stop(self) -> None:
        pending, self._pending = self._pending, []
        for fail in pending:
            fail(SocketClosed(f"socket {self.name!r} was closed while a call waited on it"))

    def resume(self) -> None:
        """The process restarted: the socket is fresh; calls made from now on work."""

    def _call(self, types: frozenset[str], verb: str) -> simpy.Event:
        """A new call's event, already failed if this socket type cannot ``verb``
        (NotSupported) or the socket is not open (SocketClosed)."""
        self.calls += 1
        event = self._env.event()
        if self._sock.type not in types:
            event.fail(NotSupported(f"a {self._sock.type} socket ({self.name!r}) cannot {verb} (ENOTSUP)"))
        elif self._sock.state != OPEN:
            self._closed(event)
        return event

    def _closed(self, event: simpy.Event) -> simpy.Event:
        if self._sock.state == NEW:
            opens = self._app.model.scenario.socket(self.name).open_at_s
            event.fail(SocketClosed(f"socket {self.name!r} is not open yet (it opens at open_at_s = {opens:g} s)"))
        else:
            event.fail(SocketClosed(f"socket {self.name!r} is closed"))
        return event

    def _state_error(self, verb: str) -> StateError:
        """EFSM from the type's state machine (``req_t``, ``rep_t``), in pyzmq's words."""
        sock = self._sock
        if sock.traits.request:
            why = "send while a reply is pending" if verb == "send" else "recv before a request was sent"
        else:
            why = "send before a request was received" if verb == "send" else "recv before the reply was sent"
        return StateError(f"{sock.type} socket {self.name!r}: {why} (EFSM)")

    def _wait_for(self, thread: AppThread, fail: Callable[[Exception], object]) -> Callable[[Exception], None]:
        """Register a blocked call: if the socket closes, ``fail`` ends it (SocketClosed)."""

        def closed(error: Exception) -> None:
            thread.cancel()
            fail(error)

        self._pending.append(closed)
        return closed

    def _unwait(self, closed: Callable[[Exception], None]) -> None:
        if closed in self._pending:
            self._pending.remove(closed)

    # -- send ------------------------------------------------------------------------

    def send(self, size: int | None = None, *, topic: str | None = None, envelope: Iterable[Any] | None = None,
             parts: int = 1, like: Received | None = None, delimiter: bool | None = None,
             dontwait: bool = False, cause: Received | None = None, subscribe: str | None = None,
             unsubscribe: str | None = None) -> simpy.Event:
        """``zmq_send`` of a message of ``size`` payload bytes (default 0); the event's
        value is the message id. ``envelope``: the routing ids in front of the message
        (a ROUTER sends to the peer its first one names and strips it). ``delimiter``:
        an empty delimiter frame follows them (``b""``, which a REP or REQ peer requires;
        a REQ adds its own). ``like=received`` takes a received message's size, topic,
        envelope and delimiter (a broker passing a request on); arguments given override
        them. ``cause``: the received message this one answers or was made from (default:
        ``like``'s), so request -> reply and source -> sink times follow it
        (``zsim.results.causal_times``). On an XSUB, ``subscribe=prefix`` /
        ``unsubscribe=prefix`` send a (un)subscription message (``b"\\x01" + prefix`` /
        ``b"\\x00" + prefix`` in pyzmq) instead: the event's value is None."""
        env, sock = self._env, self._sock
        event = self._call(_APP_CAN_SEND, "send")
        if event.triggered:
            return event
        if subscribe is not None or unsubscribe is not None:
            return self._send_subscription(event, subscribe, unsubscribe, (size, topic, envelope, like, delimiter, cause, parts != 1))
        if size is None:
            # a received message's size counts its topic frame too: the payload is the rest
            size = like.size - len(like.topic.encode()) if like is not None else 0
        if topic is None:
            topic = like.topic if like is not None else ""
        envelope = tuple(envelope) if envelope is not None else (like.envelope if like is not None else ())
        if delimiter is None:
            delimiter = like.delimiter if like is not None else False
        if delimiter and BOTTOM not in envelope:
            envelope += (BOTTOM,)
        if isinstance(sock, Rep) and sock.sending_reply:
            # rep_t::xsend: the reply goes out under the routing ids and delimiter the
            # request came with, which the socket kept (rep_t::xrecv); the application
            # neither sees nor gives them
            envelope = sock.reply_envelope
        if size < 0:
            event.fail(ValueError(f"send on {self.name!r}: size must be >= 0, got {size}"))
            return event
        total, wire = message_wire_bytes(size, topic, parts)
        wire += envelope_wire_bytes(envelope)
        if sock.traits.request:
            wire += 2  # the REQ's empty delimiter frame
        thread = self._free_thread()
        made_from = cause if cause is not None else like
        cause_id = made_from.id if made_from is not None and made_from.id >= 0 else -1
        msg = thread.message(env.now, total, wire, topic, envelope, sock.index, cause_id)
        closed: Callable[[Exception], None] | None = None

        def done(status: int) -> None:
            if closed is not None:
                self._unwait(closed)
            self._send_done(event, msg, status, thread.wake_s)

        status = thread.send(sock, msg, dontwait, done)
        if status == BLOCKED:
            closed = self._wait_for(thread, event.fail)
        else:
            self._send_done(event, msg, status, thread.wake_s)
        return event

    def _send_subscription(self, event: simpy.Event, subscribe: str | None, unsubscribe: str | None,
                           others: tuple[Any, ...]) -> simpy.Event:
        """``zmq_send`` of a (un)subscription message on an XSUB (``xsub_t::xsend``), through
        the call layer (``AppThread.send_control``); it never blocks (``xsub_t::xhas_out``),
        so ``dontwait`` changes nothing."""
        sock = self._sock
        if not sock.traits.sends_upstream:
            event.fail(NotSupported(f"a {sock.type} socket ({self.name!r}) sends no (un)subscription message: an XSUB does "
                                    "(a SUB subscribes with subscribe(prefix))"))
            return event
        if subscribe is not None and unsubscribe is not None:
            event.fail(ValueError(f"send on {self.name!r}: give subscribe= or unsubscribe=, not both"))
            return event
        if any(other not in (None, False) for other in others):
            event.fail(ValueError(f"send on {self.name!r}: a (un)subscription message is its prefix alone (no size, topic, "
                                  "envelope, parts, like, delimiter or cause)"))
            return event
        prefix = subscribe if subscribe is not None else unsubscribe
        if not isinstance(prefix, str):
            event.fail(TypeError(f"send on {self.name!r}: the prefix must be a str, got {type(prefix).__name__}"))
            return event
        kind = SUBSCRIBE_ID if subscribe is not None else UNSUBSCRIBE_ID
        msg: Message = (kind, self._env.now, 0, frame_wire_bytes(len(prefix.encode()) + 1), prefix, (), sock.index, -1)
        thread = self._free_thread()
        status = thread.send_control(sock, msg)
        self._send_done(event, msg, status, thread.wake_s)
        return event

    def _send_done(self, event: simpy.Event, msg: Message, status: int, wake_s: float) -> None:
        """The send call returns (counted by ``AppThread``): after its cost, with the cost
        of the wake-ups it caused; its value is the message id (None: a control message)."""
        if status == SENT:
            mid = msg[MSG_ID] if msg[MSG_ID] >= 0 else None
            self._env.call_later(self._send_cost + wake_s, lambda: event.succeed(mid))
        elif status == UNROUTABLE:
            event.fail(HostUnreachable(f"ROUTER {self.name!r} (router_mandatory): no peer {msg[MSG_ENVELOPE][:1]!r}"))
        elif status == EFSM:
            event.fail(self._state_error("send"))
        elif status == CLOSED:
            event.fail(SocketClosed(f"socket {self.name!r} was closed while a call waited on it"))
        else:
            event.fail(Again(f"send on {self.name!r} would block"))

    # -- recv ------------------------------------------------------------------------

    def recv(self, *, dontwait: bool = False) -> simpy.Event:
        """``zmq_recv``: the event's value is a ``Received``."""
        event = self._call(_APP_CAN_RECV, "receive")
        if event.triggered:
            return event
        thread = self._free_thread()
        closed: Callable[[Exception], None] | None = None

        def done(status: int) -> None:
            if closed is not None:
                self._unwait(closed)
            got = thread.got
            thread.got = None
            self._recv_done(event, status, got, True)

        msg = thread.recv(self._sock, dontwait, done)
        if msg is not None:
            self._recv_done(event, RECEIVED, msg, False)
        elif thread.status == BLOCKED:
            closed = self._wait_for(thread, event.fail)
        else:
            self._recv_done(event, thread.status, None, False)
        return event

    def _recv_done(self, event: simpy.Event, status: int, msg: Message | None, blocked: bool) -> None:
        """The recv call returns: the message after the call's cost, or its failure
        (``blocked``: it had blocked, so an EAGAIN is RCVTIMEO's)."""
        if status == RECEIVED and msg is not None:
            sock, now = self._sock, self._env.now
            if msg[MSG_ID] >= 0:  # an XPUB's subscription messages are not counted
                self._threads[0].received(sock, msg, now)
            received = Received(msg)
            if isinstance(sock, Rep):
                # rep_t::xrecv keeps the routing ids and the delimiter for the reply and
                # hands the application only the frames after them
                received.envelope, received.delimiter = (), False
            self._env.call_later(self._recv_cost, lambda: event.succeed(received))
        elif status == EFSM:
            event.fail(self._state_error("recv"))
        elif status == CLOSED:
            event.fail(SocketClosed(f"socket {self.name!r} was closed while a call waited on it"))
        elif blocked and status == AGAIN:
            event.fail(Again(f"recv on {self.name!r}: RCVTIMEO expired"))
        else:
            event.fail(Again(f"recv on {self.name!r} would block"))

    # -- lifecycle calls -------------------------------------------------------------

    def _endpoint(self, text: str, verb: str) -> Any:
        """``text`` as the endpoint the scenario's model knows (its host resolved as a
        [[socket]]'s would be); a bad one is a ``ValueError`` naming it (EINVAL)."""
        from .build import call_endpoint

        return call_endpoint(self._app.model, self._sock, text, f"app[{self._app.name}]: {verb}")

    def _open_for(self, verb: str) -> Socket:
        if self._sock.state != OPEN:
            raise SocketClosed(f"socket {self.name!r} is not open: cannot {verb}")
        return self._sock

    def bind(self, endpoint: str) -> None:
        """``zmq_bind`` now (``World.bind``)."""
        sock = self._open_for("bind")
        found = self._endpoint(endpoint, "bind")
        holder = self._world.listeners.get(found.key)
        if holder is not None and holder is not sock:
            raise ValueError(f"bind on {self.name!r}: {found.text} is bound by socket {holder.name!r} (EADDRINUSE)")
        self._world.bind(sock, found)

    def connect(self, endpoint: str) -> None:
        """``zmq_connect`` now (``World.connect``); a tcp/ipc peer need not listen yet."""
        self._world.connect(self._open_for("connect"), self._endpoint(endpoint, "connect"))

    def disconnect(self, endpoint: str) -> None:
        """``zmq_disconnect`` now (``World.disconnect``: what the connection holds goes as
        LINGER says, rule ``app_disconnect``); ``NoSuchEndpoint`` (ENOENT) if not connected."""
        if not self._world.disconnect(self._open_for("disconnect"), self._endpoint(endpoint, "disconnect")):
            raise NoSuchEndpoint(f"disconnect on {self.name!r}: {endpoint!r} is not connected (ENOENT)")

    def unbind(self, endpoint: str) -> None:
        """``zmq_unbind`` now (``World.unbind``); ``NoSuchEndpoint`` (ENOENT) if not bound."""
        if not self._world.unbind(self._open_for("unbind"), self._endpoint(endpoint, "unbind")):
            raise NoSuchEndpoint(f"unbind on {self.name!r}: {endpoint!r} is not bound (ENOENT)")

    def setsockopt(self, name: str, value: Any) -> None:
        """``zmq_setsockopt`` now, with pyzmq's lowercase names and units (``sndhwm``,
        ``rcvtimeo`` in ms, ``subscribe``, ...): checked as a [[socket]]'s ``options``
        are (a bad one is a ``ValueError`` naming it); it holds from now on where libzmq
        reads it, and SNDHWM/RCVHWM reach the pipes already attached (``World.set_option``)."""
        from .build import call_options

        sock = self._open_for("setsockopt")
        if name in ("subscribe", "unsubscribe"):
            self._set_subscription(name, value.decode() if isinstance(value, bytes) else value)
            return
        for key, checked in call_options(sock, name, value, f"app[{self._app.name}]: setsockopt on {self.name!r}"):
            self._world.set_option(sock, key, checked)

    # -- poll ------------------------------------------------------------------------

    def readable(self) -> bool:
        """Would ``recv`` return at once? (``zmq_poll`` with timeout 0, POLLIN.)"""
        return self._sock.state == OPEN and self._sock.has_in()

    def poll(self, timeout_s: float | None = None) -> simpy.Event:
        """``zmq_poll`` for POLLIN on this socket alone: the event fires with True when a
        ``recv`` would not block, or with False after ``timeout_s``. Nothing is read, so
        ``env.any_of([a.poll(), b.poll()])`` waits for either socket without losing a
        message (zguide's broker loops); then ``readable()`` says which. Polls without a
        timeout that are still pending are one event: a loop that polls again does not
        pile up waiters."""
        env, sock = self._env, self._sock
        if timeout_s is None and self._poll is not None and not self._poll.triggered:
            return self._poll
        event = env.event()
        if sock.state != OPEN:
            return self._closed(event)
        thread = self._free_thread()
        closed: Callable[[Exception], None] | None = None

        def done(status: int) -> None:
            if closed is not None:
                self._unwait(closed)
            if status == CLOSED:
                event.fail(SocketClosed(f"socket {self.name!r} was closed while a call waited on it"))
            else:
                event.succeed(status == READY)

        status = thread.poll((sock,), sock.has_in, -1.0 if timeout_s is None else max(0.0, timeout_s), done)
        if status == BLOCKED:
            closed = self._wait_for(thread, event.fail)
            if timeout_s is None:
                self._poll = event
        elif status == CLOSED:
            return self._closed(event)
        else:
            event.succeed(status == READY)
        return event

    # -- setsockopt(SUBSCRIBE/UNSUBSCRIBE) ---------------------------------------------

    def subscribe(self, prefix: str) -> None:
        """``setsockopt(zmq.SUBSCRIBE, prefix)``, at once (not an event): a SUB sends the
        subscription to its publishers now (``sub_t::xsetsockopt``); an XPUB with
        ``xpub_manual`` subscribes the pipe of the last (un)subscription it received
        (``xpub_t::xsetsockopt``). Raises ``zsim.InvalidArgument`` on the other types, as
        libzmq does (EINVAL), and ``zsim.SocketClosed`` if the socket is not open."""
        self._set_subscription("subscribe", prefix)

    def unsubscribe(self, prefix: str) -> None:
        """``setsockopt(zmq.UNSUBSCRIBE, prefix)``: as ``subscribe``; a SUB sends the cancel
        only when it removes the prefix's last reference (it counts its subscriptions)."""
        self._set_subscription("unsubscribe", prefix)

    def _set_subscription(self, option: str, prefix: str) -> None:
        sock = self._sock
        if not isinstance(prefix, str):
            raise TypeError(f"{option} on {self.name!r}: the prefix must be a str, got {type(prefix).__name__}")
        if sock.state != OPEN:
            raise SocketClosed(f"socket {self.name!r} is not open")
        if not sock.xsetsockopt(option, prefix):
            manual = " without xpub_manual" if sock.traits.app_sees_subscriptions else ""
            raise InvalidArgument(f"setsockopt({option.upper()}) on the {sock.type} socket {self.name!r}{manual}: not an option of "
                                  f"the type (EINVAL)")


class App:
    """What an app function gets: the run's environment, its sockets and random streams."""

    def __init__(self, model: Model, name: str, function: str | None = None) -> None:
        self.model = model
        self.name = name
        #: the name of the function the scenario (or the caller) names for this app
        self.function = function or name
        self.env: simpy.Environment = model.env
        self.seed: int = model.seed
        self._sockets: dict[str, AppSocket] = {}

    def socket(self, name: str) -> AppSocket:
        """The scenario's socket ``name``, for SimPy code."""
        found = self._sockets.get(name)
        if found is None:
            sock = self.model.sockets.get(name)
            if sock is None:
                known = ", ".join(sorted(self.model.sockets))
                raise ScenarioError(f"app[{self.name}]", f"no socket named {name!r} in the scenario; known: {known}")
            found = self._sockets[name] = AppSocket(self, sock)
            sock.process.workloads.append(found)
        return found

    def stream(self, name: str) -> np.random.Generator:
        """A random stream of its own (same seed and name: same draws)."""
        return self.model.world.stream(f"app.{self.name}.{name}")

    def process(self, generator: Generator[Any, Any, Any]) -> simpy.Process:
        """Start a SimPy process; an exception in it ends the run with one line naming the app."""
        return self.env.process(self._guarded(generator))

    def _guarded(self, generator: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        """``yield from generator``, written out so that whatever the app's code does ends
        the run with one line naming the app: an exception (``BaseException`` too:
        ``SystemExit`` from ``sys.exit``), a yield of something that is not an event. A
        ``KeyboardInterrupt`` (the user's Ctrl-C) and the watchdog's ``WatchdogTimeout``
        pass on."""
        value: Any = None
        error: BaseException | None = None
        while True:
            _RUNNING[threading.get_ident()] = self.name
            try:
                target = generator.send(value) if error is None else generator.throw(error)
            except StopIteration as stop:
                return stop.value
            except (ScenarioError, KeyboardInterrupt):
                raise
            except WatchdogTimeout as exc:
                exc.app = self.name  # type: ignore[attr-defined]
                raise
            except BaseException as exc:  # noqa: BLE001 - the user's code: one line naming it and where
                raise app_failed(self.name, exc, self.function) from exc
            finally:
                _RUNNING.pop(threading.get_ident(), None)
            if not hasattr(target, "callbacks"):  # SimPy's own test of an event
                where = _frame_of(generator)
                try:
                    generator.close()
                except (KeyboardInterrupt, WatchdogTimeout):
                    raise
                except BaseException:  # noqa: BLE001, S110 - its own cleanup failing changes nothing: the run ends here
                    pass
                raise AppFailed(f"app[{self.name}]", f"yielded {_short(target)}, which is not a SimPy event{where}: "
                                                     "yield a socket call (sock.recv()), env.timeout(...), env.any_of(...) or "
                                                     f"another event (app function {self.function})")
            try:
                value, error = (yield target), None
            except GeneratorExit:
                generator.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - a failed event, an interrupt: into the app's generator, as yield from
                value, error = None, exc


class AppFailed(ScenarioError):
    """An app's code raised: the scenario's own logic failed (exit 2)."""


_LIBRARIES = (Path(__file__).resolve().parent, Path(simpy.__file__).resolve().parent)


class WatchdogTimeout(BaseException):
    """Raised into a run's thread by its watchdog (``zsim.runner``) when code holds the
    thread past the run's limits without giving the event loop control back. A
    ``BaseException``, so app code that catches ``Exception`` does not swallow it."""


#: thread id -> the app whose code that thread runs now (read by the watchdog's report)
_RUNNING: dict[int, str] = {}


def running_app(thread: int | None = None) -> str | None:
    """The app whose code ``thread`` (default: this one) runs now, if any."""
    return _RUNNING.get(threading.get_ident() if thread is None else thread)


def is_library(filename: str) -> bool:
    """Whether a frame's file is zsim's or SimPy's (not the user's); a compiled module's
    frames name their file relative to the package (``zsim/model/kernel.py``)."""
    path = Path(filename)
    if not path.is_absolute() and path.parts[:1] in (("zsim",), ("simpy",)):
        return True
    try:
        folder = path.resolve().parent
    except (OSError, ValueError):
        return False
    return any(folder == lib or lib in folder.parents for lib in _LIBRARIES)


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (SimPy and zsim's kernel raise a copy of
    a process's exception, the original as its cause)."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 10:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def user_frame(tb: Any) -> traceback.FrameSummary | None:
    """The innermost frame of a traceback that is the user's code, not zsim's or SimPy's."""
    for frame in reversed(traceback.extract_tb(tb)):
        if not is_library(frame.filename):
            return frame
    return None


def user_frame_of(exc: BaseException) -> traceback.FrameSummary | None:
    """``user_frame`` of ``exc``, or of the exception it copies (``causes``)."""
    for each in causes(exc):
        frame = user_frame(each.__traceback__)
        if frame is not None:
            return frame
    return None


def _where(frame: traceback.FrameSummary | None) -> str:
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}" if frame is not None else ""


def _frame_of(generator: Any) -> str:
    frame = getattr(generator, "gi_frame", None)
    if frame is None:
        return ""
    return f" (at {Path(frame.f_code.co_filename).name}:{frame.f_lineno} in {frame.f_code.co_name})"


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - the user's object: its repr may fail too
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reason_of(exc: BaseException) -> str:
    """What an app's exception says, in one line (``SystemExit``: the call that raised it)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the app called sys.exit({_short(exc.code)}); an app ends by returning, the run ends at its horizon"
    text = " ".join(str(exc).split()) if str(exc) else ""
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def app_failed(app: str, exc: BaseException, function: str | None = None) -> AppFailed:
    """``app[name]: ValueError: ... (at broker.py:42 in loop, app function broker)``: the
    reason and the innermost frame of the user's code."""
    frame = user_frame(exc.__traceback__)
    parts = [f"at {_where(frame)}"] if frame is not None else []
    if function is not None:
        parts.append(f"app function {function}")
    where = f" ({', '.join(parts)})" if parts else ""
    return AppFailed(f"app[{app}]", f"{reason_of(exc)}{where}")


AppFunction = Callable[[App], Any]


def resolve(function: str | AppFunction, base_dir: str | None, path: str) -> AppFunction:
    """``"module:function"`` or ``"file.py:function"`` (relative to the scenario) -> callable."""
    if callable(function):
        return function
    if not isinstance(function, str) or function.count(":") != 1:
        raise ScenarioError(path, f"must be 'module:function' or 'file.py:function', got {function!r}")
    module_name, attr = function.split(":")
    try:
        if module_name.endswith(".py"):
            file = Path(module_name)
            if not file.is_absolute() and base_dir is not None:
                file = Path(base_dir) / file
            if not file.is_file():
                raise ScenarioError(path, f"no file {str(file)!r}")
            spec = importlib.util.spec_from_file_location(f"zsim_app_{file.stem}", file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            added = base_dir is not None and base_dir not in sys.path
            if added:
                sys.path.insert(0, str(base_dir))
            try:
                module = importlib.import_module(module_name)
            finally:
                if added:
                    sys.path.remove(str(base_dir))
    except ScenarioError:
        raise
    except Exception as exc:  # noqa: BLE001 - importing the user's module: one line
        raise ScenarioError(path, f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    found = getattr(module, attr, None)
    if not callable(found):
        raise ScenarioError(path, f"{module_name!r} has no function {attr!r}")
    return found  # type: ignore[no-any-return]


def load(code: AppCode) -> AppFunction:
    """The function of a checked ``[[app]]`` (``zsim.trust.check``): a file is executed from
    the very bytes that were checked (their SHA-256 is compared again), a module imported."""
    try:
        if code.file is not None:
            data = trust.read_app_file(code.file, code.field)
            if code.sha256 is not None and hashlib.sha256(data).hexdigest() != code.sha256:
                raise ScenarioError(code.field, f"{code.file!r} changed after it was checked: not run")
            file = Path(code.file)
            spec = importlib.util.spec_from_file_location(f"zsim_app_{file.stem}", file)
            assert spec is not None
            module = importlib.util.module_from_spec(spec)
            exec(compile(data, str(file), "exec"), module.__dict__)  # noqa: S102 - the user allowed this code (zsim.trust)
            shown = code.reference.rpartition(":")[0]
        else:
            assert code.module is not None
            module = importlib.import_module(code.module)
            shown = code.module
    except (ScenarioError, KeyboardInterrupt):
        raise
    except WatchdogTimeout as exc:
        exc.app = code.app  # type: ignore[attr-defined]
        raise
    except BaseException as exc:  # noqa: BLE001 - importing the user's module: one line, whatever it raised (SystemExit too)
        frame = user_frame(exc.__traceback__)
        where = f" (at {_where(frame)})" if frame is not None else ""
        raise ScenarioError(code.field, f"cannot import {code.reference.rpartition(':')[0]!r}: {reason_of(exc)}{where}") from exc
    found = getattr(module, code.function, None)
    if not callable(found):
        raise ScenarioError(code.field, f"{shown!r} has no function {code.function!r}")
    return found  # type: ignore[no-any-return]


def start(model: Model, name: str, function: AppFunction) -> None:
    """Call an app function with its ``App``; a generator it returns runs as a process."""
    function_name = getattr(function, "__name__", None) or name
    app = App(model, name, function_name)
    model.app_names.append(name)
    _RUNNING[threading.get_ident()] = name
    try:
        started = function(app)
    except (ScenarioError, KeyboardInterrupt):
        raise
    except WatchdogTimeout as exc:
        exc.app = name  # type: ignore[attr-defined]
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's code, whatever it raised (SystemExit too)
        raise app_failed(name, exc, function_name) from exc
    finally:
        _RUNNING.pop(threading.get_ident(), None)
    if isinstance(started, Generator):
        app.process(started)
    elif started is not None:
        raise AppFailed(f"app[{name}]", f"the function returned {started!r}: it should start SimPy processes with "
                        "app.process(...) and return None, or return a generator to run as one")
