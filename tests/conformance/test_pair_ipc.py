"""libzmq tests/test_pair_ipc.cpp: PAIR over ipc. (An over-long path, l.39, is refused
when zsim loads the scenario.)"""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports


@ports("test_pair_ipc.cpp:20", "test_roundtrip: bounce over ipc", "round trip", ("ipc",))
def test_roundtrip_bounce(transport):
    where = endpoint(transport, "pair_ipc")
    assert bounced({"name": "sb", "type": "PAIR", "bind": where}, {"name": "sc", "type": "PAIR", "connect": where}) == ROUND_TRIP
