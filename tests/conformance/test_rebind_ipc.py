"""libzmq tests/test_rebind_ipc.cpp (ipc): a PULL connected over ipc receives from the
binder, and after that binder is closed, from a new socket bound on the same path (it
reconnects)."""

from __future__ import annotations

from conformance.ported import endpoint, ports, run, scenario

GONE_S, REBOUND_S = 0.2, 0.3


def _rebind():
    """test_rebind_ipc.cpp:8: PUSH sb0 binds, PULL sc connects, "42" passes; sb0 is
    closed; PUSH sb1 binds the path (a ``[[call]]``: a second socket's bind of an endpoint
    another socket held); "42" passes."""
    where = endpoint("ipc", "rebind")
    raw = scenario({"name": "sb0", "type": "PUSH", "bind": where, "close_at_s": GONE_S},
                   {"name": "sb1", "type": "PUSH", "open_at_s": REBOUND_S},
                   {"name": "sc", "type": "PULL", "connect": where},
                   calls=[{"socket": "sb1", "at_s": REBOUND_S, "bind": where}],
                   sends=[{"socket": "sb0", "count": 1, "size_bytes": 2},
                          {"socket": "sb1", "count": 1, "size_bytes": 2, "start_s": REBOUND_S}],
                   recvs=[{"socket": "sc"}], until_s=1.0)
    result = run(raw)
    frame = result.messages_frame()
    got = frame[(frame.state == "delivered") & (frame.socket == "sc")].sort_values("msg_id")
    return list(zip(got.origin, got.end_s, strict=True)), result.summary


@ports("test_rebind_ipc.cpp:22", "sc receives \"42\" from the first binder", "received", ("ipc",))
def test_rebind_ipc_first_binder(transport):
    got, _ = _rebind()
    assert got[0][0] == "sb0" and got[0][1] < GONE_S


@ports("test_rebind_ipc.cpp:29", "sc receives \"42\" from the new binder on the same path (it reconnected)",
       "received after the rebind", ("ipc",))
def test_rebind_ipc_new_binder(transport):
    got, summary = _rebind()
    assert len(got) == 2 and got[1][0] == "sb1" and got[1][1] > REBOUND_S
    assert summary["senders"]["send.sb1"]["sent"] == 1
