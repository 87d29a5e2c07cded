"""libzmq tests/test_conflate.cpp (tcp): a PULL with CONFLATE keeps only the last message."""

from __future__ import annotations

from conformance.ported import SETTLE_S, delivered, endpoint, ports, run, scenario


def _conflate():
    """test_conflate.cpp:8: PULL (CONFLATE) binds, PUSH connects and sends the ints 0..19
    blocking, ``msleep (SETTLE_TIME)``, one recv."""
    where = endpoint("tcp", "conflate")
    raw = scenario({"name": "s_in", "type": "PULL", "bind": where, "options": {"conflate": True}},
                   {"name": "s_out", "type": "PUSH", "connect": where},
                   sends=[{"socket": "s_out", "count": 20, "size_bytes": 4}],
                   recvs=[{"socket": "s_in", "count": 1, "start_s": SETTLE_S}], until_s=1.0)
    return run(raw)


@ports("test_conflate.cpp:35", "the recv after 20 sends returns a message", "1 message received", ("tcp",))
def test_conflate_a_message_is_received(transport):
    got = delivered(_conflate(), "s_in")
    assert len(got) == 1 and got[0][3] == 4


@ports("test_conflate.cpp:36", "the message received is the last one sent (19)", "the 20th message; the other 19 "
       "conflated", ("tcp",))
def test_conflate_only_the_last_message_is_kept(transport):
    result = _conflate()
    frame = result.messages_frame()
    last_sent = int(frame.msg_id.max())
    assert [msg_id for msg_id, *_ in delivered(result, "s_in")] == [last_sent]
    assert result.summary["ledger"]["discarded_by_rule"] | result.summary["ledger"]["dropped_by_rule"] == {"conflated": 19}
