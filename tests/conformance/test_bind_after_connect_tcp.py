"""libzmq tests/test_bind_after_connect_tcp.cpp: a DEALER that connects over tcp before
anyone binds queues its messages in the connect-side pipe; the later binder gets them in
order."""

from __future__ import annotations

from conformance.ported import delivered, endpoint, ports, run, scenario

SENT = (("foobar", 6), ("baz", 3), ("buzz", 4))  # the three strings, told apart by their size


def _bind_after_connect():
    """test_bind_after_connect_tcp.cpp:8 test_x: DEALER sc connects to ENDPOINT_3, sends
    "foobar", "baz", "buzz" (blocking); then DEALER sb binds it and receives three."""
    where = endpoint("tcp", "endpoint_3")
    raw = scenario({"name": "sb", "type": "DEALER", "bind": where, "open_at_s": 0.001},
                   {"name": "sc", "type": "DEALER", "connect": where},
                   sends=[{"socket": "sc", "count": 1, "size_bytes": size, "start_s": i * 1e-6}
                          for i, (_, size) in enumerate(SENT)],
                   recvs=[{"socket": "sb", "count": 3, "start_s": 0.001}], until_s=2.0)
    return run(raw)


@ports("test_bind_after_connect_tcp.cpp:15", "the three sends before anyone binds succeed (blocking)",
       "3 sent, none blocked", ("tcp",))
def test_x_sends_before_the_bind_succeed(transport):
    senders = _bind_after_connect().summary["senders"]
    assert [(s["sent"], s["blocked_s"]) for s in senders.values()] == [(1, 0.0)] * 3


def _received_sizes():
    return [size for *_, size in delivered(_bind_after_connect(), "sb")]


@ports("test_bind_after_connect_tcp.cpp:21", "the binder's first recv is \"foobar\"", "\"foobar\" first", ("tcp",))
def test_x_first_recv_is_foobar(transport):
    assert _received_sizes()[0] == 6


@ports("test_bind_after_connect_tcp.cpp:22", "the second recv is \"baz\"", "\"baz\" second", ("tcp",))
def test_x_second_recv_is_baz(transport):
    assert _received_sizes()[1] == 3


@ports("test_bind_after_connect_tcp.cpp:23", "the third recv is \"buzz\"", "\"buzz\" third", ("tcp",))
def test_x_third_recv_is_buzz(transport):
    assert _received_sizes() == [6, 3, 4]
