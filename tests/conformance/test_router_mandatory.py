"""libzmq tests/test_router_mandatory.cpp, test_basic (tcp): a ROUTER drops a message for
an unknown peer silently, or with ROUTER_MANDATORY refuses it with EHOSTUNREACH, and
routes to a peer once it is connected. (test_get_peer_state is draft API.) The C test
turns ROUTER_MANDATORY on between the two sends; here the silent drop uses a ROUTER
without it."""

from __future__ import annotations

import zsim
from conformance.ported import endpoint, fates, ports, run, scenario


@ports("test_router_mandatory.cpp:166", "a send to an unknown peer without ROUTER_MANDATORY succeeds (l.166-167; the "
       "message is dropped)", "sent; dropped as unroutable", ("tcp",))
def test_basic_send_to_unknown_peer_is_silently_dropped(transport):
    where = endpoint("tcp", "router_mandatory_plain")
    outcomes: list = []

    def app(app: zsim.App) -> None:
        def router() -> object:
            outcomes.append((yield app.socket("router").send(4, envelope=("UNKNOWN",))))  # "UNKNOWN", "DATA"

        app.process(router())

    result = run(scenario({"name": "router", "type": "ROUTER", "bind": where}, until_s=0.1), app)
    assert len(outcomes) == 1  # the send returned a message id: no error
    assert fates(result) == [("router", "dropped", "router", "unroutable")]


def _mandatory() -> dict:
    """test_router_mandatory.cpp:158 test_basic with ROUTER_MANDATORY on: send to
    "UNKNOWN"; a DEALER "X" connects and sends "Hello"; the ROUTER receives it and sends
    "X", "Hello"."""
    where = endpoint("tcp", "router_mandatory")
    seen: dict = {}

    def app(app: zsim.App) -> None:
        def router() -> object:
            sock = app.socket("router")
            try:
                yield sock.send(0, envelope=("UNKNOWN",))
                seen["unknown"] = "sent"
            except zsim.HostUnreachable:
                seen["unknown"] = "EHOSTUNREACH"
            hello = yield sock.recv()
            seen["hello"] = hello
            seen["reply"] = (yield sock.send(5, envelope=hello.envelope))

        app.process(router())

    raw = scenario({"name": "router", "type": "ROUTER", "bind": where, "options": {"router_mandatory": True}},
                   {"name": "dealer", "type": "DEALER", "connect": where, "options": {"routing_id": "X"}},
                   sends=[{"socket": "dealer", "count": 1, "size_bytes": 5}], recvs=[{"socket": "dealer"}], until_s=0.5)
    seen["result"] = run(raw, app)
    return seen


@ports("test_router_mandatory.cpp:175", "with ROUTER_MANDATORY a send to an unknown peer fails with EHOSTUNREACH "
       "(l.175-176)", "HostUnreachable", ("tcp",))
def test_basic_mandatory_send_to_unknown_peer_is_ehostunreach(transport):
    assert _mandatory()["unknown"] == "EHOSTUNREACH"


@ports("test_router_mandatory.cpp:185", "the ROUTER receives the DEALER's \"Hello\" under its routing id \"X\"",
       "envelope (\"X\",)", ("tcp",))
def test_basic_router_receives_from_x(transport):
    hello = _mandatory()["hello"]
    assert (hello.envelope, hello.size) == (("X",), 5)


@ports("test_router_mandatory.cpp:189", "a send to the connected \"X\" succeeds (l.189-190)", "sent and delivered",
       ("tcp",))
def test_basic_send_to_connected_peer_succeeds(transport):
    seen = _mandatory()
    assert isinstance(seen["reply"], int)
    assert ("router", "delivered", "dealer", "") in fates(seen["result"])
