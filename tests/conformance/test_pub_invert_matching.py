"""libzmq tests/test_pub_invert_matching.cpp (inproc), first half: a PUB sends each
message to the SUBs whose subscription prefixes it, at once after the SUBs subscribed
(inproc subscriptions are in the PUB's pipes before its first send). The second half
needs ZMQ_INVERT_MATCHING (docs/validation.md)."""

from __future__ import annotations

from conformance.ported import SETTLE_S, delivered, endpoint, ports, run, scenario


def _prefixes():
    """test_pub_invert_matching.cpp:10: PUB binds, sub1 and sub2 connect; sub1 subscribes
    to "prefix1", sub2 to "p2"; the PUB sends "prefix1" at once, ``msleep
    (SETTLE_TIME)``, then "p2"."""
    where = endpoint("inproc", "soname")
    raw = scenario({"name": "pub", "type": "PUB", "bind": where},
                   {"name": "sub1", "type": "SUB", "connect": where, "options": {"subscribe": "prefix1"}},
                   {"name": "sub2", "type": "SUB", "connect": where, "options": {"subscribe": "p2"}},
                   sends=[{"socket": "pub", "name": "prefix1", "count": 1, "topic": "prefix1", "size_bytes": 0},
                          {"socket": "pub", "name": "p2", "count": 1, "topic": "p2", "size_bytes": 0, "start_s": SETTLE_S}],
                   recvs=[{"socket": "sub1"}, {"socket": "sub2"}], until_s=2 * SETTLE_S)
    got = delivered(run(raw))
    first = min(msg_id for msg_id, *_ in got)
    return [("prefix1" if msg_id == first else "p2", receiver) for msg_id, _, receiver, _ in got]


@ports("test_pub_invert_matching.cpp:38", "sub1 receives \"prefix1\", sent right after it subscribed",
       "received")
def test_sub1_receives_its_prefix(transport):
    assert ("prefix1", "sub1") in _prefixes()


@ports("test_pub_invert_matching.cpp:40", "sub2 (subscribed to \"p2\") gets nothing: EAGAIN", "not delivered")
def test_sub2_does_not_receive_prefix1(transport):
    assert ("prefix1", "sub2") not in _prefixes()


@ports("test_pub_invert_matching.cpp:47", "sub2 receives \"p2\"", "received")
def test_sub2_receives_its_prefix(transport):
    assert ("p2", "sub2") in _prefixes()


@ports("test_pub_invert_matching.cpp:49", "sub1 gets nothing more: EAGAIN", "not delivered")
def test_sub1_does_not_receive_p2(transport):
    assert sorted(_prefixes()) == [("p2", "sub2"), ("prefix1", "sub1")]
