"""libzmq tests/test_pair_tcp.cpp: PAIR over tcp, connecting by address and by name.
(The fast-path variant is draft API; the I/O completion port test is Windows only.)"""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports


@ports("test_pair_tcp.cpp:42", "test_pair_tcp_regular: bounce", "round trip", ("tcp",))
def test_pair_tcp_regular_bounce(transport):
    where = endpoint(transport, "pair_tcp")
    assert bounced({"name": "sb", "type": "PAIR", "bind": where}, {"name": "sc", "type": "PAIR", "connect": where}) == ROUND_TRIP


@ports("test_pair_tcp.cpp:76", "test_pair_tcp_connect_by_name: bounce after connecting to tcp://localhost:port",
       "round trip", ("tcp",))
def test_pair_tcp_connect_by_name_bounce(transport):
    where = endpoint(transport, "pair_tcp_by_name")
    by_name = where.replace("127.0.0.1", "localhost")
    assert bounced({"name": "sb", "type": "PAIR", "bind": where}, {"name": "sc", "type": "PAIR", "connect": by_name}) == ROUND_TRIP
