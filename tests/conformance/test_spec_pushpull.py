"""libzmq tests/test_spec_pushpull.cpp (inproc and tcp): ZMTP's PUSH round-robins, PULL
fair-queues, PUSH returns EAGAIN without peers, and multipart messages pass whole, also
across a disconnect and reconnect of the PULL. (test_destroy_queue_on_disconnect is not
run by 4.3.5.)"""

from __future__ import annotations

import functools

import pytest

import zsim
from conformance.ported import (
    SETTLE_S,
    app_scenario,
    blocking_and_dontwait_send_without_peers,
    delivered,
    endpoint,
    ports,
    run,
    scenario,
    steps,
)

TRANSPORTS = ("inproc", "tcp")
SERVICES = 5


def _round_robin_out(transport: str):
    """test_spec_pushpull.cpp:15 test_push_round_robin_out: PUSH binds, 5 PULLs connect,
    ``msleep (SETTLE_TIME)``; 5 x "ABC", then 5 x "DEF"."""
    where = endpoint(transport, "spec_pushpull_rr")
    pulls = [{"name": f"pull{i}", "type": "PULL", "connect": where} for i in range(SERVICES)]
    raw = scenario({"name": "push", "type": "PUSH", "bind": where}, *pulls,
                   sends=[{"socket": "push", "count": 2 * SERVICES, "size_bytes": 3, "start_s": SETTLE_S}],
                   recvs=[{"socket": f"pull{i}"} for i in range(SERVICES)], until_s=1.0)
    got = delivered(run(raw))
    first = min(msg_id for msg_id, *_ in got)
    per_pull: dict[str, list[str]] = {}
    for msg_id, _, receiver, _ in got:
        per_pull.setdefault(receiver, []).append("ABC" if msg_id - first < SERVICES else "DEF")
    return per_pull


@ports("test_spec_pushpull.cpp:43", "test_push_round_robin_out: each PULL's first message is \"ABC\"",
       "ABC first at all 5", TRANSPORTS)
def test_push_round_robin_out_first_is_abc(transport):
    per_pull = _round_robin_out(transport)
    assert sorted(per_pull) == [f"pull{i}" for i in range(SERVICES)]
    assert all(messages[0] == "ABC" for messages in per_pull.values())


@ports("test_spec_pushpull.cpp:44", "test_push_round_robin_out: each PULL's second message is \"DEF\"",
       "ABC then DEF at all 5", TRANSPORTS)
def test_push_round_robin_out_second_is_def(transport):
    per_pull = _round_robin_out(transport)
    assert all(messages == ["ABC", "DEF"] for messages in per_pull.values())


def _fair_queue_in(transport: str):
    """test_spec_pushpull.cpp:55 test_pull_fair_queue_in: PULL binds, 5 PUSHes connect,
    ``msleep (SETTLE_TIME)``; push[p] sends chr('A' + p), then chr('A' + p + 5);
    ``msleep (SETTLE_TIME)``; the PULL receives 10."""
    where = endpoint(transport, "spec_pushpull_fq")
    pushes = [{"name": f"push{p}", "type": "PUSH", "connect": where} for p in range(SERVICES)]
    raw = scenario({"name": "pull", "type": "PULL", "bind": where}, *pushes,
                   sends=[{"socket": f"push{p}", "count": 2, "size_bytes": 2, "start_s": SETTLE_S + p * 1e-6}
                          for p in range(SERVICES)],
                   recvs=[{"socket": "pull", "start_s": 2 * SETTLE_S}], until_s=1.0)
    got = delivered(run(raw), "pull")
    first_of = {}
    for msg_id, origin, _, _ in sorted(got):
        first_of.setdefault(origin, msg_id)
    return [(origin, "first" if first_of[origin] == msg_id else "second") for msg_id, origin, _, _ in got]


@ports("test_spec_pushpull.cpp:106", "test_pull_fair_queue_in: the first 5 received are the 5 pushers' first "
       "messages, one from each", "one first message from each pusher", TRANSPORTS)
def test_pull_fair_queue_in_first_half(transport):
    got = _fair_queue_in(transport)
    assert sorted(got[:SERVICES]) == [(f"push{p}", "first") for p in range(SERVICES)]


@ports("test_spec_pushpull.cpp:115", "test_pull_fair_queue_in: then the 5 second messages", "then one second "
       "message from each", TRANSPORTS)
def test_pull_fair_queue_in_second_half(transport):
    got = _fair_queue_in(transport)
    assert sorted(got[SERVICES:]) == [(f"push{p}", "second") for p in range(SERVICES)]


@ports("test_spec_pushpull.cpp:136", "test_push_block_on_send_no_peers: a DONTWAIT send without peers fails with "
       "EAGAIN", "EAGAIN at once", ("none",))
def test_push_block_on_send_no_peers_dontwait(transport):
    assert blocking_and_dontwait_send_without_peers("PUSH")[0] == ("EAGAIN", 0.0)


@ports("test_spec_pushpull.cpp:137", "test_push_block_on_send_no_peers: a blocking send without peers fails with "
       "EAGAIN after SNDTIMEO (250 ms)", "EAGAIN after 250 ms", ("none",))
def test_push_block_on_send_no_peers_blocking(transport):
    assert blocking_and_dontwait_send_without_peers("PUSH")[1] == ("EAGAIN", 0.25)


LEN = 16 * 1024 * 1024  # test_spec_pushpull.cpp:239: large enough to overrun the tcp buffers


def _multipart(transport: str):
    """test_spec_pushpull.cpp:210 test_push_multipart_atomic_drop, up to the disconnect:
    PUSH (LINGER 0, SNDHWM 1) binds, PULL (LINGER 0, RCVHWM 1) connects, ``msleep
    (SETTLE_TIME)``; the 3-part ["0", "0", 16 MiB] is sent and received; then "1" and the
    3-part ["2", "2", 16 MiB] are sent (blocking) and fill both HWMs. zsim carries the parts
    as one message: first frame "0" (``topic``), then 1 + 16 MiB over the other two. The C
    test runs this blocking and non-blocking; the two differ only after the disconnect."""
    where = endpoint(transport, "spec_pushpull_atomic")
    raw = scenario({"name": "push", "type": "PUSH", "bind": where, "options": {"linger": 0, "sndhwm": 1}},
                   {"name": "pull", "type": "PULL", "connect": where, "options": {"linger": 0, "rcvhwm": 1}},
                   sends=[{"socket": "push", "name": "msg0", "count": 1, "topic": "0", "size_bytes": 1 + LEN, "parts": 3,
                           "start_s": SETTLE_S},
                          {"socket": "push", "name": "msg1", "count": 1, "size_bytes": 1, "start_s": SETTLE_S + 0.2},
                          {"socket": "push", "name": "msg2", "count": 1, "topic": "2", "size_bytes": 1 + LEN, "parts": 3,
                           "start_s": SETTLE_S + 0.2 + 1e-6}],
                   recvs=[{"socket": "pull", "count": 1, "start_s": SETTLE_S}], until_s=SETTLE_S + 0.5)
    return run(raw)


@ports("test_spec_pushpull.cpp:250", "test_push_multipart_atomic_drop: the 3-part [\"0\", \"0\", 16 MiB] arrives "
       "whole (l.250-253)", "received whole: 2 + 16 MiB bytes", TRANSPORTS)
def test_push_multipart_atomic_drop_normal_case_received(transport):
    got = delivered(_multipart(transport), "pull")
    assert [size for *_, size in got] == [2 + LEN]


@ports("test_spec_pushpull.cpp:257", "test_push_multipart_atomic_drop: \"1\" and the 3-part \"2\" are sent, filling "
       "SNDHWM and RCVHWM (l.257-263)", "both sent", TRANSPORTS)
def test_push_multipart_atomic_drop_fill_sends_succeed(transport):
    senders = _multipart(transport).summary["senders"]
    assert [(senders[name]["sent"], senders[name]["again"]) for name in ("msg1", "msg2")] == [(1, 0), (1, 0)]


@functools.cache
def _multipart_reconnect(transport: str, block: bool) -> dict[str, object]:
    """test_spec_pushpull.cpp:210 test_push_multipart_atomic_drop as the C test runs it (an
    app, on pyzmq's call costs): after "1" and the 3-part "2" fill both HWMs, the PULL
    disconnects (l.266), ``msleep (SETTLE_TIME)``, connects again (l.281) and at once the
    PUSH sends ["3", "3", 16 MiB, "3b"] (the 16 MiB part DONTWAIT when not ``block``: on
    EAGAIN the C test sends the whole message again, blocking); ``msleep (SETTLE_TIME)``;
    ["5", "5", 16 MiB]; then the PULL receives. zsim carries a multipart message as one:
    its first frame is ``topic``, the parts after it ``size`` bytes."""
    where = endpoint(transport, "spec_pushpull_atomic")
    seen: dict[str, object] = {}

    def flow(app):
        env, push, pull = app.env, app.socket("push"), app.socket("pull")
        yield env.timeout(SETTLE_S)
        yield push.send(1 + LEN, topic="0", parts=3)
        yield pull.recv()
        yield push.send(1)  # "1"
        yield push.send(1 + LEN, topic="2", parts=3)
        pull.disconnect(where)
        yield env.timeout(SETTLE_S)
        pull.connect(where)
        three = []
        if block:
            yield push.send(1 + LEN + 2, topic="3", parts=4)
            three.append("sent")
        else:
            try:
                yield push.send(1 + LEN + 2, topic="3", parts=4, dontwait=True)
                three.append("sent")
            except zsim.Again:
                three.append("EAGAIN")
                yield push.send(1 + LEN + 2, topic="3", parts=4)
                three.append("sent")
        seen["three"] = three
        yield env.timeout(SETTLE_S)
        yield push.send(1 + LEN, topic="5", parts=3)
        got = []
        while True:
            msg = yield pull.recv()
            got.append((msg.topic, msg.size))  # size: the bytes of every part, the first frame's too
            if msg.topic == "5":
                break
        seen["received"] = got

    run(app_scenario({"name": "push", "type": "PUSH", "bind": where, "options": {"linger": 0, "sndhwm": 1}},
                     {"name": "pull", "type": "PULL", "connect": where, "options": {"linger": 0, "rcvhwm": 1}},
                     profile="default"), steps(flow))
    return seen


BLOCKING = [pytest.param(True, id="block"), pytest.param(False, id="non_block")]


THREE, FIVE = ("3", 1 + 1 + LEN + 2), ("5", 1 + 1 + LEN)  # (first frame, bytes of all the parts)


@ports("test_spec_pushpull.cpp:287", "test_push_multipart_atomic_drop: the 3-part \"3\" sent right after the reconnect: sent "
       "(blocking), or EAGAIN then sent whole (DONTWAIT, l.290-297)", "sent; DONTWAIT over tcp: EAGAIN (the new connection's "
       "handshake is not done), then sent", TRANSPORTS)
@pytest.mark.parametrize("block", BLOCKING)
def test_push_multipart_atomic_drop_send_after_reconnect(transport, block):
    three = _multipart_reconnect(transport, block)["three"]
    assert three in (["sent"], ["EAGAIN", "sent"])  # what libzmq allows
    assert three == (["EAGAIN", "sent"] if transport == "tcp" and not block else ["sent"])


@ports("test_spec_pushpull.cpp:325", "test_push_multipart_atomic_drop: the first frame received after the reconnect is "
       "\"3\" or \"5\": never what was queued before the disconnect, nor the tail of a half-dropped message",
       "\"3\", whole", TRANSPORTS)
@pytest.mark.parametrize("block", BLOCKING)
def test_push_multipart_atomic_drop_first_after_reconnect(transport, block):
    first = _multipart_reconnect(transport, block)["received"][0]
    assert first[0] in ("3", "5")
    assert first == THREE


@ports("test_spec_pushpull.cpp:334-336", "test_push_multipart_atomic_drop: then \"5\", \"5\", 16 MiB received whole",
       "\"5\" + \"5\" + 16 MiB, after \"3\"", TRANSPORTS)
@pytest.mark.parametrize("block", BLOCKING)
def test_push_multipart_atomic_drop_last_received_whole(transport, block):
    assert _multipart_reconnect(transport, block)["received"] == [THREE, FIVE]
