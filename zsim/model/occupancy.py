"""Time-weighted occupancy of one direction of a stream link (tcp, ipc).

A message on its way from one socket's pipe to the other's passes three places that are
not pipes: the sending engine's output batch (``stream_engine_base_t::_outpos``, up to
``out_batch_size`` bytes pulled from the pipe and not yet written), the kernel (the
sender's send buffer and the receiver's receive buffer together) and the receiving
engine's decoded messages that its session could not push (the pipe was at its HWM:
``stream_engine_base_t::_input_stopped``). ``Occupancy`` integrates the messages and bytes
in each over simulated time so a run can report their maximum, time average and value at
the end, next to the pipes' depths.

A run report (``zsim run --report``) also wants the levels over time. That is opt-in and
costs nothing otherwise: inside ``with recording():`` a new ``Occupancy`` is a
``RecordedOccupancy``, whose ``update`` also appends ``(time, six levels)`` to a flat list
(``trace``) that the report's recorder folds into a bounded series while the run goes on
(``zsim.report_run.series``). Outside it the class and its ``update`` are exactly the plain
ones: not even a flag is tested per update.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: the quantities tracked, in the order of ``Occupancy.values``
FIELDS = (
    "kernel_messages",
    "kernel_bytes",
    "sender_engine_messages",
    "sender_engine_bytes",
    "receiver_engine_messages",
    "receiver_engine_bytes",
)


class Occupancy:
    """Piecewise-constant levels, updated whenever the link direction changes.

    ``update`` is called after each change with the new levels; the time between two calls
    is charged to the levels of the first, as a pipe's depth area is.
    """

    __slots__ = ("last_t", "values", "area", "peak")

    def __new__(cls, now: float) -> Occupancy:
        # read once per link direction, when its connection is made (not per update)
        return object.__new__(RecordedOccupancy if _RECORDING.get() else cls)

    def __init__(self, now: float) -> None:
        self.last_t = now
        self.values: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)
        self.area = [0.0] * len(FIELDS)
        self.peak = [0] * len(FIELDS)

    def update(self, now: float, values: tuple[int, int, int, int, int, int]) -> None:
        # unrolled: called after every write and read of a stream link
        dt = now - self.last_t
        old = self.values
        if dt > 0:
            area = self.area
            # no bytes, no messages (a message has at least its header's bytes)
            if old[1]:
                area[0] += old[0] * dt
                area[1] += old[1] * dt
            if old[3]:
                area[2] += old[2] * dt
                area[3] += old[3] * dt
            if old[5]:
                area[4] += old[4] * dt
                area[5] += old[5] * dt
            self.last_t = now
        peak = self.peak
        for i in range(6):
            if values[i] > peak[i]:
                peak[i] = values[i]
        self.values = values

    @property
    def max_kernel_bytes(self) -> int:
        return self.peak[1]

    def report(self, now: float, since: float = 0.0) -> dict[str, dict[str, Any]]:
        """``{field: {"max", "mean", "at_end"}}``; the mean is over ``[since, now]``."""
        span = now - since
        tail = now - self.last_t
        out: dict[str, dict[str, Any]] = {}
        for i, name in enumerate(FIELDS):
            value = self.values[i]
            mean = (self.area[i] + value * tail) / span if span > 0 else float(value)
            out[name] = {"max": self.peak[i], "mean": mean, "at_end": value}
        return out


#: Set by ``recording()``: directions created meanwhile keep their levels over time.
_RECORDING: ContextVar[bool] = ContextVar("zsim_occupancy_recording", default=False)


@contextmanager
def recording() -> Iterator[None]:
    """Link directions created inside this block record ``(time, levels)`` (``trace``)."""
    token = _RECORDING.set(True)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def recording_now() -> bool:
    """Inside ``recording()``: what is created now keeps its levels over time."""
    return _RECORDING.get()


class RecordedOccupancy(Occupancy):
    """An ``Occupancy`` that also appends ``now`` and the six levels (``FIELDS`` order) to
    ``trace`` after every change: the raw series a run report folds (and empties) as the
    run goes on, so it never holds more than a bounded number of points."""

    __slots__ = ("trace",)

    def __init__(self, now: float) -> None:
        super().__init__(now)
        self.trace: list[float] = []

    def update(self, now: float, values: tuple[int, int, int, int, int, int]) -> None:
        Occupancy.update(self, now, values)
        trace = self.trace
        trace.append(now)
        trace.extend(values)
