"""libzmq tests/test_sub_forward.cpp (tcp): a subscription travels up through an
XPUB/XSUB device and the publication comes back down. The C test moves both by hand
(recv on one socket, send on the other); sending on an XSUB is not modelled, so beyond
the XPUB's receipt (l.34) the device here is a ``[[proxy]]``, which does the same moves
(src/proxy.cpp)."""

from __future__ import annotations

from conformance.ported import SETTLE_S, endpoint, fates, ports, reader, run, scenario


def _device(with_proxy: bool):
    """test_sub_forward.cpp:8: XPUB binds endpoint1, XSUB binds endpoint2; PUB connects
    to the XSUB, SUB connects to the XPUB and subscribes to everything; after the
    subscription has gone up, ``msleep (SETTLE_TIME)``; PUB sends ""."""
    endpoint1, endpoint2 = endpoint("tcp", "sub_forward1"), endpoint("tcp", "sub_forward2")
    return scenario({"name": "xpub", "type": "XPUB", "bind": endpoint1},
                    {"name": "xsub", "type": "XSUB", "bind": endpoint2},
                    {"name": "pub", "type": "PUB", "connect": endpoint2},
                    {"name": "sub", "type": "SUB", "connect": endpoint1, "options": {"subscribe": ""}},
                    proxies=[{"frontend": "xsub", "backend": "xpub"}] if with_proxy else [],
                    sends=[{"socket": "pub", "count": 1, "size_bytes": 0, "start_s": SETTLE_S}] if with_proxy else [],
                    recvs=[{"socket": "sub"}] if with_proxy else [], until_s=1.0)


@ports("test_sub_forward.cpp:34", "the XPUB receives the SUB's subscription", "subscribe \"\"", ("tcp",))
def test_xpub_receives_the_subscription(transport):
    log: list = []
    run(_device(with_proxy=False), reader("xpub", log))
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "")]


@ports("test_sub_forward.cpp:44", "the XSUB receives the PUB's message (the subscription reached the PUB)",
       "read from the XSUB and forwarded", ("tcp",))
def test_xsub_receives_the_publication(transport):
    copies = fates(run(_device(with_proxy=True)))
    assert ("pub", "forwarded", "xsub", "") in copies  # read from the XSUB by the device, passed on


@ports("test_sub_forward.cpp:48", "the SUB receives \"\"", "received", ("tcp",))
def test_sub_receives_the_publication(transport):
    summary = run(_device(with_proxy=True)).summary
    assert summary["receivers"]["recv.sub"]["received"] == 1
