"""libzmq tests/test_reconnect_ivl.cpp (ipc, tcp; the IPv6 run is tcp again to zsim): a
PAIR with RECONNECT_IVL -1 connected to a bound PAIR bounces. What follows (unbind, bind
again, connect again) waits for ``unbind`` and binds/connects at a time
(docs/validation.md)."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports


@ports("test_reconnect_ivl.cpp:17", "test_reconnect_ivl_against_pair_socket: the first bounce works", "round trip",
       ("ipc", "tcp"))
def test_reconnect_ivl_against_pair_socket_bounce(transport):
    where = endpoint(transport, "reconnect_ivl")
    assert bounced({"name": "sb", "type": "PAIR", "bind": where},
                   {"name": "sc", "type": "PAIR", "connect": where, "options": {"reconnect_ivl": -1}}) == ROUND_TRIP
