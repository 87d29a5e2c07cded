"""libzmq tests/test_invalid_rep.cpp (inproc): a REQ's request reaches a ROUTER with the
delimiter under the routing id, and the REQ takes only a well-formed reply."""

from __future__ import annotations

import zsim
from conformance.ported import delivered, endpoint, fates, ports, run, scenario


def _invalid_rep() -> dict:
    """test_invalid_rep.cpp:8: ROUTER (LINGER 0) binds, REQ (LINGER 0) connects and sends
    "r"; the ROUTER receives [addr, "", "r"], sends an invalid reply, then the valid
    [addr, "", "b"]; the REQ receives "b". The C test's invalid reply is the addr frame
    alone, which ``router_t::xsend`` drops unsent, a message zsim cannot express; here it
    is [addr, "x"] without the delimiter, which the REQ throws away (``req_t::xrecv``: the
    first frame must be empty)."""
    where = endpoint("inproc", "hi")
    seen: dict = {}

    def app(app: zsim.App) -> None:
        def router() -> object:
            sock = app.socket("router_socket")
            request = yield sock.recv()
            seen["request"] = request
            yield sock.send(1, envelope=request.envelope)  # invalid: no delimiter
            yield sock.send(1, envelope=request.envelope, delimiter=True)  # addr, "", "b"

        app.process(router())

    raw = scenario({"name": "router_socket", "type": "ROUTER", "bind": where, "options": {"linger": 0}},
                   {"name": "req_socket", "type": "REQ", "connect": where, "options": {"linger": 0}},
                   sends=[{"socket": "req_socket", "count": 1, "size_bytes": 1, "start_s": 0.001}], until_s=1.0)
    seen["result"] = run(raw, app)
    return seen


@ports("test_invalid_rep.cpp:32", "the ROUTER receives the routing id, the empty delimiter, then the 1-byte body "
       "(l.31-34)", "envelope (REQ's id,), delimiter, 1 byte")
def test_invalid_rep_router_receives_delimiter_then_body(transport):
    request = _invalid_rep()["request"]
    assert (request.envelope, request.delimiter, request.size) == (("req_socket",), True, 1)


@ports("test_invalid_rep.cpp:50", "the REQ receives only the valid reply \"b\"", "the valid reply; the invalid one "
       "discarded (no_delimiter)")
def test_invalid_rep_req_receives_only_the_valid_reply(transport):
    result = _invalid_rep()["result"]
    replies = delivered(result, "req_socket")
    assert len(replies) == 1
    assert ("router_socket", "discarded", "req_socket", "no_delimiter") in fates(result)
    frame = result.messages_frame()
    router_sends = sorted(frame[frame.origin == "router_socket"].msg_id)
    assert replies[0][0] == router_sends[1]  # the second one the ROUTER sent
