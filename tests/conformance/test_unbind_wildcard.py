"""libzmq tests/test_unbind_wildcard.cpp (tcp): a REP bound on a wildcard address bounces
with a REQ connected to it (the unbind/disconnect that follow are API return codes; the
IPv6 twins, l.78, l.134, l.168, are the same round trip to zsim). zsim needs a port number
where libzmq takes ``*``: each test binds a fixed port."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, endpoint, ports


@ports("test_unbind_wildcard.cpp:34", "test_address_wildcard_ipv4: bounce with a REP bound on tcp://*:port",
       "round trip", ("tcp",))
def test_address_wildcard_ipv4_bounce(transport):
    where = endpoint(transport, "unbind_wildcard_address")
    wildcard = "tcp://*:" + where.rsplit(":", 1)[1]
    assert bounced({"name": "sb", "type": "REP", "bind": wildcard}, {"name": "sc", "type": "REQ", "connect": where}) == ROUND_TRIP


@ports("test_unbind_wildcard.cpp:103", "test_port_wildcard_ipv4_address: bounce with a REP bound on "
       "tcp://127.0.0.1:port", "round trip", ("tcp",))
def test_port_wildcard_ipv4_address_bounce(transport):
    where = endpoint(transport, "unbind_wildcard_port")
    assert bounced({"name": "sb", "type": "REP", "bind": where}, {"name": "sc", "type": "REQ", "connect": where}) == ROUND_TRIP
