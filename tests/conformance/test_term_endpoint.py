"""libzmq tests/test_term_endpoint.cpp (tcp): the message each test passes before it
unbinds or disconnects (those two calls, and the EAGAIN they lead to, l.42 and l.70, wait
for ``unbind``/``disconnect``: docs/validation.md)."""

from __future__ import annotations

from conformance.ported import delivered, endpoint, ports, run, scenario


def _one_message(push_binds: bool):
    """PUSH and PULL, one binding and the other connecting; "ABC" passes."""
    where = endpoint("tcp", "term_endpoint")
    push = {"name": "push", "type": "PUSH", ("bind" if push_binds else "connect"): where}
    pull = {"name": "pull", "type": "PULL", ("connect" if push_binds else "bind"): where}
    raw = scenario(push, pull, sends=[{"socket": "push", "count": 1, "size_bytes": 3}],
                   recvs=[{"socket": "pull", "count": 1}], until_s=1.0)
    return delivered(run(raw), "pull")


@ports("test_term_endpoint.cpp:33", "test_send_after_unbind_fails: PUSH binds, PULL connects, the PULL receives "
       "\"ABC\"", "received", ("tcp",))
def test_send_after_unbind_fails_first_message_received(transport):
    assert [(origin, size) for _, origin, _, size in _one_message(push_binds=True)] == [("push", 3)]


@ports("test_term_endpoint.cpp:61", "test_send_after_disconnect_fails: PULL binds, PUSH connects, the PULL receives "
       "\"ABC\"", "received", ("tcp",))
def test_send_after_disconnect_fails_first_message_received(transport):
    assert [(origin, size) for _, origin, _, size in _one_message(push_binds=False)] == [("push", 3)]
