"""What every conformance test shares: the ``@ports`` record of the libzmq assertion a test
ports (the one registry ``table.py`` reads), endpoints per transport, scenarios, readers of
a run's outcome, and the steps of a C test written as an ``[[app]]`` (SimPy) process.

A test ports one assertion of libzmq v4.3.5's tests/ (the C file and line it names): it
builds the C test's sockets as a scenario, runs it, and asserts what the C test asserts,
over every transport the C test loops over (``transport`` is parametrized by ``@ports``).
libzmq's tests are C loops on one context: a zmq call costs about 0.1 us. Tests use
``profile = "ideal"`` (calls and engines cost nothing) where the assertion depends on the
C program outrunning the I/O thread, and the shipped profile (pyzmq's costs) where time
does not matter or the C test sleeps (``SETTLE_TIME``, 300 ms: testutil.hpp:31).

A C test whose steps are timed calls (bind, connect, disconnect, unbind, setsockopt at a
time) is a scenario with ``[[call]]`` tables (``calls=``); one that reads each call's result
(EAGAIN here, a message there) is an app (``steps``): ``zmq_recv``/``zmq_send``/
``zmq_setsockopt`` on the scenario's sockets, a ``msleep`` as a timeout.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import zsim
from zsim.results import RunResult

#: testutil.hpp:31: how long libzmq's tests sleep for connections and messages to settle
SETTLE_S = 0.3


@dataclass(frozen=True)
class Port:
    """One libzmq assertion and what zsim gives for it."""

    where: str  #: "test_hwm.cpp:46": the C file and the line of the assertion
    asserts: str  #: what libzmq asserts there, in a phrase
    result: str  #: what zsim gives (the test asserts it)
    transports: tuple[str, ...]  #: the transports the C test runs it over


def ports(where: str, asserts: str, result: str, transports: Sequence[str] = ("inproc",)) -> Callable[[Any], Any]:
    """Mark a test as the port of the libzmq assertion at ``where`` and run it once per
    transport the C test uses (the test takes a ``transport`` argument)."""
    record = Port(where, asserts, result, tuple(transports))

    def mark(test: Any) -> Any:
        test.port = record
        return pytest.mark.parametrize("transport", record.transports)(test)

    return mark


_PORTS: dict[str, int] = {}


def endpoint(transport: str, name: str) -> str:
    """The endpoint ``name`` over ``transport``: ``inproc://name``, ``ipc://name``, or a
    tcp port on loopback that is the same for a name in every test (for ``tcp://*:*``
    libzmq picks a free port; zsim needs a number)."""
    if transport == "inproc":
        return f"inproc://{name}"
    if transport == "ipc":
        return f"ipc://{name}"
    assert transport == "tcp", transport
    port = 20000 + zlib.crc32(name.encode()) % 20000
    owner = _PORTS.setdefault(name, port)
    assert owner == port and list(_PORTS.values()).count(port) == 1, f"two endpoint names share tcp port {port}"
    return f"tcp://127.0.0.1:{port}"


def scenario(*sockets: dict[str, Any], sends: Sequence[dict[str, Any]] = (), recvs: Sequence[dict[str, Any]] = (),
             proxies: Sequence[dict[str, Any]] = (), processes: Sequence[dict[str, Any]] = (),
             calls: Sequence[dict[str, Any]] = (), profile: str = "default", until_s: float | None = None) -> dict[str, Any]:
    """A scenario dict (docs/scenario-format.md) of these tables."""
    raw: dict[str, Any] = {"scenario": {"name": "conformance", "profile": profile}, "socket": list(sockets)}
    if until_s is not None:
        raw["scenario"]["until_s"] = until_s
    for key, tables in (("send", sends), ("recv", recvs), ("proxy", proxies), ("process", processes), ("call", calls)):
        if tables:
            raw[key] = list(tables)
    return raw


def app_scenario(*sockets: dict[str, Any], profile: str = "ideal", until_s: float = 10.0, **tables: Any) -> dict[str, Any]:
    """A scenario of these sockets whose steps are an app's (``steps``): the C program's
    calls cost nothing unless ``profile`` says otherwise; 10 s is longer than any test."""
    return scenario(*sockets, profile=profile, until_s=until_s, **tables)


def run(raw: dict[str, Any], *apps: Callable[[zsim.App], Any], seed: int = 1) -> RunResult:
    return zsim.run(raw, seed, apps=list(apps))


def drain(socket: str, start_s: float, **fields: Any) -> dict[str, Any]:
    """A ``[[recv]]`` that reads ``socket`` from ``start_s`` until a recv would block (the
    C tests' ``while (zmq_recv (s, ..., ZMQ_DONTWAIT) == 0)``): the socket needs
    ``rcvtimeo = 0`` (``dontwait_recv``)."""
    return {"socket": socket, "start_s": start_s, "on_timeout": "stop", **fields}


def dontwait_sends(socket: str, count: int = 10000, **fields: Any) -> dict[str, Any]:
    """A ``[[send]]`` of ``count`` DONTWAIT sends that stops at the first EAGAIN (the C
    tests' ``while (n < MAX_SENDS && zmq_send (s, NULL, 0, ZMQ_DONTWAIT) == 0)``)."""
    return {"socket": socket, "count": count, "dontwait": True, "on_again": "stop", "size_bytes": 0, **fields}


def delivered(result: RunResult, socket: str | None = None) -> list[tuple[int, str, str, int]]:
    """The copies delivered (at ``socket``), in the order they were delivered:
    (message id = send order, origin socket, receiving socket, size)."""
    frame = result.messages_frame()
    rows = frame[frame.state == "delivered"]
    if socket is not None:
        rows = rows[rows.socket == socket]
    return [(int(r.msg_id), str(r.origin), str(r.socket), int(r.size_bytes)) for r in rows.itertuples()]


def fates(result: RunResult) -> list[tuple[str, str, str, str]]:
    """Every copy's (origin, state, socket, rule), in ledger order."""
    frame = result.messages_frame()
    return [(str(r.origin), str(r.state), str(r.socket), str(r.rule)) for r in frame.itertuples()]


def reader(socket: str, log: list[Any], start_s: float = 0.0) -> Callable[[zsim.App], None]:
    """An app that calls ``recv`` on ``socket`` from ``start_s`` on, for ever, and appends
    (time, what it got) to ``log``: an XPUB's subscription messages (``kind``, ``topic``),
    a ROUTER's envelopes, in the order the application would get them."""

    def app(app: zsim.App) -> None:
        def loop() -> Any:
            if start_s:
                yield app.env.timeout(start_s)
            sock = app.socket(socket)
            while True:
                got = yield sock.recv()
                log.append((app.env.now, got))

        app.process(loop())

    return app


def blocking_and_dontwait_send_without_peers(sock_type: str) -> list[tuple[str, float]]:
    """The spec tests' ``test_block_on_send_no_peers``: a socket with SNDTIMEO 250 and no
    peer; a DONTWAIT send, then a blocking one. Returns (outcome, time it returned) of
    each. zsim refuses a socket without endpoints: this one binds an inproc name nobody
    connects to, which gives it no peer either."""
    raw = scenario({"name": "sc", "type": sock_type, "bind": "inproc://nobody", "options": {"sndtimeo": 250}},
                   profile="ideal", until_s=1.0)
    outcomes: list[tuple[str, float]] = []

    def app(app: zsim.App) -> None:
        def program() -> Any:
            sock = app.socket("sc")
            for dontwait in (True, False):
                try:
                    yield sock.send(0, dontwait=dontwait)
                    outcomes.append(("sent", app.env.now))
                except zsim.Again:
                    outcomes.append(("EAGAIN", app.env.now))

        app.process(program())

    run(raw, app)
    return outcomes


#: testutil.cpp:49: bounce () sends this string twice, as a 2-part message (32 + 32 bytes)
BOUNCE_SIZE, BOUNCE_PARTS = 64, 2


def bounce(server: str, client: str) -> Callable[[zsim.App], None]:
    """testutil.cpp:71 ``bounce (server, client)`` as an app: the client sends the 2-part
    bounce message, the server receives it and sends it back, the client receives it.
    What each side received goes to the app's ``got`` list: ("server"|"client", Received)."""
    got: list[tuple[str, zsim.Received]] = []

    def app(app: zsim.App) -> None:
        def client_side() -> Any:
            sock = app.socket(client)
            yield sock.send(BOUNCE_SIZE, parts=BOUNCE_PARTS)
            got.append(("client", (yield sock.recv())))

        def server_side() -> Any:
            sock = app.socket(server)
            request = yield sock.recv()
            got.append(("server", request))
            yield sock.send(BOUNCE_SIZE, parts=BOUNCE_PARTS)

        app.process(client_side())
        app.process(server_side())

    app.got = got  # type: ignore[attr-defined]
    return app


def bounced(server_socket: dict[str, Any], client_socket: dict[str, Any], **scenario_fields: Any) -> list[tuple[str, int]]:
    """Run ``bounce`` between the two sockets: [(side, size received)], in order."""
    app = bounce(server_socket["name"], client_socket["name"])
    run(scenario(server_socket, client_socket, until_s=1.0, **scenario_fields), app)
    return [(side, got.size) for side, got in app.got]  # type: ignore[attr-defined]


#: what bounce () sees when the round trip works
ROUND_TRIP = [("server", BOUNCE_SIZE), ("client", BOUNCE_SIZE)]


# -- the steps of a C test as an app -------------------------------------------------

Steps = Generator[Any, Any, Any]


def steps(flow: Callable[[zsim.App], Steps]) -> Callable[[zsim.App], None]:
    """An app that runs ``flow(app)`` as its one process."""

    def app(app: zsim.App) -> None:
        app.process(flow(app))

    return app


def recv_now(sock: zsim.AppSocket) -> Steps:
    """``zmq_recv (s, ..., ZMQ_DONTWAIT)``: what arrived, or "EAGAIN"."""
    try:
        got = yield sock.recv(dontwait=True)
    except zsim.Again:
        return "EAGAIN"
    return got


def recv_timed(sock: zsim.AppSocket) -> Steps:
    """A blocking ``zmq_recv`` on a socket with ``rcvtimeo`` (ZMQ_RCVTIMEO): what arrived,
    or "EAGAIN" when the timeout expired."""
    try:
        got = yield sock.recv()
    except zsim.Again:
        return "EAGAIN"
    return got


def send_now(sock: zsim.AppSocket, size: int = 0, **fields: Any) -> Steps:
    """``zmq_send (s, ..., ZMQ_DONTWAIT)``: "sent", or "EAGAIN"."""
    try:
        yield sock.send(size, dontwait=True, **fields)
    except zsim.Again:
        return "EAGAIN"
    return "sent"


def what(got: Any) -> Any:
    """A received message as the C test reads it: ("subscribe", prefix), ("unsubscribe",
    prefix), ("probe", envelope), or (topic, envelope) for a message; "EAGAIN" as is."""
    if isinstance(got, str):
        return got
    if got.kind in ("subscribe", "unsubscribe"):
        return (got.kind, got.topic)
    if got.kind == "probe":
        return ("probe", got.envelope)
    return (got.topic, got.envelope)


def pollout(sock: zsim.AppSocket) -> bool:
    """``ZMQ_EVENTS & ZMQ_POLLOUT`` (``zmq_getsockopt``): would a send not block now
    (``socket_base_t::getsockopt`` -> ``xhas_out``, after processing commands)."""
    model = sock._sock
    model.process_commands()
    return model.has_out()
