"""libzmq tests/test_hwm_pubsub.cpp: XPUB -> SUB under SNDHWM, with and without
XPUB_NODROP, over tcp, inproc and ipc (l.238-279), and a PUB -> SUB pair whose pipe is
refilled after it was read (test_reset_hwm, tcp)."""

from __future__ import annotations

import pytest

import zsim
from conformance.ported import SETTLE_S, dontwait_sends, drain, endpoint, ports, run, scenario

TRANSPORTS = ("tcp", "inproc", "ipc")


def _xpub_sub(transport: str, sndhwm: int, **xpub_options) -> tuple[dict, dict]:
    """XPUB binds, SUB connects and subscribes to everything (test_hwm_pubsub.cpp:19-30;
    SNDHWM is set after the connect there, which for the messages below changes nothing:
    inproc's pipe gets it from ``send_hwms_to_peer``, tcp's is made after the handshake)."""
    where = endpoint(transport, "pubsub")
    xpub = {"name": "pub", "type": "XPUB", "bind": where, "options": {"sndhwm": sndhwm, **xpub_options}}
    sub = {"name": "sub", "type": "SUB", "connect": where, "options": {"subscribe": "", "rcvtimeo": 0}}
    return xpub, sub


def _defaults(transport: str, hwm: int):
    """test_hwm_pubsub.cpp:14 test_defaults (send_hwm = msg_cnt = hwm): once the
    subscription has arrived (the C test waits for it in ``recv``, l.35; here the sends
    start after SETTLE_TIME), send 13-byte messages DONTWAIT while fewer than ``hwm`` went,
    ``msleep (SETTLE_TIME)``, receive DONTWAIT until EAGAIN."""
    xpub, sub = _xpub_sub(transport, hwm)
    raw = scenario(xpub, sub, sends=[dontwait_sends("pub", hwm, size_bytes=13, start_s=SETTLE_S)],
                   recvs=[drain("sub", 2 * SETTLE_S)], until_s=1.0)
    summary = run(raw).summary
    return summary["senders"]["send.pub"], summary["receivers"]["recv.sub"]


def _first_message_at_xpub(transport: str, **xpub_options) -> zsim.Received:
    xpub, sub = _xpub_sub(transport, 1000, **xpub_options)
    got: list[zsim.Received] = []

    def app(app):
        def xpub_reads():
            got.append((yield app.socket("pub").recv()))

        app.process(xpub_reads())

    run(scenario(xpub, sub, until_s=1.0), app)
    return got[0]


@ports("test_hwm_pubsub.cpp:35", "test_defaults: the XPUB receives the SUB's subscription to everything, {1}",
       "a subscribe message with topic \"\"", TRANSPORTS)
def test_defaults_xpub_receives_the_subscription(transport):
    received = _first_message_at_xpub(transport)
    assert (received.kind, received.topic) == ("subscribe", "")


@ports("test_hwm_pubsub.cpp:43", "test_defaults: send_count == send_hwm (a burst of SNDHWM DONTWAIT sends all succeed)",
       "1000 of 1000 and 100 of 100 sent", TRANSPORTS)
@pytest.mark.parametrize("hwm", [1000, 100])
def test_defaults_burst_of_hwm_messages_all_sent(transport, hwm):
    sender, _ = _defaults(transport, hwm)
    assert (sender["sent"], sender["again"]) == (hwm, 0)


@ports("test_hwm_pubsub.cpp:53", "test_defaults: recv_count == send_hwm (every message of the burst is received)",
       "1000 and 100 received", TRANSPORTS)
@pytest.mark.parametrize("hwm", [1000, 100])
def test_defaults_burst_of_hwm_messages_all_received(transport, hwm):
    _, receiver = _defaults(transport, hwm)
    assert receiver["received"] == hwm


@ports("test_hwm_pubsub.cpp:223", "test_defaults_large: test_defaults (1000, 1000) returns 1000", "1000", TRANSPORTS)
def test_defaults_large(transport):
    _, receiver = _defaults(transport, 1000)
    assert receiver["received"] == 1000


@ports("test_hwm_pubsub.cpp:229", "test_defaults_small: test_defaults (100, 100) returns 100", "100", TRANSPORTS)
def test_defaults_small(transport):
    _, receiver = _defaults(transport, 100)
    assert receiver["received"] == 100


def _blocking(transport: str) -> dict:
    """test_hwm_pubsub.cpp:82 test_blocking (2000, 6000): XPUB with SNDHWM 2000 and
    XPUB_NODROP, SUB with RCVTIMEO 10 ms, in one thread: wait for the subscription, then
    until 6000 sends succeeded: send DONTWAIT, and on EAGAIN read the SUB until its recv
    times out; then read again, send "end" and read until "end" (``receive``, l.62).
    ``profile = "ideal"``: a C send costs ~0.1 us, so the XPUB outruns the I/O thread that
    empties its pipe over tcp/ipc; at pyzmq's cost per send it never fills that pipe."""
    xpub, sub = _xpub_sub(transport, 2000, xpub_nodrop=True)
    sub["options"]["rcvtimeo"] = 10
    outcome: dict = {"refusals": []}

    def app(app):
        pub, sub = app.socket("pub"), app.socket("sub")

        def receive():
            count = 0
            while True:
                try:
                    msg = yield sub.recv()
                except zsim.Again:
                    return count, False
                count += 1
                if msg.size == 3:  # "end"
                    return count, True

        def program():
            outcome["subscription"] = (yield pub.recv())
            sent = received = blocked = 0
            while sent < 6000:
                try:
                    yield pub.send(0, dontwait=True)
                    sent += 1
                except zsim.Again as refusal:
                    blocked += 1
                    outcome["refusals"].append(refusal)
                    count, _ = yield from receive()
                    received += count
            count, end = yield from receive()
            received += count
            yield pub.send(3)  # "end"
            outcome["end_sent"] = True
            while not end:
                count, end = yield from receive()
                received += count
            outcome.update(sent=sent, received=received - 1, blocked=blocked)

        app.process(program())

    run(scenario(xpub, sub, profile="ideal", until_s=60.0), app)
    return outcome


@ports("test_hwm_pubsub.cpp:109", "test_blocking: the XPUB (XPUB_NODROP) receives the subscription {1}",
       "a subscribe message with topic \"\"", TRANSPORTS)
def test_blocking_xpub_receives_the_subscription(transport):
    received = _first_message_at_xpub(transport, xpub_nodrop=True)
    assert (received.kind, received.topic) == ("subscribe", "")


@ports("test_hwm_pubsub.cpp:123", "test_blocking: a send that fails fails with EAGAIN (XPUB_NODROP never drops)",
       "every failed send raised Again; nothing dropped", TRANSPORTS)
def test_blocking_failed_send_is_eagain(transport):
    outcome = _blocking(transport)
    assert outcome["refusals"] and all(type(refusal) is zsim.Again for refusal in outcome["refusals"])


@ports("test_hwm_pubsub.cpp:132", "test_blocking: blocked_count > 0 (6000 sends into SNDHWM 2000 block at least once)",
       "blocked twice over tcp and ipc, once over inproc", TRANSPORTS)
def test_blocking_blocks_at_least_once(transport):
    outcome = _blocking(transport)
    assert outcome["blocked"] > 0
    # zsim's count: a refusal every 2000 sends over tcp/ipc (the SNDHWM; the reader drains
    # the I/O thread's side at once), every 3000 over inproc (SNDHWM + the SUB's RCVHWM 1000)
    assert outcome["blocked"] == {"inproc": 1}.get(transport, 2)


@ports("test_hwm_pubsub.cpp:138", "test_blocking: after draining, the blocking send of \"end\" succeeds",
       "sent", TRANSPORTS)
def test_blocking_end_message_sent(transport):
    assert _blocking(transport)["end_sent"] is True


@ports("test_hwm_pubsub.cpp:147", "test_blocking: send_count == recv_count (every successful send is received)",
       "6000 sent, 6000 received", TRANSPORTS)
def test_blocking_every_sent_message_received(transport):
    outcome = _blocking(transport)
    assert outcome["received"] == outcome["sent"]


@ports("test_hwm_pubsub.cpp:235", "test_blocking (2000, 6000) returns 6000", "6000", TRANSPORTS)
def test_blocking_returns_6000(transport):
    assert _blocking(transport)["received"] == 6000


def _reset_hwm():
    """test_hwm_pubsub.cpp:158 test_reset_hwm (tcp): PUB SNDHWM 11024, SUB RCVHWM 11024;
    settle; 9999 DONTWAIT sends; settle; read all DONTWAIT; settle; 1100 sends; settle;
    read all."""
    where = endpoint("tcp", "reset_hwm")
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": where, "options": {"sndhwm": 11024}},
        {"name": "sub", "type": "SUB", "connect": where, "options": {"rcvhwm": 11024, "subscribe": "", "rcvtimeo": 0}},
        sends=[dontwait_sends("pub", 9999, start_s=SETTLE_S), dontwait_sends("pub", 1100, start_s=4 * SETTLE_S)],
        recvs=[drain("sub", 2 * SETTLE_S), drain("sub", 5 * SETTLE_S)], until_s=2.0)
    return run(raw).summary


@ports("test_hwm_pubsub.cpp:186", "test_reset_hwm: 9999 DONTWAIT sends succeed (SNDHWM 11024)", "9999 sent", ("tcp",))
def test_reset_hwm_first_send_count(transport):
    sender = _reset_hwm()["senders"]["send.pub.0"]
    assert (sender["sent"], sender["again"]) == (9999, 0)


@ports("test_hwm_pubsub.cpp:195", "test_reset_hwm: all 9999 are received", "9999 received", ("tcp",))
def test_reset_hwm_first_recv_count(transport):
    assert _reset_hwm()["receivers"]["recv.sub.0"]["received"] == 9999


@ports("test_hwm_pubsub.cpp:204", "test_reset_hwm: 1100 more sends succeed once the first batch was read",
       "1100 sent", ("tcp",))
def test_reset_hwm_second_send_count(transport):
    sender = _reset_hwm()["senders"]["send.pub.1"]
    assert (sender["sent"], sender["again"]) == (1100, 0)


@ports("test_hwm_pubsub.cpp:213", "test_reset_hwm: all 1100 are received (the HWM counts only unread messages)",
       "1100 received, nothing dropped", ("tcp",))
def test_reset_hwm_second_recv_count(transport):
    summary = _reset_hwm()
    assert summary["receivers"]["recv.sub.1"]["received"] == 1100
    assert summary["ledger"]["dropped"] == 0
