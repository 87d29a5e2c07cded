"""Where the model reports every message copy's fate: ``LedgerSink``.

The model reports each copy exactly once (the fates and their codes: ``zsim.model.fates``)
to a ``LedgerSink``, which ``zsim.ledger.Ledger`` implements; the model knows nothing of
the ledger beyond this class. It is a base class, not a protocol, so that when compiled
(``sink.pxd``) the hot path's reports (a delivery per message, a drop per copy an HWM
refuses) are C calls through its method table, with no Python arguments built.
"""

from __future__ import annotations

from typing import Any


class LedgerSink:
    """Where the model reports every message's fate (implemented by ``zsim.ledger.Ledger``).

    Every record is written through one of these methods; no model code appends records
    itself. ``msg`` is a message tuple (``zsim.model.pipe``); ``pipe_index`` is -1 when the
    copy never reached a pipe.
    """

    __slots__ = ()

    def delivered(self, msg: Any, socket_index: int, pipe_index: int, now: float) -> None:
        raise NotImplementedError

    def forwarded(self, msg: Any, socket_index: int, pipe_index: int, now: float) -> None:
        raise NotImplementedError

    def dropped(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        raise NotImplementedError

    def discarded(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        raise NotImplementedError

    def lost(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        raise NotImplementedError

    def queued(self, msg: Any, socket_index: int, pipe_index: int, where: int, now: float) -> None:
        raise NotImplementedError
