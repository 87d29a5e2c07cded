"""libzmq tests/test_sockopt_hwm.cpp (inproc): HWMs set before the pipe exists, SNDHWM
raised on a connected socket (its pipe takes it: ``socket_base_t::update_pipe_options``),
and lowered while the pipe is full (nothing is dropped; the next fill stops at the new
HWM). The ``zmq_setsockopt`` calls on the running socket are ``[[call]]``s.
``profile = "ideal"``: C loops, and inproc has no I/O thread, so the counts do not depend
on time."""

from __future__ import annotations

from conformance.ported import SETTLE_S, delivered, dontwait_sends, drain, endpoint, ports, run, scenario

MAX_SENDS = 10000  # test_sockopt_hwm.cpp:8


@ports("test_sockopt_hwm.cpp:37", "test_change_before_connected: PULL (RCVHWM 2) connects, PUSH (SNDHWM 2) binds: the "
       "bind side sends 4 DONTWAIT", "4 sent, then EAGAIN")
def test_change_before_connected_send_count(transport):
    a = endpoint(transport, "a")
    raw = scenario({"name": "push", "type": "PUSH", "bind": a, "options": {"sndhwm": 2}, "open_at_s": 0.001},
                   {"name": "pull", "type": "PULL", "connect": a, "options": {"rcvhwm": 2}},
                   sends=[dontwait_sends("push", MAX_SENDS, start_s=0.002)], profile="ideal")
    sender = run(raw).summary["senders"]["send.push"]
    assert (sender["sent"], sender["again"]) == (4, 1)


@ports("test_sockopt_hwm.cpp:74", "test_change_after_connected: PULL (RCVHWM 1) connects, PUSH (SNDHWM 1) binds, then "
       "SNDHWM 5 on the PUSH: 6 DONTWAIT sends (the new SNDHWM + RCVHWM, on the live pipe)", "6 sent, then EAGAIN")
def test_change_after_connected_send_count(transport):
    """test_sockopt_hwm.cpp:43: each call 1 ms after the previous one; the zmq_bind
    attaches the pipe the earlier connect left pending (ctx_t::connect_inproc_sockets), so
    the setsockopt finds it attached."""
    a = endpoint(transport, "a")
    raw = scenario({"name": "push", "type": "PUSH", "bind": a, "options": {"sndhwm": 1}, "open_at_s": 0.001},
                   {"name": "pull", "type": "PULL", "connect": a, "options": {"rcvhwm": 1}},
                   calls=[{"socket": "push", "at_s": 0.002, "set": {"sndhwm": 5}}],
                   sends=[dontwait_sends("push", MAX_SENDS, start_s=0.003)], profile="ideal")
    sender = run(raw).summary["senders"]["send.push"]
    assert (sender["sent"], sender["again"]) == (6, 1)


FILL_S = SETTLE_S  # test_sockopt_hwm.cpp:121: after msleep (SETTLE_TIME)
LOWER_S = FILL_S + 0.01  # l.126: SNDHWM 70, right after the fill
READ_S = LOWER_S + SETTLE_S  # l.137: after msleep (SETTLE_TIME)
REFILL_S = READ_S + SETTLE_S  # l.152: after msleep (SETTLE_TIME)


def _decrease_when_full():
    """test_sockopt_hwm.cpp:100 test_decrease_when_full: PUSH (SNDHWM 100) binds, PULL
    (RCVHWM 1) connects, ``msleep (SETTLE_TIME)``, fill DONTWAIT with the sequence numbers
    0, 1, ... until EAGAIN (l.80); SNDHWM 70 on the full PUSH (a ``[[call]]``); settle; read
    DONTWAIT until EAGAIN; settle; fill again."""
    a = endpoint(transport="inproc", name="a")
    raw = scenario({"name": "push", "type": "PUSH", "bind": a, "options": {"sndhwm": 100}},
                   {"name": "pull", "type": "PULL", "connect": a, "options": {"rcvhwm": 1, "rcvtimeo": 0}},
                   calls=[{"socket": "push", "at_s": LOWER_S, "set": {"sndhwm": 70}}],
                   sends=[dontwait_sends("push", MAX_SENDS, name="fill", size_bytes=4, start_s=FILL_S),
                          dontwait_sends("push", MAX_SENDS, name="refill", size_bytes=4, start_s=REFILL_S)],
                   recvs=[drain("pull", READ_S, count=MAX_SENDS)], profile="ideal", until_s=REFILL_S + 0.1)
    return run(raw)


@ports("test_sockopt_hwm.cpp:95", "test_decrease_when_full (l.123): the first fill sends more than SNDHWM/10 and at "
       "most SNDHWM + 1 (10 < n <= 101)", "101 sent (SNDHWM 100 + RCVHWM 1)")
def test_decrease_when_full_first_fill_bounded_by_sndhwm(transport):
    sender = _decrease_when_full().summary["senders"]["fill"]
    assert 100 // 10 < sender["sent"] <= 100 + 1
    # zsim's precise count: an inproc pipe holds SNDHWM + RCVHWM
    assert (sender["sent"], sender["again"]) == (101, 1)


@ports("test_sockopt_hwm.cpp:146", "test_decrease_when_full: the messages read are 0, 1, 2, ... in send order",
       "the 101 messages read in send order")
def test_decrease_when_full_reads_in_send_order(transport):
    result = _decrease_when_full()
    read = [msg_id for msg_id, *_ in delivered(result, "pull")]
    assert read == sorted(read) and len(read) == 101


@ports("test_sockopt_hwm.cpp:150", "test_decrease_when_full: read_count == send_count: lowering SNDHWM below what the "
       "pipe holds drops nothing", "101 read of 101 sent, none dropped")
def test_decrease_when_full_drops_nothing(transport):
    summary = _decrease_when_full().summary
    assert summary["receivers"]["recv.pull"]["received"] == summary["senders"]["fill"]["sent"] == 101
    assert summary["ledger"]["dropped"] == 0


@ports("test_sockopt_hwm.cpp:95 (2nd call, l.156)", "test_decrease_when_full: the fill after the read is bounded by the "
       "lowered SNDHWM 70 (7 < n <= 71)", "55 sent: the writer counts the free slots from what it has seen read "
       "(an activate_write every LWM reads)")
def test_decrease_when_full_refill_bounded_by_the_new_sndhwm(transport):
    refill = _decrease_when_full().summary["senders"]["refill"]
    assert 70 // 10 < refill["sent"] <= 70 + 1
    assert (refill["sent"], refill["again"]) == (55, 1)
