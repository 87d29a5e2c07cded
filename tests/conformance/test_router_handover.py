"""libzmq tests/test_router_handover.cpp (tcp): a second DEALER with the routing id of a
connected one. With ZMQ_ROUTER_HANDOVER it takes the id over (the ROUTER reads it and
routes "X" to it); without, the ROUTER ignores it (``router_t::identify_peer``: never read,
never routed to) and "X" stays the first DEALER."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, recv_timed, run, steps

TWO_CONNECTS_S = 0.05  # dealer_two is made and connects once the ROUTER has read dealer_one


@functools.cache
def _two_dealers(transport: str, handover: bool) -> dict[object, object]:
    """test_with_handover (l.8) / test_without_handover (l.63)."""
    seen: dict[object, object] = {}
    where = endpoint(transport, "handover" if handover else "no-handover")

    def flow(app):
        env, router, one, two = app.env, app.socket("router"), app.socket("one"), app.socket("two")
        sent = yield one.send(5)
        got = yield router.recv()
        seen["one"] = (got.envelope, got.id == sent)
        yield env.timeout(max(0.0, TWO_CONNECTS_S - env.now))
        sent = yield two.send(5)
        got = yield from recv_timed(router)
        seen["two"] = got if isinstance(got, str) else (got.envelope, got.id == sent)
        hello = yield router.send(5, envelope=("X",))
        for name, dealer in (("one", one), ("two", two)):
            got = yield from recv_timed(dealer)
            seen[f"{name} gets"] = got if isinstance(got, str) else got.id == hello

    # RCVTIMEO SETTLE_TIME where the C test sets it (l.53, l.99, l.110); the ROUTER's
    # recv of l.41 is blocking, and gets its message well within it
    timeout = int(SETTLE_S * 1000)
    run(app_scenario({"name": "router", "type": "ROUTER", "bind": where, "options": {"router_handover": handover, "rcvtimeo": timeout}},
                     {"name": "one", "type": "DEALER", "connect": where, "options": {"routing_id": "X", "rcvtimeo": timeout}},
                     {"name": "two", "type": "DEALER", "connect": where, "open_at_s": TWO_CONNECTS_S,
                  "options": {"routing_id": "X", "rcvtimeo": timeout}},
                     profile="default"), steps(flow))
    return seen


@ports("test_router_handover.cpp:29-30", "the ROUTER receives \"X\",\"Hello\" from dealer_one", "X, dealer_one's message",
       ("tcp",))
def test_with_handover_first_dealer_is_read(transport):
    assert _two_dealers(transport, True)["one"] == (("X",), True)


@ports("test_router_handover.cpp:41-42", "the ROUTER receives \"X\",\"Hello\" from dealer_two: it took the id over",
       "X, dealer_two's message", ("tcp",))
def test_with_handover_second_dealer_is_read(transport):
    assert _two_dealers(transport, True)["two"] == (("X",), True)


@ports("test_router_handover.cpp:54", "dealer_one receives nothing (RCVTIMEO 300 ms)", "EAGAIN", ("tcp",))
def test_with_handover_first_dealer_gets_nothing(transport):
    assert _two_dealers(transport, True)["one gets"] == "EAGAIN"


@ports("test_router_handover.cpp:56", "dealer_two receives the ROUTER's message to \"X\"", "the message", ("tcp",))
def test_with_handover_second_dealer_gets_the_message(transport):
    assert _two_dealers(transport, True)["two gets"] is True


@ports("test_router_handover.cpp:84-85", "the ROUTER receives \"X\",\"Hello\" from dealer_one", "X, dealer_one's message",
       ("tcp",))
def test_without_handover_first_dealer_is_read(transport):
    assert _two_dealers(transport, False)["one"] == (("X",), True)


@ports("test_router_handover.cpp:100", "dealer_two's message is ignored: the ROUTER's recv (RCVTIMEO 300 ms) fails", "EAGAIN",
       ("tcp",))
def test_without_handover_second_dealer_is_ignored(transport):
    assert _two_dealers(transport, False)["two"] == "EAGAIN"


@ports("test_router_handover.cpp:111", "dealer_two receives nothing (RCVTIMEO 300 ms)", "EAGAIN", ("tcp",))
def test_without_handover_second_dealer_gets_nothing(transport):
    assert _two_dealers(transport, False)["two gets"] == "EAGAIN"


@ports("test_router_handover.cpp:113", "dealer_one receives the ROUTER's message to \"X\": the id stays with it", "the message",
       ("tcp",))
def test_without_handover_first_dealer_gets_the_message(transport):
    assert _two_dealers(transport, False)["one gets"] is True
