"""libzmq tests/test_xpub_manual.cpp: with XPUB_MANUAL the XPUB's application receives
every (un)subscription and decides what the pipe it came from is subscribed to
(``AppSocket.subscribe``/``unsubscribe`` on the XPUB: ZMQ_SUBSCRIBE/UNSUBSCRIBE applied to
the last pipe); an XSUB's application sends (un)subscriptions and user messages upstream
(``send(subscribe=...)``). test_basic, test_unsubscribe_manual and test_user_message run
over inproc, the proxy-shaped tests and test_unsubscribe_cleanup over tcp, as in C.
test_user_message_multi is built only with the draft ZMQ_ONLY_FIRST_SUBSCRIBE: not ported."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, recv_now, run, steps, what

START_S = 0.001  # the steps begin once the sockets are open (they open at 0)


def _until(env, t):
    return env.timeout(max(0.0, t - env.now))


def _data(got):
    """A data message as its frames say it: (first frame, total bytes); "EAGAIN" as is."""
    return got if isinstance(got, str) else (got.topic, got.size)


@functools.cache
def _basic(transport: str) -> dict[int, object]:
    """test_basic (l.8)."""
    seen: dict[int, object] = {}
    where = endpoint(transport, "soname")

    def flow(app):
        pub, sub = app.socket("pub"), app.socket("sub")
        yield app.env.timeout(START_S)
        yield sub.send(subscribe="A")
        seen[26] = what((yield pub.recv()))
        pub.subscribe("B")
        yield pub.send(topic="A")
        yield pub.send(topic="B")
        seen[35] = what((yield from recv_now(sub)))

    run(app_scenario({"name": "pub", "type": "XPUB", "bind": where, "options": {"xpub_manual": True}},
                     {"name": "sub", "type": "XSUB", "connect": where}), steps(flow))
    return seen


@ports("test_xpub_manual.cpp:26", "the XPUB receives the XSUB's subscription {1,'A'}", "subscribe A")
def test_basic_xpub_receives_the_subscription(transport):
    assert _basic(transport)[26] == ("subscribe", "A")


@ports("test_xpub_manual.cpp:35", "the XSUB receives B (the XPUB subscribed its pipe to B instead of A)", "B")
def test_basic_xsub_receives_what_the_xpub_subscribed_it_to(transport):
    assert _basic(transport)[35] == ("B", ())


@functools.cache
def _unsubscribe_manual(transport: str) -> dict[object, object]:
    """test_unsubscribe_manual (l.42)."""
    seen: dict[object, object] = {}
    where = endpoint(transport, "soname")
    close_s = 0.1

    def flow(app):
        env, pub, sub = app.env, app.socket("pub"), app.socket("sub")
        yield env.timeout(START_S)
        yield sub.send(subscribe="A")
        yield sub.send(subscribe="B")
        seen[68] = what((yield pub.recv()))
        pub.subscribe("XA")
        seen[74] = what((yield pub.recv()))
        pub.subscribe("XB")
        yield sub.send(unsubscribe="A")
        seen[84] = what((yield pub.recv()))
        pub.unsubscribe("XA")
        yield pub.send(topic="XA")
        yield pub.send(topic="XB")
        seen[94] = what((yield from recv_now(sub)))
        yield _until(env, close_s)  # test_context_socket_close (sub)
        seen[101] = what((yield pub.recv()))
        pub.unsubscribe("XB")

    run(app_scenario({"name": "pub", "type": "XPUB", "bind": where, "options": {"xpub_manual": True}},
                     {"name": "sub", "type": "XSUB", "connect": where, "close_at_s": close_s}), steps(flow))
    return seen


@ports("test_xpub_manual.cpp:68", "the XPUB receives {1,'A'}", "subscribe A")
def test_unsubscribe_manual_first_subscription(transport):
    assert _unsubscribe_manual(transport)[68] == ("subscribe", "A")


@ports("test_xpub_manual.cpp:74", "the XPUB receives {1,'B'}", "subscribe B")
def test_unsubscribe_manual_second_subscription(transport):
    assert _unsubscribe_manual(transport)[74] == ("subscribe", "B")


@ports("test_xpub_manual.cpp:84", "the XPUB receives the XSUB's cancel {0,'A'}", "unsubscribe A")
def test_unsubscribe_manual_cancel_reaches_the_xpub(transport):
    assert _unsubscribe_manual(transport)[84] == ("unsubscribe", "A")


@ports("test_xpub_manual.cpp:94", "the XSUB receives XB only (the XPUB unsubscribed its pipe from XA)", "XB")
def test_unsubscribe_manual_xsub_receives_xb(transport):
    assert _unsubscribe_manual(transport)[94] == ("XB", ())


@ports("test_xpub_manual.cpp:101-104", "after the XSUB closes, the XPUB receives {0,'B'} (2 bytes)", "unsubscribe B")
def test_unsubscribe_manual_close_cancels_what_the_pipe_asked_for(transport):
    assert _unsubscribe_manual(transport)[101] == ("unsubscribe", "B")


def _proxy_sockets(transport: str, sub2_opens_s: float, subs_close_s: float | None, topics: tuple[str, str]) -> dict:
    front, back = endpoint(transport, "manual-frontend"), endpoint(transport, "manual-backend")
    close = {"close_at_s": subs_close_s} if subs_close_s is not None else {}
    return app_scenario(
        {"name": "xsub_proxy", "type": "XSUB", "bind": front},
        {"name": "xpub_proxy", "type": "XPUB", "bind": back, "options": {"xpub_manual": True}},
        {"name": "pub", "type": "PUB", "connect": front},
        {"name": "sub1", "type": "SUB", "connect": back, "options": {"subscribe": [topics[0]]}, **close},
        {"name": "sub2", "type": "SUB", "connect": back, "open_at_s": sub2_opens_s, "options": {"subscribe": [topics[1]]}, **close},
    )


@functools.cache
def _proxy_unsubscribe_on_disconnect(transport: str) -> dict[object, object]:
    """test_xpub_proxy_unsubscribe_on_disconnect (l.114): the test moves subscriptions up
    and messages down by hand; SETTLE_TIME sleeps between the steps."""
    seen: dict[object, object] = {}
    t = [SETTLE_S * k for k in range(9)]
    sub2_opens, subs_close = t[1] + 0.01, t[5] + 0.01

    def flow(app):
        env = app.env
        xsub, xpub, pub = app.socket("xsub_proxy"), app.socket("xpub_proxy"), app.socket("pub")
        sub1, sub2 = app.socket("sub1"), app.socket("sub2")
        yield _until(env, t[1])
        seen[151] = what((yield from recv_now(xpub)))
        xpub.subscribe("1")
        yield xsub.send(subscribe="1")
        yield _until(env, t[2])  # sub2 connected and subscribed meanwhile
        seen[166] = what((yield from recv_now(xpub)))
        xpub.subscribe("1")
        yield xsub.send(subscribe="1")
        yield _until(env, t[3])
        yield pub.send(1, topic="1", parts=2)
        yield _until(env, t[4])
        got = yield from recv_now(xsub)
        seen[182] = _data(got)
        if not isinstance(got, str):
            yield xpub.send(like=got, parts=2)
        yield _until(env, t[5])
        seen[191] = _data((yield from recv_now(sub2)))
        seen[194] = _data((yield from recv_now(sub1)))
        yield _until(env, t[6])  # both SUBs closed meanwhile
        seen[206] = what((yield xpub.recv()))
        xpub.unsubscribe("1")
        yield xsub.send(unsubscribe="1")
        seen[212] = what((yield xpub.recv()))
        xpub.unsubscribe("1")
        yield xsub.send(unsubscribe="1")
        yield _until(env, t[7])
        yield pub.send(1, topic="1", parts=2)
        yield _until(env, t[8])
        seen[229] = what((yield from recv_now(xsub)))

    run(_proxy_sockets(transport, sub2_opens, subs_close, ("1", "1")), steps(flow))
    return seen


@ports("test_xpub_manual.cpp:151", "the XPUB receives sub1's {1,'1'}", "subscribe 1", ("tcp",))
def test_proxy_unsubscribe_first_subscription(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[151] == ("subscribe", "1")


@ports("test_xpub_manual.cpp:166", "the XPUB receives sub2's {1,'1'} too: manual mode passes duplicates", "subscribe 1", ("tcp",))
def test_proxy_unsubscribe_duplicate_passes_in_manual_mode(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[166] == ("subscribe", "1")


@ports("test_xpub_manual.cpp:182-183", "the XSUB receives \"1\",\"X\": the PUB got the forwarded subscription", "1 + X",
       ("tcp",))
def test_proxy_unsubscribe_xsub_receives_the_publication(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[182] == ("1", 2)


@ports("test_xpub_manual.cpp:191-192", "sub2 receives \"1\",\"X\"", "1 + X", ("tcp",))
def test_proxy_unsubscribe_sub2_receives(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[191] == ("1", 2)


@ports("test_xpub_manual.cpp:194-195", "sub1 receives \"1\",\"X\"", "1 + X", ("tcp",))
def test_proxy_unsubscribe_sub1_receives(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[194] == ("1", 2)


@ports("test_xpub_manual.cpp:206", "after both SUBs close, the XPUB receives {0,'1'}", "unsubscribe 1", ("tcp",))
def test_proxy_unsubscribe_first_cancel(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[206] == ("unsubscribe", "1")


@ports("test_xpub_manual.cpp:212", "and a second {0,'1'}: one per subscriber in manual mode", "unsubscribe 1", ("tcp",))
def test_proxy_unsubscribe_second_cancel(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[212] == ("unsubscribe", "1")


@ports("test_xpub_manual.cpp:229-230", "the PUB sends again and nothing reaches the XSUB: the cancel reached the PUB", "EAGAIN",
       ("tcp",))
def test_proxy_unsubscribe_cancel_reached_the_publisher(transport):
    assert _proxy_unsubscribe_on_disconnect(transport)[229] == "EAGAIN"


@functools.cache
def _missing_subscriptions(transport: str) -> dict[object, object]:
    """test_missing_subscriptions (l.237)."""
    seen: dict[object, object] = {}
    t = [SETTLE_S * k for k in range(6)]

    def flow(app):
        env = app.env
        xsub, xpub, pub = app.socket("xsub_proxy"), app.socket("xpub_proxy"), app.socket("pub")
        sub1, sub2 = app.socket("sub1"), app.socket("sub2")
        yield _until(env, t[1])
        seen[278] = what((yield from recv_now(xpub)))
        xpub.subscribe("1")
        yield xsub.send(subscribe="1")
        yield _until(env, t[2])  # sub2 connected and subscribed to "2" meanwhile
        seen[292] = what((yield from recv_now(xpub)))
        xpub.subscribe("2")
        yield xsub.send(subscribe="2")
        yield _until(env, t[3])
        yield pub.send(1, topic="1", parts=2)
        yield pub.send(1, topic="2", parts=2)
        yield _until(env, t[4])
        for line in (310, 315):
            got = yield from recv_now(xsub)
            seen[line] = _data(got)
            if not isinstance(got, str):
                yield xpub.send(like=got, parts=2)
        yield _until(env, t[5])
        seen[324] = _data((yield from recv_now(sub2)))
        seen[327] = _data((yield from recv_now(sub1)))

    run(_proxy_sockets(transport, t[1] + 0.01, None, ("1", "2")), steps(flow))
    return seen


@ports("test_xpub_manual.cpp:278", "the XPUB receives sub1's {1,'1'}", "subscribe 1", ("tcp",))
def test_missing_subscriptions_first(transport):
    assert _missing_subscriptions(transport)[278] == ("subscribe", "1")


@ports("test_xpub_manual.cpp:292", "the XPUB receives sub2's {1,'2'}", "subscribe 2", ("tcp",))
def test_missing_subscriptions_second(transport):
    assert _missing_subscriptions(transport)[292] == ("subscribe", "2")


@ports("test_xpub_manual.cpp:310-311", "the XSUB receives \"1\",\"X\"", "1 + X", ("tcp",))
def test_missing_subscriptions_xsub_receives_topic_1(transport):
    assert _missing_subscriptions(transport)[310] == ("1", 2)


@ports("test_xpub_manual.cpp:315-316", "the XSUB receives \"2\",\"X\"", "2 + X", ("tcp",))
def test_missing_subscriptions_xsub_receives_topic_2(transport):
    assert _missing_subscriptions(transport)[315] == ("2", 2)


@ports("test_xpub_manual.cpp:324-325", "sub2 receives \"2\",\"X\"", "2 + X", ("tcp",))
def test_missing_subscriptions_sub2_receives(transport):
    assert _missing_subscriptions(transport)[324] == ("2", 2)


@ports("test_xpub_manual.cpp:327-328", "sub1 receives \"1\",\"X\": its subscription was not lost", "1 + X", ("tcp",))
def test_missing_subscriptions_sub1_receives(transport):
    assert _missing_subscriptions(transport)[327] == ("1", 2)


@functools.cache
def _unsubscribe_cleanup(transport: str) -> dict[object, object]:
    """test_unsubscribe_cleanup (l.338): the first XSUB closes, a new one connects."""
    seen: dict[object, object] = {}
    where = endpoint(transport, "manual-cleanup")
    first_closes, second_opens = 0.1, 0.2

    def flow(app):
        env, pub, sub, sub2 = app.env, app.socket("pub"), app.socket("sub"), app.socket("sub2")
        yield env.timeout(START_S)
        yield sub.send(subscribe="A")
        seen[359] = what((yield pub.recv()))
        pub.subscribe("XA")
        yield pub.send(topic="XA")
        yield pub.send(topic="XB")
        seen[367] = what((yield sub.recv()))
        seen[371] = what((yield from recv_now(sub)))
        yield _until(env, first_closes)
        seen[379] = what((yield pub.recv()))
        pub.unsubscribe("XA")  # no last pipe now: nothing happens, and no error
        yield _until(env, second_opens + START_S)
        yield sub2.send(subscribe="B")
        seen[394] = what((yield pub.recv()))
        pub.subscribe("XB")
        yield pub.send(topic="XA")
        yield pub.send(topic="XB")
        seen[402] = what((yield sub2.recv()))
        seen[405] = what((yield from recv_now(sub2)))

    run(app_scenario({"name": "pub", "type": "XPUB", "bind": where, "options": {"xpub_manual": True}},
                     {"name": "sub", "type": "XSUB", "connect": where, "close_at_s": first_closes},
                     {"name": "sub2", "type": "XSUB", "connect": where, "open_at_s": second_opens}), steps(flow))
    return seen


@ports("test_xpub_manual.cpp:359", "the XPUB receives {1,'A'}", "subscribe A", ("tcp",))
def test_unsubscribe_cleanup_subscription(transport):
    assert _unsubscribe_cleanup(transport)[359] == ("subscribe", "A")


@ports("test_xpub_manual.cpp:367", "the XSUB receives XA (the pipe subscribed to XA by the XPUB)", "XA", ("tcp",))
def test_unsubscribe_cleanup_xsub_receives_xa(transport):
    assert _unsubscribe_cleanup(transport)[367] == ("XA", ())


@ports("test_xpub_manual.cpp:371-372", "nothing more: XB was not sent to it", "EAGAIN", ("tcp",))
def test_unsubscribe_cleanup_nothing_more(transport):
    assert _unsubscribe_cleanup(transport)[371] == "EAGAIN"


@ports("test_xpub_manual.cpp:379", "closing the XSUB gives the XPUB {0,'A'}", "unsubscribe A", ("tcp",))
def test_unsubscribe_cleanup_close_cancels(transport):
    assert _unsubscribe_cleanup(transport)[379] == ("unsubscribe", "A")


@ports("test_xpub_manual.cpp:394", "the new XSUB's {1,'B'} reaches the XPUB", "subscribe B", ("tcp",))
def test_unsubscribe_cleanup_new_subscription(transport):
    assert _unsubscribe_cleanup(transport)[394] == ("subscribe", "B")


@ports("test_xpub_manual.cpp:402", "the new XSUB receives XB: the old pipe's XA mapping was cleaned up", "XB", ("tcp",))
def test_unsubscribe_cleanup_new_xsub_receives_xb(transport):
    assert _unsubscribe_cleanup(transport)[402] == ("XB", ())


@ports("test_xpub_manual.cpp:405-406", "nothing more", "EAGAIN", ("tcp",))
def test_unsubscribe_cleanup_new_xsub_nothing_more(transport):
    assert _unsubscribe_cleanup(transport)[405] == "EAGAIN"


@ports("test_xpub_manual.cpp:428", "a message from the XSUB that is neither a subscription nor a cancel ({2,'A'}) reaches the "
       "XPUB's application", "the message \\x02A")
def test_user_message_reaches_the_xpub(transport):
    seen = {}
    where = endpoint(transport, "soname")

    def flow(app):
        pub, sub = app.socket("pub"), app.socket("sub")
        yield app.env.timeout(START_S)
        yield sub.send(topic="\x02A")
        seen[428] = what((yield pub.recv()))

    run(app_scenario({"name": "pub", "type": "XPUB", "bind": where}, {"name": "sub", "type": "XSUB", "connect": where}), steps(flow))
    assert seen[428] == ("\x02A", ())
