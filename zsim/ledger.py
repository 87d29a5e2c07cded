"""The per-message ledger: every message copy ends in exactly one state.

States: ``delivered`` (read by an application), ``forwarded`` (read by a proxy, which sends
it on as new copies), ``dropped`` (a routing rule refused it: full pipe, no subscription
yet, unknown ROUTER peer, conflated), ``discarded`` (received and thrown away: SUB filter,
REQ state, no empty delimiter at a REP or REQ, or its connection went away),
``lost_on_close`` (a close, linger, process exit or crash took it), ``queued_at_end``
(still in a pipe, engine or kernel when the run ended). docs/model.md lists the rules.

A *copy* is one message on one path: a PUB fanning out to ten SUBs makes ten copies.
Sockets count the copies they create; after the run ``check_conservation`` verifies that
the ledger holds exactly that many final records. A mismatch is a bug in zsim and raises
``ConservationError``, it is never reported as a number.

Records are written as 10 doubles into preallocated blocks (a numpy buffer each, written
through a ``memoryview``: no Python object per message, and a C store per field when
compiled) and turned into numpy columns once at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ConservationError

# codes and names: one module for the model and the results (zsim.model.fates)
from .model.fates import DELIVERED, DISCARDED, DROPPED, FORWARDED, LOST, QUEUED, RULES, STATES, WHERE  # noqa: E402,F401
from .model.sink import LedgerSink

_FIELDS = 10  # msg_id, state, socket, pipe, rule, time, t0, size, origin, cause
_BLOCK = 8192 * _FIELDS  # doubles per block (576 KiB; numpy leaves untouched pages unmapped)
#: the columns of ``Ledger.table()``, in the order of a record's fields
COLUMNS = (("msg_id", np.int64), ("state", np.int8), ("socket", np.int32), ("pipe", np.int32), ("rule", np.int16),
           ("time", np.float64), ("t0", np.float64), ("size", np.int64), ("origin", np.int32), ("cause", np.int64))


class Ledger(LedgerSink):
    """Implements ``zsim.model.sink.LedgerSink``.

    Blocks of 10-field records, one record per copy when its fate is decided (the message
    tuple carries its send time, size and origin, so nothing is written when a message is
    sent).
    """

    __slots__ = ("_blocks", "_full", "_current", "_block", "_used")

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []  # full blocks, flat
        self._full = 0  # records in them
        self._current = np.empty(0)  # the block being written (allocated at the first write)
        self._block: Any = self._current.data  # the same, as a memoryview of doubles (typed in ledger.pxd)
        self._used = 0  # doubles written in it

    def _write(self, mid: int, state: float, socket_index: int, pipe_index: int, rule: float, now: float, t0: float,
               size: int, origin: int, cause: int) -> None:
        i = self._used
        if i + _FIELDS > len(self._block):
            self._new_block()
            i = 0
        block = self._block
        block[i] = mid
        block[i + 1] = state
        block[i + 2] = socket_index
        block[i + 3] = pipe_index
        block[i + 4] = rule
        block[i + 5] = now
        block[i + 6] = t0
        block[i + 7] = size
        block[i + 8] = origin
        block[i + 9] = cause
        self._used = i + _FIELDS

    def _new_block(self) -> None:
        self._close_block()  # which leaves _used at 0
        self._current = np.empty(_BLOCK)  # pages are mapped when first written
        self._block = self._current.data

    # -- hooks called by the model (hot path) ----------------------------------------------

    # The id, size and origin are ints: read as C integers (ledger.pxd), each is stored as
    # the same double, without Python's int-to-float conversion.

    def delivered(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 0.0, socket_index, pipe_index, 0.0, now, msg[1], size, origin, cause)

    def forwarded(self, msg: tuple, socket_index: int, pipe_index: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 1.0, socket_index, pipe_index, 0.0, now, msg[1], size, origin, cause)

    def dropped(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 2.0, socket_index, pipe_index, rule, now, msg[1], size, origin, cause)

    def discarded(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 3.0, socket_index, pipe_index, rule, now, msg[1], size, origin, cause)

    def lost(self, msg: tuple, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 4.0, socket_index, pipe_index, rule, now, msg[1], size, origin, cause)

    def queued(self, msg: tuple, socket_index: int, pipe_index: int, where: int, now: float) -> None:
        mid, size, origin, cause = msg[0], msg[2], msg[6], msg[7]
        self._write(mid, 5.0, socket_index, pipe_index, where, now, msg[1], size, origin, cause)

    @property
    def n_records(self) -> int:
        """Final records written so far (what bounds a run's memory)."""
        return self._full + self._used // _FIELDS

    def _close_block(self) -> None:
        """Move the records of the block being written to the full blocks (a later write
        starts a new block)."""
        if self._used:
            self._blocks.append(self._current[: self._used])
            self._full += self._used // _FIELDS
            self._current = np.empty(0)
            self._block = self._current.data
            self._used = 0

    # -- after the run ----------------------------------------------------------------------

    def table(self) -> dict[str, np.ndarray]:
        """The final records as numpy columns, one per field of ``COLUMNS``.

        Built block by block: each block (576 KiB) is read while it is in the cache, its nine
        fields cast into their columns, so the records are read from memory once and never
        copied into one big array first (which took as long again for 10^6 copies and
        doubled the ledger's peak memory).
        """
        self._close_block()
        columns = {name: np.empty(self._full, dtype) for name, dtype in COLUMNS}
        start = 0
        for block in self._blocks:
            rows = block.reshape(-1, _FIELDS)
            end = start + len(rows)
            for k, (name, _dtype) in enumerate(COLUMNS):
                columns[name][start:end] = rows[:, k]  # exact: every field holds an integer or a time
            start = end
        return columns

    def check_conservation(self, copies: int, max_id: int | None = None) -> dict[str, int]:
        """Every copy a socket created has exactly one final record. Returns state counts."""
        return self.check_table(self.table(), copies, max_id)

    @staticmethod
    def check_table(table: dict[str, np.ndarray], copies: int, max_id: int | None = None) -> dict[str, int]:
        """``check_conservation`` on a ``table()`` already made (the summary's)."""
        count = len(table["state"])
        counts = np.bincount(table["state"], minlength=len(STATES)) if count else np.zeros(len(STATES), np.int64)
        by_state = {name: int(counts[i]) for i, name in enumerate(STATES)}
        if count != copies:
            detail = ", ".join(f"{k}={v}" for k, v in by_state.items())
            raise ConservationError(
                f"ledger does not balance: sockets created {copies} message copies, the ledger has {count} final records ({detail}). "
                "This is a bug in zsim: please report it with the scenario and seed."
            )
        if count and max_id is not None:
            ids = table["msg_id"]
            if ids.min() < 0 or ids.max() >= max_id:
                raise ConservationError("ledger has records for messages that were never sent; this is a bug in zsim")
        return by_state
