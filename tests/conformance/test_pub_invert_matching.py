"""libzmq tests/test_pub_invert_matching.cpp (inproc): two SUBs subscribe to different
prefixes while connected (``AppSocket.subscribe``); each gets only what it subscribed to;
with ZMQ_INVERT_MATCHING on the PUB and on both SUBs, each gets only what it did not.

The C test sets ZMQ_INVERT_MATCHING on the three connected sockets halfway; it is a
generic option (``options_t``, read by ``xpub_t::xsend`` and ``xsub_t::match`` at each
message), so here the inverted half runs on sockets that have it from their open, with the
same subscriptions and sends."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, recv_now, run, steps, what

START_S = 0.001


@functools.cache
def _matching(transport: str, inverted: bool) -> tuple[object, object, object, object]:
    """test (l.10): sub1 subscribes "prefix1", sub2 "p2"; the PUB sends "prefix1" at once,
    the SUBs read after SETTLE_TIME (DONTWAIT), then the same with "p2". The four reads:
    (sub1, sub2) after "prefix1", (sub2, sub1) after "p2"."""
    seen: list[object] = []
    where = endpoint(transport, "soname")
    options = {"invert_matching": True} if inverted else {}

    def flow(app):
        env, pub, sub1, sub2 = app.env, app.socket("pub"), app.socket("sub1"), app.socket("sub2")
        yield env.timeout(START_S)
        sub1.subscribe("prefix1")
        sub2.subscribe("p2")
        for topic, readers in (("prefix1", (sub1, sub2)), ("p2", (sub2, sub1))):
            yield pub.send(topic=topic)
            yield env.timeout(SETTLE_S)
            for reader in readers:
                seen.append(what((yield from recv_now(reader))))

    run(app_scenario({"name": "pub", "type": "PUB", "bind": where, "options": options},
                     {"name": "sub1", "type": "SUB", "connect": where, "options": options},
                     {"name": "sub2", "type": "SUB", "connect": where, "options": options}), steps(flow))
    return tuple(seen)  # type: ignore[return-value]


@ports("test_pub_invert_matching.cpp:38", "sub1 receives \"prefix1\" (sent at once: inproc subscriptions are there)", "prefix1")
def test_sub1_receives_its_prefix(transport):
    assert _matching(transport, False)[0] == ("prefix1", ())


@ports("test_pub_invert_matching.cpp:40", "sub2 does not", "EAGAIN")
def test_sub2_does_not_receive_prefix1(transport):
    assert _matching(transport, False)[1] == "EAGAIN"


@ports("test_pub_invert_matching.cpp:47", "sub2 receives \"p2\"", "p2")
def test_sub2_receives_its_prefix(transport):
    assert _matching(transport, False)[2] == ("p2", ())


@ports("test_pub_invert_matching.cpp:49", "sub1 does not", "EAGAIN")
def test_sub1_does_not_receive_p2(transport):
    assert _matching(transport, False)[3] == "EAGAIN"


@ports("test_pub_invert_matching.cpp:67", "inverted: sub2 receives \"prefix1\"", "prefix1")
def test_inverted_sub2_receives_prefix1(transport):
    assert _matching(transport, True)[1] == ("prefix1", ())


@ports("test_pub_invert_matching.cpp:69", "inverted: sub1 does not", "EAGAIN")
def test_inverted_sub1_does_not_receive_prefix1(transport):
    assert _matching(transport, True)[0] == "EAGAIN"


@ports("test_pub_invert_matching.cpp:76", "inverted: sub1 receives \"p2\"", "p2")
def test_inverted_sub1_receives_p2(transport):
    assert _matching(transport, True)[3] == ("p2", ())


@ports("test_pub_invert_matching.cpp:78", "inverted: sub2 does not", "EAGAIN")
def test_inverted_sub2_does_not_receive_p2(transport):
    assert _matching(transport, True)[2] == "EAGAIN"
