"""libzmq tests/test_xpub_verbose.cpp (inproc): XPUB_VERBOSE passes duplicate
subscriptions up to the XPUB's application, XPUB_VERBOSER duplicate cancels too; a SUB
counts its subscriptions and sends a cancel only for its last reference (the SUBs
subscribe and unsubscribe while connected, ``AppSocket.subscribe``)."""

from __future__ import annotations

import functools

from conformance.ported import app_scenario, endpoint, ports, recv_now, run, steps, what

START_S = 0.001  # the steps begin once the sockets are open (they open at 0)


def _sockets(transport: str, subs: int) -> dict:
    where = endpoint(transport, "soname")
    return app_scenario({"name": "pub", "type": "XPUB", "bind": where},
                        *({"name": f"sub{i}", "type": "SUB", "connect": where} for i in range(subs)))


@functools.cache
def _one_sub(transport: str) -> dict[int, object]:
    """test_xpub_verbose_one_sub (l.16)."""
    seen: dict[int, object] = {}

    def flow(app):
        pub, sub = app.socket("pub"), app.socket("sub0")
        yield app.env.timeout(START_S)
        sub.subscribe("A")
        seen[28] = what((yield pub.recv()))
        sub.subscribe("B")
        seen[34] = what((yield pub.recv()))
        sub.subscribe("A")
        seen[40] = what((yield from recv_now(pub)))
        pub.setsockopt("xpub_verbose", 1)
        sub.subscribe("A")
        seen[50] = what((yield pub.recv()))
        yield pub.send(topic="A")
        yield pub.send(topic="B")
        seen[56] = what((yield sub.recv()))
        seen[57] = what((yield sub.recv()))

    run(_sockets(transport, 1), steps(flow))
    return seen


@ports("test_xpub_verbose.cpp:28", "the XPUB receives the SUB's subscription {1,'A'}", "subscribe A")
def test_one_sub_first_subscription_reaches_the_xpub(transport):
    assert _one_sub(transport)[28] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:34", "the XPUB receives the SUB's subscription {1,'B'}", "subscribe B")
def test_one_sub_second_prefix_reaches_the_xpub(transport):
    assert _one_sub(transport)[34] == ("subscribe", "B")


@ports("test_xpub_verbose.cpp:40", "a duplicate subscription from the same SUB is filtered by the XPUB", "EAGAIN")
def test_one_sub_duplicate_is_filtered(transport):
    assert _one_sub(transport)[40] == "EAGAIN"


@ports("test_xpub_verbose.cpp:50", "with XPUB_VERBOSE the duplicate subscription reaches the application", "subscribe A")
def test_one_sub_duplicate_passes_with_verbose(transport):
    assert _one_sub(transport)[50] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:56", "the SUB receives A", "A")
def test_one_sub_receives_a(transport):
    assert _one_sub(transport)[56] == ("A", ())


@ports("test_xpub_verbose.cpp:57", "then the SUB receives B", "B")
def test_one_sub_receives_b(transport):
    assert _one_sub(transport)[57] == ("B", ())


def _duplicate_subscription(app, pub, sub0, sub1, seen):
    """create_duplicate_subscription (l.76): sub0 subscribes A, sub1 too."""
    sub0.subscribe("A")
    seen[83] = what((yield pub.recv()))
    sub1.subscribe("A")
    seen[90] = what((yield from recv_now(pub)))


@functools.cache
def _two_subs(transport: str) -> dict[int, object]:
    """test_xpub_verbose_two_subs (l.93)."""
    seen: dict[int, object] = {}

    def flow(app):
        pub, sub0, sub1 = app.socket("pub"), app.socket("sub0"), app.socket("sub1")
        yield app.env.timeout(START_S)
        yield from _duplicate_subscription(app, pub, sub0, sub1, seen)
        sub0.subscribe("B")
        seen[104] = what((yield pub.recv()))
        pub.setsockopt("xpub_verbose", 1)
        sub1.subscribe("A")
        seen[115] = what((yield pub.recv()))
        yield pub.send(topic="A")
        yield pub.send(topic="B")
        seen[122] = what((yield sub0.recv()))
        seen[123] = what((yield sub1.recv()))
        seen[124] = what((yield sub0.recv()))

    run(_sockets(transport, 2), steps(flow))
    return seen


@ports("test_xpub_verbose.cpp:83", "the XPUB receives sub0's subscription {1,'A'}", "subscribe A")
def test_two_subs_first_subscription_reaches_the_xpub(transport):
    assert _two_subs(transport)[83] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:90", "sub1's subscription to the same prefix is filtered by the XPUB", "EAGAIN")
def test_two_subs_second_subscriber_is_filtered(transport):
    assert _two_subs(transport)[90] == "EAGAIN"


@ports("test_xpub_verbose.cpp:104", "the XPUB receives sub0's subscription {1,'B'}", "subscribe B")
def test_two_subs_new_prefix_reaches_the_xpub(transport):
    assert _two_subs(transport)[104] == ("subscribe", "B")


@ports("test_xpub_verbose.cpp:115", "with XPUB_VERBOSE sub1's repeated subscription reaches the application", "subscribe A")
def test_two_subs_duplicate_passes_with_verbose(transport):
    assert _two_subs(transport)[115] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:122", "sub0 receives A", "A")
def test_two_subs_sub0_receives_a(transport):
    assert _two_subs(transport)[122] == ("A", ())


@ports("test_xpub_verbose.cpp:123", "sub1 receives A", "A")
def test_two_subs_sub1_receives_a(transport):
    assert _two_subs(transport)[123] == ("A", ())


@ports("test_xpub_verbose.cpp:124", "sub0 receives B", "B")
def test_two_subs_sub0_receives_b(transport):
    assert _two_subs(transport)[124] == ("B", ())


@functools.cache
def _verboser_one_sub(transport: str) -> dict[int, object]:
    """test_xpub_verboser_one_sub (l.132)."""
    seen: dict[int, object] = {}

    def flow(app):
        pub, sub = app.socket("pub"), app.socket("sub0")
        yield app.env.timeout(START_S)
        sub.unsubscribe("A")
        seen[147] = what((yield from recv_now(pub)))
        sub.subscribe("A")
        seen[153] = what((yield pub.recv()))
        sub.subscribe("A")
        seen[159] = what((yield from recv_now(pub)))
        sub.unsubscribe("A")
        sub.unsubscribe("A")
        seen[171] = what((yield pub.recv()))
        seen[174] = what((yield from recv_now(pub)))
        sub.unsubscribe("A")
        seen[181] = what((yield from recv_now(pub)))
        pub.setsockopt("xpub_verboser", 1)
        sub.subscribe("A")
        seen[191] = what((yield pub.recv()))
        yield pub.send(topic="A")
        seen[196] = what((yield sub.recv()))
        sub.unsubscribe("A")
        seen[203] = what((yield pub.recv()))
        sub.unsubscribe("A")
        seen[211] = what((yield from recv_now(pub)))

    run(_sockets(transport, 1), steps(flow))
    return seen


@ports("test_xpub_verbose.cpp:147", "a cancel of a prefix the SUB never subscribed to is filtered by the SUB", "EAGAIN")
def test_verboser_one_sub_unknown_cancel_is_filtered(transport):
    assert _verboser_one_sub(transport)[147] == "EAGAIN"


@ports("test_xpub_verbose.cpp:153", "the XPUB receives {1,'A'}", "subscribe A")
def test_verboser_one_sub_subscription_reaches_the_xpub(transport):
    assert _verboser_one_sub(transport)[153] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:159", "a second subscription to A (the SUB counts two) is filtered by the XPUB", "EAGAIN")
def test_verboser_one_sub_duplicate_is_filtered(transport):
    assert _verboser_one_sub(transport)[159] == "EAGAIN"


@ports("test_xpub_verbose.cpp:171", "after two cancels the XPUB receives one {0,'A'}", "unsubscribe A")
def test_verboser_one_sub_last_cancel_reaches_the_xpub(transport):
    assert _verboser_one_sub(transport)[171] == ("unsubscribe", "A")


@ports("test_xpub_verbose.cpp:174", "the SUB sent only its last cancel: nothing more", "EAGAIN")
def test_verboser_one_sub_only_one_cancel(transport):
    assert _verboser_one_sub(transport)[174] == "EAGAIN"


@ports("test_xpub_verbose.cpp:181", "a cancel of a prefix the SUB no longer has is filtered by the SUB", "EAGAIN")
def test_verboser_one_sub_gone_cancel_is_filtered(transport):
    assert _verboser_one_sub(transport)[181] == "EAGAIN"


@ports("test_xpub_verbose.cpp:191", "with XPUB_VERBOSER the new subscription reaches the application", "subscribe A")
def test_verboser_one_sub_subscription_with_verboser(transport):
    assert _verboser_one_sub(transport)[191] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:196", "the SUB receives A", "A")
def test_verboser_one_sub_receives_a(transport):
    assert _verboser_one_sub(transport)[196] == ("A", ())


@ports("test_xpub_verbose.cpp:203", "the XPUB receives the cancel {0,'A'}", "unsubscribe A")
def test_verboser_one_sub_cancel_with_verboser(transport):
    assert _verboser_one_sub(transport)[203] == ("unsubscribe", "A")


@ports("test_xpub_verbose.cpp:211", "a cancel of a gone prefix is filtered by the SUB even with XPUB_VERBOSER", "EAGAIN")
def test_verboser_one_sub_unmatched_cancel_is_filtered(transport):
    assert _verboser_one_sub(transport)[211] == "EAGAIN"


@functools.cache
def _verboser_two_subs(transport: str) -> dict[int, object]:
    """test_xpub_verboser_two_subs (l.218)."""
    seen: dict[int, object] = {}

    def flow(app):
        pub, sub0, sub1 = app.socket("pub"), app.socket("sub0"), app.socket("sub1")
        yield app.env.timeout(START_S)
        yield from _duplicate_subscription(app, pub, sub0, sub1, {})
        sub0.unsubscribe("A")
        seen[229] = what((yield from recv_now(pub)))
        sub1.unsubscribe("A")
        seen[236] = what((yield pub.recv()))
        seen[239] = what((yield from recv_now(pub)))
        pub.setsockopt("xpub_verboser", 1)
        sub0.subscribe("A")
        sub1.subscribe("A")
        seen[254] = what((yield pub.recv()))
        seen[257] = what((yield pub.recv()))
        yield pub.send(topic="A")
        seen[262] = what((yield sub0.recv()))
        seen[263] = what((yield sub1.recv()))
        sub1.unsubscribe("A")
        seen[270] = what((yield pub.recv()))
        sub0.unsubscribe("A")
        seen[277] = what((yield pub.recv()))
        sub1.unsubscribe("A")
        seen[284] = what((yield from recv_now(pub)))

    run(_sockets(transport, 2), steps(flow))
    return seen


@ports("test_xpub_verbose.cpp:229", "sub0 cancels while sub1 keeps A: no notification", "EAGAIN")
def test_verboser_two_subs_cancel_while_another_keeps_it(transport):
    assert _verboser_two_subs(transport)[229] == "EAGAIN"


@ports("test_xpub_verbose.cpp:236", "sub1 cancels too: the XPUB receives {0,'A'}", "unsubscribe A")
def test_verboser_two_subs_last_cancel_reaches_the_xpub(transport):
    assert _verboser_two_subs(transport)[236] == ("unsubscribe", "A")


@ports("test_xpub_verbose.cpp:239", "exactly one notification", "EAGAIN")
def test_verboser_two_subs_only_one_cancel(transport):
    assert _verboser_two_subs(transport)[239] == "EAGAIN"


@ports("test_xpub_verbose.cpp:254", "with XPUB_VERBOSER the XPUB receives {1,'A'} from sub0", "subscribe A")
def test_verboser_two_subs_first_subscription(transport):
    assert _verboser_two_subs(transport)[254] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:257", "and {1,'A'} from sub1", "subscribe A")
def test_verboser_two_subs_second_subscription(transport):
    assert _verboser_two_subs(transport)[257] == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:262", "sub0 receives A", "A")
def test_verboser_two_subs_sub0_receives_a(transport):
    assert _verboser_two_subs(transport)[262] == ("A", ())


@ports("test_xpub_verbose.cpp:263", "sub1 receives A", "A")
def test_verboser_two_subs_sub1_receives_a(transport):
    assert _verboser_two_subs(transport)[263] == ("A", ())


@ports("test_xpub_verbose.cpp:270", "with XPUB_VERBOSER sub1's cancel reaches the application while sub0 keeps A",
       "unsubscribe A")
def test_verboser_two_subs_cancel_while_another_keeps_it_passes(transport):
    assert _verboser_two_subs(transport)[270] == ("unsubscribe", "A")


@ports("test_xpub_verbose.cpp:277", "sub0's cancel reaches the application", "unsubscribe A")
def test_verboser_two_subs_second_cancel(transport):
    assert _verboser_two_subs(transport)[277] == ("unsubscribe", "A")


@ports("test_xpub_verbose.cpp:284", "an unmatched cancel is filtered by the SUB even with XPUB_VERBOSER", "EAGAIN")
def test_verboser_two_subs_unmatched_cancel_is_filtered(transport):
    assert _verboser_two_subs(transport)[284] == "EAGAIN"
