"""libzmq tests/test_ctx_destroy.cpp, test_ctx_shutdown: a receive blocked on a socket
returns -1 when its context is shut down. (The other functions test API return codes.)"""

from __future__ import annotations

import zsim
from conformance.ported import SETTLE_S, ports, run, scenario


@ports("test_ctx_destroy.cpp:21", "test_ctx_shutdown: a recv blocked on a PULL returns -1 when the context shuts "
       "down 300 ms later", "the recv fails (SocketClosed) at 300 ms", ("none",))
def test_ctx_shutdown_blocked_recv_returns(transport):
    """test_ctx_destroy.cpp:40: a PULL with no endpoint; a thread blocks in ``zmq_recv``;
    ``msleep (SETTLE_TIME)``; ``zmq_ctx_shutdown``. zsim refuses a socket without
    endpoints (this one binds an inproc name nobody connects to); the context's shutdown is
    its process exiting."""
    outcome: list = []

    def app(app: zsim.App) -> None:
        def receiver() -> object:
            try:
                yield app.socket("socket").recv()
                outcome.append(("message", app.env.now))
            except zsim.SocketClosed:
                outcome.append(("failed", app.env.now))

        app.process(receiver())

    run(scenario({"name": "socket", "type": "PULL", "bind": "inproc://nobody"},
                 processes=[{"name": "main", "exit_at_s": SETTLE_S}], until_s=1.0), app)
    assert outcome == [("failed", SETTLE_S)]
