"""libzmq tests/test_inproc_connect.cpp: inproc connects before and after the bind. A
connect to an inproc endpoint nobody has bound yet makes a pipe at once (held by the
context until the bind, ``ctx_t::pend_connection``), so sends succeed and the later
binder receives them. The C tests run one thread after another; each step here is 1 ms
after the previous one."""

from __future__ import annotations

import zsim
from conformance.ported import SETTLE_S, delivered, endpoint, ports, run, scenario


def _pair(connect_first: bool, name: str):
    """PAIR binds, PAIR connects (or the other way round), the connector sends "foobar",
    the binder receives (test_inproc_connect.cpp:53 / :74)."""
    where = endpoint("inproc", name)
    raw = scenario({"name": "bind_socket", "type": "PAIR", "bind": where, "open_at_s": 0.001 if connect_first else 0.0},
                   {"name": "connect_socket", "type": "PAIR", "connect": where, "open_at_s": 0.0 if connect_first else 0.001},
                   sends=[{"socket": "connect_socket", "count": 1, "size_bytes": 6, "start_s": 0.0 if connect_first else 0.002}],
                   recvs=[{"socket": "bind_socket", "count": 1, "start_s": 0.002}], until_s=1.0)
    return run(raw)


@ports("test_inproc_connect.cpp:67", "test_bind_before_connect: the binder receives \"foobar\"", "received")
def test_bind_before_connect_binder_receives(transport):
    assert [(origin, size) for _, origin, _, size in delivered(_pair(False, "bbc"), "bind_socket")] == [("connect_socket", 6)]


@ports("test_inproc_connect.cpp:81", "test_connect_before_bind: a send before anyone binds succeeds (the pending pipe "
       "takes it)", "sent before the bind, not blocked")
def test_connect_before_bind_send_succeeds(transport):
    sender = _pair(True, "cbb").summary["senders"]["send.connect_socket"]
    assert (sender["sent"], sender["blocked_s"]) == (1, 0.0)
    assert sender["finished_at_s"] < 0.001  # before the PAIR binds


@ports("test_inproc_connect.cpp:88", "test_connect_before_bind: the later binder receives \"foobar\"", "received")
def test_connect_before_bind_binder_receives(transport):
    assert [(origin, size) for _, origin, _, size in delivered(_pair(True, "cbb"), "bind_socket")] == [("connect_socket", 6)]


def _pub_sub():
    """test_inproc_connect.cpp:95 test_connect_before_bind_pub_sub: PUB connects, sends
    "before"; SUB subscribes to everything and binds; ``msleep (SETTLE_TIME)``; PUB sends
    "after"; SUB receives one message."""
    where = endpoint("inproc", "cbbps")
    raw = scenario({"name": "pub", "type": "PUB", "connect": where},
                   {"name": "sub", "type": "SUB", "bind": where, "options": {"subscribe": ""}, "open_at_s": 0.001},
                   sends=[{"socket": "pub", "name": "before", "count": 1, "size_bytes": 6},
                          {"socket": "pub", "name": "after", "count": 1, "size_bytes": 5, "start_s": 0.001 + SETTLE_S}],
                   recvs=[{"socket": "sub", "count": 1}], until_s=1.0)
    return run(raw)


@ports("test_inproc_connect.cpp:102", "test_connect_before_bind_pub_sub: the PUB's send before the bind succeeds (and "
       "is dropped: no subscriber yet)", "sent; no copy made")
def test_connect_before_bind_pub_sub_send_before_succeeds(transport):
    result = _pub_sub()
    assert result.summary["senders"]["before"]["sent"] == 1
    assert len(result.messages_frame()) == 1  # the one copy is "after"'s: "before" had no subscriber to go to


@ports("test_inproc_connect.cpp:117", "test_connect_before_bind_pub_sub: the SUB's first message is \"after\"",
       "\"after\" (5 bytes) only")
def test_connect_before_bind_pub_sub_first_message_is_after(transport):
    assert [size for *_, size in delivered(_pub_sub(), "sub")] == [5]


def _multiple_connects():
    """test_inproc_connect.cpp:139 test_multiple_connects: 10 PUSHes connect and each
    sends "foobar"; then a PULL binds and receives 10."""
    where = endpoint("inproc", "multiple")
    pushes = [{"name": f"push{i}", "type": "PUSH", "connect": where, "open_at_s": i * 0.001} for i in range(10)]
    raw = scenario({"name": "pull", "type": "PULL", "bind": where, "open_at_s": 0.010}, *pushes,
                   sends=[{"socket": f"push{i}", "count": 1, "size_bytes": 6, "start_s": i * 0.001} for i in range(10)],
                   recvs=[{"socket": "pull", "count": 10, "start_s": 0.010}], until_s=1.0)
    return run(raw)


@ports("test_inproc_connect.cpp:152", "test_multiple_connects: each of 10 connectors' send before the bind succeeds",
       "10 sent, none blocked")
def test_multiple_connects_sends_before_bind_succeed(transport):
    senders = _multiple_connects().summary["senders"].values()
    assert [(s["sent"], s["blocked_s"]) for s in senders] == [(1, 0.0)] * 10


@ports("test_inproc_connect.cpp:160", "test_multiple_connects: the PULL receives 10 x \"foobar\"",
       "10 received, one from each connector")
def test_multiple_connects_binder_receives_all(transport):
    got = delivered(_multiple_connects(), "pull")
    assert sorted(origin for _, origin, _, _ in got) == sorted(f"push{i}" for i in range(10))


@ports("test_inproc_connect.cpp:32", "test_simultaneous_connect_bind_threads: each of 50 connecting PAIRs receives "
       "\"foobar\" from its binder, whichever of bind and connect came first", "50 of 50 received")
def test_simultaneous_connect_bind_connector_receives(transport):
    """test_inproc_connect.cpp:199: 50 endpoints; on each a thread connects a PAIR and
    receives, another binds a PAIR and sends "foobar" (blocking). Threads race; here even
    endpoints bind first and odd ones connect first."""
    sockets, sends, recvs = [], [], []
    for i in range(50):
        where = endpoint("inproc", f"foo_{i}")
        bind_at, connect_at = (0.0, 0.001) if i % 2 == 0 else (0.001, 0.0)
        sockets += [{"name": f"conn{i}", "type": "PAIR", "connect": where, "open_at_s": connect_at},
                    {"name": f"bind{i}", "type": "PAIR", "bind": where, "open_at_s": bind_at}]
        sends.append({"socket": f"bind{i}", "count": 1, "size_bytes": 6, "start_s": bind_at})
        recvs.append({"socket": f"conn{i}", "count": 1, "start_s": connect_at})
    got = delivered(run(scenario(*sockets, sends=sends, recvs=recvs, until_s=1.0)))
    assert sorted((origin, receiver) for _, origin, receiver, _ in got) == sorted((f"bind{i}", f"conn{i}") for i in range(50))


def _routing_id():
    """test_inproc_connect.cpp:225 test_routing_id: DEALER connects, ROUTER binds, the
    DEALER sends the 2-part message "A", "B"; the ROUTER receives it. zsim carries a
    multipart message as one: "A" is its first frame (``topic``), "B" its payload."""
    where = endpoint("inproc", "routing_id")
    got: list[zsim.Received] = []

    def app(app):
        def router_reads():
            yield app.env.timeout(0.001)  # the ROUTER binds
            got.append((yield app.socket("sb").recv()))

        app.process(router_reads())

    raw = scenario({"name": "sc", "type": "DEALER", "connect": where},
                   {"name": "sb", "type": "ROUTER", "bind": where, "open_at_s": 0.001},
                   sends=[{"socket": "sc", "count": 1, "topic": "A", "size_bytes": 1, "parts": 2, "start_s": 0.002}],
                   until_s=1.0)
    run(raw, app)
    return got[0]


@ports("test_inproc_connect.cpp:246", "test_routing_id: the ROUTER's first frame is the peer's routing id (MORE set)",
       "one routing id in front of the body: the DEALER's")
def test_routing_id_comes_first(transport):
    assert _routing_id().envelope == ("sc",)


@ports("test_inproc_connect.cpp:250", "test_routing_id: then the body \"A\" (MORE) and \"B\" (last)",
       "the body: first frame \"A\", 2 bytes in all (frames are one message in zsim)")
def test_routing_id_then_the_body_frames(transport):
    received = _routing_id()
    assert (received.topic, received.size, received.delimiter) == ("A", 2, False)


def _multiple_threads():
    """test_inproc_connect.cpp:170 test_multiple_threads: 30 threads each connect a PAIR to
    ``inproc://sink``, send "foobar" and close it (``pusher``, l.8); the main thread binds a
    PULL meanwhile and receives 30. inproc checks no socket types (a PAIR feeds a PULL), and
    a pipe made before the bind outlives its closed connector (``ctx_t::pend_connection``).
    The threads race the bind: here connector i connects at i * 0.1 ms and closes 0.05 ms
    later, the PULL binds at 1.55 ms, between the 15th and the 16th."""
    where = endpoint("inproc", "sink")
    pairs = [{"name": f"pusher{i}", "type": "PAIR", "connect": where, "open_at_s": i * 1e-4, "close_at_s": i * 1e-4 + 5e-5}
             for i in range(30)]
    raw = scenario({"name": "pull", "type": "PULL", "bind": where, "open_at_s": 1.55e-3}, *pairs,
                   sends=[{"socket": f"pusher{i}", "count": 1, "size_bytes": 6, "start_s": i * 1e-4} for i in range(30)],
                   recvs=[{"socket": "pull", "count": 30, "start_s": 1.55e-3}], until_s=1.0)
    return run(raw)


@ports("test_inproc_connect.cpp:188", "test_multiple_threads: the PULL receives 30 x \"foobar\", also from PAIR connectors "
       "already closed", "30 received, one from each connector")
def test_multiple_threads_binder_receives_all(transport):
    result = _multiple_threads()
    got = delivered(result, "pull")
    assert sorted(origin for _, origin, _, _ in got) == sorted(f"pusher{i}" for i in range(30))
    assert result.summary["ledger"]["lost_on_close"] == 0


@ports("test_inproc_connect.cpp:291", "test_unbind: after PAIR 1 binds and unbinds \"inproc://unbind\", PAIR 2 binds it and "
       "receives the connector's \"foobar\"", "received by PAIR 2")
def test_unbind_then_another_socket_binds_the_name(transport):
    """test_inproc_connect.cpp:273 test_unbind: each call 1 ms after the previous one (the
    unbind, and the second socket's bind of the name, are ``[[call]]``s)."""
    where = endpoint("inproc", "unbind")
    raw = scenario({"name": "bind_socket1", "type": "PAIR", "bind": where},
                   {"name": "bind_socket2", "type": "PAIR", "open_at_s": 0.002},
                   {"name": "connect_socket", "type": "PAIR", "connect": where, "open_at_s": 0.003},
                   calls=[{"socket": "bind_socket1", "at_s": 0.001, "unbind": where},
                          {"socket": "bind_socket2", "at_s": 0.002, "bind": where}],
                   sends=[{"socket": "connect_socket", "count": 1, "size_bytes": 6, "start_s": 0.003}],
                   recvs=[{"socket": "bind_socket2", "count": 1, "start_s": 0.003}], until_s=1.0)
    assert [(origin, receiver, size) for _, origin, receiver, size in delivered(run(raw))] == [
        ("connect_socket", "bind_socket2", 6)]
