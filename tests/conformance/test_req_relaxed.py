"""libzmq tests/test_req_relaxed.cpp (tcp): a REQ with ZMQ_REQ_RELAXED (and
ZMQ_REQ_CORRELATE) may send a new request before the reply to the last one came; the late
reply is skipped, and the pipe it came on stays in the round robin.

setUp (l.13): the REQ binds, five REPs connect one after another with SETTLE_TIME between
them ("These tests require strict ordering"), so the REQ's round robin serves them in that
order. test_case_2 and test_case_3 run test_case_1 again on fresh sockets before their own
steps; here test_case_3's run (cases 1, 2 and 3 in a row) gives every assertion of the
three. Requests of several frames ("A","B") are one message whose topic is the first frame."""

from __future__ import annotations

import functools

from conformance.ported import SETTLE_S, app_scenario, endpoint, pollout, ports, run, steps

SERVICES = 5
RELAXED = {"req_relaxed": True, "req_correlate": True}


def _set_up(transport: str) -> list[dict]:
    where = endpoint(transport, "relaxed")
    return [{"name": "req", "type": "REQ", "bind": where, "options": {"linger": 0, **RELAXED}},
            *({"name": f"rep{i}", "type": "REP", "connect": where, "open_at_s": i * SETTLE_S, "options": {"linger": 0}}
              for i in range(SERVICES))]


@functools.cache
def _cases_1_to_3(transport: str) -> dict[object, object]:
    seen: dict[object, object] = {}

    def flow(app):
        env = app.env
        req = app.socket("req")
        rep = [app.socket(f"rep{i}") for i in range(SERVICES)]
        yield env.timeout(SERVICES * SETTLE_S)  # setUp's connects and sleeps
        # test_case_1 (l.78)
        seen[87] = pollout(req)
        yield req.send(1, topic="A", parts=2)
        seen[91] = (yield rep[0].recv()).topic
        seen[94] = pollout(req)
        yield req.send(1, topic="C", parts=2)
        seen[98] = (yield rep[1].recv()).topic
        seen[101] = pollout(req)
        yield rep[0].send(topic="WRONG")
        yield rep[1].send(topic="OK")
        seen[108] = (yield req.recv()).topic
        yield req.send(topic="E")
        seen[112] = (yield rep[2].recv()).topic
        yield rep[2].send(1, topic="F", parts=2)
        seen[114] = (yield req.recv()).topic
        # test_case_2 (l.117)
        yield req.send(topic="H")
        seen[126] = (yield rep[3].recv()).topic
        yield rep[3].send(topic="BAD")
        yield env.timeout(SETTLE_S)
        yield req.send(topic="I")
        seen[134] = (yield rep[4].recv()).topic
        yield rep[4].send(topic="GOOD")
        seen[138] = (yield req.recv()).topic
        # test_case_3 (l.141)
        yield req.send(topic="J")
        seen[152] = (yield rep[0].recv()).topic

    run(app_scenario(*_set_up(transport), profile="default"), steps(flow))
    return seen


@ports("test_req_relaxed.cpp:87", "ZMQ_EVENTS before anything: POLLOUT", "POLLOUT", ("tcp",))
def test_pollout_at_first(transport):
    assert _cases_1_to_3(transport)[87] is True


@ports("test_req_relaxed.cpp:91", "rep[0] receives \"A\",\"B\"", "A", ("tcp",))
def test_first_request_to_rep0(transport):
    assert _cases_1_to_3(transport)[91] == "A"


@ports("test_req_relaxed.cpp:94", "ZMQ_EVENTS after a request without its reply: still POLLOUT (may send again)", "POLLOUT",
       ("tcp",))
def test_pollout_while_a_reply_is_pending(transport):
    assert _cases_1_to_3(transport)[94] is True


@ports("test_req_relaxed.cpp:98", "the second request goes to rep[1]: \"C\",\"D\"", "C", ("tcp",))
def test_second_request_to_rep1(transport):
    assert _cases_1_to_3(transport)[98] == "C"


@ports("test_req_relaxed.cpp:101", "still POLLOUT", "POLLOUT", ("tcp",))
def test_pollout_after_the_second_request(transport):
    assert _cases_1_to_3(transport)[101] is True


@ports("test_req_relaxed.cpp:108", "the REQ receives \"OK\" from rep[1]: rep[0]'s late \"WRONG\" is discarded", "OK", ("tcp",))
def test_late_reply_is_discarded(transport):
    assert _cases_1_to_3(transport)[108] == "OK"


@ports("test_req_relaxed.cpp:112", "the next request goes to rep[2]: \"E\"", "E", ("tcp",))
def test_next_request_to_rep2(transport):
    assert _cases_1_to_3(transport)[112] == "E"


@ports("test_req_relaxed.cpp:114", "the REQ receives \"F\",\"G\"", "F", ("tcp",))
def test_reply_from_rep2(transport):
    assert _cases_1_to_3(transport)[114] == "F"


@ports("test_req_relaxed.cpp:126", "(case 2) rep[3] receives \"H\"", "H", ("tcp",))
def test_case_2_request_to_rep3(transport):
    assert _cases_1_to_3(transport)[126] == "H"


@ports("test_req_relaxed.cpp:134", "rep[4] receives \"I\" while rep[3]'s \"BAD\" waits unread at the REQ", "I", ("tcp",))
def test_case_2_request_to_rep4(transport):
    assert _cases_1_to_3(transport)[134] == "I"


@ports("test_req_relaxed.cpp:138", "the REQ receives \"GOOD\": \"BAD\" is discarded", "GOOD", ("tcp",))
def test_case_2_reply_that_was_waiting_is_discarded(transport):
    assert _cases_1_to_3(transport)[138] == "GOOD"


@ports("test_req_relaxed.cpp:152", "(case 3, issue #1690) rep[0] receives \"J\": its pipe survived the relaxed resend", "J",
       ("tcp",))
def test_case_3_pipe_of_the_abandoned_request_stays(transport):
    assert _cases_1_to_3(transport)[152] == "J"


@ports("test_req_relaxed.cpp:190", "(case 4, issue #1695) two requests queued before the ROUTER binds, both bounced: the REQ "
       "receives \"TO_BE_ANSWERED\"", "the reply to the second request", ("tcp",))
def test_case_4_reply_to_an_earlier_request_is_discarded(transport):
    where = endpoint(transport, "relaxed-case-4")
    binds_s = 0.05
    seen = {}

    def flow(app):
        env, req, router = app.env, app.socket("req"), app.socket("router")
        yield req.send(topic="TO_BE_DISCARDED")
        yield req.send(topic="TO_BE_ANSWERED")
        yield env.timeout(binds_s)
        for _ in range(2):  # bounce (l.52): every frame back as it came
            got = yield router.recv()
            yield router.send(like=got)
        seen[190] = (yield req.recv()).topic

    run(app_scenario({"name": "req", "type": "REQ", "connect": where, "options": {"linger": 0, **RELAXED}},
                     {"name": "router", "type": "ROUTER", "bind": where, "open_at_s": binds_s, "options": {"linger": 0}},
                     profile="default"), steps(flow))
    assert seen[190] == "TO_BE_ANSWERED"
