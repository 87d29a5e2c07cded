"""libzmq tests/test_spec_req.cpp (inproc and tcp): ZMTP's REQ: round robin over its
peers in the order they connected, the wire format (a delimiter before the body), and
blocking without peers. (test_req_only_listens_to_current_peer is not run by 4.3.5.)"""

from __future__ import annotations

import zsim
from conformance.ported import SETTLE_S, blocking_and_dontwait_send_without_peers, delivered, endpoint, ports, run, scenario

SERVICES = 5


def _round_robin_out(transport: str):
    """test_spec_req.cpp:10 test_round_robin_out: REQ binds, 5 REPs connect one after the
    other, ``msleep (SETTLE_TIME * 5)``; 5 times: REQ sends "ABC", the next REP receives it
    and replies "DEF", REQ receives it."""
    where = endpoint(transport, "spec_req_rr")
    reps = [{"name": f"rep{i}", "type": "REP", "connect": where} for i in range(SERVICES)]
    raw = scenario({"name": "req", "type": "REQ", "bind": where}, *reps,
                   sends=[{"socket": "req", "count": SERVICES, "size_bytes": 3, "start_s": SERVICES * SETTLE_S}],
                   recvs=[{"socket": f"rep{i}", "reply": True} for i in range(SERVICES)], until_s=2.0)
    return run(raw)


@ports("test_spec_req.cpp:34", "test_round_robin_out: the i-th request goes to the i-th REP to connect",
       "rep0, rep1, rep2, rep3, rep4 in turn", ("inproc", "tcp"))
def test_round_robin_out_in_connect_order(transport):
    got = delivered(_round_robin_out(transport))
    requests = sorted((msg_id, receiver) for msg_id, origin, receiver, _ in got if origin == "req")
    assert [receiver for _, receiver in requests] == [f"rep{i}" for i in range(SERVICES)]


@ports("test_spec_req.cpp:36", "test_round_robin_out: the REQ receives each REP's reply \"DEF\"", "5 replies received",
       ("inproc", "tcp"))
def test_round_robin_out_req_receives_each_reply(transport):
    got = delivered(_round_robin_out(transport), "req")
    assert sorted(origin for _, origin, _, _ in got) == [f"rep{i}" for i in range(SERVICES)]


def _message_format(transport: str) -> dict:
    """test_spec_req.cpp:99 test_req_message_format: REQ binds, ROUTER connects; REQ sends
    the 2-part "ABC", "DEF"; the ROUTER receives [routing id, "", "ABC", "DEF"] and replies
    [routing id, "", "GHI"]; the REQ receives "GHI". zsim carries the parts as one
    message: "ABC" is its first frame (``topic``), "DEF" its payload."""
    where = endpoint(transport, "spec_req_format")
    seen: dict = {}

    def app(app: zsim.App) -> None:
        def router() -> object:
            request = yield app.socket("router").recv()
            seen["request"] = request
            yield app.socket("router").send(3, envelope=request.envelope, delimiter=True)  # id, "", "GHI"

        app.process(router())

    raw = scenario({"name": "req", "type": "REQ", "bind": where},
                   {"name": "router", "type": "ROUTER", "connect": where},
                   sends=[{"socket": "req", "count": 1, "topic": "ABC", "size_bytes": 3, "parts": 2, "start_s": 0.01}],
                   until_s=1.0)
    seen["result"] = run(raw, app)
    return seen


@ports("test_spec_req.cpp:119", "test_req_message_format: the ROUTER's first frame is a non-empty routing id",
       "the REQ's routing id", ("inproc", "tcp"))
def test_req_message_format_routing_id_first(transport):
    request = _message_format(transport)["request"]
    assert request.envelope == ("req",) and len(request.envelope[0]) > 0


@ports("test_spec_req.cpp:128", "test_req_message_format: MORE follows the routing id (the message comes after it)",
       "the body follows the envelope", ("inproc", "tcp"))
def test_req_message_format_more_after_routing_id(transport):
    request = _message_format(transport)["request"]
    assert request.kind == "message" and request.size == 6


@ports("test_spec_req.cpp:131", "test_req_message_format: then \"\" (the REQ's delimiter), \"ABC\", \"DEF\"",
       "delimiter, then first frame \"ABC\", 6 bytes of body", ("inproc", "tcp"))
def test_req_message_format_delimiter_then_body(transport):
    request = _message_format(transport)["request"]
    assert (request.delimiter, request.topic, request.size) == (True, "ABC", 6)


@ports("test_spec_req.cpp:139", "test_req_message_format: the REQ receives the ROUTER's single-part reply \"GHI\"",
       "received", ("inproc", "tcp"))
def test_req_message_format_req_receives_reply(transport):
    got = delivered(_message_format(transport)["result"], "req")
    assert [(origin, size) for _, origin, _, size in got] == [("router", 3)]


@ports("test_spec_req.cpp:156", "test_block_on_send_no_peers: a DONTWAIT send without peers fails with EAGAIN",
       "EAGAIN at once", ("none",))
def test_block_on_send_no_peers_dontwait(transport):
    assert blocking_and_dontwait_send_without_peers("REQ")[0] == ("EAGAIN", 0.0)


@ports("test_spec_req.cpp:157", "test_block_on_send_no_peers: a blocking send without peers fails with EAGAIN after "
       "SNDTIMEO (250 ms)", "EAGAIN after 250 ms", ("none",))
def test_block_on_send_no_peers_blocking(transport):
    assert blocking_and_dontwait_send_without_peers("REQ")[1] == ("EAGAIN", 0.25)
