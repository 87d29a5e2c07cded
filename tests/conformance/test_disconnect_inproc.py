"""libzmq tests/test_disconnect_inproc.cpp (inproc): a SUB connects to an XPUB, receives
three publications and disconnects; the XPUB's application sees its subscription and, on
the disconnect, its cancel (``xpub_t::xpipe_terminated`` passes up the last subscriber's
prefixes). The C loop, as an app: poll both sockets (100 ms), the XPUB reads what
(un)subscriptions came, the SUB reads a publication; at iteration 1 the SUB connects
(a ``[[call]]`` at that time) and the loop sleeps SETTLE_TIME; at iteration 4 it
disconnects; every iteration the XPUB sends "foo" + "this is foo!"; the loop ends after
iteration 4 at the first poll that finds nothing."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, run, steps, what

POLL_S = 0.1  # zmq_poll (items, 2, 100)


@functools.cache
def _disconnect_inproc(transport: str) -> dict[str, object]:
    where = endpoint(transport, "someInProcDescriptor")
    seen: dict[str, object] = {"subscriptions": [], "publications": 0, "subscribed": False, "alternate": True}

    def flow(app):
        env, pub, sub = app.env, app.socket("pub"), app.socket("sub")
        iteration = 0
        while True:
            polls = [sub.poll(POLL_S), pub.poll(POLL_S)]
            yield env.any_of(polls)
            ready = [sub.readable(), pub.readable()]
            if ready[1]:
                got = what((yield pub.recv()))
                seen["subscriptions"].append(got)
                # l.48 / l.51: a cancel only while subscribed, a subscription only while not
                seen["alternate"] = seen["alternate"] and (got[0] == "unsubscribe") == seen["subscribed"]
                seen["subscribed"] = got[0] == "subscribe"
            if ready[0]:
                yield sub.recv()
                seen["publications"] += 1
            if iteration == 1:
                yield env.timeout(SETTLE_S)  # the connect itself is the [[call]] at this time
            if iteration == 4:
                sub.disconnect(where)
            if iteration > 4 and not any(ready):
                break
            yield pub.send(12, topic="foo")
            iteration += 1
        seen["iterations"] = iteration

    connect_at = 2 * POLL_S  # iterations 0 and 1 each poll 100 ms and find nothing
    run(app_scenario({"name": "pub", "type": "XPUB", "bind": where},
                     {"name": "sub", "type": "SUB", "options": {"subscribe": ["foo"]}},
                     calls=[{"socket": "sub", "at_s": connect_at, "connect": where}]), steps(flow))
    return seen


@ports("test_disconnect_inproc.cpp:48/51", "subscribe and cancel alternate at the XPUB: one `{1,foo}` then one `{0,foo}`",
       "subscribe foo, then unsubscribe foo")
def test_subscription_then_its_cancel_reach_the_xpub(transport):
    seen = _disconnect_inproc(transport)
    assert seen["subscriptions"] == [("subscribe", "foo"), ("unsubscribe", "foo")]
    assert seen["alternate"]


@ports("test_disconnect_inproc.cpp:96", "publicationsReceived: 3 (iterations 2-4, before the disconnect)", "3")
def test_three_publications_received(transport):
    assert _disconnect_inproc(transport)["publications"] == 3


@ports("test_disconnect_inproc.cpp:97", "isSubscribed at the end: false (the disconnect cancelled the subscription)", "false")
def test_not_subscribed_at_the_end(transport):
    assert _disconnect_inproc(transport)["subscribed"] is False
