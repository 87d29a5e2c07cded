"""libzmq tests/test_term_endpoint.cpp (tcp): after ``zmq_unbind`` of the PUSH's listening
endpoint, or ``zmq_disconnect`` of the PUSH's connection, the PUSH has no pipe left, so a
DONTWAIT send fails with EAGAIN: an unbind ends the sessions the listener accepted
(``socket_base_t::term_endpoint``: the PULL reconnects and finds nobody), a disconnect the
connecter's. Each test first passes "ABC" to make sure the connection is up."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, ports, run, send_now, steps


@functools.cache
def _term_endpoint(push_binds: bool) -> dict[str, object]:
    """test_send_after_unbind_fails (l.20: PUSH binds, unbinds) or
    test_send_after_disconnect_fails (l.48: PULL binds, PUSH connects and disconnects):
    "ABC" passes; the call; ``msleep (SETTLE_TIME)``; a DONTWAIT send."""
    where = endpoint("tcp", "term_endpoint")
    seen: dict[str, object] = {}

    def flow(app):
        push, pull = app.socket("push"), app.socket("pull")
        yield push.send(3)
        seen["first"] = (yield pull.recv()).size
        if push_binds:
            push.unbind(where)
        else:
            push.disconnect(where)
        yield app.env.timeout(SETTLE_S)
        seen["after"] = yield from send_now(push, 3)

    push = {"name": "push", "type": "PUSH", ("bind" if push_binds else "connect"): where}
    pull = {"name": "pull", "type": "PULL", ("connect" if push_binds else "bind"): where}
    run(app_scenario(push, pull, profile="default"), steps(flow))
    return seen


@ports("test_term_endpoint.cpp:33", "test_send_after_unbind_fails: PUSH binds, PULL connects, the PULL receives "
       "\"ABC\"", "received", ("tcp",))
def test_send_after_unbind_fails_first_message_received(transport):
    assert _term_endpoint(push_binds=True)["first"] == 3


@ports("test_term_endpoint.cpp:42", "test_send_after_unbind_fails: a DONTWAIT send after the unbind fails with EAGAIN "
       "(the unbind ended the accepted connection)", "EAGAIN", ("tcp",))
def test_send_after_unbind_fails(transport):
    assert _term_endpoint(push_binds=True)["after"] == "EAGAIN"


@ports("test_term_endpoint.cpp:61", "test_send_after_disconnect_fails: PULL binds, PUSH connects, the PULL receives "
       "\"ABC\"", "received", ("tcp",))
def test_send_after_disconnect_fails_first_message_received(transport):
    assert _term_endpoint(push_binds=False)["first"] == 3


@ports("test_term_endpoint.cpp:70", "test_send_after_disconnect_fails: a DONTWAIT send after the disconnect fails with "
       "EAGAIN (the connect-side pipe is gone)", "EAGAIN", ("tcp",))
def test_send_after_disconnect_fails(transport):
    assert _term_endpoint(push_binds=False)["after"] == "EAGAIN"
