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

import numpy as np

from .errors import ConservationError

# codes and names: one module for the model and the results (zsim.model.fates)
from .model.fates import DELIVERED, DISCARDED, DROPPED, FORWARDED, LOST, QUEUED, RULES, STATES, WHERE  # noqa: E402,F401

_FIELDS = 9  # msg_id, state, socket, pipe, rule, time, t0, size, origin


class Ledger:
    """Implements ``zsim.model.fates.LedgerSink``.

    One flat ``array('d')`` of 9-field records, one record per copy when its fate is
    decided (the message tuple carries its send time, size and origin, so nothing is
    written when a message is sent).
    """

    def __init__(self) -> None:
        self.records = array("d")
        self.n_sent = 0

    # -- hooks called by the model (hot path) ----------------------------------------------

    def sent(self, msg: tuple, socket_index: int) -> None:
        self.n_sent += 1

    def delivered(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        self.records.extend((msg[0], 0.0, socket_index, pipe_index, 0.0, now, msg[1], msg[2], msg[6]))

    def forwarded(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        self.records.extend((msg[0], 1.0, socket_index, pipe_index, 0.0, now, msg[1], msg[2], msg[6]))

    def dropped(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 2.0, socket_index, pipe_index, rule, now, msg[1], msg[2], msg[6]))

    def discarded(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 3.0, socket_index, pipe_index, rule, now, msg[1], msg[2], msg[6]))

    def lost(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.records.extend((msg[0], 4.0, socket_index, pipe_index, rule, now, msg[1], msg[2], msg[6]))

    def queued(self, msg: tuple, socket_index: int, pipe_index: int, where: int, now: float) -> None:
        self.records.extend((msg[0], 5.0, socket_index, pipe_index, where, now, msg[1], msg[2], msg[6]))

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
            "size": rows[:, 7].astype(np.int64),
            "origin": rows[:, 8].astype(np.int32),
        }

    def check_conservation(self, copies: int, max_id: int | None = None) -> dict[str, int]:
        """Every copy a socket created has exactly one final record. Returns state counts."""
        count = len(self.records) // _FIELDS
        flat = np.frombuffer(self.records, dtype=np.float64) if len(self.records) else np.zeros(0)
        rows = flat.reshape(-1, _FIELDS)
        states = rows[:, 1].astype(np.int64)
        counts = np.bincount(states, minlength=len(STATES)) if count else np.zeros(len(STATES), np.int64)
        by_state = {name: int(counts[i]) for i, name in enumerate(STATES)}
        if count != copies:
            detail = ", ".join(f"{k}={v}" for k, v in by_state.items())
            raise ConservationError(
                f"ledger does not balance: sockets created {copies} message copies, the ledger has {count} final records ({detail}). "
                "This is a bug in zsim: please report it with the scenario and seed."
            )
        if count and max_id is not None:
            ids = rows[:, 0]
            if ids.min() < 0 or ids.max() >= max_id:
                raise ConservationError("ledger has records for messages that were never sent; this is a bug in zsim")
        return by_state
