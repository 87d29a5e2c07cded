"""libzmq tests/test_timeo.cpp (inproc): a receive on a socket without peers returns
EAGAIN at once with DONTWAIT and after RCVTIMEO without; messages then flow."""

from __future__ import annotations

import zsim
from conformance.ported import endpoint, ports, run, scenario

CONNECT_S = 0.5  # the backend connects after the timed receive


def _timeo() -> dict:
    """test_timeo.cpp:8: DEALER frontend binds; recv DONTWAIT; with RCVTIMEO 250, a
    blocking recv, timed; a DEALER backend (SNDTIMEO 250) connects and sends "Hello"; the
    frontend receives it. (RCVTIMEO is set from the start here; DONTWAIT ignores it.)"""
    where = endpoint("inproc", "timeout_test")
    seen: dict = {"calls": []}

    def app(app: zsim.App) -> None:
        def frontend() -> object:
            sock = app.socket("frontend")
            for dontwait in (True, False):
                try:
                    yield sock.recv(dontwait=dontwait)
                    seen["calls"].append(("message", app.env.now))
                except zsim.Again:
                    seen["calls"].append(("EAGAIN", app.env.now))
            yield app.env.timeout(CONNECT_S - app.env.now)
            seen["hello"] = yield sock.recv()

        app.process(frontend())

    raw = scenario({"name": "frontend", "type": "DEALER", "bind": where, "options": {"rcvtimeo": 250}},
                   {"name": "backend", "type": "DEALER", "connect": where, "options": {"sndtimeo": 250},
                    "open_at_s": CONNECT_S},
                   sends=[{"socket": "backend", "count": 1, "size_bytes": 5, "start_s": CONNECT_S}],
                   profile="ideal", until_s=1.0)
    run(raw, app)
    return seen


@ports("test_timeo.cpp:15", "a DONTWAIT recv on a socket without peers fails with EAGAIN at once (l.15-16)",
       "EAGAIN at 0 s")
def test_timeo_dontwait_recv_is_eagain(transport):
    assert _timeo()["calls"][0] == ("EAGAIN", 0.0)


@ports("test_timeo.cpp:26", "a blocking recv with RCVTIMEO 250 fails with EAGAIN after more than 200 ms (l.26-28)",
       "EAGAIN after 250 ms")
def test_timeo_blocking_recv_times_out(transport):
    outcome, when = _timeo()["calls"][1]
    assert outcome == "EAGAIN" and when > 0.250 - 0.050
    assert when == 0.250  # zsim: exactly RCVTIMEO (profile ideal: no call costs)


@ports("test_timeo.cpp:44", "the backend's \"Hello\" is received", "received")
def test_timeo_message_flows(transport):
    assert _timeo()["hello"].size == 5
