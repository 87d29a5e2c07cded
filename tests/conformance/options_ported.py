"""What the conformance tests of the options of the socket types share: the ``@ports``
record of the libzmq assertion a test ports, endpoints per transport, a scenario dict, and
the steps of a C test written as an ``[[app]]`` (SimPy) process.

The same interface as the rest of the suite's ``conformance.ported`` (``ports``,
``endpoint``, ``scenario``, ``run``, ``SETTLE_S``), so that a table of every ported
assertion reads them alike. A test ports one assertion of libzmq v4.3.5's tests/ (the C
file and line it names) over every transport the C test uses: it runs the C test's steps
in an app (``zmq_recv``/``zmq_send``/``zmq_setsockopt`` on the scenario's sockets, a
``msleep`` as a timeout) and asserts what the C test asserts at that line.
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

    where: str  #: "test_xpub_manual.cpp:35": the C file and the line of the assertion
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


def endpoint(transport: str, name: str) -> str:
    """The endpoint ``name`` over ``transport``: ``inproc://name``, ``ipc://name``, or a
    tcp port on loopback derived from the name (libzmq's tests bind ``tcp://127.0.0.1:*``;
    zsim needs a number)."""
    if transport == "inproc":
        return f"inproc://{name}"
    if transport == "ipc":
        return f"ipc://{name}"
    assert transport == "tcp", transport
    return f"tcp://127.0.0.1:{20000 + zlib.crc32(name.encode()) % 20000}"


def scenario(*sockets: dict[str, Any], profile: str = "ideal", until_s: float = 10.0) -> dict[str, Any]:
    """A scenario dict of these sockets (their steps are an app's)."""
    return {"scenario": {"name": "conformance", "profile": profile, "until_s": until_s}, "socket": list(sockets)}


def run(raw: dict[str, Any], *apps: Callable[[zsim.App], Any], seed: int = 1) -> RunResult:
    return zsim.run(raw, seed, apps=list(apps))


Steps = Generator[Any, Any, Any]


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


def set_type_option(sock: zsim.AppSocket, name: str, value: Any) -> None:
    """``zmq_setsockopt`` of one of the socket type's own options on a running socket
    (XPUB_VERBOSE, ...): the type's ``xsetsockopt``, which the application's setsockopt call
    of issue 40's lifecycle work goes through."""
    assert sock._sock.xsetsockopt(name, value), f"{name} is not an option of a {sock.type}"


def steps(flow: Callable[[zsim.App], Steps]) -> Callable[[zsim.App], None]:
    """An app that runs ``flow(app)`` as its one process."""

    def app(app: zsim.App) -> None:
        app.process(flow(app))

    return app


def pollout(sock: zsim.AppSocket) -> bool:
    """``ZMQ_EVENTS & ZMQ_POLLOUT`` (``zmq_getsockopt``): would a send not block now
    (``socket_base_t::getsockopt`` -> ``xhas_out``, after processing commands)."""
    model = sock._sock
    model.process_commands()
    return model.has_out()
