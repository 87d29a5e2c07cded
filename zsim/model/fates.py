"""What can happen to a message, as codes: one module for the model and the results.

The model reports every message copy's fate to a ``LedgerSink`` (``zsim.model.sink``)
exactly once: delivered, forwarded, dropped (by a routing rule), discarded (received and
thrown away), lost (close, linger, crash, a broken connection) or queued at the end of the
run (in a pipe, an engine or the kernel). The codes below are stable: they are written into
ledgers, Parquet sweeps and fingerprints. Names for results are here too, so a code and
its name can never drift apart.
"""

from __future__ import annotations

# -- zmq_send outcomes (what a socket's send returns to its application) --------------------
SENT = 0
AGAIN = 1  # would block: EAGAIN
UNROUTABLE = 2  # EHOSTUNREACH (ROUTER_MANDATORY)

# -- what else an application's call can end with (zsim.model.appthread) ---------------------
BLOCKED = 3  # the call blocked: it ends later, with done(status)
CLOSED = 4  # the socket is closed, or closed while the call was blocked on it (ETERM)
EFSM = 5  # the type's state machine refuses the call now (REQ/REP out of turn)
RECEIVED = 6  # a blocked recv got a message
READY = 7  # a poll's events are there
TIMEOUT = 8  # a poll's timeout expired first

# -- final states of a copy ----------------------------------------------------------------
DELIVERED = 0
FORWARDED = 1
DROPPED = 2
DISCARDED = 3
LOST = 4
QUEUED = 5

STATES = ("delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end")

# -- the rule behind a drop, discard or loss ------------------------------------------------
RULE_HWM = 1  # pipe at HWM (writer's view)
RULE_NOT_CONNECTED = 2  # the peer's pipe is not attached at the sender yet
RULE_NOT_SUBSCRIBED = 3  # peer subscribed, subscription not applied at the sender yet
RULE_UNROUTABLE = 4  # ROUTER: unknown identity
RULE_CONFLATED = 5  # replaced in a conflating pipe by a newer message
RULE_FILTERED = 6  # SUB discarded on receive: no matching subscription
RULE_NO_PEERS = 7  # REP reply / ROUTER reply to a peer that is gone
RULE_DISCONNECT = 8  # queued in a pipe or engine of a connection that went away
RULE_LINGER = 9  # discarded at close: linger expired or 0
RULE_ENGINE_HUP = 10  # ipc: left in the kernel queue when the engine died (EPOLLHUP)
RULE_CRASH = 11  # the process crashed
RULE_REQ_STATE = 12  # REQ: reply from a pipe it did not send to
RULE_KERNEL_LOST = 13  # tcp/ipc: in the kernel or in flight when the connection broke
RULE_NO_DELIMITER = 14  # REP/REQ: a message without the empty delimiter frame (rep_t/req_t::xrecv)
RULE_SEND_FAILED = 15  # zmq_proxy: a message it received whose send failed (EAGAIN at SNDTIMEO); the proxy ends
RULE_APP_DISCONNECT = 16  # in a connection the application ended with zmq_disconnect or zmq_unbind

RULES = {
    0: "",
    RULE_HWM: "hwm",
    RULE_NOT_CONNECTED: "not_connected",
    RULE_NOT_SUBSCRIBED: "not_subscribed_yet",
    RULE_UNROUTABLE: "unroutable",
    RULE_CONFLATED: "conflated",
    RULE_FILTERED: "filtered",
    RULE_NO_PEERS: "no_peer",
    RULE_DISCONNECT: "disconnect",
    RULE_LINGER: "close_linger",
    RULE_ENGINE_HUP: "engine_hup",
    RULE_CRASH: "crash",
    RULE_REQ_STATE: "req_state",
    RULE_KERNEL_LOST: "kernel_lost",
    RULE_NO_DELIMITER: "no_delimiter",
    RULE_SEND_FAILED: "send_failed",
    RULE_APP_DISCONNECT: "app_disconnect",
}

# -- where a message queued at the end sits -------------------------------------------------
WHERE_PIPE = 0
WHERE_ENGINE = 1  # a stream engine's batch or decoded buffer
WHERE_KERNEL = 2  # the kernel's socket buffers

WHERE = {WHERE_PIPE: "pipe", WHERE_ENGINE: "engine", WHERE_KERNEL: "kernel"}

