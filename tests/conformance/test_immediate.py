"""libzmq tests/test_immediate.cpp (tcp): ZMQ_IMMEDIATE. Without it a connect makes its
pipe at once, so a PUSH round-robins messages into a pipe to a peer that never answers;
with it, pipes exist only while connected.

zsim refuses a connect to an endpoint nobody binds; the C test's unanswered endpoint
(``tcp://localhost:5556``) is bound here by a PULL that opens after the run's horizon."""

from __future__ import annotations

from conformance.ported import SETTLE_S, endpoint, ports, run, scenario

UNTIL_S = 5.0


def _immediate(test: str, immediate: bool):
    """test_immediate.cpp:8 test_immediate_1 / :73 test_immediate_2: PULL ``to`` (LINGER
    0) binds; PUSH ``from`` (LINGER 0, IMMEDIATE as given) connects to an endpoint nobody
    listens on, then to ``to``; (test 1: ``msleep (SETTLE_TIME)``); 10 blocking sends of
    "Hello"; ``to`` with RCVTIMEO 250 reads until a recv times out."""
    valid, dead = endpoint("tcp", f"{test}_to"), endpoint("tcp", f"{test}_nobody")
    start = SETTLE_S if test == "immediate_1" else 0.0
    raw = scenario(
        {"name": "to", "type": "PULL", "bind": valid, "options": {"linger": 0, "rcvtimeo": 250}},
        {"name": "nobody", "type": "PULL", "bind": dead, "open_at_s": UNTIL_S + 1},
        {"name": "from", "type": "PUSH", "connect": [dead, valid], "options": {"linger": 0, "immediate": immediate}},
        sends=[{"socket": "from", "count": 10, "size_bytes": 5, "start_s": start}],
        recvs=[{"socket": "to", "start_s": start, "on_timeout": "stop"}], until_s=UNTIL_S)
    return run(raw).summary


@ports("test_immediate.cpp:46", "test_immediate_1: the 10 blocking sends succeed (half wait in the pipe to the "
       "unconnected peer)", "10 sent, none blocked", ("tcp",))
def test_immediate_1_sends_succeed(transport):
    sender = _immediate("immediate_1", False)["senders"]["send.from"]
    assert (sender["sent"], sender["blocked_s"]) == (10, 0.0)


@ports("test_immediate.cpp:66", "test_immediate_1: the bound PULL sees 5 (round robin over both pipes)",
       "5 received, 5 queued to the unconnected peer", ("tcp",))
def test_immediate_1_receiver_sees_half(transport):
    summary = _immediate("immediate_1", False)
    assert summary["receivers"]["recv.to"]["received"] == 5
    assert summary["ledger"]["queued_at_end"] == 5


@ports("test_immediate.cpp:111", "test_immediate_2 (IMMEDIATE): the 10 sends succeed", "10 sent", ("tcp",))
def test_immediate_2_sends_succeed(transport):
    sender = _immediate("immediate_2", True)["senders"]["send.from"]
    assert sender["sent"] == 10


@ports("test_immediate.cpp:125", "test_immediate_2 (IMMEDIATE): the bound PULL sees all 10 (no pipe to the "
       "unconnected peer)", "10 received", ("tcp",))
def test_immediate_2_receiver_sees_all(transport):
    summary = _immediate("immediate_2", True)
    assert summary["receivers"]["recv.to"]["received"] == 10
    assert summary["ledger"]["queued_at_end"] == 0


#: test_immediate_3's timeline (s): the backend goes at CLOSE_S; the C test sleeps
#: SETTLE_TIME * 10 before its next send; a new backend binds the same endpoint at REBIND_S
CLOSE_S, REBIND_S = 0.5, 3.8


def _immediate_3():
    """test_immediate.cpp:131 test_immediate_3: DEALER backend (LINGER 0) binds, DEALER
    frontend (LINGER 0, IMMEDIATE) connects; backend pings, frontend receives, frontend
    sends DONTWAIT; backend closed; ``msleep (SETTLE_TIME * 10)``; frontend sends DONTWAIT;
    a new backend socket binds the endpoint (a ``[[call]]``); it pings, frontend receives;
    frontend sends DONTWAIT."""
    where = endpoint("tcp", "immediate_3")
    frontend_send = {"socket": "frontend", "count": 1, "size_bytes": 5, "dontwait": True, "on_again": "skip"}
    raw = scenario(
        {"name": "backend", "type": "DEALER", "bind": where, "close_at_s": CLOSE_S, "options": {"linger": 0}},
        {"name": "backend2", "type": "DEALER", "open_at_s": REBIND_S, "options": {"linger": 0}},
        {"name": "frontend", "type": "DEALER", "connect": where, "options": {"linger": 0, "immediate": True}},
        calls=[{"socket": "backend2", "at_s": REBIND_S, "bind": where}],
        sends=[{"socket": "backend", "count": 1, "size_bytes": 5},
               {"socket": "backend2", "count": 1, "size_bytes": 5, "start_s": REBIND_S},
               {**frontend_send, "name": "connected", "start_s": 0.1},
               {**frontend_send, "name": "closed", "start_s": CLOSE_S + 10 * SETTLE_S},
               {**frontend_send, "name": "reconnected", "start_s": REBIND_S + 0.5}],
        recvs=[{"socket": "frontend"}], until_s=REBIND_S + 1.0)
    return run(raw)


@ports("test_immediate.cpp:159", "test_immediate_3: the frontend receives the backend's ping", "received", ("tcp",))
def test_immediate_3_ping_arrives(transport):
    frame = _immediate_3().messages_frame()
    pings = frame[(frame.origin == "backend") & (frame.state == "delivered")]
    assert len(pings) == 1 and (pings.end_s < CLOSE_S).all()


@ports("test_immediate.cpp:162", "test_immediate_3: a DONTWAIT send while connected succeeds", "sent", ("tcp",))
def test_immediate_3_send_while_connected(transport):
    sender = _immediate_3().summary["senders"]["connected"]
    assert (sender["sent"], sender["again"]) == (1, 0)


@ports("test_immediate.cpp:170", "test_immediate_3: after the backend closed, a DONTWAIT send fails with EAGAIN (the "
       "IMMEDIATE pipe went with the connection)", "EAGAIN", ("tcp",))
def test_immediate_3_send_after_backend_closed_is_eagain(transport):
    sender = _immediate_3().summary["senders"]["closed"]
    assert (sender["sent"], sender["again"]) == (0, 1)


@ports("test_immediate.cpp:181", "test_immediate_3: the new backend's ping reaches the frontend (it reconnected)",
       "received", ("tcp",))
def test_immediate_3_reconnects_to_new_backend(transport):
    frame = _immediate_3().messages_frame()
    pings = frame[(frame.origin == "backend2") & (frame.state == "delivered")]
    assert len(pings) == 1 and (pings.end_s > REBIND_S).all()


@ports("test_immediate.cpp:184", "test_immediate_3: after the reconnect a DONTWAIT send succeeds", "sent", ("tcp",))
def test_immediate_3_send_after_reconnect(transport):
    sender = _immediate_3().summary["senders"]["reconnected"]
    assert (sender["sent"], sender["again"]) == (1, 0)
