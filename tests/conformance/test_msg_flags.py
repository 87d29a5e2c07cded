"""libzmq tests/test_msg_flags.cpp (inproc), test_more: a ROUTER receives a DEALER's
2-part message under the DEALER's routing id. (test_shared_* test the message API.)"""

from __future__ import annotations

from conformance.ported import endpoint, ports, reader, run, scenario


@ports("test_msg_flags.cpp:25", "the routing id comes first (MORE), then \"A\" (MORE), then \"B\" (last) "
       "(l.25-35)", "envelope (the DEALER's id,), first frame \"A\", 2 bytes (one message in zsim)")
def test_more_routing_id_then_body(transport):
    where = endpoint("inproc", "a")
    log: list = []
    raw = scenario({"name": "sb", "type": "ROUTER", "bind": where}, {"name": "sc", "type": "DEALER", "connect": where},
                   sends=[{"socket": "sc", "count": 1, "topic": "A", "size_bytes": 1, "parts": 2}], until_s=1.0)
    run(raw, reader("sb", log))
    assert [(got.envelope, got.topic, got.size) for _, got in log] == [(("sc",), "A", 2)]
