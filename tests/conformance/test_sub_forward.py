"""libzmq tests/test_sub_forward.cpp (tcp): a device made by hand of an XPUB and an XSUB:
the test reads the SUB's subscription on the XPUB and sends it on the XSUB (an XSUB's
application sends (un)subscriptions upstream: ``send(subscribe=...)``), then passes the
PUB's message down the other way."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, run, steps, what


@functools.cache
def _forward(transport: str) -> dict[object, object]:
    """test (l.8)."""
    seen: dict[object, object] = {}
    down, up = endpoint(transport, "forward-xpub"), endpoint(transport, "forward-xsub")

    def flow(app):
        env, xpub, xsub, pub, sub = (app.env, app.socket("xpub"), app.socket("xsub"), app.socket("pub"), app.socket("sub"))
        got = yield xpub.recv()
        seen[34] = what(got)
        seen[35] = yield xsub.send(subscribe=got.topic)
        yield env.timeout(SETTLE_S)
        yield pub.send(topic="")
        got = yield xsub.recv()
        seen[44] = what(got)
        seen[45] = yield xpub.send(like=got)
        seen[48] = what((yield sub.recv()))

    run(app_scenario({"name": "xpub", "type": "XPUB", "bind": down},
                     {"name": "xsub", "type": "XSUB", "bind": up},
                     {"name": "pub", "type": "PUB", "connect": up},
                     {"name": "sub", "type": "SUB", "connect": down, "options": {"subscribe": [""]}}), steps(flow))
    return seen


@ports("test_sub_forward.cpp:34", "the XPUB receives the SUB's subscription", "subscribe \"\"", ("tcp",))
def test_xpub_receives_the_subscription(transport):
    assert _forward(transport)[34] == ("subscribe", "")


@ports("test_sub_forward.cpp:35", "sending it on the XSUB succeeds", "sent (a subscription message: no message id)", ("tcp",))
def test_the_subscription_is_sent_on_the_xsub(transport):
    assert _forward(transport)[35] is None


@ports("test_sub_forward.cpp:44", "the XSUB receives the PUB's empty message: the subscription reached the PUB", "\"\"",
       ("tcp",))
def test_xsub_receives_the_publication(transport):
    assert _forward(transport)[44] == ("", ())


@ports("test_sub_forward.cpp:45", "sending it on the XPUB succeeds", "sent", ("tcp",))
def test_the_publication_is_sent_on_the_xpub(transport):
    assert isinstance(_forward(transport)[45], int)


@ports("test_sub_forward.cpp:48", "the SUB receives the empty message", "\"\"", ("tcp",))
def test_sub_receives_it(transport):
    assert _forward(transport)[48] == ("", ())
