"""libzmq tests/test_hwm.cpp: how many DONTWAIT sends a PUSH -> PULL pair over inproc takes
before EAGAIN, with bind or connect first. An inproc pipe holds SNDHWM + RCVHWM messages
(0 on either side: unlimited; ``ctx_t::connect_inproc_sockets`` sums them), the connector
alone before anyone binds. ``profile = "ideal"``: the C loop sends faster than any reader,
and inproc has no I/O thread to drain the pipe meanwhile, so the counts do not depend on
time; the profile only keeps the runs to one instant."""

from __future__ import annotations

import pytest

from conformance.ported import SETTLE_S, dontwait_sends, drain, endpoint, ports, run, scenario

MAX_SENDS = 10000  # test_hwm.cpp:8


def count_msg(transport: str, sndhwm: int, rcvhwm: int, connect_first: bool):
    """test_hwm.cpp:49 ``count_msg``: send DONTWAIT until EAGAIN, receive DONTWAIT until
    EAGAIN, then one more blocking send and one blocking recv. Bind first: PULL binds,
    PUSH connects, ``msleep (SETTLE_TIME)``; connect first: PUSH connects, then PULL binds
    (the PUSH opens 1 ms before it)."""
    a = endpoint(transport, "a")
    pull = {"name": "pull", "type": "PULL", "bind": a, "options": {"rcvhwm": rcvhwm, "rcvtimeo": 0},
            "open_at_s": 0.001 if connect_first else 0.0}
    push = {"name": "push", "type": "PUSH", "connect": a, "options": {"sndhwm": sndhwm}}
    start = 0.002 if connect_first else SETTLE_S
    raw = scenario(pull, push, profile="ideal", until_s=start + 1,
                   sends=[dontwait_sends("push", MAX_SENDS, start_s=start),
                          {"socket": "push", "count": 1, "size_bytes": 0, "start_s": start + 0.5}],
                   recvs=[drain("pull", start + 0.1), {"socket": "pull", "count": 1, "start_s": start + 0.6}])
    result = run(raw)
    senders, receivers = result.summary["senders"], result.summary["receivers"]
    return senders["send.push.0"], senders["send.push.1"], receivers["recv.pull.0"], receivers["recv.pull.1"]


#: the eight callers of count_msg (test_hwm.cpp:192-239): (SNDHWM, RCVHWM, connect first, count)
CALLERS = [
    pytest.param(0, 0, False, MAX_SENDS, id="infinite_both_bind_first"),
    pytest.param(0, 0, True, MAX_SENDS, id="infinite_both_connect_first"),
    pytest.param(1, 0, False, MAX_SENDS, id="infinite_receive_bind_first"),
    pytest.param(1, 0, True, MAX_SENDS, id="infinite_receive_connect_first"),
    pytest.param(0, 1, False, MAX_SENDS, id="infinite_send_bind_first"),
    pytest.param(0, 1, True, MAX_SENDS, id="infinite_send_connect_first"),
    pytest.param(1, 1, False, 2, id="finite_both_bind_first"),
    pytest.param(1, 1, True, 2, id="finite_both_connect_first"),
]


def _defaults():
    """test_hwm.cpp:16 test_defaults: PULL binds, PUSH connects, default HWMs (1000)."""
    a = endpoint("inproc", "a")
    raw = scenario({"name": "pull", "type": "PULL", "bind": a, "options": {"rcvtimeo": 0}},
                   {"name": "push", "type": "PUSH", "connect": a},
                   sends=[dontwait_sends("push", MAX_SENDS)], recvs=[drain("pull", SETTLE_S)], profile="ideal")
    result = run(raw)
    return result.summary["senders"]["send.push"], result.summary["receivers"]["recv.pull"]


@ports("test_hwm.cpp:39", "test_defaults: every message sent before EAGAIN is received", "2000 sent, 2000 received")
def test_defaults_receives_every_message_sent(transport):
    sender, receiver = _defaults()
    assert receiver["received"] == sender["sent"] == 2000


@ports("test_hwm.cpp:46", "test_defaults: 2000 DONTWAIT sends succeed (SNDHWM 1000 + RCVHWM 1000)", "2000 sent, then EAGAIN")
def test_defaults_send_count_is_sndhwm_plus_rcvhwm(transport):
    sender, _ = _defaults()
    assert (sender["sent"], sender["again"]) == (2000, 1)


@ports("test_hwm.cpp:94", "count_msg: recv_count == send_count for all 8 HWM/bind-order cases", "equal in all 8 cases")
@pytest.mark.parametrize(("sndhwm", "rcvhwm", "connect_first", "count"), CALLERS)
def test_count_msg_receives_every_message_sent(transport, sndhwm, rcvhwm, connect_first, count):
    sent, _, received, _ = count_msg(transport, sndhwm, rcvhwm, connect_first)
    assert received["received"] == sent["sent"]


@ports("test_hwm.cpp:97", "count_msg: after draining, one more blocking send succeeds", "sent in all 8 cases")
@pytest.mark.parametrize(("sndhwm", "rcvhwm", "connect_first", "count"), CALLERS)
def test_count_msg_one_more_send_after_draining(transport, sndhwm, rcvhwm, connect_first, count):
    _, one_more, _, _ = count_msg(transport, sndhwm, rcvhwm, connect_first)
    assert (one_more["sent"], one_more["again"], one_more["blocked_s"]) == (1, 0, 0.0)


@ports("test_hwm.cpp:100", "count_msg: that last message is received", "received in all 8 cases")
@pytest.mark.parametrize(("sndhwm", "rcvhwm", "connect_first", "count"), CALLERS)
def test_count_msg_last_message_received(transport, sndhwm, rcvhwm, connect_first, count):
    sent, one_more, _, last = count_msg(transport, sndhwm, rcvhwm, connect_first)
    assert last["received"] == 1


def _count(transport, sndhwm, rcvhwm, connect_first):
    sent, *_ = count_msg(transport, sndhwm, rcvhwm, connect_first)
    return sent["sent"], sent["again"]


@ports("test_hwm.cpp:195", "test_infinite_both_inproc_bind_first: HWMs 0/0, bind first: 10000 sends (unlimited)",
       "10000 sent, none refused")
def test_infinite_both_inproc_bind_first(transport):
    assert _count(transport, 0, 0, False) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:201", "test_infinite_both_inproc_connect_first: HWMs 0/0, connect first: 10000 sends",
       "10000 sent, none refused")
def test_infinite_both_inproc_connect_first(transport):
    assert _count(transport, 0, 0, True) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:207", "test_infinite_receive_inproc_bind_first: SNDHWM 1, RCVHWM 0: 10000 sends (0 makes the sum "
       "unlimited)", "10000 sent, none refused")
def test_infinite_receive_inproc_bind_first(transport):
    assert _count(transport, 1, 0, False) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:213", "test_infinite_receive_inproc_connect_first: SNDHWM 1, RCVHWM 0, connect first: 10000 sends",
       "10000 sent, none refused")
def test_infinite_receive_inproc_connect_first(transport):
    assert _count(transport, 1, 0, True) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:219", "test_infinite_send_inproc_bind_first: SNDHWM 0, RCVHWM 1: 10000 sends",
       "10000 sent, none refused")
def test_infinite_send_inproc_bind_first(transport):
    assert _count(transport, 0, 1, False) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:225", "test_infinite_send_inproc_connect_first: SNDHWM 0, RCVHWM 1, connect first: 10000 sends",
       "10000 sent, none refused")
def test_infinite_send_inproc_connect_first(transport):
    assert _count(transport, 0, 1, True) == (MAX_SENDS, 0)


@ports("test_hwm.cpp:232", "test_finite_both_bind_first: HWMs 1/1, bind first: 2 sends", "2 sent, then EAGAIN")
def test_finite_both_bind_first(transport):
    assert _count(transport, 1, 1, False) == (2, 1)


@ports("test_hwm.cpp:238", "test_finite_both_connect_first: HWMs 1/1, connect first: 2 sends", "2 sent, then EAGAIN")
def test_finite_both_connect_first(transport):
    assert _count(transport, 1, 1, True) == (2, 1)


def _connect_and_close_first(transport):
    """test_hwm.cpp:119 test_inproc_connect_and_close_first (SNDHWM 1, RCVHWM 0): PUSH
    connects to ``inproc://a``, which nobody binds, sends DONTWAIT until EAGAIN and closes;
    then a PULL binds and receives DONTWAIT until EAGAIN. The context keeps the closed
    connector's pending connection and its messages (``ctx_t::pend_connection``; the bind
    attaches it: ``ctx_t::connect_inproc_sockets``)."""
    a = endpoint(transport, "a")
    raw = scenario({"name": "pull", "type": "PULL", "bind": a, "options": {"rcvhwm": 0, "rcvtimeo": 0}, "open_at_s": 0.002},
                   {"name": "push", "type": "PUSH", "connect": a, "options": {"sndhwm": 1}, "close_at_s": 0.001},
                   sends=[dontwait_sends("push", MAX_SENDS)], recvs=[drain("pull", 0.003)], profile="ideal", until_s=1.0)
    result = run(raw)
    return result.summary["senders"]["send.push"], result.summary["receivers"]["recv.pull"]


@ports("test_hwm.cpp:147", "test_infinite_recv_connect_and_close_first: the PULL that binds after the connector closed "
       "receives every message it sent", "1 sent, 1 received")
def test_infinite_recv_connect_and_close_first_receives_what_was_sent(transport):
    sender, receiver = _connect_and_close_first(transport)
    assert receiver["received"] == sender["sent"] == 1


@ports("test_hwm.cpp:245", "test_infinite_recv_connect_and_close_first: SNDHWM 1 before anyone binds: 1 send (the "
       "connector's HWM alone)", "1 sent, then EAGAIN")
def test_infinite_recv_connect_and_close_first_send_count(transport):
    sender, _ = _connect_and_close_first(transport)
    assert (sender["sent"], sender["again"]) == (1, 1)
