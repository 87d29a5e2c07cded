"""libzmq tests/test_connect_rid.cpp (tcp): ZMQ_CONNECT_ROUTING_ID names the peer of a
ROUTER's next connect: the ROUTER can send to that name at once (before the handshake) and
receives the peer's messages under it; a peer that connected to the ROUTER keeps its own
id. test_stream_2_stream is about STREAM sockets, which zsim does not model: not ported.

Not ported: the unnamed variant of test_connect_rid.cpp:108-111 (a 0-prefixed generated id
at the bound ROUTER): zsim does not generate routing ids; its other assertions run in both
variants (in zsim, an unnamed socket's routing id is its name)."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, recv_now, run, steps

Y_OPENS_S = 0.01  # yconn is made after X has connected to Z (see _while_receiving)


@functools.cache
def _router_2_router(transport: str, named: bool) -> dict[object, object]:
    """test_router_2_router (l.64): rconn1 connects to rbind with CONNECT_ROUTING_ID
    "conn1", sends to "conn1" at once; rbind answers to the id it received."""
    seen: dict[object, object] = {}
    where = endpoint(transport, "rid-router-2-router")
    ids = ({"routing_id": "X"}, {"routing_id": "Y"}) if named else ({}, {})

    def flow(app):
        rbind, rconn1 = app.socket("rbind"), app.socket("rconn1")
        hi = yield rconn1.send(4, envelope=("conn1",))
        got = yield rbind.recv()
        seen["id"], seen["hi"] = got.envelope, got.id == hi
        yield rbind.send(2, envelope=got.envelope)
        got = yield rconn1.recv()
        seen["ok"] = (got.envelope, got.size)

    run(app_scenario({"name": "rbind", "type": "ROUTER", "bind": where, "options": {"linger": 0, **ids[0]}},
                     {"name": "rconn1", "type": "ROUTER", "connect": where,
                  "options": {"linger": 0, "connect_routing_id": "conn1", **ids[1]}}, profile="default"), steps(flow))
    return seen


@ports("test_connect_rid.cpp:108-111", "(named) the bound ROUTER receives the connecting ROUTER's own id \"Y\"", "Y", ("tcp",))
def test_bound_router_receives_the_connectors_own_id(transport):
    assert _router_2_router(transport, True)["id"] == ("Y",)


@ports("test_connect_rid.cpp:115", "then \"hi 1\", sent to \"conn1\" before the connection was made", "hi 1", ("tcp",))
def test_a_message_to_the_connect_routing_id_arrives(transport):
    assert _router_2_router(transport, True)["hi"] is True
    assert _router_2_router(transport, False)["hi"] is True


@ports("test_connect_rid.cpp:123-124", "the connecting ROUTER receives \"conn1\",\"ok\": the reply comes under the name it chose",
       "conn1, ok", ("tcp",))
def test_the_reply_comes_under_the_connect_routing_id(transport):
    assert _router_2_router(transport, True)["ok"] == (("conn1",), 2)
    assert _router_2_router(transport, False)["ok"] == (("conn1",), 2)


@functools.cache
def _while_receiving(transport: str) -> dict[object, object]:
    """test_router_2_router_while_receiving (l.131): Y connects to X naming it "X" and sends
    it a message; X connects to Z naming it "Z" and sends it one. In C, X connects after
    Y's message arrived (SETTLE_TIME); zsim connects a socket's endpoints when it opens, so
    xbind connects to Z at its open, before Y connects: Y's incoming pipe still must not
    take the name."""
    seen: dict[object, object] = {}
    x, z = endpoint(transport, "rid-x"), endpoint(transport, "rid-z")

    def flow(app):
        env, xbind, zbind, yconn = app.env, app.socket("xbind"), app.socket("zbind"), app.socket("yconn")
        yield env.timeout(Y_OPENS_S)
        yield yconn.send(4, envelope=("X",))
        yield env.timeout(SETTLE_S)
        hi = yield xbind.send(4, envelope=("Z",))
        yield env.timeout(SETTLE_S)
        seen["y"] = yield from recv_now(yconn)
        got = yield zbind.recv()
        seen["z"] = (got.envelope, got.id == hi)

    run(app_scenario({"name": "xbind", "type": "ROUTER", "bind": x, "connect": z,
                  "options": {"linger": 0, "routing_id": "X", "connect_routing_id": "Z"}},
                     {"name": "zbind", "type": "ROUTER", "bind": z, "options": {"linger": 0, "routing_id": "Z"}},
                     {"name": "yconn", "type": "ROUTER", "connect": x, "open_at_s": Y_OPENS_S,
                  "options": {"linger": 0, "routing_id": "Y", "connect_routing_id": "X"}}, profile="default"), steps(flow))
    return seen


@ports("test_connect_rid.cpp:190", "Y receives nothing: X's message to \"Z\" is not routed to Y", "EAGAIN", ("tcp",))
def test_a_message_to_z_does_not_reach_y(transport):
    assert _while_receiving(transport)["y"] == "EAGAIN"


@ports("test_connect_rid.cpp:194-195", "Z receives \"X\",\"hi 1\"", "X, hi 1", ("tcp",))
def test_z_receives_it_under_xs_id(transport):
    assert _while_receiving(transport)["z"] == (("X",), True)
