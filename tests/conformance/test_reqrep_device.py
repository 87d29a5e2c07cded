"""libzmq tests/test_reqrep_device.cpp (tcp): a hand-written device between a ROUTER and a
DEALER moves a REQ's request to a REP and the reply back, frames intact. The device is an
app that passes each message on ``like=`` the one it received (envelope and delimiter
kept), as the C test's loop passes the four frames with their MORE flags."""

from __future__ import annotations

import zsim
from conformance.ported import endpoint, ports, run, scenario


def _device() -> dict:
    """test_reqrep_device.cpp:8: DEALER binds endpoint1, ROUTER binds endpoint2; a REP
    connects to endpoint1, a REQ to endpoint2; the REQ sends ["ABC", "DEF"]; the device
    moves it ROUTER -> DEALER; the REP receives it and replies ["GHI", "JKL"]; the device
    moves it DEALER -> ROUTER; the REQ receives it."""
    endpoint1, endpoint2 = endpoint("tcp", "reqrep_device1"), endpoint("tcp", "reqrep_device2")
    seen: dict = {}

    def app(app: zsim.App) -> None:
        dealer, router = app.socket("dealer"), app.socket("router")
        req, rep = app.socket("req"), app.socket("rep")

        def client() -> object:
            yield app.env.timeout(0.01)
            yield req.send(3, topic="ABC", parts=2)
            seen["req"] = yield req.recv()

        def device() -> object:
            request = yield router.recv()
            seen["router"] = request
            yield dealer.send(like=request)
            reply = yield dealer.recv()
            seen["dealer"] = reply
            yield router.send(like=reply)

        def worker() -> object:
            request = yield rep.recv()
            seen["rep"] = request
            yield rep.send(3, topic="GHI", parts=2)

        for process in (client(), device(), worker()):
            app.process(process)

    raw = scenario({"name": "dealer", "type": "DEALER", "bind": endpoint1},
                   {"name": "router", "type": "ROUTER", "bind": endpoint2},
                   {"name": "rep", "type": "REP", "connect": endpoint1},
                   {"name": "req", "type": "REQ", "connect": endpoint2}, until_s=1.0)
    run(raw, app)
    return seen


@ports("test_reqrep_device.cpp:36", "the ROUTER yields 4 frames: routing id, \"\", \"ABC\", \"DEF\" (l.33-43)",
       "envelope (REQ's id,), delimiter, first frame \"ABC\", 6 bytes", ("tcp",))
def test_roundtrip_router_yields_envelope_and_request(transport):
    request = _device()["router"]
    assert (request.envelope, request.delimiter, request.topic, request.size) == (("req",), True, "ABC", 6)


@ports("test_reqrep_device.cpp:46", "the REP receives \"ABC\" (MORE), then \"DEF\" (last) (l.46-55)",
       "first frame \"ABC\", 6 bytes, no envelope", ("tcp",))
def test_roundtrip_rep_receives_request_intact(transport):
    request = _device()["rep"]
    assert (request.envelope, request.delimiter, request.topic, request.size) == ((), False, "ABC", 6)


@ports("test_reqrep_device.cpp:75", "the REQ receives \"GHI\" (MORE), then \"JKL\" (last) (l.75-82)",
       "first frame \"GHI\", 6 bytes", ("tcp",))
def test_roundtrip_req_receives_reply_intact(transport):
    seen = _device()
    assert (seen["dealer"].envelope, seen["dealer"].delimiter) == (("req",), True)  # the device got the route back
    reply = seen["req"]
    assert (reply.topic, reply.size) == ("GHI", 6)
