"""libzmq tests/test_spec_dealer.cpp (inproc and tcp): ZMTP's DEALER: round robin out,
fair queue in, EAGAIN without peers. (test_destroy_queue_on_disconnect is not run by
4.3.5.)"""

from __future__ import annotations

import zsim
from conformance.ported import SETTLE_S, blocking_and_dontwait_send_without_peers, delivered, endpoint, ports, run, scenario

TRANSPORTS = ("inproc", "tcp")
SERVICES = 5


@ports("test_spec_dealer.cpp:38", "test_round_robin_out: 5 requests [\"\", \"ABC\"] from a DEALER reach the 5 REPs "
       "one each", "one request at each REP", TRANSPORTS)
def test_round_robin_out_one_request_per_rep(transport):
    """test_spec_dealer.cpp:10: DEALER binds, 5 REPs connect, ``msleep (SETTLE_TIME)``;
    the DEALER sends 5 x ["", "ABC"] (an app: a REP throws away a message without the
    delimiter, and a [[send]] sends none); each REP receives one."""
    where = endpoint(transport, "spec_dealer_rr")

    def app(app: zsim.App) -> None:
        def dealer() -> object:
            yield app.env.timeout(SETTLE_S)
            for _ in range(SERVICES):
                yield app.socket("dealer").send(3, delimiter=True)

        app.process(dealer())

    reps = [{"name": f"rep{i}", "type": "REP", "connect": where} for i in range(SERVICES)]
    raw = scenario({"name": "dealer", "type": "DEALER", "bind": where}, *reps,
                   recvs=[{"socket": f"rep{i}", "reply": True} for i in range(SERVICES)], until_s=1.0)
    got = delivered(run(raw, app))
    assert sorted(receiver for _, origin, receiver, _ in got if origin == "dealer") == [f"rep{i}" for i in range(SERVICES)]


def _fair_queue_in(transport: str):
    """test_spec_dealer.cpp:50 test_fair_queue_in: receiver DEALER binds, 5 DEALERs
    connect (no settle); senders[0] sends "A", the receiver receives it; again; then each
    sender sends "B", ``msleep (SETTLE_TIME)``, the receiver receives 5."""
    where = endpoint(transport, "spec_dealer_fq")
    senders = [{"name": f"sender{i}", "type": "DEALER", "connect": where} for i in range(SERVICES)]
    raw = scenario({"name": "receiver", "type": "DEALER", "bind": where}, *senders,
                   sends=[{"socket": "sender0", "name": "A", "count": 2, "size_bytes": 1},
                          *({"socket": f"sender{i}", "name": f"B{i}", "count": 1, "size_bytes": 1, "start_s": 0.1}
                            for i in range(SERVICES))],
                   recvs=[{"socket": "receiver"}], until_s=0.1 + SETTLE_S + 0.1)
    return delivered(run(raw), "receiver")


@ports("test_spec_dealer.cpp:71", "test_fair_queue_in: the receiver gets senders[0]'s first \"A\"", "received",
       TRANSPORTS)
def test_fair_queue_in_first_a(transport):
    got = _fair_queue_in(transport)
    assert got[0][1] == "sender0"


@ports("test_spec_dealer.cpp:74", "test_fair_queue_in: then senders[0]'s second \"A\"", "received second",
       TRANSPORTS)
def test_fair_queue_in_second_a(transport):
    got = _fair_queue_in(transport)
    assert [origin for _, origin, _, _ in got[:2]] == ["sender0", "sender0"]


@ports("test_spec_dealer.cpp:85", "test_fair_queue_in: the receiver gets 5 x \"B\", one from each sender",
       "one B from each of the 5", TRANSPORTS)
def test_fair_queue_in_one_b_from_each(transport):
    got = _fair_queue_in(transport)
    assert sorted(origin for _, origin, _, _ in got[2:]) == [f"sender{i}" for i in range(SERVICES)]


@ports("test_spec_dealer.cpp:151", "test_block_on_send_no_peers: a DONTWAIT send without peers fails with EAGAIN",
       "EAGAIN at once", ("none",))
def test_block_on_send_no_peers_dontwait(transport):
    assert blocking_and_dontwait_send_without_peers("DEALER")[0] == ("EAGAIN", 0.0)


@ports("test_spec_dealer.cpp:152", "test_block_on_send_no_peers: a blocking send without peers fails with EAGAIN "
       "after SNDTIMEO (250 ms)", "EAGAIN after 250 ms", ("none",))
def test_block_on_send_no_peers_blocking(transport):
    assert blocking_and_dontwait_send_without_peers("DEALER")[1] == ("EAGAIN", 0.25)
