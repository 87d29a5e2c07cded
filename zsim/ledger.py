"""The per-message ledger: every message copy ends in exactly one state.

States: ``delivered`` (read by an application), ``forwarded`` (read by a proxy, which sends
it on as new copies), ``dropped`` (a routing rule refused it: full pipe, no subscription
yet, unknown ROUTER peer, conflated), ``discarded`` (received and thrown away: SUB filter,
REQ state, or its connection went away), ``lost_on_close`` (a close, linger, process exit or
crash took it), ``queued_at_end`` (still in a pipe, engine or kernel when the run ended).

A *copy* is one message on one path: a PUB fanning out to ten SUBs makes ten copies.
Sockets count the copies they create; after the run ``check_conservation`` verifies that
the ledger holds exactly that many final records. A mismatch is a bug in zsim and raises
``ConservationError``, it is never reported as a number.

Records are kept columnar in ``array`` buffers (8 bytes a field, no Python object per
message) and turned into numpy arrays once at the end.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from .errors import ConservationError

DELIVERED = 0
FORWARDED = 1
DROPPED = 2
DISCARDED = 3
LOST = 4
QUEUED = 5

STATES = ("delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end")

#: rule codes (zsim.model.routing.RULE_*) -> names used in results
RULES = {
    0: "",
    1: "hwm",
    2: "not_connected",
    3: "not_subscribed_yet",
    4: "unroutable",
    5: "conflated",
    6: "filtered",
    7: "no_peer",
    8: "disconnect",
    9: "close_linger",
    10: "engine_hup",
    11: "crash",
    12: "req_state",
    13: "kernel_lost",
}

#: where a queued-at-end message sits (zsim.model.world.WHERE_*)
WHERE = {0: "pipe", 1: "engine", 2: "kernel"}

_FIELDS = 7  # msg_id, state, socket, pipe, rule, time, t0


class Ledger:
    """Implements ``zsim.model.world.LedgerSink``."""

    def __init__(self) -> None:
        self.sent_id = array("q")
        self.sent_socket = array("i")
        self.sent_t0 = array("d")
        self.sent_size = array("q")
        self.records = array("d")

    # -- hooks called by the model (hot path) ----------------------------------------------

    def sent(self, msg: tuple, socket_index: int) -> None:
        self.sent_id.append(msg[0])
        self.sent_socket.append(socket_index)
        self.sent_t0.append(msg[1])
        self.sent_size.append(msg[2])

    def delivered(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        self.records.extend((msg[0], 0.0, socket_index, pipe_index, 0.0, now, msg[1]))

    def forwarded(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        self.records.extend((msg[0], 1.0, socket_index, pipe_index, 0.0, now, msg[1]))

    def dropped(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 2.0, socket_index, pipe_index, rule, now, msg[1]))

    def discarded(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 3.0, socket_index, pipe_index, rule, now, msg[1]))

    def lost(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 4.0, socket_index, pipe_index, rule, now, msg[1]))

    def queued(self, msg: tuple, socket_index: int, pipe_index: int, where: int, now: float) -> None:
        self.records.extend((msg[0], 5.0, socket_index, pipe_index, where, now, msg[1]))

    # -- after the run ----------------------------------------------------------------------

    def table(self) -> dict[str, np.ndarray]:
        """The final records as numpy columns."""
        flat = np.frombuffer(self.records, dtype=np.float64) if len(self.records) else np.zeros(0)
        rows = flat.reshape(-1, _FIELDS)
        return {
            "msg_id": rows[:, 0].astype(np.int64),
            "state": rows[:, 1].astype(np.int8),
            "socket": rows[:, 2].astype(np.int32),
            "pipe": rows[:, 3].astype(np.int32),
            "rule": rows[:, 4].astype(np.int16),
            "time": rows[:, 5].copy(),
            "t0": rows[:, 6].copy(),
        }

    def sent_table(self) -> dict[str, np.ndarray]:
        return {
            "msg_id": np.frombuffer(self.sent_id, dtype=np.int64).copy() if len(self.sent_id) else np.zeros(0, np.int64),
            "socket": np.frombuffer(self.sent_socket, dtype=np.int32).copy() if len(self.sent_socket) else np.zeros(0, np.int32),
            "t0": np.frombuffer(self.sent_t0, dtype=np.float64).copy() if len(self.sent_t0) else np.zeros(0),
            "size": np.frombuffer(self.sent_size, dtype=np.int64).copy() if len(self.sent_size) else np.zeros(0, np.int64),
        }

    def check_conservation(self, copies: int, extra: dict[str, Any] | None = None) -> dict[str, int]:
        """Every copy a socket created has exactly one final record. Returns state counts."""
        table = self.table()
        counts = np.bincount(table["state"].astype(np.int64), minlength=len(STATES)) if len(table["state"]) else np.zeros(len(STATES), np.int64)
        by_state = {name: int(counts[i]) for i, name in enumerate(STATES)}
        total = int(counts.sum())
        if total != copies:
            detail = ", ".join(f"{k}={v}" for k, v in by_state.items())
            raise ConservationError(
                f"ledger does not balance: sockets created {copies} message copies, the ledger has {total} final records ({detail})"
                + (f"; {extra}" if extra else "")
                + ". This is a bug in zsim: please report it with the scenario and seed."
            )
        if len(table["msg_id"]):
            sent_ids = np.frombuffer(self.sent_id, dtype=np.int64) if len(self.sent_id) else np.zeros(0, np.int64)
            unknown = np.setdiff1d(np.unique(table["msg_id"]), sent_ids)
            if len(unknown):
                raise ConservationError(f"ledger has final records for {len(unknown)} messages that were never sent (first: {unknown[:5].tolist()}); this is a bug in zsim")
        return by_state
