"""libzmq tests/test_reqrep_ipc.cpp: REQ/REP over ipc: a round trip, and a reply sent
after the REQ has gone (test_leak)."""

from __future__ import annotations

from conformance.ported import ROUND_TRIP, SETTLE_S, bounced, endpoint, fates, ports, run, scenario


@ports("test_reqrep_ipc.cpp:45", "test_simple: bounce over ipc", "round trip", ("ipc",))
def test_simple_bounce(transport):
    where = endpoint(transport, "reqrep_ipc")
    assert bounced({"name": "sb", "type": "REP", "bind": where}, {"name": "sc", "type": "REQ", "connect": where}) == ROUND_TRIP


def _leak():
    """test_reqrep_ipc.cpp:10 test_leak: REP binds, REQ connects and sends "leakymsg"; the
    REP reads it; the REQ is closed; ``msleep (SETTLE_TIME)``; the REP sends its reply."""
    where = endpoint("ipc", "reqrep_ipc_leak")
    raw = scenario({"name": "sb", "type": "REP", "bind": where},
                   {"name": "sc", "type": "REQ", "connect": where, "close_at_s": 0.01},
                   sends=[{"socket": "sc", "count": 1, "size_bytes": 8}],
                   recvs=[{"socket": "sb", "service_s": 0.01 + SETTLE_S, "reply": True}], until_s=1.0)
    return run(raw)


@ports("test_reqrep_ipc.cpp:21", "test_leak: the REQ's send of \"leakymsg\" succeeds", "sent, and read by the REP",
       ("ipc",))
def test_leak_request_sent(transport):
    result = _leak()
    assert result.summary["senders"]["send.sc"]["sent"] == 1
    assert ("sc", "delivered", "sb", "") in fates(result)


@ports("test_reqrep_ipc.cpp:30", "test_leak: the REP's reply after the REQ closed is sent (and dropped)",
       "sent; dropped, no peer", ("ipc",))
def test_leak_reply_after_req_closed(transport):
    result = _leak()
    assert result.summary["sockets"]["sb"]["sent"] == 1
    assert ("sb", "dropped", "sb", "no_peer") in fates(result)
