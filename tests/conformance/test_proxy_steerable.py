"""libzmq tests/test_proxy_steerable.cpp: test_proxy.cpp's broker through
``zmq_proxy_steerable``; its clients and workers assert the same. The steering commands
(STATISTICS, PAUSE from 1.0 s to 1.5 s, RESUME, TERMINATE on a REP control socket) are
not modelled (docs/validation.md): here the proxy forwards throughout, which changes when
replies arrive, not what they are or where they go."""

from __future__ import annotations

from conformance.ported import ports
from conformance.test_proxy import CLIENTS, CONTENT_SIZE, ROUTING_IDS, broker, replies_routed_back

STOP_S = 2.0  # test_proxy_steerable.cpp:382-408: STOP after 4 x 500 ms


@ports("test_proxy_steerable.cpp:104", "each reply a client receives is 13 bytes", "every reply 13 bytes", ("tcp",))
def test_proxy_steerable_client_receives_13_bytes(transport):
    seen = broker(STOP_S)
    assert seen["client_got"] and all(got.size == CONTENT_SIZE for _, got in seen["client_got"])


@ports("test_proxy_steerable.cpp:110", "each reply starts with \"request #\", back at the client that sent the request",
       "every reply answers a request of the client that gets it", ("tcp",))
def test_proxy_steerable_reply_routed_to_its_client(transport):
    routed = replies_routed_back(broker(STOP_S))
    assert routed and all(receiver == sender for receiver, sender in routed)


@ports("test_proxy_steerable.cpp:113", "RCVMORE is false after the reply (one frame)", "no envelope, no delimiter",
       ("tcp",))
def test_proxy_steerable_reply_is_one_frame(transport):
    seen = broker(STOP_S)
    assert seen["client_got"] and all((got.envelope, got.delimiter) == ((), False) for _, got in seen["client_got"])


@ports("test_proxy_steerable.cpp:144", "every client send returns 13", "all 27 sent", ("tcp",))
def test_proxy_steerable_client_sends_succeed(transport):
    sends = broker(STOP_S)["client_sends"]
    assert len(sends) == CLIENTS * 9 and all(ok for _, ok in sends)  # every 200 ms until 2.0 s


@ports("test_proxy_steerable.cpp:269", "a worker receives the 10-byte routing id, then the 13-byte request "
       "(l.269-271)", "envelope = (the client's routing id,), 13 bytes", ("tcp",))
def test_proxy_steerable_worker_receives_routing_id_then_request(transport):
    got = broker(STOP_S)["worker_got"]
    assert len(got) == CLIENTS * 9
    assert all(len(r.envelope) == 1 and r.envelope[0] in ROUTING_IDS and r.size == CONTENT_SIZE for r in got)


@ports("test_proxy_steerable.cpp:289", "a worker's reply frames send (l.289-293)", "every reply sent", ("tcp",))
def test_proxy_steerable_worker_replies_sent(transport):
    seen = broker(STOP_S)
    assert seen["worker_sends"] and all(seen["worker_sends"])
    assert len(seen["client_got"]) == len(seen["worker_sends"])
