"""libzmq tests/test_reqrep_inproc.cpp: REQ/REP round trip over inproc."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports


@ports("test_reqrep_inproc.cpp:16", "test_roundtrip: bounce (REP bound, REQ connected): the 2-part request and reply "
       "pass", "round trip")
def test_roundtrip_bounce(transport):
    where = endpoint(transport, "a")
    assert bounced({"name": "sb", "type": "REP", "bind": where}, {"name": "sc", "type": "REQ", "connect": where}) == ROUND_TRIP
