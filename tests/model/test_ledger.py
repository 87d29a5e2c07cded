"""The ledger's records as columns, and its conservation check.

``Ledger.table()`` casts each block's records into the columns while the block is in the
cache; these tests write across several blocks (a block holds 8,192 records) and read back
every field, exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from zsim.errors import ConservationError
from zsim.ledger import COLUMNS, Ledger


def _fill(ledger: Ledger, n: int) -> list[tuple]:
    """``n`` records over every state, with each field telling its record apart."""
    written = []
    for i in range(n):
        cause = i - 1 if i % 4 == 1 else -1  # every fourth answers the one before it
        msg = (i, 0.5 * i, 10 + i % 7, 0, "", (), i % 3, cause)
        state = i % 6
        now = 1.0 + 0.25 * i
        pipe = i % 5 - 1  # -1: no pipe
        if state == 0:
            ledger.delivered(msg, 2, pipe, now)
            rule = 0
        elif state == 1:
            ledger.forwarded(msg, 2, pipe, now)
            rule = 0
        elif state == 2:
            rule = 1 + i % 4
            ledger.dropped(msg, 1, pipe, rule, now)
        elif state == 3:
            rule = 5
            ledger.discarded(msg, 2, pipe, rule, now)
        elif state == 4:
            rule = 7
            ledger.lost(msg, 1, pipe, rule, now)
        else:
            rule = 2  # a queued record's "where"
            ledger.queued(msg, 1, pipe, rule, now)
        socket = 2 if state in (0, 1, 3) else 1
        written.append((i, state, socket, pipe, rule, now, 0.5 * i, 10 + i % 7, i % 3, cause))
    return written


def test_the_table_holds_every_field_of_every_record_across_blocks():
    ledger = Ledger()
    written = _fill(ledger, 20_000)  # two full blocks and part of a third
    table = ledger.table()
    assert [name for name, _dtype in COLUMNS] == list(table)
    for k, (name, dtype) in enumerate(COLUMNS):
        column = table[name]
        assert column.dtype == dtype
        np.testing.assert_array_equal(column, np.array([record[k] for record in written], dtype=dtype), err_msg=name)
    # records written after a table go into the next one
    ledger.delivered((20_000, 9.0, 1, 0, "", (), 0, -1), 2, 0, 99.0)
    assert len(ledger.table()["msg_id"]) == 20_001
    assert ledger.table()["time"][-1] == 99.0


def test_conservation_counts_states_and_refuses_a_ledger_that_does_not_balance():
    ledger = Ledger()
    _fill(ledger, 12)
    assert ledger.check_conservation(12, max_id=12) == {
        "delivered": 2, "forwarded": 2, "dropped": 2, "discarded": 2, "lost_on_close": 2, "queued_at_end": 2}
    with pytest.raises(ConservationError, match="created 13 message copies, the ledger has 12"):
        ledger.check_conservation(13)
    with pytest.raises(ConservationError, match="never sent"):
        ledger.check_conservation(12, max_id=11)
    assert Ledger().check_conservation(0) == dict.fromkeys(
        ("delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end"), 0)
