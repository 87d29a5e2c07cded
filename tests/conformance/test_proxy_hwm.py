"""libzmq tests/test_proxy_hwm.cpp (inproc): XPUB -> XSUB | proxy | XPUB (XPUB_NODROP) ->
SUB with every HWM 10 and a slow SUB: the publisher's DONTWAIT sends stop after the two
proxy pipes fill, and everything sent arrives. (The "asker" thread's REQ, with
REQ_CORRELATE and REQ_RELAXED, asserts nothing about messages and is left out.)"""

from __future__ import annotations

from conformance.ported import endpoint, ports, reader, run, scenario

HWM = 10  # test_proxy_hwm.cpp:33
NUM_BYTES_PER_MSG = 50000  # test_proxy_hwm.cpp:34
START_S = 0.01  # the publisher starts once the subscription came back through the proxy (l.76)


def _proxy_hwm(with_traffic: bool = True):
    """test_proxy_hwm.cpp:277: the proxy thread binds XSUB (HWMs 10) on inproc://frontend
    and XPUB (XPUB_NODROP, HWMs 10) on inproc://backend and runs ``zmq_proxy``; the
    publisher, an XPUB (HWMs 10, XPUB_NODROP), connects to the frontend, waits for the
    subscription and sends 50,000-byte messages DONTWAIT until one fails; the SUB (HWMs
    10) subscribes to everything, connects to the backend and receives with ``msleep
    (100)`` after each message until a recv times out (RCVTIMEO 100)."""
    front, back = endpoint("inproc", "frontend"), endpoint("inproc", "backend")
    hwms = {"sndhwm": HWM, "rcvhwm": HWM}
    return scenario(
        {"name": "frontend_xsub", "type": "XSUB", "bind": front, "options": hwms},
        {"name": "backend_xpub", "type": "XPUB", "bind": back, "options": {**hwms, "xpub_nodrop": True}},
        {"name": "pubsocket", "type": "XPUB", "connect": front, "options": {**hwms, "xpub_nodrop": True}},
        {"name": "subsocket", "type": "SUB", "connect": back, "options": {**hwms, "subscribe": "", "rcvtimeo": 100}},
        proxies=[{"frontend": "frontend_xsub", "backend": "backend_xpub"}],
        sends=[{"socket": "pubsocket", "count": 100000, "size_bytes": NUM_BYTES_PER_MSG, "dontwait": True,
                "on_again": "stop", "start_s": START_S}] if with_traffic else [],
        recvs=[{"socket": "subsocket", "service_s": 0.1, "on_timeout": "stop", "start_s": START_S}] if with_traffic else [],
        until_s=10.0)


@ports("test_proxy_hwm.cpp:76", "the publisher (an XPUB connected to the proxy's XSUB) receives the SUB's "
       "subscription {1,0}, passed up by the proxy", "subscribe \"\"")
def test_publisher_receives_the_forwarded_subscription(transport):
    log: list = []
    run(_proxy_hwm(with_traffic=False), reader("pubsocket", log))
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "")]
    assert log[0][0] < START_S


@ports("test_proxy_hwm.cpp:106", "2 x HWM <= send_count <= 4 x HWM (20 to 40 DONTWAIT sends before EAGAIN)",
       "20 sent, then EAGAIN")
def test_publisher_send_count_bounded_by_two_pipes(transport):
    sender = run(_proxy_hwm()).summary["senders"]["send.pubsocket"]
    assert 2 * HWM <= sender["sent"] <= 4 * HWM
    # zsim's count: the libzmq comment's lowest case, 10 + 10 in the publisher's pipe and
    # none more, since the proxy's XPUB (NODROP) blocks on the slow SUB's full pipe
    assert (sender["sent"], sender["again"]) == (20, 1)


@ports("test_proxy_hwm.cpp:157", "2 x HWM <= rxsuccess <= 4 x HWM, and (l.97) all that was sent arrives",
       "20 received, nothing dropped")
def test_subscriber_receives_everything_sent(transport):
    summary = run(_proxy_hwm()).summary
    received = summary["receivers"]["recv.subsocket"]["received"]
    assert 2 * HWM <= received <= 4 * HWM
    assert received == summary["senders"]["send.pubsocket"]["sent"] == 20
    assert summary["ledger"]["dropped"] == 0
