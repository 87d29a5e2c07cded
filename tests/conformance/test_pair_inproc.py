"""libzmq tests/test_pair_inproc.cpp: PAIR over inproc: a round trip, and a 2-part
message received in order (test_zmq_send_const: ``zmq_send_const`` itself is API)."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports, reader, run, scenario

SB = {"name": "sb", "type": "PAIR", "bind": endpoint("inproc", "a")}
SC = {"name": "sc", "type": "PAIR", "connect": endpoint("inproc", "a")}


@ports("test_pair_inproc.cpp:32", "test_roundtrip: bounce", "round trip")
def test_roundtrip_bounce(transport):
    assert bounced(SB, SC) == ROUND_TRIP


@ports("test_pair_inproc.cpp:43", "test_zmq_send_const: sb sends \"foo\" (MORE), \"foobar\"; sc receives \"foo\", then "
       "\"foobar\" (l.43-44)", "one message: first frame \"foo\", 9 bytes", ("inproc",))
def test_zmq_send_const_frames_in_order(transport):
    log: list = []
    raw = scenario(SB, SC, sends=[{"socket": "sb", "count": 1, "topic": "foo", "size_bytes": 6, "parts": 2}], until_s=1.0)
    run(raw, reader("sc", log))
    assert [(got.topic, got.size) for _, got in log] == [("foo", 9)]
