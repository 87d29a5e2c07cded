"""libzmq tests/test_req_correlate.cpp (tcp): a REQ with ZMQ_REQ_CORRELATE puts a 4-byte
request id in front of its request (after the routing id a ROUTER adds) and skips a reply
that does not carry it."""

from __future__ import annotations

import functools

from conformance.ported import app_scenario, endpoint, ports, run, steps
from zsim.model.pipe import BOTTOM


@functools.cache
def _correlate(transport: str) -> dict[object, object]:
    """test_req_correlate (l.8): the REQ sends "ABC","DEF"; the ROUTER replies first with a
    wrong request id and "DATA", then with the right one and "GHI"."""
    seen: dict[object, object] = {}
    where = endpoint(transport, "correlate")

    def flow(app):
        req, router = app.socket("req"), app.socket("router")
        yield req.send(3, topic="ABC", parts=2)
        got = yield router.recv()
        seen["request"] = got
        peer, request_id = got.envelope
        yield router.send(4, envelope=(peer, (request_id + 1) & 0xFFFFFFFF), delimiter=True)  # "DATA" with a bad id
        yield router.send(3, envelope=(peer, request_id), delimiter=True)  # "GHI"
        seen["reply"] = (yield req.recv()).size

    run(app_scenario({"name": "router", "type": "ROUTER", "bind": where, "options": {"linger": 0}},
                     {"name": "req", "type": "REQ", "connect": where, "options": {"linger": 0, "req_correlate": True}},
                     profile="default"), steps(flow))
    return seen


@ports("test_req_correlate.cpp:30", "the ROUTER's first frame is the peer's routing id, with MORE", "req's routing id", ("tcp",))
def test_first_frame_is_the_routing_id(transport):
    assert _correlate(transport)["request"].envelope[0] == "req"


@ports("test_req_correlate.cpp:43", "the second frame is a 4-byte request id, with MORE", "a uint32", ("tcp",))
def test_second_frame_is_the_request_id(transport):
    request_id = _correlate(transport)["request"].envelope[1]
    assert isinstance(request_id, int) and 0 <= request_id < 2**32


@ports("test_req_correlate.cpp:56", "then \"\", \"ABC\", \"DEF\"", "the empty delimiter, then the request", ("tcp",))
def test_then_the_delimiter_and_the_body(transport):
    request = _correlate(transport)["request"]
    assert (request.delimiter, request.topic, request.size) == (True, "ABC", 6)
    assert BOTTOM not in request.envelope


@ports("test_req_correlate.cpp:76", "the REQ receives \"GHI\": the reply with the wrong request id is skipped", "GHI", ("tcp",))
def test_the_reply_with_the_wrong_id_is_skipped(transport):
    assert _correlate(transport)["reply"] == 3
