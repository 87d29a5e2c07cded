"""libzmq tests/test_proxy_terminate.cpp (tcp; issue #1382): a SUB -> PUSH proxy whose
PUSH has no peer never forwards (the proxy waits for POLLOUT on the backend,
src/proxy.cpp), and terminating the context still ends it."""

from __future__ import annotations

from conformance.ported import SETTLE_S, endpoint, ports, run, scenario

TEARDOWN_S = 1.0


def _terminate():
    """test_proxy_terminate.cpp:49: the server thread binds a SUB (subscribed to
    everything) and a PUSH nobody connects to, and runs ``zmq_proxy``; after 500 ms a PUB
    connects to the SUB, ``msleep (SETTLE_TIME)``, three sends 50 ms apart; then the PUB
    is closed and the context torn down (the run's one process exits)."""
    front, back = endpoint("tcp", "proxy_terminate_front"), endpoint("tcp", "proxy_terminate_back")
    raw = scenario({"name": "frontend", "type": "SUB", "bind": front, "options": {"subscribe": ""}},
                   {"name": "backend", "type": "PUSH", "bind": back},
                   {"name": "publisher", "type": "PUB", "connect": front, "open_at_s": 0.5},
                   proxies=[{"frontend": "frontend", "backend": "backend"}],
                   processes=[{"name": "main", "exit_at_s": TEARDOWN_S}],
                   sends=[{"socket": "publisher", "count": 3, "interval_s": 0.05, "size_bytes": 15,
                           "start_s": 0.5 + SETTLE_S}])
    return run(raw).summary


@ports("test_proxy_terminate.cpp:68", "the three PUB sends succeed (l.68, 71, 74)", "3 sent", ("tcp",))
def test_proxy_terminate_publisher_sends_succeed(transport):
    sender = _terminate()["senders"]["send.publisher"]
    assert (sender["sent"], sender["again"]) == (3, 0)


@ports("test_proxy_terminate.cpp:78", "context teardown returns although the proxy has messages for a PUSH without "
       "peers", "the exit completes at once; the proxy forwarded nothing", ("tcp",))
def test_proxy_terminate_teardown_returns(transport):
    summary = _terminate()
    process = summary["processes"]["main"]
    assert (process["exit_started_s"], process["exit_completed_s"], process["term_blocked"]) == (
        TEARDOWN_S, TEARDOWN_S, False)
    (proxy,) = summary["proxies"].values()
    assert proxy["forwarded"] == 0
