"""libzmq tests/test_spec_rep.cpp (inproc and tcp): ZMTP's REP: fair-queued requests and
the envelope it strips and restores."""

from __future__ import annotations

import zsim
from conformance.ported import SETTLE_S, delivered, endpoint, ports, run, scenario

TRANSPORTS = ("inproc", "tcp")


def _fair_queue_in(transport: str):
    """test_spec_rep.cpp:12 test_fair_queue_in: REP binds, 5 REQs connect, ``msleep
    (SETTLE_TIME)``; reqs[0] sends "A", REP receives and replies, reqs[0] receives; twice.
    (The part with 5 peers is compiled only with SOMEONE_FIXES_THIS.)"""
    where = endpoint(transport, "spec_rep_fq")
    reqs = [{"name": f"req{i}", "type": "REQ", "connect": where} for i in range(5)]
    raw = scenario({"name": "rep", "type": "REP", "bind": where}, *reqs,
                   sends=[{"socket": "req0", "count": 2, "size_bytes": 1, "start_s": SETTLE_S}],
                   recvs=[{"socket": "rep", "reply": True}], until_s=1.0)
    result = run(raw)
    requests = [origin for _, origin, _, _ in delivered(result, "rep")]
    replies = [(msg_id, origin) for msg_id, origin, _, _ in delivered(result, "req0")]
    assert not any(delivered(result, f"req{i}") for i in range(1, 5))
    return requests, replies


@ports("test_spec_rep.cpp:31", "test_fair_queue_in: the REP receives reqs[0]'s first \"A\"", "received", TRANSPORTS)
def test_fair_queue_in_first_request(transport):
    requests, _ = _fair_queue_in(transport)
    assert requests[0] == "req0"


@ports("test_spec_rep.cpp:33", "test_fair_queue_in: reqs[0] receives the reply", "received from the REP", TRANSPORTS)
def test_fair_queue_in_first_reply(transport):
    requests, replies = _fair_queue_in(transport)
    assert replies[0][1] == "rep"
    assert len(replies) == len(requests)  # each reply answers a request received


@ports("test_spec_rep.cpp:36", "test_fair_queue_in: the REP receives reqs[0]'s second \"A\"", "2 requests received",
       TRANSPORTS)
def test_fair_queue_in_second_request(transport):
    requests, _ = _fair_queue_in(transport)
    assert requests == ["req0", "req0"]


@ports("test_spec_rep.cpp:38", "test_fair_queue_in: reqs[0] receives the second reply", "2 replies received",
       TRANSPORTS)
def test_fair_queue_in_second_reply(transport):
    _, replies = _fair_queue_in(transport)
    assert [origin for _, origin in replies] == ["rep", "rep"]


def _envelope(transport: str) -> dict:
    """test_spec_rep.cpp:67 test_envelope: REP binds, DEALER connects; the DEALER sends
    ["", "A"] (minimal envelope), the REP receives "A" and replies "A", the DEALER
    receives ["", "A"]; then the same with the envelope ["X", "Y", ""]."""
    where = endpoint(transport, "spec_rep_envelope")
    seen: dict = {"rep": [], "dealer": []}

    def app(app: zsim.App) -> None:
        rep, dealer = app.socket("rep"), app.socket("dealer")

        def rep_loop() -> object:
            while True:
                request = yield rep.recv()
                seen["rep"].append(request)
                yield rep.send(like=request)  # the reply "A"

        def dealer_loop() -> object:
            yield app.env.timeout(0.01)
            for envelope in ((), ("X", "Y")):
                yield dealer.send(1, envelope=envelope, delimiter=True)
                seen["dealer"].append((yield dealer.recv()))

        app.process(rep_loop())
        app.process(dealer_loop())

    raw = scenario({"name": "rep", "type": "REP", "bind": where}, {"name": "dealer", "type": "DEALER", "connect": where},
                   until_s=1.0)
    run(raw, app)
    return seen


@ports("test_spec_rep.cpp:82", "test_envelope: with the minimal envelope [\"\"] the REP application gets \"A\" only",
       "body only: no envelope, no delimiter", TRANSPORTS)
def test_envelope_minimal_rep_sees_body_only(transport):
    request = _envelope(transport)["rep"][0]
    assert (request.envelope, request.delimiter, request.size) == ((), False, 1)


@ports("test_spec_rep.cpp:84", "test_envelope: the DEALER receives [\"\", \"A\"]: the REP restored the delimiter",
       "delimiter, then 1 byte", TRANSPORTS)
def test_envelope_minimal_dealer_gets_envelope_back(transport):
    reply = _envelope(transport)["dealer"][0]
    assert (reply.envelope, reply.delimiter, reply.size) == ((), True, 1)


@ports("test_spec_rep.cpp:88", "test_envelope: with the envelope [\"X\", \"Y\", \"\"] the REP application gets \"A\" "
       "only", "body only", TRANSPORTS)
def test_envelope_big_rep_sees_body_only(transport):
    request = _envelope(transport)["rep"][1]
    assert (request.envelope, request.delimiter, request.size) == ((), False, 1)


@ports("test_spec_rep.cpp:90", "test_envelope: the DEALER receives [\"X\", \"Y\", \"\", \"A\"]: the whole envelope "
       "restored", "envelope (X, Y), delimiter, 1 byte", TRANSPORTS)
def test_envelope_big_dealer_gets_envelope_back(transport):
    reply = _envelope(transport)["dealer"][1]
    assert (reply.envelope, reply.delimiter, reply.size) == (("X", "Y"), True, 1)


assert zsim  # the apps above use zsim.App in their annotations
