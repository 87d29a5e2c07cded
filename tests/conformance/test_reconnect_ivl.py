"""libzmq tests/test_reconnect_ivl.cpp (ipc, tcp; the IPv6 run is tcp again to zsim): a
PAIR with RECONNECT_IVL -1 connected to a bound PAIR bounces; the bound PAIR unbinds,
which ends the connection, and the connecting PAIR does not reconnect
(``session_base_t::reconnect``: with RECONNECT_IVL <= 0 it ends the endpoint instead), not
even after the PAIR binds again; a new ``zmq_connect`` makes the bounce work again. The C
test's steps as an app, on pyzmq's call costs."""

from __future__ import annotations

import functools

import zsim
from conformance.ported import BOUNCE_PARTS, BOUNCE_SIZE, app_scenario, endpoint, ports, recv_timed, run, steps

TIMEOUT_MS = 250  # testutil.cpp:91, :102: SNDTIMEO and RCVTIMEO of expect_bounce_fail


def _bounce(server: zsim.AppSocket, client: zsim.AppSocket):
    """testutil.cpp:71 ``bounce``: the 2-part message there and back; what each side got."""
    yield client.send(BOUNCE_SIZE, parts=BOUNCE_PARTS)
    at_server = (yield server.recv()).size
    yield server.send(BOUNCE_SIZE, parts=BOUNCE_PARTS)
    return [at_server, (yield client.recv()).size]


def _send_may_fail(sock: zsim.AppSocket):
    """testutil.cpp:88 ``send_bounce_msg_may_fail``: SNDTIMEO 250 ms, sent or EAGAIN."""
    sock.setsockopt("sndtimeo", TIMEOUT_MS)
    try:
        yield sock.send(BOUNCE_SIZE, parts=BOUNCE_PARTS)
    except zsim.Again:
        return "EAGAIN"
    return "sent"


def _expect_bounce_fail(server: zsim.AppSocket, client: zsim.AppSocket):
    """testutil.cpp:107 ``expect_bounce_fail``: each side's send may fail; each side's
    recv (RCVTIMEO 250 ms) must: what the two receives got (server's, client's)."""
    yield from _send_may_fail(client)
    server.setsockopt("rcvtimeo", TIMEOUT_MS)
    at_server = yield from recv_timed(server)
    yield from _send_may_fail(server)
    client.setsockopt("rcvtimeo", TIMEOUT_MS)
    at_client = yield from recv_timed(client)
    return [at_server, at_client]


@functools.cache
def _reconnect_ivl(transport: str) -> dict[str, object]:
    """test_reconnect_ivl.cpp:8 test_reconnect_ivl_against_pair_socket."""
    where = endpoint(transport, "reconnect_ivl")
    seen: dict[str, object] = {}

    def flow(app):
        sb, sc = app.socket("sb"), app.socket("sc")
        seen["first"] = yield from _bounce(sb, sc)
        sb.unbind(where)
        seen["after_unbind"] = yield from _expect_bounce_fail(sb, sc)
        sb.bind(where)
        seen["after_rebind"] = yield from _expect_bounce_fail(sb, sc)
        sc.connect(where)
        seen["after_connect"] = yield from _bounce(sb, sc)

    run(app_scenario({"name": "sb", "type": "PAIR", "bind": where},
                     {"name": "sc", "type": "PAIR", "connect": where, "options": {"reconnect_ivl": -1}},
                     profile="default"), steps(flow))
    return seen


@ports("test_reconnect_ivl.cpp:17", "test_reconnect_ivl_against_pair_socket: the first bounce works", "round trip",
       ("ipc", "tcp"))
def test_reconnect_ivl_against_pair_socket_bounce(transport):
    assert _reconnect_ivl(transport)["first"] == [BOUNCE_SIZE, BOUNCE_SIZE]


@ports("test_reconnect_ivl.cpp:21", "after the bound PAIR unbinds: the bounce fails both ways (each recv: EAGAIN after "
       "RCVTIMEO)", "EAGAIN, EAGAIN", ("ipc", "tcp"))
def test_reconnect_ivl_after_unbind_bounce_fails(transport):
    assert _reconnect_ivl(transport)["after_unbind"] == ["EAGAIN", "EAGAIN"]


@ports("test_reconnect_ivl.cpp:25", "after it binds again: still failing (RECONNECT_IVL -1 never reconnects)",
       "EAGAIN, EAGAIN", ("ipc", "tcp"))
def test_reconnect_ivl_after_rebind_bounce_still_fails(transport):
    assert _reconnect_ivl(transport)["after_rebind"] == ["EAGAIN", "EAGAIN"]


@ports("test_reconnect_ivl.cpp:29", "after a new zmq_connect: the bounce works", "round trip", ("ipc", "tcp"))
def test_reconnect_ivl_after_new_connect_bounce_works(transport):
    assert _reconnect_ivl(transport)["after_connect"] == [BOUNCE_SIZE, BOUNCE_SIZE]
