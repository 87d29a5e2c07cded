"""libzmq tests/test_spec_router.cpp (tcp and inproc): ZMTP's ROUTER fair-queues its
peers' messages and prefixes each with the peer's routing id. (test_destroy_queue_on_
disconnect is not run by 4.3.5.)"""

from __future__ import annotations

from conformance.ported import SETTLE_S, endpoint, ports, reader, run, scenario

TRANSPORTS = ("tcp", "inproc")
IDS = [chr(ord("A") + peer) + "\0" for peer in range(5)]  # test_spec_router.cpp:27-30: "A".."E" with the NUL: 2 bytes


def _fair_queue_in(transport: str):
    """test_spec_router.cpp:13 test_fair_queue_in: ROUTER binds; 5 DEALERs with routing ids
    "A".."E" connect; ``msleep (SETTLE_TIME)``; senders[0] sends "M", the ROUTER receives
    ["A", "M"]; again; then each sender sends "M" and the ROUTER receives 5."""
    where = endpoint(transport, "spec_router_fq")
    senders = [{"name": f"sender{p}", "type": "DEALER", "connect": where, "options": {"routing_id": IDS[p]}}
               for p in range(5)]
    raw = scenario({"name": "receiver", "type": "ROUTER", "bind": where}, *senders,
                   sends=[{"socket": "sender0", "name": "first", "count": 1, "size_bytes": 1, "start_s": SETTLE_S},
                          {"socket": "sender0", "name": "second", "count": 1, "size_bytes": 1, "start_s": SETTLE_S + 0.01},
                          *({"socket": f"sender{p}", "name": f"n{p}", "count": 1, "size_bytes": 1, "start_s": SETTLE_S + 0.02}
                            for p in range(5))],
                   until_s=1.0)
    log: list = []
    run(raw, reader("receiver", log))
    return [got for _, got in log]


@ports("test_spec_router.cpp:43", "test_fair_queue_in: the ROUTER receives [\"A\", \"M\"] from senders[0]",
       "envelope (\"A\",), 1-byte body", TRANSPORTS)
def test_fair_queue_in_first_message_with_id(transport):
    first = _fair_queue_in(transport)[0]
    assert (first.envelope, first.size) == ((IDS[0],), 1)


@ports("test_spec_router.cpp:46", "test_fair_queue_in: again [\"A\", \"M\"]", "envelope (\"A\",), 1-byte body",
       TRANSPORTS)
def test_fair_queue_in_second_message_with_id(transport):
    second = _fair_queue_in(transport)[1]
    assert (second.envelope, second.size) == ((IDS[0],), 1)


@ports("test_spec_router.cpp:61", "test_fair_queue_in: each routing-id frame is 2 bytes (the id as set)",
       "the 2-byte ids \"A\\0\"..\"E\\0\"", TRANSPORTS)
def test_fair_queue_in_routing_ids_as_set(transport):
    got = _fair_queue_in(transport)[2:]
    assert all(len(m.envelope) == 1 and len(m.envelope[0].encode()) == 2 for m in got)


@ports("test_spec_router.cpp:68", "test_fair_queue_in: the ids of the 5 messages sum to those sent: one from each "
       "sender", "one message from each of A..E", TRANSPORTS)
def test_fair_queue_in_one_message_from_each_peer(transport):
    got = _fair_queue_in(transport)
    assert len(got) == 7
    assert sorted(m.envelope[0] for m in got[2:]) == IDS
