"""libzmq tests/test_rebind_ipc.cpp (ipc): a PULL connected over ipc receives from the
binder, and after that binder is gone, from a new one bound on the same path (it
reconnects)."""

from __future__ import annotations

from conformance.ported import endpoint, ports, run, scenario

GONE_S, REBOUND_S = 0.2, 0.3


def _rebind():
    """test_rebind_ipc.cpp:8: PUSH sb0 binds, PULL sc connects, "42" passes; sb0 closed;
    PUSH sb1 binds the path; "42" passes. zsim cannot bind a second socket to a path once
    bound: here sb0's process crashes at GONE_S and restarts at REBOUND_S, binding the path
    again as sb1 does (to the PULL the same: its connection breaks, a listener returns)."""
    where = endpoint("ipc", "rebind")
    raw = scenario({"name": "sb", "type": "PUSH", "process": "binder", "bind": where},
                   {"name": "sc", "type": "PULL", "process": "connector", "connect": where},
                   processes=[{"name": "binder", "crash_at_s": GONE_S, "restart_at_s": REBOUND_S}, {"name": "connector"}],
                   sends=[{"socket": "sb", "name": "sb0", "count": 1, "size_bytes": 2},
                          {"socket": "sb", "name": "sb1", "count": 1, "size_bytes": 2, "start_s": REBOUND_S}],
                   recvs=[{"socket": "sc"}], until_s=1.0)
    result = run(raw)
    frame = result.messages_frame()
    got = frame[(frame.state == "delivered") & (frame.socket == "sc")].sort_values("msg_id")
    return list(got.end_s), result.summary


@ports("test_rebind_ipc.cpp:22", "sc receives \"42\" from the first binder", "received", ("ipc",))
def test_rebind_ipc_first_binder(transport):
    times, _ = _rebind()
    assert times[0] < GONE_S


@ports("test_rebind_ipc.cpp:29", "sc receives \"42\" from the new binder on the same path (it reconnected)",
       "received after the rebind", ("ipc",))
def test_rebind_ipc_new_binder(transport):
    times, summary = _rebind()
    assert len(times) == 2 and times[1] > REBOUND_S
    assert summary["senders"]["sb1"]["sent"] == 1
