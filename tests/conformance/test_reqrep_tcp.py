"""libzmq tests/test_reqrep_tcp.cpp (tcp; the IPv6 runs are tcp again to zsim): REQ/REP
round trips, and a REQ connected to several REPs round-robins in connect order."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, bounced, delivered, endpoint, ports, run, scenario


@ports("test_reqrep_tcp.cpp:23", "test_single_connect: bounce", "round trip", ("tcp",))
def test_single_connect_bounce(transport):
    where = endpoint(transport, "reqrep_tcp")
    assert bounced({"name": "sb", "type": "REP", "bind": where}, {"name": "sc", "type": "REQ", "connect": where}) == ROUND_TRIP


@ports("test_reqrep_tcp.cpp:75", "test_multi_connect: a REQ connected to sb0, sb1, sb2 bounces with sb0, sb1, sb2, "
       "sb0, sb1, sb2, sb0 (l.75-81)", "requests to sb0, sb1, sb2, sb0, sb1, sb2, sb0; 7 replies", ("tcp",))
def test_multi_connect_round_robin_in_connect_order(transport):
    """test_reqrep_tcp.cpp:50: three REPs bind; the REQ connects to sb0, sb1, then sb2
    (the C test names a source port for sb2, ``127.0.0.1:5564;...``, which zsim does not
    parse; the connect is plain); seven bounces."""
    ends = [endpoint(transport, f"multi_connect{i}") for i in range(3)]
    raw = scenario(*({"name": f"sb{i}", "type": "REP", "bind": ends[i]} for i in range(3)),
                   {"name": "sc", "type": "REQ", "connect": ends},
                   sends=[{"socket": "sc", "count": 7, "size_bytes": 64, "parts": 2}],
                   recvs=[{"socket": f"sb{i}", "reply": True} for i in range(3)], until_s=1.0)
    got = delivered(run(raw))
    requests = sorted((msg_id, receiver) for msg_id, origin, receiver, _ in got if origin == "sc")
    assert [receiver for _, receiver in requests] == ["sb0", "sb1", "sb2", "sb0", "sb1", "sb2", "sb0"]
    assert len([1 for _, _, receiver, _ in got if receiver == "sc"]) == 7


@ports("test_reqrep_tcp.cpp:131", "test_multi_connect_same_port: two REQs, each connected to sb0 then sb1, bounce "
       "with sb0, sb1, (sc1:) sb0, sb1, (sc0:) sb0, sb1 (l.131-136)", "each REQ alternates sb0, sb1", ("tcp",))
def test_multi_connect_same_port_each_req_round_robins(transport):
    """test_reqrep_tcp.cpp:99: two REPs bind; sc0 and sc1 each connect to sb0 then sb1
    from fixed source ports (``tcp://127.0.0.1:5564;...``: zsim does not parse the source
    part; plain connects in the same order). sc0 makes 4 round trips, sc1 2."""
    ends = [endpoint(transport, f"same_port{i}") for i in range(2)]
    raw = scenario(*({"name": f"sb{i}", "type": "REP", "bind": ends[i]} for i in range(2)),
                   {"name": "sc0", "type": "REQ", "connect": ends}, {"name": "sc1", "type": "REQ", "connect": ends},
                   sends=[{"socket": "sc0", "count": 4, "size_bytes": 64, "parts": 2},
                          {"socket": "sc1", "count": 2, "size_bytes": 64, "parts": 2}],
                   recvs=[{"socket": f"sb{i}", "reply": True} for i in range(2)], until_s=1.0)
    got = sorted(delivered(run(raw)))
    for client, count in (("sc0", 4), ("sc1", 2)):
        assert [receiver for _, origin, receiver, _ in got if origin == client] == ["sb0", "sb1"] * (count // 2)
        assert len([1 for _, _, receiver, _ in got if receiver == client]) == count
