"""libzmq tests/test_sockopt_hwm.cpp (inproc): HWMs set before the pipe exists, and a full
pipe read in order. The HWM changes on a connected socket (l.59, l.126) wait for
``setsockopt`` at a time (docs/validation.md). ``profile = "ideal"``: C loops, and inproc
has no I/O thread, so the counts do not depend on time."""

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


def _decrease_when_full():
    """test_sockopt_hwm.cpp:100 test_decrease_when_full, up to the read: PUSH (SNDHWM 100)
    binds, PULL (RCVHWM 1) connects, ``msleep (SETTLE_TIME)``, fill DONTWAIT with the
    sequence numbers 0, 1, ... until EAGAIN (l.80), settle, read DONTWAIT until EAGAIN.
    (The C test lowers SNDHWM to 70 between fill and read, l.126: not applied here.)"""
    a = endpoint(transport="inproc", name="a")
    raw = scenario({"name": "push", "type": "PUSH", "bind": a, "options": {"sndhwm": 100}},
                   {"name": "pull", "type": "PULL", "connect": a, "options": {"rcvhwm": 1, "rcvtimeo": 0}},
                   sends=[dontwait_sends("push", MAX_SENDS, size_bytes=4, start_s=SETTLE_S)],
                   recvs=[drain("pull", 2 * SETTLE_S)], profile="ideal")
    return run(raw)


@ports("test_sockopt_hwm.cpp:95", "test_decrease_when_full (l.123): the first fill sends more than SNDHWM/10 and at "
       "most SNDHWM + 1 (10 < n <= 101)", "101 sent (SNDHWM 100 + RCVHWM 1)")
def test_decrease_when_full_first_fill_bounded_by_sndhwm(transport):
    sender = _decrease_when_full().summary["senders"]["send.push"]
    assert 100 // 10 < sender["sent"] <= 100 + 1
    # zsim's precise count: an inproc pipe holds SNDHWM + RCVHWM
    assert (sender["sent"], sender["again"]) == (101, 1)


@ports("test_sockopt_hwm.cpp:146", "test_decrease_when_full: the messages read are 0, 1, 2, ... in send order",
       "the 101 messages read in send order")
def test_decrease_when_full_reads_in_send_order(transport):
    result = _decrease_when_full()
    read = [msg_id for msg_id, *_ in delivered(result, "pull")]
    assert read == sorted(read) and len(read) == 101
